"""The ``compact`` layout (every observation stored once) against ``interleaved``: the same adds
give bit-identical batches for every sampler's indices in both sampling modes, with several
envs per add, episode ends, ring wrap-around, -0.0 and NaN observations; its bytes; the
trainer on it."""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl_pim import replay
from jaxrl_pim.marl import MARLConfig, make_init, make_train, plan

N, O, A = 2, 3, 2  # noqa: E741 (agents, observation and action lengths)


def _same_bits(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and np.array_equal(a.view(np.int32), b.view(np.int32))


def _samplers(capacity: int) -> dict:
    return {"uniform": replay.uniform(), "neighbor": replay.neighbor(2, 3),
            "prioritized": replay.prioritized(capacity, 0.6, 0.4),
            "info_prioritized": replay.info_prioritized(capacity, 0.6, 0.4)}


@pytest.mark.parametrize(("envs", "capacity", "episode"), [(1, 7, 3), (3, 10, 4), (2, 6, 2)])
def test_batches_equal_the_interleaved_layout(envs, capacity, episode):
    rng = np.random.default_rng(envs * 100 + capacity)
    inter = replay.make_buffer("interleaved", capacity, N, O, A)
    comp = replay.make_buffer("compact", capacity, N, O, A, stride=envs,
                              episode_length=episode)
    add_i, add_c = jax.jit(inter.add), jax.jit(comp.add)
    gather_i = jax.jit(inter.gather, static_argnums=2)
    gather_c = jax.jit(comp.gather, static_argnums=2)
    samplers = {name: (smp.init(), jax.jit(smp.update_priorities),
                       jax.jit(jax.vmap(smp.sample, in_axes=(None, 0, None, None, None)),
                               static_argnums=4))
                for name, smp in _samplers(capacity).items()}
    s_i, s_c = inter.init(), comp.init()
    obs = rng.normal(size=(envs, N, O)).astype(np.float32)
    for t in range(5 * capacity // envs + 3):  # several times around the ring
        nxt = rng.normal(size=(envs, N, O)).astype(np.float32)
        if t == 2:
            nxt[0, 0, 0], nxt[-1, 1, 2] = -0.0, np.nan
        tr = replay.Transition(obs, rng.normal(size=(envs, N, A)).astype(np.float32),
                               rng.normal(size=(envs, N)).astype(np.float32), nxt,
                               (rng.random((envs, N)) < 0.1).astype(np.float32))
        if envs == 1:
            tr = jax.tree.map(lambda x: x[0], tr)
        s_i, s_c = add_i(s_i, tr), add_c(s_c, tr)
        # within an episode the next step starts where this one ended; at its end, a reset
        obs = nxt.copy() if (t + 1) % episode else rng.normal(size=(envs, N, O)).astype(
            np.float32)
        if t == 2:
            obs[0, 0, 0] = 0.0  # +0.0 after a -0.0: not the same bits, so a final obs
        size, pos = s_i.size, s_i.insert_pos
        key = jax.random.PRNGKey(t)
        for name, (ss, update_priorities, sample) in samplers.items():
            if name not in ("uniform", "neighbor"):  # priorities on the stored rows only
                prio = np.where(np.arange(capacity) < int(size), rng.random(capacity) + 0.1, 0)
                ss = update_priorities(ss, jnp.arange(capacity, dtype=jnp.int32),
                                       jnp.asarray(prio, jnp.float32))
            # fast mode: one index set [B]; faithful: one per drawing agent [N, B]
            drawn = sample(ss, jax.random.split(key, N + 1), size, pos, 6)[0]
            fast, faithful = drawn[0], drawn[1:]
            for idx in (fast, faithful):
                for time_major in (False, True):
                    got, want = gather_c(s_c, idx, time_major), gather_i(s_i, idx, time_major)
                    for f, a, b in zip(replay.Transition._fields, want, got, strict=True):
                        assert _same_bits(a, b), (t, name, idx.ndim, time_major, f)
    all_rows = jnp.arange(int(s_i.size))
    assert all(_same_bits(a, b) for a, b in zip(gather_i(s_i, all_rows, True),
                                                  gather_c(s_c, all_rows, True), strict=True))


def test_add_checks_the_stride_and_episode_ends_fit_the_final_ring():
    comp = replay.make_buffer("compact", 10, N, O, A, stride=2, episode_length=5)
    one = replay.Transition(*(jnp.zeros(s) for s in ((N, O), (N, A), (N,), (N, O), (N,))))
    with pytest.raises(ValueError, match="takes 2 steps per add"):
        comp.add(comp.init(), one)
    # 2 envs x (ceil(10 / (2 x 5)) + 2) final slots; None: one per row
    assert comp.init().data.final_obs.shape == (6, N, O)
    assert replay.compact_final_slots(10, 2, None) == 10
    assert replay.compact_final_slots(1000, 4, 25) == 4 * (10 + 2)


@pytest.mark.parametrize("sampler", ["uniform", "prioritized"])
def test_replay_bytes_of_the_compact_state(sampler):
    cfg = MARLConfig(env="tag", num_agents=4, num_prey=2, num_obstacles=1, num_envs=3,
                     buffer_capacity=100, batch_size=8, learning_starts=40, layout="compact",
                     sampler=sampler)
    shapes = jax.eval_shape(make_init(cfg), jax.random.PRNGKey(0))
    leaves = jax.tree.leaves((shapes.buffers, shapes.sampler))
    want = sum(math.prod(x.shape) * x.dtype.itemsize for x in leaves) - 8 * len(shapes.buffers)
    assert plan.replay_bytes(cfg) == want


def test_bytes_per_stored_step_at_48_agents():
    """The compact layout's bytes per stored step (1e6 rows, 48 spread agents, episodes of
    25 steps) over the interleaved layout's: every observation once, plus one final
    observation per episode."""
    big = MARLConfig(num_agents=48)
    ratio = plan.replay_bytes(dataclasses.replace(big, layout="compact")) / \
        plan.replay_bytes(big)
    # spread-48: own velocity and position, 48 landmarks, 47 others' positions and messages
    c, n, o, a = 10**6, 48, 4 + 2 * 48 + 4 * 47, 5
    finals = 10**6 // 25 + 2  # one per episode of 25 steps, + 2 x num_envs (1)
    compact = 4 * c * n * (o + a + 2) + 4 * c + 4 * (finals + 1) * n * o + 4
    assert plan.replay_bytes(dataclasses.replace(big, layout="compact")) == compact
    assert plan.replay_bytes(big) == 4 * c * n * (2 * o + a + 2)
    assert ratio == compact / (4 * c * n * (2 * o + a + 2)) <= 0.55


@pytest.mark.default_compilation  # two programs' env steps: XLA's lowest effort fuses the
def test_the_trainer_stores_what_the_interleaved_trainer_stores():  # two layouts' differently
    """Two envs, a ring smaller than the run, episode ends, no update (the policies, and so
    the trajectories, are the same): the same curves and bit-identical batches."""
    cfg = MARLConfig(env="tag", num_agents=3, num_envs=2, num_episodes=3, episode_length=5,
                     buffer_capacity=14, batch_size=8, learning_starts=14, update_every=50,
                     hidden=(8,))
    runs = {lay: jax.jit(make_train(dataclasses.replace(cfg, layout=lay)))(
        jax.random.PRNGKey(1)) for lay in ("interleaved", "compact")}
    (s_i, m_i), (s_c, m_c) = runs["interleaved"], runs["compact"]
    assert _same_bits(m_i["episode_return"], m_c["episode_return"])
    for t, (b_i, b_c) in enumerate(zip(s_i.buffers, s_c.buffers, strict=True)):
        n, o = b_i.data.obs.shape[1:]
        inter = replay.make_buffer("interleaved", 14, n, o, 5)
        comp = replay.make_buffer("compact", 14, n, o, 5, stride=2, episode_length=5)
        rows = jnp.arange(14)
        for a, b in zip(inter.gather(b_i, rows), comp.gather(b_c, rows), strict=True):
            assert _same_bits(a, b), t
