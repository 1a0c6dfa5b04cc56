"""The trainer's phases on MADDPG / MATD3 / MASAC: schedule, buffer writes, update maths,
sampling modes (resuming runs from checkpoints is in ``test_checkpoint.py``).

The rules alone are in ``test_rules.py``, the config in ``test_config.py``; the replay
layouts and samplers driven through the learner in ``test_learner_replay.py``. Learning
quality (MADDPG beats a random policy by 25 %, MATD3 and MASAC improve) is a criterion of
``benchmarks/learning.py``, whose committed results ``tests/benchmarks/test_learning.py``
checks.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl_pim import replay
from jaxrl_pim.marl import plan
from jaxrl_pim.marl.config import MARLConfig
from jaxrl_pim.marl.trainer import (
    TeamBatch,
    make_buffers,
    make_env,
    make_init,
    make_phases,
    make_train,
    random_policy_return,
)
from tests.support.marl import train_and_draw

TINY = MARLConfig(
    env="spread", num_agents=2, num_envs=2, num_episodes=4, episode_length=5,
    buffer_capacity=64, batch_size=8, learning_starts=16, update_every=2, hidden=(16, 16),
    sampling_mode="faithful", sampler="prioritized",
)


@pytest.fixture(scope="module")
def tiny_run():
    key = jax.random.PRNGKey(3)
    state, metrics = jax.jit(make_train(TINY))(key)  # init and 4 episodes
    return jax.device_get(state), jax.device_get(metrics)


def test_schedule_counters_and_metrics(tiny_run):
    state, m = tiny_run
    steps = TINY.num_episodes * TINY.episode_length  # 20 vector steps of 2 envs
    assert int(state.step) == steps and int(state.episode) == TINY.num_episodes
    assert int(state.buffers[0].size) == 2 * steps == int(state.buffers[0].insert_pos)
    # Update after step s (1-based) iff s % update_every == 0 and 2 s >= learning_starts.
    want = sum(1 for s in range(1, steps + 1) if s % 2 == 0 and 2 * s >= 16)
    assert int(state.num_updates) == want == 7 == plan.plan_run(TINY).update_rounds
    assert m["episode_return"].shape == (4, 1)
    assert np.isnan(m["critic_loss"][0]).all()  # no update during the first episode
    assert np.isfinite(m["critic_loss"][1:]).all() and np.isfinite(m["actor_loss"][1:]).all()


def test_buffer_holds_chained_transitions(tiny_run):
    state, _ = tiny_run
    assert TINY.layout == "interleaved"  # the default
    data = state.buffers[0].data  # interleaved layout: [capacity, N, ...]
    obs, next_obs = np.asarray(data.obs), np.asarray(data.next_obs)
    E, T = TINY.num_envs, TINY.episode_length
    for ep in range(TINY.num_episodes):
        for t in range(T - 1):
            for e in range(E):
                row = (ep * T + t) * E + e
                np.testing.assert_array_equal(next_obs[row], obs[row + E])
    # Actions are Gumbel-softmax vectors on the simplex; done is always 0.
    np.testing.assert_allclose(np.asarray(data.action)[:40].sum(-1), 1.0, rtol=1e-5)
    assert not np.asarray(data.done).any()


def _teams(cfg):
    return make_env(cfg)[0].teams


def _random_batch(teams, B, seed, done=0.0):
    """A time-major team batch (fields ``[B, n, ...]``) of random data (drawn with NumPy:
    eager JAX draws compile per shape)."""
    rng = np.random.default_rng(seed)
    out = []
    for t in teams:
        n = t.num_agents
        logits = rng.normal(size=(B, n, t.action_dim))
        out.append(TeamBatch(
            obs=jnp.asarray(rng.normal(size=(B, n, t.obs_dim)), jnp.float32),
            action=jnp.asarray(np.exp(logits) / np.exp(logits).sum(-1, keepdims=True),
                               jnp.float32),
            reward=jnp.asarray(rng.normal(size=(B, n)), jnp.float32),
            next_obs=jnp.asarray(rng.normal(size=(B, n, t.obs_dim)), jnp.float32),
            done=jnp.full((B, n), done, jnp.float32),
        ))
    return tuple(out)


def _np_mlp(p, x):
    p = p["params"]
    h = np.maximum(x @ p["Dense_0"]["kernel"] + p["Dense_0"]["bias"], 0)
    h = np.maximum(h @ p["Dense_1"]["kernel"] + p["Dense_1"]["bias"], 0)
    return h @ p["Dense_2"]["kernel"] + p["Dense_2"]["bias"]


def _np_entropy(logits):
    z = logits - logits.max(-1, keepdims=True)
    p = np.exp(z) / np.exp(z).sum(-1, keepdims=True)
    return -(p * np.log(p)).sum(-1)


def _agent(tree, j):
    return jax.tree.map(lambda a: np.asarray(a[j]), tree)


def test_update_maths_and_faithful_equals_fast_on_shared_indices():
    cfg = dataclasses.replace(TINY, num_agents=3, sampling_mode="fast", sampler="uniform")
    teams_spec = _teams(cfg)
    fast = make_phases(cfg).learner
    faithful = make_phases(dataclasses.replace(cfg, sampling_mode="faithful")).learner
    init = make_init(cfg)
    B = 6
    n_all = sum(t.num_agents for t in teams_spec)

    def tile(tree):
        return jax.tree.map(lambda x: jnp.broadcast_to(x, (n_all, *x.shape)), tree)

    def probe(key, batch, term, k):
        # One program for every phase (one compilation); faithful mode sees every drawing
        # agent on the same indices (the batch tiled over drawers).
        teams = init(key).teams
        ys = tuple(b.reward.T + 1.0 for b in batch)  # critic targets [n, B]
        w = jnp.ones((B,))
        teams1, closs, _ = fast.critic_update(teams, batch, ys, w)
        teams2, closs2, _ = faithful.critic_update(teams, tile(batch), ys,
                                                   jnp.broadcast_to(w, (n_all, B)))
        teams_a, aloss_a = fast.actor_update(teams1, batch, k)
        teams_b, aloss_b = faithful.actor_update(teams1, tile(batch), k)
        tgt = fast.target_update(teams_a)
        y_fast = fast.target_q(teams, term, k)
        y_faith = faithful.target_q(teams, tile(term), k)
        return (teams, ys, teams1, closs, teams2, closs2, teams_a, aloss_a, teams_b, aloss_b,
                tgt, y_fast, y_faith)

    args = (jax.random.PRNGKey(0), _random_batch(teams_spec, B, 1),
            _random_batch(teams_spec, B, 2, done=1.0), jax.random.PRNGKey(5))
    (teams, ys, teams1, closs, teams2, closs2, teams_a, aloss_a, teams_b, aloss_b, tgt, y_fast,
     y_faith) = jax.device_get(jax.jit(probe)(*args))
    batch, term = args[1], args[2]

    # Critic loss against a NumPy forward pass on the joint input
    # [obs of every agent (team order), then every agent's action].
    x = np.concatenate([np.asarray(b.obs).reshape(B, -1) for b in batch]
                       + [np.asarray(b.action).reshape(B, -1) for b in batch], axis=1)
    for ti, tp in enumerate(teams):
        want = [np.mean((_np_mlp(_agent(tp.critic, (j, 0)), x)[:, 0] - ys[ti][j]) ** 2)
                for j in range(teams_spec[ti].num_agents)]
        np.testing.assert_allclose(float(closs[ti]), np.mean(want), rtol=1e-4)

    # Faithful mode with every drawing agent on the same indices == fast mode.
    np.testing.assert_allclose(closs2, closs, rtol=1e-5)
    for a, b in zip(jax.tree.leaves(teams1), jax.tree.leaves(teams2), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(aloss_a, aloss_b, rtol=1e-5)
    for a, b in zip(jax.tree.leaves(teams_a), jax.tree.leaves(teams_b), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    # Only the actors moved; the targets follow by tau.
    moved = jax.tree.leaves(jax.tree.map(lambda a, b: float(np.abs(a - b).max()),
                                         teams_a[0].actor, teams1[0].actor))
    assert min(moved) > 0
    np.testing.assert_allclose(
        jax.tree.leaves(tgt[0].target_actor)[0],
        0.99 * jax.tree.leaves(teams_a[0].target_actor)[0]
        + 0.01 * jax.tree.leaves(teams_a[0].actor)[0], rtol=1e-5, atol=1e-7)

    # Terminal transitions: y = r exactly (no bootstrap), in both modes.
    for ti in range(len(teams_spec)):
        np.testing.assert_allclose(y_fast[ti], np.asarray(term[ti].reward).T)
        np.testing.assert_allclose(y_faith[ti], np.asarray(term[ti].reward).T)


def _twin_variants(teams, hidden, shifts):
    """Stack of ``len(shifts)`` copies of ``teams`` in which critic 2 (online and target) is
    critic 1 with its output bias moved by ``shift``: ``Q2 = Q1 + shift`` exactly."""
    out_layer = f"Dense_{len(hidden)}"

    def one(shift):
        def twin(critic):
            critic = jax.tree.map(lambda c: c.at[:, 1].set(c[:, 0]), critic)
            bias = critic["params"][out_layer]["bias"]
            critic["params"][out_layer]["bias"] = bias.at[:, 1].add(shift)
            return critic

        return tuple(tp._replace(critic=twin(tp.critic), target_critic=twin(tp.target_critic))
                     for tp in teams)

    return jax.tree.map(lambda *xs: jnp.stack(xs), *[one(s) for s in shifts])


SHIFTS = (0.0, -100.0, 100.0)  # Q2 = Q1, Q2 = Q1 - 100, Q2 = Q1 + 100


def _check_twin_target(y, gamma):
    """``y [len(SHIFTS), ...]`` from ``SHIFTS``: the target takes min(Q1', Q2')."""
    np.testing.assert_allclose(y[2], y[0], rtol=1e-6, atol=1e-5)  # min(Q1, Q1 + 100) = Q1
    np.testing.assert_allclose(y[0] - y[1], gamma * 100.0, rtol=1e-4)  # min(Q1, Q1 - 100)


def test_matd3_twin_target_and_delays_actor_and_targets():
    cfg = dataclasses.replace(TINY, algo="matd3", sampling_mode="fast", sampler="uniform")
    teams_spec = _teams(cfg)
    rollout, learner = make_phases(cfg)
    buffer = make_buffers(cfg, teams_spec)[0]

    def probe(key, rows, batch, k):
        state = rollout.init(key)
        # 16 random rows in the buffer so an update round can sample.
        buf = buffer.add(state.buffers[0], rows)
        # Rounds number 0 and 1 (vmapped: one copy of the round in the program).
        rnd = jax.vmap(lambda nu: learner.update_round(state.teams, (buf,), state.sampler, nu,
                                                       k)[0][0])(jnp.arange(2, dtype=jnp.int32))
        variants = _twin_variants(state.teams, cfg.hidden, SHIFTS)
        y = jax.vmap(lambda t: learner.target_q(t, batch, k))(variants)
        aloss = jax.vmap(lambda t: learner.actor_update(t, batch, k)[1])(variants)
        return state.teams[0], rnd, y, aloss

    b = _random_batch(teams_spec, 16, 1)[0]
    rows = replay.Transition(*b)  # time-major: one buffer row per batch row
    args = (jax.random.PRNGKey(0), rows, _random_batch(teams_spec, 8, 4),
            jax.random.PRNGKey(2))
    t0, rnd, y, aloss = jax.device_get(jax.jit(probe)(*args))

    def moved(a, b):
        return not np.allclose(jax.tree.leaves(a)[0], jax.tree.leaves(b)[0])

    for nu in (0, 1):
        t1 = _agent(rnd, nu)
        assert moved(t1.critic, t0.critic)  # the twin critics learn every round
        # Actors and all targets only every policy_delay (2nd) round.
        assert moved(t1.actor, t0.actor) == moved(t1.target_critic, t0.target_critic) == (nu == 0)
        assert moved(t1.target_actor, t0.target_actor) == (nu == 0)
    _check_twin_target(y[0], cfg.gamma)
    # The MATD3 actor follows Q1 alone: moving Q2 changes nothing.
    np.testing.assert_array_equal(aloss[1], aloss[0])
    np.testing.assert_array_equal(aloss[2], aloss[0])


def test_masac_entropy_bonus_twin_min_and_current_actors():
    """MASAC (alpha = 0.05): against alpha = 0 on the same key the target gains exactly
    ``gamma alpha H(pi_i(.|o'_i))`` of the CURRENT actor, the actor loss loses exactly
    ``alpha mean H(pi_i(.|o_i))``; both the target and the actor loss use min(Q1, Q2)."""
    cfg = dataclasses.replace(TINY, algo="masac", num_agents=3, sampling_mode="fast",
                              sampler="uniform")
    assert cfg.entropy_coef == 0.05
    teams_spec = _teams(cfg)
    init = make_init(cfg)
    sac = make_phases(cfg).learner
    no_ent = make_phases(dataclasses.replace(cfg, entropy_coef=0.0)).learner

    def probe(key, batch, k):
        teams = init(key).teams
        # Target actors unlike the actors: MASAC must not read them.
        teams = tuple(tp._replace(target_actor=jax.tree.map(lambda x: 3.0 * x + 0.5,
                                                            tp.target_actor))
                      for tp in teams)
        y_sac, y_0 = sac.target_q(teams, batch, k), no_ent.target_q(teams, batch, k)
        a_sac, a_0 = sac.actor_update(teams, batch, k)[1], no_ent.actor_update(teams, batch, k)[1]
        variants = _twin_variants(teams, cfg.hidden, SHIFTS)
        y_twin = jax.vmap(lambda t: sac.target_q(t, batch, k))(variants)
        a_twin = jax.vmap(lambda t: sac.actor_update(t, batch, k)[1])(variants)
        return teams, y_sac, y_0, a_sac, a_0, y_twin, a_twin

    args = (jax.random.PRNGKey(0), _random_batch(teams_spec, 6, 1),
            jax.random.PRNGKey(5))
    teams, y_sac, y_0, a_sac, a_0, y_twin, a_twin = jax.device_get(
        jax.jit(probe)(*args))
    batch = args[1]
    n = teams_spec[0].num_agents
    h_next = np.stack([_np_entropy(_np_mlp(_agent(teams[0].actor, j),
                                           np.asarray(batch[0].next_obs[:, j])))
                       for j in range(n)])  # [n, B]
    h_now = np.stack([_np_entropy(_np_mlp(_agent(teams[0].actor, j),
                                          np.asarray(batch[0].obs[:, j])))
                      for j in range(n)])
    assert h_next.min() > 0.1  # a real bonus, not a vanishing one
    np.testing.assert_allclose(y_sac[0] - y_0[0], cfg.gamma * 0.05 * h_next, rtol=1e-3,
                               atol=1e-5)
    np.testing.assert_allclose(a_sac[0] - a_0[0], -0.05 * h_now.mean(), rtol=1e-3, atol=1e-6)
    _check_twin_target(y_twin[0], cfg.gamma)
    # Actor loss -min(Q1, Q2): Q2 = Q1 + 100 changes nothing, Q2 = Q1 - 100 adds 100.
    np.testing.assert_allclose(a_twin[2], a_twin[0], rtol=1e-6, atol=1e-5)
    np.testing.assert_allclose(a_twin[1] - a_twin[0], 100.0, rtol=1e-4)


# ------------------------------------------------ the random reference, the neighbour sampler


def test_random_policy_returns_on_cooperative_navigation():
    # the reference of the learning criteria (benchmarks/learning.py): 4 x 256 episodes each;
    # the zero-logit relaxed policy (Gumbel-softmax) spreads its effort and scores better than
    # uniformly random one-hot actions
    cfg = MARLConfig(env="spread", num_agents=3, num_envs=256)
    key = jax.random.PRNGKey(123)
    gumbel = float(random_policy_return(cfg, key, 4)[0])
    one_hot = float(random_policy_return(cfg, key, 4, one_hot=True)[0])
    assert -240.0 < one_hot < gumbel < -210.0


def test_neighbor_sampler_draws_runs_from_the_trained_ring():
    """MASAC with locality-aware neighbour sampling (16 references x runs of 4 rows) over a
    ring written past its end: the sampler's draws from the final state are runs consecutive
    in time, and the learner's batch is the buffer's rows at those indices."""
    cfg = MARLConfig(env="spread", num_agents=3, num_envs=16, num_episodes=6, update_every=1,
                     sampling_mode="fast", buffer_capacity=1_000, batch_size=64,
                     learning_starts=64, algo="masac", sampler="neighbor", num_refs=16,
                     hidden=(16, 16))
    state, m, idx, w, batch = train_and_draw(cfg)
    assert np.isfinite(np.asarray(m["critic_loss"])[1:]).all()
    buf = state.buffers[0]  # full ring: 6 x 25 x 16 = 2,400 rows written into 1,000
    size, pos = int(buf.size), int(buf.insert_pos)
    assert size == 1_000 and pos == 2_400 % 1_000
    assert ((idx >= 0) & (idx < size)).all()
    np.testing.assert_array_equal(w, 1.0)
    # Runs consecutive in time order (row k in time order is physical row (pos + k) % size):
    # a run may cross the physical end of the ring but never jumps from newest to oldest.
    chron = ((idx - pos) % size).reshape(16, 4)
    np.testing.assert_array_equal(np.diff(chron, axis=1), 1)
    # The learner's batch is the buffer's data at those rows for every agent (NumPy gather).
    data = buf.data  # the default interleaved layout: [capacity, N, ...]
    for name in ("obs", "action", "reward", "next_obs"):
        want = np.asarray(getattr(data, name))[idx]  # time-major [B, N, ...]
        np.testing.assert_array_equal(getattr(batch[0], name), want, err_msg=name)
