"""PPO (clipped surrogate, GAE) on gymnax, fully jitted, in one readable training function.

Discrete environments use a categorical policy; continuous ones a diagonal Gaussian with a
state-independent log-std (actions are clipped to the bounds when stepping the env, the
log-probability is of the unclipped sample). Actor and critic are separate MLPs, so
``state.params`` is exactly the policy's parameters.

Usage::

    cfg = PPOConfig(env_name="CartPole-v1", total_timesteps=100_000)
    state, metrics = jax.jit(make_train(cfg))(jax.random.key(0))
    policy = make_policy(cfg)            # policy.apply(state.params, obs) -> logits
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import optax

from jaxrl_pim.envs.factory import make
from jaxrl_pim.rl import actor_critic, common
from jaxrl_pim.rl.configs import PPOConfig  # the learner's config, re-exported
from jaxrl_pim.rl.networks import ParametricPolicy


class PPOState(actor_critic.ActorCriticState):
    """Final PPO training state (:class:`~jaxrl_pim.rl.actor_critic.ActorCriticState`);
    ``params`` are the policy's parameters."""

    __slots__ = ()


def gae_advantages(
    rewards: jax.Array,
    values: jax.Array,
    dones: jax.Array,
    last_value: jax.Array,
    gamma: float,
    gae_lambda: float,
) -> tuple[jax.Array, jax.Array]:
    """Generalised advantage estimates over a rollout, time axis first.

    Args:
      rewards, values, dones: ``[T, ...]``; ``dones[t]`` is true when the episode ended at
        step t (so ``values[t + 1]`` belongs to a new episode and is not bootstrapped).
      last_value: ``V(s_T)`` ``[...]`` for the observation after the rollout.
    Returns:
      ``(advantages, returns)``, each ``[T, ...]``; ``returns = advantages + values``.
    """
    if rewards.shape != values.shape or rewards.shape != dones.shape:
        raise ValueError(
            f"rewards {rewards.shape}, values {values.shape}, dones {dones.shape} must match"
        )
    next_values = jnp.concatenate([values[1:], last_value[None]], axis=0)
    not_done = 1.0 - dones.astype(jnp.float32)
    deltas = rewards + gamma * next_values * not_done - values

    def body(gae, xs):
        delta, nd = xs
        gae = delta + gamma * gae_lambda * nd * gae
        return gae, gae

    _, adv = jax.lax.scan(body, jnp.zeros_like(last_value), (deltas, not_done), reverse=True)
    return adv, adv + values


def clipped_surrogate_loss(
    log_ratio: jax.Array, advantages: jax.Array, clip_eps: float
) -> jax.Array:
    """PPO policy loss ``-mean(min(r A, clip(r, 1 - eps, 1 + eps) A))``, ``r = exp(log_ratio)``."""
    ratio = jnp.exp(log_ratio)
    unclipped = ratio * advantages
    clipped = jnp.clip(ratio, 1.0 - clip_eps, 1.0 + clip_eps) * advantages
    return -jnp.mean(jnp.minimum(unclipped, clipped))


def clipped_value_loss(
    values: jax.Array, old_values: jax.Array, returns: jax.Array, clip_eps: float
) -> jax.Array:
    """``0.5 * mean(max((V - R)^2, (V_old + clip(V - V_old, -eps, eps) - R)^2))``."""
    clipped = old_values + jnp.clip(values - old_values, -clip_eps, clip_eps)
    return 0.5 * jnp.mean(jnp.maximum((values - returns) ** 2, (clipped - returns) ** 2))


def make_policy(config: PPOConfig) -> ParametricPolicy:
    """The trained policy's pure functions (categorical logits or Gaussian ``(mean, log_std)``)."""
    return actor_critic.make_policy(config.env_name, config.hidden, config.activation)


