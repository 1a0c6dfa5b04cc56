"""CliffWalking (Sutton & Barto, Example 6.6) in the gymnax API, equal to CliffWalking-v1.

A 4x12 grid; state index (the observation, int32 in ``[0, 48)``) is ``row * 12 + col``. The
agent starts at 36 (row 3, col 0); the goal is 47 (row 3, col 11); cells 37..46 are the cliff.

Actions (int in ``[0, 4)``): 0 up, 1 right, 2 down, 3 left. Moves off the grid leave the agent
in place. Every step costs -1; stepping into the cliff costs -100 and sends the agent back to
the start **without** ending the episode (gymnasium v1 convention: the returned state is 36 and
``terminated`` is False). Entering the goal ends the episode (reward -1).

``is_slippery=True`` reproduces CliffWalkingSlippery-v1: the intended move and the two
perpendicular moves each happen with probability 1/3.

Gymnasium registers CliffWalking-v1 without a time limit. The default
``EnvParams.max_steps_in_episode`` is :data:`NO_TIME_LIMIT` (the largest value the int32 step
counter reaches), i.e. effectively no truncation; pass a smaller value for bounded episodes.

The cliff cells are never occupied (the agent is sent back before it stands there), and the
goal is terminal; :func:`jaxrl_pim.envs.tabular_model` marks only the goal in
``terminal_states``. Actions outside ``[0, 4)`` cannot be rejected inside jit: validate on the host.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from jaxrl_pim.envs import api, spaces
from jaxrl_pim.envs.indexed import IndexedWorld

NUM_ROWS = 4
NUM_COLS = 12
NUM_STATES = NUM_ROWS * NUM_COLS
NUM_ACTIONS = 4
START = 36
GOAL = 47
NO_TIME_LIMIT = 2**31 - 2

UP, RIGHT, DOWN, LEFT = range(NUM_ACTIONS)
# (d_row, d_col) per action.
_DELTAS = ((-1, 0), (0, 1), (1, 0), (0, -1))


def is_cliff(index: Any) -> jax.Array:
    """True for cliff cells 37..46 (vectorisable over int state indices)."""
    index = jnp.asarray(index)
    return (index > START) & (index < GOAL)


@struct.dataclass
class EnvState(api.EnvState):
    """Agent cell index ``row * 12 + col`` (int32) and elapsed steps."""

    position: jax.Array


@struct.dataclass
class EnvParams(api.EnvParams):
    """Episode limit (default: none in practice, as gymnasium's CliffWalking-v1)."""

    max_steps_in_episode: int = NO_TIME_LIMIT


class CliffWalking(IndexedWorld[EnvState, EnvParams]):
    """CliffWalking-v1 (or CliffWalkingSlippery-v1) as a gymnax environment."""

    params_type = EnvParams
    state_type = EnvState
    num_states = NUM_STATES
    num_actions = NUM_ACTIONS

    def __init__(self, is_slippery: bool = False) -> None:
        if not isinstance(is_slippery, bool):
            raise ValueError(f"is_slippery must be a bool, got {is_slippery!r}")
        self.is_slippery = is_slippery

    def fields(self, index: Any) -> dict[str, jax.Array]:
        """The agent's cell: ``position`` = ``index`` (int32)."""
        return {"position": jnp.asarray(index, dtype=jnp.int32)}

    def index_of(self, state: EnvState) -> jax.Array:
        """The agent's cell index."""
        return state.position

    def initial_index(self, key: jax.Array) -> jax.Array:
        """Start at cell 36 (row 3, col 0)."""
        del key
        return jnp.int32(START)

    def move(self, position: Any, direction: Any) -> tuple[jax.Array, jax.Array, jax.Array]:
        """Deterministic effect of moving ``direction`` (0..3) from ``position``.

        Returns ``(next_position int32, reward float32, terminated bool)``; the cliff sends the
        agent to :data:`START` with reward -100. Used by :meth:`transition` after the slip draw
        and by :func:`jaxrl_pim.envs.tabular_model`.
        """
        position = jnp.asarray(position, dtype=jnp.int32)
        direction = jnp.asarray(direction, dtype=jnp.int32)
        deltas = jnp.asarray(_DELTAS, dtype=jnp.int32)[direction]
        row = jnp.clip(position // NUM_COLS + deltas[..., 0], 0, NUM_ROWS - 1)
        col = jnp.clip(position % NUM_COLS + deltas[..., 1], 0, NUM_COLS - 1)
        target = row * NUM_COLS + col
        cliff = is_cliff(target)
        next_position = jnp.where(cliff, START, target).astype(jnp.int32)
        reward = jnp.where(cliff, -100.0, -1.0).astype(jnp.float32)
        return next_position, reward, next_position == GOAL

    def transition(self, key: jax.Array, state: EnvState, action: jax.Array
                   ) -> tuple[EnvState, jax.Array, jax.Array]:
        """One move; ``key`` is used only when slippery."""
        if self.is_slippery:
            # 0 -> action - 1, 1 -> action, 2 -> action + 1 (mod 4), each with probability 1/3.
            offset = jax.random.randint(key, (), 0, 3) - 1
            direction = (action + offset) % NUM_ACTIONS
        else:
            direction = action
        position, reward, terminated = self.move(state.position, direction)
        return EnvState(time=state.time + 1, position=position), reward, terminated

    def is_terminated(self, state: EnvState, params: EnvParams) -> jax.Array:
        """True at the goal cell."""
        del params
        return state.position == GOAL

    def state_space(self, params: EnvParams) -> spaces.Dict:
        """Position and time spaces."""
        return spaces.Dict(
            {
                "position": spaces.Discrete(NUM_STATES),
                "time": spaces.Discrete(params.max_steps_in_episode + 1),
            }
        )
