"""Pytree fake quantization, straight-through gradients, QAT delay, QuantSpec validation."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl_pim import quant as Q
from jaxrl_pim.quant.fake import is_qtensor
from jaxrl_pim.quant.spec import as_spec


def make_params():
    k = jax.random.split(jax.random.key(0), 3)
    return {
        "dense": {"kernel": jax.random.normal(k[0], (6, 4)), "bias": jnp.linspace(-1, 1, 4)},
        "conv": {"kernel": jax.random.normal(k[1], (3, 3, 2, 5))},
        "head": jax.random.normal(k[2], (4, 2)).astype(jnp.bfloat16),
    }


def leaf_qdq(x, quantizer):
    x32 = jnp.asarray(x, jnp.float32)
    return quantizer.dequantize(quantizer.quantize(x32)).astype(x.dtype)


@pytest.mark.parametrize(
    "spec",
    [8, Q.QuantSpec("asymmetric", 6, per_channel=True), Q.QuantSpec("bf16")],
)
def test_fake_quantize_applies_leaf_quantizer(spec):
    params = make_params()
    out = Q.fake_quantize(params, spec)
    spec = as_spec(spec)
    for got, x in zip(jax.tree.leaves(out), jax.tree.leaves(params), strict=True):
        assert got.dtype == x.dtype and got.shape == x.shape
        np.testing.assert_array_equal(got, leaf_qdq(x, spec.quantizer(x.ndim)))


def test_int_spec_means_paper_and_per_channel_choices():
    assert as_spec(6) == Q.QuantSpec("paper", 6)
    params = make_params()
    conv = params["conv"]["kernel"]
    dense = params["dense"]["kernel"]
    out = Q.fake_quantize(params, Q.QuantSpec("paper", 4, per_channel="conv"))
    np.testing.assert_array_equal(out["conv"]["kernel"], leaf_qdq(conv, Q.paper_uniform(4, -1)))
    np.testing.assert_array_equal(out["dense"]["kernel"], leaf_qdq(dense, Q.paper_uniform(4)))
    out = Q.fake_quantize(params, Q.QuantSpec("paper", 4, per_channel=True))
    np.testing.assert_array_equal(out["dense"]["kernel"], leaf_qdq(dense, Q.paper_uniform(4, -1)))
    # per-channel differs from per-tensor on this data
    assert not np.array_equal(leaf_qdq(dense, Q.paper_uniform(4, -1)),
                              leaf_qdq(dense, Q.paper_uniform(4)))


def test_include_biases_false_keeps_biases():
    params = make_params()
    out = Q.fake_quantize(params, Q.QuantSpec("symmetric", 2, include_biases=False))
    np.testing.assert_array_equal(out["dense"]["bias"], params["dense"]["bias"])
    assert not np.array_equal(out["dense"]["kernel"], params["dense"]["kernel"])
    out = Q.fake_quantize(params, Q.QuantSpec("symmetric", 2))
    assert not np.array_equal(out["dense"]["bias"], params["dense"]["bias"])


def test_fake_quantize_is_jittable_and_matches_eager():
    params = make_params()
    spec = Q.QuantSpec("asymmetric", 5, per_channel=True)
    jitted = jax.jit(Q.fake_quantize, static_argnums=1)(params, spec)
    jax.tree.map(np.testing.assert_array_equal, jitted, Q.fake_quantize(params, spec))


@pytest.mark.parametrize(
    "quantizer", [Q.paper_uniform(3), Q.symmetric(4, 0), Q.asymmetric(2), Q.float_cast("bf16")]
)
def test_ste_forward_is_exact_and_gradient_is_identity(quantizer):
    x = jax.random.normal(jax.random.key(1), (5, 3))

    def ste(v):
        return Q.quantize_dequantize(v, quantizer, straight_through=True)

    np.testing.assert_array_equal(ste(x), leaf_qdq(x, quantizer))
    np.testing.assert_array_equal(Q.quantize_dequantize(x, quantizer), leaf_qdq(x, quantizer))
    g = jax.grad(lambda v: jnp.sum(ste(v)))(x)
    np.testing.assert_array_equal(g, jnp.ones_like(x))
    w = jnp.arange(15.0).reshape(5, 3)
    g = jax.grad(lambda v: jnp.sum(w * ste(v)))(x)
    np.testing.assert_array_equal(g, w)


def test_pytree_straight_through_matches_per_array():
    params = {"w": jax.random.normal(jax.random.key(2), (4, 3)), "b": jnp.array([0.1, -0.4])}
    spec = Q.QuantSpec("paper", 3)
    ste = Q.fake_quantize(params, spec, straight_through=True)
    jax.tree.map(np.testing.assert_array_equal, ste, Q.fake_quantize(params, spec))
    g = jax.grad(lambda p: jnp.sum(Q.fake_quantize(p, spec, straight_through=True)["w"]))(params)
    np.testing.assert_array_equal(g["w"], jnp.ones((4, 3)))
    one = Q.quantize_dequantize(params["w"], Q.paper_uniform(3), straight_through=True)
    np.testing.assert_array_equal(one, ste["w"])


def test_fake_quantize_without_ste_blocks_nothing_but_rounds():
    # reference for the STE: the plain (rounding) path has zero gradient almost everywhere
    x = jnp.array([0.3, -0.7, 0.9])
    g = jax.grad(lambda v: jnp.sum(Q.fake_quantize({"w": v}, Q.QuantSpec("symmetric", 8))["w"]))
    # gradient of d * rint(x / d) w.r.t. x is nonzero only through d (the absmax element)
    assert float(jnp.abs(g(x)[:2]).max()) == 0.0


def test_qat_params_switches_at_delay_with_traced_step():
    params = make_params()
    spec = Q.QuantSpec("paper", 4)
    fq = Q.fake_quantize(params, spec)
    f = jax.jit(lambda p, s: Q.qat_params(p, spec, s, 5))
    for step, expect in [(0, params), (4, params), (5, fq), (100, fq)]:
        got = f(params, jnp.int32(step))
        jax.tree.map(np.testing.assert_array_equal, got, expect)
    steps = jnp.arange(8)
    batched = jax.vmap(lambda s: Q.qat_params(params, spec, s, 5))(steps)["dense"]["kernel"]
    for s in range(8):
        ref = (fq if s >= 5 else params)["dense"]["kernel"]
        np.testing.assert_array_equal(batched[s], ref)


def test_qat_gradient_is_straight_through():
    # loss = sum(qat(w)^2): gradient 2 w before the delay, 2 Q(w) after (dQ/dW = 1)
    w = {"k": jax.random.normal(jax.random.key(2), (4, 3))}
    spec = Q.QuantSpec("symmetric", 3)

    def loss(p, step):
        return jnp.sum(Q.qat_params(p, spec, step, 10)["k"] ** 2)

    g_before = jax.jit(jax.grad(loss))(w, jnp.int32(9))["k"]
    g_after = jax.jit(jax.grad(loss))(w, jnp.int32(10))["k"]
    np.testing.assert_allclose(g_before, 2 * w["k"], rtol=1e-6)
    np.testing.assert_allclose(g_after, 2 * Q.fake_quantize(w, spec)["k"], rtol=1e-6)
    assert not np.allclose(g_before, g_after)


def test_qat_rejects_bad_delay_and_step():
    params = make_params()
    with pytest.raises(ValueError, match="delay"):
        Q.qat_params(params, 8, 0, -1)
    with pytest.raises(ValueError, match="delay"):
        Q.qat_params(params, 8, 0, 2.5)
    with pytest.raises(ValueError, match="step"):
        Q.qat_params(params, 8, 1.0, 3)


def test_quantize_activations_per_tensor_per_feature_and_per_row():
    x = jax.random.normal(jax.random.key(3), (6, 5)) * jnp.arange(1.0, 6.0)
    np.testing.assert_array_equal(Q.quantize_activations(x, 8), leaf_qdq(x, Q.paper_uniform(8)))
    per_feat = Q.quantize_activations(x, Q.QuantSpec("symmetric", 4, per_channel=True))
    np.testing.assert_array_equal(per_feat, leaf_qdq(x, Q.symmetric(4, -1)))
    spec = Q.QuantSpec("symmetric", 4)
    per_row = jax.vmap(lambda r: Q.quantize_activations(r, spec))(x)
    # a row's result does not depend on the other rows
    np.testing.assert_array_equal(per_row[2], Q.quantize_activations(x[2], spec))
    g = jax.grad(lambda v: jnp.sum(Q.quantize_activations(v, spec)))(x)
    np.testing.assert_array_equal(g, jnp.ones_like(x))
    with pytest.raises(ValueError, match="float"):
        Q.quantize_activations(jnp.arange(3), 8)


def test_quantize_tree_payload_dtypes_and_dequantize_tree():
    params = make_params()
    for spec, dtype in [(Q.QuantSpec("symmetric", 8), np.int8), (Q.QuantSpec("asymmetric", 8),
                        np.uint8), (Q.QuantSpec("paper", 8), np.int16),
                        (Q.QuantSpec("paper", 6), np.int8), (Q.QuantSpec("fp16"), np.float16)]:
        qtree = Q.quantize_tree(params, spec)
        for q in jax.tree.leaves(qtree, is_leaf=is_qtensor):
            assert q.codes.dtype == dtype
        back = Q.dequantize_tree(qtree, like=params)
        jax.tree.map(np.testing.assert_array_equal, back, Q.fake_quantize(params, spec))


def test_errors_for_non_float_and_mismatched_trees():
    params = make_params()
    bad = dict(params, step=jnp.int32(3))
    with pytest.raises(ValueError, match=r"\['step'\].*float"):
        Q.fake_quantize(bad, 8)
    with pytest.raises(ValueError, match="float"):
        Q.quantize_tree({"i": np.arange(4)}, 8)
    with pytest.raises(ValueError, match="no arrays"):
        Q.fake_quantize({}, 8)
    other = {"dense": params["dense"], "conv": params["conv"]}
    with pytest.raises(ValueError, match="do not match"):
        Q.quantization_error(params, other)
    reshaped = dict(params, head=params["head"].reshape(2, 4))
    with pytest.raises(ValueError, match="shapes differ"):
        Q.quantization_error(params, reshaped)
    err = Q.quantization_error(params, Q.fake_quantize(params, Q.QuantSpec("symmetric", 8)))
    assert 0 < float(err["rms"]) <= float(err["max_abs"]) < 0.05


@pytest.mark.parametrize(
    "kwargs,field",
    [(dict(scheme="int8"), "scheme"), (dict(scheme="fp16", bits=8), "bits"),
     (dict(scheme="symmetric", bits=1), "bits"), (dict(scheme="asymmetric", bits=17), "bits"),
     (dict(scheme="symmetric", bits=33), "bits"), (dict(scheme="paper", bits=20), "bits"),
     (dict(per_channel="yes"), "per_channel"), (dict(per_channel=1), "per_channel"),
     (dict(include_biases=1), "include_biases"), (dict(channel_axis=1.5), "channel_axis")],
)
def test_quantspec_validation(kwargs, field):
    with pytest.raises(ValueError, match=field):
        Q.QuantSpec(**kwargs)


def test_quantspec_defaults():
    assert Q.QuantSpec().bits == 8 and Q.QuantSpec("fp16").bits == 16
    assert Q.QuantSpec().label == "paper8" and Q.QuantSpec("bf16").label == "bf16"
    assert Q.QuantSpec("symmetric", 4, per_channel=True, include_biases=False).label == (
        "symmetric4-pc-nobias")
    assert Q.QuantSpec("paper", 40).is_float and not Q.QuantSpec("paper", 15).is_float
    with pytest.raises(ValueError, match="spec"):
        as_spec("int8")
