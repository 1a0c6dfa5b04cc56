"""What the four layouts share: the static :class:`LayoutSpec` their functions are partially
applied to, the checks of a transition and of gather indices, the ring arithmetic of an
``add`` and the swap between time-major and agent-major batches.

Shapes: ``N`` agents, ``O`` observation length, ``A`` action length (float32 values), ``T``
steps per ``add``, ``B`` indices per agent, ``C`` = capacity (rows, i.e. time steps).
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
from jax import Array

from jaxrl_pim.replay.types import BufferState, Transition

FIELDS: tuple[str, ...] = Transition._fields  # obs, action, reward, next_obs, done


class LayoutSpec(NamedTuple):
    """A buffer's static sizes (hashable; every layout function takes it first).

    ``capacity`` C rows (time steps); ``num_agents`` N; ``obs_dim`` O and ``action_dim`` A
    (float32 values per agent); ``stride`` E, rows per ``add`` (``compact`` only: one per
    environment); ``finals`` F, the ``compact`` layout's final-observation slots
    (:func:`~jaxrl_pim.replay.compact_final_slots`).
    """

    capacity: int
    num_agents: int
    obs_dim: int
    action_dim: int
    stride: int
    finals: int


def step_shapes(num_agents: int, obs_dim: int, action_dim: int) -> dict[str, tuple[int, ...]]:
    """Shape of each field of one stored time step of ``num_agents`` agents, in field order:
    ``obs (N, O)``, ``action (N, A)``, ``reward (N,)``, ``next_obs (N, O)``, ``done (N,)``."""
    return {"obs": (num_agents, obs_dim), "action": (num_agents, action_dim),
            "reward": (num_agents,), "next_obs": (num_agents, obs_dim), "done": (num_agents,)}


def empty_state(data: object) -> BufferState:
    """``data`` as an empty buffer's state: ``insert_pos = size = 0`` (int32 scalars)."""
    return BufferState(data=data, insert_pos=jnp.zeros((), jnp.int32),
                       size=jnp.zeros((), jnp.int32))


def stacked_steps(spec: LayoutSpec, transition: Transition) -> Transition:
    """``transition`` (one step, ``obs [N, O]`` ..., or ``T`` steps, ``obs [T, N, O]`` ...)
    as float32 fields with a leading time axis ``[T, ...]``, ``T = 1`` for one step.

    Raises ValueError when a field's shape does not fit the buffer or ``T > capacity``.
    """
    shapes = step_shapes(spec.num_agents, spec.obs_dim, spec.action_dim)
    fields = [jnp.asarray(getattr(transition, f), jnp.float32) for f in FIELDS]
    one_step = fields[0].ndim == len(shapes["obs"])
    num_steps = 1 if one_step else fields[0].shape[0]
    for name, value in zip(FIELDS, fields, strict=True):
        want = shapes[name] if one_step else (num_steps, *shapes[name])
        if value.shape != want:
            raise ValueError(
                f"transition.{name} must have shape {want} for this buffer (N={spec.num_agents}"
                f", O={spec.obs_dim}, A={spec.action_dim}); got {value.shape}"
            )
    if num_steps > spec.capacity:
        raise ValueError(
            f"cannot add {num_steps} steps at once to a buffer of capacity {spec.capacity}"
        )
    return Transition(*(f[None] if one_step else f for f in fields))


def ring_advance(spec: LayoutSpec, state: BufferState, num_steps: int
                 ) -> tuple[Array, Array, Array]:
    """Where an ``add`` of ``num_steps`` rows writes, and the ring position after it:
    ``rows`` int32 ``[T]`` (from ``insert_pos``, wrapping modulo C), the new ``insert_pos``
    and the new ``size`` (int32 scalars, ``size`` saturating at C)."""
    rows = (state.insert_pos + jnp.arange(num_steps, dtype=jnp.int32)) % spec.capacity
    insert_pos = (state.insert_pos + num_steps) % spec.capacity
    size = jnp.minimum(state.size + num_steps, spec.capacity).astype(jnp.int32)
    return rows, insert_pos, size


def checked_indices(spec: LayoutSpec, indices: Array) -> Array:
    """``indices`` as an array, checked to be integer ``[B]`` (shared by all agents) or
    ``[N, B]`` (one set per drawing agent); ValueError otherwise. Their range is not
    checked (see :func:`~jaxrl_pim.replay.check_indices`)."""
    indices = jnp.asarray(indices)
    if indices.ndim not in (1, 2) or not jnp.issubdtype(indices.dtype, jnp.integer):
        raise ValueError(
            f"indices must be an integer array [B] or [N, B]; got dtype {indices.dtype} "
            f"and shape {indices.shape}"
        )
    if indices.ndim == 2 and indices.shape[0] != spec.num_agents:
        raise ValueError(
            f"per-agent indices must have shape [N={spec.num_agents}, B]; got {indices.shape}"
        )
    return indices


def swap_batch_agent_axes(batch: Transition, indices_ndim: int) -> Transition:
    """A batch between time-major (``[B, N_all, ...]``, ``[N_draw, B, N_all, ...]``) and
    agent-major (``[N_all, B, ...]``, ``[N_draw, N_all, B, ...]``) order, either way: the
    axes after the ``indices_ndim - 1`` leading drawing-agent axes swap."""
    axis = indices_ndim - 1
    return Transition(*(jnp.swapaxes(v, axis, axis + 1) for v in batch))
