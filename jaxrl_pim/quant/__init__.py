"""jaxrl_pim.quant: quantizers, fake quantization (STE), QAT delay, broadcast packing.

Imports nothing from the learners. See ``docs/quantization.md``.

* Formats (:mod:`.formats`): ``Quantizer(quantize, dequantize)``, ``QTensor``;
  ``paper_uniform``, ``symmetric``, ``asymmetric``, ``float_cast``, ``identity``.
* Fake quantization (:mod:`.fake`): ``quantize_dequantize`` (one array, a ``Quantizer``),
  ``fake_quantize`` (a pytree, a ``QuantSpec``), both with ``straight_through=True`` for
  training; ``qat_params``, ``quantize_activations``, ``quantize_tree``, ``dequantize_tree``.
  (``fake_quant_ste`` / ``fake_quantize_ste`` are deprecated names.)
* Broadcasts (:mod:`.packing`, host-side): ``pack``, ``unpack``, ``packed_nbytes``.
* Integer kernels (:mod:`.int8`): ``int8_matmul``, ``int8_apply``, ``prepare_int8``,
  ``fake_int8_apply``, ``compare_int8``; optional qwix backend in :mod:`.qwix_backend`
  (import it explicitly; it needs the ``qwix`` package).
"""

from jaxrl_pim.quant.fake import (
    check_same_structure,
    dequantize_qtensor,
    dequantize_tree,
    fake_quant_ste,
    fake_quantize,
    fake_quantize_ste,
    is_qtensor,
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
    check_bits,
    code_dtype,
    code_range,
    float_cast,
    identity,
    paper_uniform,
    symmetric,
)
from jaxrl_pim.quant.int8 import (
    compare_int8,
    compare_outputs,
    fake_int8_apply,
    int8_apply,
    int8_matmul,
    prepare_int8,
    quantize_kernel,
)
from jaxrl_pim.quant.packing import (
    LeafLayout,
    PackedParams,
    broadcast_sizes,
    pack,
    packed_nbytes,
    params_nbytes,
    unpack,
    unpack_qtensors,
)
from jaxrl_pim.quant.spec import SCHEMES, QuantSpec, as_spec

__all__ = [
    "SCHEMES",
    "LeafLayout",
    "PackedParams",
    "QTensor",
    "QuantSpec",
    "Quantizer",
    "as_spec",
    "asymmetric",
    "check_bits",
    "check_same_structure",
    "compare_int8",
    "compare_outputs",
    "code_dtype",
    "code_range",
    "dequantize_qtensor",
    "dequantize_tree",
    "fake_int8_apply",
    "fake_quant_ste",
    "fake_quantize",
    "fake_quantize_ste",
    "float_cast",
    "identity",
    "int8_apply",
    "int8_matmul",
    "is_qtensor",
    "pack",
    "broadcast_sizes",
    "packed_nbytes",
    "paper_uniform",
    "params_nbytes",
    "prepare_int8",
    "qat_params",
    "quantization_error",
    "quantize_activations",
    "quantize_dequantize",
    "quantize_kernel",
    "quantize_tree",
    "symmetric",
    "unpack",
    "unpack_qtensors",
]
