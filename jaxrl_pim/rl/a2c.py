"""A2C (synchronous advantage actor-critic) on gymnax, fully jitted.

Each update rolls out ``num_steps`` in ``num_envs`` environments, computes advantages with
GAE (``gae_lambda = 1`` gives plain n-step returns) and takes one gradient step on
``-mean(log pi(a|s) A) + vf_coef * 0.5 * mean((V - R)^2) - ent_coef * entropy``. Actor and
critic are separate MLPs; ``state.params`` are the policy's parameters. Discrete actions use
a categorical policy, continuous ones a diagonal Gaussian.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from jaxrl_pim.envs.factory import EnvInfo, make
from jaxrl_pim.rl import common
from jaxrl_pim.rl.networks import (
    MLP,
    GaussianActor,
    ParametricPolicy,
    categorical_entropy,
    categorical_log_prob,
    gaussian_entropy,
    gaussian_log_prob,
)
from jaxrl_pim.rl.ppo import gae_advantages


@dataclasses.dataclass(frozen=True)
class A2CConfig:
    """A2C hyper-parameters; ``num_updates = total_timesteps // (num_envs * num_steps)``."""

    env_name: str = "CartPole-v1"
    total_timesteps: int = 100_000
    num_envs: int = 16
    num_steps: int = 8
    lr: float = 1e-3
    gamma: float = 0.99
    gae_lambda: float = 1.0
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    hidden: tuple[int, ...] = (64, 64)
    activation: str = "tanh"
    qat: common.QATConfig | None = None

    def __post_init__(self) -> None:
        common.check_env("env_name", self.env_name, algo="A2C")
        common.check_rollout(self)
        common.check_network(self)

    @property
    def num_updates(self) -> int:
        """Number of rollout + gradient-step rounds."""
        return self.total_timesteps // (self.num_envs * self.num_steps)


class A2CState(NamedTuple):
    """Final training state; ``params`` are the policy's parameters."""

    params: Any
    critic_params: Any
    opt_state: Any
    env_state: Any
    obs: jax.Array
    stats: common.EpisodeStats
    key: jax.Array


def policy_gradient_loss(log_probs: jax.Array, advantages: jax.Array) -> jax.Array:
    """``-mean(log_probs * advantages)`` with the advantages treated as constants."""
    return -jnp.mean(log_probs * jax.lax.stop_gradient(advantages))


def _actor_and_spec(config: A2CConfig) -> tuple[Any, EnvInfo]:
    spec = common.env_info(config.env_name)
    if spec.discrete:
        return MLP(config.hidden, spec.num_actions, config.activation, 0.01), spec
    return GaussianActor(config.hidden, spec.action_dim, config.activation), spec


def make_policy(config: A2CConfig) -> ParametricPolicy:
    """Categorical logits (discrete) or Gaussian ``(mean, log_std)`` (continuous)."""
    actor, spec = _actor_and_spec(config)
    if spec.discrete:
        return ParametricPolicy("categorical", actor.apply,
                                lambda logits: jnp.argmax(logits, axis=-1))
    low, high = spec.action_low, spec.action_high
    return ParametricPolicy("gaussian", actor.apply, lambda dist: jnp.clip(dist[0], low, high))


