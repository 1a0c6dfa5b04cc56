"""Fault injection on the commands' inputs: outputs that collide or are not regular files,
numbers too large for the trainers' counters or the memory, messages that must name the flag
the user typed, and noise around the one line that matters.

Every refusal runs in-process through :func:`jaxrl_pim.cli.main` before any training (most
before jax compiles anything): exit status 2, one stderr line naming the flag, and nothing
written. The model is ``tests/cli/test_faults.py``.
"""

from __future__ import annotations

import logging
import os
import types
from pathlib import Path

import numpy as np
import pytest

from jaxrl_pim import report
from jaxrl_pim.cli import _common, main

#: A tiny MARL run's options (as tests/cli/test_faults.py's).
MARL = ["marl", "--agents", "2", "--num-envs", "1", "--capacity", "32", "--batch-size", "8",
        "--learning-starts", "16", "--no-progress", "--no-estimate", "--episodes", "2"]
TABULAR = ["tabular", "--env", "taxi", "--cores", "4", "--transitions", "40",
           "--no-progress"]


def _one_error(capsys, prog: str) -> str:
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(err) == 1, err
    assert err[0].startswith(f"jaxrl-pim {prog}: error: "), err
    return err[0]


def _refused(argv: list[str], capsys, *words: str) -> str:
    """``argv`` ends with status 2 and one line holding every one of ``words``."""
    assert main(argv) == 2
    line = _one_error(capsys, argv[0])
    assert all(w in line for w in words), (words, line)
    return line


# --------------------------------------------------------------------------------------------
# 5. outputs that collide or are special


COLLISIONS = [  # (argv with {d} for the folder, the two flags the line names)
    ([*MARL, "--json", "{d}/ck", "--checkpoint", "{d}/ck"], "--checkpoint", "--json"),
    ([*MARL, "--json", "{d}/ck/3", "--checkpoint", "{d}/ck"], "--json", "--checkpoint"),
    ([*TABULAR, "--save-q", "{d}/ck/2", "--checkpoint", "{d}/ck"], "--save-q", "--checkpoint"),
    ([*TABULAR, "--json", "{d}/q.npy", "--save-q", "{d}/sub/../q.npy"], "--save-q", "--json"),
    (["marl", "evaluate", "--checkpoint", "{d}/none", "--json", "{d}/e.gif", "--render",
      "{d}/e.gif"], "--render", "--json"),
    (["actorq", "--steps", "100", "--json", "{d}/ck/r.json", "--checkpoint", "{d}/ck"],
     "--json", "--checkpoint"),
]


@pytest.mark.parametrize("argv, flag, other", COLLISIONS,
                         ids=[f"{a[0]}{f}{o}" for a, f, o in COLLISIONS])
def test_outputs_on_one_path_are_refused_before_any_work(argv, flag, other, tmp_path, capsys):
    (tmp_path / "sub").mkdir()
    argv = [a.replace("{d}", str(tmp_path)) for a in argv]
    line = _refused(argv, capsys, flag, other)
    assert "is also the path of" in line or "lies inside the" in line, line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sub"]  # no folder, no report


def _special(kind: str, tmp_path: Path) -> Path:
    path = tmp_path / "out.json"
    if kind == "symbolic link":
        (tmp_path / "target.json").write_text("keep")
        path.symlink_to(tmp_path / "target.json")
    elif kind == "FIFO":
        os.mkfifo(path)
    else:  # a character device: checked only, never written by this test
        path = Path("/dev/null")
    return path


@pytest.mark.parametrize("kind", ["symbolic link", "FIFO", "character device"])
def test_a_path_that_is_not_a_regular_file_is_refused(kind, tmp_path, capsys):
    path = _special(kind, tmp_path)
    _refused([*MARL, "--json", str(path)], capsys, f"--json {path}", f"is a {kind}")
    if kind != "character device":  # the writer refuses it too, and leaves it as it was
        with pytest.raises(ValueError, match=f"is a {kind}, not a regular file"):
            report.write_json(path, {"x": 1})
        assert path.is_symlink() if kind == "symbolic link" else not path.is_file()
        if kind == "symbolic link":
            assert (tmp_path / "target.json").read_text() == "keep"


def test_long_names_and_pseudo_file_systems_are_refused_at_check_time(tmp_path, capsys):
    long = tmp_path / ("r" * 300 + ".json")
    _refused([*MARL, "--json", str(long)], capsys, "--json: the name rrr", "305 bytes")
    _refused([*MARL, "--checkpoint", str(long)], capsys, "--checkpoint: the name")
    for root in ("/proc", "/sys"):
        line = _refused([*MARL, "--json", f"{root}/jaxrl-pim-x/run.json"], capsys, "--json")
        assert f"in {root} " in line or f"folder {root} is not writable" in line, line
    # the longest name the file system takes is written: the temporary name stays short
    name = tmp_path / ("q" * 250 + ".json")
    assert report.write_json(name, {"x": 1}).read_text().startswith("{")
    assert sorted(p.name for p in tmp_path.iterdir()) == [name.name]


