"""Lanes split over a mesh of 8 host devices give the same tables as one device (scan path),
and the fused Pallas kernel inside the mesh gives the scan path's tables."""

from __future__ import annotations

import json

import pytest

from tests.support import run_with_devices

CODE = """
import dataclasses, json, jax, numpy as np
from jaxrl_pim.data import Dataset
from jaxrl_pim.tabular import TabularConfig, chunk, make_mesh, make_train
assert len(jax.devices()) == 8
rng = np.random.default_rng(0)
rows = 16 * 40
data = Dataset(rng.integers(0, 9, rows).astype(np.uint8),
                   rng.integers(0, 4, rows).astype(np.uint8),
                   rng.integers(-5, 6, rows).astype(np.float32),
                   rng.integers(0, 9, rows).astype(np.uint8), rng.random(rows) < 0.1)
out = {}
cases = [("int32", "sarsa", "ran", "scan"), ("fp32", "q", "str", "scan"),
         ("int32", "q", "seq", "pallas_onehot")]  # fused kernel in shard_map (interpret mode)
for dtype, algo, sampling, kernel in cases:
    cfg = TabularConfig(9, 4, algo=algo, sampling=sampling, dtype=dtype, num_cores=16,
                        sync_period=3, num_episodes=7, kernel=kernel)
    chunks = chunk(cfg, data)
    key = jax.random.key(4)
    q1, _ = jax.jit(make_train(dataclasses.replace(cfg, kernel="scan")))(key, chunks)
    mesh = make_mesh(8)
    lanes = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("cores"))
    sharded = jax.device_put(chunks, lanes)
    q8, m8 = jax.jit(make_train(cfg, mesh))(key, sharded)
    q1, q8 = np.asarray(q1, np.float64), np.asarray(q8, np.float64)
    out[f"{dtype}-{algo}-{sampling}-{kernel}"] = {
        "max_abs_diff": float(np.abs(q1 - q8).max()),
        "scale": float(np.abs(q1).max()),
        "rounds": int(m8["q_delta"].shape[0]),
    }
print(json.dumps(out))
"""


@pytest.mark.slow
def test_one_and_eight_devices_agree():
    result = json.loads(run_with_devices(CODE, 8).strip().splitlines()[-1])
    for name, r in result.items():
        assert r["rounds"] == 3
        assert r["scale"] > 0.1
        if name.startswith("int32"):
            assert r["max_abs_diff"] == 0.0, name  # bit-exact fixed point
        else:
            assert r["max_abs_diff"] <= 1e-5 * r["scale"], name
