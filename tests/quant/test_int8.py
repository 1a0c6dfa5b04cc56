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


@pytest.mark.default_compilation  # jit equals eager bit for bit at the default level
@pytest.mark.default_emitters
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
    assert report["fake_vs_fp32"]["max_abs_diff"] == fake_err  # the same reference pair
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


# ----------------------------------------------- quant.compute: actors in their own precision


def _np_layers(variables):
    p = variables["params"]
    names = sorted(p, key=lambda n: int(n.rsplit("_", 1)[1]))
    return ([np.asarray(p[n]["kernel"], np.float64) for n in names],
            [np.asarray(p[n]["bias"], np.float64) for n in names])


def test_policy_apply_dispatches_on_kernel_precision(policy):
    from jaxrl_pim.quant import compute as C

    module, variables, x = policy
    # float32 leaves only: exactly module.apply
    np.testing.assert_array_equal(C.policy_apply(module, variables, x),
                                  module.apply(variables, x))
    for spec, dtype in ((Q.QuantSpec("symmetric", 8), jnp.int8), (Q.QuantSpec("fp16"),
                                                                  jnp.float16)):
        qtree = Q.quantize_tree(variables, spec)
        native = C.actor_tree(qtree, "native")
        flat = C.actor_tree(qtree, "float32")
        # kernels keep their low precision, biases are dequantized; float32 = fake quant
        k = native["params"]["Dense_1"]["kernel"]
        assert (k.codes if isinstance(k, Q.QTensor) else k).dtype == dtype
        assert native["params"]["Dense_1"]["bias"].dtype == jnp.float32
        assert C.has_lowp_kernels(native) and not C.has_lowp_kernels(flat)
        fake = Q.fake_quantize(variables, spec)
        for a, b in zip(jax.tree.leaves(flat), jax.tree.leaves(fake), strict=True):
            np.testing.assert_array_equal(a, b)
        for a, b in zip(jax.tree.leaves(C.dequantized(native)), jax.tree.leaves(fake),
                        strict=True):
            np.testing.assert_array_equal(a, b)
        run = jax.jit(functools.partial(C.policy_apply, module))
        hlo = run.lower(native, x).as_text()
        if dtype == jnp.int8:
            assert hlo.count("xi8>) -> tensor<64x") == 3  # three int8 x int8 -> int32 dots
            # per layer: the int8 kernel's own matmul (NumPy reference above)
            h = x
            for name in ("Dense_0", "Dense_1", "Dense_2"):
                qk = native["params"][name]["kernel"]
                got = I.int8_matmul(h, qk)
                w = np.asarray(qk.codes, np.float32) * np.asarray(qk.scale, np.float32)
                sx = np.abs(np.asarray(h)).max(1, keepdims=True) * (np.float32(1) / 127)
                qx = np.clip(np.rint(np.asarray(h) / sx), -127, 127).astype(np.int64)
                ref = (qx @ np.asarray(qk.codes, np.int64)).astype(np.float32) * sx * \
                    np.float32(qk.scale)
                np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-6)
                assert np.abs(np.asarray(got) - np.asarray(h) @ w).max() < 0.05 * np.abs(
                    np.asarray(h) @ w).max()
                b = native["params"][name]["bias"]
                h = got + b
                h = jnp.tanh(h) if name == "Dense_0" else jax.nn.relu(h)
        else:
            assert "f16>) -> tensor<64x" in hlo  # half operands, float32 results
            ref = module.apply(C.dequantized(native), x)
            assert float(jnp.abs(run(native, x) - ref).max()) < 1e-2 * float(jnp.abs(ref).max())
    with pytest.raises(ValueError, match="compute"):
        C.actor_tree(Q.quantize_tree(variables, 8), "int4")


def test_int8_error_bound_holds_for_tanh_and_relu_layers(policy):
    from jaxrl_pim.quant import compute as C

    module, variables, _ = policy
    x = 3.0 * jax.random.normal(jax.random.key(7), (512, 6))
    native = C.actor_tree(Q.quantize_tree(variables, Q.QuantSpec("symmetric", 8)), "native")
    deq = C.dequantized(native)
    y8 = np.asarray(C.policy_apply(module, native, x), np.float64)
    y32 = np.asarray(module.apply(deq, x), np.float64)
    kernels, biases = _np_layers(deq)
    acts, h = [], np.asarray(x, np.float64)
    for i, (w, b) in enumerate(zip(kernels, biases, strict=True)):
        acts.append(h)
        h = h @ w + b
        h = np.tanh(h) if i == 0 else np.maximum(h, 0)
    bound = C.int8_error_bound(kernels, acts)
    diff = np.abs(y8 - y32)
    assert bound.shape == y8.shape and np.all(diff <= bound) and diff.max() > 0
    # one layer: the worst case is attained when every input's rounding error has the sign
    # of its weight: x = s (c - 0.49 sign(w)), integer codes c, max |x| = 127 s
    dense = nn.Dense(4)
    v1 = C.actor_tree(Q.quantize_tree(dense.init(jax.random.key(3), jnp.ones((1, 32))),
                                      Q.QuantSpec("symmetric", 8)), "native")
    w = np.asarray(C.dequantized(v1)["params"]["kernel"], np.float64)
    c = np.random.default_rng(0).integers(-100, 100, 32).astype(np.float64)
    x1 = (c - 0.49 * np.sign(w[:, 0])) * 0.01
    x1[0] = 1.27  # max |x| = 127 s with s = 0.01
    d1 = np.abs(np.asarray(C.policy_apply(dense, v1, x1[None].astype(np.float32)))
                - x1[None].astype(np.float32) @ w)[0, 0]
    b1 = C.int8_error_bound([w], [x1[None]])[0, 0]
    assert 0.9 * b1 < d1 <= b1
    rms = C.int8_error_rms(kernels, acts)
    assert 0.2 * rms < np.sqrt(np.mean(diff**2)) < 1.5 * rms
    with pytest.raises(ValueError, match="one activation per kernel"):
        C.int8_error_bound(kernels, acts[:2])
