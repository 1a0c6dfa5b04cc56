"""Multi-agent replay buffers: four layouts, ``per_agent``, ``interleaved``, ``packed`` and
``compact``, behind one interface (:func:`make_buffer`).

A buffer stores per-step transitions of ONE team of ``N`` agents, appended in lock-step:

* ``obs`` float32 ``[N, O]``, ``action`` float32 ``[N, A]``, ``reward`` float32 ``[N]``,
  ``next_obs`` float32 ``[N, O]``, ``done`` float32 ``[N]`` (1.0 = episode ended).

Layouts (same interface, same data, different memory order; ``C`` = capacity rows); each is
a module of pure functions in :mod:`jaxrl_pim.replay.layouts`:

* ``per_agent`` -- the original MADDPG layout: N separate ring buffers, arrays
  ``[N, C, ...]``. Assembling all agents' data at B indices is N gathers.
* ``interleaved`` -- one row per time step holding all agents: arrays ``[C, N, ...]``.
  All agents' data at B indices is ONE gather per field of B contiguous rows.
* ``packed`` -- one array ``[C, R]``: a time step's every field of every agent in one
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

import functools

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
from jaxrl_pim.replay.layouts import MODULES, LayoutSpec
from jaxrl_pim.replay.layouts.common import FIELDS
from jaxrl_pim.replay.layouts.compact import (  # noqa: F401  (re-exported)
    CompactData,
    compact_final_slots,
)
from jaxrl_pim.replay.layouts.packed import (  # noqa: F401  (re-exported)
    gather_rows,
    pack_rows,
    packed_row_floats,
    unpack_rows,
)
from jaxrl_pim.replay.types import Batch, Buffer, BufferState, Transition

LAYOUTS = choices.LAYOUTS  # the names live in jaxrl_pim.choices (no jax to import)


def make_buffer(
    layout: str, capacity: int, num_agents: int, obs_dim: int, action_dim: int, *,
    stride: int = 1, episode_length: int | None = None,
) -> Buffer:
    """Build a multi-agent ring buffer: the layout's functions with its sizes bound.

    Args:
      layout: one of the four layouts (see the module docstring): ``"per_agent"`` (arrays
        ``[N, capacity, ...]``), ``"interleaved"`` (arrays ``[capacity, N, ...]``),
        ``"packed"`` (one array ``[capacity, R]``) or ``"compact"`` (``interleaved``
        without ``next_obs``, :class:`CompactData`).
      capacity: rows (time steps) kept; the oldest is overwritten once full.
      num_agents: N, agents in the team.
      obs_dim: O, per-agent observation length (float32 values).
      action_dim: A, per-agent action length (float32 values).
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
    num_agents = check_int("num_agents", num_agents, lo=1)
    obs_dim = check_int("obs_dim", obs_dim, lo=1)
    action_dim = check_int("action_dim", action_dim, lo=1)
    stride = check_int("stride", stride, lo=1, hi=capacity)
    if episode_length is not None:
        check_int("episode_length", episode_length, lo=1)
    spec = LayoutSpec(capacity, num_agents, obs_dim, action_dim, stride,
                      finals=compact_final_slots(capacity, stride, episode_length))
    functions = MODULES[layout]
    return Buffer(init=functools.partial(functions.init, spec),
                  add=functools.partial(functions.add, spec),
                  gather=functools.partial(functions.gather, spec))


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
    for name, o, g in zip(FIELDS, out, new, strict=True):
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
    """Capacity (rows, i.e. time steps) of a buffer state in the given layout (one of the
    four: ``per_agent``, ``interleaved``, ``packed``, ``compact``)."""
    check_choice("layout", layout, LAYOUTS)
    return MODULES[layout].capacity(state)
