"""The agent interface shared by DQN and D4PG, and the environment description it needs.

An ``Agent`` is a NamedTuple of pure functions (design contract 3):

* ``init(key) -> LearnerState``: full-precision learner state.
* ``update(state, batch, weights) -> (state, td_abs [B], metrics)``: one learner step on a
  ``Transition`` batch with importance weights ``[B]``; ``td_abs`` are the new priorities.
* ``policy_params(state) -> params``: the network that is broadcast to the actors.
* ``act(params, obs, key, explore) -> action``: one actor decision for ONE observation
  (vmap over environments); ``explore`` is epsilon (DQN) or the noise scale (D4PG).
* ``greedy(params, obs) -> action``: the noise-free action used for evaluation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import gymnax
import jax
import jax.numpy as jnp

from jaxrl_pim.envs.playground import is_playground_name, make_playground_env


class EnvInfo(NamedTuple):
    """What an agent needs to know about a task (host-side, static)."""

    name: str
    obs_dim: int
    discrete: bool
    num_actions: int  # discrete tasks; 0 otherwise
    action_dim: int  # continuous tasks; 0 otherwise
    action_low: float
    action_high: float
    max_steps: int


class Agent(NamedTuple):
    """Pure functions of one actor-learner algorithm (see module docstring)."""

    init: Callable[[jax.Array], Any]
    update: Callable[[Any, Any, jax.Array], tuple[Any, jax.Array, dict[str, jax.Array]]]
    policy_params: Callable[[Any], Any]
    act: Callable[[Any, jax.Array, jax.Array, jax.Array], jax.Array]
    greedy: Callable[[Any, jax.Array], jax.Array]
    action_example: jax.Array  # one action, for shaping replay storage


def make_env(name: str) -> tuple[Any, Any, EnvInfo]:
    """``(env, env_params, EnvInfo)`` for a gymnax task name or a MuJoCo Playground task
    ``"playground/<EnvName>[@<max_steps>]"`` (``jaxrl_pim.envs.playground``; needs the
    ``playground`` extra)."""
    if is_playground_name(name):
        env, params = make_playground_env(name)
    else:
        env, params = gymnax.make(name)
    obs_dim = int(env.observation_space(params).shape[0])
    space = env.action_space(params)
    if hasattr(space, "n"):
        info = EnvInfo(name, obs_dim, True, int(space.n), 0, 0.0, 0.0,
                       int(params.max_steps_in_episode))
    else:
        low = float(jnp.min(jnp.asarray(space.low)))
        high = float(jnp.max(jnp.asarray(space.high)))
        info = EnvInfo(name, obs_dim, False, 0, int(space.shape[0]), low, high,
                       int(params.max_steps_in_episode))
    return env, params, info
