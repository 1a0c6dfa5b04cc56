"""ActorQ's DQN learner and epsilon-greedy actor, built on the library's DQN
(:mod:`jaxrl_pim.rl.dqn`).

Full-precision learner: Adam, the DQN loss of :func:`jaxrl_pim.rl.dqn.dqn_loss` (Huber TD
loss weighted by prioritized-replay importance weights, targets ``r + discount * max_a
Q_target(s', a)`` on n-step transitions), hard target copy every ``target_update_interval``
learner updates, global-norm gradient clip. The Q-network is
:func:`jaxrl_pim.rl.networks.q_network`.
What differs from :func:`jaxrl_pim.rl.dqn.make_train` is the loop around it: actors act
epsilon-greedily with whatever (quantized) Q-network parameters they were last sent --
int8 kernels run int8 matmuls (:func:`jaxrl_pim.quant.compute.policy_apply`) -- and the
target copy counts learner updates rather than environment iterations.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from jaxrl_pim.actorq.agent import Agent, EnvInfo
from jaxrl_pim.quant.compute import policy_apply
from jaxrl_pim.replay import NStepTransition
from jaxrl_pim.rl.dqn import dqn_loss
from jaxrl_pim.rl.networks import q_network


class DQNState(NamedTuple):
    """Learner state: online and target Q parameters, optimizer state, update count."""

    params: Any
    target_params: Any
    opt_state: Any
    step: jax.Array


def make_dqn(config: Any, info: EnvInfo) -> Agent:
    """DQN ``Agent`` for a discrete-action task."""
    if not info.discrete:
        raise ValueError(f"DQN needs a discrete-action task; {info.name} is continuous")
    net = q_network(config.hidden, info.num_actions)
    tx = optax.chain(
        optax.clip_by_global_norm(config.max_grad_norm), optax.adam(config.lr)
    )

    def init(key: jax.Array) -> DQNState:
        params = net.init(key, jnp.zeros((info.obs_dim,), jnp.float32))
        return DQNState(params, params, tx.init(params), jnp.zeros((), jnp.int32))

    def update(state: DQNState, batch: NStepTransition, weights: jax.Array):
        (loss, td), grads = jax.value_and_grad(dqn_loss, argnums=1, has_aux=True)(
            net.apply, state.params, state.target_params, batch, weights
        )
        updates, opt_state = tx.update(grads, state.opt_state, state.params)
        params = optax.apply_updates(state.params, updates)
        step = state.step + 1
        target = optax.periodic_update(params, state.target_params, step,
                                       config.target_update_interval)
        return DQNState(params, target, opt_state, step), jnp.abs(td), {"loss": loss}

    def policy_params(state: DQNState) -> Any:
        return state.params

    def greedy(params: Any, obs: jax.Array) -> jax.Array:
        # the actor's (possibly int8 / float16) parameters compute in their own precision
        return jnp.argmax(policy_apply(net, params, obs), axis=-1).astype(jnp.int32)

    def act(params: Any, obs: jax.Array, key: jax.Array, epsilon: jax.Array) -> jax.Array:
        k1, k2 = jax.random.split(key)
        explore = jax.random.uniform(k1) < epsilon
        random_a = jax.random.randint(k2, (), 0, info.num_actions, dtype=jnp.int32)
        return jnp.where(explore, random_a, greedy(params, obs))

    return Agent(init, update, policy_params, act, greedy, jnp.zeros((), jnp.int32))
