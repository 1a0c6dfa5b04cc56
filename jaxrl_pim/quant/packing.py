"""Broadcast packing: a parameter pytree as one compact byte payload plus scales.

``pack`` and ``unpack`` are HOST-side functions (NumPy + zlib, not jittable): the learner
calls ``pack`` on its parameters before a broadcast, each actor calls ``unpack``. The
device-side, jittable half is :func:`jaxrl_pim.quant.quantize_tree`, which ``pack`` runs
first (so the codes travel from the device in their narrow dtype).

Layout of a :class:`PackedParams`:

* ``payload``: the codes of every leaf, in tree-flatten order, C order, each in the spec's
  payload dtype (int8 for ``symmetric`` 8-bit: one byte per weight, 4x smaller than
  float32; float16 for ``fp16``: 2x). Leaves kept in full precision
  (``include_biases=False``) are stored in their own dtype.
* ``scales``: float32 scales of every leaf, then (asymmetric only) the zero points in the
  payload dtype. Per tensor: one scale per leaf; per channel: one per output channel.
  Float formats store no scales.
* ``checksum``: CRC32 (zlib) of ``payload`` followed by ``scales``; ``unpack`` recomputes it
  and raises ValueError on a mismatch (a corrupted or truncated broadcast).
* ``leaves``/``treedef``/``spec``: metadata to rebuild the tree (not counted in
  :func:`packed_nbytes`, which is the size of what changes from one broadcast to the next).

``unpack(pack(p, spec))`` equals ``fake_quantize(p, spec)`` bit for bit.
"""

from __future__ import annotations

import zlib
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl_pim.checks import check_finite
from jaxrl_pim.quant.fake import (
    PyTree,
    _check_float_leaves,
    check_same_structure,
    dequantize_leaves,
    is_qtensor,
    quantize_tree,
)
from jaxrl_pim.quant.formats import QTensor
from jaxrl_pim.quant.spec import QuantSpec, as_spec


class LeafLayout(NamedTuple):
    """Where one leaf lives in the payload (all offsets and sizes in bytes)."""

    shape: tuple[int, ...]
    dtype: str  # the leaf's original dtype, restored by unpack
    code_dtype: str  # dtype of its codes in the payload
    offset: int
    nbytes: int
    scale_shape: tuple[int, ...] | None  # None: no scale (float cast or full precision)
    scale_offset: int
    has_zero_point: bool


class PackedParams(NamedTuple):
    """A packed parameter broadcast (see the module docstring for the layout)."""

    payload: bytes
    scales: bytes
    checksum: int
    leaves: tuple[LeafLayout, ...]
    treedef: Any
    spec: QuantSpec


def _crc(payload: bytes, scales: bytes) -> int:
    return zlib.crc32(scales, zlib.crc32(payload)) & 0xFFFFFFFF


DEFAULT_PACK_SPEC = QuantSpec("symmetric", 8)


def pack(params: PyTree, spec: QuantSpec | int = DEFAULT_PACK_SPEC) -> PackedParams:
    """Quantize ``params`` and serialise codes and scales into bytes (host-side).

    Args:
      params: pytree of float arrays (device or NumPy).
      spec: QuantSpec or paper bit width; default symmetric int8 per tensor (4x smaller
        than float32).
    Returns:
      :class:`PackedParams` with a CRC32 checksum.
    Raises:
      ValueError: non-float or non-finite leaves, or an invalid spec.
    """
    spec = as_spec(spec)
    _check_float_leaves(params)
    for path, leaf in jax.tree_util.tree_flatten_with_path(params)[0]:
        check_finite(f"params{jax.tree_util.keystr(path)}", leaf)
    qtree = jax.device_get(quantize_tree(params, spec))
    flat, treedef = jax.tree.flatten(qtree, is_leaf=is_qtensor)
    originals = jax.tree.leaves(params)
    payload_parts: list[bytes] = []
    scale_parts: list[bytes] = []
    layouts: list[LeafLayout] = []
    offset = scale_offset = 0
    for q, orig in zip(flat, originals, strict=True):
        orig_dtype = str(np.dtype(orig.dtype))
        if is_qtensor(q):
            codes = np.ascontiguousarray(np.asarray(q.codes))
            is_int = codes.dtype.kind in "iu"
            has_zp = is_int and spec.scheme == "asymmetric"
            scale_shape = tuple(np.shape(q.scale)) if is_int else None
            scale_bytes = b""
            if is_int:
                scale_bytes = np.asarray(q.scale, np.float32).tobytes()
                if has_zp:
                    scale_bytes += np.asarray(q.zero_point).astype(codes.dtype).tobytes()
        else:  # leaf kept in full precision
            codes = np.ascontiguousarray(np.asarray(q))
            has_zp, scale_shape, scale_bytes = False, None, b""
        data = codes.tobytes()
        layouts.append(
            LeafLayout(
                shape=tuple(codes.shape),
                dtype=orig_dtype,
                code_dtype=str(codes.dtype),
                offset=offset,
                nbytes=len(data),
                scale_shape=scale_shape,
                scale_offset=scale_offset,
                has_zero_point=has_zp,
            )
        )
        payload_parts.append(data)
        scale_parts.append(scale_bytes)
        offset += len(data)
        scale_offset += len(scale_bytes)
    payload = b"".join(payload_parts)
    scales = b"".join(scale_parts)
    return PackedParams(payload, scales, _crc(payload, scales), tuple(layouts), treedef, spec)


