"""The one environment factory (jaxrl_pim.envs.make / describe) as rl, ActorQ and the studies
use it: names of every kind, a user's environment object, and what the learners accept."""

from __future__ import annotations

import gymnax
import jax
import numpy as np
import pytest

from jaxrl_pim import envs
from jaxrl_pim.actorq.config import default_config
from jaxrl_pim.rl import DDPGConfig, DQNConfig, make_evaluate
from jaxrl_pim.rl import dqn as dqn_lib
from jaxrl_pim.rl.networks import ParametricPolicy


def test_make_takes_names_objects_and_pairs():
    env, params = envs.make("Acrobot-v1")
    ref_env, ref_params = gymnax.make("Acrobot-v1")
    assert type(env) is type(ref_env) and type(params) is type(ref_params)
    assert params.max_steps_in_episode == ref_params.max_steps_in_episode
    taxi, taxi_params = envs.make("taxi")
    assert isinstance(taxi, envs.Taxi) and taxi_params.max_steps_in_episode == 200
    made, made_params = envs.make(ref_env)
    assert made is ref_env and made_params.max_steps_in_episode == 500
    custom = ref_params.replace(max_steps_in_episode=50)
    made, made_params = envs.make((ref_env, custom))
    assert made is ref_env and made_params is custom
    with pytest.raises(ValueError, match="unknown environment 'pong'.*frozenlake.*gymnax"):
        envs.make("pong")
    with pytest.raises(ValueError, match="no keyword arguments"):
        envs.make(ref_env, is_slippery=True)
    with pytest.raises(ValueError, match="environment object"):
        envs.make(42)


@pytest.mark.parametrize("name", ["CartPole-v1", "Pendulum-v1", "Reacher-misc", "Catch-bsuite"])
def test_describe_matches_the_gymnax_spaces(name):
    env, params, info = envs.make_with_info(name)
    obs_space, act_space = env.observation_space(params), env.action_space(params)
    assert info.name == name and info.obs_shape == tuple(obs_space.shape)
    assert info.obs_dim == int(np.prod(obs_space.shape))
    assert info.max_steps == params.max_steps_in_episode
    if hasattr(act_space, "n"):
        assert info.discrete and info.num_actions == act_space.n and info.action_dim == 0
    else:
        assert not info.discrete and info.action_dim == act_space.shape[0]
        assert info.action_low == float(np.min(act_space.low))
        assert info.action_high == float(np.max(act_space.high))


@pytest.mark.slow
def test_learners_accept_any_flat_gymnax_task():
    cfg = DQNConfig("UmbrellaChain-bsuite", total_timesteps=1_200, learning_starts=500)
    train = jax.jit(dqn_lib.make_train(cfg))
    state, metrics = train(jax.random.key(0))
    assert np.isfinite(np.asarray(metrics["loss"])).all() and metrics["episodes"].sum() > 0
    assert DDPGConfig("Reacher-misc").env_name == "Reacher-misc"
    assert default_config("d4pg", "Reacher-misc").env_name == "Reacher-misc"
    with pytest.raises(ValueError, match="env_name 'Catch-bsuite' has observations of shape"):
        DQNConfig("Catch-bsuite")
    with pytest.raises(ValueError, match="env_name 'Reacher-misc' has continuous actions"):
        default_config("dqn", "Reacher-misc")


def test_make_evaluate_takes_an_environment_object_and_a_step_cap():
    env, params = gymnax.make("CartPole-v1")
    policy = ParametricPolicy("categorical", lambda p, obs: obs @ p, lambda q: q.argmax(-1))
    w = np.array([[0.0, 0.0], [0.0, 0.1], [-1.0, 1.0], [-0.5, 0.5]], np.float32)
    by_name = jax.jit(make_evaluate(policy, "CartPole-v1", 2, max_steps=40))(w, jax.random.key(1))
    by_obj = jax.jit(make_evaluate(policy, env, 2, max_steps=40))(w, jax.random.key(1))
    np.testing.assert_array_equal(by_name.returns, by_obj.returns)
    assert by_obj.obs.shape == (40, 2, 4)
    np.testing.assert_array_equal(by_obj.returns, by_obj.mask.sum(0))  # reward 1 per step
    with pytest.raises(ValueError, match="max_steps"):
        make_evaluate(policy, env, 2, max_steps=0)
