"""A fast int8 inference path: static activation scales, weights prepared once per broadcast.

The built-in path (:mod:`jaxrl_pim.quant.int8`) quantizes each layer's input per row at run
time: a max reduction, a division and a rounding before every int8 product. Here everything
that does not depend on the observation is done once, in :func:`prepare` (jittable):

* **weights** are int8 per output channel (``s_w = max|W[:, n]| / 127``; kernels that arrive
  as int8 :class:`~jaxrl_pim.quant.QTensor` codes, as an ActorQ broadcast's do, keep their
  codes and scale), stored in ``layout`` -- ``"nk"``: ``(out, in)``, the contracting
  dimension contiguous (the "TN" operand of cuBLAS's int8 GEMMs); ``"kn"``: ``(in, out)`` --
  and zero-padded to multiples of ``pad`` in both dimensions;
* **activation scales** are static: ``s_x = max|x| / 127`` of each layer's input over
  calibration observations (:func:`calibrate`: the float policy run on states it visits), so
  a layer's input quantization ``clip(rint(x * (1 / s_x)), -127, 127)`` is elementwise and
  XLA fuses it into the previous layer's epilogue (int32 -> float32, ``* s_x * s_w``, bias,
  activation): one fusion per layer and no reduction at inference. Inputs beyond the
  calibrated range are clipped to it;
* **the first and last layers** (a fan-in of a few observations, a handful of outputs) stay
  in float (``float_ends="fp32"`` or ``"bf16"``), where int8 saves nothing;
* **the products** are int8 (``products="int32"``) or, where a device has no fast int8 product,
  the same codes multiplied as float32 values (``products="float32"``): the int8 policy's
  arithmetic on the float units. Every product of two codes is an integer of at most 127^2 and
  every partial sum of at most :data:`EXACT_FLOAT_FAN_IN` of them an integer below 2^24, so up
  to that fan-in the float32 sums are exact and the outputs equal the int32 path's bit for bit
  (on GPUs TF32 keeps integers up to 2^11 exact, so this holds under the default precision
  too); beyond it they may differ by float32 rounding of the sums, as the fake-quantized
  reference does.

:func:`apply` runs a flax linen module with every ``nn.Dense`` computed that way (through
``nn.intercept_methods``): ``y = (q_x @ q_W) * (s_x * s_w) + b``, the product exact in int32
(``lax.dot_general(..., preferred_element_type=int32)``). Padding assumes that a ``Dense``'s
outputs reach the next ``Dense`` through elementwise functions only (MLPs with ReLU, tanh,
...): padded columns meet zero rows of the next kernel, and the last layer's output is sliced
back to its width. :func:`reference_apply` is the same computation with float32 products
(the fake-quantized reference of the same codes and scales).

Which path is fastest depends on the device (:func:`int8_dots_fast`): XLA:CPU multiplies
int8 matrices quickly only through its YNNPACK dot path, which the project's XLA:CPU
workaround flag (``--xla_cpu_experimental_ynn_fusion_type=``, :mod:`jaxrl_pim.xla_env`)
turns off, and it multiplies a single int8 row (a matrix-vector product) slowly even then,
so ``min_rows`` pads a one-row batch to two rows. Measured in ``benchmarks/quant_inference.py``
and described in ``docs/quantization.md``.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Callable, Mapping
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from jaxrl_pim.quant.fake import is_qtensor
from jaxrl_pim.quant.formats import QTensor

PyTree = Any
QMAX = 127
LAYOUTS = ("nk", "kn")
FLOAT_ENDS = ("fp32", "bf16", "none")
#: How an int8 layer's product is computed: ``"int32"`` (``s8 x s8 -> s32``) or ``"float32"``
#: (the same codes as float32 values, float32 products and sums).
PRODUCTS = ("int32", "float32")
#: A float32 sum of up to this many int8 x int8 products (each at most 127^2 in magnitude) is
#: exact: every partial sum is an integer below 2^24 (127^2 * 1040 = 16,774,160). Up to this
#: fan-in, ``products="float32"`` gives the int32 path's outputs bit for bit.
EXACT_FLOAT_FAN_IN = 1040
_FLOAT_DTYPES = {"fp32": jnp.float32, "bf16": jnp.bfloat16}
_YNN_FLAG = "--xla_cpu_experimental_ynn_fusion_type"


@functools.partial(jax.tree_util.register_dataclass, data_fields=("absmax",),
                   meta_fields=("paths",))
@dataclasses.dataclass(frozen=True)
class Ranges:
    """Calibrated input ranges of a policy's ``nn.Dense`` layers.

    Attributes:
      absmax: float32 ``(L,)``: ``max|x|`` of each layer's input over the calibration set.
      paths: the layers' module paths (``/``-joined, e.g. ``"Dense_0"``) in call order
        (static).
    """

    absmax: jax.Array
    paths: tuple[str, ...]


@functools.partial(jax.tree_util.register_dataclass,
                   data_fields=("kernel", "scale", "bias", "inv_in_scale"),
                   meta_fields=("kind", "width"))
@dataclasses.dataclass(frozen=True)
class Layer:
    """One prepared ``nn.Dense``.

    Attributes:
      kernel: int8 codes (``kind="int8"``; with ``products="float32"`` the codes as float32
        values, converted once), ``(N_p, K_p)`` in layout ``"nk"`` or ``(K_p, N_p)`` in
        ``"kn"``; float values (``"fp32"`` / ``"bf16"``), always ``(K_p, N_p)``.
        ``K_p`` and ``N_p`` are the fan-in and the width padded to ``pad``.
      scale: float32 ``(N_p,)``: ``s_x * s_w`` per output (int8); ones (float layers).
      bias: float32 ``(N_p,)``, zero in the padding.
      inv_in_scale: float32 ``()``: ``1 / s_x`` (int8); 1 (float layers).
      kind: ``"int8"``, ``"fp32"`` or ``"bf16"`` (static).
      width: the true output width ``N`` (static).
    """

    kernel: jax.Array
    scale: jax.Array
    bias: jax.Array
    inv_in_scale: jax.Array
    kind: str
    width: int


@functools.partial(jax.tree_util.register_dataclass, data_fields=("layers",),
                   meta_fields=("layout", "first", "last", "min_rows", "products"))
@dataclasses.dataclass(frozen=True)
class Prepared:
    """A policy prepared by :func:`prepare` (a pytree: pass it through ``jit``).

    Attributes:
      layers: ``{path: Layer}``, one per ``nn.Dense``.
      layout: ``"nk"`` or ``"kn"`` (static).
      first, last: the paths of the first and last ``Dense`` called (static).
      min_rows: a batch ``(B, in)`` with fewer rows is zero-padded to this many (static).
      products: ``"int32"`` or ``"float32"``: how :func:`apply` multiplies the int8 layers
        (static; see the module docstring).
    """

    layers: dict[str, Layer]
    layout: str
    first: str
    last: str
    min_rows: int
    products: str = "int32"


def _path(module: nn.Module) -> str:
    return "/".join(str(p) for p in module.scope.path)


def _is_dense_call(context: Any) -> bool:
    return isinstance(context.module, nn.Dense) and context.method_name == "__call__"


def calibrate(fn: Callable[..., Any], variables: PyTree, obs: jax.Array) -> Ranges:
    """Static activation ranges: ``max|x|`` of every ``nn.Dense`` input while ``fn`` runs.

    Traceable (call it inside ``jit`` or eagerly).

    Args:
      fn: ``fn(variables, obs)`` applying a flax module, e.g. ``module.apply`` or an agent's
        greedy policy; every ``nn.Dense`` it calls is recorded, in call order.
      variables: float ``{"params": ...}`` (the float32 or the dequantized policy).
      obs: calibration observations ``(B, obs_dim)``, e.g. states the policy visits.
    Returns:
      :class:`Ranges` with one float32 entry per ``nn.Dense`` call.
    """
    paths: list[str] = []
    amax: list[jax.Array] = []

    def record(next_fun, args, kwargs, context):
        if _is_dense_call(context):
            paths.append(_path(context.module))
            amax.append(jnp.max(jnp.abs(jnp.asarray(args[0], jnp.float32))))
        return next_fun(*args, **kwargs)

    with nn.intercept_methods(record):
        fn(variables, obs)
    if not paths:
        raise ValueError("fn called no nn.Dense layer: nothing to calibrate")
    return Ranges(jnp.stack(amax), tuple(paths))


def _pad_to(n: int, pad: int) -> int:
    return -(-n // pad) * pad


def _node(params: PyTree, path: str) -> Mapping[str, Any]:
    for part in path.split("/"):
        params = params[part]
    return params


def _kernel(node: Mapping[str, Any]) -> Any:
    kernel = node["kernel"]
    if isinstance(kernel, Mapping):  # a QTensor flattened by flax into a dict
        kernel = QTensor(**kernel)
    return kernel


def kernel_codes(kernel: Any) -> tuple[jax.Array, jax.Array]:
    """int8 codes ``(K, N)`` and float32 per-output scales ``(N,)`` of a kernel.

    A float kernel is quantized symmetric int8 per output channel; an int8 QTensor keeps its
    codes and its scale (per tensor or per output), broadcast to ``(N,)``.
    """
    if is_qtensor(kernel):
        codes = jnp.asarray(kernel.codes)
        if codes.dtype != jnp.int8 or codes.ndim != 2:
            raise ValueError(f"QTensor kernels must hold 2-D int8 codes, got {codes.dtype} "
                             f"{codes.shape}")
        scale = jnp.broadcast_to(jnp.asarray(kernel.scale, jnp.float32).reshape(-1),
                                 (codes.shape[1],)) if jnp.size(kernel.scale) > 1 else (
            jnp.full((codes.shape[1],), jnp.asarray(kernel.scale, jnp.float32).reshape(())))
        return codes, scale
    w = jnp.asarray(kernel, jnp.float32)
    if w.ndim != 2:
        raise ValueError(f"kernels must be 2-D (in, out), got shape {w.shape}")
    amax = jnp.max(jnp.abs(w), axis=0)
    s = jnp.where(amax > 0, amax * (jnp.float32(1) / jnp.float32(QMAX)), jnp.float32(1))
    return jnp.clip(jnp.rint(w / s), -QMAX, QMAX).astype(jnp.int8), s


def _float_kernel(kernel: Any) -> jax.Array:
    if is_qtensor(kernel):
        return (jnp.asarray(kernel.codes, jnp.float32)
                * jnp.asarray(kernel.scale, jnp.float32)).astype(jnp.float32)
    return jnp.asarray(kernel, jnp.float32)


def _check_options(layout: str, pad: int, float_ends: str, min_rows: int, products: str) -> None:
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}; got {layout!r}")
    if products not in PRODUCTS:
        raise ValueError(f"products must be one of {PRODUCTS}; got {products!r}")
    if float_ends not in FLOAT_ENDS:
        raise ValueError(f"float_ends must be one of {FLOAT_ENDS}; got {float_ends!r}")
    for name, v in (("pad", pad), ("min_rows", min_rows)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive int; got {v!r}")


def prepare(variables: PyTree, ranges: Ranges, *, layout: str = "nk", pad: int = 16,
            float_ends: str = "fp32", min_rows: int = 1, products: str = "int32") -> Prepared:
    """Quantize and lay out a policy's dense kernels once (jittable).

    Args:
      variables: ``{"params": ...}`` whose ``nn.Dense`` kernels are float ``(in, out)`` arrays
        or int8 :class:`QTensor` (codes and a per-tensor or per-output scale); biases float.
      ranges: :func:`calibrate`'s result for this policy.
      layout: ``"nk"`` or ``"kn"`` (see the module docstring).
      pad: fan-in and width padded to multiples of this (1: none).
      float_ends: ``"fp32"`` / ``"bf16"``: first and last layers in that float type;
        ``"none"``: every layer int8.
      min_rows: batches of fewer rows are padded to this many at run time (2 on XLA:CPU,
        whose one-row int8 product is slow; 1 elsewhere).
      products: ``"int32"`` (int8 products) or ``"float32"`` (the codes multiplied as float32
        values: the same outputs up to a fan-in of :data:`EXACT_FLOAT_FAN_IN`).
    Returns:
      A :class:`Prepared` pytree for :func:`apply`.
    """
    _check_options(layout, pad, float_ends, min_rows, products)
    params = variables["params"]
    paths = ranges.paths
    if len(set(paths)) != len(paths):
        raise ValueError(f"a Dense layer is called more than once ({paths}); fast_int8 "
                         "supports each layer once per forward pass")
    layers: dict[str, Layer] = {}
    prev: int | None = None
    for i, path in enumerate(paths):
        node = _node(params, path)
        kernel = _kernel(node)
        k, n = (kernel.codes if is_qtensor(kernel) else kernel).shape
        if prev is not None and prev < k:
            raise ValueError(f"{path}: fan-in {k} exceeds the previous layer's width {prev}")
        ends = float_ends != "none" and i in (0, len(paths) - 1)
        kp = (k if ends else _pad_to(k, pad)) if prev is None else prev
        np_ = _pad_to(n, pad)
        bias = jnp.zeros(np_, jnp.float32)
        if "bias" in node:
            b = node["bias"]
            b = _float_kernel(QTensor(**b) if isinstance(b, Mapping) else b)
            bias = bias.at[:n].set(b.reshape(-1))
        one = jnp.ones((), jnp.float32)
        if ends:
            w = jnp.zeros((kp, np_), jnp.float32).at[:k, :n].set(_float_kernel(kernel))
            layers[path] = Layer(w.astype(_FLOAT_DTYPES[float_ends]),
                                 jnp.ones(np_, jnp.float32), bias, one, float_ends, n)
        else:
            codes, s_w = kernel_codes(kernel)
            q = jnp.zeros((kp, np_), jnp.int8).at[:k, :n].set(codes)
            if products == "float32":
                q = q.astype(jnp.float32)  # once here, not at every call
            a = ranges.absmax[i].astype(jnp.float32)
            s_x = jnp.where(a > 0, a * (jnp.float32(1) / jnp.float32(QMAX)), one)
            scale = jnp.zeros(np_, jnp.float32).at[:n].set(s_w * s_x)
            layers[path] = Layer(q.T if layout == "nk" else q, scale, bias, one / s_x,
                                 "int8", n)
        prev = np_
    return Prepared(layers, layout, paths[0], paths[-1], min_rows, products)


def quantize_input(x: jax.Array, inv_scale: jax.Array) -> jax.Array:
    """``clip(rint(x * inv_scale), -127, 127)`` as int8 (elementwise: no reduction)."""
    return jnp.clip(jnp.rint(x * inv_scale), -QMAX, QMAX).astype(jnp.int8)


def _fan_in(layer: Layer, layout: str) -> int:
    if layer.kind == "int8" and layout == "nk":
        return layer.kernel.shape[1]
    return layer.kernel.shape[0]


def layer_apply(layer: Layer, x: jax.Array, layout: str, products: str = "int32",
                precision: jax.lax.Precision | None = None) -> jax.Array:
    """One prepared layer on ``x`` ``(..., K)`` (zero-padded here to ``K_p``): float32
    ``(..., N_p)``. ``products="float32"`` computes the int8 product in float32 instead of
    int32; ``precision`` is that of the float32 products (:func:`reference_apply`: HIGHEST)."""
    kp = _fan_in(layer, layout)
    if x.shape[-1] < kp:
        x = jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, kp - x.shape[-1])])
    if layer.kind == "int8":
        q = quantize_input(jnp.asarray(x, jnp.float32), layer.inv_in_scale)
        dims = (((q.ndim - 1,), (1 if layout == "nk" else 0,)), ((), ()))
        if products == "int32":
            acc = jax.lax.dot_general(q, layer.kernel, dims, preferred_element_type=jnp.int32)
        else:
            acc = jax.lax.dot_general(q.astype(jnp.float32), layer.kernel.astype(jnp.float32),
                                      dims, precision=precision)
        return acc.astype(jnp.float32) * layer.scale + layer.bias
    y = jax.lax.dot_general(x.astype(layer.kernel.dtype), layer.kernel,
                            (((x.ndim - 1,), (0,)), ((), ())),
                            preferred_element_type=jnp.float32, precision=precision)
    return y + layer.bias


def _run(fn: nn.Module | Callable[..., Any], prepared: Prepared, products: str,
         precision: jax.lax.Precision | None, args: tuple, kwargs: dict) -> Any:
    rows: list[int] = []

    def interceptor(next_fun, args_, kwargs_, context):
        if not _is_dense_call(context):
            return next_fun(*args_, **kwargs_)
        path = _path(context.module)
        x = args_[0]
        if path == prepared.first and x.ndim >= 2 and x.shape[0] < prepared.min_rows:
            rows.append(x.shape[0])
            x = jnp.pad(x, [(0, prepared.min_rows - x.shape[0])] + [(0, 0)] * (x.ndim - 1))
        layer = prepared.layers[path]
        y = layer_apply(layer, x, prepared.layout, products, precision)
        if path == prepared.last:
            y = y[..., :layer.width]
            if rows:
                y = y[:rows[0]]
        return y

    call = fn.apply if isinstance(fn, nn.Module) else fn
    with nn.intercept_methods(interceptor):
        return call({"params": {}}, *args, **kwargs)


def apply(fn: nn.Module | Callable[..., Any], prepared: Prepared, *args: Any,
          **kwargs: Any) -> Any:
    """``fn`` run with every ``nn.Dense`` computed from ``prepared`` (jittable).

    ``fn`` is a flax module (``module.apply`` is called) or a function ``fn(variables, *args)``
    that hands ``variables`` to ``module.apply`` (a policy's apply function); it runs with
    empty parameters: a ``Dense`` takes everything from ``prepared``, so modules with other
    parameterised layers (LayerNorm, Conv) are not supported. The int8 layers multiply as
    ``prepared.products`` says.
    """
    return _run(fn, prepared, prepared.products, None, args, kwargs)


def reference_apply(fn: nn.Module | Callable[..., Any], prepared: Prepared, *args: Any,
                    **kwargs: Any) -> Any:
    """:func:`apply` with float32 products of the same codes and scales (the fake-quantized
    reference: equal to :func:`apply` up to float32 rounding of the sums)."""
    return _run(fn, prepared, "float32", jax.lax.Precision.HIGHEST, args, kwargs)


def int8_dots_fast(backend: str | None = None, xla_flags: str | None = None) -> bool:
    """Whether the backend multiplies int8 matrices on a fast path.

    GPUs and TPUs: True. XLA:CPU: True when its YNNPACK dot path is on, i.e. when
    ``XLA_FLAGS`` (``xla_flags``; default ``os.environ``) does not turn off the
    ``individual_dot`` YNN fusion type (the project's workaround flag
    ``--xla_cpu_experimental_ynn_fusion_type=`` turns every type off; ``=individual_dot``
    keeps the dots). XLA reads ``XLA_FLAGS`` up to its first token without ``--``, and so
    does this function. Measured in ``benchmarks/quant_inference.py``.
    """
    backend = backend or jax.default_backend()
    if backend != "cpu":
        return True
    flags = os.environ.get("XLA_FLAGS", "") if xla_flags is None else xla_flags
    value = None
    for token in flags.split():
        if not token.startswith("--"):
            break
        name, _, v = token.partition("=")
        if name == _YNN_FLAG:
            value = v
    if value is None:
        return True  # jaxlib's default list holds the dot types
    items = [v for v in value.split(",") if v]
    if items and all(v[0] in "+-" for v in items):
        return not any(v[1:] in ("individual_dot", "dot") for v in items if v[0] == "-")
    return any(v in ("individual_dot", "dot") for v in items)


def default_options(backend: str | None = None, products: str = "int32") -> dict[str, Any]:
    """:func:`prepare`'s options for a backend and a way of multiplying: ``pad=16``, first
    and last layers in float32; int8 products: ``layout="nk"`` and ``min_rows=2`` on CPU (its
    one-row int8 product is slow); float32 products: ``layout="kn"``, the float network's own
    (stored ``(out, in)``, a float32 kernel is transposed by XLA:CPU at every call, seen ad
    hoc at 3 x 2,048; not in a results file), and no padding of rows."""
    backend = backend or jax.default_backend()
    int8 = products == "int32"
    return {"layout": "nk" if int8 else "kn", "pad": 16, "float_ends": "fp32",
            "min_rows": 2 if int8 and backend == "cpu" else 1, "products": products}
