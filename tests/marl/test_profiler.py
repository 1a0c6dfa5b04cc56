"""The phase profiler: shares are a normalised, call-weighted split; a slow phase stands out."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl_pim.marl.config import MARLConfig
from jaxrl_pim.marl.profiler import (
    ENV_PHASES,
    PHASES,
    calls_per_update_round,
    phase_shares,
    profile_phases,
)
from jaxrl_pim.marl.trainer import Phases, make_phases

CFG = MARLConfig(
    env="spread", num_agents=1, num_envs=1, buffer_capacity=64, batch_size=8,
    learning_starts=16, update_every=1, hidden=(8,), sampling_mode="fast",
)


def test_shares_weight_each_phase_by_its_calls_and_sum_to_one():
    cfg = dataclasses.replace(CFG, algo="matd3", update_every=100, policy_delay=4)
    calls = calls_per_update_round(cfg)
    assert [calls[p] for p in ENV_PHASES] == [100.0] * 3
    assert (calls["sampling"], calls["p_loss"], calls["target_update"]) == (1.0, 0.25, 0.25)
    assert calls_per_update_round(dataclasses.replace(cfg, algo="maddpg"))["p_loss"] == 1.0
    seconds = {p: 1e-3 * (i + 1) for i, p in enumerate(PHASES)}
    share = phase_shares(seconds, calls)
    weighted = np.array([seconds[p] * calls[p] for p in PHASES])
    np.testing.assert_allclose([share[p] for p in PHASES], weighted / weighted.sum(),
                               rtol=1e-12)
    assert sum(share.values()) == pytest.approx(1.0, abs=1e-12)


def _heavy(n: int = 256, rounds: int = 40) -> jax.Array:
    """A scalar that costs ``rounds`` dense ``n x n`` matrix products (tens of ms on a CPU)."""
    m = jnp.eye(n) + 1e-3

    def body(_, x):
        return jnp.tanh(x @ m)

    return jax.lax.fori_loop(0, rounds, body, m).sum()


def test_a_planted_slow_phase_shows_up_as_the_largest():
    rollout, learner = make_phases(CFG)

    def slow_target_update(team_params):
        out = learner.target_update(team_params)
        bump = 1e-30 * _heavy()  # keeps the work in the program
        return jax.tree.map(lambda x: x + bump, out)

    planted = Phases(rollout, learner._replace(target_update=slow_target_update))
    prof = profile_phases(CFG, jax.random.PRNGKey(0), repeats=1, phases=planted, fused=False)
    assert set(prof["seconds"]) == set(PHASES)
    assert all(s > 0 for s in prof["seconds"].values())
    share = prof["share"]
    assert sum(share.values()) == pytest.approx(1.0, abs=1e-9)
    assert max(share, key=share.get) == "target_update", share
    assert share["target_update"] > 0.5, share
    assert prof["update_round_fused"] is None  # not asked for


def test_filled_state_in_every_layout():
    """The profiler's full buffers: the packed rows hold the interleaved layout's random fields
    side by side, the per-agent buffers the same shapes transposed; actions lie on the
    simplex, ``done`` is 0."""
    from jaxrl_pim import replay
    from jaxrl_pim.marl.profiler import filled_state

    cfg = dataclasses.replace(CFG, num_agents=2)
    states = {layout: filled_state(dataclasses.replace(cfg, layout=layout),
                                   jax.random.PRNGKey(3)).buffers[0]
              for layout in ("per_agent", "interleaved", "packed")}
    il = states["interleaved"]
    assert int(il.size) == cfg.buffer_capacity and int(il.insert_pos) == 0
    obs_dim, action_dim = il.data.obs.shape[-1], il.data.action.shape[-1]
    packed = replay.unpack_rows(states["packed"].data, 2, obs_dim, action_dim)
    for f, a, b, c in zip(replay.Transition._fields, il.data, states["per_agent"].data, packed,
                          strict=True):
        assert a.shape[:2] == (cfg.buffer_capacity, 2), f
        assert np.swapaxes(np.asarray(b), 0, 1).shape == a.shape, f
        np.testing.assert_array_equal(np.asarray(a), np.asarray(c), err_msg=f)
    np.testing.assert_allclose(np.asarray(il.data.action).sum(-1), 1.0, rtol=1e-5)
    assert not np.asarray(il.data.done).any() and np.asarray(il.data.obs).std() > 0.5
