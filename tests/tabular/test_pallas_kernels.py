"""The lane-per-thread GPU kernel and the TPU kernel (interpret mode on CPU) give the scan
path's tables bit for bit, lower for their backends, and ``auto`` picks them in order."""

from __future__ import annotations

import functools
import itertools
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl_pim.data import Dataset
from jaxrl_pim.tabular import (
    TabularConfig,
    chunk,
    make_train,
    pallas_gpu,
    pallas_select,
    pallas_tpu,
)
from jaxrl_pim.tabular.lanes import LaneData, LaneDraws, run_episodes, to_lane_data
from jaxrl_pim.tabular.pallas_common import (
    PackedRows,
    lcg_states,
    mul_const_scaled,
    pack_rows,
    packable,
    unpack_row,
)
from jaxrl_pim.tabular.pallas_gpu import lane_block, run_episodes_lane
from jaxrl_pim.tabular.pallas_gpu import prepare_rows as prepare_lane
from jaxrl_pim.tabular.pallas_tpu import chunk_rows, run_episodes_tpu, tpu_block
from jaxrl_pim.tabular.pallas_tpu import prepare_rows as prepare_tpu
from jaxrl_pim.tabular.sampling import LCG_A, LCG_C, stride_order
from tests.support.tabular import A, S, random_dataset

# XLA:CPU at -O0 compiles the interpret-mode kernels about twice as fast; the scan reference
# is compiled the same way (IEEE semantics do not depend on the optimisation level)
FAST = {"xla_backend_optimization_level": 0}
LANES, ROWS, EPISODES = 5, 13, 3


def lane_inputs(cfg: TabularConfig, data: Dataset):
    """The trainer's per-lane data (time-major for seq/str) and the run's other inputs."""
    spec = cfg.lane_spec()
    chunks = chunk(cfg, data)
    lanes = to_lane_data(chunks, spec)
    if spec.sampling != "ran":
        m = lanes.sa.shape[1]
        order = np.arange(m) if spec.sampling == "seq" else stride_order(m, cfg.stride)
        lanes = LaneData(*(x[:, order].T for x in lanes))
    n = cfg.num_cores
    keys = jax.random.split(jax.random.key(3), n)
    lcg = jnp.full((n,), cfg.lcg_seed, jnp.uint32) + jnp.arange(n, dtype=jnp.uint32)
    q0 = jnp.zeros((n, cfg.num_states, cfg.num_actions), spec.fmt.storage)
    return spec, lanes, keys, lcg, q0


def run_three(cfg: TabularConfig, data: Dataset, lanes_per_block: int = 2,
              prefetch: int = 2, first_episode: int = 2, episodes: int = EPISODES):
    """``(q, lcg)`` from the scan path, the lane kernel and the TPU kernel on the same input."""
    spec, lanes, keys, lcg, q0 = lane_inputs(cfg, data)
    draws = LaneDraws(keys, lcg, jnp.int32(first_episode))
    runs = {
        "scan": lambda q: run_episodes(spec, q, lanes, draws, episodes),
        "lane": lambda q: run_episodes_lane(spec, q, prepare_lane(spec, lanes), draws, episodes,
                                            lanes_per_block, prefetch=prefetch),
        "tpu": lambda q: run_episodes_tpu(spec, q, prepare_tpu(spec, lanes), draws, episodes),
    }
    out = {}
    for name, fn in runs.items():
        q, lcg_out = jax.jit(fn, compiler_options=FAST)(q0)
        out[name] = (np.asarray(q.astype(jnp.float32)), np.asarray(lcg_out))
    return out


# relative spacing of the storage formats (one ulp at 1.0)
EPS = {"fp32": 2.0**-23, "fp16": 2.0**-10, "bf16": 2.0**-7}


def assert_same_as_scan(out, dtype: str, min_scale: float = 0.05):
    """int32: bit for bit. Floats: within a few ulps of the largest entry, since a compiler
    may contract ``a * b + c`` into one fused multiply-add in one program and not in the other
    (XLA:CPU at -O0 here, Triton on GPUs): at most one ulp per update, damped by alpha and
    gamma. A wrong entry, row or draw moves values by far more (alpha * reward ~ 0.1)."""
    q_ref, lcg_ref = out["scan"]
    scale = np.abs(q_ref).max()
    assert scale > min_scale  # learning happened
    for name in ("lane", "tpu"):
        q, lcg = out[name]
        np.testing.assert_array_equal(lcg, lcg_ref, err_msg=name)
        if dtype == "int32":
            np.testing.assert_array_equal(q, q_ref, err_msg=name)
        else:
            np.testing.assert_allclose(q, q_ref, rtol=0, atol=4 * EPS[dtype] * scale,
                                       err_msg=name)


