"""DDPG on gymnax (continuous actions), fully jitted.

Deterministic tanh-squashed actor, ``Q(s, a)`` critic, target copies of both updated by Polyak
averaging (``tau``), Gaussian exploration noise with std ``expl_noise * (high - low) / 2``
(action units), uniform random actions for the first ``learning_starts`` transitions, replay
in the library's ring buffer with uniform sampling (:func:`jaxrl_pim.rl.dqn.make_replay`).
Time limits are bootstrapped (only natural terminations cut the target).

``make_policy(config).apply(state.params, obs)`` returns the action ``[..., action_dim]``;
``ParametricPolicy.noise_std`` is the exploration std, which the PTQ study uses for its
Gaussian KL.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import chex
import jax
import jax.numpy as jnp
import optax

from jaxrl_pim.envs.factory import make
from jaxrl_pim.replay import BufferState
from jaxrl_pim.rl import common
from jaxrl_pim.rl.configs import DDPGConfig  # the learner's config, re-exported
from jaxrl_pim.rl.dqn import make_replay, sample_uniform, step_and_store
from jaxrl_pim.rl.networks import DeterministicActor, ParametricPolicy, QCritic


class DDPGState(NamedTuple):
    """Final training state; ``params`` are the actor's parameters."""

    params: Any
    critic_params: Any
    target_params: Any
    target_critic_params: Any
    actor_opt: Any
    critic_opt: Any
    buffer: BufferState  # ring buffer of NStepTransition rows (rl.dqn.make_replay)
    env_state: Any
    obs: jax.Array
    stats: common.EpisodeStats
    key: jax.Array
    held_noise: jax.Array  # [num_envs, action_dim] standard-normal draw being held
    held_uniform: jax.Array  # [num_envs, action_dim] warm-up action being held
    hold_left: jax.Array  # [num_envs] steps before the next redraw


def ddpg_target(r_t: jax.Array, discount_t: jax.Array, q_t: jax.Array) -> jax.Array:
    """Critic target for one transition: ``r_t + discount_t * Q_target(s_t, mu_target(s_t))``."""
    return r_t + discount_t * q_t


def polyak(target: Any, online: Any, tau: float) -> Any:
    """Soft target update ``target <- (1 - tau) * target + tau * online``, leaf by leaf.

    ``target`` and ``online`` are pytrees of the same structure and leaf shapes (checked at
    trace time); ``tau`` in (0, 1] is the Polyak rate. The one Polyak rule of the library
    (DDPG here, the multi-agent learners in :mod:`jaxrl_pim.marl.rules`).
    """
    chex.assert_trees_all_equal_shapes(target, online)
    return jax.tree.map(lambda t, o: (1.0 - tau) * t + tau * o, target, online)


def _nets(
    config: DDPGConfig,
) -> tuple[DeterministicActor, QCritic, dict[str, Any], Callable[[jax.Array], jax.Array]]:
    """``(actor, critic, spec, scale)``; ``scale`` maps observations to the networks' input."""
    spec = common.env_info(config.env_name)
    actor = DeterministicActor(config.hidden, spec.action_dim, spec.action_low,
                               spec.action_high, config.activation)
    scale = common.input_map(config.env_name, config.normalize_obs)
    return actor, QCritic(config.hidden, config.activation), spec, scale


def make_policy(config: DDPGConfig) -> ParametricPolicy:
    """Deterministic actor; ``noise_std`` is the exploration std in action units."""
    actor, _, spec, scale = _nets(config)
    std = config.expl_noise * (spec.action_high - spec.action_low) / 2.0
    return ParametricPolicy("deterministic", lambda p, obs: actor.apply(p, scale(obs)),
                            lambda a: a, std)


