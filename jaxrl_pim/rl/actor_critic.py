"""The actor-critic pieces A2C and PPO share: networks, action sampling, the rollout.

Both learners use separate actor and critic MLPs; the actor is a categorical policy (logits,
discrete actions) or a diagonal Gaussian with a state-independent log-std (continuous
actions; the environment is stepped with the sample clipped to the action bounds, the
log-probability is of the unclipped sample). A rollout steps ``num_envs`` environments
``num_steps`` times with one set of (possibly fake-quantized) actor parameters and records
what both losses need; time limits are not terminal, so a truncated step's reward is
bootstrapped with ``gamma * V(final observation)``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxrl_pim.envs.factory import EnvInfo
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


class Rollout(NamedTuple):
    """One rollout, every field ``[num_steps, num_envs, ...]``.

    ``obs`` the observation acted on, ``action`` the sampled (unclipped) action, ``logp`` its
    log-probability, ``value`` ``V(obs)``, ``reward`` (bootstrapped at time limits), ``done``
    (episode boundary after the step), ``finished`` (the episode's return where ``done``, else
    0).
    """

    obs: jax.Array
    action: jax.Array
    logp: jax.Array
    value: jax.Array
    reward: jax.Array
    done: jax.Array
    finished: jax.Array


class ActorCriticState(NamedTuple):
    """An actor-critic learner's training state (the carry of its update loop); ``params``
    are the policy's parameters."""

    params: Any
    critic_params: Any
    opt_state: Any
    env_state: Any
    obs: jax.Array  # [num_envs, obs_dim]
    stats: common.EpisodeStats
    key: jax.Array


def rollout_metrics(traj: Rollout, policy_loss: jax.Array, value_loss: jax.Array,
                    entropy: jax.Array) -> dict[str, jax.Array]:
    """One update's metrics (scalars): ``episode_return`` (mean undiscounted return of the
    episodes finished during the rollout, NaN if none), ``episodes`` (their count) and the
    given ``policy_loss``, ``value_loss``, ``entropy``."""
    return {**common.episode_metrics(traj.finished, traj.done), "policy_loss": policy_loss,
            "value_loss": value_loss, "entropy": entropy}


