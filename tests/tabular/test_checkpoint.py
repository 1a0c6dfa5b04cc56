"""Resuming tabular runs: segments of whole sync rounds, checkpoints, and what uses the key.

* ``make_train_from`` segments give ``make_train``'s tables bit for bit (fp32, int32, fp16;
  Q and SARSA; SEQ and RAN; JAX keys and the PIM LCG; a shorter last round; independent mode),
  and the same holds on a 2-device mesh.
* ``jaxrl-pim tabular --checkpoint`` killed with SIGKILL after its first checkpoint, then
  ``--resume``d, ends with the uninterrupted run's table bit for bit (int32 and fp32); a
  resumed run refuses another configuration, another seed, and a folder that already holds
  checkpoints without ``--resume``.
* The key is consumed by RAN sampling and by SARSA's exploration with ``rng="jax"`` only:
  seeds give different tables there and identical ones for SEQ/STR Q-learning and the LCG.
"""

from __future__ import annotations

import itertools
import json
import shutil
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

from jaxrl_pim.checkpoint import Checkpoints
from jaxrl_pim.cli import main
from jaxrl_pim.data import Dataset, write_text
from jaxrl_pim.tabular import TabularConfig, chunk, make_train
from jaxrl_pim.tabular.trainer import init_state, make_train_from, q_table
from tests.support import subprocess_env
from tests.support.processes import kill_after_first_checkpoint

TIMEOUT_S = 300  # bound on every subprocess of this file
S, A = 7, 3


def random_dataset(shape: int | tuple[int, ...], seed: int = 0, num_states: int = S,
                   num_actions: int = A) -> Dataset:
    rng = np.random.default_rng(seed)
    return Dataset(
        state=rng.integers(0, num_states, shape),
        action=rng.integers(0, num_actions, shape).astype(np.uint8),
        reward=rng.integers(-3, 4, shape).astype(np.float32),
        next_state=rng.integers(0, num_states, shape),
        terminated=rng.random(shape) < 0.1,
    )


def run_in_segments(cfg: TabularConfig, chunks: Dataset, key: jax.Array, every: int):
    seg = jax.jit(make_train_from(cfg, every))
    state, deltas = init_state(cfg, key), []
    while int(state.round) < cfg.num_rounds:
        state, metrics = seg(state, chunks)
        deltas.append(np.asarray(metrics["q_delta"]))
    return state, np.concatenate(deltas)


# --------------------------------------------------------------------------------------------
# The Python API: segments

SEGMENT_VARIANTS = [
    ("q", "seq", "fp32", "jax"), ("q", "ran", "int32", "jax"), ("sarsa", "seq", "fp32", "lcg"),
    ("sarsa", "ran", "fp32", "jax"), ("sarsa", "ran", "int32", "lcg"), ("q", "str", "fp16", "jax"),
]


@pytest.mark.parametrize("algo,sampling,dtype,rng", SEGMENT_VARIANTS)
def test_segments_equal_the_whole_run(algo, sampling, dtype, rng):
    # 7 episodes, sync every 2: rounds of 2, 2, 2, 1 episodes; segments of 3 rounds, the
    # second one running past the end (its extra rounds change nothing)
    cfg = TabularConfig(S, A, algo=algo, sampling=sampling, dtype=dtype, num_cores=4,
                        sync_period=2, num_episodes=7, rng=rng)
    chunks, key = chunk(cfg, random_dataset(4 * 23)), jax.random.key(3)
    q, metrics = jax.jit(make_train(cfg))(key, chunks)
    state, deltas = run_in_segments(cfg, chunks, key, 3)
    assert int(state.round) == cfg.num_rounds == 4
    np.testing.assert_array_equal(np.asarray(q_table(cfg, state)), np.asarray(q))
    np.testing.assert_array_equal(deltas[:4], metrics["q_delta"])
    np.testing.assert_array_equal(deltas[4:], 0.0)
    assert np.abs(np.asarray(q)).max() > 0.1  # learning happened


def test_segments_in_independent_mode_and_state_checks():
    cfg = TabularConfig(S, A, algo="sarsa", sampling="ran", num_cores=3, independent=True,
                        sync_period=2, num_episodes=5)
    chunks, key = random_dataset((3, 20)), jax.random.key(1)
    q, _ = jax.jit(make_train(cfg))(key, chunks)
    state, _ = run_in_segments(cfg, chunks, key, 2)
    assert state.q.shape == (3, S, A)
    np.testing.assert_array_equal(np.asarray(q_table(cfg, state)), np.asarray(q))
    with pytest.raises(ValueError, match="num_rounds must be <= 3"):
        make_train_from(cfg, 4)
    other = TabularConfig(S, A, num_cores=3, dtype="int32")
    with pytest.raises(ValueError, match="state does not fit this config"):
        make_train_from(other)(init_state(cfg, key), chunk(other, random_dataset(30)))


