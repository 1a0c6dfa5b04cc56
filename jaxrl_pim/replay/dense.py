"""Dense proportional prioritized sampler with invalid rows (ActorQ's replay), O(capacity).

``dense_prioritized(capacity, alpha, beta, eps)`` is a :class:`~jaxrl_pim.replay.Sampler`
that keeps one raw priority per row in a ``[capacity]`` array and draws with
``jax.random.choice`` over the whole array: row ``i`` with probability
``p_i^alpha / sum_j p_j^alpha`` (``alpha = 0``: uniform over the valid rows). How it differs
from :func:`~jaxrl_pim.replay.prioritized` (sum tree, O(log capacity) per draw, meant for
large buffers):

* rows can be added as *invalid* (priority 0, never drawn): ActorQ's actors emit a
  transition at every step, and the first ``n - 1`` of a run have no complete n-step window;
* importance weights ``(N P(i))^-beta`` are normalised by the largest weight over the whole
  buffer (``N`` = number of valid rows), not over the batch;
* draws are independent (no stratification).

``on_add(state, insert_pos, num_rows=1, valid=None)`` takes the batch size of the add (or
its validity mask ``[b]``), since ActorQ adds one row per environment at every step.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import Array

from jaxrl_pim.checks import check_float
from jaxrl_pim.replay.buffers import check_capacity
from jaxrl_pim.replay.samplers import Sampler


class DenseState(NamedTuple):
    """Raw priorities ``[capacity]`` float32 (0 = never drawn) and the largest one seen."""

    priority: Array
    max_priority: Array


def dense_prioritized(
    capacity: int, alpha: float = 0.6, beta: float = 0.2, eps: float = 1e-6
) -> Sampler:
    """Dense proportional prioritized sampling (see the module docstring).

    * ``init() -> DenseState`` (all ``capacity`` rows invalid, ``max_priority = 1``);
    * ``on_add(state, insert_pos, num_rows=1, valid=None)``: the rows just written (starting
      at the buffer's ``insert_pos`` before the add) get the largest priority seen so far,
      or 0 where ``valid`` ``[num_rows]`` is False;
    * ``sample(state, key, buffer_size, insert_pos, batch_size) -> (idx [B], weights [B],
      state)``; ``buffer_size`` and ``insert_pos`` are not needed (validity is in the
      priorities) and ignored;
    * ``update_priorities(state, idx, td_abs)``: priority ``|td| + eps``.
    """
    capacity = check_capacity(capacity)
    check_float("alpha", alpha, lo=0.0)
    check_float("beta", beta, lo=0.0)
    check_float("eps", eps, lo=0.0, lo_open=True)

    def init() -> DenseState:
        return DenseState(jnp.zeros((capacity,), jnp.float32), jnp.ones((), jnp.float32))

    def on_add(state: DenseState, insert_pos: Array, num_rows: int = 1,
               valid: Array | None = None) -> DenseState:
        b = num_rows if valid is None else valid.shape[0]
        idx = (insert_pos + jnp.arange(b, dtype=jnp.int32)) % capacity
        p = jnp.full((b,), state.max_priority)
        if valid is not None:
            p = jnp.where(valid, p, 0.0)
        return DenseState(state.priority.at[idx].set(p), state.max_priority)

    def sample(state: DenseState, key: Array, buffer_size: Array, insert_pos: Array,
               batch_size: int) -> tuple[Array, Array, DenseState]:
        del buffer_size, insert_pos
        scaled = jnp.where(state.priority > 0, jnp.maximum(state.priority, eps) ** alpha, 0.0)
        total = jnp.sum(scaled)
        probs = scaled / jnp.maximum(total, 1e-30)
        idx = jax.random.choice(key, capacity, (batch_size,), p=probs)
        n_valid = jnp.maximum(jnp.sum(state.priority > 0), 1).astype(jnp.float32)
        p_min = jnp.min(jnp.where(probs > 0, probs, jnp.inf))
        weights = (n_valid * probs[idx]) ** (-beta) / (n_valid * p_min) ** (-beta)
        return idx, weights, state

    def update_priorities(state: DenseState, idx: Array, td_abs: Array) -> DenseState:
        p = jnp.abs(td_abs) + eps
        return DenseState(state.priority.at[idx].set(p),
                          jnp.maximum(state.max_priority, jnp.max(p)))

    return Sampler(init, sample, update_priorities, on_add)
