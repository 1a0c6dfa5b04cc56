"""FrozenLake, re-exported from gymnax 1.0.1 (``gymnax.environments.misc.frozen_lake``).

gymnax's implementation already follows gymnasium's FrozenLake-v1: maps "4x4" and "8x8",
slippery by default (intended move and the two perpendicular moves with probability 1/3 each,
``success_rate``), reward 1 on the goal and 0 elsewhere (``reward_schedule``), holes and goal
terminal, time limits 100 (4x4) and 200 (8x8) steps. The observation is the int32 cell index
``row * ncol + col``; actions are 0 left, 1 down, 2 right, 3 up.

Convention notes:

* gymnasium's transition table ``P`` makes holes and the goal absorbing
  (``(1.0, s, 0, True)``); gymnax never steps from them (``step`` resets on termination).
  :func:`jaxrl_pim.envs.tabular_model` uses gymnasium's absorbing convention for those rows.
* gymnax's ``step_env`` draws the slip with its own key split, so trajectories match gymnasium
  in distribution, not draw for draw.
"""

from __future__ import annotations

import numpy as np
from gymnax.environments.misc.frozen_lake import (
    GOAL,
    HOLE,
    EnvParams,
    EnvState,
    FrozenLake,
)

MAP_NAMES = ("4x4", "8x8")


def terminal_mask(env: FrozenLake) -> np.ndarray:
    """Boolean ``[nrow * ncol]`` mask of holes and the goal (the terminal cells) of ``env``."""
    tiles = np.asarray(env.desc).reshape(-1)
    return (tiles == HOLE) | (tiles == GOAL)


__all__ = ["MAP_NAMES", "EnvParams", "EnvState", "FrozenLake", "terminal_mask"]
