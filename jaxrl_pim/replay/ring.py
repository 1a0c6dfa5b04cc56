"""Single-agent ring buffer over any transition pytree, and the n-step transition it stores.

``make_ring_buffer(capacity, example)`` is a :class:`~jaxrl_pim.replay.Buffer` (``init``,
``add``, ``gather``) like the multi-agent layouts of :func:`~jaxrl_pim.replay.make_buffer`,
but for one stream of transitions of any pytree shape (``example`` is one transition without
a batch axis). It is the replay of the single-process learners (:mod:`jaxrl_pim.rl`: DQN,
DDPG) and of ActorQ's learner, combined with a sampler of :mod:`jaxrl_pim.replay`::

    buffer = make_ring_buffer(10_000, NStepTransition(obs, action, r, d, next_obs))
    sampler = uniform()
    bstate, sstate = buffer.init(), sampler.init()
    bstate = buffer.add(bstate, batch)               # every leaf [b, ...], b <= capacity
    idx, w, sstate = sampler.sample(sstate, key, bstate.size, bstate.insert_pos, 64)
    batch = buffer.gather(bstate, idx)               # every leaf [64, ...]

Ring semantics as in :mod:`jaxrl_pim.replay.buffers`: ``add`` writes ``b`` rows at
``insert_pos`` (wrapping around) and advances it modulo ``capacity``; ``size`` saturates at
``capacity``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax import Array

from jaxrl_pim.replay.buffers import Buffer, BufferState, check_capacity


class NStepTransition(NamedTuple):
    """One single-agent transition for bootstrapped learning (rlax naming); batch axes lead.

    ``target = reward + discount * V(next_obs)``: ``reward`` is the (scaled) n-step return
    ``sum_j gamma^j r_{t+j}`` (the plain reward for n = 1), ``discount`` the bootstrap
    discount ``gamma^n`` times the environment discount (0 after a termination; a time-limit
    cut keeps it and bootstraps from the true final observation ``next_obs``).

    Not to be confused with :class:`jaxrl_pim.replay.Transition` (one lock-step row of N
    agents) or :class:`jaxrl_pim.data.Dataset` (a whole offline tabular dataset).
    """

    obs: Array
    action: Array
    reward: Array
    discount: Array
    next_obs: Array


def make_ring_buffer(capacity: int, example: Any) -> Buffer:
    """A ring buffer of ``capacity`` transitions shaped like ``example`` (no batch axis).

    Returns ``Buffer(init, add, gather)``:

    * ``init() -> BufferState``: zero storage, every leaf ``[capacity, *leaf.shape]`` in the
      example leaf's dtype; ``insert_pos = size = 0``.
    * ``add(state, batch) -> state``: write ``b`` transitions (every leaf ``[b, ...]``,
      ``b <= capacity``, cast to the storage dtype) in order at ``insert_pos``.
    * ``gather(state, indices) -> batch``: ``indices`` int ``[B]`` -> every leaf ``[B, ...]``.
      Indices must lie in ``[0, size)`` (JAX clamps out-of-range gathers silently; check
      untrusted ones with :func:`jaxrl_pim.replay.check_indices`).
    """
    capacity = check_capacity(capacity)
    shapes = jax.tree.map(lambda x: (tuple(jnp.shape(x)), jnp.asarray(x).dtype), example)

    def init() -> BufferState:
        data = jax.tree.map(
            lambda x: jnp.zeros((capacity,) + jnp.shape(x), jnp.asarray(x).dtype), example
        )
        return BufferState(data=data, insert_pos=jnp.zeros((), jnp.int32),
                           size=jnp.zeros((), jnp.int32))

    def add(state: BufferState, batch: Any) -> BufferState:
        leaves = jax.tree.leaves(batch)
        if not leaves:
            raise ValueError("cannot add an empty pytree to a ring buffer")
        b = leaves[0].shape[0] if jnp.ndim(leaves[0]) else 0
        if b < 1 or b > capacity:
            raise ValueError(
                f"cannot add {b} transitions at once to a ring buffer of capacity {capacity}; "
                "every leaf needs a leading batch axis of 1 to capacity rows"
            )

        def check(x, shape_dtype):
            want = (b,) + shape_dtype[0]
            if tuple(jnp.shape(x)) != want:
                raise ValueError(f"transition leaf has shape {tuple(jnp.shape(x))}; this buffer "
                                 f"takes {want} (batch of {b})")

        jax.tree.map(check, batch, shapes)
        idx = (state.insert_pos + jnp.arange(b, dtype=jnp.int32)) % capacity
        data = jax.tree.map(lambda buf, x: buf.at[idx].set(x.astype(buf.dtype)), state.data,
                            batch)
        return BufferState(
            data=data,
            insert_pos=(state.insert_pos + b) % capacity,
            size=jnp.minimum(state.size + b, capacity),
        )

    def gather(state: BufferState, indices: Array) -> Any:
        indices = jnp.asarray(indices)
        if indices.ndim != 1 or not jnp.issubdtype(indices.dtype, jnp.integer):
            raise ValueError(f"indices must be an integer array [B]; got dtype {indices.dtype} "
                             f"and shape {indices.shape}")
        return jax.tree.map(lambda buf: buf[indices], state.data)

    return Buffer(init=init, add=add, gather=gather)
