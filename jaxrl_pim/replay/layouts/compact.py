"""The ``compact`` layout: the ``interleaved`` rows without ``next_obs``, every observation
stored once.

A row's ``next_obs`` is the ``obs`` of the row ``E`` rows later (the same environment's next
step, ``E`` = stride = rows per ``add``, the trainer's ``num_envs``) when it equals it bit for
bit -- within an episode -- and otherwise (episode ends) a copy kept in a small ring of
``final_obs``; the newest rows' ``next_obs`` wait in ``pending`` until the next ``add``.
:func:`gather` returns exactly what the ``interleaved`` layout returns for the same adds.
Arrays: :class:`CompactData`.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import Array

from jaxrl_pim.replay.layouts import common
from jaxrl_pim.replay.layouts.common import LayoutSpec
from jaxrl_pim.replay.types import Batch, BufferState, Transition


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


def init(spec: LayoutSpec) -> BufferState:
    """Zero-filled :class:`CompactData` (float32; ``next_slot`` all ``-1``, ``final_pos``
    0), ``insert_pos = size = 0``."""
    c, n = spec.capacity, spec.num_agents
    return common.empty_state(CompactData(
        obs=jnp.zeros((c, n, spec.obs_dim), jnp.float32),
        action=jnp.zeros((c, n, spec.action_dim), jnp.float32),
        reward=jnp.zeros((c, n), jnp.float32),
        done=jnp.zeros((c, n), jnp.float32),
        next_slot=jnp.full((c,), -1, jnp.int32),
        final_obs=jnp.zeros((spec.finals, n, spec.obs_dim), jnp.float32),
        final_pos=jnp.zeros((), jnp.int32),
        pending=jnp.zeros((spec.stride, n, spec.obs_dim), jnp.float32)))


def add(spec: LayoutSpec, state: BufferState, transition: Transition) -> BufferState:
    """Write exactly ``E`` steps (``obs [E, N, O]`` ...; ``obs [N, O]`` when ``E = 1``) at
    ``insert_pos``, one per environment.

    The previous add's rows (the same environments one step earlier) get their ``next_obs``
    linked: this add's ``obs`` when it matches bit for bit, else the old ``pending`` row moves
    into the ring of final observations. This add's ``next_obs`` becomes ``pending``.
    """
    steps = common.stacked_steps(spec, transition)
    if steps.obs.shape[0] != spec.stride:
        raise ValueError(f"a compact buffer of stride {spec.stride} takes {spec.stride} steps "
                         f"per add (one per environment); got {steps.obs.shape[0]}")
    rows, insert_pos, size = common.ring_advance(spec, state, spec.stride)
    d, finals = state.data, spec.finals
    prev = (rows - spec.stride) % spec.capacity
    chained = jnp.all(_bits(d.pending) == _bits(steps.obs), axis=(1, 2))  # [E]
    final = (state.size > 0) & ~chained
    count = jnp.cumsum(final.astype(jnp.int32))
    slots = (d.final_pos + count - 1) % finals
    final_obs = d.final_obs.at[jnp.where(final, slots, finals)].set(d.pending, mode="drop")
    link = jnp.where(state.size > 0, jnp.where(final, slots, -1), d.next_slot[prev])
    data = CompactData(
        obs=d.obs.at[rows].set(steps.obs), action=d.action.at[rows].set(steps.action),
        reward=d.reward.at[rows].set(steps.reward), done=d.done.at[rows].set(steps.done),
        next_slot=d.next_slot.at[prev].set(link).at[rows].set(-2), final_obs=final_obs,
        final_pos=((d.final_pos + count[-1]) % finals).astype(jnp.int32),
        pending=steps.next_obs)
    return BufferState(data=data, insert_pos=insert_pos, size=size)


def _next_obs(spec: LayoutSpec, state: BufferState, indices: Array) -> Array:
    """``next_obs`` of the rows at ``indices`` (``[..., N, O]``), wherever each is kept: the
    ``obs`` ``E`` rows later, ``pending`` or ``final_obs`` (per ``next_slot``)."""
    d, c, e = state.data, spec.capacity, spec.stride
    slot = d.next_slot[indices]
    following = d.obs[(indices + e) % c]
    newest = d.pending[(indices - state.insert_pos + e) % c % e]
    final = d.final_obs[jnp.clip(slot, 0, spec.finals - 1)]
    s = slot[..., None, None]
    return jnp.where(s >= 0, final, jnp.where(s == -2, newest, following))


def gather(spec: LayoutSpec, state: BufferState, indices: Array,
           time_major: bool = False) -> Batch:
    """All agents' data at ``indices [B]`` (fields ``[N, B, ...]``) or at each drawing
    agent's ``indices [N, B]`` (``[N_draw, N_all, B, ...]``); time-major with
    ``time_major=True`` (``[B, N, ...]``, ``[N_draw, B, N_all, ...]``), bit for bit what
    the ``interleaved`` layout returns."""
    indices = common.checked_indices(spec, indices)
    d = state.data
    batch = Transition(obs=d.obs[indices], action=d.action[indices], reward=d.reward[indices],
                       next_obs=_next_obs(spec, state, indices), done=d.done[indices])
    return batch if time_major else common.swap_batch_agent_axes(batch, indices.ndim)


def capacity(state: BufferState) -> int:
    """Rows (time steps) a ``compact`` state holds: C of ``reward [C, N]``."""
    return int(state.data.reward.shape[0])
