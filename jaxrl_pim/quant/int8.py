"""Real int8 matrix multiplies for flax policies (post-training quantization, no extra deps).

``int8_matmul`` multiplies int8 activations by int8 weights with ``lax.dot_general(...,
preferred_element_type=int32)`` -- an int8 x int8 -> int32 product that XLA lowers to
integer instructions on CPU/GPU -- then rescales: ``y = acc * s_x * s_w``. Weights are
quantized symmetric int8 per output channel (``s_w`` shape ``(1, out)``), activations
symmetric int8 per row (one scale per sample, shape ``(..., 1)``, so one environment's
activations never change another's quantization).

``int8_apply(module, variables, x)`` runs any flax linen module with every ``nn.Dense``
replaced by that integer kernel (via ``nn.intercept_methods``); kernels may be float (quantized
on the fly) or already :class:`QTensor` from :func:`prepare_int8`. ``fake_int8_apply`` is
the same computation in float32 (fake quantization), and ``compare_int8`` reports how far
the two are apart and how often their greedy actions agree.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from jaxrl_pim.quant.fake import _check_float_leaves, quantize_dequantize
from jaxrl_pim.quant.formats import QTensor, symmetric

PyTree = Any

_W8 = symmetric(8, axis=-1)  # per output channel of a (in, out) kernel
_A8 = symmetric(8, axis=None)


def quantize_kernel(kernel: jax.Array) -> QTensor:
    """int8 symmetric per-output-channel codes of a ``(in, out)`` kernel (scale ``(1, out)``)."""
    kernel = jnp.asarray(kernel)
    if kernel.ndim != 2:
        raise ValueError(f"int8 kernels must be 2-D (in, out), got shape {kernel.shape}")
    q = _W8.quantize(kernel)
    return q._replace(codes=q.codes.astype(jnp.int8))


def quantize_rows(x: jax.Array) -> QTensor:
    """int8 symmetric codes of ``x`` with one scale per row (last axis reduced)."""
    q = jax.vmap(_A8.quantize)(x.reshape(-1, x.shape[-1]))
    codes = q.codes.astype(jnp.int8).reshape(x.shape)
    scale = q.scale.reshape(x.shape[:-1] + (1,))
    return QTensor(codes, scale, jnp.zeros(scale.shape, jnp.int32))


@jax.jit
def int8_matmul(x: jax.Array, kernel: jax.Array | QTensor) -> jax.Array:
    """``x @ kernel`` with int8 operands and an int32 accumulator.

    Args:
      x: float activations, shape ``(..., in)``.
      kernel: float ``(in, out)`` kernel or its :func:`quantize_kernel` QTensor.
    Returns:
      float32 ``(..., out)``: ``(qx @ qw) * s_x * s_w`` with the product exact in int32
      (|acc| <= in * 127 * 127 fits int32 for in < 133,000).
    """
    qw = kernel if isinstance(kernel, QTensor) else quantize_kernel(kernel)
    if qw.codes.dtype != jnp.int8:
        raise ValueError(f"kernel codes must be int8, got {qw.codes.dtype}")
    qx = quantize_rows(jnp.asarray(x, jnp.float32))
    acc = jax.lax.dot_general(
        qx.codes,
        qw.codes,
        dimension_numbers=(((qx.codes.ndim - 1,), (0,)), ((), ())),
        preferred_element_type=jnp.int32,
    )
    return acc.astype(jnp.float32) * qx.scale * qw.scale.reshape(-1)


@jax.jit
def fake_int8_matmul(x: jax.Array, kernel: jax.Array) -> jax.Array:
    """Float reference of :func:`int8_matmul`: fake-quantized operands, float32 product."""
    rows = jnp.asarray(x, jnp.float32).reshape(-1, x.shape[-1])
    xq = jax.vmap(lambda r: quantize_dequantize(r, _A8, straight_through=True))(rows)
    xq = xq.reshape(x.shape)
    wq = quantize_dequantize(jnp.asarray(kernel, jnp.float32), _W8, straight_through=True)
    return jnp.matmul(xq, wq, precision=jax.lax.Precision.HIGHEST)


def prepare_int8(params: PyTree) -> PyTree:
    """Replace every 2-D leaf named ``kernel`` by its int8 QTensor (done once per broadcast)."""
    _check_float_leaves(params)

    def one(path, leaf):
        name = getattr(path[-1], "key", None) if path else None
        if name == "kernel" and leaf.ndim == 2:
            return quantize_kernel(leaf)
        return leaf

    return jax.tree_util.tree_map_with_path(one, params)


def _dense_interceptor(matmul: Callable[[jax.Array, Any], jax.Array]):
    def interceptor(next_fun, args, kwargs, context):
        module = context.module
        if not (isinstance(module, nn.Dense) and context.method_name == "__call__"):
            return next_fun(*args, **kwargs)
        (x,) = args
        variables = module.variables["params"]
        kernel = variables["kernel"]
        if isinstance(kernel, dict):  # a QTensor flattened by flax into a dict
            kernel = QTensor(**kernel)
        y = matmul(x, kernel)
        if module.use_bias:
            y = y + jnp.asarray(variables["bias"], jnp.float32)
        return y.astype(module.dtype or jnp.result_type(x))

    return interceptor


def int8_apply(module: nn.Module, variables: PyTree, *args: Any, **kwargs: Any) -> Any:
    """``module.apply(variables, *args)`` with every ``nn.Dense`` run as an int8 matmul.

    ``variables`` are the usual ``{"params": ...}``; kernels may be float or prepared with
    :func:`prepare_int8`. Other layers (activations, LayerNorm, Conv) run as usual in float.
    Jittable (``jax.jit(functools.partial(int8_apply, module))``).
    """
    with nn.intercept_methods(_dense_interceptor(int8_matmul)):
        return module.apply(variables, *args, **kwargs)


def fake_int8_apply(module: nn.Module, variables: PyTree, *args: Any, **kwargs: Any) -> Any:
    """Float32 fake-quant reference of :func:`int8_apply` (same scales, float product)."""

    def matmul(x, kernel):
        if isinstance(kernel, QTensor):
            raise ValueError("fake_int8_apply takes float kernels, not prepared QTensors")
        return fake_int8_matmul(x, kernel)

    with nn.intercept_methods(_dense_interceptor(matmul)):
        return module.apply(variables, *args, **kwargs)


def compare_outputs(reference: jax.Array, other: jax.Array) -> dict[str, float]:
    """Max abs difference and greedy-action (argmax over the last axis) agreement."""
    reference = jnp.asarray(reference, jnp.float32)
    other = jnp.asarray(other, jnp.float32)
    return {
        "max_abs_diff": float(jnp.max(jnp.abs(reference - other))),
        "max_abs_output": float(jnp.max(jnp.abs(reference))),
        "argmax_agreement": float(
            jnp.mean(jnp.argmax(reference, -1) == jnp.argmax(other, -1))
        ),
    }


def compare_with_references(
    module: nn.Module, variables: PyTree, x: jax.Array,
    apply: Callable[..., Any], name: str,
) -> dict[str, dict]:
    """Run a policy three ways on ``x`` and compare outputs: in fp32, in fake int8
    (:func:`fake_int8_apply`) and through ``apply(module, variables, x)`` (a real int8 path
    such as :func:`int8_apply`), each jitted.

    Returns ``{f"{name}_vs_fake": ..., f"{name}_vs_fp32": ..., "fake_vs_fp32": ...}``, each
    from :func:`compare_outputs` (max abs difference of outputs, argmax agreement in [0, 1]).
    """
    fp32 = jax.jit(module.apply)(variables, x)
    fake = jax.jit(functools.partial(fake_int8_apply, module))(variables, x)
    real = jax.jit(functools.partial(apply, module))(variables, x)
    return {
        f"{name}_vs_fake": compare_outputs(fake, real),
        f"{name}_vs_fp32": compare_outputs(fp32, real),
        "fake_vs_fp32": compare_outputs(fp32, fake),
    }


def compare_int8(module: nn.Module, variables: PyTree, x: jax.Array) -> dict[str, dict]:
    """Run a policy three ways (fp32, fake int8, real int8) on ``x`` and compare outputs.

    Returns ``{"int8_vs_fake": ..., "int8_vs_fp32": ..., "fake_vs_fp32": ...}`` (see
    :func:`compare_with_references`).
    """
    return compare_with_references(module, variables, x, int8_apply, "int8")
