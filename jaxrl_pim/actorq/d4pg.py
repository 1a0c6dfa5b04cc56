"""D4PG learner and Gaussian-noise actor (sizes configurable; networks from
:mod:`jaxrl_pim.rl.networks`). D4PG: Barth-Maron et al., "Distributed Distributional
Deterministic Policy Gradients", ICLR 2018.

Critic: layer-norm MLP with a ``num_atoms`` categorical head on ``[v_min, v_max]``, trained
with cross-entropy to the n-step target distribution ``r + discount * z`` of the target
networks, projected back on the support (``categorical_l2_project``). Policy: tanh MLP,
trained to maximise the critic's mean value. Adam for both, global-norm clip, hard target
copies every ``target_update_interval`` learner updates. The policy network is what is
broadcast; actors run it in the precision they hold it in
(:func:`jaxrl_pim.quant.compute.policy_apply`).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from jaxrl_pim.actorq.agent import Agent, EnvInfo
from jaxrl_pim.actorq.rules import categorical_l2_project
from jaxrl_pim.quant.compute import policy_apply
from jaxrl_pim.replay import NStepTransition
from jaxrl_pim.rl.networks import D4PGActor, DistributionalCritic


class D4PGState(NamedTuple):
    """Learner state: policy/critic parameters, their targets, optimizer states, count."""

    policy: Any
    critic: Any
    target_policy: Any
    target_critic: Any
    policy_opt: Any
    critic_opt: Any
    step: jax.Array


def make_d4pg(config: Any, info: EnvInfo) -> Agent:
    """D4PG ``Agent`` for a continuous-action task."""
    if info.discrete:
        raise ValueError(f"D4PG needs a continuous-action task; {info.name} is discrete")
    policy_net = D4PGActor(tuple(config.hidden), info.action_dim)
    critic_net = DistributionalCritic(tuple(config.critic_hidden), config.num_atoms)
    atoms = jnp.linspace(config.v_min, config.v_max, config.num_atoms, dtype=jnp.float32)
    p_lr = config.lr if config.policy_lr is None else config.policy_lr
    tx = optax.chain(
        optax.clip_by_global_norm(config.max_grad_norm), optax.adam(config.lr)
    )
    p_tx = optax.chain(optax.clip_by_global_norm(config.max_grad_norm), optax.adam(p_lr))
    half = 0.5 * (info.action_high - info.action_low)
    mid = 0.5 * (info.action_high + info.action_low)
    project = jax.vmap(categorical_l2_project, in_axes=(0, 0, None))

    def init(key: jax.Array) -> D4PGState:
        kp, kc = jax.random.split(key)
        obs = jnp.zeros((info.obs_dim,), jnp.float32)
        act = jnp.zeros((info.action_dim,), jnp.float32)
        pp = policy_net.init(kp, obs)
        cp = critic_net.init(kc, obs, act)
        return D4PGState(pp, cp, pp, cp, p_tx.init(pp), tx.init(cp), jnp.zeros((), jnp.int32))

    def critic_loss(cp, state: D4PGState, batch: NStepTransition):
        next_a = policy_net.apply(state.target_policy, batch.next_obs)
        next_probs = jax.nn.softmax(critic_net.apply(state.target_critic, batch.next_obs, next_a))
        z_target = batch.reward[:, None] + batch.discount[:, None] * atoms[None, :]
        target = jax.lax.stop_gradient(project(z_target, next_probs, atoms))
        logits = critic_net.apply(cp, batch.obs, batch.action)
        ce = -jnp.sum(target * jax.nn.log_softmax(logits), axis=-1)
        return jnp.mean(ce), ce

    def policy_loss(pp, cp, batch: NStepTransition):
        a = policy_net.apply(pp, batch.obs)
        probs = jax.nn.softmax(critic_net.apply(cp, batch.obs, a))
        return -jnp.mean(probs @ atoms)

    def update(state: D4PGState, batch: NStepTransition, weights: jax.Array):
        del weights  # uniform replay
        batch = batch._replace(action=(batch.action - mid) / half)  # learner works in [-1, 1]
        (c_loss, ce), c_grads = jax.value_and_grad(critic_loss, has_aux=True)(
            state.critic, state, batch
        )
        p_loss, p_grads = jax.value_and_grad(policy_loss)(state.policy, state.critic, batch)
        c_upd, c_opt = tx.update(c_grads, state.critic_opt, state.critic)
        p_upd, p_opt = p_tx.update(p_grads, state.policy_opt, state.policy)
        critic = optax.apply_updates(state.critic, c_upd)
        policy = optax.apply_updates(state.policy, p_upd)
        step = state.step + 1
        period = config.target_update_interval
        t_pol = optax.periodic_update(policy, state.target_policy, step, period)
        t_cri = optax.periodic_update(critic, state.target_critic, step, period)
        new = D4PGState(policy, critic, t_pol, t_cri, p_opt, c_opt, step)
        return new, ce, {"loss": c_loss, "policy_loss": p_loss}

    def policy_params(state: D4PGState) -> Any:
        return state.policy

    # actors run the policy in the precision they hold it in (int8 kernels: int8 matmuls)
    def greedy(params: Any, obs: jax.Array) -> jax.Array:
        return mid + half * policy_apply(policy_net, params, obs)

    def act(params: Any, obs: jax.Array, key: jax.Array, noise: jax.Array) -> jax.Array:
        a = policy_apply(policy_net, params, obs)
        a = a + noise * jax.random.normal(key, a.shape, a.dtype)
        return mid + half * jnp.clip(a, -1.0, 1.0)

    return Agent(init, update, policy_params, act, greedy,
                 jnp.zeros((info.action_dim,), jnp.float32))
