"""The agent interface shared by DQN and D4PG (the environment description it needs,
:class:`~jaxrl_pim.envs.EnvInfo`, comes from the env factory :mod:`jaxrl_pim.envs`).

An ``Agent`` is a NamedTuple of pure functions (design contract 3):

* ``init(key) -> LearnerState``: full-precision learner state.
* ``update(state, batch, weights) -> (state, td_abs [B], metrics)``: one learner step on an
  ``NStepTransition`` batch with importance weights ``[B]``; ``td_abs`` are the new priorities.
* ``policy_params(state) -> params``: the network that is broadcast to the actors.
* ``act(params, obs, key, explore) -> action``: one actor decision for ONE observation
  (vmap over environments); ``explore`` is epsilon (DQN) or the noise scale (D4PG).
* ``greedy(params, obs) -> action``: the noise-free action used for evaluation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax

from jaxrl_pim.envs.factory import EnvInfo


class Agent(NamedTuple):
    """Pure functions of one actor-learner algorithm (see module docstring)."""

    init: Callable[[jax.Array], Any]
    update: Callable[[Any, Any, jax.Array], tuple[Any, jax.Array, dict[str, jax.Array]]]
    policy_params: Callable[[Any], Any]
    act: Callable[[Any, jax.Array, jax.Array, jax.Array], jax.Array]
    greedy: Callable[[Any, jax.Array], jax.Array]
    action_example: jax.Array  # one action, for shaping replay storage


__all__ = ["Agent", "EnvInfo"]
