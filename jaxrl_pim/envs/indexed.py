"""Base class of the tabular worlds whose observation is the state's index (Taxi, CliffWalking).

An :class:`IndexedWorld` has ``num_states`` states numbered ``[0, num_states)`` and
``num_actions`` discrete actions; the observation is the int32 state index
(``Discrete(num_states)``), the action space ``Discrete(num_actions)``. A world sets the class
attributes :attr:`~IndexedWorld.params_type`, :attr:`~IndexedWorld.state_type`,
``num_states`` and ``num_actions``, and writes the hooks

* ``transition(key, state, action) -> (next_state, reward, terminated)``: one step from
  ``state`` (``action`` already int32; the next state's ``time`` is ``state.time + 1``);
* ``initial_index(key) -> int32``: the start state's index;
* ``fields(index) -> dict``: the world's state fields (all but ``time``) of an index, and
  ``index_of(state) -> int32``: the inverse;
* ``is_terminated`` and ``state_space``.

The gymnax plumbing (``step_env`` / ``reset_env`` / ``observe``, ``state_from_index``, the
spaces, ``default_params``) is written here once.
"""

from __future__ import annotations

from typing import Any, ClassVar

import jax
import jax.numpy as jnp

from jaxrl_pim.envs import api, spaces
from jaxrl_pim.envs.api import P, S


class IndexedWorld(api.Environment[S, P]):
    """A gymnax world observed through its state index (see the module docstring)."""

    #: The world's ``EnvParams`` class (``default_params`` is ``params_type()``).
    params_type: ClassVar[type]
    #: The world's ``EnvState`` class (``time`` plus the fields of :meth:`fields`).
    state_type: ClassVar[type]
    #: Number of state indices (the observation space is ``Discrete(num_states)``).
    num_states: ClassVar[int]
    #: Number of discrete actions (the action space is ``Discrete(num_actions)``).
    num_actions: ClassVar[int]  # type: ignore[misc]

    @property
    def default_params(self) -> P:
        """The world's default parameters (``params_type()``)."""
        return self.params_type()

    def fields(self, index: jax.Array) -> dict[str, jax.Array]:
        """The state fields (all but ``time``) of state ``index`` (int32, any shape)."""
        raise NotImplementedError

    def index_of(self, state: S) -> jax.Array:
        """The int32 state index of ``state`` (the inverse of :meth:`fields`)."""
        raise NotImplementedError

    def transition(self, key: jax.Array, state: S, action: jax.Array
                   ) -> tuple[S, jax.Array, jax.Array]:
        """One step: ``(next_state, reward float32, terminated bool)``."""
        raise NotImplementedError

    def initial_index(self, key: jax.Array) -> jax.Array:
        """The index of a fresh episode's start state (int32 scalar)."""
        raise NotImplementedError

    def state_from_index(self, index: Any, time: Any = 0) -> S:
        """Build a state from a state index (int in ``[0, num_states)``; vectorisable) and
        the elapsed steps ``time`` (broadcast to ``index``'s shape)."""
        return self.state_type(
            time=jnp.broadcast_to(jnp.asarray(time, dtype=jnp.int32), jnp.shape(index)),
            **self.fields(index),
        )

    def step_env(
        self,
        key: jax.Array,
        state: S,
        action: int | float | jax.Array,
        params: P,
    ) -> tuple[jax.Array, S, jax.Array, jax.Array, dict[Any, Any]]:
        """One transition (:meth:`transition`); auto-reset is done by ``step``."""
        action = jnp.asarray(action, dtype=jnp.int32)
        next_state, reward, terminated = self.transition(key, state, action)
        obs = self.observe(key, next_state, action, params)
        return obs, next_state, reward, terminated, {}

    def reset_env(self, key: jax.Array, params: P) -> tuple[jax.Array, S]:
        """A fresh episode at :meth:`initial_index`."""
        state = self.state_from_index(self.initial_index(key))
        return self.observe(key, state, None, params), state

    def observe(
        self,
        key: jax.Array,
        state: S,
        action: int | float | jax.Array | None,
        params: P,
    ) -> jax.Array:
        """Observation = the int32 state index."""
        del key, action, params
        return self.index_of(state)

    def action_space(self, params: P | None = None) -> spaces.Discrete:
        """``Discrete(num_actions)``."""
        del params
        return spaces.Discrete(self.num_actions)

    def observation_space(self, params: P) -> spaces.Discrete:
        """``Discrete(num_states)``."""
        del params
        return spaces.Discrete(self.num_states)


__all__ = ["IndexedWorld"]
