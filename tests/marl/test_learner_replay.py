"""Replay layouts and the information-prioritised sampler driven through the learner.

The layout must not change the maths: a run with the ``interleaved`` or the ``packed`` buffers
equals the same run with the ``per_agent`` buffers from the same key, leaf for leaf (fast
shared-index sampling, information-prioritised sampler, whose draws depend on the ring
position). The trained state is then checked: in-range indices and weights, the learner's batch
equal to a NumPy gather, and priority trees consistent after the learner's TD-error updates.
(The prioritised sampler runs in ``test_trainer.py``'s faithful-mode run, the neighbour sampler
in its MASAC run there; the samplers' distributions are tested in
``test_replay.py``.)
"""

from __future__ import annotations

import dataclasses

import jax
import numpy as np
import pytest

from jaxrl_pim import replay
from jaxrl_pim.marl.config import MARLConfig
from tests.support.marl import train_and_draw

# The two layouts' programs differ (the per-agent buffers' time-major gather transposes): with
# XLA:CPU's legacy fusion emitters a loss can differ in its last bit, with the default ones
# the runs agree bit for bit. Both tests share the runs, so both run in the default-emitters
# process.
pytestmark = pytest.mark.default_emitters

# 3 episodes x 10 steps x 4 envs = 120 transitions into 96 rows: the ring wraps.
CFG = MARLConfig(
    env="spread", num_agents=3, num_envs=4, num_episodes=3, episode_length=10,
    buffer_capacity=96, batch_size=16, learning_starts=32, update_every=2, hidden=(16, 16),
    sampling_mode="fast", sampler="info_prioritized",
)


@pytest.fixture(scope="module")
def runs():
    return {layout: train_and_draw(dataclasses.replace(CFG, layout=layout))
            for layout in ("per_agent", "interleaved", "packed")}


@pytest.mark.parametrize("layout", ["interleaved", "packed"])
def test_layout_trains_exactly_like_per_agent(runs, layout):
    pa, il = runs["per_agent"], runs[layout]
    state, metrics = pa[0], pa[1]
    # Updates after steps 8, 10, ..., 30 (4 rows per step, 32 needed): 12 rounds.
    assert int(state.num_updates) == 12
    for name in ("episode_return", "critic_loss", "actor_loss"):
        np.testing.assert_array_equal(il[1][name], metrics[name], err_msg=name)
    for a, b in zip(jax.tree.leaves(il[0].teams), jax.tree.leaves(state.teams), strict=True):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(jax.tree.leaves(il[0].sampler), jax.tree.leaves(state.sampler), strict=True):
        np.testing.assert_array_equal(a, b)
    # Same contents, transposed storage: per_agent [N, capacity, ...], interleaved [capacity, N],
    # packed [capacity, R] (the interleaved fields flattened side by side).
    stored = il[0].buffers[0].data
    if layout == "packed":
        ref = state.buffers[0].data  # per_agent: obs [N, capacity, O], action [N, capacity, A]
        stored = replay.unpack_rows(stored, 3, ref.obs.shape[-1], ref.action.shape[-1])
    for a, b in zip(stored, state.buffers[0].data, strict=True):
        np.testing.assert_array_equal(np.swapaxes(a, 0, 1), b)
    assert int(il[0].buffers[0].insert_pos) == int(state.buffers[0].insert_pos) == 120 % 96
    # The same indices, weights and batch drawn from the final states.
    for a, b in zip(il[2:], pa[2:], strict=True):
        for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
            np.testing.assert_array_equal(x, y)


def test_info_prioritized_run_keeps_consistent_priorities(runs):
    """Finite losses, in-range indices and weights, the batch at those rows, and priority
    trees that agree with each other after the learner's TD-error updates."""
    state, metrics, idx, w, batch = runs["interleaved"]
    assert np.isfinite(metrics["critic_loss"][1:]).all()
    assert np.isfinite(metrics["actor_loss"][1:]).all()
    assert np.isfinite(metrics["episode_return"]).all()
    size = int(state.buffers[0].size)
    assert size == 96 and idx.shape == w.shape == (16,)
    assert ((idx >= 0) & (idx < size)).all()
    assert (w > 0).all() and w.max() == 1.0
    # The batch is the interleaved rows at idx, all agents: data [capacity, N, ...], the
    # batch time-major [B, N, ...].
    data = state.buffers[0].data
    for name in ("obs", "action", "reward", "next_obs"):
        want = np.asarray(getattr(data, name))[idx]
        np.testing.assert_array_equal(getattr(batch[0], name), want, err_msg=name)
    # Priority trees (leaves at [P, P + capacity), P = 128): the sum tree holds p^alpha, the
    # max tree the raw p of the same rows; every stored row has p > 0, padding 0; roots are
    # the sum and the maximum; the TD-error updates made the priorities differ.
    ss = state.sampler
    p_leaves = np.asarray(ss.max_tree)[128:]
    s_leaves = np.asarray(ss.sum_tree)[128:]
    assert (p_leaves[:96] > 0).all() and not p_leaves[96:].any() and not s_leaves[96:].any()
    np.testing.assert_allclose(s_leaves[:96], p_leaves[:96] ** CFG.priority_alpha, rtol=1e-5)
    np.testing.assert_allclose(float(ss.sum_tree[1]), s_leaves.sum(), rtol=1e-5)
    assert float(ss.max_tree[1]) == p_leaves.max() <= float(ss.max_priority)
    assert len(np.unique(p_leaves[:96])) > 10
