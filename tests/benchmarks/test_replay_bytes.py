"""``benchmarks/replay_bytes.py``: the bytes per step against the layouts' formulas, the
largest capacity as the edge of what fits, and the summary recomputed from the rows."""

from __future__ import annotations

import dataclasses
import json

from benchmarks import replay_bytes
from jaxrl_pim.marl import MARLConfig, plan


def test_smoke_run_and_summary(tmp_path):
    assert replay_bytes.main(["--smoke", "--out", str(tmp_path)]) == 0
    rep = json.loads((tmp_path / "replay_bytes_smoke.json").read_text())
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
