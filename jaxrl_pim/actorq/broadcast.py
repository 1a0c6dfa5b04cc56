"""Policy broadcasts: what precision the actors hold and how the learner's weights get there.

* ``broadcast_spec(precision)``: the toolkit ``QuantSpec`` of a broadcast. ``"int8"`` is the
  symmetric per-tensor 8-bit quantizer (int8 codes + one float32 scale per tensor: 4x fewer
  bytes than float32). The paper's uniform quantizer at 8 bits needs codes in [-256, 256],
  i.e. 16-bit storage, so it would not shrink the broadcast 4x; it stays available for the
  PTQ studies. ``"fp16"`` is a float16 round trip (2x), ``"fp32"`` the identity.
* ``actor_params(params, precision, compute)``: the jittable device-side path used by
  single-program mode: the parameters an actor holds after a broadcast. With
  ``compute="native"`` (the default) int8 actors keep their kernels as int8 codes + scale and
  run real int8 matmuls, fp16 actors keep float16 kernels and run half matmuls
  (:mod:`jaxrl_pim.quant.compute`); ``compute="emulated"`` keeps the int8 codes for the fast
  int8 path with float32 products; ``compute="float32"`` dequantizes everything (the
  *dequantized policy*, float32 arithmetic).
* ``resolve_compute(compute, precision, rows, width)``: ``"auto"`` made concrete for the device
  (``actors_compute(config, rows)``: the same for a config's actors)
  (:func:`jaxrl_pim.quant.compute.fastest_compute`); ``int8_products(precision, compute)``:
  how an actor on the fast int8 path multiplies (None: not on it);
  ``fast_int8_params(fn, held, obs, products)``: an int8 actor's parameters prepared for the
  fast int8 path (:mod:`jaxrl_pim.quant.fast_int8`: static activation scales calibrated on
  ``obs``), which the actors run.
* ``encode`` / ``decode``: the host-side wire path of the distributed deployments. Per
  broadcast only payload + scales + CRC32 travel; the tree layout (``BroadcastMeta``) is sent
  once when an actor starts. ``decode(*encode(p, precision), compute)`` equals
  ``actor_params(p, precision, compute)`` bit for bit (tested).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import numpy as np

from jaxrl_pim.actorq.config import ActorQConfig
from jaxrl_pim.quant import QuantSpec, fast_int8, pack, packed_nbytes, params_nbytes, quantize_tree
from jaxrl_pim.quant.compute import COMPUTES, actor_tree, dequantized, fastest_compute
from jaxrl_pim.quant.packing import PackedParams, unpack_qtensors

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


def actor_params(params: Any, precision: str, compute: str = "native") -> Any:
    """The parameters an actor holds after a broadcast (jittable; fp32 is the identity).

    ``compute="native"``: int8 kernels as int8 :class:`~jaxrl_pim.quant.QTensor` (codes +
    per-tensor scale), fp16 kernels as float16, other leaves float32; ``"float32"``: every
    leaf dequantized (equal to ``fake_quantize(params, broadcast_spec(precision))``).
    """
    if compute not in COMPUTES:
        raise ValueError(f"compute must be one of {', '.join(COMPUTES)}; got {compute!r}")
    if precision == "fp32":
        return params
    return actor_tree(quantize_tree(params, broadcast_spec(precision)), compute)


def resolve_compute(compute: str, precision: str, rows: int, width: int | None = None) -> str:
    """``compute`` with ``"auto"`` replaced by the fastest arithmetic for ``precision`` on the
    default backend at ``rows`` rows per policy call through hidden layers at least ``width``
    wide (:func:`~jaxrl_pim.quant.compute.fastest_compute`)."""
    if compute == "auto":
        return fastest_compute(precision, rows, width=width)
    if compute not in COMPUTES:
        raise ValueError(f"compute must be auto or one of {', '.join(COMPUTES)}; got {compute!r}")
    return compute


def actors_compute(config: ActorQConfig, rows: int) -> str:
    """The arithmetic of ``config``'s actors evaluating ``rows`` rows per call:
    :func:`resolve_compute` of its ``actor_compute`` and ``precision`` through its policy's
    narrowest hidden layer."""
    return resolve_compute(config.actor_compute, config.precision, rows, min(config.hidden))


def int8_products(precision: str, compute: str) -> str | None:
    """How an actor of ``precision`` computing in ``compute`` (concrete, not ``"auto"``)
    multiplies on the fast int8 path: ``"int32"`` (``"native"``), ``"float32"``
    (``"emulated"``), or None when it does not run that path (fp32 / fp16 actors, or
    ``"float32"``: the dequantized policy)."""
    if precision != "int8":
        return None
    return {"native": "int32", "emulated": "float32"}.get(compute)


def fast_int8_params(fn: Any, held: Any, obs: jax.Array,
                     products: str = "int32") -> fast_int8.Prepared:
    """An int8 actor's :func:`actor_params` (``compute="native"`` or ``"emulated"``) prepared
    for the fast int8 path (jittable).

    Args:
      fn: ``fn(params, obs)`` running the policy (an agent's ``greedy``): its ``nn.Dense``
        inputs on the dequantized policy give the static activation scales.
      held: ``actor_params(params, "int8", "native")``.
      obs: calibration observations ``(B, obs_dim)`` (states the actors visit).
      products: ``"int32"`` or ``"float32"`` (:func:`int8_products`).
    Returns:
      A :class:`~jaxrl_pim.quant.fast_int8.Prepared` policy (``policy_apply`` runs it); the
      kernels keep the broadcast's int8 codes and scales.
    """
    ranges = fast_int8.calibrate(fn, dequantized(held), obs)
    return fast_int8.prepare(held, ranges, **fast_int8.default_options(products=products))


class BroadcastMeta(NamedTuple):
    """The static part of a packed broadcast: leaf layout, tree structure and spec."""

    leaves: tuple
    treedef: Any
    spec: QuantSpec


class Wire(NamedTuple):
    """The bytes that travel per broadcast (``bytes`` or any buffer, e.g. a read-only NumPy
    ``uint8`` view of an object in Ray's object store)."""

    payload: Any
    scales: Any
    checksum: int

    @property
    def nbytes(self) -> int:
        """Payload plus scales (what ``packed_nbytes`` counts)."""
        return memoryview(self.payload).nbytes + memoryview(self.scales).nbytes


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


_load_jit = jax.jit(actor_tree, static_argnums=1)


def load(qtree: Any, compute: str = "native") -> Any:
    """A deserialized tree as the actor's device arrays (:func:`actor_params`'s layout).

    One jitted call (compiled once per tree layout): the codes and scales are copied to the
    device; int8 / float16 kernels stay as they are with ``compute="native"``, everything
    else is dequantized there (one fused multiply per leaf). fp32 broadcasts arrive as NumPy
    views of the payload and are only copied.
    """
    if compute not in COMPUTES:
        raise ValueError(f"compute must be one of {', '.join(COMPUTES)}; got {compute!r}")
    return _load_jit(qtree, compute)


def decode(wire: Wire, meta: BroadcastMeta, compute: str = "native") -> Any:
    """``load(deserialize(wire, meta), compute)``."""
    return load(deserialize(wire, meta), compute)


def broadcast_sizes(params: Any) -> dict[str, int]:
    """Bytes per broadcast of ``params`` for every precision (payload + scales)."""
    out = {"params": int(sum(np.size(x) for x in _leaves(params)))}
    out["fp32_unpacked"] = params_nbytes(params)
    for name, spec in _SPECS.items():
        out[name] = packed_nbytes(pack(params, spec))
    return out


def _leaves(tree: Any) -> list:
    return jax.tree.leaves(tree)
