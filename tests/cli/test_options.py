"""Options every ``jaxrl-pim`` command shares and their one-line errors: ``--version``,
``--progress/--no-progress``, ``--resume`` with a missing folder, an unreachable
``--ray-address``, ``launch`` naming itself, and the ``py.typed`` marker."""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

from jaxrl_pim import cli
from jaxrl_pim.cli._common import check_checkpoint_arguments

ROOT = Path(__file__).resolve().parents[2]


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def test_version_is_the_installed_package_version(capsys):
    with pytest.raises(SystemExit) as stop:
        cli.main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.strip() == f"jaxrl-pim {cli.version()}"
    import importlib.metadata

    assert cli.version() == importlib.metadata.version("jaxrl-pim")


@pytest.mark.parametrize("command", ["tabular", "marl", "actorq"])
def test_one_progress_flag_spelling(command):
    parser = cli.build_parser(command, full=False)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    p = sub.choices[command]
    assert p.parse_args([]).progress is None  # decided by the terminal
    assert p.parse_args(["--progress"]).progress is True
    assert p.parse_args(["--no-progress"]).progress is False


def test_resume_from_a_missing_folder_is_refused(tmp_path):
    missing = tmp_path / "nowhere"
    args = argparse.Namespace(checkpoint=missing, checkpoint_every=None, resume=True)
    with pytest.raises(ValueError, match="checkpoint folder .*nowhere does not exist"):
        check_checkpoint_arguments(args)
    missing.mkdir()  # an existing, empty folder is a run that starts at its beginning
    check_checkpoint_arguments(args)


@pytest.mark.parametrize("argv", [
    ["tabular", "--env", "taxi", "--cores", "4", "--transitions", "100", "--episodes", "1"],
    ["marl", "--episodes", "1", "--num-envs", "1"],
    ["actorq", "--steps", "100", "--actors", "1"],
])
def test_commands_stop_when_the_resume_folder_is_missing(argv, tmp_path, capsys):
    missing = tmp_path / "runs" / "gone"
    assert cli.main([*argv, "--checkpoint", str(missing), "--resume"]) == 2
    line = _one_error_line(capsys)
    assert line.startswith(f"jaxrl-pim {argv[0]}: error: --resume: the checkpoint folder")
    assert "does not exist" in line
    assert not (tmp_path / "runs").exists()  # nothing was created


def test_launch_names_itself_in_its_errors(capsys):
    assert cli.main(["launch", "--processes", "0", "--", "tabular"]) == 2
    assert _one_error_line(capsys) == "jaxrl-pim launch: error: --processes must be >= 1, got 0"


def test_unreachable_ray_address_fails_fast_with_one_line():
    with socket.socket() as s:  # a port that nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, PYTHONPATH=str(ROOT), JAX_PLATFORMS="cpu")
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "jaxrl_pim.cli", "actorq", "--mode", "ray",
                           "--ray-address", f"127.0.0.1:{port}", "--steps", "100"],
                          capture_output=True, text=True, env=env, timeout=120)
    elapsed = time.monotonic() - t0
    assert proc.returncode == 2, proc.stderr[-2000:]
    err = proc.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(
        f"jaxrl-pim actorq: error: --ray-address 127.0.0.1:{port}: no Ray cluster answers"), err
    assert elapsed < 60  # the import of the command and a 3 s connect, not Ray's retries


def test_ray_address_is_checked_with_a_bounded_connect():
    from jaxrl_pim.cli.actorq import check_ray_address

    check_ray_address("auto")  # left to Ray
    with pytest.raises(ValueError, match="HOST:PORT"):
        check_ray_address("somewhere")
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        host, port = server.getsockname()
        check_ray_address(f"{host}:{port}")  # answers: accepted
        check_ray_address(f"ray://{host}:{port}")
    with socket.socket() as closed:  # bound, not listening: the connection is refused
        closed.bind(("127.0.0.1", 0))
        host, port = closed.getsockname()
        with pytest.raises(ValueError, match=f"{port}: no Ray cluster answers"):
            check_ray_address(f"ray://{host}:{port}", timeout_s=0.5)


def test_py_typed_ships_as_package_data():
    assert (ROOT / "jaxrl_pim" / "py.typed").is_file()
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "py.typed" in config["tool"]["setuptools"]["package-data"]["jaxrl_pim"]
