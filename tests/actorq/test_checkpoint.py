"""``jaxrl-pim actorq --checkpoint``: a run killed with SIGKILL mid-way and resumed with
``--resume`` ends in the same state as an uninterrupted run, bit for bit (single program);
the resumed report holds the whole curve; checkpoints of another run are refused.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import jax
import numpy as np
import pytest

from jaxrl_pim.actorq.config import default_config
from jaxrl_pim.actorq.single import checkpoint_fingerprint, make_system
from jaxrl_pim.checkpoint import Checkpoints
from jaxrl_pim.cli import main
from jaxrl_pim.xla_env import CPU_WORKAROUND_FLAGS, with_flags
from tests.support.processes import checkpoint_steps

BASE = ["actorq", "--algo", "dqn", "--env", "CartPole-v1", "--precision", "int8",
        "--mode", "single", "--actors", "2", "--actor-update-period", "10",
        "--steps", "3000", "--hidden", "32", "--seed", "3", "--no-progress"]
ARGS = [*BASE, "--checkpoint-every", "150"]  # every chunk of 75 iterations x 2 actors
# the uninterrupted and the resumed run save at their end only (a save costs more than a
# chunk of training; the chunks, and so the states, do not depend on the period)
AT_END = [*BASE, "--checkpoint-every", "3000"]
CHUNKS = 20  # the command's chunking (experiment.run_one default)


def _config():
    return default_config("dqn", "CartPole-v1", precision="int8", num_actors=2,
                          actor_update_period=10, total_timesteps=3_000, hidden=(32,))


def _final(folder: Path):
    cfg = _config()
    template = jax.eval_shape(make_system(cfg).init, jax.random.PRNGKey(3))
    with Checkpoints(folder / "int8", fingerprint=checkpoint_fingerprint(
            cfg, 3, CHUNKS, "single")) as ck:
        step = ck.latest()
        state, meta = ck.restore(template)
    return step, state, meta


# compile-bound (the command's report of the uninterrupted run, on a loaded 2-core machine:
# 1.5 s of training chunks against 25 s compiling at XLA's default level), so it compiles at
# the suite's low effort, as does the killed process it starts (it inherits the environment):
# every run executes the same chunk program, which is what the bit-for-bit comparison needs
def test_killed_run_resumes_to_the_uninterrupted_state_bit_for_bit(tmp_path):
    whole, broken = tmp_path / "whole", tmp_path / "broken"
    assert main([*AT_END, "--checkpoint", str(whole), "--json", str(tmp_path / "a.json")]) == 0

    env = dict(os.environ, JAX_PLATFORMS="cpu",
               XLA_FLAGS=with_flags(os.environ.get("XLA_FLAGS", ""), *CPU_WORKAROUND_FLAGS))
    proc = subprocess.Popen([sys.executable, "-m", "jaxrl_pim.cli", *ARGS, "--checkpoint",
                             str(broken)], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 300
        # a checkpoint is complete once its file list is written (after orbax's rename)
        while not checkpoint_steps(broken / "int8"):
            assert proc.poll() is None, proc.stderr.read().decode()[-3000:]
            assert time.monotonic() < deadline, "no checkpoint within 300 s"
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    done = sorted(int(p.name) for p in (broken / "int8").iterdir() if p.name.isdigit())
    total_iterations = 3_000 // 2
    assert done and max(done) < total_iterations, done  # killed mid-way

    # resuming without --resume is refused; with it the run continues where it stopped
    assert main([*ARGS, "--checkpoint", str(broken)]) == 2
    assert main([*AT_END, "--checkpoint", str(broken), "--resume",
                 "--json", str(tmp_path / "b.json")]) == 0

    step_a, state_a, meta_a = _final(whole)
    step_b, state_b, meta_b = _final(broken)
    assert step_a == step_b == total_iterations
    la, lb = jax.tree.leaves(state_a), jax.tree.leaves(state_b)
    assert len(la) == len(lb)
    for a, b in zip(la, lb, strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert meta_a["returns"] == meta_b["returns"] and meta_a["steps"] == meta_b["steps"]
    rep_a = json.loads((tmp_path / "a.json").read_text())["results"]["runs"]["int8"]
    rep_b = json.loads((tmp_path / "b.json").read_text())["results"]["runs"]["int8"]
    assert rep_b["resumed_from"] is not None and rep_a["resumed_from"] is None
    assert rep_a["episode_returns"] == rep_b["episode_returns"]
    assert rep_a["final_eval_return"] == rep_b["final_eval_return"]
    assert rep_a["curve"]["env_steps"] == rep_b["curve"]["env_steps"]

    # a checkpoint of another configuration is refused, naming the field
    other = [*ARGS, "--checkpoint", str(broken), "--resume"]
    other[other.index("--hidden") + 1] = "16"
    assert main(other) == 2


@pytest.mark.parametrize("bad,message", [
    (["--resume"], "--checkpoint DIR"),
    (["--checkpoint-every", "100"], "--checkpoint DIR"),
    (["--ray-address", "auto"], "--ray-address needs --mode ray"),
    (["--actor-compute", "int4"], "invalid choice"),
])
def test_bad_options_are_refused_before_any_run(bad, message, capsys):
    try:
        rc = main([*BASE, *bad])
    except SystemExit as exit_:  # argparse's own refusals
        rc = exit_.code
    assert rc == 2
    assert message in capsys.readouterr().err