VARIANTS = [(*v, "jax") for v in itertools.product(("q", "sarsa"), ("seq", "ran", "str"),
                                                    ("fp32", "int32"))]
VARIANTS += [("sarsa", "ran", "int32", "lcg"), ("q", "ran", "fp32", "lcg"),
             ("sarsa", "str", "bf16", "lcg"), ("q", "seq", "fp16", "jax")]


@pytest.mark.parametrize("algo,sampling,dtype,rng", VARIANTS)
def test_kernels_match_scan_bit_for_bit(algo, sampling, dtype, rng):
    cfg = TabularConfig(S, A, algo=algo, sampling=sampling, dtype=dtype, num_cores=LANES,
                        rng=rng, stride=3)
    # 5 lanes in blocks of 2 (one padded lane); 3 episodes of 13 rows, prefetch 2 (39 steps:
    # 19 groups of 2 and a tail of 1)
    out = run_three(cfg, random_dataset(LANES * ROWS + 2, seed=7))
    assert_same_as_scan(out, dtype)


def env_dataset(num_states: int, num_actions: int, rows: int, reward_values, seed: int):
    rng = np.random.default_rng(seed)
    return Dataset(
        state=rng.integers(0, num_states, rows).astype(np.int16),
        action=rng.integers(0, num_actions, rows).astype(np.uint8),
        reward=rng.choice(np.asarray(reward_values, np.float32), rows),
        next_state=rng.integers(0, num_states, rows).astype(np.int16),
        terminated=rng.random(rows) < 0.05,
    )


@pytest.mark.parametrize("num_states,num_actions,rewards,algo,sampling,dtype,rng,prefetch", [
    (16, 4, [0.0, 1.0], "q", "seq", "int32", "jax", 8),  # FrozenLake 4x4, default prefetch
    (500, 6, [-1.0, -10.0, 20.0], "q", "ran", "int32", "lcg", 2),  # Taxi: 3,000 entries
    (48, 4, [-1.0, -100.0], "sarsa", "str", "fp32", "lcg", 2),  # CliffWalking
])
def test_environment_table_sizes(num_states, num_actions, rewards, algo, sampling, dtype, rng,
                                 prefetch):
    cfg = TabularConfig(num_states, num_actions, algo=algo, sampling=sampling, dtype=dtype,
                        num_cores=3, rng=rng)
    data = env_dataset(num_states, num_actions, 3 * 41, rewards, seed=num_states)  # 82 steps
    out = run_three(cfg, data, lanes_per_block=4, prefetch=prefetch, episodes=2)
    assert_same_as_scan(out, dtype)


def test_tpu_kernel_streams_episodes_in_padded_chunks(monkeypatch):
    # chunks of 8 rows: 21 rows per episode -> 3 chunks, the last one 3 rows of padding; 130
    # lanes -> two 128-lane blocks
    monkeypatch.setattr(pallas_tpu, "CHUNK_ROWS", 8)
    assert chunk_rows(21) == (8, 3)
    cfg = TabularConfig(S, A, algo="sarsa", sampling="ran", dtype="int32", num_cores=130,
                        rng="lcg")
    out = run_three(cfg, random_dataset(130 * 21, seed=5), lanes_per_block=64, episodes=2)
    assert_same_as_scan(out, "int32")


@pytest.mark.parametrize("kernel", ["pallas_lane", "pallas_tpu"])
def test_trainer_rounds_and_independent_agents(kernel, monkeypatch):
    monkeypatch.setattr(pallas_gpu, "DEFAULT_PREFETCH", 2)  # a smaller kernel to compile
    # normal mode: lane means every 2 episodes; independent mode: per-agent tables
    data = random_dataset(LANES * ROWS + 2, seed=9)
    k, n = 3, 15
    parts = [random_dataset(n, seed=i) for i in range(k)]
    per_agent = Dataset(*(np.stack([p[f] for p in parts]) for f in range(5)))
    cases = [
        (dict(algo="q", sampling="str", dtype="int32", num_cores=LANES), data),
        (dict(algo="sarsa", sampling="ran", dtype="int32", num_cores=k, independent=True),
         per_agent),
    ]
    for kwargs, d in cases:
        tables = []
        for name in ("scan", kernel):
            cfg = TabularConfig(S, A, sync_period=2, num_episodes=4, kernel=name,
                                lanes_per_block=2, **kwargs)
            q, metrics = jax.jit(make_train(cfg), compiler_options=FAST)(
                jax.random.key(11), chunk(cfg, d))
            tables.append(np.asarray(q))
            assert metrics["q_delta"].shape == (2,)
        np.testing.assert_array_equal(tables[0], tables[1])
        assert np.abs(tables[0]).max() > 0.05


