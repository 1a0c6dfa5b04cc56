"""A2C (synchronous advantage actor-critic) on gymnax, fully jitted.

Each update rolls out ``num_steps`` in ``num_envs`` environments, computes advantages with
GAE (``gae_lambda = 1`` gives plain n-step returns) and takes one gradient step on
``-mean(log pi(a|s) A) + vf_coef * 0.5 * mean((V - R)^2) - ent_coef * entropy``. Actor and
critic are separate MLPs; ``state.params`` are the policy's parameters. Discrete actions use
a categorical policy, continuous ones a diagonal Gaussian.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import optax

from jaxrl_pim.envs.factory import make
from jaxrl_pim.rl import actor_critic, common
from jaxrl_pim.rl.configs import A2CConfig  # the learner's config, re-exported
from jaxrl_pim.rl.networks import ParametricPolicy
from jaxrl_pim.rl.ppo import gae_advantages


class A2CState(actor_critic.ActorCriticState):
    """Final A2C training state (:class:`~jaxrl_pim.rl.actor_critic.ActorCriticState`);
    ``params`` are the policy's parameters."""

    __slots__ = ()


def policy_gradient_loss(log_probs: jax.Array, advantages: jax.Array) -> jax.Array:
    """``-mean(log_probs * advantages)`` with the advantages treated as constants."""
    return -jnp.mean(log_probs * jax.lax.stop_gradient(advantages))


def make_policy(config: A2CConfig) -> ParametricPolicy:
    """Categorical logits (discrete) or Gaussian ``(mean, log_std)`` (continuous)."""
    return actor_critic.make_policy(config.env_name, config.hidden, config.activation)


def make_train(
    config: A2CConfig, callback: Callable[..., None] | None = None
) -> Callable[[jax.Array], tuple[A2CState, dict[str, jax.Array]]]:
    """Build ``train(key) -> (state, metrics)``; pure, jittable and vmappable over keys.

    ``metrics`` arrays are ``[num_updates]``: ``episode_return``, ``episodes``,
    ``policy_loss``, ``value_loss``, ``entropy``.
    """
    env, env_params = make(config.env_name)
    ac = actor_critic.make_actor_critic(config.env_name, config.hidden, config.activation)
    num_updates = config.num_updates
    qat_start = int(config.qat.delay_fraction * num_updates) if config.qat else 0
    tx = optax.chain(optax.clip_by_global_norm(config.max_grad_norm), optax.adam(config.lr))

    def train(key: jax.Array) -> tuple[A2CState, dict[str, jax.Array]]:
        key, k_actor, k_critic, k_env = jax.random.split(key, 4)
        params, critic_params = ac.init(k_actor, k_critic)
        obs, env_state = common.vmap_reset(env, env_params, k_env, config.num_envs)

        def update(st: A2CState, update_idx):
            act_params = common.qat_params(st.params, config.qat, update_idx, qat_start)
            st, traj = ac.rollout(env, env_params, config.num_steps, config.gamma, act_params, st)
            values = ac.value(st.critic_params, traj.obs)
            last_value = ac.value(st.critic_params, st.obs)
            adv, returns = gae_advantages(
                traj.reward, values, traj.done, last_value, config.gamma, config.gae_lambda
            )

            def loss_fn(both):
                p, cp = both
                p = common.qat_params(p, config.qat, update_idx, qat_start)
                logp, ent = ac.log_prob_entropy(p, traj.obs, traj.action)
                pl = policy_gradient_loss(logp, adv)
                v = ac.value(cp, traj.obs)
                vl = 0.5 * jnp.mean((v - jax.lax.stop_gradient(returns)) ** 2)
                return pl + config.vf_coef * vl - config.ent_coef * ent.mean(), (pl, vl,
                                                                                  ent.mean())

            both = (st.params, st.critic_params)
            grads, (pl, vl, ent) = jax.grad(loss_fn, has_aux=True)(both)
            upd, opt_state = tx.update(grads, st.opt_state, both)
            params, critic_params = optax.apply_updates(both, upd)
            metrics = actor_critic.rollout_metrics(traj, pl, vl, ent)
            common.maybe_callback(callback, update_idx + 1, num_updates, metrics)
            return st._replace(params=params, critic_params=critic_params,
                               opt_state=opt_state), metrics

        state = A2CState(params, critic_params, tx.init((params, critic_params)), env_state,
                         obs, common.init_stats(config.num_envs), key)
        return jax.lax.scan(update, state, jnp.arange(num_updates))

    return train
