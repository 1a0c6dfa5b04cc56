"""The JAX sampling rounds of ``benchmarks/marl_sampling.py`` and the buffers they read.

The round modes (:data:`MODES`, the trainer's :data:`TRAINER_MODE`), the samplers
(:func:`make_sampler`, :func:`sampler_state`), a full buffer of pseudo-random data in any layout
(:func:`random_state`), the faithful draw of one round (:func:`faithful_draw`) and one jitted
round that writes into the previous round's donated batch (:class:`Round`).
"""

from __future__ import annotations

import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from benchmarks.sampling.memory import ACTION_DIM, obs_dim
from jaxrl_pim.marl import MARLConfig
from jaxrl_pim.replay import (
    Buffer,
    BufferState,
    Sampler,
    gather_into,
    info_prioritized,
    make_buffer,
    neighbor,
    prioritized,
    state_from_priorities,
    uniform,
)

#: The JAX round modes (the module docstring of ``benchmarks/marl_sampling.py`` says each).
MODES = ("per_agent", "interleaved_faithful", "interleaved_faithful_agent_major", "interleaved")
FAITHFUL_ONLY_UNIFORM = ("interleaved_faithful", "interleaved_faithful_agent_major")
NEIGHBOR_REFS, NEIGHBOR_RUN = 64, 16
#: The trainer's default path (``MARLConfig`` defaults), the mode the headline keys compare.
TRAINER_MODE = {"per_agent": "per_agent", "interleaved": "interleaved_faithful"}[
    MARLConfig().layout] if MARLConfig().sampling_mode == "faithful" else "interleaved"


def make_sampler(name: str, capacity: int) -> Sampler:
    """The library sampler ``name`` of a ``capacity``-row buffer, with this benchmark's
    settings (neighbour: 64 references x runs of 16; prioritised: alpha 0.6, beta 0.4)."""
    if name == "uniform":
        return uniform()
    if name == "neighbor":
        return neighbor(NEIGHBOR_REFS, NEIGHBOR_RUN)
    if name == "prioritized":
        return prioritized(capacity, alpha=0.6, beta=0.4)
    if name == "info_prioritized":
        return info_prioritized(capacity, alpha=0.6, beta=0.4)
    raise ValueError(f"unknown sampler {name!r}")


def _hash_fill(shape: tuple[int, ...], salt: int) -> jax.Array:
    """Pseudo-random float32 in [0, 1) from an integer hash of the element index (cheap on any
    device, unlike counter-based PRNG for GiB-sized buffers; the values do not matter for
    timing, only that every row is distinct memory)."""
    rows, rest = shape[0], int(np.prod(shape[1:]))

    @jax.jit
    def fill():
        # Element index ``r * rest + c`` in wrapping uint32 arithmetic (fields may hold
        # more than 2^32 elements; the hash only needs distinct-looking values).
        r = jax.lax.broadcasted_iota(jnp.uint32, (rows, rest), 0)
        c = jax.lax.broadcasted_iota(jnp.uint32, (rows, rest), 1)
        x = r * jnp.uint32(rest % 2**32) + c + jnp.uint32(salt * 0x9E3779B9 % 2**32)
        x = x * jnp.uint32(2654435761)
        x = x ^ (x >> 16)
        x = x * jnp.uint32(0x45D9F3B)
        x = x ^ (x >> 16)
        return ((x >> 8).astype(jnp.float32) * (1.0 / 2**24)).reshape(shape)

    return fill()


def random_state(layout: str, capacity: int, n: int, salt: int) -> BufferState:
    """A full buffer (``size = capacity``, ``insert_pos = 0``) of pseudo-random float32 data in
    ``layout``'s own arrays (the shapes of the library buffer's ``init``; array ``i`` hashed
    with ``salt + i``)."""
    buffer = make_buffer(layout, capacity, n, obs_dim(n), ACTION_DIM)
    leaves, tree = jax.tree.flatten(jax.eval_shape(buffer.init).data)
    data = jax.tree.unflatten(tree, [_hash_fill(a.shape, salt + i) for i, a in enumerate(leaves)])
    return jax.block_until_ready(BufferState(data, jnp.int32(0), jnp.int32(capacity)))


def sampler_state(name: str, capacity: int, key: jax.Array) -> Any:
    """Sampler state with an Exponential(1) priority on every row (stateless: ``()``)."""
    if name in ("uniform", "neighbor"):
        return ()
    prio = jax.random.exponential(key, (capacity,)) + 1e-6
    state = state_from_priorities(prio, alpha=0.6, max_tree=name == "info_prioritized")
    return jax.block_until_ready(state)


def modes_for(layout: str, sampler: str) -> tuple[str, ...]:
    """Modes timed for a layout (the faithful interleaved modes with ``uniform`` only: they
    isolate the layout and output-order effects; the sampler's own cost is the same)."""
    if layout == "per_agent":
        return ("per_agent",)
    if sampler == "uniform":
        return (*FAITHFUL_ONLY_UNIFORM, "interleaved")
    return ("interleaved",)


def faithful_draw(sampler: Sampler, sstate: Any, key: jax.Array, size: jax.Array,
                  insert_pos: jax.Array, num_agents: int,
                  batch: int) -> tuple[jax.Array, jax.Array]:
    """The faithful draw of one round: every agent its own ``batch`` indices from ``sampler``
    (one key each, split from ``key``); ``(indices [N, B], weights [N, B])``."""
    def one(k):
        idx, w, _ = sampler.sample(sstate, k, size, insert_pos, batch)
        return idx, w

    return jax.vmap(one)(jax.random.split(key, num_agents))


class Round:
    """One jitted sampling round ``(bstate, sstate, key) -> batch`` for a mode; after the
    first round (a fresh batch), every round writes into the previous round's donated batch
    (kept here between calls)."""

    def __init__(self, buffer: Buffer, sampler: Sampler, mode: str, n: int,
                 batch: int) -> None:
        faithful = mode != "interleaved"
        time_major = mode in ("interleaved_faithful", "interleaved")

        def draw(bstate, sstate, key):
            if not faithful:
                idx, w, _ = sampler.sample(sstate, key, bstate.size, bstate.insert_pos, batch)
                return idx, w
            return faithful_draw(sampler, sstate, key, bstate.size, bstate.insert_pos, n, batch)

        def fresh(bstate, sstate, key):
            idx, w = draw(bstate, sstate, key)
            return buffer.gather(bstate, idx, time_major=time_major), w

        def into(bstate, sstate, key, out):
            idx, w = draw(bstate, sstate, key)
            return gather_into(buffer, bstate, idx, out, time_major), w

        self._fresh = jax.jit(fresh)
        self._into = jax.jit(into, donate_argnums=3)
        self.out = None

    def __call__(self, bstate: BufferState, sstate: Any, key: jax.Array) -> float:
        """Run one round (blocked); returns its wall seconds."""
        t0 = time.perf_counter()
        if self.out is None:
            self.out, _ = jax.block_until_ready(self._fresh(bstate, sstate, key))
        else:
            self.out, _ = jax.block_until_ready(self._into(bstate, sstate, key, self.out))
        return time.perf_counter() - t0

    def best(self, bstate: BufferState, sstate: Any, key: jax.Array, repeats: int) -> float:
        """Best of ``repeats`` rounds after two warm-up rounds (compile; first donation); every
        round draws new indices (its own key), as the NumPy sampler does."""
        keys = jax.block_until_ready(jax.random.split(key, repeats + 2))
        self(bstate, sstate, keys[0])
        self(bstate, sstate, keys[1])
        return min(self(bstate, sstate, k) for k in keys[2:])
