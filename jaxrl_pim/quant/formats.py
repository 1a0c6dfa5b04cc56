"""Quantizers: pairs of pure functions mapping one float array to codes and back.

A :class:`Quantizer` is ``(quantize, dequantize)``, in the style of optax's
``GradientTransformation``: ``quantize(x) -> QTensor`` (integer codes, scale, zero point)
and ``dequantize(q) -> float32 array``. Both are pure and jittable; all statistics
(min/max/absmax) are computed from the array itself (dynamic range, no calibration state).

Formats (``n`` = bits; codes ``c``; reconstructed value ``x_hat``):

* ``paper_uniform(n)`` -- the QuaRL/ActorQ quantizer: ``d = (|min x| + |max x|) / 2**n``,
  ``c = rint(x / d)`` (round half to even), ``x_hat = d * c``, zero point 0. Codes lie in
  ``[-2**n, 2**n]`` (one more bit than ``n``: a symmetric tensor reaches ``+-2**(n-1)``, a
  one-signed tensor up to ``2**n``). ``n = 16`` is a float16 round trip, ``n >= 32`` the
  identity (as in the paper's code); ``n`` in 17..31 is rejected.
* ``symmetric(n)`` -- ``s = max|x| / (2**(n-1) - 1)``, ``c = clip(rint(x / s), -q, q)`` with
  ``q = 2**(n-1) - 1`` (narrow range, so ``-c`` is always representable), ``x_hat = s * c``.
* ``asymmetric(n)`` -- range ``[lo, hi] = [min(min x, 0), max(max x, 0)]`` (always holds 0),
  ``s = (hi - lo) / (2**n - 1)``, zero point ``z = clip(rint(-lo / s), 0, 2**n - 1)``,
  ``c = clip(rint(x / s) + z, 0, 2**n - 1)``, ``x_hat = s * (c - z)``.
* ``float_cast(dtype)`` -- round to float16 / bfloat16 (IEEE round to nearest even), codes are
  the cast values, scale 1.

In ``symmetric`` and ``asymmetric`` the division by the constant ``q`` is computed as a
multiplication by ``float32(1 / q)`` (identical under jit and eagerly; may differ from a true
division by one ulp of the scale). Every value is within ``s / 2`` of its reconstruction
(no clipping happens: the range is the data's range). ``axis`` selects per-channel
quantization: statistics are taken over every axis except ``axis`` (for flax ``Dense`` and
``Conv`` kernels the output channel is ``axis=-1``), scales keep the reduced axes as size 1
so they broadcast against the codes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl_pim.checks import check_choice, check_int

MIN_BITS = 2
MAX_INT_BITS = 16
PAPER_IDENTITY_BITS = 32

FLOAT_DTYPES: dict[str, jnp.dtype] = {
    "float16": jnp.dtype(jnp.float16),
    "fp16": jnp.dtype(jnp.float16),
    "bfloat16": jnp.dtype(jnp.bfloat16),
    "bf16": jnp.dtype(jnp.bfloat16),
    "float32": jnp.dtype(jnp.float32),
    "fp32": jnp.dtype(jnp.float32),
}


class QTensor(NamedTuple):
    """A quantized array (a pytree of arrays, so it passes through jit/vmap).

    Attributes:
      codes: integer codes with the input's shape (for ``float_cast`` the cast floats).
      scale: float32 step size, shape ``()`` per tensor or the input's shape with every
        axis except the channel axis set to 1 per channel.
      zero_point: int32 zero point with ``scale``'s shape (all zero for symmetric formats).
    """

    codes: jax.Array
    scale: jax.Array
    zero_point: jax.Array


class Quantizer(NamedTuple):
    """``quantize(x) -> QTensor`` and ``dequantize(q) -> float32 array`` (pure, jittable)."""

    quantize: Callable[[jax.Array], QTensor]
    dequantize: Callable[[QTensor], jax.Array]


def check_bits(bits: int, *, paper: bool = False) -> int:
    """Validate a bit width: 2..16 for integer formats; the paper quantizer also takes >= 32.

    Raises:
      ValueError: naming the value and the allowed range.
    """
    if isinstance(bits, bool) or not isinstance(bits, int | np.integer):
        raise ValueError(f"bits must be an integer, got {bits!r}")
    bits = int(bits)
    if paper:
        if MIN_BITS <= bits <= MAX_INT_BITS or bits >= PAPER_IDENTITY_BITS:
            return bits
        raise ValueError(
            f"bits must be in [{MIN_BITS}, {MAX_INT_BITS}] or >= {PAPER_IDENTITY_BITS} "
            f"(identity) for the paper quantizer, got {bits}"
        )
    return check_int("bits", bits, MIN_BITS, MAX_INT_BITS)


def code_range(scheme: str, bits: int) -> tuple[int, int]:
    """Inclusive ``(lowest, highest)`` integer code of an integer format (static)."""
    if scheme == "paper":
        return -(2**bits), 2**bits
    if scheme == "symmetric":
        q = 2 ** (bits - 1) - 1
        return -q, q
    if scheme == "asymmetric":
        return 0, 2**bits - 1
    raise ValueError(f"scheme {scheme!r} has no integer code range")


def code_dtype(scheme: str, bits: int) -> np.dtype:
    """Narrowest NumPy integer dtype holding every code of ``scheme`` at ``bits`` bits.

    symmetric <= 8 bits -> int8, asymmetric <= 8 bits -> uint8, paper <= 6 bits -> int8
    (its codes need ``bits + 2`` signed bits in the worst case), then 16 / 32-bit types.
    """
    lo, hi = code_range(scheme, bits)
    for dt in (np.int8, np.uint8, np.int16, np.uint16, np.int32):
        info = np.iinfo(dt)
        if info.min <= lo and hi <= info.max:
            return np.dtype(dt)
    raise ValueError(f"no integer dtype holds codes [{lo}, {hi}]")  # pragma: no cover


def _reduce_axes(ndim: int, axis: int | None) -> tuple[int, ...] | None:
    if axis is None:
        return None
    return tuple(i for i in range(ndim) if i != axis % ndim)


def _check_axis(x: jax.Array, axis: int | None) -> None:
    if axis is None:
        return
    if x.ndim == 0 or not -x.ndim <= axis < x.ndim:
        raise ValueError(
            f"per-channel axis {axis} is out of range for an array of shape {tuple(x.shape)}"
        )


def _check_float_input(x: jax.Array) -> jax.Array:
    x = jnp.asarray(x)
    if not jnp.issubdtype(x.dtype, jnp.floating):
        raise ValueError(f"quantizers take float arrays, got dtype {x.dtype}")
    return x.astype(jnp.float32)


def _safe(step: jax.Array) -> jax.Array:
    # An all-zero tensor has step 0: use 1 so codes are 0 and the reconstruction is exact.
    return jnp.where(step > 0, step, jnp.ones_like(step))


def _recip(q: int) -> jax.Array:
    # Scales multiply by a float32 reciprocal rather than divide by a constant: XLA rewrites
    # ``a / const`` into ``a * (1 / const)`` under jit but not in eager mode, which would make
    # jitted and eager results differ by one ulp. Multiplying is the same everywhere.
    return jnp.float32(np.float32(1.0) / np.float32(q))


def _check_axis_arg(axis: int | None) -> int | None:
    if axis is None:
        return None
    if isinstance(axis, bool) or not isinstance(axis, int | np.integer):
        raise ValueError(f"axis must be an integer or None, got {axis!r}")
    return int(axis)


def _jitted(quantize, dequantize) -> Quantizer:
    # Each quantizer is built once per configuration (constructors are cached) and its two
    # functions are jitted: one compiled program per input shape instead of a dozen eager
    # ops, and nested inside a caller's jit they are simply inlined.
    return Quantizer(jax.jit(quantize), jax.jit(dequantize))


def _dequant_affine(q: QTensor) -> jax.Array:
    diff = q.codes.astype(jnp.int32) - q.zero_point
    return diff.astype(jnp.float32) * q.scale


def paper_uniform(bits: int, axis: int | None = None) -> Quantizer:
    """The paper's uniform quantizer (QuaRL / ActorQ code), ``x_hat = d * rint(x / d)``.

    ``d = (|min x| + |max x|) / 2**bits`` over the whole tensor (``axis=None``) or per channel
    along ``axis``; zero point 0; ``rint`` rounds half to even. ``bits == 16`` is a float16
    round trip and ``bits >= 32`` the identity, as in the paper.

    Args:
      bits: 2..16, or >= 32.
      axis: channel axis for per-channel steps (the paper uses the output channel of
        convolutions), or None for one step per tensor.
    Returns:
      A :class:`Quantizer`; codes are int32 with ``x``'s shape.
    """
    bits = check_bits(bits, paper=True)
    if bits == MAX_INT_BITS:
        return float_cast(jnp.float16)
    if bits >= PAPER_IDENTITY_BITS:
        return float_cast(jnp.float32)
    return _paper_uniform(bits, _check_axis_arg(axis))


@functools.cache
def _paper_uniform(bits: int, axis: int | None) -> Quantizer:
    levels = float(2**bits)

    def quantize(x: jax.Array) -> QTensor:
        x = _check_float_input(x)
        _check_axis(x, axis)
        red = _reduce_axes(x.ndim, axis)
        lo = jnp.min(x, axis=red, keepdims=axis is not None)
        hi = jnp.max(x, axis=red, keepdims=axis is not None)
        d = _safe((jnp.abs(lo) + jnp.abs(hi)) / levels)
        codes = jnp.rint(x / d).astype(jnp.int32)
        return QTensor(codes, d, jnp.zeros(d.shape, jnp.int32))

    def dequantize(q: QTensor) -> jax.Array:
        return q.codes.astype(jnp.float32) * q.scale

    return _jitted(quantize, dequantize)


def symmetric(bits: int, axis: int | None = None) -> Quantizer:
    """Symmetric (zero point 0) narrow-range integer quantizer, per tensor or per channel.

    ``s = max|x| / (2**(bits-1) - 1)``, codes ``clip(rint(x / s), -q, q)``, ``q = 2**(bits-1)-1``.
    |x - x_hat| <= s / 2 elementwise. Codes are int32 with ``x``'s shape.
    """
    return _symmetric(check_bits(bits), _check_axis_arg(axis))


@functools.cache
def _symmetric(bits: int, axis: int | None) -> Quantizer:
    qmax = 2 ** (bits - 1) - 1

    def quantize(x: jax.Array) -> QTensor:
        x = _check_float_input(x)
        _check_axis(x, axis)
        red = _reduce_axes(x.ndim, axis)
        amax = jnp.max(jnp.abs(x), axis=red, keepdims=axis is not None)
        s = _safe(amax * _recip(qmax))
        codes = jnp.clip(jnp.rint(x / s), -qmax, qmax).astype(jnp.int32)
        return QTensor(codes, s, jnp.zeros(s.shape, jnp.int32))

    return _jitted(quantize, _dequant_affine)


def asymmetric(bits: int, axis: int | None = None) -> Quantizer:
    """Asymmetric (affine, unsigned codes) quantizer over ``[min(min x, 0), max(max x, 0)]``.

    ``s = (hi - lo) / (2**bits - 1)``, ``z = clip(rint(-lo / s), 0, 2**bits - 1)``, codes
    ``clip(rint(x / s) + z, 0, 2**bits - 1)``; ``x_hat = s * (c - z)``; 0 is exact and
    |x - x_hat| <= s / 2. Codes and zero points are int32.
    """
    return _asymmetric(check_bits(bits), _check_axis_arg(axis))


@functools.cache
def _asymmetric(bits: int, axis: int | None) -> Quantizer:
    qmax = 2**bits - 1

    def quantize(x: jax.Array) -> QTensor:
        x = _check_float_input(x)
        _check_axis(x, axis)
        red = _reduce_axes(x.ndim, axis)
        keep = axis is not None
        lo = jnp.minimum(jnp.min(x, axis=red, keepdims=keep), 0.0)
        hi = jnp.maximum(jnp.max(x, axis=red, keepdims=keep), 0.0)
        s = _safe((hi - lo) * _recip(qmax))
        z = jnp.clip(jnp.rint(-lo / s), 0, qmax).astype(jnp.int32)
        codes = jnp.clip(jnp.rint(x / s) + z, 0, qmax).astype(jnp.int32)
        return QTensor(codes, s, z)

    return _jitted(quantize, _dequant_affine)


def float_cast(dtype: str | jnp.dtype) -> Quantizer:
    """Round trip through a narrower float: ``float16`` / ``bfloat16`` (or ``float32``).

    Codes are ``x.astype(dtype)`` (IEEE round to nearest even; float16 overflows to +-inf
    beyond 65504), scale 1, zero point 0; ``dequantize`` casts back to float32.
    """
    if isinstance(dtype, str):
        check_choice("dtype", dtype, FLOAT_DTYPES)
        dt = FLOAT_DTYPES[dtype]
    else:
        dt = jnp.dtype(dtype)
        if dt not in set(FLOAT_DTYPES.values()):
            raise ValueError(f"dtype must be float16, bfloat16 or float32, got {dt}")
    return _float_cast(np.dtype(dt))


@functools.cache
def _float_cast(dt: np.dtype) -> Quantizer:

    def quantize(x: jax.Array) -> QTensor:
        x = jnp.asarray(x)
        if not jnp.issubdtype(x.dtype, jnp.floating):
            raise ValueError(f"quantizers take float arrays, got dtype {x.dtype}")
        one = jnp.ones((), jnp.float32)
        return QTensor(x.astype(dt), one, jnp.zeros((), jnp.int32))

    def dequantize(q: QTensor) -> jax.Array:
        return q.codes.astype(jnp.float32)

    return _jitted(quantize, dequantize)


def identity() -> Quantizer:
    """The float32 identity (``paper_uniform(32)``); handy as a 'no quantization' baseline."""
    return float_cast(jnp.float32)
