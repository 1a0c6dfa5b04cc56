"""jaxrl_pim.quant: quantizers, fake quantization (STE), QAT delay, broadcast packing.

Imports nothing from the learners. See ``docs/quantization.md``.

* Formats (:mod:`.formats`): ``Quantizer(quantize, dequantize)``, ``QTensor``;
  ``paper_uniform``, ``symmetric``, ``asymmetric``, ``float_cast``, ``identity``.
* Fake quantization (:mod:`.fake`): ``quantize_dequantize`` (one array, a ``Quantizer``),
  ``fake_quantize`` (a pytree, a ``QuantSpec``), both with ``straight_through=True`` for
  training; ``qat_params``, ``quantize_activations``, ``quantize_tree``, ``dequantize_tree``,
  ``quantization_error``.
* Broadcasts (:mod:`.packing`, host-side): ``pack``, ``unpack``, ``packed_nbytes``,
  ``params_nbytes``, ``broadcast_sizes``.

Helpers the learners and tests use (``as_spec``, ``code_range``, ``is_qtensor``,
``unpack_qtensors``, ...) are reached through their modules.
* Integer kernels (:mod:`.int8`): ``int8_matmul``, ``int8_apply``, ``prepare_int8``,
  ``fake_int8_apply``, ``compare_int8``; optional qwix backend in :mod:`.qwix_backend`
  (import it explicitly; it needs the ``qwix`` package).
* Fast int8 inference (:mod:`.fast_int8`): ``calibrate`` (static activation ranges),
  ``prepare`` (weights once, in the device's layout), ``apply``; reached through the module.
"""

from jaxrl_pim.quant.fake import (
    dequantize_tree,
    fake_quantize,
    qat_params,
    quantization_error,
    quantize_activations,
    quantize_dequantize,
    quantize_tree,
)
from jaxrl_pim.quant.formats import (
    QTensor,
    Quantizer,
    asymmetric,
    float_cast,
    identity,
    paper_uniform,
    symmetric,
)
from jaxrl_pim.quant.int8 import (
    compare_int8,
    fake_int8_apply,
    int8_apply,
    int8_matmul,
    prepare_int8,
)
from jaxrl_pim.quant.packing import (
    broadcast_sizes,
    pack,
    packed_nbytes,
    params_nbytes,
    unpack,
)
from jaxrl_pim.quant.spec import QuantSpec

__all__ = [
    "QTensor",
    "QuantSpec",
    "Quantizer",
    "asymmetric",
    "broadcast_sizes",
    "compare_int8",
    "dequantize_tree",
    "fake_int8_apply",
    "fake_quantize",
    "float_cast",
    "identity",
    "int8_apply",
    "int8_matmul",
    "pack",
    "packed_nbytes",
    "paper_uniform",
    "params_nbytes",
    "prepare_int8",
    "qat_params",
    "quantization_error",
    "quantize_activations",
    "quantize_dequantize",
    "quantize_tree",
    "symmetric",
    "unpack",
]
