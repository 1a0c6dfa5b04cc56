"""Broadcast packing: exact round trips, byte counts, checksum, bad input."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl_pim import quant as Q
from jaxrl_pim.quant.fake import is_qtensor
from jaxrl_pim.quant.packing import unpack_qtensors


def mlp_params():
    k = jax.random.split(jax.random.key(0), 3)
    return {
        "Dense_0": {"kernel": jax.random.normal(k[0], (8, 32)), "bias": jnp.full((32,), 0.1)},
        "Dense_1": {"kernel": jax.random.normal(k[1], (32, 32)), "bias": jnp.zeros((32,))},
        "Dense_2": {"kernel": jax.random.normal(k[2], (32, 4)), "bias": jnp.arange(4.0)},
    }


N_WEIGHTS = 8 * 32 + 32 + 32 * 32 + 32 + 32 * 4 + 4  # 1,476
N_LEAVES = 6


@pytest.mark.parametrize(
    "spec",
    [Q.QuantSpec("symmetric", 8), Q.QuantSpec("asymmetric", 8, per_channel=True),
     Q.QuantSpec("asymmetric", 3), 8, Q.QuantSpec("fp16"),
     Q.QuantSpec("symmetric", 12, per_channel=True, include_biases=False)],
)
def test_round_trip_equals_fake_quantize_exactly(spec):
    params = mlp_params()
    packed = Q.pack(params, spec)
    out = Q.unpack(packed, like=params)
    expect = Q.fake_quantize(params, spec)
    assert jax.tree.structure(out) == jax.tree.structure(params)
    for got, ref in zip(jax.tree.leaves(out), jax.tree.leaves(expect), strict=True):
        assert got.dtype == ref.dtype and got.shape == ref.shape
        np.testing.assert_array_equal(got, ref)


def test_int8_symmetric_byte_counts_are_one_byte_per_weight():
    params = mlp_params()
    assert Q.params_nbytes(params) == 4 * N_WEIGHTS
    packed = Q.pack(params)  # default: symmetric int8 per tensor
    assert len(packed.payload) == N_WEIGHTS
    assert len(packed.scales) == 4 * N_LEAVES  # one float32 scale per leaf
    assert Q.packed_nbytes(packed) == N_WEIGHTS + 4 * N_LEAVES
    assert 4 * len(packed.payload) == Q.params_nbytes(params)  # payload is 4x smaller
    assert {lay.code_dtype for lay in packed.leaves} == {"int8"}


def test_per_channel_and_asymmetric_scale_bytes():
    params = mlp_params()
    channels = 32 + 32 + 4  # output channels of the three kernels
    per_ch = Q.pack(params, Q.QuantSpec("symmetric", 8, per_channel=True))
    assert len(per_ch.payload) == N_WEIGHTS
    assert len(per_ch.scales) == 4 * (channels + 3)  # biases keep one scale each
    asym = Q.pack(params, Q.QuantSpec("asymmetric", 8, per_channel=True))
    assert len(asym.payload) == N_WEIGHTS
    assert len(asym.scales) == 5 * (channels + 3)  # float32 scale + uint8 zero point
    assert {lay.code_dtype for lay in asym.leaves} == {"uint8"}


def test_float_and_wide_payload_byte_counts():
    params = mlp_params()
    fp16 = Q.pack(params, Q.QuantSpec("fp16"))
    assert len(fp16.payload) == 2 * N_WEIGHTS and len(fp16.scales) == 0
    assert 2 * Q.packed_nbytes(fp16) == Q.params_nbytes(params)
    paper8 = Q.pack(params, 8)  # codes in [-256, 256] need int16
    assert len(paper8.payload) == 2 * N_WEIGHTS
    paper6 = Q.pack(params, 6)
    assert len(paper6.payload) == N_WEIGHTS
    keep_bias = Q.pack(params, Q.QuantSpec("symmetric", 8, include_biases=False))
    n_bias = 32 + 32 + 4
    assert len(keep_bias.payload) == (N_WEIGHTS - n_bias) + 4 * n_bias
    assert len(keep_bias.scales) == 4 * 3


def test_codes_match_quantize_tree():
    params = mlp_params()
    spec = Q.QuantSpec("symmetric", 8, per_channel=True)
    packed = Q.pack(params, spec)
    qtree = unpack_qtensors(packed)
    ref = Q.quantize_tree(params, spec)
    for a, b in zip(jax.tree.leaves(qtree, is_leaf=is_qtensor),
                    jax.tree.leaves(ref, is_leaf=is_qtensor), strict=True):
        np.testing.assert_array_equal(a.codes, b.codes)
        np.testing.assert_array_equal(a.scale, b.scale)


def _flip(data: bytes, index: int) -> bytes:
    b = bytearray(data)
    b[index] ^= 0x01
    return bytes(b)


def test_checksum_detects_corruption_and_truncation():
    params = mlp_params()
    packed = Q.pack(params, Q.QuantSpec("asymmetric", 8))
    Q.unpack(packed)  # intact
    for bad in (
        packed._replace(payload=_flip(packed.payload, 17)),
        packed._replace(scales=_flip(packed.scales, 0)),
        packed._replace(payload=packed.payload[:-1]),
        packed._replace(checksum=packed.checksum ^ 1),
    ):
        with pytest.raises(ValueError, match="checksum"):
            Q.unpack(bad)


def test_bad_input():
    params = mlp_params()
    with pytest.raises(ValueError, match="float"):
        Q.pack(dict(params, count=np.int32(3)), Q.QuantSpec("symmetric", 8))
    nan = jax.tree.map(lambda x: x, params)
    nan["Dense_1"]["bias"] = nan["Dense_1"]["bias"].at[3].set(jnp.nan)
    with pytest.raises(ValueError, match=r"Dense_1.*bias.*NaN"):
        Q.pack(nan)
    packed = Q.pack(params)
    other = dict(params)
    del other["Dense_2"]
    with pytest.raises(ValueError, match="do not match"):
        Q.unpack(packed, like=other)
    wrong_shape = jax.tree.map(lambda x: x, params)
    wrong_shape["Dense_1"]["kernel"] = jnp.zeros((16, 64))
    with pytest.raises(ValueError, match="shapes differ"):
        Q.unpack(packed, like=wrong_shape)
    with pytest.raises(ValueError, match="PackedParams"):
        Q.unpack(packed.payload)
    with pytest.raises(ValueError, match="bits"):
        Q.pack(params, Q.QuantSpec("symmetric", 17))


def test_broadcast_sizes_ratios():
    params = mlp_params()
    sizes = Q.broadcast_sizes(params)
    assert sizes["fp32"]["nbytes"] == 4 * N_WEIGHTS and sizes["fp32"]["ratio"] == 1.0
    assert sizes["fp16"]["ratio"] == 2.0
    assert sizes["int8_symmetric"]["nbytes"] == N_WEIGHTS + 4 * N_LEAVES
    assert 3.9 < sizes["int8_symmetric"]["ratio"] < 4.0
