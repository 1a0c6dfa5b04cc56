"""Optional qwix backend: int8 post-training quantization of flax linen policies with qwix.

qwix (PyPI ``qwix``, tested with 0.1.8 on jax 0.10.2 / flax 0.12.8) rewrites a linen
module so that its matrix multiplies take int8 weights (quantized once, symmetric absmax
per output channel) and int8 activations (dynamic absmax per row); XLA then runs
``int8 x int8 -> int32`` dot_generals. This module is imported lazily: ``import
jaxrl_pim.quant`` never needs qwix, and these functions raise ImportError with an install
hint when it is missing. The dependency-free equivalent is :mod:`jaxrl_pim.quant.int8`.
"""

from __future__ import annotations

from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from jaxrl_pim.quant.int8 import compare_with_references

PyTree = Any


def _qwix():
    try:
        import qwix
    except ImportError as err:  # pragma: no cover - exercised only without qwix
        raise ImportError(
            "the qwix backend needs the optional package qwix: pip install 'qwix>=0.1.8,<0.2'"
        ) from err
    return qwix


def qwix_ptq_model(module: nn.Module, weight_bits: int = 8, act_bits: int | None = 8) -> nn.Module:
    """Return ``module`` rewritten by qwix for int8 (or int4) weights and activations.

    Args:
      module: a flax linen module (e.g. the policy MLP).
      weight_bits: 8 or 4.
      act_bits: 8, 4 or None (weight-only quantization).
    """
    qwix = _qwix()
    dtypes = {8: jnp.int8, 4: jnp.int4}
    if weight_bits not in dtypes or (act_bits is not None and act_bits not in dtypes):
        raise ValueError(
            f"qwix backend takes weight_bits/act_bits in (8, 4) (act_bits may be None), "
            f"got {weight_bits}/{act_bits}"
        )
    rule = qwix.QuantizationRule(
        module_path=".*",
        weight_qtype=dtypes[weight_bits],
        act_qtype=None if act_bits is None else dtypes[act_bits],
    )
    return qwix.quantize_model(module, qwix.PtqProvider([rule]))


def qwix_quantize_params(
    qmodule: nn.Module, params: PyTree, *example_args: Any
) -> PyTree:
    """Quantize float ``params`` (the ``"params"`` collection) for a :func:`qwix_ptq_model`.

    ``example_args`` are inputs of the right shapes (only their shapes are used).
    Returns ``{"params": quantized}`` ready for ``qmodule.apply``.
    """
    qwix = _qwix()
    abstract = jax.eval_shape(qmodule.init, jax.random.key(0), *example_args)
    return {"params": qwix.quantize_params(params, abstract["params"])}


def qwix_ptq_apply(module: nn.Module, variables: PyTree, x: jax.Array) -> jax.Array:
    """Run ``module`` on ``x`` with qwix int8 weights and activations (convenience wrapper)."""
    qmodule = qwix_ptq_model(module)
    qvars = qwix_quantize_params(qmodule, variables["params"], x)
    return qmodule.apply(qvars, x)


def compare_qwix(module: nn.Module, variables: PyTree, x: jax.Array) -> dict[str, dict]:
    """Compare qwix int8 outputs with the fake-quant int8 path and with fp32.

    Returns ``{"qwix_vs_fake": ..., "qwix_vs_fp32": ..., "fake_vs_fp32": ...}`` (max abs
    difference of outputs and argmax agreement, see
    :func:`jaxrl_pim.quant.int8.compare_with_references`).
    """
    return compare_with_references(module, variables, x, qwix_ptq_apply, "qwix")
