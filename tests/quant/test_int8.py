"""int8 x int8 -> int32 matmul path (lax.dot_general) and the optional qwix backend."""

from __future__ import annotations

import functools

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl_pim import quant as Q
from jaxrl_pim.quant import int8 as I


class Policy(nn.Module):
    """A small discrete-action MLP policy head (logits)."""

    @nn.compact
    def __call__(self, x):
        x = nn.tanh(nn.Dense(32)(x))
        x = nn.relu(nn.Dense(32)(x))
        return nn.Dense(4)(x)


@pytest.fixture(scope="module")
def policy():
    module = Policy()
    x = jax.random.normal(jax.random.key(0), (64, 6))
    variables = module.init(jax.random.key(1), x)
    return module, variables, x


def np_int8_matmul(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Independent NumPy reference: per-row / per-column absmax int8 codes, int64 product."""
    sx = np.abs(x).max(axis=1, keepdims=True) * (np.float32(1) / np.float32(127))
    sw = np.abs(w).max(axis=0, keepdims=True) * (np.float32(1) / np.float32(127))
    qx = np.clip(np.rint(x / sx), -127, 127).astype(np.int64)
    qw = np.clip(np.rint(w / sw), -127, 127).astype(np.int64)
    return (qx @ qw).astype(np.float32) * sx * sw


def test_int8_matmul_matches_numpy_integer_reference():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(16, 40)).astype(np.float32)
    w = (rng.normal(size=(40, 8)) * rng.uniform(0.1, 3, size=(1, 8))).astype(np.float32)
    got = np.asarray(I.int8_matmul(jnp.asarray(x), jnp.asarray(w)))
    np.testing.assert_allclose(got, np_int8_matmul(x, w), rtol=1e-6, atol=1e-6)
    # and it approximates the float product within the int8 rounding error
    assert np.abs(got - x @ w).max() < 0.05 * np.abs(x @ w).max()
    # codes are int8 and the accumulator int32 in the compiled program
    hlo = jax.jit(I.int8_matmul).lower(jnp.asarray(x), jnp.asarray(w)).as_text()
    assert "tensor<16x40xi8>, tensor<40x8xi8>) -> tensor<16x8xi32>" in hlo


def test_int8_apply_equals_fake_quant_path(policy):
    module, variables, x = policy
    # one layer: same codes and scales, integer vs float product -> equal up to f32 rounding
    kernel = variables["params"]["Dense_0"]["kernel"]
    real = I.int8_matmul(x, kernel)
    fake = I.fake_int8_matmul(x, kernel)
    assert float(jnp.abs(real - fake).max()) < 1e-5 * float(jnp.abs(fake).max())
    # whole policy: a float32 rounding difference can move a later activation across a
    # rounding boundary (one code), so the paths agree closely but not bit for bit
    report = I.compare_int8(module, variables, x)
    scale = report["int8_vs_fp32"]["max_abs_output"]
    assert report["int8_vs_fake"]["max_abs_diff"] < 0.01 * scale
    assert 0 < report["int8_vs_fp32"]["max_abs_diff"] < 0.05 * scale
    assert report["int8_vs_fake"]["argmax_agreement"] >= 0.95
    assert report["int8_vs_fp32"]["argmax_agreement"] >= 0.9


def test_prepared_kernels_jit_and_row_independence(policy):
    module, variables, x = policy
    prepared = {"params": I.prepare_int8(variables["params"])}
    kernel = prepared["params"]["Dense_1"]["kernel"]
    assert isinstance(kernel, Q.QTensor) and kernel.codes.dtype == jnp.int8
    assert kernel.scale.shape == (1, 32)
    apply = jax.jit(functools.partial(I.int8_apply, module))
    batched = apply(prepared, x)
    np.testing.assert_array_equal(batched, I.int8_apply(module, variables, x))
    # per-row activation scales: a sample's output does not depend on the rest of the batch
    np.testing.assert_allclose(apply(prepared, x[5:6])[0], batched[5], rtol=1e-6, atol=1e-7)
    with pytest.raises(ValueError, match="2-D"):
        I.quantize_kernel(jnp.ones((2, 2, 2)))


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_qwix_backend(policy):
    pytest.importorskip("qwix")
    from jaxrl_pim.quant import qwix_backend as QB

    module, variables, x = policy
    report = QB.compare_qwix(module, variables, x)
    scale = report["qwix_vs_fp32"]["max_abs_output"]
    fake_err = I.compare_int8(module, variables, x)["fake_vs_fp32"]["max_abs_diff"]
    # qwix uses absmax / 127.5 scales (ours / 127), so it is an independent int8 rounding
    # of the same policy: its error is of the same order as the fake-quant error
    assert 0 < report["qwix_vs_fp32"]["max_abs_diff"] < 0.05 * scale
    assert report["qwix_vs_fake"]["max_abs_diff"] < 4 * fake_err + 1e-6
    assert report["qwix_vs_fp32"]["argmax_agreement"] >= 0.9
    qmodule = QB.qwix_ptq_model(module)
    qvars = QB.qwix_quantize_params(qmodule, variables["params"], x)
    hlo = jax.jit(qmodule.apply).lower(qvars, x).as_text()
    assert "xi8>) -> tensor<64x32xi32>" in hlo
    with pytest.raises(ValueError, match="weight_bits"):
        QB.qwix_ptq_model(module, weight_bits=6)
