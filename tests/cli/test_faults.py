"""Fault injection: damaged checkpoints, bad output paths, interrupted writes, zero-size state,
and the messages of bad options, through every command that meets them.

Each case ends in one line and a known exit status, never a traceback, and leaves what was
on disk as it was. A new command inherits these cases by adding its flags to the tables
below (:data:`OUTPUT_FLAGS`, :data:`FLAG_NAMES`).

One MARL checkpoint folder (steps 1, 2, 3 of a tiny spread run, built from the state's
shapes without training: ``marl_folder``) is made per module and copied per case; resuming
it with ``--episodes 2`` trains nothing, so the damaged-checkpoint cases compile nothing
but the evaluation.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import stat
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrl_pim.checkpoint as checkpoint
from jaxrl_pim import report
from jaxrl_pim.checkpoint import FILES, Checkpoints, Damaged, run_kind
from jaxrl_pim.cli import _common, build_parser, main
from jaxrl_pim.cli._common import CommandParser, in_flag_names
from tests.support.marl import JAXMARL_MARKS

#: A tiny MARL run's options (2 spread agents, 1 env, 32 replay rows), seed 0.
MARL = ["marl", "--agents", "2", "--num-envs", "1", "--capacity", "32", "--batch-size", "8",
        "--learning-starts", "16", "--no-progress", "--no-estimate"]
STEPS = (1, 2, 3)


def _lines(text: str) -> list[str]:
    return [ln for ln in text.strip().splitlines() if ln]


def _one_error(capsys, prog: str) -> str:
    err = _lines(capsys.readouterr().err)
    assert len(err) == 1, err
    assert err[0].startswith(f"jaxrl-pim {prog}: error: "), err
    return err[0]


def _marl_config(argv: list[str]):
    from jaxrl_pim.cli.marl import config_from_args

    parser = build_parser("marl", full=False)
    return config_from_args(parser.parse_args(argv))


def _filled(template, offset: int):
    """Arrays of ``template``'s shapes and dtypes holding distinct values (``offset`` + index),
    keys from zero key data."""
    def leaf(i_x):
        i, x = i_x
        if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):
            shape = jax.eval_shape(jax.random.key_data, x).shape
            return jax.random.wrap_key_data(jnp.zeros(shape, jnp.uint32),
                                            impl=x.dtype._impl)
        n = int(np.prod(x.shape, dtype=np.int64))
        values = (np.arange(n) + offset + i) % (2 if x.dtype == bool else 97)
        return jnp.asarray(values.reshape(x.shape).astype(x.dtype))

    leaves, treedef = jax.tree.flatten(template)
    return jax.tree.unflatten(treedef, [leaf(p) for p in enumerate(leaves)])


@pytest.fixture(scope="module")
def marl_folder(tmp_path_factory) -> Path:
    """Checkpoints 1, 2, 3 of the :data:`MARL` run (its fingerprint; states from its shapes,
    each with its episode count)."""
    from jaxrl_pim.marl import checkpoint as mc

    config = _marl_config([*MARL, "--episodes", "3"])
    folder = tmp_path_factory.mktemp("faults") / "marl"
    with Checkpoints(folder, fingerprint=mc.fingerprint(config, seed=0), keep=3) as ckpt:
        for step in STEPS:
            tree = _filled(mc.template(config, step), step)
            tree["state"] = tree["state"]._replace(
                episode=jnp.asarray(step, tree["state"].episode.dtype))
            ckpt.save(step, tree, meta={"episodes_done": step})
    return folder


@pytest.fixture
def marl_copy(marl_folder, tmp_path) -> Path:
    folder = tmp_path / "run"
    shutil.copytree(marl_folder, folder)
    return folder


def _data_file(step_dir: Path) -> Path:
    """The largest array data file of a step (orbax's ``state/.../d/<hash>``)."""
    files = [p for p in (step_dir / "state").rglob("*") if p.is_file() and p.parent.name == "d"]
    return max(files, key=lambda p: p.stat().st_size)


def _truncate(step_dir: Path) -> str:
    path = _data_file(step_dir)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    return str(path.relative_to(step_dir))


def _delete_meta(step_dir: Path) -> str:
    (step_dir / "meta" / "metadata").unlink()
    return "meta/metadata"


def _rewrite_meta(step_dir: Path) -> str:  # the one-line JSON error of the report
    (step_dir / "meta" / "metadata").write_text('{"fingerprint":\n')
    return "meta/metadata"


def _rewrite_same_size(step_dir: Path) -> str:  # other bytes, same length: only a CRC sees it
    path = _data_file(step_dir)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    return str(path.relative_to(step_dir))


def _delete_state(step_dir: Path) -> str:
    shutil.rmtree(step_dir / "state")
    return "state/"


DAMAGE = {"truncated": _truncate, "meta deleted": _delete_meta, "meta rewritten": _rewrite_meta,
          "data rewritten": _rewrite_same_size, "state deleted": _delete_state}


def _tree_files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _aside(files: dict[str, bytes], step: int) -> dict[str, bytes]:
    """``files`` of a folder after a resume set step ``step`` aside as ``damaged-<step>``."""
    prefix = f"{step}/"
    return {f"damaged-{name}" if name.startswith(prefix) else name: data
            for name, data in files.items()}


# --------------------------------------------------------------------------------------------
# damaged checkpoints: the newest intact step is used, the damaged one named and kept


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_damaged_newest_step_falls_back_in_the_library(marl_copy, damage, capsys):
    from jaxrl_pim.marl import checkpoint as mc

    file = DAMAGE[damage](marl_copy / "3")
    before = _tree_files(marl_copy)
    config = _marl_config([*MARL, "--episodes", "3"])
    with Checkpoints(marl_copy, fingerprint=mc.fingerprint(config, seed=0)) as ckpt:
        state, curve = mc.starting_state(config, jax.random.PRNGKey(0), ckpt, resume=True)
    assert int(state.episode) == 2
    want = _filled(mc.template(config, 2), 2)  # step 2's values, bit for bit
    np.testing.assert_array_equal(curve, np.asarray(want["episode_return"]))
    for got, ref in zip(jax.tree.leaves(state.teams), jax.tree.leaves(want["state"].teams),
                        strict=True):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(ref))
    err = _lines(capsys.readouterr().err)
    assert len(err) == 1, err
    assert f"checkpoint 3 in {str(marl_copy)!r} is damaged: 3/{file}" in err[0], err
    assert "using checkpoint 2" in err[0] and "(kept as damaged-3)" in err[0]
    assert _tree_files(marl_copy) == _aside(before, 3)  # set aside whole, nothing deleted


