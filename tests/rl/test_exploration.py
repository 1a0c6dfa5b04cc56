"""Exploration and training options of the DQN / DDPG learners against plain Python references.
(The harder study tasks learning with their registered settings, ``jaxrl_pim.studies.TASKS``,
are criteria of ``benchmarks/learning.py``.)"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl_pim.rl import common, ddpg, dqn
from jaxrl_pim.rl.networks import MLP


def explore_reference(greedy, random, start, hold):
    """Temporally-extended epsilon-greedy as a plain loop over one environment's steps."""
    actions, held, left = [], 0, 0
    for g, r, s in zip(greedy, random, start, strict=True):
        if left > 0:
            a, left = held, left - 1
        elif s:
            a, held, left = r, r, hold - 1
        else:
            a = g
        actions.append(a)
    return actions


@pytest.mark.parametrize("hold", [1, 2, 5])
def test_explore_action_matches_python_loop(hold):
    rng = np.random.default_rng(hold)
    T = 400
    greedy = rng.integers(0, 3, T).astype(np.int32)
    random = rng.integers(0, 3, T).astype(np.int32)
    start = rng.random(T) < 0.2

    def body(c, x):
        a, held, left = dqn.explore_action(*x, c[0], c[1], hold)
        return (held, left), a

    _, got = jax.lax.scan(body, (jnp.int32(0), jnp.int32(0)),
                          (jnp.asarray(greedy), jnp.asarray(random), jnp.asarray(start)))
    np.testing.assert_array_equal(np.asarray(got), explore_reference(greedy, random, start, hold))
    if hold == 1:  # ordinary epsilon-greedy
        np.testing.assert_array_equal(np.asarray(got), np.where(start, random, greedy))


def _runs_restart_every(actions, starts, hold):
    """True if ``actions`` only change at episode starts or every ``hold`` steps after one."""
    since = 0
    for t in range(1, len(actions)):
        since = 0 if starts[t] else since + 1
        if since % hold != 0 and actions[t] != actions[t - 1]:
            return False
    return True


@pytest.mark.slow
def test_dqn_holds_random_actions_for_explore_hold_steps():
    # epsilon 1 throughout and no learning: every action is exploratory
    cfg = dqn.DQNConfig("CartPole-v1", total_timesteps=300, num_envs=1, buffer_capacity=300,
                        batch_size=32, learning_starts=300, eps_start=1.0, eps_end=1.0,
                        explore_hold=4)
    state, _ = jax.jit(dqn.make_train(cfg))(jax.random.key(0))
    actions = np.asarray(state.buffer.data.action)
    ends = np.asarray(state.buffer.data.discount) == 0  # random CartPole play ends by falling
    starts = np.concatenate([[True], ends[:-1]])
    assert ends.sum() >= 5
    assert _runs_restart_every(actions, starts, 4)
    # ... and it is not simply one constant action: a fresh draw often differs
    changes = np.sum(actions[1:] != actions[:-1])
    assert changes > 300 / 4 / 4
    # with explore_hold = 1 consecutive random actions agree only about half of the time
    state1, _ = jax.jit(dqn.make_train(dataclasses.replace(cfg, explore_hold=1)))(jax.random.key(0))
    a1 = np.asarray(state1.buffer.data.action)
    assert 0.35 < np.mean(a1[1:] == a1[:-1]) < 0.65


@pytest.mark.slow
def test_ddpg_holds_warm_up_actions_for_noise_hold_steps():
    # only the uniform warm-up runs (learning_starts = total): actions held for 10 steps
    cfg = ddpg.DDPGConfig("MountainCarContinuous-v0", total_timesteps=200, buffer_capacity=200,
                          batch_size=32, learning_starts=200, noise_hold=10,
                          hidden=(16, 16))
    state, _ = jax.jit(ddpg.make_train(cfg))(jax.random.key(0))
    actions = np.asarray(state.buffer.data.action)[:, 0]
    blocks = actions.reshape(20, 10)  # no episode ends within 200 of its 999 steps
    np.testing.assert_array_equal(blocks, blocks[:, :1] * np.ones((1, 10)))
    assert len(np.unique(blocks[:, 0])) == 20
    assert actions.min() >= -1.0 and actions.max() <= 1.0


