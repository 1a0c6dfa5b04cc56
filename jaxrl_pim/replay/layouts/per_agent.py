"""The ``per_agent`` layout: the original MADDPG's N separate ring buffers.

``data`` is a :class:`~jaxrl_pim.replay.Transition` of float32 arrays ``obs [N, C, O]``,
``action [N, C, A]``, ``reward [N, C]``, ``next_obs [N, C, O]``, ``done [N, C]`` (agent
axis first, ``C`` = capacity rows). Assembling all agents' data at ``B`` indices is N
gathers per field; the batch comes out agent-major.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import Array

from jaxrl_pim.replay.layouts import common
from jaxrl_pim.replay.layouts.common import LayoutSpec
from jaxrl_pim.replay.types import Batch, BufferState, Transition


def init(spec: LayoutSpec) -> BufferState:
    """Zero-filled arrays ``[N, C, ...]`` (float32), ``insert_pos = size = 0``."""
    shapes = common.step_shapes(spec.num_agents, spec.obs_dim, spec.action_dim)
    return common.empty_state(Transition(**{
        name: jnp.zeros((spec.num_agents, spec.capacity, *shape[1:]), jnp.float32)
        for name, shape in shapes.items()}))


def add(spec: LayoutSpec, state: BufferState, transition: Transition) -> BufferState:
    """Write one step (``obs [N, O]`` ...) or ``T <= C`` steps (``obs [T, N, O]`` ...) at
    ``insert_pos``: row ``insert_pos + t`` (mod C) of every agent's ring."""
    steps = common.stacked_steps(spec, transition)
    rows, insert_pos, size = common.ring_advance(spec, state, steps.obs.shape[0])
    data = Transition(*(old.at[:, rows].set(jnp.swapaxes(new, 0, 1))  # new: [T, N, ...]
                        for old, new in zip(state.data, steps, strict=True)))
    return BufferState(data=data, insert_pos=insert_pos, size=size)


def gather(spec: LayoutSpec, state: BufferState, indices: Array,
           time_major: bool = False) -> Batch:
    """All agents' data at ``indices [B]`` (fields ``[N, B, ...]``) or at each drawing
    agent's ``indices [N, B]`` (``[N_draw, N_all, B, ...]``); time-major with
    ``time_major=True`` (``[B, N, ...]``, ``[N_draw, B, N_all, ...]``)."""
    indices = common.checked_indices(spec, indices)
    if indices.ndim == 1:
        batch = Transition(*(arr[:, indices] for arr in state.data))  # [N_all, B, ...]
    else:
        # One gather per drawing agent, written straight in [N_draw, N_all, B, ...] order
        # (no transpose of the N^2 B result).
        batch = Transition(*(jax.vmap(lambda idx, a=arr: a[:, idx])(indices)
                             for arr in state.data))
    return common.swap_batch_agent_axes(batch, indices.ndim) if time_major else batch


def capacity(state: BufferState) -> int:
    """Rows (time steps) a ``per_agent`` state holds: C of ``reward [N, C]``."""
    return int(state.data.reward.shape[1])