@pytest.mark.parametrize("damage", ["truncated", "meta rewritten"])
def test_evaluate_and_resume_use_the_newest_intact_step(marl_copy, damage, tmp_path, capsys):
    file = DAMAGE[damage](marl_copy / "3")
    before = _tree_files(marl_copy)
    assert main(["marl", "evaluate", "--checkpoint", str(marl_copy), "--episodes", "2"]) == 0
    out = capsys.readouterr()
    assert "(checkpoint after 2 episodes)" in out.out
    err = _lines(out.err)
    assert len(err) == 1 and f"3/{file}" in err[0] and "using checkpoint 2" in err[0], err
    assert _tree_files(marl_copy) == before  # evaluating reads, renames nothing
    # resuming to episode 2 restores step 2 and trains nothing
    report_path = tmp_path / "resume.json"
    assert main([*MARL, "--episodes", "2", "--checkpoint", str(marl_copy), "--resume",
                 "--json", str(report_path)]) == 0
    out = capsys.readouterr()
    assert "resuming after episode 2" in out.out
    assert "episodes 2->2" in out.out
    assert sum("using checkpoint 2" in ln for ln in _lines(out.err)) == 1
    assert _tree_files(marl_copy) == _aside(before, 3)


def test_every_step_damaged_is_one_line_naming_folder_and_file(marl_copy, capsys):
    for step in STEPS:
        _rewrite_meta(marl_copy / str(step))
    before = _tree_files(marl_copy)
    assert main(["marl", "evaluate", "--checkpoint", str(marl_copy)]) == 2
    line = _one_error(capsys, "marl")
    assert f"checkpoint 3 in {str(marl_copy)!r} is damaged: 3/meta/metadata" in line
    assert "no older checkpoint is intact" in line
    assert main([*MARL, "--episodes", "4", "--checkpoint", str(marl_copy), "--resume"]) == 2
    assert "3/meta/metadata" in _one_error(capsys, "marl")
    assert _tree_files(marl_copy) == before


def test_a_checkpoint_without_its_file_list_is_damaged(marl_copy, capsys):
    """Steps written before file lists existed (or a save killed before its list) are not
    trusted: damaged, whatever their files hold (tests/cli/test_faults_damage.py falls back
    from one such step); a folder of them only is refused in one line."""
    for step in STEPS:
        (marl_copy / str(step) / FILES).unlink()
    before = _tree_files(marl_copy)
    with Checkpoints(marl_copy) as ckpt:
        with pytest.raises(Damaged, match=r"3/files.json: no file list"):
            ckpt.record(3)
    assert main(["marl", "evaluate", "--checkpoint", str(marl_copy), "--episodes", "2"]) == 2
    line = _one_error(capsys, "marl")
    assert f"checkpoint 3 in {str(marl_copy)!r} is damaged: 3/files.json: no file list" in line
    assert "no older checkpoint is intact either" in line
    assert _tree_files(marl_copy) == before


def test_a_resumed_run_writes_the_damaged_step_again_and_keeps_the_old_one(tmp_path, capsys):
    from jaxrl_pim.runner import restore_latest

    folder = tmp_path / "c"
    with Checkpoints(folder, keep=3) as ckpt:
        for step in STEPS:
            ckpt.save(step, {"x": jnp.full(4, float(step))})
    file = _truncate(folder / "3")
    damaged = _tree_files(folder / "3")
    with Checkpoints(folder, keep=3) as ckpt:
        start = restore_latest(ckpt, lambda step: {"x": jnp.zeros(4)}, resume=True)
        assert start.step == 2 and float(start.tree["x"][0]) == 2.0
        assert ckpt.steps() == [1, 2]
        ckpt.save(3, {"x": start.tree["x"] + 10})  # the resumed run reaches step 3 again
        assert ckpt.steps() == [1, 2, 3]
        assert float(ckpt.restore({"x": jnp.zeros(4)}, 3)[0]["x"][0]) == 12.0
        # a step written over outside a resume (restored by hand) is set aside too
        ckpt.save(3, {"x": jnp.zeros(4)})
    assert _tree_files(folder / "damaged-3") == damaged  # set aside whole, not deleted
    assert (folder / "damaged-3-2").is_dir()
    err = _lines(capsys.readouterr().err)
    assert len(err) == 2 and f"3/{file}" in err[0] and "kept as damaged-3)" in err[0], err
    assert "kept as damaged-3-2" in err[1], err


def test_verify_names_missing_resized_and_changed_files(tmp_path):
    with Checkpoints(tmp_path / "c") as ckpt:
        ckpt.save(1, {"x": jnp.arange(64.0)})
        ckpt.verify(1)  # intact
        step_dir = tmp_path / "c" / "1"
        name = _rewrite_same_size(step_dir)
        with pytest.raises(Damaged, match=rf"1/{name}: its contents changed"):
            ckpt.verify(1)
        _truncate(step_dir)
        with pytest.raises(Damaged, match=rf"1/{name}: \d+ bytes, \d+ were written"):
            ckpt.verify(1)
        _delete_meta(step_dir)
        with pytest.raises(Damaged, match=r"1/meta/metadata: missing"):
            ckpt.verify(1)


# --------------------------------------------------------------------------------------------
# another kind of run's folder is named as such, before any work


#: Fingerprints of the other commands' runs, as their folders record them (a few fields).
OTHER_RUNS = {
    "a tabular": {"config": {"num_states": 500, "num_actions": 6, "num_cores": 4},
                  "env": "taxi", "seed": 0},
    "an ActorQ": {"config": {"algo": "dqn", "actor_update_period": 100}, "seed": 0,
                  "mode": "single"},
}


def _other_folder(folder: Path, kind: str) -> Path:
    with Checkpoints(folder, fingerprint=OTHER_RUNS[kind]) as ckpt:
        ckpt.save(2, {"q": jnp.zeros((4, 500, 6))})
    return folder


def test_run_record_reads_the_newest_readable_record(marl_copy):
    from jaxrl_pim import run_record

    (marl_copy / "damaged-4").mkdir()  # set aside, and orbax's temporary name: not steps
    (marl_copy / "5.orbax-checkpoint-tmp-1").mkdir()
    assert run_record.complete_steps(marl_copy) == list(STEPS)
    assert run_record.newest_record(marl_copy)[0] == 3
    # a record rewritten since the save (not as its file list says) is passed over, as the
    # restore passes over it, even where it reads as another kind of run's
    (marl_copy / "3" / run_record.RECORD).write_text(
        '{"fingerprint": {"config": {"num_states": 4}}, "meta": {}}')
    step, record = run_record.newest_record(marl_copy)
    assert step == 2 and record["meta"] == {"episodes_done": 2}
    assert run_record.run_kind(record["fingerprint"]) == "MARL"
    assert run_record.newest_record(marl_copy / "none") is None
    assert run_record.FILES == FILES
    run_record.check_folder(marl_copy, "--checkpoint", "MARL")  # step 2's: a MARL run's


