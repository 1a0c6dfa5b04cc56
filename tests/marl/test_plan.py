"""The run plan: replay memory against the real state, counts, the no-update warning."""

from __future__ import annotations

import dataclasses

import jax
import numpy as np
import pytest

from jaxrl_pim.marl import plan
from jaxrl_pim.marl.config import MARLConfig
from jaxrl_pim.marl.trainer import make_init

SMALL = MARLConfig(env="tag", num_agents=4, num_prey=2, num_obstacles=1, buffer_capacity=100,
                   batch_size=8, learning_starts=40, num_envs=3, update_every=5,
                   num_episodes=10)


@pytest.mark.parametrize("sampler", ["uniform", "prioritized", "info_prioritized"])
def test_replay_bytes_equal_the_state_arrays(sampler):
    cfg = dataclasses.replace(SMALL, sampler=sampler)
    shapes = jax.eval_shape(make_init(cfg), jax.random.PRNGKey(0))
    leaves = jax.tree.leaves((shapes.buffers, shapes.sampler))
    want = sum(int(np.prod(x.shape)) * x.dtype.itemsize for x in leaves)
    # The buffers' ring counters (two int32 per team) are not replay memory.
    want -= 2 * 4 * len(shapes.buffers)
    assert plan.replay_bytes(cfg) == want


def test_default_buffers_and_counts():
    """The defaults at 3 agents: 516 bytes per stored step, 1e6 rows; 60,000 episodes of 25
    steps and an update every 100 steps from step 25,600."""
    p = plan.plan_run(MARLConfig())
    assert p.buffer_bytes == 516 * 1_000_000
    assert (p.env_steps, p.transitions) == (1_500_000, 1_500_000)
    assert p.first_update_step == 25_600
    assert p.update_rounds == (1_500_000 - 25_600) // 100 + 1
    resumed = plan.plan_run(MARLConfig(), start_episode=59_000)
    assert resumed.episodes == 1000 and resumed.update_rounds == 250


def test_short_run_warns_that_no_update_will_run():
    short = dataclasses.replace(SMALL, num_episodes=1)
    p = plan.plan_run(short)
    assert p.update_rounds == 3  # after steps 15, 20, 25 (3 envs: 40 rows stored by step 14)
    lines = plan.describe(short, p)
    assert len(lines) == 1 and "3 update rounds" in lines[0] and "KiB" in lines[0]
    tiny = dataclasses.replace(SMALL, num_episodes=1, learning_starts=90)
    lines = plan.describe(tiny, plan.plan_run(tiny))
    assert lines[-1].startswith("warning: no update will run before 90 transitions")
    assert "after env step 30, in episode 2" in lines[-1] and "stores 75" in lines[-1]
    est = {"env_step_s": 1e-3, "update_round_s": 0.02, "estimated_s": 3.5, "compile_s": 1.0}
    lines = plan.describe(short, p, est)
    assert lines[1].startswith("estimated duration: 4 s (an estimate:")


def test_estimate_scales_the_timed_step_and_round_by_the_counts():
    cfg = MARLConfig(num_agents=1, num_envs=2, buffer_capacity=10**6, batch_size=8,
                     learning_starts=16, update_every=5, hidden=(8,), num_episodes=400)
    p = plan.plan_run(cfg)
    est = plan.estimate_seconds(cfg, p, repeats=1)
    assert est["timed_capacity"] == plan.ESTIMATE_ROWS  # not the run's 1e6 rows
    assert est["env_step_s"] > 0 and est["update_round_s"] > 0
    assert est["estimated_s"] == pytest.approx(10_000 * est["env_step_s"]
                                               + p.update_rounds * est["update_round_s"])
    assert p.update_rounds == (10_000 - 10) // 5 + 1  # after steps 10, 15, ..., 10,000
    assert "estimated duration" in plan.describe(cfg, p, est)[1]
