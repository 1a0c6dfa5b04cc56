"""Policies that compute in the precision they were quantized to (actor-side arithmetic).

A broadcast policy arrives as a tree of :class:`~jaxrl_pim.quant.QTensor` leaves
(:func:`jaxrl_pim.quant.quantize_tree` on the device,
:func:`jaxrl_pim.quant.packing.unpack_qtensors` from the wire). :func:`actor_tree` turns it
into the parameters an actor runs with:

* ``compute="float32"``: every leaf dequantized to float32 (the *dequantized policy*: the
  same values as :func:`jaxrl_pim.quant.fake_quantize`), run with float32 matmuls;
* ``compute="native"``: the 2-D ``kernel`` leaves keep their low-precision form -- int8
  codes with their float32 scale (any QTensor whose codes are int8), or float16 values --
  and everything else (biases, norm scales) is dequantized to float32;
* ``compute="emulated"``: int8 kernels kept as with ``"native"``, for the fast int8 path with
  its products computed in float32 (:mod:`jaxrl_pim.quant.fast_int8`, ``products="float32"``:
  the int8 policy's outputs bit for bit up to a fan-in of 1,040, on the float units); float16
  kernels dequantized as with ``"float32"``.

:func:`policy_apply` runs a flax linen module with such parameters: each ``nn.Dense`` whose
kernel is an int8 QTensor runs :func:`jaxrl_pim.quant.int8.int8_matmul` (activations
quantized symmetric int8 per row, ``int8 x int8 -> int32`` ``dot_general``, rescaled by
``s_x * s_w``); a float16 kernel runs a ``float16 x float16 -> float32`` ``dot_general``
(activations cast to float16, float32 accumulation); a float32 kernel runs the layer
unchanged. Other layers (activations, LayerNorm) always run in float32.

A :class:`jaxrl_pim.quant.fast_int8.Prepared` policy (static activation scales, weights in the
device's layout) runs through :func:`jaxrl_pim.quant.fast_int8.apply`. :func:`fastest_compute`
says which arithmetic is fastest for a precision on a device, from the measurements of
``benchmarks/quant_inference.py``.

:func:`int8_error_bound` is the bound the int8 path keeps to the dequantized policy (derived
in its docstring); the tests check it on every output. It is a worst case (every rounding
error aligned with the weights' signs); :func:`int8_error_rms` is the typical size, from the
model of independent roundings.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from jaxrl_pim.quant import fast_int8
from jaxrl_pim.quant.fake import dequantize_qtensor, is_qtensor
from jaxrl_pim.quant.formats import QTensor
from jaxrl_pim.quant.int8 import int8_matmul

PyTree = Any
#: the kernel kinds (:func:`_kernel_kind`) each compute keeps in their own precision; every
#: other leaf is dequantized to float32
KEPT_KINDS: dict[str, tuple[str, ...]] = {
    "float32": (), "native": ("int8", "fp16"), "emulated": ("int8",)}
COMPUTES = tuple(KEPT_KINDS)


def _kernel_kind(path: tuple, leaf: Any) -> str:
    """``"int8"``, ``"fp16"`` or ``"other"`` for one leaf of a QTensor tree."""
    name = getattr(path[-1], "key", None) if path else None
    if name != "kernel" or not is_qtensor(leaf) or np.ndim(leaf.codes) != 2:
        return "other"
    dt = jnp.asarray(leaf.codes).dtype
    if dt == jnp.int8:
        return "int8"
    if dt == jnp.float16:
        return "fp16"
    return "other"


def actor_tree(qtree: PyTree, compute: str = "native") -> PyTree:
    """The parameters an actor holds for a quantized tree (see the module docstring).

    Args:
      qtree: pytree of QTensors (and plain arrays for leaves left in full precision), e.g.
        ``quantize_tree(params, spec)``; NumPy or JAX arrays.
      compute: ``"native"`` (int8 / float16 kernels kept for integer / half arithmetic),
        ``"emulated"`` (int8 kernels kept, float16 ones dequantized) or ``"float32"``
        (everything dequantized).
    Returns:
      A pytree with the structure of the original parameters: float32 arrays, and with
      ``"native"`` int8 :class:`QTensor` (codes ``int8`` of the kernel's shape, float32
      ``scale`` of shape ``()`` or ``(1, out)``) or ``float16`` kernels. Jittable.
    """
    if compute not in COMPUTES:
        raise ValueError(f"compute must be one of {', '.join(COMPUTES)}; got {compute!r}")

    def one(path, leaf):
        kind = _kernel_kind(path, leaf)
        if kind not in KEPT_KINDS[compute]:
            kind = "other"
        if kind == "int8":
            return QTensor(jnp.asarray(leaf.codes, jnp.int8), jnp.asarray(leaf.scale, jnp.float32),
                           jnp.asarray(leaf.zero_point, jnp.int32))
        if kind == "fp16":
            return jnp.asarray(leaf.codes, jnp.float16)
        if is_qtensor(leaf):
            return dequantize_qtensor(leaf, jnp.float32)
        return jnp.asarray(leaf, jnp.float32)

    return jax.tree_util.tree_map_with_path(one, qtree, is_leaf=is_qtensor)


def dequantized(params: PyTree) -> PyTree:
    """An :func:`actor_tree` result with every leaf back in float32 (the dequantized policy)."""

    def one(leaf):
        if is_qtensor(leaf):
            return dequantize_qtensor(leaf, jnp.float32)
        return jnp.asarray(leaf, jnp.float32)

    return jax.tree.map(one, params, is_leaf=is_qtensor)


def fp16_matmul(x: jax.Array, kernel: jax.Array) -> jax.Array:
    """``x @ kernel`` with float16 operands and a float32 accumulator: ``(..., in) x (in, out)
    -> float32 (..., out)``."""
    return jax.lax.dot_general(
        jnp.asarray(x).astype(jnp.float16), kernel.astype(jnp.float16),
        dimension_numbers=(((jnp.ndim(x) - 1,), (0,)), ((), ())),
        preferred_element_type=jnp.float32)


def _interceptor(next_fun: Callable, args: tuple, kwargs: dict, context: Any) -> Any:
    module = context.module
    if not (isinstance(module, nn.Dense) and context.method_name == "__call__"):
        return next_fun(*args, **kwargs)
    variables = module.variables["params"]
    kernel = variables["kernel"]
    if isinstance(kernel, dict):  # a QTensor flattened by flax into a dict
        kernel = QTensor(**kernel)
    if isinstance(kernel, QTensor):
        matmul = int8_matmul
    elif jnp.asarray(kernel).dtype == jnp.float16:
        matmul = fp16_matmul
    else:
        return next_fun(*args, **kwargs)
    (x,) = args
    y = matmul(jnp.asarray(x, jnp.float32), kernel)
    if module.use_bias:
        y = y + jnp.asarray(variables["bias"], jnp.float32)
    return y.astype(module.dtype or jnp.float32)


def has_lowp_kernels(variables: PyTree) -> bool:
    """Whether ``variables`` hold int8 QTensor or float16 kernels (a ``"native"`` tree)."""
    leaves = jax.tree.leaves(variables, is_leaf=is_qtensor)
    return any(is_qtensor(x) or jnp.asarray(x).dtype == jnp.float16 for x in leaves)


def policy_apply(module: nn.Module, variables: PyTree, *args: Any, **kwargs: Any) -> Any:
    """``module.apply(variables, *args)``, with each ``nn.Dense`` computing in its kernel's
    precision (int8 QTensor: int8 matmul; float16: half matmul; float32: unchanged).

    With only float32 leaves this is exactly ``module.apply``; a
    :class:`~jaxrl_pim.quant.fast_int8.Prepared` policy runs :func:`fast_int8.apply`.
    Jittable and vmappable.
    """
    if isinstance(variables, fast_int8.Prepared):
        return fast_int8.apply(module, variables, *args, **kwargs)
    if not has_lowp_kernels(variables):
        return module.apply(variables, *args, **kwargs)
    with nn.intercept_methods(_interceptor):
        return module.apply(variables, *args, **kwargs)


#: XLA:CPU's fast int8 products (YNNPACK's dots) beat the same policy's float32 products
#: (``"emulated"``) on layers at least this wide at any number of rows (two or more) ...
INT8_WIDE_LAYER = 1024
#: ... and on narrower layers once rows x width reaches this (the quantize and rescale
#: epilogues are then repaid). Both from ``benchmarks/results/cpu/quant_inference.json``'s
#: ``ynn_dots_int8_fast_*`` over ``ynn_dots_int8_emulated_*`` device-side figures: int8
#: faster at 1,024 and 2,048 wide at every batch, at 256 wide from 64 rows, at 64 wide from
#: 1,024 rows; slower or within 10 % below (``tests/quant/test_fast_int8.py`` checks the rule
#: against the file). 256 wide at 64 rows is within run-to-run noise: the run before the
#: published one (in the file's git history) had int8 slower there by more than 10 %.
INT8_ROWS_X_WIDTH = 16_384


def fastest_compute(precision: str, rows: int, backend: str | None = None,
                    xla_flags: str | None = None, *, width: int | None = None) -> str:
    """The fastest arithmetic that computes a quantized policy's own outputs, as measured by
    ``benchmarks/quant_inference.py`` (``docs/quantization.md``).

    * int8: ``"native"`` (int8 products) only on XLA:CPU with its YNNPACK dot path on
      (:func:`fast_int8.int8_dots_fast`), ``rows >= 2`` (XLA:CPU widens a one-row int8
      product, a matrix-vector product, to int32) and, when the policy's narrowest hidden
      ``width`` is given, a layer wide enough to repay the int8 epilogues (``width >=``
      :data:`INT8_WIDE_LAYER` or ``rows * width >=`` :data:`INT8_ROWS_X_WIDTH`); otherwise
      ``"emulated"``: the same codes and static scales multiplied on the float units (the
      int8 outputs bit for bit up to a fan-in of 1,040). On GPUs and TPUs ``"emulated"`` until
      the GPU suite has timed the fast int8 path: the H200 figures so far have the per-row
      int8 path slower than float32 (TF32). ``"float32"`` (the dequantized policy: int8
      weights, float activations) is never chosen: it computes a different function.
    * float16: ``"float32"`` on CPU (no fast half product), ``"native"`` elsewhere.
    * float32: ``"native"`` (nothing to choose).

    Args:
      precision: ``"fp32"``, ``"fp16"`` or ``"int8"``.
      rows: rows per policy call (the environments one vmapped call evaluates).
      backend: the JAX backend (default: the default backend).
      xla_flags: ``XLA_FLAGS`` to read (default: the environment's).
      width: the narrowest hidden layer's width (units); None: not considered.
    Returns:
      ``"native"``, ``"emulated"`` (int8) or ``"float32"`` (float16 on CPU).
    """
    backend = backend or jax.default_backend()
    if precision == "fp32":
        return "native"
    if precision == "fp16":
        return "float32" if backend == "cpu" else "native"
    wide = width is None or width >= INT8_WIDE_LAYER or rows * width >= INT8_ROWS_X_WIDTH
    if backend == "cpu" and rows >= 2 and wide and fast_int8.int8_dots_fast(backend, xla_flags):
        return "native"
    return "emulated"


def int8_error_bound(kernels: Sequence[np.ndarray], activations: Sequence[np.ndarray],
                     lipschitz: float = 1.0) -> np.ndarray:
    """Elementwise bound on ``|int8 path - dequantized path|`` at an MLP's output.

    The MLP is ``x_{l+1} = phi(x_l W_l + b_l)`` for ``l < L`` and ``y = x_L W_L + b_L``, with
    ``phi`` applied elementwise and ``lipschitz``-Lipschitz (ReLU, tanh: 1); ``W_l`` are the
    dequantized kernels (``codes * scale``: both paths use exactly these values). The int8
    path replaces each layer's input row ``x~`` (its own, already perturbed activations) by
    ``s q``, ``q = rint(x~ / s)``, ``s = max|x~| / 127``, so ``|s q - x~| <= s / 2``
    elementwise, and computes ``(s q) W`` exactly in int32 before one float32 rescale.
    With ``d_l >= |x~_l - x_l|`` (``d_0 = 0``: the observation is exact),

    ``|x~_l W_l - x_l W_l| <= (d_l + s~_l / 2) |W_l|``,  ``s~_l <= (max|x_l| + max d_l) / 127``

    so ``d_{l+1} = lipschitz * (d_l + s~_l / 2) |W_l|`` (the biases are the same on both
    sides). Float32 rounding of both products adds at most ``gamma_n (|x_l| + d_l) |W_l|``
    with ``gamma_n = (n + 3) u / (1 - (n + 3) u)``, ``u = 2^-24``, ``n`` the fan-in (the
    reference's dot product and the int8 path's two rescaling multiplies); it is included.

    Args:
      kernels: the dequantized kernels ``W_l``, shapes ``(n_l, n_{l+1})``.
      activations: the dequantized (float32) path's layer inputs ``x_l``, shapes ``(B, n_l)``
        (``activations[0]`` is the observation batch).
    Returns:
      float64 ``(B, n_out)``: for every sample and output, a bound on the difference.
    """
    if len(kernels) != len(activations):
        raise ValueError(f"one activation per kernel: got {len(kernels)} kernels and "
                         f"{len(activations)} activations")
    u = 2.0**-24
    d = np.zeros_like(np.asarray(activations[0], np.float64))
    out = d
    for i, (w, x) in enumerate(zip(kernels, activations, strict=True)):
        w = np.abs(np.asarray(w, np.float64))
        x = np.abs(np.asarray(x, np.float64))
        if x.shape[-1] != w.shape[0] or d.shape != x.shape:
            raise ValueError(f"layer {i}: activation {x.shape} does not match kernel {w.shape}")
        n = w.shape[0]
        gamma = (n + 3) * u / (1 - (n + 3) * u)
        s = (x.max(axis=-1, keepdims=True) + d.max(axis=-1, keepdims=True)) / 127.0
        s = s * (1 + 4 * u)  # the scale itself is computed in float32
        out = (d + s / 2) @ w + gamma * (x + d) @ w
        d = lipschitz * out
    return out


def int8_error_rms(kernels: Sequence[np.ndarray], activations: Sequence[np.ndarray]) -> float:
    """Root-mean-square int8-vs-dequantized output difference predicted by a simple model.

    Model: each activation rounding error is independent and uniform on ``[-s/2, s/2]``
    (variance ``s^2 / 12``) and errors pass through each layer linearly (an activation
    function's slope is at most 1, so this over-estimates them): ``v_{l+1} = (v_l + s_l^2 /
    12) W_l^2`` elementwise-squared weights, ``v_0 = 0``. Returns ``sqrt(mean(v_L))`` over
    samples and outputs. Same arguments as :func:`int8_error_bound`.
    """
    var = np.zeros_like(np.asarray(activations[0], np.float64))
    for w, x in zip(kernels, activations, strict=True):
        w = np.asarray(w, np.float64)
        s = np.abs(np.asarray(x, np.float64)).max(axis=-1, keepdims=True) / 127.0
        var = (var + s**2 / 12.0) @ (w**2)
    return float(np.sqrt(var.mean()))