@pytest.mark.slow
def test_ddpg_holds_exploration_noise_after_warm_up():
    # a tiny actor step size keeps mu(s) almost fixed, so action - mu(s) is the held noise
    cfg = ddpg.DDPGConfig("Pendulum-v1", total_timesteps=160, buffer_capacity=160, batch_size=32,
                          learning_starts=32, noise_hold=8, expl_noise=0.05, hidden=(16, 16),
                          actor_lr=1e-9)
    state, _ = jax.jit(ddpg.make_train(cfg))(jax.random.key(1))
    policy = ddpg.make_policy(cfg)
    buf = state.buffer.data
    noise = np.asarray(buf.action - policy.apply(state.params, buf.obs))[32:160, 0]
    blocks = noise.reshape(16, 8)  # the count-down starts at step 0, so blocks align at 32
    np.testing.assert_allclose(blocks, blocks[:, :1] * np.ones((1, 8)), atol=1e-4)
    assert np.std(blocks[:, 0]) > 0.02  # std 0.05 x 2 N m = 0.1 N m


def test_obs_normalizer_maps_the_observation_box_onto_unit_interval():
    for name, low, high in [("MountainCar-v0", [-1.2, -0.07], [0.6, 0.07]),
                            ("Pendulum-v1", [-1.0, -1.0, -8.0], [1.0, 1.0, 8.0])]:
        f = common.obs_normalizer(name)
        np.testing.assert_allclose(f(jnp.asarray(low)), -1.0, atol=1e-6)
        np.testing.assert_allclose(f(jnp.asarray(high)), 1.0, atol=1e-6)
        mid = (np.asarray(low) + np.asarray(high)) / 2
        np.testing.assert_allclose(f(jnp.asarray(mid)), 0.0, atol=1e-6)
    with pytest.raises(ValueError, match="finite observation bounds"):
        common.obs_normalizer("CartPole-v1")  # unbounded velocities


def test_dqn_policy_sees_normalized_observations():
    cfg = dqn.DQNConfig("MountainCar-v0", normalize_obs=True, hidden=(8,))
    net = MLP((8,), 3, "relu", 1.0)
    params = net.init(jax.random.key(0), jnp.zeros((1, 2)))
    obs = jnp.asarray([[-0.5, 0.01], [0.3, -0.05]])
    scaled = (obs - jnp.asarray([-0.3, 0.0])) / jnp.asarray([0.9, 0.07])
    np.testing.assert_allclose(dqn.make_policy(cfg).apply(params, obs),
                               net.apply(params, scaled), rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_dqn_anneal_lr_reaches_zero_at_the_last_update():
    # The target copy at iteration 1998 holds the parameters before the last update (it
    # 1999), so |params - target| is the last Adam step: about lr with a constant step size,
    # about lr / 1,900 (the number of updates) when annealed.
    def last_step(anneal):
        cfg = dqn.DQNConfig("CartPole-v1", total_timesteps=2_000, num_envs=1,
                            learning_starts=100, batch_size=32, lr=1e-2,
                            target_update_interval=1_999, anneal_lr=anneal)
        train = jax.jit(dqn.make_train(cfg))
        state, metrics = train(jax.random.key(0))
        assert float(metrics["loss"][-1]) > 0  # the last iteration did update
        return max(float(jnp.max(jnp.abs(p - t))) for p, t in
                   zip(jax.tree.leaves(state.params), jax.tree.leaves(state.target_params),
                       strict=True))

    constant, annealed = last_step(False), last_step(True)
    assert constant > 1e-3
    assert 0 < annealed < 0.01 * constant, (constant, annealed)


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: dqn.DQNConfig("CartPole-v1", normalize_obs=True), "finite observation"),
        (lambda: dqn.DQNConfig(explore_hold=0), "explore_hold"),
        (lambda: dqn.DQNConfig(anneal_lr=1), "anneal_lr"),
        (lambda: ddpg.DDPGConfig(noise_hold=0), "noise_hold"),
        (lambda: ddpg.DDPGConfig(normalize_obs="yes"), "normalize_obs"),
    ],
)
def test_new_options_reject_bad_values(make, match):
    with pytest.raises(ValueError, match=match):
        make()
