"""Numeric formats for Q-tables on lanes: fp32, int32 fixed point, fp16 and bf16.

=========  =====================================  ==========================================
format     storage and arithmetic                 range and rounding
=========  =====================================  ==========================================
``fp32``   float32 storage and arithmetic          IEEE single; round to nearest even.
``int32``  int32 fixed point, scale 10,000: Q,     Q in units of 1e-4. Products ``c * x / S``
           reward, alpha and gamma are stored as   are exact (no int64 needed, see
           ``round(v * 10000)``; descaled only on  :func:`mul_scaled`) and truncated toward
           the way out.                            zero like C integer division. Valid while
                                                   ``max|r| / (1 - gamma) <= Q_LIMIT`` (53,687
                                                   in reward units); checked before training.
``fp16``   IEEE half storage; each update is       max 65,504; ~3 decimal digits. Increments
           computed in float32 and rounded to      below half an ulp of Q are lost
           nearest-even when stored.               (stagnation), e.g. alpha*td < 0.5 at Q=1,000.
``bf16``   bfloat16 storage, float32 arithmetic,   float32 range; ~2-3 decimal digits (8-bit
           rounded to nearest-even on store.       mantissa), so stagnation is far stronger.
=========  =====================================  ==========================================

Why the int32 limits hold: Q starts at 0 and each update moves Q[s, a] to a point between
itself and the target ``r + gamma * max Q`` (truncation only shrinks the step), and lane
averages are convex combinations, so |Q| never exceeds ``B = max|r| / (1 - gamma)``. With
``B <= 2**29`` scaled units every intermediate (``|td| <= 3 * 2**29``) fits in int32, and the
exact lane mean below needs ``|Q| <= 2**29`` and at most 65,536 lanes.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl_pim.choices import FORMATS as FORMATS
from jaxrl_pim.tabular.constants import MAX_INT_MEAN_LANES as MAX_INT_MEAN_LANES
from jaxrl_pim.tabular.constants import SCALE

#: Largest |Q| in scaled int32 units for which every intermediate is exact (2**29).
Q_LIMIT_SCALED = 2**29
Q_LIMIT = Q_LIMIT_SCALED / SCALE


class NumericFormat(NamedTuple):
    """A Q-table storage format.

    Attributes:
      name: one of :data:`FORMATS`.
      storage: dtype of the stored table.
      is_fixed_point: True for int32 (values scaled by :data:`SCALE`).
    """

    name: str
    storage: jnp.dtype
    is_fixed_point: bool

    def encode(self, x: jax.Array) -> jax.Array:
        """Real values -> stored values (int32: ``round(x * SCALE)``)."""
        if self.is_fixed_point:
            return jnp.round(jnp.asarray(x, jnp.float32) * SCALE).astype(jnp.int32)
        return jnp.asarray(x).astype(self.storage)

    def decode(self, q: jax.Array) -> jax.Array:
        """Stored values -> float32 real values."""
        if self.is_fixed_point:
            return q.astype(jnp.float32) / SCALE
        return q.astype(jnp.float32)


def get_format(name: str) -> NumericFormat:
    """The :class:`NumericFormat` called ``name`` (ValueError listing the formats otherwise)."""
    table = {
        "fp32": NumericFormat("fp32", jnp.float32, False),
        "int32": NumericFormat("int32", jnp.int32, True),
        "fp16": NumericFormat("fp16", jnp.float16, False),
        "bf16": NumericFormat("bf16", jnp.bfloat16, False),
    }
    if name not in table:
        raise ValueError(f"dtype must be one of {', '.join(FORMATS)}; got {name!r}")
    return table[name]


def scale_constant(name: str, value: float) -> int:
    """A constant such as alpha or gamma in int32 fixed point (``round(value * SCALE)``)."""
    return int(round(float(value) * SCALE))


def check_fixed_point_range(max_abs_reward: float, gamma: float) -> None:
    """Raise ValueError if int32 fixed point could overflow for these rewards and gamma."""
    gamma_s = scale_constant("gamma", gamma)
    if gamma_s >= SCALE:
        raise ValueError(
            f"dtype int32 needs gamma < 1 so Q stays bounded; got gamma={gamma}"
        )
    r_s = abs(round(max_abs_reward * SCALE))
    bound = r_s * SCALE / (SCALE - gamma_s)
    if bound > Q_LIMIT_SCALED:
        raise ValueError(
            f"dtype int32 cannot hold these Q-values: max|reward|/(1-gamma) = "
            f"{bound / SCALE:.6g} exceeds the exact fixed-point limit {Q_LIMIT:.6g}; "
            "use fp32 or rescale rewards"
        )


def mul_scaled(c: jax.Array, x: jax.Array) -> jax.Array:
    """``trunc(c * x / SCALE)`` for int32 ``c`` in ``[0, SCALE]`` and any int32 ``x``, exactly.

    Splits ``|x| = hi * SCALE + lo`` so ``c * hi <= 2**31 - 1`` and ``c * lo < SCALE**2``;
    no 64-bit arithmetic is needed (JAX runs with 32-bit integers by default).
    """
    x = x.astype(jnp.int32)
    neg = x < 0
    ax = jnp.abs(x)
    hi = ax // SCALE
    lo = ax - hi * SCALE
    mag = c * hi + (c * lo) // SCALE
    return jnp.where(neg, -mag, mag)


def int_lane_sum_parts(q: jax.Array, axis: int = 0) -> tuple[jax.Array, jax.Array]:
    """Exact sum of int32 ``q`` over ``axis`` as two int32 limbs ``(hi, lo)``.

    ``sum = hi * 65536 + lo`` with ``0 <= lo < 65536``. Valid for ``|q| <= 2**29`` and up to
    65,536 summands; limbs from several devices can be added (``lax.psum``) and renormalised
    with :func:`int_normalize`.
    """
    hi = jnp.sum(q >> 16, axis=axis)
    lo = jnp.sum((q & 0xFFFF).astype(jnp.uint32), axis=axis)  # < 65536 * 65535 < 2**32
    return int_normalize(hi, lo)


def int_normalize(hi: jax.Array, lo: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Carry ``lo`` (int32 or uint32, non-negative) into ``hi`` so that ``0 <= lo < 65536``."""
    lo = lo.astype(jnp.uint32)
    return hi + (lo >> 16).astype(jnp.int32), (lo & 0xFFFF).astype(jnp.int32)


def int_mean_from_parts(hi: jax.Array, lo: jax.Array, count: int) -> jax.Array:
    """``trunc((hi * 65536 + lo) / count)`` exactly (C-style truncation toward zero)."""
    a = jnp.floor_divide(hi, count)
    b = (hi - a * count).astype(jnp.uint32)  # 0 <= b < count
    rem = b * jnp.uint32(65536) + lo.astype(jnp.uint32)  # < count * 2**16 <= 2**32
    q2 = (rem // jnp.uint32(count)).astype(jnp.int32)
    r2 = (rem % jnp.uint32(count)).astype(jnp.int32)
    floor_mean = a * 65536 + q2
    # floor -> trunc: negative totals with a non-zero remainder round up by one.
    return jnp.where((hi < 0) & (r2 != 0), floor_mean + 1, floor_mean)


def reference_mean_int(q: np.ndarray, axis: int = 0) -> np.ndarray:
    """NumPy int64 reference for the exact truncating mean (used by tests and docs)."""
    s = np.asarray(q, np.int64).sum(axis=axis)
    n = np.asarray(q).shape[axis]
    return (np.sign(s) * (np.abs(s) // n)).astype(np.int32)
