"""One memory plan per MARL run: decided once (``--capacity auto`` from a fixed share of the
total memory, never refusing its own choice), recorded in the checkpoints, reused and checked
by ``--resume`` and ``marl evaluate`` before they read anything, and held to by their measured
peak memory (``evaluate`` reads the actors only, never the replay buffers)."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl_pim.checkpoint import Checkpoints
from jaxrl_pim.cli import build_parser
from jaxrl_pim.cli import marl as command
from jaxrl_pim.marl import checkpoint as mc
from jaxrl_pim.marl import plan
from tests.support import ROOT

#: A tiny spread run whose replay buffers are all of its state (2 agents, 1 env).
RUN = ["marl", "--agents", "2", "--num-envs", "1", "--batch-size", "8", "--learning-starts",
       "16", "--layout", "interleaved", "--no-progress", "--no-estimate", "--episodes", "1"]


def _args(*extra: str):
    return build_parser().parse_args([*RUN, *extra])


def _fit(monkeypatch, total: int, free, *extra: str):
    """``fit_memory`` of ``RUN + extra`` with the total memory ``total`` and ``free()`` the
    memory free at each call (the weather)."""
    monkeypatch.delenv(plan.MEMORY_LIMIT_ENV, raising=False)
    monkeypatch.setattr(plan, "total_memory", lambda device=None: (total, "host test total"))
    monkeypatch.setattr(plan, "available_memory", lambda device=None: (free(), "host test free"))
    args = _args(*extra)
    return command.fit_memory(args, command.config_from_args(args))


def _zero_state(config, step: int):
    """Checkpoint ``step``'s tree of zeros in ``config``'s shapes (keys from zero key data)."""
    def leaf(x):
        if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):
            return jax.random.wrap_key_data(
                jnp.zeros(jax.eval_shape(jax.random.key_data, x).shape, jnp.uint32),
                impl=x.dtype._impl)
        return jnp.zeros(x.shape, x.dtype)

    tree = jax.tree.map(leaf, mc.template(config, step))
    tree["state"] = tree["state"]._replace(episode=jnp.asarray(step, jnp.int32))
    return tree


def _save_run(folder, config, memory, step: int = 1) -> None:
    with Checkpoints(folder, fingerprint=mc.fingerprint(config, seed=0)) as ckpt:
        ckpt.save(step, _zero_state(config, step),
                  meta={"episodes_done": step, "num_episodes": step, "memory": memory})


def test_a_partial_restore_reads_the_subtree_it_is_given(tmp_path):
    """``Checkpoints.restore(partial=True)``: the template's leaves only (NamedTuple fields left
    out as None, list entries by position), their values as saved; a leaf the checkpoint does
    not hold is refused."""
    from jaxrl_pim.marl.rollout import TrainState

    config = command.config_from_args(_args("--capacity", "64"))
    tree = _zero_state(config, 1)
    actor = jax.tree.map(lambda x: x + 1.5, tree["state"].teams[0].actor)
    tree["state"] = tree["state"]._replace(
        teams=(tree["state"].teams[0]._replace(actor=actor),))
    with Checkpoints(tmp_path / "run") as ckpt:
        ckpt.save(1, tree)
        abstract = jax.eval_shape(lambda: tree)
        want = {"state": TrainState(**{f: None for f in TrainState._fields})._replace(
            teams=[{"actor": abstract["state"].teams[0].actor}],
            episode=abstract["state"].episode)}
        got, _ = ckpt.restore(want, partial=True)
        assert got["state"].buffers is None and int(got["state"].episode) == 1
        assert jax.tree.all(jax.tree.map(lambda a, b: bool((a == b).all()),
                                         got["state"].teams[0]["actor"], actor))
        with pytest.raises(ValueError, match="does not match this run's state"):
            ckpt.restore({"state": {"extra": abstract["state"].episode}}, partial=True)


def test_capacity_auto_never_refuses_its_own_choice(monkeypatch):
    """The choice and the check use one figure (a share of the total memory): free memory that
    shrinks between the calls changes nothing, and the next row would not fit."""
    free = iter(range(10**10, 0, -10**8))
    for total in (3 << 20, 50 << 20):
        for extra in ((), ("--checkpoint", "unused")):
            config, memory = _fit(monkeypatch, total, lambda: next(free), "--capacity", "auto",
                                  *extra)
            resumable = bool(extra)
            assert memory["fits"] and memory["source"] == "host test total"
            assert memory["phase"] == ("resume" if resumable else "train")
            rows = config.buffer_capacity
            bigger = dataclasses.replace(config, buffer_capacity=rows + 1)
            assert not plan.memory_plan(bigger, available=(total, "t"),
                                        resumable=resumable).fits
            assert memory["needed_bytes"] <= memory["usable_bytes"]


def test_resume_reads_the_recorded_auto_capacity_and_checks_it_first(monkeypatch, tmp_path):
    """A resumed ``auto`` run takes the capacity (and layout) its checkpoints record, whatever
    the memory is now; a machine whose memory does not hold the recorded plan refuses the
    resume in one line before any array is read."""
    folder = tmp_path / "run"
    config, memory = _fit(monkeypatch, 6 << 20, lambda: 10**10, "--capacity", "auto",
                          "--checkpoint", str(folder))
    _save_run(folder, config, memory)
    for total in (8 << 20, 12 << 20):  # the memory moved: a fresh choice would differ
        assert plan.auto_capacity(config, available=(total, "t"), cap=10**6,
                                  resumable=True) != config.buffer_capacity
        resumed, again = _fit(monkeypatch, total, lambda: 10**10, "--capacity", "auto",
                              "--checkpoint", str(folder), "--resume")
        assert resumed == config and again["recorded"]
        assert "as the run chose when it started" in plan.auto_line(again)
    with pytest.raises(ValueError) as err:
        _fit(monkeypatch, memory["resume_bytes"], lambda: 10**10, "--capacity", "auto",
             "--checkpoint", str(folder), "--resume")
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith("--resume: resuming")
    assert "free memory or resume on a machine with more" in msg


#: Runs ``marl evaluate`` then ``--resume`` (training nothing) of the folder argv[1] in this
#: process; prints each one's peak resident memory above the resident memory before it
#: (VmHWM, reset through /proc/self/clear_refs) as JSON.
_PEAKS = r"""
import json, sys
from jaxrl_pim.cli import main