@pytest.mark.slow
def test_segments_on_a_two_device_mesh(multi_device):
    out = multi_device("""
        import jax, numpy as np
        from jaxrl_pim.data import Dataset, write_text
        from jaxrl_pim.tabular import TabularConfig, chunk, make_mesh, make_train
        from jaxrl_pim.tabular.trainer import init_state, make_train_from, q_table
        rng = np.random.default_rng(0)
        d = Dataset(*(rng.integers(0, n, 4 * 30).astype(t) for n, t in
                      [(7, np.uint8), (3, np.uint8), (4, np.float32), (7, np.uint8)]),
                    rng.random(4 * 30) < 0.1)
        mesh = make_mesh(2)
        for dtype in ("fp32", "int32"):
            cfg = TabularConfig(7, 3, algo="sarsa", sampling="ran", dtype=dtype, num_cores=4,
                                sync_period=2, num_episodes=9)
            chunks, key = chunk(cfg, d), jax.random.key(5)
            q, _ = jax.jit(make_train(cfg, mesh))(key, chunks)
            seg = jax.jit(make_train_from(cfg, 2, mesh))
            state = init_state(cfg, key)
            while int(state.round) < cfg.num_rounds:
                state, _ = seg(state, chunks)
            print(dtype, bool(np.array_equal(np.asarray(q_table(cfg, state)), np.asarray(q))))
    """, n_devices=2, timeout=TIMEOUT_S)
    assert out.split() == ["fp32", "True", "int32", "True"], out


# --------------------------------------------------------------------------------------------
# The command: SIGKILL, then --resume

# a dataset file of a 2,000 x 4 MDP: 30 sync rounds of 2 episodes x 5,000 steps per lane. Each
# table entry gets few updates per round, so the final table depends on every round's state
# (a run that forgets its start would not show a resume that restores the wrong tables).
CLI_S, CLI_A = 2000, 4
SMALL = ["tabular", "--num-states", str(CLI_S), "--num-actions", str(CLI_A), "--cores", "4",
         "--sync-period", "2", "--no-progress"]


def cli_args(data: Path, dtype: str, rng: str = "jax", algo: str = "sarsa", seed: int = 3,
             episodes: int = 60, one_device: bool = True) -> list[str]:
    return [*SMALL, "--dataset", str(data), "--dtype", dtype, "--rng", rng, "--algo", algo,
            "--sampling", "ran", "--seed", str(seed), "--episodes", str(episodes),
            *(["--devices", "1"] if one_device else [])]


def cli_dataset(path: Path, seed: int) -> Path:
    write_text(path, random_dataset(4 * 5000, seed, CLI_S, CLI_A))
    return path


def _subprocess_env() -> dict[str, str]:
    return subprocess_env(1)


def _kill_after_first_checkpoint(argv: list[str], folder: Path, log: Path) -> None:
    """Run ``jaxrl-pim`` with ``argv`` and SIGKILL it once a checkpoint is on disk."""
    kill_after_first_checkpoint(argv, folder, log, _subprocess_env(), TIMEOUT_S)


@pytest.mark.slow
@pytest.mark.parametrize("dtype,rng", [("int32", "lcg"), ("fp32", "jax")])
def test_sigkill_then_resume_gives_the_uninterrupted_table(tmp_path, capsys, dtype, rng):
    data = cli_dataset(tmp_path / "mdp.txt", seed=1)
    argv = cli_args(data, dtype, rng)
    folder = tmp_path / "ckpt"
    _kill_after_first_checkpoint(
        [*argv, "--checkpoint", str(folder), "--checkpoint-every", "1"], folder,
        tmp_path / "killed.log")
    steps = Checkpoints(folder).steps()  # only complete checkpoints, none of the last round
    assert steps and steps[-1] < 30 and len(steps) <= 3, steps

    # the uninterrupted run, without checkpoints
    assert main([*argv, "--save-q", str(tmp_path / "ref.npy"),
                 "--json", str(tmp_path / "ref.json")]) == 0
    # refused: no --resume on a folder with checkpoints, another configuration, seed or file
    other = cli_dataset(tmp_path / "other.txt", seed=2)
    capsys.readouterr()
    for bad, match in [(argv, "already holds checkpoints"),
                       ([*cli_args(data, dtype, rng, algo="q"), "--resume"],
                        "--algo: saved 'sarsa', this run 'q'"),
                       ([*cli_args(data, dtype, rng, seed=4), "--resume"],
                        "seed: saved 3, this run 4"),
                       ([*cli_args(other, dtype, rng), "--resume"], "--dataset: saved")]:
        assert main([*bad, "--checkpoint", str(folder)]) == 2
        assert match in capsys.readouterr().err
    assert Checkpoints(folder).steps() == steps  # nothing was touched

    # resumed at another period (a save costs more than a round here): segments end at
    # rounds 10, 20 and 30
    assert main([*argv, "--checkpoint", str(folder), "--checkpoint-every", "10", "--resume",
                 "--save-q", str(tmp_path / "resumed.npy"),
                 "--json", str(tmp_path / "resumed.json")]) == 0
    assert f"resuming after round {steps[-1]}" in capsys.readouterr().err
    ref, resumed = np.load(tmp_path / "ref.npy"), np.load(tmp_path / "resumed.npy")
    assert np.abs(ref).max() > 0.01
    np.testing.assert_array_equal(resumed, ref)  # bit for bit
    rep = json.loads((tmp_path / "resumed.json").read_text())["results"]
    ref_rep = json.loads((tmp_path / "ref.json").read_text())["results"]
    assert rep["resumed_from_round"] == steps[-1]
    assert rep["checkpoints_written"] == 3
    assert rep["q_delta_last"] == ref_rep["q_delta_last"]
    assert rep["evaluation"].startswith("skipped: no environment")
    assert rep["updates"] == ref_rep["updates"] * (30 - steps[-1]) // 30
    assert Checkpoints(folder).steps() == [10, 20, 30]