def make_train(
    config: PPOConfig, callback: Callable[..., None] | None = None
) -> Callable[[jax.Array], tuple[PPOState, dict[str, jax.Array]]]:
    """Build ``train(key) -> (state, metrics)``; pure, jittable and vmappable over keys.

    ``metrics`` arrays are ``[num_updates]``: ``episode_return`` (mean undiscounted return of
    episodes finished during the rollout, NaN if none), ``episodes`` (their count),
    ``policy_loss``, ``value_loss``, ``entropy``, ``approx_kl``. ``callback(step, total,
    metrics)`` is an opt-in host progress hook.
    """
    env, env_params = make(config.env_name)
    ac = actor_critic.make_actor_critic(config.env_name, config.hidden, config.activation)
    num_updates = config.num_updates
    qat_start = int(config.qat.delay_fraction * num_updates) if config.qat else 0
    steps_per_update = config.update_epochs * config.num_minibatches

    def schedule(count):
        frac = 1.0 - (count // steps_per_update) / num_updates
        return config.lr * frac if config.anneal_lr else config.lr

    tx = optax.chain(
        optax.clip_by_global_norm(config.max_grad_norm), optax.adam(schedule, eps=1e-5)
    )

    def train(key: jax.Array) -> tuple[PPOState, dict[str, jax.Array]]:
        key, k_actor, k_critic, k_env = jax.random.split(key, 4)
        params, critic_params = ac.init(k_actor, k_critic)
        opt_state = tx.init((params, critic_params))
        obs, env_state = common.vmap_reset(env, env_params, k_env, config.num_envs)

        def update(st: PPOState, update_idx):
            act_params = common.qat_params(st.params, config.qat, update_idx, qat_start)

            # 1. Roll out num_steps in every env with the current (possibly fake-quantized) policy.
            st, traj = ac.rollout(env, env_params, config.num_steps, config.gamma, act_params, st)
            last_value = ac.value(st.critic_params, st.obs)
            adv, returns = gae_advantages(
                traj.reward, traj.value, traj.done, last_value, config.gamma, config.gae_lambda
            )

            # 2. Several epochs of minibatch updates on the flattened rollout.
            batch = jax.tree.map(
                lambda x: x.reshape((-1,) + x.shape[2:]),
                (traj.obs, traj.action, traj.logp, traj.value, adv, returns),
            )

            def loss_fn(both, mb):
                p, cp = both
                m_obs, m_action, m_logp, m_value, m_adv, m_ret = mb
                p = common.qat_params(p, config.qat, update_idx, qat_start)
                logp, entropy = ac.log_prob_entropy(p, m_obs, m_action)
                m_adv = (m_adv - m_adv.mean()) / (m_adv.std() + 1e-8)
                log_ratio = logp - m_logp
                pl = clipped_surrogate_loss(log_ratio, m_adv, config.clip_eps)
                value = ac.value(cp, m_obs)
                vl = clipped_value_loss(value, m_value, m_ret, config.clip_eps)
                ent = entropy.mean()
                loss = pl + config.vf_coef * vl - config.ent_coef * ent
                approx_kl = jnp.mean(jnp.exp(log_ratio) - 1.0 - log_ratio)
                return loss, (pl, vl, ent, approx_kl)

            def epoch(carry, _):
                params, critic_params, opt_state, key = carry
                key, k_perm = jax.random.split(key)
                perm = jax.random.permutation(k_perm, config.num_envs * config.num_steps)
                mbs = jax.tree.map(
                    lambda x: x[perm].reshape(
                        (config.num_minibatches, config.minibatch_size) + x.shape[1:]
                    ),
                    batch,
                )

                def minibatch(carry, mb):
                    both, opt_state = carry
                    grads, aux = jax.grad(loss_fn, has_aux=True)(both, mb)
                    upd, opt_state = tx.update(grads, opt_state, both)
                    return (optax.apply_updates(both, upd), opt_state), aux

                ((params, critic_params), opt_state), aux = jax.lax.scan(
                    minibatch, ((params, critic_params), opt_state), mbs
                )
                return (params, critic_params, opt_state, key), aux

            (params, critic_params, opt_state, key), aux = jax.lax.scan(
                epoch, (st.params, st.critic_params, st.opt_state, st.key), None,
                config.update_epochs,
            )
            pl, vl, ent, kl = jax.tree.map(jnp.mean, aux)
            metrics = {**actor_critic.rollout_metrics(traj, pl, vl, ent), "approx_kl": kl}
            common.maybe_callback(callback, update_idx + 1, num_updates, metrics)
            return st._replace(params=params, critic_params=critic_params, opt_state=opt_state,
                               key=key), metrics

        state = PPOState(params, critic_params, opt_state, env_state, obs,
                         common.init_stats(config.num_envs), key)
        return jax.lax.scan(update, state, jnp.arange(num_updates))

    return train