def make_train(
    config: A2CConfig, callback: Callable[..., None] | None = None
) -> Callable[[jax.Array], tuple[A2CState, dict[str, jax.Array]]]:
    """Build ``train(key) -> (state, metrics)``; pure, jittable and vmappable over keys.

    ``metrics`` arrays are ``[num_updates]``: ``episode_return``, ``episodes``,
    ``policy_loss``, ``value_loss``, ``entropy``.
    """
    env, env_params = make(config.env_name)
    actor, spec = _actor_and_spec(config)
    critic = MLP(config.hidden, 1, config.activation, 1.0)
    discrete = spec.discrete
    num_updates = config.num_updates
    qat_start = int(config.qat.delay_fraction * num_updates) if config.qat else 0
    tx = optax.chain(optax.clip_by_global_norm(config.max_grad_norm), optax.adam(config.lr))

    def sample_action(params, obs, key):
        out = actor.apply(params, obs)
        if discrete:
            return jax.random.categorical(key, out), None
        mean, log_std = out
        action = mean + jnp.exp(log_std) * jax.random.normal(key, mean.shape)
        return action, jnp.clip(action, spec.action_low, spec.action_high)

    def logp_ent(params, obs, action):
        out = actor.apply(params, obs)
        if discrete:
            return categorical_log_prob(out, action), categorical_entropy(out)
        return gaussian_log_prob(out[0], out[1], action), gaussian_entropy(out[1])

    def train(key: jax.Array) -> tuple[A2CState, dict[str, jax.Array]]:
        key, k_actor, k_critic, k_env = jax.random.split(key, 4)
        obs0 = jnp.zeros((1, spec.obs_dim), jnp.float32)
        params = actor.init(k_actor, obs0)
        critic_params = critic.init(k_critic, obs0)
        obs, env_state = common.vmap_reset(env, env_params, k_env, config.num_envs)

        def update(carry, update_idx):
            params, critic_params, opt_state, env_state, obs, stats, key = carry
            act_params = common.qat_params(params, config.qat, update_idx, qat_start)

            def env_step(carry, _):
                env_state, obs, stats, key = carry
                key, k_act, k_step = jax.random.split(key, 3)
                action, env_action = sample_action(act_params, obs, k_act)
                env_action = action if env_action is None else env_action
                out = common.vmap_step(env, env_params, k_step, env_state, env_action)
                stats, finished = common.update_stats(stats, out.reward, out.done)
                final_value = critic.apply(critic_params, out.final_obs)[..., 0]
                reward = out.reward + config.gamma * final_value * out.truncated
                return (out.env_state, out.obs, stats, key), (
                    obs, action, reward, out.done, finished
                )

            (env_state, obs, stats, key), traj = jax.lax.scan(
                env_step, (env_state, obs, stats, key), None, config.num_steps
            )
            t_obs, t_action, t_reward, t_done, t_finished = traj
            values = critic.apply(critic_params, t_obs)[..., 0]
            last_value = critic.apply(critic_params, obs)[..., 0]
            adv, returns = gae_advantages(
                t_reward, values, t_done, last_value, config.gamma, config.gae_lambda
            )

            def loss_fn(both):
                p, cp = both
                p = common.qat_params(p, config.qat, update_idx, qat_start)
                logp, ent = logp_ent(p, t_obs, t_action)
                pl = policy_gradient_loss(logp, adv)
                v = critic.apply(cp, t_obs)[..., 0]
                vl = 0.5 * jnp.mean((v - jax.lax.stop_gradient(returns)) ** 2)
                return pl + config.vf_coef * vl - config.ent_coef * ent.mean(), (pl, vl,
                                                                                  ent.mean())

            grads, (pl, vl, ent) = jax.grad(loss_fn, has_aux=True)((params, critic_params))
            upd, opt_state = tx.update(grads, opt_state, (params, critic_params))
            params, critic_params = optax.apply_updates((params, critic_params), upd)
            metrics = {
                "episode_return": common.mean_finished(t_finished, t_done),
                "episodes": jnp.sum(t_done),
                "policy_loss": pl,
                "value_loss": vl,
                "entropy": ent,
            }
            common.maybe_callback(callback, update_idx + 1, num_updates, metrics)
            return (params, critic_params, opt_state, env_state, obs, stats, key), metrics

        carry = (
            params, critic_params, tx.init((params, critic_params)), env_state, obs,
            common.init_stats(config.num_envs), key,
        )
        carry, metrics = jax.lax.scan(update, carry, jnp.arange(num_updates))
        return A2CState(*carry), metrics

    return train