def make_train(
    config: DDPGConfig, callback: Callable[..., None] | None = None
) -> Callable[[jax.Array], tuple[DDPGState, dict[str, jax.Array]]]:
    """Build ``train(key) -> (state, metrics)``; pure, jittable and vmappable over keys.

    ``metrics`` arrays are ``[num_iterations]``: ``episode_return`` (NaN where no episode
    finished), ``episodes``, ``critic_loss``, ``actor_loss`` (0 before learning starts).
    """
    env, env_params = make(config.env_name)
    actor_net, critic_net, spec, scale = _nets(config)
    actor_apply = lambda p, obs: actor_net.apply(p, scale(obs))  # noqa: E731
    critic_apply = lambda p, obs, a: critic_net.apply(p, scale(obs), a)  # noqa: E731
    low, high = spec.action_low, spec.action_high
    noise_std = config.expl_noise * (high - low) / 2.0
    n_iter = config.num_iterations
    start_iter = -(-config.learning_starts // config.num_envs)
    qat_start = int(config.qat.delay_fraction * n_iter) if config.qat else 0
    actor_tx = optax.adam(config.actor_lr)
    critic_tx = optax.adam(config.critic_lr)
    adim = spec.action_dim
    buffer, sampler = make_replay(config.buffer_capacity, spec.obs_dim, (adim,), jnp.float32)

    def train(key: jax.Array) -> tuple[DDPGState, dict[str, jax.Array]]:
        key, k_a, k_c, k_env = jax.random.split(key, 4)
        obs0 = jnp.zeros((1, spec.obs_dim), jnp.float32)
        params = actor_net.init(k_a, obs0)
        critic_params = critic_net.init(k_c, obs0, jnp.zeros((1, adim), jnp.float32))
        obs, env_state = common.vmap_reset(env, env_params, k_env, config.num_envs)
        carry = DDPGState(
            params, critic_params, params, critic_params, actor_tx.init(params),
            critic_tx.init(critic_params),
            buffer.init(),
            env_state, obs, common.init_stats(config.num_envs), key,
            jnp.zeros((config.num_envs, adim), jnp.float32),
            jnp.zeros((config.num_envs, adim), jnp.float32),
            jnp.zeros((config.num_envs,), jnp.int32),
        )

        def iteration(st: DDPGState, it):
            key, k_noise, k_rand, k_step, k_sample = jax.random.split(st.key, 5)
            mu = actor_apply(common.qat_params(st.params, config.qat, it, qat_start), st.obs)
            redraw = (st.hold_left <= 0)[:, None]
            z = jnp.where(redraw, jax.random.normal(k_noise, mu.shape), st.held_noise)
            uniform = jnp.where(redraw, jax.random.uniform(k_rand, mu.shape, minval=low,
                                                           maxval=high), st.held_uniform)
            noisy = jnp.clip(mu + noise_std * z, low, high)
            action = jnp.where(it < start_iter, uniform, noisy)
            out, stats, finished, buf = step_and_store(
                env, env_params, buffer, k_step, st.env_state, st.obs, st.stats, st.buffer,
                action, config.gamma)
            # count down to the next redraw; a new episode starts with a fresh draw
            left = jnp.where(redraw[:, 0], config.noise_hold, st.hold_left) - 1
            left = jnp.where(out.done, 0, left)

            def learn(s):
                params, critic_params, t_params, t_critic, a_opt, c_opt = s
                obs, act, rew, discount, next_obs = sample_uniform(buffer, sampler, buf,
                                                                   k_sample, config.batch_size)
                q_next = critic_apply(t_critic, next_obs, actor_apply(t_params, next_obs))
                target = jax.vmap(ddpg_target)(rew, discount, q_next)

                def critic_loss(cp):
                    return jnp.mean((critic_apply(cp, obs, act) - target) ** 2)

                c_loss, c_grad = jax.value_and_grad(critic_loss)(critic_params)
                upd, c_opt = critic_tx.update(c_grad, c_opt, critic_params)
                critic_params = optax.apply_updates(critic_params, upd)

                def actor_loss(p):
                    p = common.qat_params(p, config.qat, it, qat_start)
                    return -jnp.mean(critic_apply(critic_params, obs, actor_apply(p, obs)))

                a_loss, a_grad = jax.value_and_grad(actor_loss)(params)
                upd, a_opt = actor_tx.update(a_grad, a_opt, params)
                params = optax.apply_updates(params, upd)
                t_params = polyak(t_params, params, config.tau)
                t_critic = polyak(t_critic, critic_params, config.tau)
                return (params, critic_params, t_params, t_critic, a_opt, c_opt), (c_loss,
                                                                                   a_loss)

            learner = (st.params, st.critic_params, st.target_params, st.target_critic_params,
                       st.actor_opt, st.critic_opt)
            learner, (c_loss, a_loss) = jax.lax.cond(
                it >= start_iter, learn, lambda s: (s, (jnp.zeros(()), jnp.zeros(()))), learner
            )
            metrics = {**common.episode_metrics(finished, out.done), "critic_loss": c_loss,
                       "actor_loss": a_loss}
            common.maybe_callback(callback, it + 1, n_iter, metrics)
            new = DDPGState(*learner, buf, out.env_state, out.obs, stats, key, z, uniform, left)
            return new, metrics

        return jax.lax.scan(iteration, carry, jnp.arange(n_iter))

    return train
