"""The small tabular MDP of the trainer and kernel tests, and its random datasets."""

from __future__ import annotations

import numpy as np

from jaxrl_pim.data import Dataset

S, A = 7, 3  # states, actions


def random_dataset(rows: int, seed: int = 0, reward_scale: float = 1.0) -> Dataset:
    """``rows`` uniformly random transitions over ``S`` states and ``A`` actions, integer
    rewards in [-3, 3] times ``reward_scale``, about 10 % of them terminal."""
    rng = np.random.default_rng(seed)
    return Dataset(
        state=rng.integers(0, S, rows).astype(np.uint8),
        action=rng.integers(0, A, rows).astype(np.uint8),
        reward=(rng.integers(-3, 4, rows) * reward_scale).astype(np.float32),
        next_state=rng.integers(0, S, rows).astype(np.uint8),
        terminated=rng.random(rows) < 0.1,
    )