def test_run_kind_reads_the_fingerprint():
    assert run_kind({"config": {"num_states": 5}}) == "tabular"
    assert run_kind({"config": {"sampling_mode": "faithful"}}) == "MARL"
    assert run_kind({"config": {"actor_update_period": 10}}) == "ActorQ"
    assert run_kind({"config": {"lr": 0.1}}) is None and run_kind(None) is None


@pytest.mark.parametrize("kind", sorted(OTHER_RUNS))
def test_another_commands_folder_is_named_by_marl(kind, tmp_path, capsys):
    folder = _other_folder(tmp_path / "other", kind)
    assert main([*MARL, "--episodes", "3", "--checkpoint", str(folder), "--resume"]) == 2
    line = _one_error(capsys, "marl")
    assert f"holds {kind} run's checkpoints, not a MARL run's" in line
    assert main(["marl", "evaluate", "--checkpoint", str(folder)]) == 2
    assert f"holds {kind} run's checkpoints" in _one_error(capsys, "marl")


def test_a_marl_folder_is_named_by_tabular(marl_copy, capsys):
    argv = ["tabular", "--env", "taxi", "--cores", "4", "--transitions", "40", "--episodes",
            "1", "--eval-episodes", "1", "--no-progress", "--checkpoint", str(marl_copy),
            "--resume"]
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert "resuming" not in captured.err + captured.out  # refused before the size line
    err = _lines(captured.err)
    assert len(err) == 1 and "holds a MARL run's checkpoints, not a tabular run's" in err[0]


# --------------------------------------------------------------------------------------------
# every output path is checked before any work, with one line naming the flag

#: (command line without the flag, the flag, "file" or "folder"); evaluate's --checkpoint
#: is an input (its checks are the damaged-checkpoint cases above)
OUTPUT_FLAGS = [
    ([*MARL, "--episodes", "1"], "--json", "file"),
    ([*MARL, "--episodes", "1"], "--checkpoint", "folder"),
    ([*MARL, "--episodes", "1", "--seeds", "2"], "--plot", "file"),
    (["marl", "evaluate", "--checkpoint", "{ckpt}"], "--json", "file"),
    (["marl", "evaluate", "--checkpoint", "{ckpt}"], "--render", "file"),
    (["tabular", "--env", "taxi", "--cores", "4", "--transitions", "40"], "--json", "file"),
    (["tabular", "--env", "taxi", "--cores", "4", "--transitions", "40"], "--save-q", "file"),
    (["tabular", "--env", "taxi", "--cores", "4", "--transitions", "40"], "--checkpoint",
     "folder"),
    (["actorq", "--steps", "100"], "--json", "file"),
    (["actorq", "--steps", "100"], "--checkpoint", "folder"),
    (["ptq", "--seeds", "1"], "--json", "file"),
    (["qat", "--seeds", "1"], "--json", "file"),
]
BAD_PLACES = ("a folder", "under a file", "read-only")


#: File names the flags' own checks accept (a suffix they require).
NAMES = {"--render": "out.gif", "--plot": "out.png"}


def _bad_path(kind: str, place: str, tmp_path: Path, monkeypatch,
              flag: str = "") -> tuple[Path, str]:
    name = NAMES.get(flag, "out.json") if kind == "file" else "ck"
    if place == "a folder":
        if kind == "folder":  # a file where the folder is wanted
            (tmp_path / name).write_text("x")
            return tmp_path / name, "is a file, not a folder"
        (tmp_path / name).mkdir()
        return tmp_path / name, "is a folder; give a file name"
    if place == "under a file":
        (tmp_path / "plain").write_text("x")
        return tmp_path / "plain" / name, "plain is a file, not a folder"
    locked = tmp_path / "locked"
    locked.mkdir()
    real_access = os.access
    # as root no permission bit keeps a write out: the check's os.access is told the truth
    # a read-only mount would tell it
    monkeypatch.setattr(_common.os, "access", lambda p, mode, **kw: False if Path(p) == locked
                        else real_access(p, mode, **kw))
    return locked / name, "is not writable"


@pytest.mark.parametrize("place", BAD_PLACES)
@pytest.mark.parametrize("argv, flag, kind", OUTPUT_FLAGS,
                         ids=[f"{a[0]}{'-evaluate' if 'evaluate' in a else ''}{f}"
                              for a, f, _ in OUTPUT_FLAGS])
def test_a_bad_output_path_is_refused_before_any_work(argv, flag, kind, place, tmp_path,
                                                      marl_folder, monkeypatch, capsys):
    path, why = _bad_path(kind, place, tmp_path, monkeypatch, flag)
    argv = [a.replace("{ckpt}", str(marl_folder)) for a in argv]
    # a folder that would be written first: still absent after the refusal
    other = tmp_path / "other_ckpt"
    extra = ["--checkpoint", str(other)] if flag != "--checkpoint" and "evaluate" not in argv \
        and argv[0] in ("marl", "tabular", "actorq") else []
    prog = argv[0]
    assert main([*argv, *extra, flag, str(path)]) == 2
    line = _one_error(capsys, prog)
    assert f"{flag} {path}" in line and why in line, line
    assert not other.exists()


#: Path options that are read, not written (their faults are the cases above).
INPUT_FLAGS = {("tabular", "--dataset"), ("marl evaluate", "--checkpoint")}


