"""The one-hot Pallas kernel (``pallas_onehot``, interpret mode on CPU) equals the lax.scan
path bit for bit; its block sizes; its lowering for NVIDIA GPUs."""

from __future__ import annotations

import itertools

import jax
import numpy as np
import pytest

from jaxrl_pim.tabular import TabularConfig, chunk, make_train
from jaxrl_pim.tabular.pallas_lanes import block_lanes
from tests.support.tabular import A, S, random_dataset

VARIANTS = [(*v, "jax") for v in itertools.product(("q", "sarsa"), ("seq", "ran", "str"),
                                                    ("fp32", "int32"))]
VARIANTS += [("sarsa", "ran", "int32", "lcg"), ("q", "ran", "fp32", "lcg"),
             ("q", "str", "bf16", "jax"), ("sarsa", "seq", "fp16", "jax")]
# Floating-point tables equal bit for bit with XLA:CPU's default fusion emitters (a fresh
# process in the test run, tests/conftest.py); int32 fixed point is exact with any emitters.
CASES = [pytest.param(*v, marks=() if v[2] == "int32" else pytest.mark.default_emitters)
         for v in VARIANTS]


@pytest.mark.parametrize("algo,sampling,dtype,rng", CASES)
def test_pallas_kernel_matches_scan(algo, sampling, dtype, rng):
    data = random_dataset(5 * 13 + 2, seed=7)
    tables = []
    for kernel in ("scan", "pallas_onehot"):
        cfg = TabularConfig(S, A, algo=algo, sampling=sampling, dtype=dtype, num_cores=5,
                            sync_period=2, num_episodes=3, rng=rng, kernel=kernel,
                            lanes_per_block=2)  # 3 programs, one padded lane
        q, _ = jax.jit(make_train(cfg))(jax.random.key(11), chunk(cfg, data))
        tables.append(np.asarray(q))
    assert np.abs(tables[0]).max() > 0.05
    np.testing.assert_array_equal(tables[0], tables[1])  # bit-exact, fp32 included


def test_block_sizes():
    assert TabularConfig(S, A, kernel="scan").resolved_kernel("gpu") == "scan"
    assert block_lanes(128, 64, 2000) == 128  # FrozenLake: 128 tables of 64 entries
    assert block_lanes(128, 3000, 2000) == 8  # Taxi: capped by the on-chip budget
    assert block_lanes(128, 64, 5) == 8  # never more than the lanes (rounded up to 2^k)
    assert block_lanes(0, 64, 2000) == 8  # auto: ~128+ programs (2,000 lanes: 250)
    assert block_lanes(0, 64, 65536) == 128 and block_lanes(0, 64, 100) == 1


@pytest.mark.parametrize("num_states,num_actions,algo,sampling,dtype", [
    (16, 4, "q", "seq", "fp32"), (16, 4, "sarsa", "ran", "int32"),  # FrozenLake 4x4
    (500, 6, "q", "str", "int32"),  # Taxi: 3,000-entry tables and 6 actions, padded to 2^k
])
def test_kernel_lowers_for_nvidia_gpus(num_states, num_actions, algo, sampling, dtype):
    # Lowering to Triton happens in JAX itself, so a CPU host can check what a GPU host would
    # reject (power-of-two tiles, no stacks of more than two arrays, varying-axes types).
    import functools

    import jax.numpy as jnp

    from jaxrl_pim.tabular.lanes import LaneData, LaneDraws
    from jaxrl_pim.tabular.pallas_lanes import run_episodes_pallas

    spec = TabularConfig(num_states, num_actions, algo=algo, sampling=sampling,
                         dtype=dtype).lane_spec()
    lanes, m = 256, 500  # m = 500 rows per lane per episode: FrozenLake 1M over 2,000 lanes
    q = jnp.zeros((lanes, num_states, num_actions), spec.fmt.storage)
    idx = jnp.zeros((m, lanes), jnp.int16)
    data = LaneData(idx, idx, jnp.zeros((m, lanes), spec.fmt.storage), jnp.zeros((m, lanes), bool))
    if sampling == "ran":
        data = LaneData(*(x.T for x in data))
    fn = jax.jit(functools.partial(run_episodes_pallas, spec, num_episodes=2, interpret=False,
                                   platform="gpu"))
    draws = LaneDraws(jax.random.split(jax.random.key(0), lanes),
                      jnp.zeros((lanes,), jnp.uint32), jnp.int32(0))
    lowered = fn.trace(q, data, draws).lower(lowering_platforms=("cuda",))
    assert "triton" in lowered.as_text().lower()
