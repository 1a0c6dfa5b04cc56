"""The environment interface of the library's own worlds: gymnax 1.0's ``Environment`` API.

A world subclasses :class:`Environment` and writes ``step_env`` (one transition, no reset),
``reset_env``, ``is_terminated``, ``default_params`` and its spaces
(:mod:`jaxrl_pim.envs.spaces`); :class:`Environment` adds what every world shares, with
gymnax 1.0's semantics, so code written for gymnax (its wrappers, a user's rollout loop, the
library's learners) steps these worlds unchanged:

* ``reset(key, params=None) -> (obs, state)``;
* ``step(key, state, action, params=None) -> (obs, state, reward, terminated, truncated,
  info)``: the key is split into a step key and a reset key (``jax.random.split(key)``, in
  that order), the world steps, ``truncated`` is ``is_truncated(next_state)`` (elapsed steps
  ``>= params.max_steps_in_episode``), and when the episode ended (terminated or truncated)
  the returned observation and state are those of a fresh reset; ``info`` adds
  ``terminated``, ``truncated`` and ``final_observation`` (the observation the step reached,
  before any reset) to the world's own entries.

Both are jitted with the environment object static (a world hashes and compares by its
configuration). The library defines the interface rather than subclassing gymnax's class
because importing gymnax loads all of gymnax's environments and their plotting and statistics
dependencies (see :mod:`jaxrl_pim.envs.spaces`); the learners accept either kind of object.
"""

from __future__ import annotations

from functools import partial
from typing import Any, Generic, TypeVar

import jax
import jax.numpy as jnp
from flax import struct


@struct.dataclass
class EnvState:
    """Base state: elapsed steps in the episode (int32 scalar)."""

    time: Any


@struct.dataclass
class EnvParams:
    """Base parameters: the time limit in steps."""

    max_steps_in_episode: int = 1


S = TypeVar("S", bound=EnvState)
P = TypeVar("P", bound=EnvParams)


class Environment(Generic[S, P]):
    """Base class of a jittable world with gymnax 1.0's API (see the module docstring)."""

    @property
    def default_params(self) -> P:
        """The parameters ``reset`` and ``step`` use when given ``params=None``."""
        return EnvParams()  # type: ignore[return-value]

    @partial(jax.jit, static_argnames=("self",))
    def step(self, key: jax.Array, state: S, action: Any, params: P | None = None
             ) -> tuple[Any, S, jax.Array, jax.Array, jax.Array, dict[str, Any]]:
        """One step with auto-reset; returns ``(obs, state, reward, terminated, truncated,
        info)`` (module docstring)."""
        if params is None:
            params = self.default_params
        key_step, key_reset = jax.random.split(key)
        obs_step, state_step, reward, terminated, info = self.step_env(
            key_step, state, action, params)
        truncated = self.is_truncated(state_step, params)
        done = jnp.logical_or(terminated, truncated)
        obs_reset, state_reset = self.reset_env(key_reset, params)

        def pick(reset_leaf: jax.Array, step_leaf: jax.Array) -> jax.Array:
            return jax.lax.select(done, reset_leaf, step_leaf)

        next_state = jax.tree.map(pick, state_reset, state_step)
        obs = jax.tree.map(pick, obs_reset, obs_step)
        info = {**info, "terminated": terminated, "truncated": truncated,
                "final_observation": obs_step}
        return obs, next_state, reward, terminated, truncated, info

    @partial(jax.jit, static_argnames=("self",))
    def reset(self, key: jax.Array, params: P | None = None) -> tuple[Any, S]:
        """A fresh episode: ``(obs, state)``."""
        if params is None:
            params = self.default_params
        return self.reset_env(key, params)

    def step_env(self, key: jax.Array, state: S, action: Any, params: P
                 ) -> tuple[Any, S, jax.Array, jax.Array, dict[str, Any]]:
        """One transition without reset: ``(obs, state, reward, terminated, info)``."""
        raise NotImplementedError

    def reset_env(self, key: jax.Array, params: P) -> tuple[Any, S]:
        """A fresh episode's ``(obs, state)``."""
        raise NotImplementedError

    def is_truncated(self, state: S, params: P) -> jax.Array:
        """True once the episode has taken ``params.max_steps_in_episode`` steps."""
        return state.time >= params.max_steps_in_episode

    def is_terminated(self, state: S, params: P) -> jax.Array:
        """True in a terminal state of the world (not a time limit)."""
        raise NotImplementedError

    def discount(self, state: S, params: P) -> jax.Array:
        """0.0 in a terminal state, else 1.0."""
        return jax.lax.select(self.is_terminated(state, params), 0.0, 1.0)

    @property
    def name(self) -> str:
        """The world's name (its class name unless overridden)."""
        return type(self).__name__

    @property
    def num_actions(self) -> int:
        """Number of discrete actions (or the action vector's length)."""
        raise NotImplementedError

    def action_space(self, params: P | None = None) -> Any:
        """The action space (:mod:`jaxrl_pim.envs.spaces`)."""
        raise NotImplementedError

    def observation_space(self, params: P) -> Any:
        """The observation space (:mod:`jaxrl_pim.envs.spaces`)."""
        raise NotImplementedError

    def state_space(self, params: P) -> Any:
        """The state space (:mod:`jaxrl_pim.envs.spaces`)."""
        raise NotImplementedError


__all__ = ["EnvParams", "EnvState", "Environment"]
