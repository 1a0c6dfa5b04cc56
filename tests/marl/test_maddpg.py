"""MADDPG / MATD3 / MASAC: schedule, buffer writes, update maths, modes, checkpoint resume."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl_pim.marl import checkpoint
from jaxrl_pim.marl.maddpg import (
    MARLConfig,
    TeamBatch,
    make_init,
    make_system,
    make_train,
    make_train_from,
)

TINY = MARLConfig(
    env="spread", num_agents=2, num_envs=2, num_episodes=4, episode_length=5,
    buffer_capacity=64, batch_size=8, learning_starts=16, update_every=2, hidden=(16, 16),
    sampling_mode="faithful", sampler="prioritized",
)


@pytest.fixture(scope="module")
def init_state():
    return jax.jit(make_init(TINY))(jax.random.PRNGKey(3))


@pytest.fixture(scope="module")
def tiny_run(init_state):
    state, metrics = jax.jit(make_train_from(TINY, 4))(init_state)
    return jax.device_get(state), jax.device_get(metrics)


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"algo": "ddpg"}, "algo"),
        ({"env": "tag", "num_agents": 5}, "num_agents"),
        ({"batch_size": 2048, "buffer_capacity": 1000}, "batch_size"),
        ({"learning_starts": 100}, "learning_starts"),
        ({"sampler": "neighbor", "num_refs": 3}, "num_refs"),
        ({"gamma": 1.5}, "gamma"),
        ({"hidden": (64, 0)}, "hidden"),
        ({"sampling_mode": "slow"}, "sampling_mode"),
    ],
)
def test_config_rejects_bad_values(kwargs, field):
    with pytest.raises(ValueError, match=field):
        MARLConfig(**kwargs)


def test_schedule_counters_and_metrics(tiny_run):
    state, m = tiny_run
    steps = TINY.num_episodes * TINY.episode_length  # 20 vector steps of 2 envs
    assert int(state.step) == steps and int(state.episode) == TINY.num_episodes
    assert int(state.buffers[0].size) == 2 * steps == int(state.buffers[0].insert_pos)
    # Update after step s (1-based) iff s % update_every == 0 and 2 s >= learning_starts.
    want = sum(1 for s in range(1, steps + 1) if s % 2 == 0 and 2 * s >= 16)
    assert int(state.num_updates) == want == 7
    assert m["episode_return"].shape == (4, 1)
    assert np.isnan(m["critic_loss"][0]).all()  # no update during the first episode
    assert np.isfinite(m["critic_loss"][1:]).all() and np.isfinite(m["actor_loss"][1:]).all()


def test_buffer_holds_chained_transitions(tiny_run):
    state, _ = tiny_run
    data = state.buffers[0].data  # per_agent layout: [N, capacity, ...]
    obs, next_obs = np.asarray(data.obs), np.asarray(data.next_obs)
    E, T = TINY.num_envs, TINY.episode_length
    for ep in range(TINY.num_episodes):
        for t in range(T - 1):
            for e in range(E):
                row = (ep * T + t) * E + e
                np.testing.assert_array_equal(next_obs[:, row], obs[:, row + E])
    # Actions are Gumbel-softmax vectors on the simplex; done is always 0.
    np.testing.assert_allclose(np.asarray(data.action)[:, :40].sum(-1), 1.0, rtol=1e-5)
    assert not np.asarray(data.done).any()


def test_checkpoint_resume_is_bit_identical(tiny_run, init_state, tmp_path):
    state_full, _ = tiny_run
    half = jax.jit(make_train_from(TINY, 2))
    state, _ = half(init_state)
    path = checkpoint.save(tmp_path / "ck.npz", state, TINY)
    resumed = checkpoint.load(path, dataclasses.replace(TINY, num_episodes=99))
    resumed, _ = half(resumed)
    for a, b in zip(jax.tree.leaves(resumed), jax.tree.leaves(state_full), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    with pytest.raises(ValueError, match="batch_size"):
        checkpoint.load(path, dataclasses.replace(TINY, batch_size=4))
    with pytest.raises(FileNotFoundError):
        checkpoint.load(tmp_path / "missing.npz", TINY)


def _random_batch(sys, B, key, done=0.0):
    out = []
    for ti, t in enumerate(sys.teams):
        k = jax.random.split(jax.random.fold_in(key, ti), 4)
        n = t.num_agents
        out.append(TeamBatch(
            obs=jax.random.normal(k[0], (n, B, t.obs_dim)),
            action=jax.nn.softmax(jax.random.normal(k[1], (n, B, t.action_dim))),
            reward=jax.random.normal(k[2], (n, B)),
            next_obs=jax.random.normal(k[3], (n, B, t.obs_dim)),
            done=jnp.full((n, B), done),
        ))
    return tuple(out)


def _np_mlp(p, x):
    p = p["params"]
    h = np.maximum(x @ p["Dense_0"]["kernel"] + p["Dense_0"]["bias"], 0)
    h = np.maximum(h @ p["Dense_1"]["kernel"] + p["Dense_1"]["bias"], 0)
    return h @ p["Dense_2"]["kernel"] + p["Dense_2"]["bias"]


def test_update_maths_and_faithful_equals_fast_on_shared_indices():
    cfg = dataclasses.replace(TINY, num_agents=3, sampling_mode="fast", sampler="uniform")
    fast = make_system(cfg)
    faithful = make_system(dataclasses.replace(cfg, sampling_mode="faithful"))
    state = jax.jit(fast.init)(jax.random.PRNGKey(0))
    B = 6
    batch = _random_batch(fast, B, jax.random.PRNGKey(1))
    n_all = sum(t.num_agents for t in fast.teams)
    tiled = jax.tree.map(lambda x: jnp.broadcast_to(x, (n_all, *x.shape)), batch)
    ys = tuple(b.reward + 1.0 for b in batch)
    w = jnp.ones((B,))

    # Critic loss against a NumPy forward pass on the joint input
    # [obs of every agent (team order), then every agent's action].
    teams1, closs, _ = jax.jit(fast.critic_update)(state.teams, batch, ys, w)
    x = np.concatenate(
        [np.asarray(b.obs).transpose(1, 0, 2).reshape(B, -1) for b in batch]
        + [np.asarray(b.action).transpose(1, 0, 2).reshape(B, -1) for b in batch], axis=1)
    want = []
    for ti, tp in enumerate(state.teams):
        for j in range(fast.teams[ti].num_agents):
            p = jax.tree.map(lambda a, j=j: np.asarray(a[j, 0]), tp.critic)
            q = _np_mlp(p, x)[:, 0]
            want.append(np.mean((q - np.asarray(ys[ti][j])) ** 2))
        np.testing.assert_allclose(float(closs[ti]), np.mean(want[-fast.teams[ti].num_agents:]),
                                   rtol=1e-4)

    # Faithful mode with every drawing agent on the same indices == fast mode.
    teams2, closs2, _ = jax.jit(faithful.critic_update)(
        state.teams, tiled, ys, jnp.broadcast_to(w, (n_all, B)))
    np.testing.assert_allclose(np.asarray(closs2), np.asarray(closs), rtol=1e-5)
    for a, b in zip(jax.tree.leaves(teams1), jax.tree.leaves(teams2), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)
    k = jax.random.PRNGKey(5)
    teams_a, aloss_a = jax.jit(fast.actor_update)(teams1, batch, k)
    teams_b, aloss_b = jax.jit(faithful.actor_update)(teams1, tiled, k)
    np.testing.assert_allclose(np.asarray(aloss_a), np.asarray(aloss_b), rtol=1e-5)
    for a, b in zip(jax.tree.leaves(teams_a), jax.tree.leaves(teams_b), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)
    # Only the actors moved; the targets follow by tau.
    moved = jax.tree.leaves(jax.tree.map(lambda a, b: float(jnp.abs(a - b).max()),
                                         teams_a[0].actor, teams1[0].actor))
    assert min(moved) > 0
    tgt = jax.jit(fast.target_update)(teams_a)
    np.testing.assert_allclose(
        np.asarray(jax.tree.leaves(tgt[0].target_actor)[0]),
        0.99 * np.asarray(jax.tree.leaves(teams_a[0].target_actor)[0])
        + 0.01 * np.asarray(jax.tree.leaves(teams_a[0].actor)[0]), rtol=1e-5, atol=1e-7)

    # Terminal transitions: y = r exactly (no bootstrap), in both modes.
    term = _random_batch(fast, B, jax.random.PRNGKey(2), done=1.0)
    y_fast = jax.jit(fast.target_q)(state.teams, term, k)
    y_faith = jax.jit(faithful.target_q)(
        state.teams, jax.tree.map(lambda x: jnp.broadcast_to(x, (n_all, *x.shape)), term), k)
    for ti in range(len(fast.teams)):
        np.testing.assert_allclose(np.asarray(y_fast[ti]), np.asarray(term[ti].reward))
        np.testing.assert_allclose(np.asarray(y_faith[ti]), np.asarray(term[ti].reward))


def test_matd3_delays_actor_and_targets():
    cfg = dataclasses.replace(TINY, algo="matd3", sampling_mode="fast", sampler="uniform")
    sys = make_system(cfg)
    state = jax.jit(sys.init)(jax.random.PRNGKey(0))
    # Fill the buffer with 16 random rows so the round can sample.
    b = _random_batch(sys, 16, jax.random.PRNGKey(1))[0]
    tr = jax.tree.map(lambda x: jnp.swapaxes(x, 0, 1), b)
    buf = sys.buffers[0].add(state.buffers[0], type(state.buffers[0].data)(*tr))
    rnd = jax.jit(sys.update_round)
    k = jax.random.PRNGKey(2)
    t0 = state.teams[0]

    def moved(a, b):
        return not np.allclose(np.asarray(jax.tree.leaves(a)[0]), np.asarray(jax.tree.leaves(b)[0]))

    for nu in (0, 1):
        t1 = rnd(state.teams, (buf,), state.sampler, jnp.int32(nu), k)[0][0]
        assert moved(t1.critic, t0.critic)  # the twin critics learn every round
        # Actors and all targets only every policy_delay (2nd) round.
        assert moved(t1.actor, t0.actor) == moved(t1.target_critic, t0.target_critic) == (nu == 0)
        assert moved(t1.target_actor, t0.target_actor) == (nu == 0)


def test_short_run_learns_on_cooperative_navigation():
    """A real learning signal in a few seconds: the return of the last episodes beats the
    first episodes (an untrained, near-uniform policy) and the critic loss is finite."""
    cfg = MARLConfig(env="spread", num_agents=3, num_envs=32, num_episodes=40,
                     buffer_capacity=50_000, batch_size=128, learning_starts=1024,
                     update_every=1, sampling_mode="fast")
    state, m = jax.jit(make_train(cfg))(jax.random.PRNGKey(0))
    r = np.asarray(m["episode_return"])[:, 0]
    assert np.isfinite(np.asarray(m["critic_loss"])[-1]).all()
    first, last = r[:5].mean(), r[-10:].mean()
    assert last > first + 0.1 * abs(first), (first, last)