# --------------------------------------------------------------------------------------------
# 6. huge numbers: every count within the int32 counters, seeds within 32 bits

HUGE = [  # (argv, what the line must hold)
    (["marl", "--seed", "99999999999999999999"], "--seed must be in 0 .. 4294967295"),
    (["marl", "--seeds", "4", "--seed", "4294967295"], "--seed must be in 0 .. 4294967292"),
    (["tabular", "--seed", "-1"], "--seed must be in 0 .. 4294967295"),
    (["marl", "evaluate", "--checkpoint", "none", "--seed", "4294967296"], "--seed must be"),
    (["marl", "--episodes", "3000000000"], "--episodes must be <= 85899345"),
    (["marl", "--update-every", "3000000000"], "--update-every must be <= 2147483647"),
    (["tabular", "--episodes", "100000000000000000000"], "--episodes must be <= 2147483647"),
    (["marl", "evaluate", "--checkpoint", "none", "--episodes", "99999999999999"],
     "--episodes must be <= 2147483647"),
    (["actorq", "--steps", "3000000000"], "--steps must be <= 2147483647"),
    (["tabular", "--dataset", "{d}", "--num-states", "4", "--num-actions", "2"],
     "is a folder; give a dataset file"),
]


@pytest.mark.parametrize("argv, words", HUGE, ids=[f"{a[0]}{a[-2]}" for a, _ in HUGE])
def test_numbers_beyond_the_counters_are_refused_naming_the_flag(argv, words, tmp_path,
                                                                 capsys):
    _refused([a.replace("{d}", str(tmp_path)) for a in argv], capsys, words)


def test_sizes_beyond_memory_are_refused_before_allocation(tmp_path, monkeypatch, capsys):
    from jaxrl_pim.marl import plan, policies
    from jaxrl_pim.marl.config import MARLConfig

    monkeypatch.setenv(plan.MEMORY_LIMIT_ENV, str(2**30))  # 1 GiB: whatever the host has
    # tabular: 2,000 lanes x a 500 x 6 fp32 table = 24 MB fits; 200,000 lanes do not
    _refused([*TABULAR, "--dtype", "fp32", "--cores", "200000", "--transitions", "400000"],
             capsys, "--cores: the run (200,000 Q-tables of 500 x 6", "give a smaller --cores")
    _refused([*TABULAR, "--episodes", "100000000", "--sync-period", "1"], capsys,
             "--episodes: the run", "100,000,000 sync rounds")
    # evaluate: the checkpoint read (a stub here), then the episodes held at once
    config = MARLConfig(num_agents=2, buffer_capacity=32, batch_size=8, learning_starts=16)
    loaded = types.SimpleNamespace(config=config, teams=("agents",), num_seeds=1)
    monkeypatch.setattr(policies, "load_policies", lambda folder: loaded)
    monkeypatch.setattr(policies, "evaluate", lambda *a, **k: pytest.fail("evaluated"))
    _refused(["marl", "evaluate", "--checkpoint", str(tmp_path), "--episodes", "20000000"],
             capsys, "--episodes: evaluating 20,000,000 episodes of 1 seed(s) needs")
    from jaxrl_pim.marl.plan import evaluation_bytes

    assert evaluation_bytes(config, 1, 10, seeds=3) == 3 * 10 * (25 * 12 + 16)


# --------------------------------------------------------------------------------------------
# 7. messages name the flags the user typed


def test_fingerprint_differences_and_config_fields_are_named_by_flags():
    from jaxrl_pim.cli import marl, tabular

    msg = "checkpoint 'ck/3' belongs to another run configuration ({})"
    assert _common.in_flag_names(msg.format("config.batch_size: saved 32, this run 16"),
                                 marl.FLAGS) == msg.format("--batch-size: saved 32, this run 16")
    assert _common.in_flag_names(msg.format("num_seeds: saved 3, this run None"), marl.FLAGS) \
        == msg.format("--seeds: saved 3, this run not given")
    assert _common.in_flag_names(msg.format("seed: saved None, this run 2"), {}) \
        == msg.format("--seed: saved not given, this run 2")
    assert _common.in_flag_names(msg.format("config.dtype: saved 'int32', this run 'fp32'"),
                                 tabular.FLAGS) == msg.format(
        "--dtype: saved 'int32', this run 'fp32'")
    assert _common.in_flag_names("num_cores=5000 exceeds the dataset size 40", tabular.FLAGS) \
        == "--cores 5000 exceeds the dataset size 40"
    # prose stays: a key of the fingerprint is named only where it is a difference
    assert _common.in_flag_names("the seed of every env", marl.FLAGS) == "the seed of every env"


