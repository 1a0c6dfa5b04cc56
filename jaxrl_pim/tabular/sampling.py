"""Per-episode sampling orders over a lane's chunk, and their random numbers.

Each lane owns a contiguous chunk of ``m`` rows. One episode visits ``m`` rows:

* ``seq``: rows ``0, 1, ..., m-1`` of the chunk.
* ``str`` (stride ``k``): for offset ``o`` in ``0..k-1``: ``o, o+k, o+2k, ...``; every row
  exactly once per episode (relative to the lane's own chunk start, unlike the published C
  code, which strides over the first chunk only).
* ``ran``: ``m`` draws uniform with replacement in ``[0, m)``.

Random numbers come from JAX's PRNG (default) or from the PIM linear congruential
generator ``x <- (1664525 x + 1013904223) mod 2**32`` (seed 42 in every lane, as every PIM
core starts alike). JAX PRNG derivation, per lane and global episode ``e``:
``k_idx, k_u, k_a = split(fold_in(lane_key, e), 3)``; ``ran`` indices
``randint(k_idx, (m,), 0, m)``; SARSA exploration ``uniform(k_u, (m,))`` and random actions
``randint(k_a, (m,), 0, A)``. With the LCG each step draws, in order, the row index (``ran``
only), the exploration number and the random action (SARSA only); a draw ``x`` maps to
``u = (x >> 8) / 2**24`` (24-bit uniform in [0, 1)) and to an integer in ``[0, n)`` as
``min(floor(u * n), n - 1)`` computed in float32.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

SAMPLINGS = ("seq", "ran", "str")
LCG_A = 1664525
LCG_C = 1013904223
LCG_SEED = 42


def stride_order(m: int, k: int) -> np.ndarray:
    """The ``str`` visiting order of a chunk of ``m`` rows with stride ``k`` (``[m]`` int32)."""
    return np.concatenate([np.arange(o, m, k) for o in range(min(k, m))]).astype(np.int32)


def lcg_next(x: jax.Array) -> jax.Array:
    """One LCG step on uint32 state (wraps mod 2**32)."""
    return x * jnp.uint32(LCG_A) + jnp.uint32(LCG_C)


def lcg_uniform(x: jax.Array) -> jax.Array:
    """Map LCG state to float32 in [0, 1) using its top 24 bits."""
    return (x >> 8).astype(jnp.float32) * jnp.float32(2.0**-24)


def lcg_int(x: jax.Array, n: int) -> jax.Array:
    """Map LCG state to an int32 in ``[0, n)``."""
    return jnp.minimum(jnp.floor(lcg_uniform(x) * n).astype(jnp.int32), n - 1)


def episode_draws(
    lane_key: jax.Array, episode: jax.Array, m: int, num_actions: int
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """JAX-PRNG draws of one lane for one episode: ``(idx [m], explore_u [m], rand_a [m])``."""
    k_idx, k_u, k_a = jax.random.split(jax.random.fold_in(lane_key, episode), 3)
    return (
        jax.random.randint(k_idx, (m,), 0, m),
        jax.random.uniform(k_u, (m,)),
        jax.random.randint(k_a, (m,), 0, num_actions),
    )