def _path_options(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _path_options(sub, (*prefix, name))
        elif action.option_strings and (action.type is Path or re.search(
                r"PATH|DIR|FILE|OUT|\.\w+$", str(action.metavar or ""))):
            yield " ".join(prefix), action.option_strings[0]


def test_every_output_path_option_of_every_command_is_a_case():
    """A new command (or option) that writes a path joins :data:`OUTPUT_FLAGS` to pass."""
    covered = {(" ".join(a[: 2 if "evaluate" in a else 1]), flag) for a, flag, _ in OUTPUT_FLAGS}
    found = set(_path_options(build_parser())) - INPUT_FLAGS
    assert found == covered


# --------------------------------------------------------------------------------------------
# atomic writes: an interrupted write keeps the old file; permissions are the user's


def test_an_interrupted_report_write_keeps_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "run.json"
    report.write_json(path, {"old": 1})
    old = path.read_bytes()

    def interrupted(tmp: str) -> None:
        Path(tmp).write_text('{"new": ')  # half written, then Ctrl-C
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        report.atomic_save(path, interrupted)
    assert path.read_bytes() == old
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.json"]  # no temporary left


STOPPED_WRITE = """
import os, signal, sys, time
from pathlib import Path
from jaxrl_pim import report
from jaxrl_pim.cli._common import stop_on_signals

def writer(tmp):
    Path(tmp).write_text('{"new": ')  # half written when the signal comes
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(30)

with stop_on_signals("jaxrl-pim test"):
    report.atomic_save(sys.argv[1], writer)
"""


def test_a_write_stopped_by_sigterm_keeps_the_old_file_and_no_temporary(tmp_path):
    import subprocess

    path = tmp_path / "run.json"
    report.write_json(path, {"old": 1})
    old = path.read_bytes()
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", STOPPED_WRITE, str(path)], cwd=root,
                          env=dict(os.environ, JAX_PLATFORMS="cpu"), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 128 + 15, done.stderr
    assert done.stderr.strip().splitlines()[-1] == "jaxrl-pim test: stopped by SIGTERM"
    assert path.read_bytes() == old
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.json"]


def _episode(steps: int = 4) -> dict:
    t = np.linspace(0.0, 1.0, steps + 1)[:, None, None]
    return {"agents": np.concatenate([t, -t], axis=2) * np.ones((1, 2, 1)),
            "landmarks": np.zeros((steps + 1, 2, 2)), "agent_radius": np.full(2, 0.15),
            "landmark_radius": np.full(2, 0.05), "agent_team": np.zeros(2, int),
            "team_names": ["agents"], "env": "spread", "returns": np.array([-1.0])}


def test_an_interrupted_render_keeps_the_old_gif(tmp_path, monkeypatch):
    from matplotlib.animation import PillowWriter

    from jaxrl_pim.marl.render import render_gif

    gif = tmp_path / "episode.gif"
    render_gif([_episode()], gif)
    old = gif.read_bytes()
    assert old[:6] == b"GIF89a"
    frames = {"n": 0}
    grab = PillowWriter.grab_frame

    def grab_then_stop(self, **kwargs):
        frames["n"] += 1
        if frames["n"] == 3:
            raise KeyboardInterrupt  # Ctrl-C in the middle of the animation
        return grab(self, **kwargs)

    monkeypatch.setattr(PillowWriter, "grab_frame", grab_then_stop)
    with pytest.raises(KeyboardInterrupt):
        render_gif([_episode(8)], gif)
    assert gif.read_bytes() == old
    assert sorted(p.name for p in tmp_path.iterdir()) == ["episode.gif"]


@pytest.mark.parametrize("umask, replaced, want", [
    (0o022, None, 0o644), (0o022, 0o644, 0o644), (0o077, None, 0o600),
    (0o022, 0o600, 0o600), (0o002, 0o664, 0o664)])
def test_atomic_writes_keep_the_users_permissions(umask, replaced, want, tmp_path):
    path = tmp_path / "table.json"
    if replaced is not None:
        path.write_text("{}")
        path.chmod(replaced)
    old = os.umask(umask)
    try:
        report.write_json(path, {"x": 1})
        np_path = report.atomic_save(tmp_path / "q.npy", lambda t: np.save(t, np.zeros(2)))
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == want
    assert stat.S_IMODE(np_path.stat().st_mode) == 0o666 & ~umask


def test_atomic_save_refuses_a_folder(tmp_path):
    with pytest.raises(IsADirectoryError):
        report.write_text(tmp_path, "x")


# --------------------------------------------------------------------------------------------
# messages: unknown options, flag names, cheap checks first


@pytest.mark.parametrize("argv, unknown", [
    (["marl", "--checkpoint-dir", "X"], "--checkpoint-dir"),
    (["marl", "--episodes", "3", "--bogus"], "--bogus"),
    (["marl", "evaluate", "--checkpoint", "x", "--bogus", "1"], "--bogus"),
    (["tabular", "--save-table", "q.npy"], "--save-table"),
])
def test_an_unknown_option_is_reported_as_unknown(argv, unknown, capsys):
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert f"unrecognized arguments: {unknown}" in err and "invalid choice" not in err, err


def test_command_parser_knows_prefixes_and_negative_numbers():
    p = CommandParser(prog="x")
    p.add_argument("--checkpoint-every", type=int)
    p.add_argument("--seed", type=int)
    assert p.unknown_options(["--checkpoint-e", "3", "--seed", "-4", "--nope=1"]) == ["--nope"]


#: (argv, the flags the line must name, the config fields it must not)
FLAG_NAMES = [
    ([*MARL, "--batch-size", "64"], ["--batch-size", "--capacity"], ["batch_size"]),
    ([*MARL, "--learning-starts", "64"], ["--learning-starts", "--capacity"],
     ["learning_starts"]),
    ([*MARL, "--num-envs", "0"], ["--num-envs"], ["num_envs"]),
    ([*MARL, "--update-every", "0"], ["--update-every"], ["update_every"]),
    (["tabular", "--sync-period", "0", "--transitions", "40"], ["--sync-period"],
     ["sync_period"]),
    (["tabular", "--cores", "0", "--transitions", "40"], ["--cores"], ["num_cores"]),
    (["actorq", "--actors", "0"], ["--actors"], ["num_actors"]),
    (["ptq", "--seeds", "0"], ["--seeds"], ["num_seeds"]),
    (["qat", "--delay", "2"], ["--delay"], ["delay_fraction"]),
]


@pytest.mark.parametrize("argv, flags, fields", FLAG_NAMES,
                         ids=[f"{a[0]}{f[0]}" for a, f, _ in FLAG_NAMES])
def test_errors_name_the_flags_the_user_typed(argv, flags, fields, capsys):
    assert main(argv) == 2
    line = _one_error(capsys, argv[0])
    assert all(f in line for f in flags), line
    assert not any(f in line for f in fields), line


def test_in_flag_names_replaces_whole_words_only():
    flags = {"num_episodes": "--episodes", "num_envs": "--num-envs"}
    assert in_flag_names("num_episodes (0) and num_envs; num_episodes_x, --num_envs, "
                         "config.num_envs.x", flags) \
        == "--episodes (0) and --num-envs; num_episodes_x, --num_envs, config.num_envs.x"


def test_cheap_checks_come_before_reading_or_importing(marl_folder, tmp_path, monkeypatch,
                                                      capsys):
    # --episodes 0 is refused before the (missing) checkpoint folder is even looked at
    assert main(["marl", "evaluate", "--checkpoint", str(tmp_path / "none"),
                 "--episodes", "0"]) == 2
    assert "--episodes must be >= 1, got 0" in _one_error(capsys, "marl")
    # a bad JaxMARL name is refused without importing JaxMARL (which here cannot import)
    monkeypatch.setitem(sys.modules, "jaxmarl", None)
    assert main(["marl", "--env", "jaxmarl:MPE_simple_v9", "--episodes", "1"]) == 2
    line = _one_error(capsys, "marl")
    assert "--env jaxmarl:MPE_simple_v9 is not supported" in line and "pip" not in line
    # a folder of another configuration too (its JSON record), before JaxMARL
    assert main(["marl", "--env", "jaxmarl:MPE_simple_spread_v3", "--checkpoint",
                 str(marl_folder), "--resume"]) == 2
    line = _one_error(capsys, "marl")
    assert "--checkpoint" in line and "--batch-size: saved 8" in line and "pip" not in line
    # the study configs are checked before the studies' (jax) modules are imported
    for module in ("tasks", "ptq", "qat", "gap", "report"):
        monkeypatch.setitem(sys.modules, f"jaxrl_pim.studies.{module}", None)
    for argv, flag in ((["ptq", "--seeds", "0"], "--seeds"), (["qat", "--delay", "2"],
                                                               "--delay")):
        assert main(argv) == 2
        assert flag in _one_error(capsys, argv[0])
    # the render's suffix, then the output paths, then the checkpoint
    assert main(["marl", "evaluate", "--checkpoint", str(tmp_path / "none"),
                 "--render", "x.png"]) == 2
    assert "writes a GIF" in _one_error(capsys, "marl")


#: Runs :func:`jaxrl_pim.cli.main` on each argv of a JSON list (argv 1) in one interpreter and
#: prints, per argv, the exit status, what went to stderr and whether jax / JaxMARL had been
#: imported by the time the command stopped.
CHEAP_CHECKS = r"""
import contextlib, io, json, sys
from jaxrl_pim.cli import main
out = []
for argv in json.loads(sys.argv[1]):
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            status = main(argv)
        except SystemExit as stop:
            status = stop.code
    out.append({"status": status, "err": err.getvalue(),
                "loaded": [m for m in ("jax", "jaxmarl") if m in sys.modules]})
print(json.dumps(out))
"""

#: (argv, the flag the error line names): options refused before jax is imported.
CHEAP = [
    (["marl", "evaluate", "--checkpoint", "none", "--episodes", "0"], "--episodes"),
    (["marl", "evaluate", "--checkpoint", "none", "--render", "x.png"], "--render"),
    (["marl", "evaluate", "--checkpoint", "none", "--policy", "best"], "--policy"),
    (["marl", "evaluate", "--checkpoint", "none"], "--checkpoint"),
    (["marl", "--episodes", "0"], "--episodes"),
    (["marl", "--env", "jaxmarl:MPE_simple_v9", "--episodes", "1"], "--env"),
    (["marl", "--env", "chase"], "--env"),
    (["marl", "--algo", "ddpg"], "--algo"),
    (["marl", "--sampler", "lru"], "--sampler"),
    (["marl", "--layout", "rows"], "--layout"),
    (["marl", "--sampling-mode", "slow"], "--sampling-mode"),
    (["marl", "--seeds", "0"], "--seeds"),
    (["marl", "--eval-episodes", "-1"], "--eval-episodes"),
    (["marl", "--plot", "c.png"], "--plot"),
    (["marl", "--env", "tag", "--agents", "3", "--prey", "1"], "--agents"),
    (["marl", "--env", "jaxmarl:MPE_simple_v3", "--agents", "4"], "--agents"),
    (["marl", "--capacity", "16", "--batch-size", "32"], "--batch-size"),
    (["marl", "--capacity", "lots"], "--capacity"),
    (["marl", "--resume"], "--resume"),
    (["tabular", "--episodes", "0"], "--episodes"),
    (["tabular", "--cores", "0"], "--cores"),
    (["tabular", "--sync-period", "0"], "--sync-period"),
    (["tabular", "--transitions", "0"], "--transitions"),
    (["tabular", "--eval-episodes", "0"], "--eval-episodes"),
    (["tabular", "--agents", "0"], "--agents"),
    (["tabular", "--env", "chess"], "--env"),
    (["tabular", "--dtype", "int8"], "--dtype"),
    (["tabular", "--num-states", "4"], "--num-actions"),
    (["tabular", "--num-states", "4", "--num-actions", "2", "--dataset", "d.txt",
      "--terminal-states", "7"], "--terminal-states"),
    (["actorq", "--actors", "0"], "--actors"),
    (["actorq", "--envs-per-actor", "0"], "--envs-per-actor"),
    (["actorq", "--actor-update-period", "0"], "--actor-update-period"),
    (["actorq", "--steps", "0"], "--steps"),
    (["actorq", "--hidden", "64", "0"], "--hidden"),
    (["actorq", "--algo", "sac"], "--algo"),
    (["actorq", "--precision", "int4"], "--precision"),
    (["actorq", "--ray-address", "auto"], "--ray-address"),
    (["actorq", "--checkpoint-every", "10"], "--checkpoint-every"),
    (["actorq", "--env", "NoSuchEnv-v9"], "--env"),
    (["ptq", "--seeds", "0"], "--seeds"),
    (["qat", "--delay", "2"], "--delay"),
    (["ptq", "--tasks", "ppo-cartpole", "--bits", "1"], "--bits"),
]
#: (argv, the flag, the words of its error): folders of another run, refused from their JSON
#: record before jax (and JaxMARL, orbax) is imported; ``{marl}`` is a MARL run's folder
#: (:func:`marl_folder`), ``{tabular}`` a tabular run's.
CHEAP_FOLDERS = [
    (["tabular", "--checkpoint", "{marl}", "--resume"], "--checkpoint",
     "holds a MARL run's checkpoints, not a tabular run's"),
    (["marl", "--env", "jaxmarl:MPE_simple_spread_v3", "--checkpoint", "{marl}", "--resume"],
     "--checkpoint", "another run configuration (--batch-size: saved 8, this run 1024)"),
    (["marl", *MARL[1:], "--seed", "3", "--checkpoint", "{marl}", "--resume"], "--checkpoint",
     "(--seed: saved 0, this run 3)"),
    (["marl", "evaluate", "--checkpoint", "{tabular}"], "--checkpoint",
     "holds a tabular run's checkpoints, not a MARL run's"),
]


def _cheap_checks(cases: list[list[str]]) -> list[dict]:
    import json
    import subprocess

    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", CHEAP_CHECKS, json.dumps(cases)], cwd=root,
                          capture_output=True, text=True, timeout=120, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def _tabular_folder(folder: Path) -> Path:
    """A checkpoint folder of a tabular run (its fingerprint's marker field; a tiny state)."""
    with Checkpoints(folder, fingerprint={"config": {"num_states": 4}, "seed": 0}) as ckpt:
        ckpt.save(1, {"q": jnp.zeros((4, 2))})
    return folder


def test_cheap_checks_refuse_before_jax_is_imported(marl_folder, tmp_path):
    # one interpreter for every case: a case that imported jax shows in its own record and
    # in every later one, so the first offender is named
    folders = {"{marl}": str(marl_folder), "{tabular}": str(_tabular_folder(tmp_path / "tab"))}
    cases = [*CHEAP, *[([folders.get(a, a) for a in argv], flag)
                       for argv, flag, _ in CHEAP_FOLDERS]]
    got = _cheap_checks([argv for argv, _ in cases])
    for (_, _, words), res in zip(CHEAP_FOLDERS, got[len(CHEAP):], strict=True):
        assert words in res["err"], res["err"]
    for (argv, flag), res in zip(cases, got, strict=True):
        lines = _lines(res["err"])
        assert res["status"] == 2, (argv, res)
        # one error line naming the flag, last; before it at most argparse's usage
        assert re.match(rf"jaxrl-pim {argv[0]}( evaluate)?: error: .*{flag}", lines[-1]), \
            (argv, lines)
        assert len(lines) == 1 or lines[0].startswith("usage: "), (argv, lines)
        assert not any(": error: " in ln for ln in lines[:-1]), (argv, lines)
        assert res["loaded"] == [], (argv, res["loaded"])  # no jax, no JaxMARL


def test_a_bad_option_is_refused_within_seconds():
    import subprocess
    import time

    # was 16-18 s on a loaded machine when the command imported jax and compiled first; a
    # bound well above the ~0.5 s it takes now, for slow CI machines
    root = Path(__file__).resolve().parents[2]
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "jaxrl_pim.cli", "marl", "evaluate",
                           "--checkpoint", "none", "--episodes", "0"], cwd=root,
                          capture_output=True, text=True, timeout=60)
    elapsed = time.perf_counter() - t0
    assert done.returncode == 2 and "--episodes must be >= 1" in done.stderr, done.stderr
    assert elapsed < 5.0, elapsed


