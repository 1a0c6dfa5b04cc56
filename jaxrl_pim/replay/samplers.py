"""Index samplers for the multi-agent replay buffers, as NamedTuples of pure functions.

Every sampler is ``Sampler(init, sample, update_priorities, on_add)``:

* ``init() -> sampler_state``: the empty state (an empty tuple for the stateless samplers;
  the prioritised ones hold ``[capacity]`` priorities, the capacity given once, at
  construction);
* ``sample(sampler_state, key, buffer_size, insert_pos, batch_size)
  -> (indices int32 [B], weights float32 [B], sampler_state)``; ``buffer_size`` and
  ``insert_pos`` may be traced int32 scalars (take them from ``BufferState``), ``batch_size``
  is a static Python int. Requires ``buffer_size >= 1``.
* ``update_priorities(sampler_state, indices, td_errors) -> sampler_state``: priority
  ``|td| + eps`` for each index (any matching shapes, e.g. ``[B]`` or ``[N, B]``; for
  duplicate indices the last one wins). A no-op for uniform / neighbour samplers.
* ``on_add(sampler_state, insert_pos) -> sampler_state``: give the row just written (the
  buffer's ``insert_pos`` BEFORE the add, taken modulo the capacity, so ``insert_pos + e``
  names the ``e``-th row of a multi-row add) the maximum priority seen so far. Call it after
  every single-step ``Buffer.add``; a no-op for uniform / neighbour samplers.

Time order. The samplers use the buffer invariant (see ``buffers``): stored row ``k`` in time
order (``k = 0`` oldest, ``k = size - 1`` newest) is physical row ``(insert_pos + k) % size``.
Neighbour runs are contiguous in TIME: a run may cross the physical end of the ring (row
``capacity - 1`` is followed by row 0 when that is newer) but never runs from the newest row
into the oldest one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax import Array

from jaxrl_pim import choices
from jaxrl_pim.checks import check_float, check_int
from jaxrl_pim.replay import sum_tree
from jaxrl_pim.replay.buffers import check_capacity


class Sampler(NamedTuple):
    """Index sampler: ``init``, ``sample``, ``update_priorities``, ``on_add`` (pure functions)."""

    init: Callable[[], Any]
    sample: Callable[..., tuple[Array, Array, Any]]
    update_priorities: Callable[[Any, Array, Array], Any]
    on_add: Callable[[Any, Array], Any]


class PrioritizedState(NamedTuple):
    """State of the prioritised samplers.

    ``sum_tree`` float32 ``[2P]``: leaves hold ``priority ** alpha`` (0 for never-written rows);
    ``max_tree`` float32 ``[2P]`` (``info_prioritized`` only, else ``None``): leaves hold the
    raw priority, the root the current maximum; ``max_priority`` float32 scalar: the largest
    priority ever assigned (given to new rows by ``on_add``; starts at 1.0).
    """

    sum_tree: Array
    max_tree: Array | None
    max_priority: Array


def _no_update(state: Any, indices: Array, td_errors: Array) -> Any:
    del indices, td_errors
    return state


def _no_add(state: Any, insert_pos: Array) -> Any:
    del insert_pos
    return state


def _stateless_init() -> tuple:
    return ()


def _physical(chron: Array, buffer_size: Array, insert_pos: Array) -> Array:
    """Physical row of time-ordered row ``chron`` (0 = oldest); see module docstring."""
    return ((insert_pos + chron) % buffer_size).astype(jnp.int32)


def _chronological(row: Array, buffer_size: Array, insert_pos: Array) -> Array:
    """Time order (0 = oldest) of physical row ``row``."""
    return ((row - insert_pos) % buffer_size).astype(jnp.int32)


def _size(buffer_size: Array) -> Array:
    # Guard against a modulo by zero on an empty buffer (sampling it is a caller error).
    return jnp.maximum(jnp.asarray(buffer_size, jnp.int32), 1)


def uniform() -> Sampler:
    """Uniform sampling with replacement over the stored rows ``[0, size)`` (MADDPG default).

    Weights are all 1.
    """

    def sample(state, key, buffer_size, insert_pos, batch_size):
        batch_size = check_int("batch_size", batch_size, lo=1)
        del insert_pos
        idx = jax.random.randint(key, (batch_size,), 0, _size(buffer_size), dtype=jnp.int32)
        return idx, jnp.ones((batch_size,), jnp.float32), state

    return Sampler(_stateless_init, sample, _no_update, _no_add)


def neighbor(num_refs: int, run_length: int, window: bool = False) -> Sampler:
    """Locality-aware (neighbour) sampling: R reference rows, a contiguous run of rows at each.

    * ``window=False``: each reference ``i`` takes the ``n = run_length`` rows ``i, i+1, ...,
      i+n-1`` (in time order); ``batch_size`` must equal ``R * n``.
    * ``window=True``: each reference ``i`` takes the ``2n + 1`` rows ``i-n, ..., i+n``;
      ``R * (2n + 1)`` rows are drawn and the first ``batch_size`` kept, so ``batch_size``
      must be <= ``R (2n + 1)``: only the first ``ceil(B / (2n + 1))`` windows are used and
      the last one may be cut short. To use all R windows pick ``2n + 1 ~= B / R`` (e.g.
      R = 31, n = 16 for B = 1,024: 31 x 33 = 1,023 rows, batch 1,023).

    Boundary rule: a run is contiguous in time and lies entirely inside the stored history --
    the reference is drawn uniformly among the ``size - L + 1`` positions whose whole run (of
    ``L`` rows) fits between the oldest and the newest row, so a run never goes from the
    newest row into the oldest (it may cross the physical end of the ring). Consequently the
    first and last ``L - 1`` rows in time are drawn less often than the others. If
    ``size < L`` the run repeats rows: row ``k`` of the run is ``k mod size``.

    Batch order: the runs one after another (``[R, L]`` flattened). Weights are all 1.
    """
    num_refs = check_int("num_refs", num_refs, lo=1)
    run_length = check_int("run_length", run_length, lo=0 if window else 1)
    rows_per_ref = 2 * run_length + 1 if window else run_length

    def sample(state, key, buffer_size, insert_pos, batch_size):
        batch_size = check_int("batch_size", batch_size, lo=1)
        drawn = num_refs * rows_per_ref
        if window:
            if batch_size > drawn:
                raise ValueError(
                    f"batch_size must be <= num_refs * (2 * run_length + 1) = {drawn} for "
                    f"num_refs={num_refs} windows of 2*{run_length}+1 rows; got {batch_size}"
                )
        elif batch_size != drawn:
            raise ValueError(
                f"batch_size must equal num_refs * run_length = {num_refs} * {run_length} = "
                f"{drawn}; got {batch_size}"
            )
        size = _size(buffer_size)
        starts = jax.random.randint(
            key, (num_refs,), 0, jnp.maximum(size - rows_per_ref + 1, 1), dtype=jnp.int32
        )
        chron = (starts[:, None] + jnp.arange(rows_per_ref, dtype=jnp.int32)[None, :]) % size
        idx = _physical(chron.reshape(-1)[:batch_size], size, insert_pos)
        return idx, jnp.ones((batch_size,), jnp.float32), state

    return Sampler(_stateless_init, sample, _no_update, _no_add)


def _check_prio_args(capacity: int, alpha: float, beta: float, eps: float) -> int:
    capacity = check_capacity(capacity)
    check_float("alpha", alpha, lo=0.0)
    check_float("beta", beta, lo=0.0)
    check_float("eps", eps, lo=0.0, lo_open=True)
    return capacity


def _init_prio(capacity: int, with_max: bool) -> PrioritizedState:
    return PrioritizedState(
        sum_tree=sum_tree.init_tree(capacity),
        max_tree=sum_tree.init_tree(capacity) if with_max else None,
        max_priority=jnp.ones((), jnp.float32),
    )


def _set_priorities(
    state: PrioritizedState, indices: Array, priorities: Array, alpha: float
) -> PrioritizedState:
    indices = jnp.asarray(indices, jnp.int32).reshape(-1)
    priorities = jnp.asarray(priorities, jnp.float32).reshape(-1)
    tree = sum_tree.set_leaves(state.sum_tree, indices, priorities**alpha)
    max_tree = state.max_tree
    if max_tree is not None:
        max_tree = sum_tree.set_leaves(max_tree, indices, priorities, combine=jnp.maximum)
    return PrioritizedState(tree, max_tree, jnp.maximum(state.max_priority, priorities.max()))


def state_from_priorities(
    priorities: Array, alpha: float, max_tree: bool = False
) -> PrioritizedState:
    """Prioritised-sampler state with every row's priority set at once (bulk, O(capacity)).

    ``priorities`` float ``[capacity]`` (raw, > 0 for stored rows, 0 for rows never written);
    ``alpha`` must match the sampler's; ``max_tree=True`` for :func:`info_prioritized`.
    Equivalent to ``update_priorities`` on every row (without ``eps``), useful to restore a
    state or to set up benchmarks; ``max_priority`` becomes ``max(1, max(priorities))``.
    """
    check_float("alpha", alpha, lo=0.0)
    priorities = jnp.asarray(priorities, jnp.float32).reshape(-1)
    leaves = jnp.where(priorities > 0, priorities**alpha, 0.0)
    return PrioritizedState(
        sum_tree=sum_tree.build(leaves),
        max_tree=sum_tree.build(priorities, combine=jnp.maximum) if max_tree else None,
        max_priority=jnp.maximum(priorities.max(), 1.0),
    )


def _make_prio_updates(capacity: int, alpha: float, eps: float) -> tuple[Callable, Callable]:
    def update_priorities(state, indices, td_errors):
        indices = jnp.asarray(indices)
        td_errors = jnp.asarray(td_errors, jnp.float32)
        if indices.shape != td_errors.shape:
            raise ValueError(
                f"indices and td_errors must have the same shape; got {indices.shape} and "
                f"{td_errors.shape}"
            )
        return _set_priorities(state, indices, jnp.abs(td_errors) + eps, alpha)

    def on_add(state, insert_pos):
        row = jnp.reshape(jnp.asarray(insert_pos, jnp.int32) % capacity, (1,))
        return _set_priorities(state, row, state.max_priority[None], alpha)

    return update_priorities, on_add


def _importance_weights(prob: Array, buffer_size: Array, beta: float) -> Array:
    """``w = (1 / (size * P))^beta``, divided by the largest weight in the batch."""
    w = (_size(buffer_size).astype(jnp.float32) * prob) ** (-beta)
    return (w / jnp.max(w)).astype(jnp.float32)


def prioritized(
    capacity: int, alpha: float = 0.6, beta: float = 0.4, eps: float = 1e-6, stratified: bool = True
) -> Sampler:
    """Proportional prioritised replay (PER) on a sum tree held in JAX arrays.

    Row ``i`` is drawn with probability ``P(i) = p_i^alpha / sum_k p_k^alpha`` where ``p_i`` is
    its priority (``|td| + eps`` after ``update_priorities``; new rows get the largest
    priority seen so far through ``on_add``; rows never written have probability 0, so
    ``on_add`` must be called for every added row). With ``stratified=True`` (default, as in
    Schaul et al.) the total mass is cut into B equal segments and one target is drawn
    uniformly in each; otherwise B independent targets. Each draw descends the tree in
    ``log2(P)`` vectorised steps. Importance weights ``w_i = (1 / (size * P(i)))^beta``,
    normalised by the batch maximum (so the largest is 1).
    """
    capacity = _check_prio_args(capacity, alpha, beta, eps)
    update_priorities, on_add = _make_prio_updates(capacity, alpha, eps)

    def init() -> PrioritizedState:
        return _init_prio(capacity, with_max=False)

    def sample(state, key, buffer_size, insert_pos, batch_size):
        batch_size = check_int("batch_size", batch_size, lo=1)
        del insert_pos
        total = state.sum_tree[1]
        u = jax.random.uniform(key, (batch_size,), jnp.float32)
        if stratified:
            u = (jnp.arange(batch_size, dtype=jnp.float32) + u) / batch_size
        idx = sum_tree.find_prefix_sum(state.sum_tree, u * total)
        prob = sum_tree.leaf_values(state.sum_tree, capacity)[idx] / total
        return idx, _importance_weights(prob, buffer_size, beta), state

    return Sampler(init, sample, update_priorities, on_add)


def expand_references(
    ref_chron: Array, counts: Array, buffer_size: Array, batch_size: int
) -> tuple[Array, Array]:
    """Expand references into a fixed-size batch of time-ordered rows.

    Reference ``r`` (time order ``ref_chron[r]``) contributes a run of ``counts[r]`` rows
    starting at itself and going forward in time; if that would pass the newest row the run
    is shifted back so that it ends at the newest row (it still contains the reference). Runs
    are laid out one after another and cut at ``batch_size``; ``sum(counts)`` must be
    >= ``batch_size`` (true when there are at least ``batch_size`` references).

    Returns ``(chron int32 [batch_size], ref_slot int32 [batch_size])``: the time order of
    each batch row and which reference it came from.
    """
    size = _size(buffer_size)
    counts = counts.astype(jnp.int32)
    ends = jnp.cumsum(counts)
    slot = jnp.arange(batch_size, dtype=jnp.int32)
    ref_slot = jnp.searchsorted(ends, slot, side="right").astype(jnp.int32)
    offset = slot - (ends - counts)[ref_slot]
    start = jnp.maximum(jnp.minimum(ref_chron[ref_slot], size - counts[ref_slot]), 0)
    return ((start + offset) % size).astype(jnp.int32), ref_slot


def info_prioritized(
    capacity: int,
    alpha: float = 0.6,
    beta: float = 0.4,
    eps: float = 1e-6,
    thresholds: tuple[float, float] = (0.33, 0.66),
    neighbors: tuple[int, int, int] = (1, 2, 4),
) -> Sampler:
    """Information-prioritised locality sampling.

    Reference rows are drawn proportionally to priority (same sum tree and ``P(i)`` as
    :func:`prioritized`, independent draws). Each reference's normalised priority
    ``q = p / max(p)`` (``max`` over all stored priorities, kept exactly by a max tree) picks
    how many rows it contributes: ``q < thresholds[0] -> neighbors[0]`` (default 1),
    ``thresholds[0] <= q <= thresholds[1] -> neighbors[1]`` (2), ``q > thresholds[1] ->
    neighbors[2]`` (4). A reference's rows are itself and the following rows in time (see
    :func:`expand_references` for the newest-row boundary).

    Static shapes: B references are drawn (enough even if every one contributes a single
    row), their runs are laid out one after another, and the batch is cut at B rows; unused
    references are discarded. Each row's importance weight is that of its reference,
    ``(1 / (size * P(ref)))^beta``, normalised by the batch maximum.
    """
    capacity = _check_prio_args(capacity, alpha, beta, eps)
    lo_t = check_float("thresholds[0]", thresholds[0], lo=0.0, hi=1.0)
    hi_t = check_float("thresholds[1]", thresholds[1], lo=lo_t, hi=1.0)
    counts_by_band = tuple(
        check_int(f"neighbors[{i}]", k, lo=1) for i, k in enumerate(neighbors)
    )
    if len(counts_by_band) != 3:
        raise ValueError(f"neighbors must hold 3 counts; got {neighbors!r}")
    update_priorities, on_add = _make_prio_updates(capacity, alpha, eps)

    def init() -> PrioritizedState:
        return _init_prio(capacity, with_max=True)

    def sample(state, key, buffer_size, insert_pos, batch_size):
        batch_size = check_int("batch_size", batch_size, lo=1)
        size = _size(buffer_size)
        total = state.sum_tree[1]
        u = jax.random.uniform(key, (batch_size,), jnp.float32) * total
        refs = sum_tree.find_prefix_sum(state.sum_tree, u)
        q = sum_tree.leaf_values(state.max_tree, capacity)[refs] / state.max_tree[1]
        counts = jnp.where(
            q < lo_t,
            counts_by_band[0],
            jnp.where(q <= hi_t, counts_by_band[1], counts_by_band[2]),
        )
        ref_chron = _chronological(refs, size, insert_pos)
        chron, ref_slot = expand_references(ref_chron, counts, size, batch_size)
        idx = _physical(chron, size, insert_pos)
        prob = sum_tree.leaf_values(state.sum_tree, capacity)[refs[ref_slot]] / total
        return idx, _importance_weights(prob, buffer_size, beta), state

    return Sampler(init, sample, update_priorities, on_add)


SAMPLERS = choices.SAMPLERS  # the names live in jaxrl_pim.choices (no jax to import)
