"""The ``packed`` layout: every field of a time step in one row.

``data`` is one float32 array ``[C, R]`` (``C`` = capacity rows): a time step's every field
of every agent side by side in ``R = N (2 O + A + 2)`` floats (``obs``, ``action``,
``reward``, ``next_obs``, ``done``, each agent-major within its field). A batch is ONE
gather of whole rows, which :func:`gather` then slices into the fields
(:func:`gather_rows` returns the rows unsliced). ``benchmarks/marl_sampling.py`` times its
standalone round and ``benchmarks/marl_e2e.py`` the trainer with it (mode ``packed``).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jax import Array

from jaxrl_pim.replay.layouts import common
from jaxrl_pim.replay.layouts.common import LayoutSpec
from jaxrl_pim.replay.types import Batch, BufferState, Transition


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
    for shape in common.step_shapes(num_agents, obs_dim, action_dim).values():
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


def init(spec: LayoutSpec) -> BufferState:
    """Zero-filled rows ``[C, R]`` (float32), ``insert_pos = size = 0``."""
    row = packed_row_floats(spec.num_agents, spec.obs_dim, spec.action_dim)
    return common.empty_state(jnp.zeros((spec.capacity, row), jnp.float32))


def add(spec: LayoutSpec, state: BufferState, transition: Transition) -> BufferState:
    """Write one step (``obs [N, O]`` ...) or ``T <= C`` steps (``obs [T, N, O]`` ...) at
    ``insert_pos``, each as one packed row ``[R]`` (:func:`pack_rows`)."""
    steps = common.stacked_steps(spec, transition)
    rows, insert_pos, size = common.ring_advance(spec, state, steps.obs.shape[0])
    return BufferState(data=state.data.at[rows].set(pack_rows(steps)), insert_pos=insert_pos,
                       size=size)


def gather(spec: LayoutSpec, state: BufferState, indices: Array,
           time_major: bool = False) -> Batch:
    """All agents' data at ``indices [B]`` (fields ``[N, B, ...]``) or at each drawing
    agent's ``indices [N, B]`` (``[N_draw, N_all, B, ...]``); time-major with
    ``time_major=True`` (``[B, N, ...]``, ``[N_draw, B, N_all, ...]``): one gather of whole
    rows, then :func:`unpack_rows`."""
    indices = common.checked_indices(spec, indices)
    batch = unpack_rows(state.data[indices], spec.num_agents, spec.obs_dim, spec.action_dim)
    return batch if time_major else common.swap_batch_agent_axes(batch, indices.ndim)


def capacity(state: BufferState) -> int:
    """Rows (time steps) a ``packed`` state holds: C of ``data [C, R]``."""
    return int(state.data.shape[0])