# (the commands' defaults are their configs' own: tests/cli/test_defaults.py; that the
# configs and commands import without jax: tests/test_pim.py)


def test_the_choices_are_the_librarys():
    from jaxrl_pim import choices, replay
    from jaxrl_pim.actorq import config as actorq_config
    from jaxrl_pim.envs import jaxmarl_adapter, mpe
    from jaxrl_pim.marl import config, plan, policies

    assert choices.LAYOUTS is replay.LAYOUTS and choices.SAMPLERS is replay.SAMPLERS
    assert choices.TAG_PRESETS is mpe.TAG_PRESETS
    assert choices.JAXMARL_SUPPORTED is jaxmarl_adapter.SUPPORTED
    assert choices.JAXMARL_PREFIX == jaxmarl_adapter.PREFIX == "jaxmarl:"
    assert choices.MARL_ALGOS is config.ALGOS and choices.MARL_ENVS is config.ENVS
    assert choices.SAMPLING_MODES is config.SAMPLING_MODES
    assert choices.POLICIES is policies.POLICIES
    from jaxrl_pim.tabular import config as tabular_config

    assert (choices.TABULAR_ALGOS, choices.FORMATS, choices.SAMPLINGS, choices.RNGS) == (
        tabular_config.ALGOS, tabular_config.FORMATS, tabular_config.SAMPLINGS,
        tabular_config.RNGS)
    assert choices.LONG_RUN_TRANSITIONS == plan.LONG_RUN_TRANSITIONS
    assert (choices.ACTORQ_ALGOS, choices.PRECISIONS, choices.MODES, choices.COMPUTES,
            choices.DQN_ENVS, choices.D4PG_ENVS) == (
        actorq_config.ALGOS, actorq_config.PRECISIONS, actorq_config.MODES,
        actorq_config.COMPUTES, actorq_config.DQN_ENVS, actorq_config.D4PG_ENVS)
    # the names the actorq command takes before jax: what gymnax registers on import
    import gymnax

    assert sorted(choices.GYMNAX_ENVS) == sorted(gymnax.registered_envs)
    assert set(choices.DQN_ENVS + choices.D4PG_ENVS) <= set(choices.GYMNAX_ENVS)