LOWERING_VARIANTS = [(16, 4, *v) for v in VARIANTS] + [
    (500, 6, "q", "str", "int32", "jax"), (48, 4, "sarsa", "seq", "fp32", "lcg")]


def lowered_text(kind: str, num_states, num_actions, algo, sampling, dtype, rng) -> str:
    spec = TabularConfig(num_states, num_actions, algo=algo, sampling=sampling, dtype=dtype,
                         rng=rng).lane_spec()
    lanes, m = 256, 500  # 500 rows per lane: FrozenLake 1M over 2,000 lanes
    q = jax.ShapeDtypeStruct((lanes, num_states, num_actions), spec.fmt.storage)
    if kind == "gpu":
        rows = jax.ShapeDtypeStruct((m, lanes, 2), jnp.int32)
        fn, platform = run_episodes_lane, "cuda"
    else:
        rows = PackedRows(*[jax.ShapeDtypeStruct((m, lanes), jnp.int32)] * 2)
        fn, platform = run_episodes_tpu, "tpu"
    run = functools.partial(fn, spec, num_episodes=2, interpret=False,
                            platform="gpu" if kind == "gpu" else "tpu")
    traced = jax.jit(run).trace(q, rows, LaneDraws(jax.random.split(jax.random.key(0), lanes),
                                                   jnp.zeros((lanes,), jnp.uint32), jnp.int32(0)))
    return traced.lower(lowering_platforms=(platform,)).as_text()


@pytest.mark.parametrize("variant", LOWERING_VARIANTS, ids=lambda v: "-".join(map(str, v)))
def test_kernels_lower_for_cuda_and_tpu(variant):
    # Pallas lowers to Triton IR (CUDA) and to Mosaic (TPU) inside JAX, so a CPU host checks
    # what those backends' front ends would reject; compiling needs the device.
    assert "__gpu$xla.gpu.triton" in lowered_text("gpu", *variant)
    assert "tpu_custom_call" in lowered_text("tpu", *variant)


def test_auto_tries_the_kernels_in_order(monkeypatch):
    cfg = TabularConfig(S, A)
    assert cfg.resolved_kernel("cpu", probe=True) == "scan"
    assert cfg.resolved_kernel("gpu") == "pallas_lane"
    assert cfg.resolved_kernel("tpu") == "pallas_tpu"
    tried = []

    def fake(works):
        def compiles(name, spec, backend):
            tried.append(name)
            return name in works
        return compiles

    for works, backend, want, order in [
        ({"pallas_lane", "pallas_onehot"}, "cuda", "pallas_lane", ["pallas_lane"]),
        ({"pallas_onehot"}, "gpu", "pallas_onehot", ["pallas_lane", "pallas_onehot"]),
        (set(), "gpu", "scan", ["pallas_lane", "pallas_onehot"]),
        ({"pallas_tpu"}, "tpu", "pallas_tpu", ["pallas_tpu"]),
        ({"pallas_lane", "pallas_onehot"}, "tpu", "scan", ["pallas_tpu"]),
    ]:
        tried.clear()
        monkeypatch.setattr(pallas_select, "kernel_compiles", fake(works))
        if want == "scan":
            with pytest.warns(RuntimeWarning, match="using the lax.scan path"):
                assert cfg.resolved_kernel(backend, probe=True) == "scan"
        else:
            assert cfg.resolved_kernel(backend, probe=True) == want
        assert tried == order, (backend, works)


def test_probe_failure_warns_and_falls_through():
    # On a CPU host a non-interpret kernel cannot compile: that stands in for a GPU whose
    # lowering rejects a kernel; every candidate warns, then the scan path is used.
    cfg = TabularConfig(S, A, algo="sarsa", sampling="ran", dtype="int32")
    with pytest.warns(RuntimeWarning) as record:
        assert cfg.resolved_kernel("gpu", probe=True) == "scan"
    messages = " ".join(str(w.message) for w in record)
    assert "'pallas_lane' does not compile on gpu" in messages
    assert "'pallas_onehot' does not compile on gpu" in messages
    assert TabularConfig(S, A, kernel="pallas_lane").resolved_kernel("gpu", probe=True) == \
        "pallas_lane"  # an explicit choice is never probed