def packed_nbytes(packed: PackedParams) -> int:
    """Bytes that travel per broadcast: payload plus scales (metadata excluded)."""
    return len(packed.payload) + len(packed.scales)


def params_nbytes(params: PyTree) -> int:
    """Bytes of a parameter pytree as stored (e.g. float32: 4 per weight)."""
    return int(sum(np.dtype(x.dtype).itemsize * int(np.prod(np.shape(x))) for x in
                   jax.tree.leaves(params)))


def broadcast_sizes(
    params: PyTree, specs: dict[str, QuantSpec | int] | None = None
) -> dict[str, dict[str, float]]:
    """Bytes per broadcast of ``params`` under several formats, and the ratio to float32.

    Args:
      params: float pytree (e.g. a policy's params).
      specs: name -> spec; default fp32 / fp16 / symmetric int8 (per tensor and per
        channel) / paper 8-bit.
    Returns:
      ``{name: {"nbytes": packed bytes, "ratio": params_nbytes / nbytes}}``.
    """
    if specs is None:
        specs = {
            "fp32": QuantSpec("fp32"),
            "fp16": QuantSpec("fp16"),
            "int8_symmetric": QuantSpec("symmetric", 8),
            "int8_symmetric_per_channel": QuantSpec("symmetric", 8, per_channel=True),
            "paper_8bit": QuantSpec("paper", 8),
        }
    full = params_nbytes(params)
    out = {}
    for name, spec in specs.items():
        n = packed_nbytes(pack(params, spec))
        out[name] = {"nbytes": n, "ratio": full / n}
    return out


def _dtype(name: str) -> np.dtype:
    return np.dtype(jnp.dtype(name))


def unpack_qtensors(packed: PackedParams) -> PyTree:
    """Verify the checksum and rebuild the tree of QTensors / full-precision NumPy leaves."""
    if not isinstance(packed, PackedParams):
        raise ValueError(f"unpack expects a PackedParams, got {type(packed).__name__}")
    if _crc(packed.payload, packed.scales) != packed.checksum:
        raise ValueError(
            "packed parameters failed their CRC32 checksum (payload or scales corrupted or "
            "truncated); request the broadcast again"
        )
    leaves = []
    for lay in packed.leaves:
        cdt = _dtype(lay.code_dtype)
        count = int(np.prod(lay.shape))
        codes = np.frombuffer(packed.payload, cdt, count, lay.offset).reshape(lay.shape)
        if lay.scale_shape is None:
            if cdt.kind == "f" and cdt != _dtype(lay.dtype):
                ones = np.ones((), np.float32)
                leaves.append(QTensor(codes, ones, np.zeros((), np.int32)))
            else:
                leaves.append(codes)
            continue
        n_scale = int(np.prod(lay.scale_shape))
        scale = np.frombuffer(packed.scales, np.float32, n_scale, lay.scale_offset)
        scale = scale.reshape(lay.scale_shape)
        if lay.has_zero_point:
            zp_off = lay.scale_offset + 4 * n_scale
            zp = np.frombuffer(packed.scales, cdt, n_scale, zp_off).astype(np.int32)
            zp = zp.reshape(lay.scale_shape)
        else:
            zp = np.zeros(lay.scale_shape, np.int32)
        leaves.append(QTensor(codes, scale, zp))
    return jax.tree.unflatten(packed.treedef, leaves)


def unpack(packed: PackedParams, like: PyTree | None = None) -> PyTree:
    """Rebuild the (quantized) float parameters from a broadcast (host-side).

    Args:
      packed: result of :func:`pack`.
      like: optional pytree the result must match (structure and leaf shapes), e.g. the
        actor's current parameters; a mismatch raises ValueError before anything is built.
    Returns:
      A pytree of jax arrays in the original leaf dtypes, equal bit for bit to
      ``fake_quantize(params, packed.spec)``.
    Raises:
      ValueError: checksum mismatch, or ``like`` does not match.
    """
    qtree = unpack_qtensors(packed)
    if like is not None:
        check_same_structure(qtree, like, is_leaf=is_qtensor, names=("packed", "like"))
    dtypes = tuple(lay.dtype for lay in packed.leaves)
    flat = jax.tree.leaves(qtree, is_leaf=is_qtensor)
    return jax.tree.unflatten(packed.treedef, dequantize_leaves(flat, dtypes))