def test_check_output_paths_directly(tmp_path):
    ns = argparse.Namespace(json=str(tmp_path / "new" / "deeper" / "r.json"), ck=None)
    _common.check_outputs(ns, files={"--json": "json"}, folders={"--checkpoint": "ck"})
    (tmp_path / "f").write_text("x")
    with pytest.raises(ValueError, match=r"^--checkpoint .*/f/a/b: .*/f is a file"):
        _common.check_output_folder(tmp_path / "f" / "a" / "b", "--checkpoint")


# --------------------------------------------------------------------------------------------
# zero-size state: the JaxMARL worlds


def test_zero_size_leaves_round_trip(tmp_path):
    tree = {"empty": jnp.zeros((1, 0), jnp.float32), "none": jnp.zeros((0,), jnp.int32),
            "keys": jax.random.split(jax.random.key(1), 0), "x": jnp.arange(3.0)}
    with Checkpoints(tmp_path / "z") as ckpt:
        ckpt.save(1, tree)
        back, _ = ckpt.restore(jax.eval_shape(lambda: tree))
    for name in tree:
        assert back[name].shape == tree[name].shape and back[name].dtype == tree[name].dtype
    np.testing.assert_array_equal(back["x"], tree["x"])
    assert not list((tmp_path / "z").glob("*tmp*"))


def test_a_failed_save_leaves_no_temporary_folder(tmp_path, monkeypatch):
    import jaxrl_pim.checkpoint as checkpoint

    with Checkpoints(tmp_path / "c") as ckpt:
        ckpt.save(1, {"x": jnp.ones(3)})
        # without the placeholder orbax refuses the empty array after making its folder
        monkeypatch.setattr(checkpoint, "_is_empty", lambda x: False)
        with pytest.raises(ValueError, match="zero size"):
            ckpt.save(2, {"x": jnp.zeros((0, 3))})
        assert sorted(p.name for p in (tmp_path / "c").iterdir()) == ["1"]
        assert ckpt.steps() == [1]


class TestJaxMARLWorlds:
    """Every JaxMARL world the adapter takes: its state (one world, MPE_simple_v3, has an
    empty communication array) checkpoints and restores; that world trains, checkpoints,
    resumes and evaluates through the command. Training all 13 through the command would
    compile 13 programs (minutes); the restore path is the same for every world's state."""

    pytestmark = JAXMARL_MARKS

    def test_every_worlds_state_round_trips(self, tmp_path):
        from jaxrl_pim.envs.jaxmarl_adapter import SUPPORTED
        from jaxrl_pim.marl.config import MARLConfig
        from jaxrl_pim.marl.trainer import make_env

        states, empty = {}, []
        for name in SUPPORTED:
            env, params = make_env(MARLConfig(env=f"jaxmarl:{name}", num_envs=1))
            shapes = jax.eval_shape(lambda k, env=env, params=params: env.reset(k, params),
                                    jax.random.PRNGKey(0))
            states[name] = _filled(shapes, len(states))
            if any(int(np.prod(x.shape)) == 0 for x in jax.tree.leaves(shapes)):
                empty.append(name)
        assert empty == ["MPE_simple_v3"]  # the world orbax could not checkpoint
        with Checkpoints(tmp_path / "worlds") as ckpt:
            ckpt.save(1, states)
            back, _ = ckpt.restore(jax.eval_shape(lambda: states))
        for name in SUPPORTED:
            for got, want in zip(jax.tree.leaves(back[name]), jax.tree.leaves(states[name]),
                                 strict=True):
                assert got.shape == want.shape and got.dtype == want.dtype, name
                np.testing.assert_array_equal(np.asarray(got), np.asarray(want))

    def test_the_empty_array_world_trains_resumes_and_evaluates(self, tmp_path, capsys):
        folder = tmp_path / "simple"
        argv = ["marl", "--env", "jaxmarl:MPE_simple_v3", "--num-envs", "1", "--capacity",
                "16", "--batch-size", "4", "--learning-starts", "8", "--update-every", "25",
                "--no-progress", "--no-estimate", "--checkpoint", str(folder),
                "--checkpoint-every", "1"]
        assert main([*argv, "--episodes", "1"]) == 0
        assert main([*argv, "--episodes", "2", "--resume"]) == 0
        out = capsys.readouterr().out
        assert "resuming after episode 1" in out and "episodes 1->2" in out
        assert sorted(p.name for p in folder.iterdir()) == ["1", "2"]  # no temporary folder
        assert main(["marl", "evaluate", "--checkpoint", str(folder), "--episodes", "2"]) == 0
        assert "(checkpoint after 2 episodes)" in capsys.readouterr().out

