"""Single-program ActorQ: DQN learns CartPole; D4PG runs; configs reject bad input."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl_pim.actorq.config import ActorQConfig, default_config
from jaxrl_pim.actorq.single import episode_returns, make_system, make_train


def test_dqn_int8_actors_learn_cartpole_above_random_vmapped_over_seeds():
    cfg = default_config("dqn", "CartPole-v1", precision="int8", num_actors=4,
                         total_steps=10_000, learning_starts=500, epsilon_decay_steps=3_000,
                         actor_update_period=50, hidden_sizes=(64, 64), eval_episodes=8)
    system = make_system(cfg)
    train = make_train(cfg)

    def run(key):
        state, metrics = train(key)
        return state, metrics, system.evaluate(state.actor_params, jax.random.fold_in(key, 7))

    keys = jax.random.split(jax.random.PRNGKey(0), 2)
    state, metrics, trained = jax.jit(jax.vmap(run))(keys)
    assert metrics["loss"].shape == (2, cfg.num_iterations)
    w = jax.tree.leaves(state.learner.params)[0]
    assert not np.allclose(w[0], w[1])  # independent seeds
    for s in range(2):
        returns = episode_returns(jax.tree.map(lambda x, s=s: x[s], metrics))
        assert returns.size > 50
        assert int(state.learner.step[s]) > 2_000
        # uniformly random CartPole play lasts about 22 steps; the greedy int8 policy must
        # balance far longer, and the actors' own returns must have grown during training
        assert float(trained[s]) > 100.0, (float(trained[s]), returns[-10:])
        assert np.mean(returns[-10:]) > 3 * np.mean(returns[:10])


def test_d4pg_pendulum_runs_and_stays_finite():
    cfg = default_config("d4pg", "Pendulum-v1", precision="fp16", num_actors=2,
                         total_steps=400, learning_starts=64, batch_size=32,
                         hidden_sizes=(16,), critic_hidden_sizes=(16, 16),
                         actor_update_period=20, buffer_size=512)
    state, metrics = jax.jit(make_train(cfg))(jax.random.PRNGKey(1))
    loss = np.asarray(metrics["loss"])[np.asarray(metrics["learned"])]
    assert loss.size > 50 and np.all(np.isfinite(loss))
    # Pendulum returns are <= 0 and episodes last 200 steps: 2 actors x 200 iterations -> 2
    ret = episode_returns(metrics)
    assert ret.size == 2 and np.all(ret <= 0)
    for leaf in jax.tree.leaves(state.learner.critic):
        assert bool(jnp.all(jnp.isfinite(leaf)))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(precision="int4"), "precision"),
        (dict(algo="d4pg", env_name="CartPole-v1"), "env_name"),
        (dict(algo="dqn", env_name="Pendulum-v1"), "env_name"),
        (dict(num_actors=0), "num_actors"),
        (dict(actor_update_period=0), "actor_update_period"),
        (dict(gamma=1.5), "gamma"),
        (dict(batch_size=64, buffer_size=32), "buffer_size"),
        (dict(hidden_sizes=[64]), "hidden_sizes"),
        (dict(v_min=10.0, v_max=-10.0), "v_max"),
        (dict(num_actors=8, total_steps=4), "total_steps"),
    ],
)
def test_config_rejects_bad_values(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ActorQConfig(**kwargs)


def test_default_config_applies_algorithm_defaults():
    d = default_config("d4pg")
    assert (d.env_name, d.n_step, d.batch_size, d.learning_rate, d.max_grad_norm) == (
        "Pendulum-v1", 5, 256, 1e-4, 40.0)
    assert (d.num_atoms, d.v_min, d.v_max, d.target_period, d.prioritized) == (
        51, -150.0, 150.0, 100, False)
    q = default_config("dqn", "Acrobot-v1")
    assert (q.per_alpha, q.per_beta, q.epsilon, q.learning_rate, q.n_step) == (
        0.6, 0.2, 0.05, 1e-3, 1)
