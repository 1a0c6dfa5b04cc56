"""Taxi (Dietterich 2000) in the gymnax ``Environment`` API, step-for-step equal to Taxi-v4.

The world is a 5x5 grid with four coloured stands (R, G, Y, B) and a few internal walls::

    +---------+
    |R: | : :G|
    | : | : : |
    | : : : : |
    | | : | : |
    |Y| : |B: |
    +---------+

State index (the observation, an int32 scalar in ``[0, 500)``)::

    ((taxi_row * 5 + taxi_col) * 5 + pass_loc) * 4 + dest

with ``pass_loc`` in 0..3 (waiting at stand R, G, Y, B) or 4 (in the taxi) and ``dest`` in 0..3.

Actions (int in ``[0, 6)``): 0 south, 1 north, 2 east, 3 west, 4 pick up, 5 drop off.

Rewards (float32): -1 per step; -10 for an illegal pick-up (passenger not under the taxi) or
drop-off (passenger not in the taxi, or taxi not on a stand); +20 for dropping the passenger at
the destination, which terminates the episode. Dropping the passenger on a *different* stand
is legal (-1): the passenger then waits at that stand (the gymnasium rule, kept here).

Episodes are truncated after ``EnvParams.max_steps_in_episode`` steps (200, as gymnasium's
``TimeLimit`` for Taxi-v4): ``step`` returns ``truncated=True`` on the 200th step and resets.

Conventions (same as gymnasium Taxi-v4 with its default ``is_rainy=False``,
``fickle_passenger=False``): the initial state is uniform over the 300 states in which the
passenger waits at a stand that is not its destination (25 taxi cells x 4 stands x 3
destinations). The 100 states with ``pass_loc == dest`` are *terminal*: only the 4 of them with
the taxi on the destination are reachable, and only as the final state of a successful
episode; :func:`jaxrl_pim.envs.tabular_model` marks them in ``terminal_states``.

Actions outside ``[0, 6)`` cannot be rejected inside jit; they act as a no-op costing -1.
Validate actions on the host when they come from user data.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxrl_pim.envs import api, spaces
from jaxrl_pim.envs.indexed import IndexedWorld

NUM_ROWS = 5
NUM_COLS = 5
NUM_LOCS = 4
NUM_STATES = 500
NUM_ACTIONS = 6

SOUTH, NORTH, EAST, WEST, PICKUP, DROPOFF = range(NUM_ACTIONS)
IN_TAXI = 4

MAP = (
    "+---------+",
    "|R: | : :G|",
    "| : | : : |",
    "| : : : : |",
    "| | : | : |",
    "|Y| : |B: |",
    "+---------+",
)

# Stand coordinates (row, col) for R, G, Y, B.
LOCS = ((0, 0), (0, 4), (4, 0), (4, 3))

# Host-side wall tables derived from MAP: a ':' between two cells means the move is open.
_MAP_CHARS = np.array([list(line) for line in MAP])
_EAST_OPEN = np.array(
    [[_MAP_CHARS[1 + r, 2 * c + 2] == ":" for c in range(NUM_COLS)] for r in range(NUM_ROWS)]
)
_WEST_OPEN = np.array(
    [[_MAP_CHARS[1 + r, 2 * c] == ":" for c in range(NUM_COLS)] for r in range(NUM_ROWS)]
)
_LOC_ROW = np.array([r for r, _ in LOCS], dtype=np.int32)
_LOC_COL = np.array([c for _, c in LOCS], dtype=np.int32)


def encode(taxi_row: Any, taxi_col: Any, pass_loc: Any, dest: Any) -> jax.Array:
    """Encode Taxi components into the state index (int32, any matching shapes, broadcasts).

    ``taxi_row``/``taxi_col`` in 0..4, ``pass_loc`` in 0..4 (4 = in taxi), ``dest`` in 0..3.
    """
    taxi_row, taxi_col, pass_loc, dest = (
        jnp.asarray(x, dtype=jnp.int32) for x in (taxi_row, taxi_col, pass_loc, dest)
    )
    return ((taxi_row * NUM_COLS + taxi_col) * (NUM_LOCS + 1) + pass_loc) * NUM_LOCS + dest


def decode(state: Any) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """Inverse of :func:`encode`: state index (any shape) -> (taxi_row, taxi_col, pass_loc, dest).

    Each output is int32 with the shape of ``state``.
    """
    i = jnp.asarray(state, dtype=jnp.int32)
    dest = i % NUM_LOCS
    i = i // NUM_LOCS
    pass_loc = i % (NUM_LOCS + 1)
    i = i // (NUM_LOCS + 1)
    taxi_col = i % NUM_COLS
    taxi_row = i // NUM_COLS
    return taxi_row, taxi_col, pass_loc, dest


def initial_states() -> np.ndarray:
    """The 300 possible initial state indices (int32, sorted): passenger at a stand != dest."""
    out = [
        ((r * NUM_COLS + c) * (NUM_LOCS + 1) + p) * NUM_LOCS + d
        for r in range(NUM_ROWS)
        for c in range(NUM_COLS)
        for p in range(NUM_LOCS)
        for d in range(NUM_LOCS)
        if p != d
    ]
    return np.array(sorted(out), dtype=np.int32)


def terminal_mask() -> np.ndarray:
    """Boolean ``[500]`` mask of terminal states (passenger at its destination)."""
    _, _, p, d = decode(jnp.arange(NUM_STATES))
    return np.asarray(p == d)


@struct.dataclass
class EnvState(api.EnvState):
    """Taxi state: components of the state index plus elapsed steps (all int32 scalars)."""

    taxi_row: jax.Array
    taxi_col: jax.Array
    pass_loc: jax.Array
    dest: jax.Array


@struct.dataclass
class EnvParams(api.EnvParams):
    """Episode limit; gymnasium registers Taxi-v4 with a 200-step ``TimeLimit``."""

    max_steps_in_episode: int = 200


class Taxi(IndexedWorld[EnvState, EnvParams]):
    """Taxi-v4 (deterministic default) as a gymnax environment; see the module docstring."""

    params_type = EnvParams
    state_type = EnvState
    num_states = NUM_STATES
    num_actions = NUM_ACTIONS

    def __init__(self) -> None:
        self._initial_states = initial_states()

    def fields(self, index: Any) -> dict[str, jax.Array]:
        """The components of state ``index`` (:func:`decode`)."""
        row, col, pass_loc, dest = decode(index)
        return {"taxi_row": row, "taxi_col": col, "pass_loc": pass_loc, "dest": dest}

    def index_of(self, state: EnvState) -> jax.Array:
        """The state index (:func:`encode`)."""
        return encode(state.taxi_row, state.taxi_col, state.pass_loc, state.dest)

    def initial_index(self, key: jax.Array) -> jax.Array:
        """Uniform over the 300 initial states (as Taxi-v4's ``initial_state_distrib``)."""
        pick = jax.random.randint(key, (), 0, self._initial_states.shape[0])
        return jnp.asarray(self._initial_states)[pick]

    def transition(self, key: jax.Array, state: EnvState, action: jax.Array
                   ) -> tuple[EnvState, jax.Array, jax.Array]:
        """One deterministic transition (``key`` is unused)."""
        row, col, pass_loc, dest = state.taxi_row, state.taxi_col, state.pass_loc, state.dest
        loc_row = jnp.asarray(_LOC_ROW)
        loc_col = jnp.asarray(_LOC_COL)

        new_row = jnp.where(
            action == SOUTH,
            jnp.minimum(row + 1, NUM_ROWS - 1),
            jnp.where(action == NORTH, jnp.maximum(row - 1, 0), row),
        )
        east_ok = jnp.asarray(_EAST_OPEN)[row, col]
        west_ok = jnp.asarray(_WEST_OPEN)[row, col]
        new_col = jnp.where(
            (action == EAST) & east_ok,
            col + 1,
            jnp.where((action == WEST) & west_ok, col - 1, col),
        )

        # Which stand (0..3) the taxi is on, or -1.
        on_stand = (loc_row == row) & (loc_col == col)
        stand = jnp.where(on_stand.any(), jnp.argmax(on_stand), -1)
        in_taxi = pass_loc == IN_TAXI

        pickup_ok = (~in_taxi) & (stand == pass_loc)
        delivered = in_taxi & (stand == dest)
        drop_elsewhere = in_taxi & (stand >= 0) & ~delivered

        is_pickup = action == PICKUP
        is_dropoff = action == DROPOFF
        new_pass = jnp.where(
            is_pickup & pickup_ok,
            IN_TAXI,
            jnp.where(is_dropoff & (delivered | drop_elsewhere), stand, pass_loc),
        )
        illegal = (is_pickup & ~pickup_ok) | (is_dropoff & ~delivered & ~drop_elsewhere)
        success = is_dropoff & delivered
        reward = jnp.where(success, 20.0, jnp.where(illegal, -10.0, -1.0)).astype(jnp.float32)

        next_state = EnvState(
            time=state.time + 1,
            taxi_row=new_row.astype(jnp.int32),
            taxi_col=new_col.astype(jnp.int32),
            pass_loc=new_pass.astype(jnp.int32),
            dest=dest,
        )
        return next_state, reward, success

    def is_terminated(self, state: EnvState, params: EnvParams) -> jax.Array:
        """True once the passenger stands at its destination."""
        del params
        return state.pass_loc == state.dest

    def state_space(self, params: EnvParams) -> spaces.Dict:
        """Component and time spaces."""
        return spaces.Dict(
            {
                "taxi_row": spaces.Discrete(NUM_ROWS),
                "taxi_col": spaces.Discrete(NUM_COLS),
                "pass_loc": spaces.Discrete(NUM_LOCS + 1),
                "dest": spaces.Discrete(NUM_LOCS),
                "time": spaces.Discrete(params.max_steps_in_episode + 1),
            }
        )