# ---------------------------------------------------------------- damage of every shape
# A step is trusted only when its file list (``files.json``) is present, of the right shape
# and matches; anything else is Damaged: one short line naming the folder, the step and the
# file, never a dump and never orbax's own noise, and every command that reads steps falls
# back to the newest intact one or refuses in one line. A step or folder that cannot be moved
# or deleted is named in one line; pruning never stops a run, and a resume refuses before any
# work when it could not set a damaged step aside.

#: At most this many characters of a Damaged line besides its folder's path.
SHORT = 200


def _short_line(line: str, folder: Path) -> None:
    assert len(line) - len(str(folder)) <= SHORT, (len(line), line)
    for noise in ("Traceback", "Event loop is closed", "DATA_LOSS", "tensorstore", "absl"):
        assert noise not in line, line


def _only_line(capfd) -> str:
    """The one line on stderr (file descriptor 2 included: orbax's threads write there)."""
    err = _lines(capfd.readouterr().err)
    assert len(err) == 1, err
    return err[0]


def _evaluated_step_2(capfd, folder: Path, file: str) -> None:
    """``marl evaluate`` of ``folder`` used step 2, with one warning naming ``3/file``."""
    assert main(["marl", "evaluate", "--checkpoint", str(folder), "--episodes", "2"]) == 0
    out = capfd.readouterr()
    assert "(checkpoint after 2 episodes)" in out.out
    err = _lines(out.err)
    assert len(err) == 1, err
    line = err[0]
    assert line.startswith(f"warning: checkpoint 3 in {str(folder)!r} is damaged: 3/{file}")
    assert line.endswith("using checkpoint 2, the newest intact one"), line
    _short_line(line, folder)


def test_a_step_without_its_file_list_is_damaged_and_never_read(marl_copy, capfd, caplog):
    # a step killed before its list, whose orbax files are garbage too: orbax would raise
    # a 1,000-character error and leave its reads' tracebacks behind
    step = marl_copy / "3"
    (step / FILES).unlink()
    for name in ("state/manifest.ocdbt", "state/_METADATA", "state/_sharding",
                 "_CHECKPOINT_METADATA"):
        (step / name).write_bytes(b"\x00not orbax's\n" * 100)
    before = _tree_files(marl_copy)
    assert main([*MARL, "--episodes", "2", "--checkpoint", str(marl_copy), "--resume"]) == 0
    out = capfd.readouterr()
    assert "resuming after episode 2" in out.out
    err = _lines(out.err)
    assert len(err) == 1 and "3/files.json: no file list: the save did not finish" in err[0], \
        err
    _short_line(err[0], marl_copy)
    assert not [r for r in caplog.records if "orbax" in r.pathname]  # its log, dropped
    assert _tree_files(marl_copy) == _aside(before, 3)


#: File lists that are valid JSON of the wrong shape -> the words naming them.
BAD_LISTS = {
    '{"files": {"meta/metadata": "abc"}}': "3/files.json: 'meta/metadata': 'abc' is not",
    '{"files": {"meta/metadata": [1, 2, 3]}}': "is not [size, crc]",
    '{"files": {"meta/metadata": [true, 0]}}': "is not [size, crc]",
    '{"files": []}': 'not a file list {"files": {name: [size, crc]}}',
    "[1, 2, 3]": "not a file list",
    '"files"': "not a file list",
    '{"files": {"../3/meta/metadata": [1, 2]}}': "not a file name in the step",
    '{"files": {"/etc/passwd": [1, 2]}}': "not a file name in the step",
    '{"files": {"state": [4096, 0]}}': "3/state: not a regular file",
    '{"files": {}}': "not in the file list (added since the save)",
    "{": "3/files.json: Expecting",
}


def test_a_file_list_of_the_wrong_shape_is_damage(marl_copy, capfd):
    folder = marl_copy
    with Checkpoints(folder) as ckpt:
        for text, words in BAD_LISTS.items():
            (folder / "3" / FILES).write_text(text)
            with pytest.raises(Damaged) as damaged:
                ckpt.verify(3)
            line = str(damaged.value)
            assert words in line and "\n" not in line, (text, line)
            _short_line(line, folder)
    # marl evaluate falls back; tabular and actorq read past step 3 to the record of 2
    (folder / "3" / FILES).write_text('{"files": []}')
    before = _tree_files(folder)
    _evaluated_step_2(capfd, folder, FILES)
    tabular = ["tabular", "--env", "taxi", "--cores", "4", "--transitions", "40",
               "--no-progress", "--checkpoint", str(folder), "--resume"]
    assert main(tabular) == 2
    assert "holds a MARL run's checkpoints, not a tabular run's" in _only_line(capfd)
    actorq = folder.parent / "actorq"  # its runs' folders: <--checkpoint>/<precision>
    shutil.copytree(folder, actorq / "int8")
    assert main(["actorq", "--steps", "100", "--checkpoint", str(actorq), "--resume"]) == 2
    assert "holds a MARL run's checkpoints, not an ActorQ run's" in _only_line(capfd)
    assert _tree_files(folder) == before