class ActorCritic(NamedTuple):
    """An actor-critic learner's networks for one environment (:func:`make_actor_critic`).

    Attributes:
      actor: ``MLP`` (logits ``[..., num_actions]``) or ``GaussianActor`` (``(mean,
        log_std)``, each ``[..., action_dim]``).
      critic: ``MLP`` with one output, ``V(obs)``.
      spec: the environment's :class:`~jaxrl_pim.envs.EnvInfo`.
    """

    actor: Any
    critic: MLP
    spec: EnvInfo

    def init(self, k_actor: jax.Array, k_critic: jax.Array) -> tuple[Any, Any]:
        """``(actor_params, critic_params)`` initialised from one key each."""
        obs0 = jnp.zeros((1, self.spec.obs_dim), jnp.float32)
        return self.actor.init(k_actor, obs0), self.critic.init(k_critic, obs0)

    def value(self, critic_params: Any, obs: jax.Array) -> jax.Array:
        """``V(obs)``: ``obs [..., obs_dim]`` -> ``[...]``."""
        return self.critic.apply(critic_params, obs)[..., 0]

    def sample(self, params: Any, obs: jax.Array, key: jax.Array
               ) -> tuple[jax.Array, jax.Array, jax.Array]:
        """``(action, log_prob, env_action)`` for ``obs [N, obs_dim]``: the sampled action
        (int ``[N]`` or float ``[N, action_dim]``), its log-probability ``[N]`` and the action
        the environment is stepped with (the Gaussian sample clipped to the bounds)."""
        out = self.actor.apply(params, obs)
        if self.spec.discrete:
            action = jax.random.categorical(key, out)
            return action, categorical_log_prob(out, action), action
        mean, log_std = out
        action = mean + jnp.exp(log_std) * jax.random.normal(key, mean.shape)
        env_action = jnp.clip(action, self.spec.action_low, self.spec.action_high)
        return action, gaussian_log_prob(mean, log_std, action), env_action

    def log_prob_entropy(self, params: Any, obs: jax.Array, action: jax.Array
                         ) -> tuple[jax.Array, jax.Array]:
        """Log-probability of ``action`` and the policy's entropy at ``obs``, each ``[...]``."""
        out = self.actor.apply(params, obs)
        if self.spec.discrete:
            return categorical_log_prob(out, action), categorical_entropy(out)
        mean, log_std = out
        return gaussian_log_prob(mean, log_std, action), gaussian_entropy(log_std)

    def rollout(
        self, env: Any, env_params: Any, num_steps: int, gamma: float, params: Any,
        state: ActorCriticState,
    ) -> tuple[ActorCriticState, Rollout]:
        """Step every env ``num_steps`` times from ``state`` acting with ``params`` (the
        policy's parameters as the forward pass sees them) and ``state.critic_params``.

        Returns ``state`` with ``env_state``, ``obs``, ``stats`` and ``key`` advanced (each
        step splits ``key`` into ``(key, action key, step key)``) and the :class:`Rollout`.
        """
        critic_params = state.critic_params

        def env_step(carry, _):
            env_state, obs, stats, key = carry
            key, k_act, k_step = jax.random.split(key, 3)
            action, logp, env_action = self.sample(params, obs, k_act)
            out = common.vmap_step(env, env_params, k_step, env_state, env_action)
            stats, finished = common.update_stats(stats, out.reward, out.done)
            step = (obs, action, logp, out.reward, out.done, finished, out.final_obs,
                    out.truncated)
            return (out.env_state, out.obs, stats, key), step

        (env_state, obs, stats, key), steps = jax.lax.scan(
            env_step, (state.env_state, state.obs, state.stats, state.key), None, num_steps)
        obs_t, action, logp, reward, done, finished, final_obs, truncated = steps
        # The critic runs once over the whole rollout, not inside the step loop: V(obs) of
        # every step, and V(final observation) to bootstrap time limits (not terminal).
        value = self.value(critic_params, obs_t)
        reward = reward + gamma * self.value(critic_params, final_obs) * truncated
        traj = Rollout(obs_t, action, logp, value, reward, done, finished)
        return state._replace(env_state=env_state, obs=obs, stats=stats, key=key), traj


def make_actor_critic(env_name: str, hidden: tuple[int, ...], activation: str) -> ActorCritic:
    """The networks for ``env_name``: a categorical actor (output scale 0.01) for discrete
    actions, else a Gaussian one; a critic MLP (output scale 1.0); ``hidden`` layer widths."""
    spec = common.env_info(env_name)
    if spec.discrete:
        actor = MLP(hidden, spec.num_actions, activation, 0.01)
    else:
        actor = GaussianActor(hidden, spec.action_dim, activation)
    return ActorCritic(actor, MLP(hidden, 1, activation, 1.0), spec)


def make_policy(env_name: str, hidden: tuple[int, ...], activation: str) -> ParametricPolicy:
    """The trained actor's pure functions: categorical logits (greedy action = argmax) or
    Gaussian ``(mean, log_std)`` (greedy action = the mean clipped to the bounds)."""
    ac = make_actor_critic(env_name, hidden, activation)
    if ac.spec.discrete:
        return ParametricPolicy("categorical", ac.actor.apply,
                                lambda logits: jnp.argmax(logits, axis=-1))
    low, high = ac.spec.action_low, ac.spec.action_high
    return ParametricPolicy("gaussian", ac.actor.apply, lambda dist: jnp.clip(dist[0], low, high))


__all__ = [
    "ActorCritic",
    "ActorCriticState",
    "Rollout",
    "make_actor_critic",
    "make_policy",
    "rollout_metrics",
]
