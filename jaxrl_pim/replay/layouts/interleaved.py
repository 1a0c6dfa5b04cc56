"""The ``interleaved`` layout: one row per time step holding all agents.

``data`` is a :class:`~jaxrl_pim.replay.Transition` of float32 arrays ``obs [C, N, O]``,
``action [C, N, A]``, ``reward [C, N]``, ``next_obs [C, N, O]``, ``done [C, N]`` (``C`` =
capacity rows). All agents' data at ``B`` indices is ONE gather per field of B contiguous
rows; the batch comes out time-major.
"""

from __future__ import annotations

import jax.numpy as jnp
from jax import Array

from jaxrl_pim.replay.layouts import common
from jaxrl_pim.replay.layouts.common import LayoutSpec
from jaxrl_pim.replay.types import Batch, BufferState, Transition


def init(spec: LayoutSpec) -> BufferState:
    """Zero-filled arrays ``[C, N, ...]`` (float32), ``insert_pos = size = 0``."""
    shapes = common.step_shapes(spec.num_agents, spec.obs_dim, spec.action_dim)
    return common.empty_state(Transition(**{
        name: jnp.zeros((spec.capacity, *shape), jnp.float32) for name, shape in shapes.items()}))


def add(spec: LayoutSpec, state: BufferState, transition: Transition) -> BufferState:
    """Write one step (``obs [N, O]`` ...) or ``T <= C`` steps (``obs [T, N, O]`` ...) at
    ``insert_pos``: rows ``insert_pos + t`` (mod C)."""
    steps = common.stacked_steps(spec, transition)
    rows, insert_pos, size = common.ring_advance(spec, state, steps.obs.shape[0])
    data = Transition(*(old.at[rows].set(new) for old, new in zip(state.data, steps,
                                                                   strict=True)))
    return BufferState(data=data, insert_pos=insert_pos, size=size)


def gather(spec: LayoutSpec, state: BufferState, indices: Array,
           time_major: bool = False) -> Batch:
    """All agents' data at ``indices [B]`` (fields ``[N, B, ...]``) or at each drawing
    agent's ``indices [N, B]`` (``[N_draw, N_all, B, ...]``); time-major with
    ``time_major=True`` (``[B, N, ...]``, ``[N_draw, B, N_all, ...]``, no transpose)."""
    indices = common.checked_indices(spec, indices)
    batch = Transition(*(arr[indices] for arr in state.data))  # [(N_draw,) B, N_all, ...]
    return batch if time_major else common.swap_batch_agent_axes(batch, indices.ndim)


def capacity(state: BufferState) -> int:
    """Rows (time steps) an ``interleaved`` state holds: C of ``reward [C, N]``."""
    return int(state.data.reward.shape[0])
