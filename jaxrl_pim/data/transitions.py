"""The offline dataset pytree and its validation.

A :class:`Dataset` holds equal-length arrays, one row per tabular transition
``(s, a, r, s', terminated)``, kept in time order so trajectories are contiguous. Arrays can
carry leading axes: ``[M]`` for one dataset, ``[C, m]`` once chunked into ``C`` lanes
(lane-major), ``[K, n]`` for per-agent datasets.

Not to be confused with the replay rows :class:`jaxrl_pim.replay.NStepTransition` (one
single-agent transition) and :class:`jaxrl_pim.replay.Transition` (one lock-step row of N
agents).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import numpy as np

from jaxrl_pim.checks import check_finite, check_index_range, check_int


class Dataset(NamedTuple):
    """An offline tabular dataset: columns of transitions, every field of the same shape
    (``[M]``, ``[C, m]`` or ``[K, n]``).

    Attributes:
      state: current state ``s`` (integer; compact dtype, see :func:`state_dtype`).
      action: action ``a`` (uint8).
      reward: reward ``r`` (float32, environment units).
      next_state: next state ``s'`` (same dtype as ``state``).
      terminated: True when ``s'`` is terminal (no bootstrap). A time-limit cut is not
        terminal: its row bootstraps normally.
    """

    state: jax.Array | np.ndarray
    action: jax.Array | np.ndarray
    reward: jax.Array | np.ndarray
    next_state: jax.Array | np.ndarray
    terminated: jax.Array | np.ndarray

    @property
    def num_rows(self) -> int:
        """Total number of transitions (product of the array shape)."""
        return int(np.prod(np.shape(self.state)))

    @property
    def shape(self) -> tuple[int, ...]:
        """Shared array shape."""
        return tuple(np.shape(self.state))


def state_dtype(num_states: int) -> np.dtype:
    """Smallest integer dtype holding state ids ``0..num_states-1`` (uint8, int16 or int32)."""
    if num_states <= 256:
        return np.dtype(np.uint8)
    if num_states <= 32767:
        return np.dtype(np.int16)
    return np.dtype(np.int32)


def compact(t: Dataset, num_states: int) -> Dataset:
    """Cast to the compact storage dtypes (states via :func:`state_dtype`, uint8 actions)."""
    sd = state_dtype(num_states)
    return Dataset(
        state=np.asarray(t.state).astype(sd),
        action=np.asarray(t.action).astype(np.uint8),
        reward=np.asarray(t.reward).astype(np.float32),
        next_state=np.asarray(t.next_state).astype(sd),
        terminated=np.asarray(t.terminated).astype(bool),
    )


def validate(t: Dataset, num_states: int, num_actions: int, name: str = "dataset") -> None:
    """Raise ValueError unless ``t`` is a usable dataset for a ``num_states x num_actions`` MDP.

    Checks: non-empty, equal shapes, integer states/actions in range (JAX gathers would clamp
    silently), finite float rewards, boolean-like terminated flags.
    """
    check_int("num_states", num_states, 1)
    check_int("num_actions", num_actions, 1, 255)
    shapes = {f: np.shape(getattr(t, f)) for f in Dataset._fields}
    if len(set(shapes.values())) != 1:
        raise ValueError(f"{name}: fields must share one shape, got {shapes}")
    if t.num_rows == 0:
        raise ValueError(f"{name} is empty: it needs at least one transition")
    check_index_range(f"{name}.state", t.state, num_states)
    check_index_range(f"{name}.next_state", t.next_state, num_states)
    check_index_range(f"{name}.action", t.action, num_actions)
    reward = np.asarray(t.reward)
    if reward.dtype.kind not in "fiu":
        raise ValueError(f"{name}.reward must be numeric, got dtype {reward.dtype}")
    check_finite(f"{name}.reward", reward)
    term = np.asarray(t.terminated)
    if term.dtype != bool and not np.isin(term, (0, 1)).all():
        raise ValueError(f"{name}.terminated must be boolean (0/1), got dtype {term.dtype}")


def concatenate(parts: list[Dataset]) -> Dataset:
    """Concatenate datasets along their first axis."""
    return Dataset(*(np.concatenate([np.asarray(p[i]) for p in parts]) for i in range(5)))
