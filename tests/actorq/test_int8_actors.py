"""int8 actors compute in int8 and stay within the derived bound of the dequantized policy.

For ActorQ's DQN Q-network and D4PG policy (with weights moved away from their
initialisation, so the outputs are not near-ties of a fresh network) on states the actors
visit: the compiled actor program holds ``int8 x int8 -> int32`` dot products; every output
is within :func:`jaxrl_pim.quant.compute.int8_error_bound` (recomputed here from the layers)
of the dequantized (float32) policy; greedy actions agree on >= 99 % of the states, and on
every state whose margin exceeds twice the bound. The bound is a worst case; the typical
error matches the model of independent roundings (:func:`~jaxrl_pim.quant.compute.
int8_error_rms`) within a factor of about 2.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl_pim.actorq.algorithms import make_agent
from jaxrl_pim.actorq.broadcast import actor_params
from jaxrl_pim.actorq.config import default_config
from jaxrl_pim.envs import make_with_info
from jaxrl_pim.quant import QTensor
from jaxrl_pim.quant.compute import dequantized, int8_error_bound, int8_error_rms, policy_apply
from jaxrl_pim.rl.networks import D4PGActor, q_network


def _visited_states(env_name: str, n: int, key: jax.Array) -> np.ndarray:
    """``n`` observations from uniform-random play (auto-reset), as the actors see them."""
    env, params, info = make_with_info(env_name)

    def body(carry, k):
        obs, state = carry
        ka, ks = jax.random.split(k)
        if info.discrete:
            a = jax.random.randint(ka, (), 0, info.num_actions)
        else:
            a = jax.random.uniform(ka, (info.action_dim,), minval=info.action_low,
                                   maxval=info.action_high)
        obs2, state2, *_ = env.step(ks, state, a, params)
        return (obs2, state2), obs

    k0, k1 = jax.random.split(key)
    obs, state = env.reset(k0, params)
    _, xs = jax.jit(lambda c: jax.lax.scan(body, c, jax.random.split(k1, n)))((obs, state))
    return np.asarray(xs, np.float32)


def _perturbed(params, key, scale=0.3):
    """Weights moved away from initialisation (a trained network's spread of values)."""
    leaves, treedef = jax.tree.flatten(params)
    keys = jax.random.split(key, len(leaves))
    return jax.tree.unflatten(treedef, [
        x + scale * jnp.std(x + 1e-3) * jax.random.normal(k, x.shape)
        for x, k in zip(leaves, keys, strict=True)])


def _layers(params):
    dense = params["params"]
    names = sorted(dense, key=lambda n: int(n.rsplit("_", 1)[1]))
    return [np.asarray(dense[n]["kernel"], np.float64) for n in names], \
        [np.asarray(dense[n]["bias"], np.float64) for n in names]


def _float_activations(kernels, biases, obs):
    """Layer inputs of the dequantized ReLU MLP (float64)."""
    xs, x = [], obs.astype(np.float64)
    for i, (w, b) in enumerate(zip(kernels, biases, strict=True)):
        xs.append(x)
        x = x @ w + b
        if i < len(kernels) - 1:
            x = np.maximum(x, 0.0)
    return xs


@pytest.mark.parametrize("algo,env_name,hidden", [
    ("dqn", "CartPole-v1", (64, 64)),
    ("dqn", "Acrobot-v1", (128, 128)),
    ("d4pg", "Pendulum-v1", (256, 256)),
])
def test_int8_actor_matches_dequantized_policy_within_bound(algo, env_name, hidden):
    cfg = default_config(algo, env_name, hidden=hidden, precision="int8")
    _, _, info = make_with_info(env_name)
    agent = make_agent(cfg, info)
    params = _perturbed(agent.policy_params(agent.init(jax.random.PRNGKey(0))),
                        jax.random.PRNGKey(1))
    held = actor_params(params, "int8", "native")
    kernels = [x for x in jax.tree.leaves(held, is_leaf=lambda x: isinstance(x, QTensor))
               if isinstance(x, QTensor)]
    assert len(kernels) == len(hidden) + 1 and all(k.codes.dtype == jnp.int8 for k in kernels)
    deq = dequantized(held)
    obs = _visited_states(env_name, 1000, jax.random.PRNGKey(2))

    net = q_network(hidden, info.num_actions) if algo == "dqn" else D4PGActor(
        hidden, info.action_dim)
    int8_apply = jax.jit(lambda p, x: policy_apply(net, p, x))
    hlo = int8_apply.lower(held, obs).as_text()
    assert hlo.count("xi8>) -> tensor<") >= len(hidden) + 1  # int8 x int8 dot_generals
    assert "xi32>" in hlo
    y8 = np.asarray(int8_apply(held, obs), np.float64)
    y32 = np.asarray(jax.jit(net.apply)(deq, obs), np.float64)

    kernels_f, biases = _layers(deq)
    # D4PGActor ends with tanh, 1-Lipschitz: the pre-tanh bound holds after it too
    bound = int8_error_bound(kernels_f, _float_activations(kernels_f, biases, obs))
    diff = np.abs(y8 - y32)
    assert np.all(diff <= bound), float(np.max(diff / bound))
    # the worst case aligns every rounding error; the typical error is far smaller, and the
    # model of independent roundings predicts its size (ReLU zeroes some: below the model)
    assert np.max(diff / bound) < 0.2
    rms = np.sqrt(np.mean(diff**2))
    predicted = int8_error_rms(kernels_f, _float_activations(kernels_f, biases, obs))
    assert 0.3 * predicted < rms < 1.2 * predicted, (rms, predicted)
    assert np.max(diff) > 0  # the int8 path really differs from the float32 one

    if algo == "dqn":
        a8, a32 = y8.argmax(-1), y32.argmax(-1)
        top2 = np.sort(y32, axis=-1)[:, -2:]
        clear = (top2[:, 1] - top2[:, 0]) > 2 * bound.max(axis=-1)
        assert np.mean(a8 == a32) >= 0.99
        assert np.all(a8[clear] == a32[clear])
        # and the agent's own greedy function runs the same int8 program
        greedy = jax.jit(jax.vmap(agent.greedy, in_axes=(None, 0)))(held, obs)
        np.testing.assert_array_equal(np.asarray(greedy), a8)
    else:
        # actions in [-1, 1] after tanh: the same bound holds (tanh is 1-Lipschitz)
        act8 = np.asarray(jax.jit(jax.vmap(agent.greedy, in_axes=(None, 0)))(held, obs))
        act32 = np.asarray(jax.jit(jax.vmap(agent.greedy, in_axes=(None, 0)))(deq, obs))
        half = 0.5 * (info.action_high - info.action_low)
        assert np.all(np.abs(act8 - act32) <= half * bound + 1e-6)
