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
``k_idx, k_sarsa = split(fold_in(lane_key, e))``; only the words a variant needs are drawn,
one 32-bit word per update: ``ran`` indices from ``bits(k_idx, (m,))`` as
``min(floor((w >> 8) * 2**-24 * m), m - 1)``; SARSA from ``w = bits(k_sarsa, (m,))``: the
exploration number ``(w >> 16) * 2**-16`` and the random action
``((w & 0xFFFF) * A) >> 16`` (independent bits of one word). With the LCG each update draws,
in order, the row index (``ran`` only), the exploration number and the random action (SARSA
only); a draw ``x`` maps to ``u = (x >> 8) / 2**24`` (24-bit uniform in [0, 1)) and to an
integer in ``[0, n)`` as ``min(floor(u * n), n - 1)`` computed in float32.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl_pim.choices import SAMPLINGS as SAMPLINGS
from jaxrl_pim.tabular.constants import LCG_SEED as LCG_SEED

LCG_A = 1664525
LCG_C = 1013904223


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
    lane_key: jax.Array, episode: jax.Array, m: int, num_actions: int,
    need_index: bool = True, need_sarsa: bool = True,
) -> tuple[jax.Array | None, jax.Array | None, jax.Array | None]:
    """JAX-PRNG draws of one lane for one episode: ``(idx [m], explore_u [m], rand_a [m])``.

    Entries a variant does not need (``need_index`` / ``need_sarsa`` False) are ``None`` and
    cost nothing.
    """
    k_idx, k_sarsa = jax.random.split(jax.random.fold_in(lane_key, episode))
    idx = u = a = None
    if need_index:
        w = jax.random.bits(k_idx, (m,), jnp.uint32)
        idx = lcg_int(w, m)
    if need_sarsa:
        w = jax.random.bits(k_sarsa, (m,), jnp.uint32)
        u = (w >> 16).astype(jnp.float32) * jnp.float32(2.0**-16)
        a = (((w & jnp.uint32(0xFFFF)) * jnp.uint32(num_actions)) >> 16).astype(jnp.int32)
    return idx, u, a
