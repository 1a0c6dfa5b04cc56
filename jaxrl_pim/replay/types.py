"""The replay buffers' types: a lock-step :class:`Transition` of N agents, the
:class:`BufferState` every buffer keeps, and :class:`Buffer`, a buffer as three pure
functions (flashbax / optax style). Every layout (:mod:`jaxrl_pim.replay.layouts`) and
:func:`~jaxrl_pim.replay.make_ring_buffer` returns these; all are re-exported by
:mod:`jaxrl_pim.replay.buffers` and :mod:`jaxrl_pim.replay`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from jax import Array


class Transition(NamedTuple):
    """One lock-step transition of N agents (or a stack/batch of them, see shapes below).

    For ``Buffer.add``: ``obs [N, O]``, ``action [N, A]``, ``reward [N]``, ``next_obs [N, O]``,
    ``done [N]`` -- or the same with a leading time axis ``[T, ...]`` to append T steps.
    """

    obs: Array
    action: Array
    reward: Array
    next_obs: Array
    done: Array


# What ``Buffer.gather`` returns; same fields, shapes documented on ``gather``.
Batch = Transition


class BufferState(NamedTuple):
    """Buffer contents and ring position.

    ``data`` holds the arrays in the buffer's layout (:mod:`jaxrl_pim.replay.buffers` lists
    the four): a ``Transition`` of field arrays (``per_agent``, ``interleaved``), one float32
    array ``[capacity, R]`` of packed rows (``packed``) or a
    :class:`~jaxrl_pim.replay.CompactData` (``compact``); any pytree of ``[capacity, ...]``
    arrays for :func:`~jaxrl_pim.replay.make_ring_buffer`;
    ``insert_pos`` int32 scalar: the row the next ``add`` writes;
    ``size`` int32 scalar: number of stored rows, in ``[0, capacity]``.
    """

    data: Any
    insert_pos: Array
    size: Array


class Buffer(NamedTuple):
    """A replay buffer as three pure functions (flashbax / optax style).

    ``init() -> BufferState``; ``add(state, transition) -> state``;
    ``gather(state, indices, time_major=False) -> Batch``.
    """

    init: Callable[[], BufferState]
    add: Callable[[BufferState, Transition], BufferState]
    gather: Callable[..., Batch]