def test_kernel_names_and_sizes():
    assert TabularConfig(S, A, kernel="pallas_onehot").resolved_kernel("gpu") == "pallas_onehot"
    for name in ("cuda", "pallas"):  # "pallas" was the one-hot kernel's name before 0.1.0
        with pytest.raises(ValueError, match="kernel must be one of"):
            TabularConfig(S, A, kernel=name)
    assert packable(500, 6) and packable(2**15, 2) and not packable(2**16, 1)
    with pytest.raises(ValueError, match="does not fit"):
        TabularConfig(2**16, 4, kernel="pallas_lane")
    assert TabularConfig(2**16, 4).resolved_kernel("gpu") == "pallas_onehot"
    assert lane_block(0, 64, 2000) == 8 and lane_block(0, 64, 65536) == 32
    assert lane_block(0, 64, 100) == 1 and lane_block(64, 3000, 2000) == 8  # Taxi: 128 KB
    assert tpu_block(0) == 128 and tpu_block(200) == 256
    assert chunk_rows(500) == (504, 1) and chunk_rows(10_000) == (1000, 10)


def test_fixed_point_products_match_int64():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.integers(-3 * 2**29, 3 * 2**29, 20_000),
                        [0, 1, -1, 9, -9, 19, -19, 3 * 2**29, -3 * 2**29]]).astype(np.int32)
    for c in (1000, 9500, 9900, 1, 0, 10_000, 5000, 3333, 7):
        want = np.sign(c * x.astype(np.int64)) * (np.abs(c * x.astype(np.int64)) // 10_000)
        got = np.asarray(jax.jit(functools.partial(mul_const_scaled, c))(jnp.asarray(x)))
        np.testing.assert_array_equal(got, want, err_msg=f"c={c}")


def test_lcg_jump_ahead_and_row_packing():
    x0 = np.array([42, 7, 2**32 - 1], np.uint32)
    want, x = [], x0.astype(np.uint64)
    for _ in range(9):
        x = (x * LCG_A + LCG_C) % 2**32
        want.append(x.copy())
    np.testing.assert_array_equal(np.asarray(lcg_states(jnp.asarray(x0), 9)),
                                  np.asarray(want, np.uint32))
    cfg = TabularConfig(500, 6, dtype="fp32", num_cores=3)
    spec, lanes, *_ = lane_inputs(cfg, env_dataset(500, 6, 30, [-1.0, 20.0, -0.5], seed=1))
    rows = pack_rows(spec, lanes)
    row = unpack_row(spec, rows.word, rows.r)
    np.testing.assert_array_equal(row.sa, lanes.sa.astype(np.int32))
    np.testing.assert_array_equal(row.s2, lanes.s2.astype(np.int32))
    np.testing.assert_array_equal(row.term, lanes.term)
    np.testing.assert_array_equal(row.r, lanes.r)


MESH_CODE = """
import json, jax, numpy as np
from jaxrl_pim.data import Dataset
from jaxrl_pim.tabular import TabularConfig, chunk, make_mesh, make_train, pallas_gpu
pallas_gpu.DEFAULT_PREFETCH = 2  # a smaller kernel to compile
rng = np.random.default_rng(0)
rows = 8 * 12
data = Dataset(rng.integers(0, 9, rows).astype(np.uint8),
                   rng.integers(0, 4, rows).astype(np.uint8),
                   rng.integers(-5, 6, rows).astype(np.float32),
                   rng.integers(0, 9, rows).astype(np.uint8), rng.random(rows) < 0.1)
out = {}
for kernel in ("scan", "pallas_lane", "pallas_tpu"):
    cfg = TabularConfig(9, 4, algo="sarsa", sampling="ran", dtype="int32", num_cores=8,
                        sync_period=2, num_episodes=4, kernel=kernel, lanes_per_block=2)
    mesh = make_mesh(4)
    lanes = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("cores"))
    q, _ = jax.jit(make_train(cfg, mesh))(jax.random.key(4), jax.device_put(chunk(cfg, data),
                                                                            lanes))
    out[kernel] = np.asarray(q).tolist()
print(json.dumps(out))
"""


@pytest.mark.slow
def test_kernels_inside_a_four_device_mesh(multi_device):
    # the kernels' prepared rows are time-major for every sampling (ran included), so the
    # trainer shards them on axis 1; an int32 run must equal the scan path on the same mesh
    out = json.loads(multi_device(MESH_CODE, 4).strip().splitlines()[-1])
    ref = np.asarray(out["scan"])
    assert np.abs(ref).max() > 0.1
    for kernel in ("pallas_lane", "pallas_tpu"):
        np.testing.assert_array_equal(np.asarray(out[kernel]), ref, err_msg=kernel)
