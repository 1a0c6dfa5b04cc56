"""ActorQ on Ray: actors killed mid-run are restarted and the run completes, with every
transition accounted for (requested = received + lost + unused, lost at most the batches in
flight on the failed actors).

One local Ray instance (``ray.init(num_cpus=2)``, no dashboard, no prestarted idle workers,
started under a 120 s alarm) for the module, shut down at the end; every run is bounded by
the learner's timeouts (actors' start, each batch) and the test's own deadline.
"""

from __future__ import annotations

import os
import shutil
import signal
import time

import jax
import numpy as np
import pytest

from jaxrl_pim.actorq.config import default_config
from jaxrl_pim.actorq.distributed import DistributedRun, run_distributed
from jaxrl_pim.actorq.ray_pool import RayPool
from jaxrl_pim.actorq.single import checkpoint_fingerprint
from jaxrl_pim.checkpoint import Checkpoints

ray = pytest.importorskip("ray")
# ray.init starts its services with subprocess (fork + exec), which Python warns about once
# JAX's threads exist; the exec makes it safe
# one local Ray at a time: every test that starts Ray runs on the same xdist worker
pytestmark = [pytest.mark.filterwarnings("ignore:os.fork:RuntimeWarning"),
              pytest.mark.xdist_group("ray")]


def _give_up(signum, frame):
    raise TimeoutError("ray.init did not return within 120 s")


@pytest.fixture(scope="module")
def local_ray():
    previous = signal.signal(signal.SIGALRM, _give_up)
    signal.alarm(120)
    try:
        # no prestarted workers: by default the first driver's registration waits until
        # num_cpus idle workers have started (ray-project/ray#40131), and the actors, whose
        # runtime_env sets environment variables, could not use them anyway
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
                 _system_config={"prestart_worker_first_driver": False})
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    try:
        yield
    finally:
        ray.shutdown()


def test_killed_actors_restart_and_the_run_completes(local_ray, tmp_path):
    period, in_flight = 25, 2
    cfg = default_config("dqn", "CartPole-v1", precision="int8", num_actors=2,
                         actor_update_period=period, total_timesteps=3_000, learning_starts=200,
                         batch_size=16, buffer_capacity=4_000, hidden=(16,))
    batch = period * cfg.envs_per_actor
    pool = RayPool(max_restarts=2, in_flight=in_flight, restart_timeout_s=120.0)
    deadline = time.monotonic() + 300
    events: list[int] = []

    def chaos(pool, progress):
        assert time.monotonic() < deadline, "the run took too long"
        if not events and progress["env_steps"] >= 500:
            # both at once, so no actor is left for a while: actor 0 through Ray (a crash Ray
            # may recover from), actor 1 by SIGKILL of its process
            ray.kill(pool.actors[0], no_restart=False)
            os.kill(pool.pids[1], signal.SIGKILL)
            events.append(progress["env_steps"])
        if len(events) == 1 and pool.counters["actor_failures"] == 2:
            # The run ends at total_timesteps whichever actors delivered them, so the first actor
            # back could finish it alone while the other one still compiles. Hold the learner
            # until both are back with their queued batches finished: the pool takes ready
            # batches oldest first, so each delivers within the next 2 * in_flight batches,
            # and more than that are still owed.
            assert cfg.total_timesteps - progress["env_steps"] >= 2 * in_flight * batch
            pool.wait_recovered(timeout_s=max(deadline - time.monotonic(), 1.0))
            events.append(progress["env_steps"])

    fingerprint = checkpoint_fingerprint(cfg, 0, 0, "ray")
    with Checkpoints(tmp_path / "ck", fingerprint=fingerprint, keep=2) as ck:
        outcome = run_distributed(cfg, DistributedRun(0, final_eval=False,
                                                      checkpoint_every=1_000),
                                  pool=pool, on_batch=chaos, checkpoints=ck)
    out = outcome.as_dict()

    assert len(events) == 2 and events[0] < cfg.total_timesteps
    assert out["transport"] == "ray"
    assert out["env_steps"] >= cfg.total_timesteps
    assert out["replay_size"] == min(out["env_steps"], cfg.buffer_capacity)
    assert out["learner_updates"] > 0 and out["broadcasts"] > 1
    # each failed actor was restarted and delivered again
    assert out["actor_failures"] == 2 and out["actors_dropped"] == 0
    assert {a: r["incarnations"] for a, r in out["actors"].items()} == {0: 2, 1: 2}
    # bookkeeping: nothing unaccounted for; only the batches in flight were lost
    assert out["transitions_requested"] == (out["transitions_received"]
                                            + out["transitions_lost"]
                                            + out["transitions_unused"])
    assert out["transitions_received"] == out["env_steps"]
    assert 0 < out["transitions_lost"] <= 2 * in_flight * batch
    assert out["transitions_lost"] == out["batches_lost"] * batch
    # the learner kept training the same network through the failures
    learner = outcome.state.learner  # the learner's final state
    assert all(np.all(np.isfinite(np.asarray(x))) for x in jax.tree.leaves(learner))

    # the learner stopped after its last checkpoint but one: resume from that one with fresh
    # actors; the learner's updates and counters continue, the run completes
    with Checkpoints(tmp_path / "ck", fingerprint=fingerprint, keep=2) as ck:
        steps = ck.steps()
        assert steps[-1] == out["env_steps"] and len(steps) == 2
        shutil.rmtree(tmp_path / "ck" / str(steps[-1]))
        again = run_distributed(cfg, DistributedRun(0, transport="ray", final_eval=False,
                                                    resume=True), checkpoints=ck).as_dict()
    assert again["resumed_from"] == steps[0] < cfg.total_timesteps
    assert again["env_steps"] >= cfg.total_timesteps
    assert again["learner_updates"] > 0 and again["replay_size"] == min(
        again["env_steps"], cfg.buffer_capacity)
    assert again["transitions_received"] == again["env_steps"] - steps[0]
