"""The fast int8 path decides as its fake-quantized reference does, on trained policies.

Three briefly trained policies -- ActorQ's DQN on CartPole, ActorQ's D4PG on Pendulum and the
study task ``ppo-cartpole`` (:mod:`jaxrl_pim.rl.ppo`'s actor) -- each run greedily from fresh
episodes. The fast path's static activation scales are calibrated on the states of one set
of episodes; on the states of another set its greedy actions are compared with

* the fake-quantized reference: the same int8 weights and static activation scales in
  float32 arithmetic (:func:`jaxrl_pim.quant.fast_int8.reference_apply`): the same action
  on >= 99 % of the states (discrete), within 1 % of the action range (continuous);
* the weights-only fake-quantized policy (ActorQ: the dequantized int8 broadcast,
  ``actor_compute="float32"``; the study task: ``fake_quantize`` with the fast path's
  symmetric per-channel int8 weights), where the activations are not quantized: the PPO
  actions on >= 99 % of the states, the continuous D4PG actions within 2.5 % of the action
  range on >= 99 %; the DQN actions on >= 90 % (a briefly trained DQN nearly ties its two
  actions on most CartPole states -- gaps below 0.5 % of max|Q| --, so any rounding of the
  activations, per row as in :mod:`jaxrl_pim.quant.int8` or static, flips a few per cent).
"""

from __future__ import annotations

import functools

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl_pim.actorq.algorithms import make_agent
from jaxrl_pim.actorq.broadcast import actor_params, fast_int8_params
from jaxrl_pim.actorq.config import default_config
from jaxrl_pim.actorq.single import make_train
from jaxrl_pim.envs import make_with_info
from jaxrl_pim.quant import QuantSpec, fake_quantize
from jaxrl_pim.quant import fast_int8 as F
from jaxrl_pim.rl.evaluate import make_evaluate
from jaxrl_pim.rl.networks import ParametricPolicy
from jaxrl_pim.studies import TASKS, train_seeds

EPISODES = 16


def _visited(policy: ParametricPolicy, params, env_name: str, key: jax.Array) -> np.ndarray:
    """The states ``EPISODES`` greedy episodes of ``policy`` visit, ``(n, obs_dim)``."""
    out = jax.jit(make_evaluate(policy, env_name, EPISODES))(params, key)
    obs, mask = np.asarray(out.obs), np.asarray(out.mask) > 0
    return obs[mask]


def _actorq(algo: str, env_name: str, steps: int):
    cfg = default_config(algo, env_name, precision="fp32", total_timesteps=steps,
                         learning_starts=500, num_actors=4, hidden=(64, 64))
    _, _, info = make_with_info(env_name)
    agent = make_agent(cfg, info)
    state, _ = jax.jit(make_train(cfg))(jax.random.PRNGKey(0))
    return agent, info, agent.policy_params(state.learner)


def _agent_policy(agent, discrete: bool) -> ParametricPolicy:
    greedy = jax.vmap(agent.greedy, in_axes=(None, 0))
    return ParametricPolicy("categorical" if discrete else "deterministic",
                            lambda p, o: greedy(p, o), lambda a: a)


def _check(act_fast, act_ref, discrete: bool, span: float, share: float,
           tol: float = 0.01) -> None:
    """Discrete: equal actions on ``share`` of the states; continuous: within ``tol`` of
    the action range ``span`` on ``share`` of them."""
    a, b = np.asarray(act_fast), np.asarray(act_ref)
    same = a == b if discrete else np.all(np.abs(a - b) <= tol * span, axis=-1)
    assert np.mean(same) >= share, float(np.mean(same))


@pytest.mark.parametrize("algo,env_name,steps", [("dqn", "CartPole-v1", 4000),
                                                  ("d4pg", "Pendulum-v1", 1500)])
def test_actorq_fast_int8_actors_decide_as_the_references(algo, env_name, steps):
    agent, info, params = _actorq(algo, env_name, steps)
    weights_only = actor_params(params, "int8", "float32")  # the dequantized broadcast
    policy = _agent_policy(agent, info.discrete)
    calib = _visited(policy, weights_only, env_name, jax.random.PRNGKey(1))
    states = _visited(policy, weights_only, env_name, jax.random.PRNGKey(2))
    fast = jax.jit(functools.partial(fast_int8_params, agent.greedy))(
        actor_params(params, "int8", "native"), jnp.asarray(calib))
    assert isinstance(fast, F.Prepared)
    act = jax.jit(jax.vmap(agent.greedy, in_axes=(None, 0)))
    a_fast = act(fast, states)
    with nn.intercept_methods(_reference(fast)):  # the same layers in float32 arithmetic
        a_ref = act(fast, states)
    span = float(np.max(info.action_high - info.action_low)) if not info.discrete else 0.0
    _check(a_fast, a_ref, info.discrete, span, 0.99)
    _check(a_fast, act(weights_only, states), info.discrete, span,
           0.90 if info.discrete else 0.99, tol=0.025)


def _reference(prepared: F.Prepared):
    """An interceptor running ``prepared``'s layers with float32 products (the greedy
    functions call ``fast_int8.apply``; this swaps its exact int8 products for the float
    ones of :func:`fast_int8.reference_apply`)."""

    def interceptor(next_fun, args, kwargs, context):
        if isinstance(context.module, nn.Dense) and context.method_name == "__call__":
            path = "/".join(context.module.scope.path)
            layer = prepared.layers[path]
            y = F.layer_apply(layer, args[0], prepared.layout, exact=False)
            return y[..., :layer.width] if path == prepared.last else y
        return next_fun(*args, **kwargs)

    return interceptor


def test_study_task_fast_int8_decides_as_the_references():
    task = TASKS["ppo-cartpole"].scaled(0.2)
    state, _ = train_seeds(task, 1, jax.random.PRNGKey(3))
    params = jax.tree.map(lambda x: x[0], state.params)
    policy = task.policy()
    spec = QuantSpec("symmetric", 8, per_channel=True, include_biases=False)
    weights_only = fake_quantize(params, spec)  # the fast path's weight codes
    calib = _visited(policy, weights_only, task.config.env_name, jax.random.PRNGKey(4))
    states = _visited(policy, weights_only, task.config.env_name, jax.random.PRNGKey(5))
    ranges = F.calibrate(policy.apply, params, jnp.asarray(calib))
    prepared = F.prepare(params, ranges, **F.default_options())
    greedy = lambda q: np.argmax(np.asarray(q), -1)
    a_fast = greedy(jax.jit(functools.partial(F.apply, policy.apply))(prepared, states))
    a_ref = greedy(jax.jit(functools.partial(F.reference_apply, policy.apply))(prepared, states))
    _check(a_fast, a_ref, True, 0.0, 0.99)
    _check(a_fast, greedy(jax.jit(policy.apply)(weights_only, states)), True, 0.0, 0.99)
