"""Comparing a seed of a vmapped group with the seed alone (``tests/marl/test_schedule.py``,
``tests/marl/test_seeds.py``)."""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

#: A seed in a vmapped group runs batched matmuls and reductions; XLA may order their float
#: sums differently from the single-seed program, so floats are compared to within SEED_RTOL
#: relative (+ SEED_ATOL absolute) and everything else (counters, buffer positions, keys)
#: exactly. Measured on XLA:CPU: bit for bit from keys at XLA's default optimisation level;
#: relative 6e-6 at the suite's lowest effort with the legacy emitters, from stacked states at
#: different step counts, and split over 8 devices. Adam's step (m / (sqrt(v) + eps), about
#: the learning rate in size whatever the gradient) turns a last-bit difference in a gradient
#: near 0 into an absolute one in a weight: 9e-6 measured in tests/marl/test_seeds.py's
#: two-segment run at the lowest effort, hence SEED_ATOL; two different seeds' weights differ
#: by about 1e-2.
SEED_RTOL, SEED_ATOL = 1e-4, 5e-5


def equal_trees(a: Any, b: Any) -> bool:
    """``a`` and ``b`` (pytrees of one structure) equal: float leaves to within SEED_RTOL /
    SEED_ATOL (NaN equal to NaN), other leaves exactly."""
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        x, y = np.asarray(x), np.asarray(y)
        if x.dtype.kind == "f":
            if not np.allclose(x, y, rtol=SEED_RTOL, atol=SEED_ATOL, equal_nan=True):
                return False
        elif not np.array_equal(x, y):
            return False
    return True


def seed(tree: Any, i: int) -> Any:
    """Seed ``i`` of a pytree whose leaves have a leading seed axis."""
    return jax.tree.map(lambda x: x[i], tree)
