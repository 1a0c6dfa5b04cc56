"""QuantSpec: how to quantize a whole parameter pytree (scheme, bits, granularity, biases)."""

from __future__ import annotations

import dataclasses
from typing import Any

import jax.numpy as jnp
import numpy as np

from jaxrl_pim.checks import check_choice, check_int
from jaxrl_pim.quant import formats
from jaxrl_pim.quant.formats import Quantizer

INT_SCHEMES = ("paper", "symmetric", "asymmetric")
FLOAT_SCHEMES = {"fp16": jnp.float16, "bf16": jnp.bfloat16, "fp32": jnp.float32}
SCHEMES = INT_SCHEMES + tuple(FLOAT_SCHEMES)
PER_CHANNEL_CHOICES = (False, True, "conv")


@dataclasses.dataclass(frozen=True)
class QuantSpec:
    """How to quantize every float leaf of a pytree.

    Attributes:
      scheme: ``"paper"`` (QuaRL uniform quantizer), ``"symmetric"``, ``"asymmetric"``,
        ``"fp16"``, ``"bf16"`` or ``"fp32"`` (identity).
      bits: bit width; integer schemes 2..16 (default 8), the paper scheme also 16 (float16
        round trip) and >= 32 (identity). Float schemes take None or their own width (16/32).
      per_channel: False = one scale per tensor; True = one scale per output channel
        (``channel_axis``) for every leaf with ndim >= 2; ``"conv"`` = per channel only for
        leaves with ndim >= 3 (convolution kernels), per tensor for dense kernels -- the
        paper's code.
      include_biases: if False, leaves with ndim <= 1 (biases, norm scales) stay in full
        precision.
      channel_axis: the output-channel axis of kernels (-1 for flax Dense and Conv).
    """

    scheme: str = "paper"
    bits: int | None = None
    per_channel: bool | str = False
    include_biases: bool = True
    channel_axis: int = -1

    def __post_init__(self) -> None:
        check_choice("scheme", self.scheme, SCHEMES)
        if self.scheme in FLOAT_SCHEMES:
            width = 32 if self.scheme == "fp32" else 16
            if self.bits is None:
                object.__setattr__(self, "bits", width)
            elif self.bits != width:
                raise ValueError(
                    f"bits must be {width} (or None) for scheme {self.scheme!r}, got {self.bits!r}"
                )
        else:
            bits = 8 if self.bits is None else self.bits
            object.__setattr__(
                self, "bits", formats.check_bits(bits, paper=self.scheme == "paper")
            )
        pc = self.per_channel
        if not (pc is True or pc is False or (isinstance(pc, str) and pc == "conv")):
            raise ValueError(f"per_channel must be False, True or 'conv', got {self.per_channel!r}")
        if not isinstance(self.include_biases, bool):
            raise ValueError(f"include_biases must be a bool, got {self.include_biases!r}")
        check_int("channel_axis", self.channel_axis)

    @property
    def label(self) -> str:
        """Short name for tables and reports, e.g. ``paper8``, ``symmetric8-pc``, ``fp16``."""
        if self.scheme in FLOAT_SCHEMES:
            name = self.scheme
        else:
            name = f"{self.scheme}{self.bits}"
            if self.per_channel is True:
                name += "-pc"
            elif self.per_channel == "conv":
                name += "-pcconv"
        return name if self.include_biases else name + "-nobias"

    @property
    def is_float(self) -> bool:
        """True when the format is a float cast (fp16/bf16/fp32 or paper 16 / >= 32 bits)."""
        return self.scheme in FLOAT_SCHEMES or (
            self.scheme == "paper" and self.bits >= formats.MAX_INT_BITS
        )

    def float_dtype(self) -> np.dtype:
        """The cast dtype of a float format (raises for integer formats)."""
        if self.scheme in FLOAT_SCHEMES:
            return np.dtype(FLOAT_SCHEMES[self.scheme])
        if self.scheme == "paper" and self.bits == formats.MAX_INT_BITS:
            return np.dtype(jnp.float16)
        if self.scheme == "paper" and self.bits >= formats.PAPER_IDENTITY_BITS:
            return np.dtype(np.float32)
        raise ValueError(f"{self} is an integer format")

    def payload_dtype(self) -> np.dtype:
        """dtype of the stored codes: narrowest integer type (integer formats) or the cast."""
        if self.is_float:
            return self.float_dtype()
        return formats.code_dtype(self.scheme, self.bits)

    def quantizes(self, ndim: int) -> bool:
        """Whether a leaf of this rank is quantized (False for biases when excluded)."""
        return self.include_biases or ndim >= 2

    def axis_for(self, ndim: int) -> int | None:
        """Channel axis used for a leaf of rank ``ndim`` (None = per tensor)."""
        if self.per_channel is True and ndim >= 2:
            return self.channel_axis
        if self.per_channel == "conv" and ndim >= 3:
            return self.channel_axis
        return None

    def quantizer(self, ndim: int) -> Quantizer:
        """The :class:`Quantizer` for one leaf of rank ``ndim``."""
        if self.is_float:
            return formats.float_cast(self.float_dtype())
        axis = self.axis_for(ndim)
        if self.scheme == "paper":
            return formats.paper_uniform(self.bits, axis)
        if self.scheme == "symmetric":
            return formats.symmetric(self.bits, axis)
        return formats.asymmetric(self.bits, axis)


def as_spec(spec: Any) -> QuantSpec:
    """Accept a QuantSpec or a bit width (meaning ``QuantSpec("paper", bits)``)."""
    if isinstance(spec, QuantSpec):
        return spec
    if isinstance(spec, int | np.integer) and not isinstance(spec, bool):
        return QuantSpec("paper", int(spec))
    raise ValueError(f"spec must be a QuantSpec or a bit width (int), got {spec!r}")
