"""Replay buffer with proportional prioritized sampling, as pure functions over a pytree state.

``make_replay(capacity, alpha, beta, eps)`` returns ``Replay(init, add, sample,
update_priorities)``. Storage is a ring of ``capacity`` transitions (any pytree with a
leading batch axis). Sampling draws indices with probability ``p_i^alpha / sum_j p_j^alpha``
over the filled, valid slots (``alpha = 0`` is uniform replay) and returns importance weights
``(N P(i))^-beta`` normalised by their maximum over the buffer. New transitions get the
largest priority seen so far; transitions added with ``valid=False`` are never sampled.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp


class Transition(NamedTuple):
    """One (n-step) transition; batch axes lead.

    ``reward`` is the (scaled) n-step return and ``discount`` the bootstrap discount
    (``gamma^k`` times the environment discount, 0 after a termination).
    """

    obs: jax.Array
    action: jax.Array
    reward: jax.Array
    discount: jax.Array
    next_obs: jax.Array


class ReplayState(NamedTuple):
    """Ring-buffer storage, priorities (0 = never sampled) and the write pointer."""

    data: Any
    priority: jax.Array  # [capacity] float32, raw priorities (before the alpha exponent)
    ptr: jax.Array  # int32 next write slot
    size: jax.Array  # int32 slots written so far (<= capacity)
    max_priority: jax.Array  # float32


class Replay(NamedTuple):
    """Pure replay functions (flashbax style)."""

    init: Callable[[Any], ReplayState]
    add: Callable[..., ReplayState]
    sample: Callable[[ReplayState, jax.Array, int], tuple[jax.Array, Any, jax.Array]]
    update_priorities: Callable[[ReplayState, jax.Array, jax.Array], ReplayState]


def make_replay(capacity: int, alpha: float = 0.6, beta: float = 0.2, eps: float = 1e-6) -> Replay:
    """Build a replay of ``capacity`` transitions (see module docstring)."""

    def init(example: Any) -> ReplayState:
        """Empty storage shaped like one transition ``example`` (no batch axis)."""
        data = jax.tree.map(
            lambda x: jnp.zeros((capacity,) + jnp.shape(x), jnp.asarray(x).dtype), example
        )
        return ReplayState(
            data=data,
            priority=jnp.zeros((capacity,), jnp.float32),
            ptr=jnp.zeros((), jnp.int32),
            size=jnp.zeros((), jnp.int32),
            max_priority=jnp.ones((), jnp.float32),
        )

    def add(state: ReplayState, batch: Any, valid: jax.Array | None = None) -> ReplayState:
        """Append a batch ``[b, ...]`` (``b <= capacity``); ``valid`` ``[b]`` masks entries."""
        b = jax.tree.leaves(batch)[0].shape[0]
        if b > capacity:
            raise ValueError(f"cannot add {b} transitions to a replay of capacity {capacity}")
        idx = (state.ptr + jnp.arange(b, dtype=jnp.int32)) % capacity
        data = jax.tree.map(lambda buf, x: buf.at[idx].set(x.astype(buf.dtype)), state.data, batch)
        p = jnp.full((b,), state.max_priority)
        if valid is not None:
            p = jnp.where(valid, p, 0.0)
        return ReplayState(
            data=data,
            priority=state.priority.at[idx].set(p),
            ptr=(state.ptr + b) % capacity,
            size=jnp.minimum(state.size + b, capacity),
            max_priority=state.max_priority,
        )

    def sample(state: ReplayState, key: jax.Array, batch_size: int):
        """Draw ``batch_size`` indices; returns ``(idx [B], batch, weights [B])``."""
        scaled = jnp.where(state.priority > 0, jnp.maximum(state.priority, eps) ** alpha, 0.0)
        total = jnp.sum(scaled)
        probs = scaled / jnp.maximum(total, 1e-30)
        idx = jax.random.choice(key, capacity, (batch_size,), p=probs)
        n_valid = jnp.maximum(jnp.sum(state.priority > 0), 1).astype(jnp.float32)
        p_min = jnp.min(jnp.where(probs > 0, probs, jnp.inf))
        weights = (n_valid * probs[idx]) ** (-beta) / (n_valid * p_min) ** (-beta)
        batch = jax.tree.map(lambda buf: buf[idx], state.data)
        return idx, batch, weights

    def update_priorities(state: ReplayState, idx: jax.Array, td_abs: jax.Array) -> ReplayState:
        """Set the priorities of ``idx`` to ``|td| + eps``."""
        p = jnp.abs(td_abs) + eps
        return state._replace(
            priority=state.priority.at[idx].set(p),
            max_priority=jnp.maximum(state.max_priority, jnp.max(p)),
        )

    return Replay(init, add, sample, update_priorities)
