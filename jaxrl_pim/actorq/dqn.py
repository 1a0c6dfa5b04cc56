"""DQN learner and epsilon-greedy actor (reference.md section 3, scaled down for CPU).

Full-precision learner: Adam, Huber TD loss weighted by prioritized-replay importance
weights, n-step targets ``r + discount * max_a Q_target(s', a)``, hard target copy every
``target_period`` updates, global-norm gradient clip. Actors act epsilon-greedily with
whatever (quantized) Q-network parameters they were last sent.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from jaxrl_pim.actorq.agent import Agent, EnvInfo
from jaxrl_pim.actorq.networks import QNetwork
from jaxrl_pim.actorq.replay import Transition
from jaxrl_pim.actorq.rules import huber


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
    net = QNetwork(tuple(config.hidden_sizes), info.num_actions)
    tx = optax.chain(
        optax.clip_by_global_norm(config.max_grad_norm), optax.adam(config.learning_rate)
    )

    def init(key: jax.Array) -> DQNState:
        params = net.init(key, jnp.zeros((info.obs_dim,), jnp.float32))
        return DQNState(params, params, tx.init(params), jnp.zeros((), jnp.int32))

    def loss_fn(params, target_params, batch: Transition, weights):
        q = net.apply(params, batch.obs)  # [B, A]
        q_a = jnp.take_along_axis(q, batch.action[:, None].astype(jnp.int32), axis=1)[:, 0]
        q_next = net.apply(target_params, batch.next_obs)
        target = batch.reward + batch.discount * jnp.max(q_next, axis=-1)
        td = jax.lax.stop_gradient(target) - q_a
        return jnp.mean(weights * huber(td)), td

    def update(state: DQNState, batch: Transition, weights: jax.Array):
        (loss, td), grads = jax.value_and_grad(loss_fn, has_aux=True)(
            state.params, state.target_params, batch, weights
        )
        updates, opt_state = tx.update(grads, state.opt_state, state.params)
        params = optax.apply_updates(state.params, updates)
        step = state.step + 1
        target = optax.periodic_update(params, state.target_params, step, config.target_period)
        return DQNState(params, target, opt_state, step), jnp.abs(td), {"loss": loss}

    def policy_params(state: DQNState) -> Any:
        return state.params

    def greedy(params: Any, obs: jax.Array) -> jax.Array:
        return jnp.argmax(net.apply(params, obs), axis=-1).astype(jnp.int32)

    def act(params: Any, obs: jax.Array, key: jax.Array, epsilon: jax.Array) -> jax.Array:
        k1, k2 = jax.random.split(key)
        explore = jax.random.uniform(k1) < epsilon
        random_a = jax.random.randint(k2, (), 0, info.num_actions, dtype=jnp.int32)
        return jnp.where(explore, random_a, greedy(params, obs))

    return Agent(init, update, policy_params, act, greedy, jnp.zeros((), jnp.int32))