def test_checkpoint_options_are_checked(tmp_path, capsys):
    data = cli_dataset(tmp_path / "mdp.txt", seed=1)
    for extra, match in [(["--resume"], "--resume needs --checkpoint"),
                         (["--checkpoint-every", "2"], "--checkpoint-every needs --checkpoint")]:
        assert main([*cli_args(data, "fp32"), *extra]) == 2
        assert match in capsys.readouterr().err


def _launch(argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "jaxrl_pim.cli", "launch", "--processes", "2",
           "--devices-per-process", "1", "--", *argv]
    proc = subprocess.run(cmd, env=_subprocess_env(), cwd=cwd, capture_output=True, text=True,
                          timeout=TIMEOUT_S)
    assert proc.returncode == 0, f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


@pytest.mark.slow
def test_two_processes_save_and_resume(tmp_path):
    # every process takes part in the saves (orbax writes from process 0); a run resumed
    # from an earlier checkpoint of the folder ends with the same table, bit for bit
    data = cli_dataset(tmp_path / "mdp.txt", seed=1)
    # across processes the mesh takes every device (no --devices)
    argv = [*cli_args(data, "int32", "lcg", episodes=12, one_device=False),
            "--checkpoint", "ckpt", "--checkpoint-every", "2"]
    _launch([*argv, "--save-q", "whole.npy"], tmp_path)
    assert Checkpoints(tmp_path / "ckpt").steps() == [2, 4, 6]
    for step in (4, 6):  # as if the run had been killed after round 2
        shutil.rmtree(tmp_path / "ckpt" / str(step))
    _launch([*argv, "--resume", "--save-q", "resumed.npy", "--json", "r.json"], tmp_path)
    res = json.loads((tmp_path / "r.json").read_text())["results"]
    assert res["processes"] == 2 and res["resumed_from_round"] == 2
    whole = np.load(tmp_path / "whole.npy")
    assert np.abs(whole).max() > 0.01
    np.testing.assert_array_equal(np.load(tmp_path / "resumed.npy"), whole)


# --------------------------------------------------------------------------------------------
# Which settings use the key (the docs' statement)

KEY_SETTINGS = list(itertools.product(("q", "sarsa"), ("seq", "ran", "str"), ("jax", "lcg")))


@pytest.mark.parametrize("algo,sampling,rng", KEY_SETTINGS)
def test_only_ran_and_sarsa_with_jax_keys_depend_on_the_seed(algo, sampling, rng):
    cfg = TabularConfig(S, A, algo=algo, sampling=sampling, rng=rng, num_cores=4,
                        sync_period=2, num_episodes=4)
    chunks = chunk(cfg, random_dataset(4 * 20))
    keys = jax.random.split(jax.random.key(0), 3)
    qs, _ = jax.jit(jax.vmap(make_train(cfg), in_axes=(0, None)))(keys, chunks)
    qs = np.asarray(qs)
    uses_key = rng == "jax" and (sampling == "ran" or algo == "sarsa")
    if uses_key:
        assert not np.array_equal(qs[0], qs[1]) and not np.array_equal(qs[1], qs[2])
    else:
        np.testing.assert_array_equal(qs[0], qs[1])
        np.testing.assert_array_equal(qs[1], qs[2])
