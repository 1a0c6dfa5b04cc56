"""Fake quantization over pytrees, straight-through gradients and quantization-aware training.

Every function here is pure and jittable (the spec is static). One function per concept:

* :func:`quantize_dequantize` ``(x, quantizer, straight_through=False)``: ONE array through
  a :class:`Quantizer` (``dequantize(quantize(x))`` in ``x``'s dtype);
* :func:`fake_quantize` ``(params, spec, straight_through=False)``: every float leaf of a
  PYTREE through the quantizer its :class:`QuantSpec` picks per leaf.

With ``straight_through=True`` the forward value is the same and the gradient is the
identity (dQ/dW = 1, the paper's QAT). ``quantize_tree`` returns the codes themselves
(QTensor leaves, codes already in the narrow payload dtype) for packing or integer kernels.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl_pim.checks import check_int
from jaxrl_pim.quant.formats import QTensor, Quantizer
from jaxrl_pim.quant.spec import QuantSpec, as_spec

PyTree = Any


def is_qtensor(x: Any) -> bool:
    """``is_leaf`` predicate for trees holding :class:`QTensor` leaves."""
    return isinstance(x, QTensor)


def _check_float_leaves(params: PyTree, what: str = "params") -> None:
    flat, _ = jax.tree_util.tree_flatten_with_path(params)
    if not flat:
        raise ValueError(f"{what} holds no arrays")
    for path, leaf in flat:
        dtype = getattr(leaf, "dtype", None)
        if dtype is None or not jnp.issubdtype(dtype, jnp.floating):
            raise ValueError(
                f"{what}{jax.tree_util.keystr(path)} must be a float array, got "
                f"{dtype if dtype is not None else type(leaf).__name__}; quantize only float "
                "parameters (pass integer state separately)"
            )


def _qdq(x: jax.Array, quantizer: Quantizer) -> jax.Array:
    return quantizer.dequantize(quantizer.quantize(x)).astype(x.dtype)


def quantize_dequantize(x: jax.Array, quantizer: Quantizer,
                        straight_through: bool = False) -> jax.Array:
    """``dequantize(quantize(x))`` of one float array, in ``x``'s dtype.

    Args:
      x: float array of any shape.
      quantizer: a :class:`Quantizer` (e.g. ``paper_uniform(8)``).
      straight_through: if True, ``jax.grad`` passes the incoming cotangent through unchanged
        (straight-through estimator); the forward value is exactly the fake-quantized value
        (a custom_vjp, not ``x + stop_gradient(q - x)``, which can be off by one ulp). If
        False no useful gradient flows through the rounding.
    Returns:
      Array of ``x``'s shape and dtype holding the quantized values.
    """
    x = jnp.asarray(x)
    if not jnp.issubdtype(x.dtype, jnp.floating):
        raise ValueError(f"quantize_dequantize takes a float array, got dtype {x.dtype}")
    if not straight_through:
        return _qdq(x, quantizer)
    return _ste(x, quantizer)


def _ste(x: jax.Array, quantizer: Quantizer) -> jax.Array:
    """Straight-through quantize-dequantize of a float array (no input check)."""

    @jax.custom_vjp
    def ste(v: jax.Array) -> jax.Array:
        return _qdq(v, quantizer)

    def fwd(v: jax.Array) -> tuple[jax.Array, None]:
        return _qdq(v, quantizer), None

    def bwd(_: None, g: jax.Array) -> tuple[jax.Array]:
        return (g,)

    ste.defvjp(fwd, bwd)
    return ste(x)


def _map_params(params: PyTree, spec: QuantSpec, leaf_fn) -> PyTree:
    _check_float_leaves(params)

    def one(leaf: jax.Array) -> Any:
        if not spec.quantizes(leaf.ndim):
            return leaf
        return leaf_fn(leaf, spec.quantizer(leaf.ndim))

    return jax.tree.map(one, params)


def fake_quantize(params: PyTree, spec: QuantSpec | int,
                  straight_through: bool = False) -> PyTree:
    """Quantize and dequantize every float leaf of ``params`` (post-training quantization).

    Args:
      params: pytree of float arrays (e.g. a flax ``params`` dict).
      spec: a :class:`QuantSpec`, or a bit width meaning ``QuantSpec("paper", bits)``.
      straight_through: if True, an identity gradient for every leaf (for training through
        the quantizer, QAT); if False no gradient flows through the rounding.
    Returns:
      A pytree of the same structure, shapes and dtypes with quantized values. Leaves left
      out by ``include_biases=False`` are returned unchanged.
    Raises:
      ValueError: for non-float leaves or an invalid spec.
    """
    spec = as_spec(spec)
    _check_float_leaves(params)
    if straight_through:
        return _fake_quantize_ste_jit(params, spec)
    return _fake_quantize_jit(params, spec)


def qat_params(
    params: PyTree, spec: QuantSpec | int, step: jax.Array | int, delay: int
) -> PyTree:
    """Quantization-aware-training view of ``params``: fake-quantized (STE) once ``step >= delay``.

    Use inside the loss: ``loss(qat_params(params, spec, state.step, delay), batch)``; before
    the delay the parameters pass through untouched, afterwards the forward pass sees the
    quantized values and gradients flow straight through to the float parameters.

    Args:
      params: pytree of float arrays.
      spec: QuantSpec or bit width.
      step: learner update counter (int or traced int scalar).
      delay: number of learner updates before quantization switches on (host int >= 0; the
        paper uses about half of training).
    Returns:
      A pytree like ``params``. Jittable and vmappable (``lax.cond`` on the traced step).
    """
    spec = as_spec(spec)
    delay = check_int("delay", delay, 0)
    _check_float_leaves(params)
    step = jnp.asarray(step)
    if step.ndim != 0 or not jnp.issubdtype(step.dtype, jnp.integer):
        raise ValueError(f"step must be an integer scalar, got shape {step.shape} {step.dtype}")
    return jax.lax.cond(
        step >= delay,
        lambda p: fake_quantize(p, spec, straight_through=True),
        lambda p: p,
        params,
    )


def quantize_activations(x: jax.Array, spec: QuantSpec | int) -> jax.Array:
    """Fake-quantize an activation array with dynamic range and a straight-through gradient.

    Statistics are taken over the whole array given (per tensor) or, with
    ``spec.per_channel`` set, per feature along ``spec.channel_axis``; ``jax.vmap`` this
    function over the batch axis for per-sample ranges (so one environment's activations do
    not change another's quantization).
    """
    spec = as_spec(spec)
    x = jnp.asarray(x)
    if not jnp.issubdtype(x.dtype, jnp.floating):
        raise ValueError(f"activations must be a float array, got dtype {x.dtype}")
    if spec.is_float:
        quantizer = spec.quantizer(x.ndim)
    else:
        per_feature = spec.per_channel is not False and x.ndim >= 2
        quantizer = QuantSpec(
            spec.scheme, spec.bits, per_channel=per_feature, channel_axis=spec.channel_axis
        ).quantizer(x.ndim)
    return quantize_dequantize(x, quantizer, straight_through=True)


def quantize_tree(params: PyTree, spec: QuantSpec | int) -> PyTree:
    """Quantize every float leaf to a :class:`QTensor` whose codes have the payload dtype.

    Integer formats: codes in ``spec.payload_dtype()`` (int8 for symmetric <= 8 bits, uint8
    for asymmetric <= 8 bits, ...), float32 scales, int32 zero points. Float formats: codes
    are the cast values. Leaves excluded by ``include_biases=False`` stay plain arrays.
    Jittable; this is the device-side half of :func:`jaxrl_pim.quant.pack`.
    """
    spec = as_spec(spec)
    _check_float_leaves(params)
    return _quantize_tree_jit(params, spec)


def _quantize_tree_impl(params: PyTree, spec: QuantSpec) -> PyTree:
    payload = spec.payload_dtype()

    def one(leaf: jax.Array, quantizer: Quantizer) -> QTensor:
        q = quantizer.quantize(leaf)
        return q._replace(codes=q.codes.astype(payload))

    return _map_params(params, spec, one)


# The pytree functions are jitted with the spec static: one compiled program per
# (spec, tree structure, shapes) when called eagerly; inlined inside a caller's jit.
_fake_quantize_jit = jax.jit(lambda p, spec: _map_params(p, spec, _qdq), static_argnums=1)
_fake_quantize_ste_jit = jax.jit(lambda p, spec: _map_params(p, spec, _ste), static_argnums=1)
_quantize_tree_jit = jax.jit(_quantize_tree_impl, static_argnums=1)


def dequantize_qtensor(q: QTensor, dtype: Any = jnp.float32) -> jax.Array:
    """Reconstruct values from a QTensor of any format: ``(codes - zero_point) * scale``.

    Gives bit-identical results to the quantizer's own ``dequantize`` for every format here.
    """
    codes = jnp.asarray(q.codes)
    if jnp.issubdtype(codes.dtype, jnp.floating):
        return codes.astype(jnp.float32).astype(dtype)
    diff = codes.astype(jnp.int32) - jnp.asarray(q.zero_point, jnp.int32)
    return (diff.astype(jnp.float32) * jnp.asarray(q.scale, jnp.float32)).astype(dtype)


def dequantize_tree(qtree: PyTree, like: PyTree | None = None) -> PyTree:
    """Turn a :func:`quantize_tree` result back into float arrays.

    Args:
      qtree: pytree with QTensor leaves (and plain arrays for unquantized leaves).
      like: optional float pytree of the same structure whose leaf dtypes are restored;
        float32 otherwise.
    """
    leaves, treedef = jax.tree.flatten(qtree, is_leaf=is_qtensor)
    if like is None:
        dtypes = tuple(
            "float32" if is_qtensor(q) else str(np.dtype(jnp.asarray(q).dtype)) for q in leaves
        )
    else:
        check_same_structure(qtree, like, is_leaf=is_qtensor)
        dtypes = tuple(str(np.dtype(x.dtype)) for x in jax.tree.leaves(like))
    return jax.tree.unflatten(treedef, dequantize_leaves(leaves, dtypes))


@functools.partial(jax.jit, static_argnums=1)
def dequantize_leaves(leaves: list, dtypes: tuple[str, ...]) -> list:
    """Jitted: dequantize a flat list of QTensors / plain arrays into the given dtypes."""
    return [
        dequantize_qtensor(q, dt) if is_qtensor(q) else jnp.asarray(q).astype(dt)
        for q, dt in zip(leaves, dtypes, strict=True)
    ]


def check_same_structure(a: PyTree, b: PyTree, is_leaf=None, names: tuple[str, str] = ("a", "b")):
    """Raise ValueError unless two pytrees have the same structure (and leaf shapes)."""
    ta = jax.tree.structure(a, is_leaf=is_leaf)
    tb = jax.tree.structure(b, is_leaf=is_leaf)
    if ta != tb:
        raise ValueError(f"pytrees do not match: {names[0]} is {ta}, {names[1]} is {tb}")
    la = jax.tree.leaves(a, is_leaf=is_leaf)
    lb = jax.tree.leaves(b, is_leaf=is_leaf)
    for i, (x, y) in enumerate(zip(la, lb, strict=True)):
        sx = tuple(x.codes.shape if is_qtensor(x) else jnp.shape(x))
        sy = tuple(y.codes.shape if is_qtensor(y) else jnp.shape(y))
        if sx != sy:
            raise ValueError(f"pytree leaf {i} shapes differ: {names[0]} {sx}, {names[1]} {sy}")


def quantization_error(params: PyTree, quantized: PyTree) -> dict[str, jax.Array]:
    """Max and RMS absolute difference between two float pytrees of the same structure."""
    check_same_structure(params, quantized, names=("params", "quantized"))
    diffs = [
        jnp.abs(jnp.asarray(x, jnp.float32) - jnp.asarray(y, jnp.float32)).ravel()
        for x, y in zip(jax.tree.leaves(params), jax.tree.leaves(quantized), strict=True)
    ]
    d = jnp.concatenate(diffs)
    return {"max_abs": jnp.max(d), "rms": jnp.sqrt(jnp.mean(d**2))}
