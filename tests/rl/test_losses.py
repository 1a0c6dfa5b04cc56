"""Losses, targets and distributions of jaxrl_pim.rl against NumPy / SciPy closed forms."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from jaxrl_pim.replay import NStepTransition
from jaxrl_pim.rl import common, networks
from jaxrl_pim.rl.a2c import A2CConfig, policy_gradient_loss
from jaxrl_pim.rl.ddpg import DDPGConfig, ddpg_target, polyak
from jaxrl_pim.rl.dqn import (
    DQNConfig,
    advantage_learning_target,
    dqn_loss,
    huber,
    make_replay,
    one_step,
    sample_uniform,
    td_target,
)
from jaxrl_pim.rl.ppo import PPOConfig, clipped_surrogate_loss, clipped_value_loss, gae_advantages


def _gae_numpy(rewards, values, dones, last_value, gamma, lam):
    T = len(rewards)
    adv = np.zeros_like(rewards)
    gae = np.zeros_like(last_value)
    for t in reversed(range(T)):
        next_v = last_value if t == T - 1 else values[t + 1]
        nd = 1.0 - dones[t]
        delta = rewards[t] + gamma * next_v * nd - values[t]
        gae = delta + gamma * lam * nd * gae
        adv[t] = gae
    return adv, adv + values


def test_gae_matches_numpy_loop():
    rng = np.random.default_rng(0)
    T, N = 7, 3
    rewards = rng.normal(size=(T, N)).astype(np.float32)
    values = rng.normal(size=(T, N)).astype(np.float32)
    dones = (rng.random((T, N)) < 0.3).astype(np.float32)
    last = rng.normal(size=(N,)).astype(np.float32)
    adv, ret = gae_advantages(jnp.asarray(rewards), jnp.asarray(values), jnp.asarray(dones),
                              jnp.asarray(last), 0.9, 0.8)
    ref_adv, ref_ret = _gae_numpy(rewards, values, dones, last, 0.9, 0.8)
    np.testing.assert_allclose(adv, ref_adv, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ret, ref_ret, rtol=1e-5, atol=1e-5)


def test_gae_lambda_one_gives_discounted_returns():
    # No episode end: returns are the discounted sum of rewards bootstrapped with V(s_T).
    rewards = np.array([1.0, 2.0, 3.0], np.float32)
    values = np.array([0.5, -1.0, 2.0], np.float32)
    _, ret = gae_advantages(jnp.asarray(rewards), jnp.asarray(values), jnp.zeros(3),
                            jnp.asarray(4.0), 0.5, 1.0)
    expected = [1 + 0.5 * 2 + 0.25 * 3 + 0.125 * 4, 2 + 0.5 * 3 + 0.25 * 4, 3 + 0.5 * 4]
    np.testing.assert_allclose(ret, expected, rtol=1e-6)


def test_gae_rejects_mismatched_shapes():
    with pytest.raises(ValueError, match="must match"):
        gae_advantages(jnp.zeros(3), jnp.zeros(4), jnp.zeros(3), jnp.zeros(()), 0.9, 0.9)


def test_clipped_surrogate_matches_closed_form():
    log_ratio = np.log(np.array([0.5, 0.9, 1.0, 1.1, 1.5, 2.0], np.float32))
    adv = np.array([1.0, -1.0, 2.0, 1.0, -2.0, 3.0], np.float32)
    eps = 0.2
    r = np.exp(log_ratio)
    ref = -np.mean(np.minimum(r * adv, np.clip(r, 1 - eps, 1 + eps) * adv))
    got = clipped_surrogate_loss(jnp.asarray(log_ratio), jnp.asarray(adv), eps)
    np.testing.assert_allclose(got, ref, rtol=1e-6)
    # By hand: ratio 2.0 with positive advantage is clipped to 1.2 -> contributes 1.2 * 3.
    terms = [0.5 * 1, 0.9 * -1, 1.0 * 2, 1.1 * 1, 1.5 * -2, 1.2 * 3]
    np.testing.assert_allclose(got, -np.mean(terms), rtol=1e-5)


def test_clipped_surrogate_gradient_is_zero_outside_clip_range():
    g = jax.grad(lambda lr: clipped_surrogate_loss(lr, jnp.array([1.0]), 0.2))(
        jnp.log(jnp.array([1.5]))
    )
    assert float(g[0]) == 0.0


def test_clipped_value_loss_matches_numpy():
    v = np.array([1.0, 2.0, 0.0], np.float32)
    v_old = np.array([0.5, 2.5, 0.1], np.float32)
    ret = np.array([2.0, 1.0, 0.3], np.float32)
    clipped = v_old + np.clip(v - v_old, -0.2, 0.2)
    ref = 0.5 * np.mean(np.maximum((v - ret) ** 2, (clipped - ret) ** 2))
    np.testing.assert_allclose(clipped_value_loss(v, v_old, ret, 0.2), ref, rtol=1e-6)


def test_td_target_and_ddpg_target():
    q_t = jnp.array([[1.0, 3.0, -2.0], [0.0, -1.0, -0.5]])
    r = jnp.array([0.5, 1.0])
    discount = jnp.array([0.9, 0.0])  # second transition terminated
    np.testing.assert_allclose(jax.vmap(td_target)(r, discount, q_t), [0.5 + 0.9 * 3.0, 1.0])
    np.testing.assert_allclose(ddpg_target(jnp.array(1.0), jnp.array(0.99), jnp.array(2.0)),
                               1.0 + 0.99 * 2.0, rtol=1e-6)
    with pytest.raises(ValueError, match="num_actions"):
        td_target(r[0], discount[0], q_t[0, 0])


def test_advantage_learning_target_matches_numpy():
    q_s = np.array([[1.0, 3.0, -2.0], [0.0, -1.0, -0.5]], np.float32)
    target = np.array([2.0, -1.0], np.float32)
    action = np.array([0, 1])
    out = advantage_learning_target(jnp.asarray(target), jnp.asarray(q_s), jnp.asarray(action),
                                    0.7)
    np.testing.assert_allclose(out, [2.0 - 0.7 * (3.0 - 1.0), -1.0 - 0.7 * (0.0 + 1.0)])
    greedy = np.argmax(q_s, axis=1)  # the greedy action's target is never changed
    np.testing.assert_array_equal(
        advantage_learning_target(jnp.asarray(target), jnp.asarray(q_s), jnp.asarray(greedy),
                                  0.7), target)


def test_advantage_learning_fixed_point_widens_gaps_by_one_over_one_minus_alpha():
    # Small random MDP. Iterating Q <- r + gamma P max Q - alpha (max Q - Q) converges to
    # Q_AL = (Q* - alpha V*) / (1 - alpha): same greedy values V*, gaps V* - Q* scaled by
    # 1 / (1 - alpha) (Bellemare et al. 2016). Q* comes from plain NumPy value iteration.
    rng = np.random.default_rng(0)
    n_s, n_a, gamma, alpha = 5, 3, 0.8, 0.6
    p = rng.dirichlet(np.ones(n_s), size=(n_s, n_a))  # [S, A, S']
    r = rng.normal(size=(n_s, n_a))
    q_star = np.zeros((n_s, n_a))
    for _ in range(2000):
        q_star = r + gamma * p @ q_star.max(axis=1)
    v_star = q_star.max(axis=1)
    q = jnp.zeros((n_s, n_a), jnp.float32)
    s_idx = jnp.repeat(jnp.arange(n_s), n_a)
    a_idx = jnp.tile(jnp.arange(n_a), n_s)
    p32, r32 = jnp.asarray(p, jnp.float32), jnp.asarray(r, jnp.float32)

    @jax.jit
    def step(q):
        bellman = r32 + gamma * p32 @ q.max(axis=1)  # [S, A]
        out = advantage_learning_target(bellman[s_idx, a_idx], q[s_idx], a_idx, alpha)
        return out.reshape(n_s, n_a)

    for _ in range(600):
        q = step(q)
    q = np.asarray(q)
    np.testing.assert_allclose(q.max(axis=1), v_star, atol=1e-4)
    np.testing.assert_allclose(v_star[:, None] - q, (v_star[:, None] - q_star) / (1 - alpha),
                               atol=1e-4)
    np.testing.assert_array_equal(q.argmax(axis=1), q_star.argmax(axis=1))


def test_policy_gradient_loss_value_and_stop_gradient():
    logp = jnp.array([-0.1, -2.0, -0.7])
    adv = jnp.array([1.0, -0.5, 2.0])
    np.testing.assert_allclose(policy_gradient_loss(logp, adv), -np.mean(logp * adv), rtol=1e-6)
    g_adv = jax.grad(lambda a: policy_gradient_loss(logp, a))(adv)
    np.testing.assert_array_equal(g_adv, 0.0)


def test_polyak():
    t = {"w": jnp.array([0.0, 1.0])}
    o = {"w": jnp.array([1.0, 3.0])}
    np.testing.assert_allclose(polyak(t, o, 0.25)["w"], [0.25, 1.5])


def test_distributions_match_scipy():
    rng = np.random.default_rng(1)
    logits = rng.normal(size=(4, 3)).astype(np.float32)
    q_logits = rng.normal(size=(4, 3)).astype(np.float32)
    p = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    q = np.exp(q_logits) / np.exp(q_logits).sum(-1, keepdims=True)
    act = np.array([0, 2, 1, 2])
    np.testing.assert_allclose(networks.categorical_log_prob(logits, act),
                               np.log(p[np.arange(4), act]), rtol=1e-5)
    np.testing.assert_allclose(networks.categorical_entropy(logits), stats.entropy(p, axis=-1),
                               rtol=1e-5)
    np.testing.assert_allclose(networks.categorical_kl(logits, q_logits),
                               stats.entropy(p, q, axis=-1), rtol=1e-4)
    mean, log_std = rng.normal(size=(2, 5, 2)).astype(np.float32)
    a = rng.normal(size=(5, 2)).astype(np.float32)
    ref = stats.norm.logpdf(a, mean, np.exp(log_std)).sum(-1)
    np.testing.assert_allclose(networks.gaussian_log_prob(mean, log_std, a), ref, rtol=1e-5)
    np.testing.assert_allclose(networks.gaussian_entropy(log_std),
                               stats.norm.entropy(0, np.exp(log_std)).sum(-1), rtol=1e-5)
    m2, ls2 = rng.normal(size=(2, 5, 2)).astype(np.float32)
    s1, s2 = np.exp(log_std), np.exp(ls2)
    ref_kl = (np.log(s2 / s1) + (s1**2 + (mean - m2) ** 2) / (2 * s2**2) - 0.5).sum(-1)
    np.testing.assert_allclose(networks.gaussian_kl(mean, log_std, m2, ls2), ref_kl, rtol=1e-4)


def test_replay_buffer_wraps_and_samples_stored_rows():
    buffer, sampler = make_replay(5, 2)
    buf = buffer.init()
    for start in (0, 3):
        obs = jnp.arange(start, start + 3, dtype=jnp.float32)[:, None].repeat(2, 1)
        term = jnp.array([False, start == 3, False])
        buf = buffer.add(buf, one_step(obs, jnp.arange(3), jnp.ones(3), obs + 1, term, 0.9))
    # Six rows into five slots: row 5 overwrote slot 0.
    np.testing.assert_array_equal(buf.data.obs[:, 0], [5, 1, 2, 3, 4])
    assert int(buf.insert_pos) == 1 and int(buf.size) == 5
    # discount = gamma, 0 where the episode terminated (row 4 = slot 4)
    np.testing.assert_allclose(buf.data.discount, [0.9, 0.9, 0.9, 0.9, 0.0])
    obs, _, _, _, next_obs = sample_uniform(buffer, sampler, buf, jax.random.key(0), 64)
    np.testing.assert_array_equal(next_obs, obs + 1)
    assert set(np.asarray(obs[:, 0]).tolist()) <= {1.0, 2.0, 3.0, 4.0, 5.0}


def test_ring_buffer_rejects_mismatched_batches_and_indices():
    buffer, _ = make_replay(4, 2)
    buf = buffer.init()
    good = one_step(jnp.zeros((2, 2)), jnp.zeros(2, jnp.int32), jnp.zeros(2), jnp.zeros((2, 2)),
                    jnp.zeros(2, bool), 0.9)
    with pytest.raises(ValueError, match=r"shape \(2, 3\); this buffer takes \(2, 2\)"):
        buffer.add(buf, good._replace(obs=jnp.zeros((2, 3))))
    with pytest.raises(ValueError, match="capacity 4"):
        buffer.add(buf, jax.tree.map(lambda x: jnp.concatenate([x, x, x]), good))
    with pytest.raises(ValueError, match="integer array"):
        buffer.gather(buffer.add(buf, good), jnp.zeros((2,), jnp.float32))


def test_dqn_loss_matches_numpy_with_and_without_weights():
    rng = np.random.default_rng(3)
    w = rng.normal(size=(3, 4)).astype(np.float32)
    w_target = rng.normal(size=(3, 4)).astype(np.float32)
    q_apply = lambda p, obs: obs @ p  # noqa: E731
    batch = NStepTransition(
        obs=rng.normal(size=(6, 3)).astype(np.float32),
        action=rng.integers(0, 4, 6).astype(np.int32),
        reward=rng.normal(size=6).astype(np.float32) * 3,
        discount=np.array([0.99, 0.0, 0.99, 0.5, 0.99, 0.9], np.float32),
        next_obs=rng.normal(size=(6, 3)).astype(np.float32),
    )
    weights = rng.uniform(0.1, 1.0, 6).astype(np.float32)
    q = batch.obs @ w
    target = batch.reward + batch.discount * (batch.next_obs @ w_target).max(-1)
    td = target - q[np.arange(6), batch.action]
    ax = np.abs(td)
    hub = np.where(ax <= 1.0, 0.5 * td**2, ax - 0.5)
    loss, got_td = dqn_loss(q_apply, w, w_target, batch)
    np.testing.assert_allclose(got_td, td, rtol=1e-5)
    np.testing.assert_allclose(loss, hub.mean(), rtol=1e-5)
    loss_w, _ = dqn_loss(q_apply, w, w_target, batch, jnp.asarray(weights))
    np.testing.assert_allclose(loss_w, (weights * hub).mean(), rtol=1e-5)
    np.testing.assert_allclose(huber(jnp.asarray(td)), hub, rtol=1e-6)
    # the gradient flows only through Q(obs, action), never through the target
    g = jax.grad(lambda p: dqn_loss(q_apply, p, w_target, batch)[0])(jnp.asarray(w))
    dq = -np.clip(td, -1.0, 1.0) / 6
    ref = np.zeros_like(w)
    for i in range(6):
        ref[:, batch.action[i]] += dq[i] * batch.obs[i]
    np.testing.assert_allclose(g, ref, rtol=1e-4, atol=1e-6)


def test_episode_stats():
    stats = common.init_stats(2)
    stats, fin = common.update_stats(stats, jnp.array([1.0, 2.0]), jnp.array([False, True]))
    np.testing.assert_array_equal(fin, [0.0, 2.0])
    stats, fin = common.update_stats(stats, jnp.array([1.0, 5.0]), jnp.array([True, False]))
    np.testing.assert_array_equal(fin, [2.0, 0.0])
    np.testing.assert_array_equal(stats.ret, [0.0, 5.0])
    assert np.isnan(common.mean_finished(jnp.zeros(2), jnp.array([False, False])))


def test_qat_hook_switches_on_after_delay_with_straight_through_gradient():
    from jaxrl_pim.quant import fake_quantize

    params = {"w": jnp.linspace(-1.0, 0.7, 12).reshape(3, 4), "b": jnp.array([0.3, -0.2])}
    qat = common.QATConfig(bits=3, delay_fraction=0.5)
    before = common.qat_params(params, qat, jnp.array(4), 5)
    after = common.qat_params(params, qat, jnp.array(5), 5)
    ref = fake_quantize(params, 3)
    np.testing.assert_array_equal(before["w"], params["w"])
    np.testing.assert_array_equal(after["w"], ref["w"])
    assert not np.allclose(after["w"], params["w"])
    grad = jax.grad(lambda p: jnp.sum(common.qat_params(p, qat, jnp.array(9), 5)["w"] * 2.0))(
        params
    )
    np.testing.assert_array_equal(grad["w"], 2.0)
    assert common.qat_params(params, None, jnp.array(9), 0) is params


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: PPOConfig(env_name="Pong"), "env_name"),
        (lambda: PPOConfig(num_envs=4, num_steps=10, num_minibatches=3), "num_minibatches"),
        (lambda: PPOConfig(gamma=1.5), "gamma"),
        (lambda: PPOConfig(hidden=(64, 0)), r"hidden\[1\]"),
        (lambda: DQNConfig(env_name="Pendulum-v1"), "discrete"),
        (lambda: DQNConfig(batch_size=64, learning_starts=10), "learning_starts"),
        (lambda: DQNConfig(advantage_learning=1.0), "advantage_learning"),
        (lambda: DDPGConfig(env_name="CartPole-v1"), "continuous"),
        (lambda: DQNConfig(env_name="Breakout-MinAtar"), "flat vectors"),
        (lambda: DQNConfig(env_name="taxi"), "registered with gymnax"),
        (lambda: DDPGConfig(tau=0.0), "tau"),
        (lambda: DQNConfig(buffer_capacity=2**30 + 1), r"buffer_capacity must be <= 1073741824"),
        (lambda: DDPGConfig(num_envs=4, buffer_capacity=3), "buffer_capacity must be >= 4"),
        (lambda: A2CConfig(activation="gelu"), "activation"),
        (lambda: PPOConfig(qat=8), "qat"),
        (lambda: common.QATConfig(bits=1), "bits"),
        (lambda: common.QATConfig(delay_fraction=1.0), "delay_fraction"),
    ],
)
def test_configs_reject_bad_values(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_rollout_bootstraps_time_limits_with_the_final_observation_value():
    """``ActorCritic.rollout`` runs the critic once over the whole rollout; each step's value
    and time-limit bootstrap equal a step-by-step loop computing them at the step."""
    import jax.numpy as jnp

    from jaxrl_pim.envs.factory import make
    from jaxrl_pim.rl import actor_critic, common

    env, env_params = make("Pendulum-v1")  # a 200-step time limit: 8 envs x 210 steps
    ac = actor_critic.make_actor_critic("Pendulum-v1", (16, 16), "tanh")
    params, critic_params = ac.init(jax.random.PRNGKey(0), jax.random.PRNGKey(1))
    obs, env_state = common.vmap_reset(env, env_params, jax.random.PRNGKey(2), 8)
    state = actor_critic.ActorCriticState(params, critic_params, None, env_state, obs,
                                          common.init_stats(8), jax.random.PRNGKey(3))
    _, traj = jax.jit(lambda s: ac.rollout(env, env_params, 210, 0.9, params, s))(state)
    @jax.jit
    def step(key, obs, env_state):  # one step, the critic at the step
        key, k_act, k_step = jax.random.split(key, 3)
        _, _, env_action = ac.sample(params, obs, k_act)
        out = common.vmap_step(env, env_params, k_step, env_state, env_action)
        reward = out.reward + 0.9 * ac.value(critic_params, out.final_obs) * out.truncated
        return key, out, ac.value(critic_params, obs), reward

    key, values, rewards, truncated = state.key, [], [], []
    for _ in range(210):  # the same steps, each its own call
        key, out, value, reward = step(key, obs, env_state)
        values.append(value)
        rewards.append(reward)
        truncated.append(out.truncated)
        obs, env_state = out.obs, out.env_state
    assert int(jnp.sum(jnp.stack(truncated))) == 8  # every env hit its time limit once
    # (the loop calls a step at a time, the rollout is fused: states drift by float rounding)
    np.testing.assert_allclose(traj.value, jnp.stack(values), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(traj.reward, jnp.stack(rewards), rtol=1e-4, atol=1e-4)