def status(field):
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) * 1024 for l in f if l.startswith(field + ":"))

def peak(argv):
    before = status("VmRSS")
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    assert main(argv) == 0
    return status("VmHWM") - before

folder, run = sys.argv[1], json.loads(sys.argv[2])
import jax, orbax.checkpoint  # the runtime first: what is measured is the commands' own
import jaxrl_pim.marl.checkpoint, jaxrl_pim.marl.policies
jax.numpy.zeros(1).block_until_ready()
out = {"evaluate": peak(["marl", "evaluate", "--checkpoint", folder, "--episodes", "1"]),
       "resume": peak([*run, "--capacity", "auto", "--checkpoint", folder, "--resume"])}
print(json.dumps(out))
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/clear_refs"), reason="needs Linux's VmHWM")
def test_evaluate_and_resume_of_an_auto_run_stay_within_its_plan(tmp_path):
    """Under a memory limit, an ``auto``-sized run whose replay buffers are its state: its
    ``marl evaluate`` peaks far below the buffers (it reads the actors only) and its
    ``--resume`` within the recorded plan's resume peak."""
    limit = 520 << 20
    env = {**os.environ, plan.MEMORY_LIMIT_ENV: str(limit)}
    args = _args("--capacity", "auto", "--checkpoint", str(tmp_path / "run"))
    os.environ[plan.MEMORY_LIMIT_ENV] = str(limit)
    try:
        config, memory = command.fit_memory(args, command.config_from_args(args))
    finally:
        del os.environ[plan.MEMORY_LIMIT_ENV]
    assert memory["replay_bytes"] > 0.95 * memory["seed_bytes"] > 200 << 20
    _save_run(tmp_path / "run", config, memory)
    proc = subprocess.run([sys.executable, "-c", _PEAKS, str(tmp_path / "run"), json.dumps(RUN)],
                          capture_output=True, text=True, timeout=300, env=env, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    peaks = json.loads(proc.stdout.strip().splitlines()[-1])
    # reading the 200+ MB of buffers would take their bytes at least; the actors are KBs
    assert peaks["evaluate"] < memory["replay_bytes"] / 4, (peaks, memory)
    assert memory["evaluate_bytes"] < 1 << 20
    # the resume's read within its plan, beyond what a command that reads no state takes
    assert peaks["resume"] <= memory["resume_bytes"] + peaks["evaluate"], (peaks, memory)
    assert np.isclose(memory["resume_bytes"], plan.PEAK_STATES["resume"] * memory["seed_bytes"],
                      rtol=1e-6)