def test_steps_that_cannot_be_moved_or_deleted(marl_copy, tmp_path, monkeypatch, capfd):
    # as root no permission keeps a rename or a delete out: these fail as a read-only or
    # immutable (chattr +i) folder makes them fail
    real_rename, real_rmtree = os.rename, shutil.rmtree
    locked: set[Path] = set()

    def rename(src, dst, **kw):
        if Path(src) in locked:
            raise PermissionError(1, "Operation not permitted", str(src))
        return real_rename(src, dst, **kw)

    def rmtree(path, *args, **kw):
        if Path(path).name.startswith(".deleting-2-"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_rmtree(path, *args, **kw)

    monkeypatch.setattr(os, "rename", rename)
    monkeypatch.setattr(shutil, "rmtree", rmtree)
    # a resume that would set a damaged step aside refuses, before any work
    file = _truncate(marl_copy / "3")
    locked.add(marl_copy / "3")
    before = _tree_files(marl_copy)
    assert main([*MARL, "--episodes", "4", "--checkpoint", str(marl_copy), "--resume"]) == 2
    line = _one_error(capfd, "marl")
    assert (f"checkpoint 3 in {str(marl_copy)!r} is damaged (3/{file}) and cannot be renamed "
            "damaged-3 (Operation not permitted)") in line and "--resume again" in line, line
    assert _tree_files(marl_copy) == before
    # pruning: a step that cannot be moved, a folder that cannot be deleted: named once,
    # kept, and the run ends with its report
    from jaxrl_pim import runner

    class Counter:
        unit, total = "step", 4

        def fingerprint(self):
            return {"config": {"total": None}}

        def init(self):
            return {"x": jnp.zeros(2)}

        def template(self, step):
            return {"x": jnp.zeros(2)}

        def restore(self, restored):
            return restored.tree

        def train_segment(self, state, n):
            return {"x": state["x"] + n}, n

        def snapshot(self, state, done):
            return state, {"done": done}

        def report(self, outcome):
            return {"x": float(outcome.state["x"][0])}

    folder = tmp_path / "pruned"
    locked.add(folder / "1")
    with runner.open_checkpoints(Counter(), folder, keep=1) as ckpt:
        outcome = runner.run(Counter(), ckpt, every=1)
        assert ckpt.steps() == [1, 4]
    assert outcome.report == {"x": 4.0}
    err = _lines(capfd.readouterr().err)
    assert len(err) == 2, err
    assert err[0] == (f"warning: checkpoint 1 in {str(folder)!r} cannot be deleted (Operation "
                      "not permitted); it is kept beyond the newest 1: delete it by hand")
    assert err[1].startswith(f"warning: '{folder}/.deleting-2-") and err[1].endswith(
        "cannot be deleted (Permission denied); delete it by hand"), err
    assert sorted(p.name for p in folder.iterdir()) == [
        ".deleting-2-" + str(os.getpid()), "1", "4"]


#: Records that are not ``{"fingerprint": ..., "meta": {...}}`` -> the words naming them.
BAD_RECORDS = {
    "{}": "but keys []",
    "[]": "but a list",
    '"record"': "but a str",
    '{"fingerprint": null}': "but keys ['fingerprint']",
    '{"fingerprint": null, "meta": [1]}': "but meta a list",
    '{"fingerprint": null, "meta": {}, "more": ' + json.dumps(list(range(300))) + "}":
        "but keys ['fingerprint', 'meta', 'more']",
}


def test_a_record_of_the_wrong_shape_is_damage(marl_copy, capfd):
    folder = marl_copy
    with Checkpoints(folder) as ckpt:
        for text, words in BAD_RECORDS.items():
            (folder / "3" / "meta" / "metadata").write_text(text)
            ckpt._write_file_list(3)  # the list matches: only the record is wrong
            with pytest.raises(Damaged) as damaged:
                ckpt.record(3)
            line = str(damaged.value)
            assert '3/meta/metadata: not a record {"fingerprint": ..., "meta": {...}}' \
                in line and words in line, (text, line)
            _short_line(line, folder)
    (folder / "3" / "meta" / "metadata").write_text("{}")
    with Checkpoints(folder) as ckpt:
        ckpt._write_file_list(3)
    _evaluated_step_2(capfd, folder, "meta/metadata")


class _Exited(Exception):
    """What the test's ``os._exit`` raises instead of ending the process."""


def test_a_save_stopped_by_a_signal_removes_its_temporary_folder(tmp_path, monkeypatch,
                                                                 capsys):
    from orbax.checkpoint._src.path import atomicity

    folder = tmp_path / "c"
    seen: dict[str, list[str]] = {}
    real_finalize = atomicity.AtomicRenameTemporaryPath.finalize

    def names() -> list[str]:
        return sorted(p.name for p in folder.iterdir())

    def exit_now(status: int) -> None:  # what is on disk when the process would end
        seen[f"exit {status}"] = names()
        raise _Exited

    async def stopped_before_the_rename(self) -> None:
        seen["before"] = names()
        _common._on_signal(int(mode), None)  # the handler, as a signal runs it

    monkeypatch.setattr(os, "_exit", exit_now)
    monkeypatch.setattr(atomicity.AtomicRenameTemporaryPath, "finalize",
                        stopped_before_the_rename)
    monkeypatch.setitem(_common._stopping, "prog", "jaxrl-pim")
    with Checkpoints(folder) as ckpt:
        # SIGINT / SIGTERM end the command at once (os._exit, where no except runs)
        for mode in (signal.SIGINT, signal.SIGTERM):
            monkeypatch.setitem(_common._stopping, "raise", False)
            monkeypatch.setitem(_common._stopping, "reported", False)
            with pytest.raises(_Exited):
                ckpt.save(1, {"x": jnp.ones(3)})
            # orbax's temporary folder, complete but for its rename
            assert [n.split(".")[1] for n in seen["before"]] == ["orbax-checkpoint-tmp"]
            assert seen.pop(f"exit {128 + mode}") == []
        # the launcher's Stopped unwinds through the save
        monkeypatch.setitem(_common._stopping, "raise", True)
        with pytest.raises(_common.Stopped):
            ckpt.save(1, {"x": jnp.ones(3)})
        assert names() == [] and not checkpoint.IN_FLIGHT
        monkeypatch.setattr(atomicity.AtomicRenameTemporaryPath, "finalize", real_finalize)
        ckpt.save(1, {"x": jnp.ones(3)})
        assert names() == ["1"]
        np.testing.assert_array_equal(ckpt.restore({"x": jnp.zeros(3)})[0]["x"], np.ones(3))
    assert _lines(capsys.readouterr().err) == ["jaxrl-pim: stopped by SIGINT",
                                               "jaxrl-pim: stopped by SIGTERM"]


def test_evaluate_refuses_actors_that_do_not_fit_before_reading_them(marl_copy, capsys,
                                                                      monkeypatch):
    """The recorded (here: computed) memory of reading the actors against the memory a run
    may fill: one line naming --checkpoint, before any array is read."""
    from jaxrl_pim.marl import plan, policies

    monkeypatch.setattr(plan, "evaluate_bytes", lambda config: 8 << 30)
    monkeypatch.setenv(plan.MEMORY_LIMIT_ENV, str(1 << 30))
    monkeypatch.setattr(policies, "load_policies",
                        lambda *a, **k: pytest.fail("the actors were read"))
    assert main(["marl", "evaluate", "--checkpoint", str(marl_copy)]) == 2
    line = _one_error(capsys, "marl")
    assert "--checkpoint" in line and "reading the actors" in line and "8.0 GiB" in line, line
