"""``benchmarks/replay_bytes.py``: the bytes per step against the layouts' formulas, the
largest capacity as the edge of what fits, and the summary recomputed from the rows."""

from __future__ import annotations

import dataclasses
import json

import pytest

from benchmarks import replay_bytes
from jaxrl_pim.marl import MARLConfig, plan
from tests.support import bench


@pytest.mark.xdist_group(bench.group("replay_bytes"))  # the provenance test's smoke run
def test_smoke_run_and_summary(smoke_run):
    run = smoke_run("replay_bytes")  # python benchmarks/replay_bytes.py --smoke --out <folder>
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    rep = json.loads((run.out / "replay_bytes_smoke.json").read_text())
    (row,) = rep["results"]["rows"]
    o, a = 4 + 2 * 3 + 4 * 2, 5  # spread-3: velocity, position, landmarks, others, messages
    assert row["bytes_per_step"]["interleaved"] == 4 * 3 * (2 * o + a + 2) == 516
    assert row["ratio"] == row["bytes_per_step"]["compact"] / 516 < 1
    assert rep["summary"] == replay_bytes.summarize(rep)
    for c in rep["results"]["capacities"]:
        cfg = MARLConfig(num_agents=c["agents"], layout=c["layout"])
        budget = c["budget_gb"] * 10**9
        assert plan.state_bytes(cfg, c["capacity"]) <= budget
        assert plan.state_bytes(cfg, c["capacity"] + 1) > budget
    compact = dataclasses.replace(MARLConfig(), layout="compact")
    assert replay_bytes.largest_capacity(compact, 10**9) > \
        replay_bytes.largest_capacity(MARLConfig(), 10**9)
