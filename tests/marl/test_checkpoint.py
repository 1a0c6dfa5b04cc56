"""Long MARL runs survive being killed: ``jaxrl-pim marl --checkpoint DIR`` killed with SIGKILL
after its first checkpoint, then ``--resume``d, ends with the state of an uninterrupted run bit
for bit; the report of the resumed run covers the whole run. Also: what a checkpoint must match
(config without ``num_episodes``, seed), refusals before any compute.

One world for all runs (cooperative navigation, 2 agents, fast sampling; the two-team report is
checked in ``test_command.py``): the killed run is a subprocess; the uninterrupted run (one
program for the whole run) and the resumed run (segments) go through the command in this
process.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import jax
import numpy as np
import pytest

from jaxrl_pim.checkpoint import Checkpoints
from jaxrl_pim.cli import main
from jaxrl_pim.marl import checkpoint
from jaxrl_pim.marl.config import MARLConfig
from tests.support import subprocess_env
from tests.support.processes import kill_after_first_checkpoint

TIMEOUT_S = 300  # bound on the subprocess
EPISODES, EVERY = 24, 3  # 8 segments of 3 episodes: the killed run has more to do
TINY = ["marl", "--env", "spread", "--agents", "2", "--num-envs", "2", "--batch-size", "8",
        "--capacity", "64", "--learning-starts", "16", "--update-every", "5", "--seed", "1",
        "--sampling-mode", "fast", "--no-progress"]
CONFIG = MARLConfig(env="spread", num_agents=2, num_envs=2, num_episodes=EPISODES,
                    buffer_capacity=64, batch_size=8, learning_starts=16, update_every=5,
                    sampling_mode="fast")
TAG = MARLConfig(env="tag", num_agents=3, num_envs=2, num_episodes=EPISODES, batch_size=8,
                 buffer_capacity=64, learning_starts=16, sampling_mode="fast")


def _subprocess_env() -> dict[str, str]:
    return subprocess_env()


def _kill_after_first_checkpoint(argv: list[str], folder: Path, log: Path) -> None:
    """Run ``jaxrl-pim`` with ``argv`` and SIGKILL it once a checkpoint is on disk."""
    kill_after_first_checkpoint(argv, folder, log, _subprocess_env(), TIMEOUT_S)


def _final(folder: Path) -> dict:
    """The final checkpoint, read with the fingerprint the library gives this config."""
    with Checkpoints(folder, fingerprint=checkpoint.fingerprint(CONFIG, seed=1)) as ck:
        assert ck.latest() == EPISODES
        state, meta = ck.restore(checkpoint.template(CONFIG, EPISODES))
    memory = meta.pop("memory")  # the command's memory plan, recorded in every checkpoint
    assert memory["buffer_capacity"] == CONFIG.buffer_capacity and memory["phase"] == "resume"
    assert meta == {"episodes_done": EPISODES, "num_episodes": EPISODES}
    return jax.device_get(state)


@pytest.mark.slow
@pytest.mark.default_emitters  # resumed == uninterrupted, bit for bit
def test_sigkill_then_resume_gives_the_uninterrupted_state(tmp_path, capsys):
    argv = [*TINY, "--episodes", str(EPISODES)]
    folder = tmp_path / "killed"
    _kill_after_first_checkpoint(
        [*argv, "--checkpoint", str(folder), "--checkpoint-every", str(EVERY)], folder,
        tmp_path / "killed.log")
    steps = Checkpoints(folder).steps()  # complete checkpoints only
    assert steps and steps[-1] < EPISODES and len(steps) <= 3, steps

    # Refused before any compute: no --resume on a folder with checkpoints, another
    # configuration, another seed; the folder is left as it was.
    for bad, match in [(argv, "already holds checkpoints"),
                       ([*argv, "--batch-size", "4", "--resume"],
                        "--batch-size: saved 8, this run 4"),
                       ([*argv, "--seed", "2", "--resume"], "seed: saved 1, this run 2")]:
        assert main([*bad, "--checkpoint", str(folder)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and match in err[0], err
    assert Checkpoints(folder).steps() == steps

    # The uninterrupted run: one program for the whole run, saved once at its end.
    whole = tmp_path / "whole"
    assert main([*argv, "--checkpoint", str(whole), "--checkpoint-every", str(EPISODES),
                 "--json", str(tmp_path / "whole.json")]) == 0
    out = capsys.readouterr()
    assert "marl maddpg spread agents=2: episodes 0->24" in out.out
    # 24 episodes x 25 steps; rounds after steps 10, 15, ..., 600 (16 rows stored by step 8).
    assert "1,200 transitions, 119 update rounds" in out.out
    assert f"checkpoints: every {EPISODES} episodes" in out.out
    assert out.err == ""  # stdout is not a terminal: no progress bar, and no warning

    # The resumed run.
    assert main([*argv, "--checkpoint", str(folder), "--checkpoint-every", str(EVERY),
                 "--resume", "--json", str(tmp_path / "resumed.json")]) == 0
    assert f"resuming after episode {steps[-1]}" in capsys.readouterr().out
    assert Checkpoints(folder).steps() == [EPISODES - 2 * EVERY, EPISODES - EVERY, EPISODES]

    ref, resumed = _final(whole), _final(folder)
    assert int(ref["state"].num_updates) == 119
    for a, b in zip(jax.tree.leaves(resumed), jax.tree.leaves(ref), strict=True):
        np.testing.assert_array_equal(a, b)  # bit for bit, NaNs included
    assert np.abs(np.asarray(ref["state"].buffers[0].data.obs)).max() > 0.1

    rep = json.loads((tmp_path / "resumed.json").read_text())
    ref_rep = json.loads((tmp_path / "whole.json").read_text())
    assert set(rep) >= {"system", "config", "results", "timing_s"}
    assert rep["config"]["env"] == "spread" and rep["config"]["num_agents"] == 2
    res, want = rep["results"], ref_rep["results"]
    assert res["teams"] == ["agents"]
    assert res["start_episode"] == res["resumed_from_episode"] == steps[-1]
    assert res["episodes_trained"] == EPISODES - steps[-1]
    assert res["checkpoints_written"] == (EPISODES - steps[-1]) // EVERY
    assert want["checkpoints_written"] == 1 and want["resumed_from_episode"] is None
    assert res["update_rounds"] == want["update_rounds"] == want["plan"]["update_rounds"] == 119
    s = steps[-1] * 25
    assert res["plan"]["update_rounds"] == CONFIG.update_rounds(EPISODES * 25 - s, s)
    for k in ("final_return", "episode_return_every_1pct", "last_critic_loss",
              "last_actor_loss", "episodes_total"):
        assert res[k] == want[k], k  # the whole run's curve, also before the resume
    assert np.isfinite(list(res["final_return"].values())).all()
    assert {"init", "compile", "train", "checkpoint"} <= set(rep["timing_s"])
    assert res["duration_estimate"] is None  # a short run: no estimate unless asked

    # A finished run extended: more episodes on resume; nothing left to do at the same total.
    assert main([*argv, "--checkpoint", str(whole), "--resume",
                 "--json", str(tmp_path / "again.json")]) == 0
    again = json.loads((tmp_path / "again.json").read_text())["results"]
    assert again["episodes_trained"] == 0 and again["final_return"] == want["final_return"]
    assert main([*argv[:-1], str(EPISODES - 1), "--checkpoint", str(whole), "--resume"]) == 2
    assert "below the checkpoint's episode count (24)" in capsys.readouterr().err


def test_checkpoint_options_are_checked(tmp_path, capsys):
    for extra, match in [(["--resume"], "--resume needs --checkpoint"),
                         (["--checkpoint-every", "2"], "--checkpoint-every needs --checkpoint"),
                         (["--checkpoint", str(tmp_path), "--checkpoint-every", "0"],
                          "--checkpoint-every must be >= 1")]:
        assert main([*TINY, "--episodes", "2", *extra]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and match in err[0], err


def test_fingerprint_and_default_period():
    fp = checkpoint.fingerprint(TAG, seed=1)
    assert "num_episodes" not in fp["config"] and fp["seed"] == 1
    # a preset and the same sizes in full are one run; more episodes are the same run
    full = dataclasses.replace(TAG, num_prey=1, num_obstacles=2, num_episodes=10**5)
    assert checkpoint.fingerprint(full, seed=1) == fp
    assert checkpoint.fingerprint(dataclasses.replace(TAG, num_prey=2), seed=1) != fp
    assert checkpoint.fingerprint(TAG, seed=2) != fp
    assert checkpoint.fingerprint(CONFIG, jax.random.PRNGKey(5))["key"] == [0, 5]
    assert checkpoint.fingerprint(CONFIG, jax.random.key(5))["key"] == [0, 5]


def test_host_progress_reports_between_cached_pieces_and_saves_at_the_period(tmp_path):
    """The command's progress bar is drawn from the host between pieces (no callback inside a
    program, so jax's persistent cache keeps them): pieces of progress_every episodes, one
    report each with the run's total, checkpoints only at multiples of the period."""
    from jaxrl_pim.marl import trainer

    config = dataclasses.replace(CONFIG, num_episodes=12)
    assert checkpoint.progress_every(config, 0) == 1  # 50 steps an episode, a round every 5
    slow = dataclasses.replace(config, num_episodes=5_000, update_every=100)
    assert checkpoint.progress_every(slow, 0) == 100  # 5,000 / 50, a multiple of 2 episodes
    assert checkpoint.progress_every(slow, 0, every=500) == 100  # divides the period
    assert checkpoint.progress_every(slow, 0, every=301) == 301  # no even divisor: at saves
    state, curve = checkpoint.starting_state(config, jax.random.PRNGKey(1))
    seen: list[tuple[int, int, list[str]]] = []
    trainer._PROGRAMS.clear()
    with Checkpoints(tmp_path / "ck", keep=3,
                     fingerprint=checkpoint.fingerprint(config, seed=1)) as ck:
        run = checkpoint.train_segments(config, state, curve, ck, every=6,
                                        progress=lambda e, t, m: seen.append((e, t, sorted(m))))
        assert ck.steps() == [6, 12]  # the reports between them saved nothing
    assert seen == [(e, 12, ["return"]) for e in range(1, 13)]
    assert run.curve.shape[0] == 12
    # every piece's program was kept by static plan, which only callback-free programs are
    assert 1 <= len(trainer._PROGRAMS) <= 3
