"""Multi-agent replay buffers: the ``per_agent``, ``interleaved`` and ``packed`` layouts behind one
interface.

A buffer stores per-step transitions of ONE team of ``N`` agents, appended in lock-step:

* ``obs`` float32 ``[N, O]``, ``action`` float32 ``[N, A]``, ``reward`` float32 ``[N]``,
  ``next_obs`` float32 ``[N, O]``, ``done`` float32 ``[N]`` (1.0 = episode ended).

Layouts (same interface, same data, different memory order):

* ``per_agent`` -- the original MADDPG layout: N separate ring buffers, arrays
  ``[N, capacity, ...]``. Assembling all agents' data at B indices is N gathers.
* ``interleaved`` -- one row per time step holding all agents: arrays ``[capacity, N, ...]``.
  All agents' data at B indices is ONE gather per field of B contiguous rows.
* ``packed`` -- one array ``[capacity, R]``: a time step's every field of every agent in one
  row of ``R = N (2 O + A + 2)`` floats (``obs``, ``action``, ``reward``, ``next_obs``,
  ``done``, each agent-major within its field). A batch is ONE gather of whole rows, which
  ``gather`` then slices into the fields (:func:`gather_rows` returns the rows unsliced).
  ``benchmarks/marl_sampling.py`` times its standalone round and ``benchmarks/marl_e2e.py``
  the trainer with it (mode ``packed``).
* ``compact`` -- the ``interleaved`` rows without ``next_obs``: every observation is stored
  once. A row's ``next_obs`` is the ``obs`` of the row ``stride`` rows later (the same
  environment's next step, ``stride`` = rows per ``add``, the trainer's ``num_envs``) when it
  equals it bit for bit -- within an episode -- and otherwise (episode ends) a copy kept in a
  small ring of ``final_obs``; the newest rows' ``next_obs`` wait in ``pending`` until the
  next ``add``. ``gather`` returns exactly what ``interleaved`` returns for the same adds.
  Arrays: :class:`CompactData`.

Ring semantics: ``add`` writes at ``insert_pos`` and advances it modulo ``capacity``; ``size``
counts stored rows and saturates at ``capacity``. Invariant used by the samplers: while the
buffer is not full ``insert_pos == size``; once full the oldest row is ``insert_pos`` and the
newest ``insert_pos - 1`` (mod capacity). Row ``k`` in time order (``k = 0`` oldest) is
therefore physical row ``(insert_pos + k) % size`` in both cases.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from jaxrl_pim import choices
from jaxrl_pim.checks import (
    MAX_CAPACITY,  # noqa: F401  (in jaxrl_pim.checks with check_capacity; re-exported)
    check_capacity,
    check_choice,
    check_index_range,
    check_int,
)

LAYOUTS = choices.LAYOUTS  # the names live in jaxrl_pim.choices (no jax to import)
_FIELDS: tuple[str, ...] = ("obs", "action", "reward", "next_obs", "done")


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


class CompactData(NamedTuple):
    """The ``compact`` layout's arrays (``C`` rows, ``E`` = stride, ``F`` final slots).

    ``obs [C, N, O]``, ``action [C, N, A]``, ``reward [C, N]``, ``done [C, N]`` as in
    ``interleaved``; ``next_slot`` int32 ``[C]``: where a row's ``next_obs`` is (``-1``: the
    ``obs`` of row ``(r + E) % C``; ``-2``: ``pending``, the row is among the newest ``E``;
    ``k >= 0``: ``final_obs[k]``); ``final_obs [F, N, O]`` (a ring, next write at
    ``final_pos``, int32 scalar); ``pending [E, N, O]``: the newest rows' ``next_obs``.
    """

    obs: Array
    action: Array
    reward: Array
    done: Array
    next_slot: Array
    final_obs: Array
    final_pos: Array
    pending: Array


def compact_final_slots(capacity: int, stride: int, episode_length: int | None) -> int:
    """Final-observation slots of a ``compact`` buffer: ``stride x (ceil(capacity / (stride x
    episode_length)) + 2)`` when every environment's episodes last at least
    ``episode_length`` steps (each live row range holds at most that many episode ends), at
    most ``capacity``; ``capacity`` when ``episode_length`` is None (any data)."""
    if episode_length is None:
        return capacity
    return min(capacity, stride * (-(-capacity // (stride * episode_length)) + 2))


def _bits(x: Array) -> Array:
    """float32 values as their int32 bit patterns (equality that tells -0.0 from 0.0 and a
    NaN from itself)."""
    return jax.lax.bitcast_convert_type(x, jnp.int32)


class BufferState(NamedTuple):
    """Buffer contents and ring position.

    ``data`` holds the arrays in the buffer's layout (see the module docstring): a
    ``Transition`` of field arrays (``per_agent``, ``interleaved``) or one float32 array
    ``[capacity, R]`` of packed rows (``packed``);
    ``insert_pos`` int32 scalar: the row the next ``add`` writes;
    ``size`` int32 scalar: number of stored rows, in ``[0, capacity]``.
    """

    data: Transition | Array
    insert_pos: Array
    size: Array


def _step_shapes(n: int, obs_dim: int, action_dim: int) -> dict[str, tuple[int, ...]]:
    """Shape of each field of one stored time step of ``n`` agents."""
    return {"obs": (n, obs_dim), "action": (n, action_dim), "reward": (n,),
            "next_obs": (n, obs_dim), "done": (n,)}


def packed_row_floats(num_agents: int, obs_dim: int, action_dim: int) -> int:
    """``R = N (2 O + A + 2)``: float32 values in one row of the ``packed`` layout."""
    return num_agents * (2 * obs_dim + action_dim + 2)


def unpack_rows(rows: Array, num_agents: int, obs_dim: int, action_dim: int) -> Transition:
    """Packed rows ``[..., R]`` (the ``packed`` layout's rows, e.g. from :func:`gather_rows`)
    as fields ``obs [..., N, O]``, ``action [..., N, A]``, ``reward [..., N]``,
    ``next_obs [..., N, O]``, ``done [..., N]``: slices and reshapes, which XLA fuses into
    their consumers inside a jit."""
    want = packed_row_floats(num_agents, obs_dim, action_dim)
    if rows.shape[-1] != want:
        raise ValueError(
            f"packed rows of N={num_agents}, O={obs_dim}, A={action_dim} have {want} floats; "
            f"got a last axis of {rows.shape[-1]}"
        )
    out, lo = [], 0
    for shape in _step_shapes(num_agents, obs_dim, action_dim).values():
        width = math.prod(shape)
        out.append(rows[..., lo:lo + width].reshape(*rows.shape[:-1], *shape))
        lo += width
    return Transition(*out)


def pack_rows(fields: Transition) -> Array:
    """Fields with leading axes ``[T]`` (``obs [T, N, O]``, ``action [T, N, A]``, ...) as the
    ``packed`` layout's rows ``[T, R]``: each field flattened, side by side in field order;
    the inverse of :func:`unpack_rows`."""
    steps = fields[0].shape[0]
    return jnp.concatenate([jnp.reshape(f, (steps, -1)) for f in fields], axis=-1)


def gather_rows(state: BufferState, indices: Array) -> Array:
    """Whole packed rows at ``indices`` (``[B]`` -> ``[B, R]``, ``[N, B]`` -> ``[N, B, R]``)
    of a ``packed``-layout state: one gather, no split into fields. For host-driven rounds
    whose consumer slices the fields itself (:func:`unpack_rows`); ``Buffer.gather`` is this
    followed by :func:`unpack_rows`."""
    if not isinstance(state.data, jax.Array) or state.data.ndim != 2:
        raise ValueError("gather_rows needs a state of the 'packed' layout (data [capacity, R])")
    return state.data[jnp.asarray(indices)]


class Buffer(NamedTuple):
    """A replay buffer as three pure functions (flashbax / optax style).

    ``init() -> BufferState``; ``add(state, transition) -> state``;
    ``gather(state, indices, time_major=False) -> Batch``.
    """

    init: Callable[[], BufferState]
    add: Callable[[BufferState, Transition], BufferState]
    gather: Callable[..., Batch]


def make_buffer(
    layout: str, capacity: int, num_agents: int, obs_dim: int, action_dim: int, *,
    stride: int = 1, episode_length: int | None = None,
) -> Buffer:
    """Build a multi-agent ring buffer.

    Args:
      layout: ``"per_agent"`` (arrays ``[N, capacity, ...]``), ``"interleaved"`` (arrays
        ``[capacity, N, ...]``) or ``"packed"`` (one array ``[capacity, R]``, see the module
        docstring).
      capacity: rows (time steps) kept; the oldest is overwritten once full.
      num_agents: N, agents in the team.
      obs_dim: O, per-agent observation length.
      action_dim: A, per-agent action length.
      stride: ``compact`` only: rows per ``add`` (every ``add`` writes exactly this many
        steps, ``E`` environments side by side; 1: one step per call).
      episode_length: ``compact`` only: the fewest steps between two episode ends of one
        environment, which sizes the ring of final observations
        (:func:`compact_final_slots`; None: room for a final observation on every row).
        Episodes shorter than this overwrite final observations still in use.

    Returns:
      ``Buffer(init, add, gather)``:

      * ``init()`` -- zero-filled ``BufferState`` with ``insert_pos = size = 0``.
      * ``add(state, t)`` -- write one step (``t.obs [N, O]`` ...) or ``T <= capacity`` steps
        (``t.obs [T, N, O]`` ...) in time order at ``insert_pos`` (wrapping around).
      * ``gather(state, indices, time_major=False)`` -- ``indices`` int ``[B]`` (one index set
        shared by all agents) returns fields shaped ``[N, B, ...]`` (``[B, N, ...]`` with
        ``time_major=True``); ``indices [N, B]`` ("faithful" MADDPG mode, one index set per
        drawing agent) returns ``[N_draw, N_all, B, ...]``: for each drawing agent, all
        agents' data at that agent's indices (``[N_draw, B, N_all, ...]`` with
        ``time_major=True``). Indices must lie in ``[0, size)``; JAX clamps out-of-range
        gathers silently, so validate untrusted indices with :func:`check_indices` first.
    """
    check_choice("layout", layout, LAYOUTS)
    capacity = check_capacity(capacity)
    n = check_int("num_agents", num_agents, lo=1)
    obs_dim = check_int("obs_dim", obs_dim, lo=1)
    action_dim = check_int("action_dim", action_dim, lo=1)
    step_shapes = _step_shapes(n, obs_dim, action_dim)
    per_agent = layout == "per_agent"
    packed = layout == "packed"
    compact = layout == "compact"
    row_floats = packed_row_floats(n, obs_dim, action_dim)
    stride = check_int("stride", stride, lo=1, hi=capacity)
    if episode_length is not None:
        check_int("episode_length", episode_length, lo=1)
    finals = compact_final_slots(capacity, stride, episode_length)

    def init() -> BufferState:
        if compact:
            return BufferState(
                data=CompactData(
                    obs=jnp.zeros((capacity, n, obs_dim), jnp.float32),
                    action=jnp.zeros((capacity, n, action_dim), jnp.float32),
                    reward=jnp.zeros((capacity, n), jnp.float32),
                    done=jnp.zeros((capacity, n), jnp.float32),
                    next_slot=jnp.full((capacity,), -1, jnp.int32),
                    final_obs=jnp.zeros((finals, n, obs_dim), jnp.float32),
                    final_pos=jnp.zeros((), jnp.int32),
                    pending=jnp.zeros((stride, n, obs_dim), jnp.float32)),
                insert_pos=jnp.zeros((), jnp.int32),
                size=jnp.zeros((), jnp.int32),
            )
        if packed:
            return BufferState(
                data=jnp.zeros((capacity, row_floats), jnp.float32),
                insert_pos=jnp.zeros((), jnp.int32),
                size=jnp.zeros((), jnp.int32),
            )
        arrays = {}
        for name, shape in step_shapes.items():
            full = (n, capacity, *shape[1:]) if per_agent else (capacity, *shape)
            arrays[name] = jnp.zeros(full, jnp.float32)
        return BufferState(
            data=Transition(**arrays),
            insert_pos=jnp.zeros((), jnp.int32),
            size=jnp.zeros((), jnp.int32),
        )

    def add(state: BufferState, transition: Transition) -> BufferState:
        fields = [jnp.asarray(getattr(transition, f), jnp.float32) for f in _FIELDS]
        one_step = fields[0].ndim == len(step_shapes["obs"])
        num_steps = 1 if one_step else fields[0].shape[0]
        for name, value in zip(_FIELDS, fields, strict=True):
            want = step_shapes[name] if one_step else (num_steps, *step_shapes[name])
            if value.shape != want:
                raise ValueError(
                    f"transition.{name} must have shape {want} for this buffer "
                    f"(N={n}, O={obs_dim}, A={action_dim}); got {value.shape}"
                )
        if num_steps > capacity:
            raise ValueError(
                f"cannot add {num_steps} steps at once to a buffer of capacity {capacity}"
            )
        rows = (state.insert_pos + jnp.arange(num_steps, dtype=jnp.int32)) % capacity
        new_pos = (state.insert_pos + num_steps) % capacity
        new_size = jnp.minimum(state.size + num_steps, capacity).astype(jnp.int32)
        if compact:
            if num_steps != stride:
                raise ValueError(f"a compact buffer of stride {stride} takes {stride} steps per "
                                 f"add (one per environment); got {num_steps}")
            if one_step:
                fields = [f[None] for f in fields]
            return BufferState(data=_compact_add(state, rows, *fields), insert_pos=new_pos,
                               size=new_size)
        if packed:
            if one_step:
                fields = [f[None] for f in fields]
            return BufferState(data=state.data.at[rows].set(pack_rows(Transition(*fields))),
                               insert_pos=new_pos, size=new_size)
        new = {}
        for name, value, old in zip(_FIELDS, fields, state.data, strict=True):
            if one_step:
                value = value[None]
            # value: [T, N, ...] -> write rows of the ring.
            if per_agent:
                new[name] = old.at[:, rows].set(jnp.swapaxes(value, 0, 1))
            else:
                new[name] = old.at[rows].set(value)
        return BufferState(data=Transition(**new), insert_pos=new_pos, size=new_size)

    def gather(state: BufferState, indices: Array, time_major: bool = False) -> Batch:
        indices = jnp.asarray(indices)
        if indices.ndim not in (1, 2) or not jnp.issubdtype(indices.dtype, jnp.integer):
            raise ValueError(
                f"indices must be an integer array [B] or [N, B]; got dtype {indices.dtype} "
                f"and shape {indices.shape}"
            )
        if indices.ndim == 2 and indices.shape[0] != n:
            raise ValueError(
                f"per-agent indices must have shape [N={n}, B]; got {indices.shape}"
            )
        if compact:
            batch = _compact_gather(state, indices)  # [B, N_all, ...] or [N_draw, B, ...]
            if time_major:
                return batch
            axis = 0 if indices.ndim == 1 else 1
            return Transition(*(jnp.swapaxes(v, axis, axis + 1) for v in batch))
        if packed:
            # [B, N_all, ...] or [N_draw, B, N_all, ...]
            batch = unpack_rows(state.data[indices], n, obs_dim, action_dim)
            if time_major:
                return batch
            axis = 0 if indices.ndim == 1 else 1
            return Transition(*(jnp.swapaxes(v, axis, axis + 1) for v in batch))
        out = {}
        for name, arr in zip(_FIELDS, state.data, strict=True):
            if per_agent:
                if indices.ndim == 1:
                    g = arr[:, indices]  # [N_all, B, ...]
                    g = jnp.swapaxes(g, 0, 1) if time_major else g
                else:
                    # One gather per drawing agent, written straight in [N_draw, N_all, B, ...]
                    # order (no transpose of the N^2 B result).
                    g = jax.vmap(lambda idx, a=arr: a[:, idx])(indices)
                    g = jnp.swapaxes(g, 1, 2) if time_major else g
            else:
                g = arr[indices]  # [B, N_all, ...] or [N_draw, B, N_all, ...]
                if not time_major:
                    g = jnp.swapaxes(g, 0, 1) if indices.ndim == 1 else jnp.swapaxes(g, 1, 2)
            out[name] = g
        return Transition(**out)

    def _compact_add(state: BufferState, rows: Array, obs: Array, action: Array,
                     reward: Array, next_obs: Array, done: Array) -> CompactData:
        d = state.data
        # The previous add's rows (the same environments one step earlier): their next_obs
        # is this add's obs when it matches bit for bit, else it becomes a final observation.
        prev = (rows - stride) % capacity
        chained = jnp.all(_bits(d.pending) == _bits(obs), axis=(1, 2))  # [E]
        final = (state.size > 0) & ~chained
        count = jnp.cumsum(final.astype(jnp.int32))
        slots = (d.final_pos + count - 1) % finals
        final_obs = d.final_obs.at[jnp.where(final, slots, finals)].set(d.pending, mode="drop")
        old = d.next_slot[prev]
        link = jnp.where(state.size > 0, jnp.where(final, slots, -1), old)
        next_slot = d.next_slot.at[prev].set(link).at[rows].set(-2)
        return CompactData(
            obs=d.obs.at[rows].set(obs), action=d.action.at[rows].set(action),
            reward=d.reward.at[rows].set(reward), done=d.done.at[rows].set(done),
            next_slot=next_slot, final_obs=final_obs,
            final_pos=((d.final_pos + count[-1]) % finals).astype(jnp.int32),
            pending=next_obs)

    def _compact_gather(state: BufferState, indices: Array) -> Transition:
        d = state.data
        slot = d.next_slot[indices]
        following = d.obs[(indices + stride) % capacity]
        newest = d.pending[(indices - state.insert_pos + stride) % capacity % stride]
        final = d.final_obs[jnp.clip(slot, 0, finals - 1)]
        s = slot[..., None, None]
        next_obs = jnp.where(s >= 0, final, jnp.where(s == -2, newest, following))
        return Transition(obs=d.obs[indices], action=d.action[indices],
                          reward=d.reward[indices], next_obs=next_obs, done=d.done[indices])

    return Buffer(init=init, add=add, gather=gather)


def gather_into(
    buffer: Buffer, state: BufferState, indices: Array, out: Batch, time_major: bool = False
) -> Batch:
    """``buffer.gather(state, indices, time_major)`` written over the arrays of ``out``.

    The result equals ``buffer.gather`` (same shapes, dtypes and values; ``out`` must have
    them, e.g. an earlier batch of the same round). Its purpose is memory reuse: in a jitted
    round with ``out`` donated (``jax.jit(fn, donate_argnums=...)``), XLA writes the batch
    into ``out``'s memory instead of allocating a fresh output each call. A faithful MADDPG
    batch is large (``N * B * N`` agent-rows: 0.7 GB at 24 agents and B = 1,024), and on a CPU
    a fresh allocation of that size is paid again in page faults on every call: measured on
    2 cores, the donated round is 2.5x faster (``benchmarks/NOTES.md``). With the
    ``interleaved`` layout and ``[N, B]`` indices, ``time_major=True`` also avoids the
    transpose to agent-major order (fields ``[N_draw, B, N_all, ...]``: a drawing agent's
    joint critic input is then a reshape to ``[B, N_all * O]``).

    Example (one host-driven round per call, batch memory reused)::

        round_fn = jax.jit(lambda s, idx, out: gather_into(buffer, s, idx, out, True),
                           donate_argnums=2)
        out = buffer.gather(state, idx0, time_major=True)   # first batch allocates
        out = round_fn(state, idx1, out)                      # later ones reuse it

    Raises ValueError (at trace time) when ``out``'s shapes or dtypes differ from the batch's.
    """
    new = buffer.gather(state, indices, time_major=time_major)
    if not isinstance(out, Transition):
        raise ValueError(f"out must be a Transition batch; got {type(out).__name__}")
    fields = []
    for name, o, g in zip(_FIELDS, out, new, strict=True):
        if o.shape != g.shape or o.dtype != g.dtype:
            raise ValueError(
                f"out.{name} must have shape {g.shape} and dtype {g.dtype} for these indices "
                f"(time_major={time_major}); got {o.shape} {o.dtype}"
            )
        fields.append(o.at[...].set(g))
    return Transition(*fields)


def check_indices(state: BufferState, indices: Array) -> None:
    """Host-side check that every index lies in ``[0, size)``; ValueError otherwise.

    Use before ``gather`` on indices that did not come from a sampler (gathers clamp silently).
    """
    size = int(np.asarray(state.size))
    if size == 0:
        raise ValueError("cannot gather from an empty buffer (size 0); add transitions first")
    check_index_range("indices", np.asarray(indices), size)


def capacity_of(state: BufferState, layout: str) -> int:
    """Capacity (rows) of a buffer state in the given layout."""
    check_choice("layout", layout, LAYOUTS)
    if layout == "packed":
        return int(state.data.shape[0])
    return int(state.data.reward.shape[1 if layout == "per_agent" else 0])
