"""ActorQ's replay: the library's ring buffer plus its dense prioritized sampler.

``make_replay(capacity, example, alpha, beta, eps)`` composes
:func:`jaxrl_pim.replay.make_ring_buffer` (storage of :class:`~jaxrl_pim.replay.NStepTransition`
rows) and :func:`jaxrl_pim.replay.dense_prioritized` (proportional sampling ``p_i^alpha /
sum_j p_j^alpha`` over the valid rows, importance weights ``(N P(i))^-beta`` normalised by
their maximum over the buffer; ``alpha = 0`` is uniform replay). New transitions get the
largest priority seen so far; transitions added with ``valid=False`` are never sampled.
The result keeps ActorQ's calls short: ``add(state, batch, valid)``, ``sample(state, key, B)
-> (idx, batch, weights)``, ``update_priorities(state, idx, td_abs)``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax

from jaxrl_pim.replay import BufferState, DenseState, dense_prioritized, make_ring_buffer


class ReplayState(NamedTuple):
    """Ring-buffer contents and the sampler's priorities."""

    buffer: BufferState
    sampler: DenseState

    @property
    def size(self) -> jax.Array:
        """int32 rows written so far (<= capacity), valid or not."""
        return self.buffer.size


class Replay(NamedTuple):
    """Pure replay functions (see the module docstring)."""

    init: Callable[[], ReplayState]
    add: Callable[..., ReplayState]
    sample: Callable[[ReplayState, jax.Array, int], tuple[jax.Array, Any, jax.Array]]
    update_priorities: Callable[[ReplayState, jax.Array, jax.Array], ReplayState]


def make_replay(capacity: int, example: Any, alpha: float = 0.6, beta: float = 0.2,
                eps: float = 1e-6) -> Replay:
    """A replay of ``capacity`` transitions shaped like ``example`` (one transition, no batch
    axis); ``alpha`` priority exponent, ``beta`` importance-weight exponent, ``eps`` floor."""
    buffer = make_ring_buffer(capacity, example)
    sampler = dense_prioritized(capacity, alpha, beta, eps)

    def init() -> ReplayState:
        """Empty storage, every row invalid."""
        return ReplayState(buffer.init(), sampler.init())

    def add(state: ReplayState, batch: Any, valid: jax.Array | None = None) -> ReplayState:
        """Append a batch ``[b, ...]`` (``b <= capacity``); ``valid`` ``[b]`` masks entries."""
        b = jax.tree.leaves(batch)[0].shape[0]
        pos = state.buffer.insert_pos
        return ReplayState(buffer.add(state.buffer, batch),
                           sampler.on_add(state.sampler, pos, b, valid))

    def sample(state: ReplayState, key: jax.Array, batch_size: int):
        """Draw ``batch_size`` rows; returns ``(idx [B], batch, weights [B])``."""
        idx, weights, _ = sampler.sample(state.sampler, key, state.buffer.size,
                                         state.buffer.insert_pos, batch_size)
        return idx, buffer.gather(state.buffer, idx), weights

    def update_priorities(state: ReplayState, idx: jax.Array, td_abs: jax.Array) -> ReplayState:
        """Set the priorities of ``idx`` to ``|td| + eps``."""
        return state._replace(sampler=sampler.update_priorities(state.sampler, idx, td_abs))

    return Replay(init, add, sample, update_priorities)

