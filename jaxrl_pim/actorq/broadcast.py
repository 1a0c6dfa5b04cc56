"""Policy broadcasts: what precision the actors hold and how the learner's weights get there.

* ``broadcast_spec(precision)``: the toolkit ``QuantSpec`` of a broadcast. ``"int8"`` is the
  symmetric per-tensor 8-bit quantizer (int8 codes + one float32 scale per tensor: 4x fewer
  bytes than float32). The paper's uniform quantizer at 8 bits needs codes in [-256, 256],
  i.e. 16-bit storage, so it would not shrink the broadcast 4x; it stays available for the
  PTQ studies. ``"fp16"`` is a float16 round trip (2x), ``"fp32"`` the identity.
* ``actor_params(params, precision)``: the jittable device-side path used by single-program
  mode; equals ``unpack(pack(params, spec))`` bit for bit (the toolkit's contract, tested).
* ``encode`` / ``decode``: the host-side wire path of multi-process mode. Per broadcast only
  payload + scales + CRC32 travel; the tree layout (``BroadcastMeta``) is sent once when an
  actor starts.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl_pim.quant import (
    PackedParams,
    QuantSpec,
    dequantize_tree,
    fake_quantize,
    pack,
    packed_nbytes,
    params_nbytes,
    unpack_qtensors,
)

_SPECS = {
    "fp32": QuantSpec("fp32"),
    "fp16": QuantSpec("fp16"),
    "int8": QuantSpec("symmetric", 8),
}


def broadcast_spec(precision: str) -> QuantSpec:
    """The QuantSpec of a broadcast precision (fp32, fp16, int8)."""
    if precision not in _SPECS:
        raise ValueError(f"precision must be one of {', '.join(_SPECS)}; got {precision!r}")
    return _SPECS[precision]


def actor_params(params: Any, precision: str) -> Any:
    """The parameters an actor holds after a broadcast (jittable; fp32 is the identity)."""
    if precision == "fp32":
        return params
    return fake_quantize(params, broadcast_spec(precision))


class BroadcastMeta(NamedTuple):
    """The static part of a packed broadcast: leaf layout, tree structure and spec."""

    leaves: tuple
    treedef: Any
    spec: QuantSpec


class Wire(NamedTuple):
    """The bytes that travel per broadcast."""

    payload: bytes
    scales: bytes
    checksum: int

    @property
    def nbytes(self) -> int:
        """Payload plus scales (what ``packed_nbytes`` counts)."""
        return len(self.payload) + len(self.scales)


def encode(params: Any, precision: str) -> tuple[Wire, BroadcastMeta]:
    """Quantize and pack ``params`` on the learner (host-side)."""
    packed = pack(params, broadcast_spec(precision))
    return (
        Wire(packed.payload, packed.scales, packed.checksum),
        BroadcastMeta(packed.leaves, packed.treedef, packed.spec),
    )


def deserialize(wire: Wire, meta: BroadcastMeta) -> Any:
    """Check the CRC32 and rebuild the tree of codes/scales (NumPy views, no copies).

    Raises ValueError when the payload or scales were corrupted or truncated.
    """
    packed = PackedParams(wire.payload, wire.scales, wire.checksum, meta.leaves, meta.treedef,
                          meta.spec)
    return unpack_qtensors(packed)


def _load(qtree: Any) -> Any:
    return jax.tree.map(jnp.asarray, dequantize_tree(qtree))


_load_jit = jax.jit(_load)


def load(qtree: Any) -> Any:
    """Dequantize a deserialized tree into float32 device arrays (the actor's weights).

    One jitted call (compiled once per tree layout): the codes and scales are copied to the
    device and dequantized there, one fused multiply per leaf. fp32 broadcasts arrive as
    NumPy views of the payload and are only copied.
    """
    return _load_jit(qtree)


def decode(wire: Wire, meta: BroadcastMeta) -> Any:
    """``load(deserialize(wire, meta))``."""
    return load(deserialize(wire, meta))


def broadcast_sizes(params: Any) -> dict[str, int]:
    """Bytes per broadcast of ``params`` for every precision (payload + scales)."""
    out = {"params": int(sum(np.size(x) for x in _leaves(params)))}
    out["fp32_unpacked"] = params_nbytes(params)
    for name, spec in _SPECS.items():
        out[name] = packed_nbytes(pack(params, spec))
    return out


def _leaves(tree: Any) -> list:
    return jax.tree.leaves(tree)
