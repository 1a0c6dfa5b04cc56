"""Pieces shared by the single-process learners: environment checks, episode bookkeeping,
QAT hook.

Environments come from the one factory :func:`jaxrl_pim.envs.make`. Everything here is pure
and jittable except :func:`env_info` and the config checks, which run once on the host.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxrl_pim.checks import check_bool, check_choice, check_float, check_int, check_widths
from jaxrl_pim.envs.factory import EnvInfo, make, make_with_info
from jaxrl_pim.replay.buffers import check_capacity

#: gymnax tasks with a discrete action space that the learners are tested on (DQN, PPO, A2C);
#: any gymnax environment with flat observations and discrete actions is accepted.
DISCRETE_ENVS: tuple[str, ...] = ("CartPole-v1", "Acrobot-v1", "MountainCar-v0")
#: gymnax tasks with a continuous (Box) action space that the learners are tested on (DDPG,
#: PPO with a Gaussian policy); any such gymnax environment with flat observations is accepted.
CONTINUOUS_ENVS: tuple[str, ...] = ("Pendulum-v1", "MountainCarContinuous-v0")
ACTIVATIONS: tuple[str, ...] = ("tanh", "relu")


def env_info(env_name: str) -> EnvInfo:
    """:class:`~jaxrl_pim.envs.EnvInfo` of a gymnax environment id (built by
    :func:`jaxrl_pim.envs.make`)."""
    return make_with_info(env_name)[2]


def check_env(field: str, env_name: Any, discrete: bool | None = None,
              algo: str = "this learner") -> EnvInfo:
    """Validate a learner's environment name on the host; returns its ``EnvInfo``.

    Accepts any name registered with gymnax whose observations are flat vectors
    (``[obs_dim]``); ``discrete`` True / False also requires discrete / continuous actions.
    Raises ValueError naming ``field``, the value and what is allowed.
    """
    import gymnax

    if not isinstance(env_name, str) or env_name not in gymnax.registered_envs:
        raise ValueError(
            f"{field} must be a name registered with gymnax (e.g. "
            f"{', '.join(DISCRETE_ENVS + CONTINUOUS_ENVS)}); got {env_name!r}"
        )
    info = env_info(env_name)
    if len(info.obs_shape) != 1:
        raise ValueError(f"{field} {env_name!r} has observations of shape {info.obs_shape}; "
                         f"{algo} needs flat vectors [obs_dim]")
    if discrete is not None and info.discrete != discrete:
        kind = "discrete" if discrete else "continuous"
        raise ValueError(
            f"{field} {env_name!r} has {'discrete' if info.discrete else 'continuous'} "
            f"actions; {algo} needs {kind} actions (e.g. "
            f"{', '.join(DISCRETE_ENVS if discrete else CONTINUOUS_ENVS)})"
        )
    return info


def obs_normalizer(env_name: str) -> Callable[[jax.Array], jax.Array]:
    """``f(obs) -> obs'`` mapping the environment's observation box linearly onto ``[-1, 1]``.

    ``obs`` is ``[..., obs_dim]`` in the environment's units; the result has the same shape.
    Only for environments whose observation bounds are all finite (MountainCar, Acrobot,
    Pendulum, MountainCarContinuous); ValueError otherwise (CartPole's velocities are
    unbounded).
    """
    env, params = make(env_name)
    space = env.observation_space(params)
    low = jnp.asarray(space.low, jnp.float32)
    high = jnp.asarray(space.high, jnp.float32)
    if not bool(jnp.all(jnp.isfinite(high - low))) or bool(jnp.any(high - low > 1e6)):
        raise ValueError(
            f"normalize_obs needs finite observation bounds; {env_name} has low={space.low}, "
            f"high={space.high}"
        )
    mid = 0.5 * (high + low)
    inv_half = 2.0 / (high - low)
    return lambda obs: (obs - mid) * inv_half


def input_map(env_name: str, normalize_obs: bool) -> Callable[[jax.Array], jax.Array]:
    """What the networks see of an observation: :func:`obs_normalizer` when
    ``normalize_obs``, else the observation unchanged (same shape ``[..., obs_dim]``)."""
    return obs_normalizer(env_name) if normalize_obs else (lambda obs: obs)


def check_hidden(name: str, hidden: Any) -> tuple[int, ...]:
    """Validate a tuple of hidden layer widths (1-4 layers, each 1-4096)."""
    return check_widths(name, hidden, 4096, max_layers=4)


@dataclasses.dataclass(frozen=True)
class QATConfig:
    """Quantization-aware training: fake-quantize the policy weights in the forward pass.

    Attributes:
      bits: bit width of the paper's uniform quantizer (2-16).
      delay_fraction: fraction of the training updates run in full precision before fake
        quantization switches on (the paper's quantization delay, about half of training).
    """

    bits: int = 8
    delay_fraction: float = 0.5

    def __post_init__(self) -> None:
        check_int("qat.bits", self.bits, 2, 16)
        check_float("qat.delay_fraction", self.delay_fraction, 0.0, 1.0, hi_open=True)


# Checks of the fields several learners' configs share (the config bases of
# jaxrl_pim.rl.configs call them on construction; every message names the field and the value).


def check_network(config: Any) -> None:
    """``hidden`` (1-4 widths of 1-4096), ``activation`` (one of :data:`ACTIVATIONS`) and
    ``qat`` (a :class:`QATConfig` or None) of a config (A2C, PPO, DQN, DDPG)."""
    check_hidden("hidden", config.hidden)
    check_choice("activation", config.activation, ACTIVATIONS)
    if config.qat is not None and not isinstance(config.qat, QATConfig):
        raise ValueError(f"qat must be a QATConfig or None, got {config.qat!r}")


def check_rollout(config: Any) -> None:
    """The on-policy sizes and rates of a config (A2C, PPO): ``num_envs`` (1-65,536),
    ``num_steps`` (1-100,000) per rollout, ``total_timesteps`` (at least one rollout,
    ``num_envs * num_steps``), ``lr`` in (0, 1], ``gamma`` and ``gae_lambda`` in [0, 1],
    ``ent_coef`` and ``vf_coef`` >= 0 and ``max_grad_norm`` > 0."""
    check_int("num_envs", config.num_envs, 1, 65536)
    check_int("num_steps", config.num_steps, 1, 100_000)
    check_int("total_timesteps", config.total_timesteps, config.num_envs * config.num_steps)
    check_float("lr", config.lr, 0.0, 1.0, lo_open=True)
    check_float("gamma", config.gamma, 0.0, 1.0)
    check_float("gae_lambda", config.gae_lambda, 0.0, 1.0)
    check_float("ent_coef", config.ent_coef, 0.0)
    check_float("vf_coef", config.vf_coef, 0.0)
    check_float("max_grad_norm", config.max_grad_norm, 0.0, lo_open=True)


def check_replay_sizes(config: Any) -> None:
    """The replay sizes of an off-policy config (DQN, DDPG): ``num_envs`` (1-65,536),
    ``total_timesteps`` (>= ``num_envs``, one vectorised step), ``buffer_capacity`` (a
    capacity the buffers take, >= ``num_envs``: one step's rows), ``batch_size`` (1 to the
    capacity) and ``learning_starts`` (>= ``batch_size``)."""
    check_int("num_envs", config.num_envs, 1, 65536)
    check_int("total_timesteps", config.total_timesteps, config.num_envs)
    check_capacity(config.buffer_capacity, "buffer_capacity")
    check_int("buffer_capacity", config.buffer_capacity, config.num_envs)  # one step's rows
    check_int("batch_size", config.batch_size, 1, config.buffer_capacity)
    check_int("learning_starts", config.learning_starts, config.batch_size)


def check_normalize_obs(config: Any) -> None:
    """``normalize_obs`` is a bool, and True only for a task with bounded observations
    (:func:`obs_normalizer` rejects the others)."""
    check_bool("normalize_obs", config.normalize_obs)
    if config.normalize_obs:
        obs_normalizer(config.env_name)


def qat_params(params: Any, qat: QATConfig | None, step: jax.Array, delay: int) -> Any:
    """Policy parameters as the forward pass should see them at update ``step``.

    Without ``qat`` this is the identity. With it, once ``step >= delay`` every float leaf goes
    through the toolkit's straight-through fake quantizer (paper uniform, ``qat.bits``, per
    tensor): the forward pass sees quantized weights, gradients reach the full-precision
    weights unchanged (dQ/dW = 1). See :func:`jaxrl_pim.quant.qat_params`.
    """
    if qat is None:
        return params
    from jaxrl_pim.quant import qat_params as toolkit_qat_params

    return toolkit_qat_params(params, qat.bits, step, delay)


class EpisodeStats(NamedTuple):
    """Running undiscounted return and length of the current episode in each env, ``[num_envs]``."""

    ret: jax.Array
    length: jax.Array


def init_stats(num_envs: int) -> EpisodeStats:
    """Zeroed episode statistics for ``num_envs`` environments."""
    return EpisodeStats(jnp.zeros((num_envs,), jnp.float32), jnp.zeros((num_envs,), jnp.int32))


def update_stats(
    stats: EpisodeStats, reward: jax.Array, done: jax.Array
) -> tuple[EpisodeStats, jax.Array]:
    """Add one step's ``reward`` ``[num_envs]``; returns new stats and the finished returns.

    The second output holds the episode's return where ``done`` and 0 elsewhere.
    """
    ret = stats.ret + reward
    finished = jnp.where(done, ret, 0.0)
    new = EpisodeStats(
        jnp.where(done, 0.0, ret), jnp.where(done, 0, stats.length + 1)
    )
    return new, finished


def mean_finished(finished: jax.Array, done: jax.Array) -> jax.Array:
    """Mean return of the episodes that finished (NaN when none did)."""
    count = jnp.sum(done)
    return jnp.where(count > 0, jnp.sum(finished) / jnp.maximum(count, 1), jnp.nan)


def episode_metrics(finished: jax.Array, done: jax.Array) -> dict[str, jax.Array]:
    """The learners' episode metrics of one iteration or rollout (``finished`` and ``done``
    of the same shape, from :func:`update_stats`): ``episode_return``, the mean return of
    the episodes that finished (NaN when none did), and ``episodes``, their count."""
    return {"episode_return": mean_finished(finished, done), "episodes": jnp.sum(done)}


def vmap_reset(env: Any, env_params: Any, key: jax.Array, num_envs: int) -> tuple[Any, Any]:
    """Reset ``num_envs`` environments; returns ``(obs [num_envs, obs_dim], env_state)``."""
    return jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(key, num_envs), env_params)


class StepOut(NamedTuple):
    """One vectorised env step; every field has leading axis ``num_envs``.

    ``obs`` is already the first observation of the next episode where ``done``;
    ``final_obs`` is the observation the step actually reached (use it for bootstrapping).
    ``terminated`` is a natural end (no bootstrap), ``truncated`` a time limit.
    """

    obs: jax.Array
    env_state: Any
    reward: jax.Array
    terminated: jax.Array
    truncated: jax.Array
    final_obs: jax.Array

    @property
    def done(self) -> jax.Array:
        """Episode boundary: terminated or truncated."""
        return jnp.logical_or(self.terminated, self.truncated)


def vmap_step(
    env: Any, env_params: Any, key: jax.Array, env_state: Any, action: jax.Array
) -> StepOut:
    """Step every env (gymnax auto-resets finished ones)."""
    keys = jax.random.split(key, action.shape[0])
    obs, env_state, reward, term, trunc, info = jax.vmap(env.step, in_axes=(0, 0, 0, None))(
        keys, env_state, action, env_params
    )
    term = term.astype(bool)
    return StepOut(
        obs, env_state, reward.astype(jnp.float32), term,
        jnp.logical_and(trunc.astype(bool), ~term), info["final_observation"],
    )


def maybe_callback(
    callback: Callable[..., None] | None, step: jax.Array, total: int, metrics: dict[str, Any]
) -> None:
    """Call the opt-in host progress ``callback(step, total, metrics)`` from inside jit.

    ``step`` counts from 1 to ``total``; the callback fires at most 101 times per run (every
    ``ceil(total / 100)`` steps and at the last one), not at every step.
    """
    if callback is None:
        return
    every = max(-(-total // 100), 1)

    def fire(args):
        jax.debug.callback(callback, *args)

    jax.lax.cond((step % every == 0) | (step == total), fire, lambda args: None,
                 (step, total, metrics))