def test_a_resume_of_another_configuration_names_the_flag(tmp_path, capsys):
    import jax.numpy as jnp

    from jaxrl_pim.checkpoint import Checkpoints
    from jaxrl_pim.cli import build_parser
    from jaxrl_pim.cli.marl import config_from_args
    from jaxrl_pim.marl import checkpoint, seeds

    config = config_from_args(build_parser("marl", full=False).parse_args(MARL))
    for name, fingerprint in (("group", seeds.fingerprint(config, 0, 3)),  # 3 seeds
                              ("run", checkpoint.fingerprint(config, seed=0))):
        with Checkpoints(tmp_path / name, fingerprint=fingerprint) as ck:
            ck.save(1, {"x": jnp.zeros(2)}, meta={"episodes_done": 1})
    _refused([*MARL, "--checkpoint", str(tmp_path / "group"), "--resume"], capsys,
             "(--seeds: saved 3, this run not given)")
    _refused([*MARL, "--batch-size", "4", "--checkpoint", str(tmp_path / "run"), "--resume"],
             capsys, "(--batch-size: saved 8, this run 4)")


MESSAGES = [  # (argv, what the line must hold, what it must not)
    (["marl", "--env", "tag", "--predators", "0", "--prey", "1"], "--predators must be >= 1",
     "--agents"),
    ([*TABULAR[:5], "--cores", "5000", "--transitions", "40"], "--cores 5000 exceeds", "num_"),
    ([*TABULAR, "--devices", "999"], "--devices must be <= ", "devices="),
    (["launch", "--processes", "1", "--port", "99999", "--", "tabular"],
     "--port must be <= 65535", "--coordinator"),
]


@pytest.mark.parametrize("argv, words, never", MESSAGES,
                         ids=[f"{a[0]}{a[-3]}" for a, _, _ in MESSAGES])
def test_messages_name_the_flag_not_the_field(argv, words, never, capsys):
    assert never not in _refused(argv, capsys, words)


def test_study_config_errors_name_the_flags():
    from jaxrl_pim.cli import studies

    assert _common.in_flag_names("bits must be >= 2, got 1", studies.FLAGS) \
        == "--bits must be >= 2, got 1"
    assert _common.in_flag_names("seed must be <= 2147483647, got -1", studies.FLAGS) \
        == "--seed must be <= 2147483647, got -1"


# --------------------------------------------------------------------------------------------
# 10. noise


def test_one_episode_prints_no_spread(tmp_path, monkeypatch, capsys):
    from jaxrl_pim.marl import policies
    from jaxrl_pim.marl.config import MARLConfig

    config = MARLConfig(num_agents=2, buffer_capacity=32, batch_size=8, learning_starts=16)
    loaded = types.SimpleNamespace(config=config, teams=(types.SimpleNamespace(name="agents"),),
                                   num_seeds=1, episodes_done=2, checkpoint=tmp_path,
                                   params=None)
    monkeypatch.setattr(policies, "load_policies", lambda folder: loaded)
    monkeypatch.setattr(policies, "evaluate", lambda *a, **k: np.array([[-3.25]]))
    assert main(["marl", "evaluate", "--checkpoint", str(tmp_path), "--episodes", "1"]) == 0
    out = capsys.readouterr().out
    assert "1 episode, return per team: agents -3.25" in out and "nan" not in out, out


def test_eval_episodes_without_seeds_and_help_percent_and_absl(capsys):
    from absl import logging as absl_logging

    _refused([*MARL, "--eval-episodes", "3"], capsys, "--eval-episodes evaluates the seeds",
             "marl evaluate")
    with pytest.raises(SystemExit):
        main(["actorq", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "95 % of the fp32 reward" in text and "%%" not in text
    absl_logging.set_verbosity(absl_logging.WARNING)
    try:
        _refused(["launch", "--processes", "0", "--", "tabular"], capsys, "--processes")
        assert logging.getLogger("absl").getEffectiveLevel() == logging.ERROR
        absl_logging.warning("orbax noise")  # what orbax logs around a damaged checkpoint
        assert "orbax noise" not in capsys.readouterr().err
    finally:
        absl_logging.set_verbosity(absl_logging.WARNING)
