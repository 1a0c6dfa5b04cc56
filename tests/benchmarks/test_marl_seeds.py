"""``benchmarks/marl_seeds.py``: a smoke run writes a results file whose summary is its rows'
ratios, and both variants run the same schedule."""

from __future__ import annotations

import json

import pytest

from benchmarks import marl_seeds
from tests.support import bench


@pytest.mark.xdist_group(bench.group("marl_seeds"))  # the provenance test's smoke run
def test_smoke_run_and_summary(smoke_run):
    run = smoke_run("marl_seeds")  # python benchmarks/marl_seeds.py --smoke --out <folder>
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    rep = json.loads((run.out / "marl_seeds_smoke.json").read_text())
    rows = rep["results"]["rows"]
    assert [(r["agents"], r["seeds"]) for r in rows] == [(3, 2)]
    cfg = marl_seeds.config_for(3, marl_seeds.sizes("smoke"))
    for r in rows:
        assert r["update_rounds"] == cfg.update_rounds(cfg.num_episodes * 25) > 0
        assert r["vmapped_seeds_per_hour"] == r["seeds"] / r["vmapped_s"] * 3600
    assert rep["summary"] == marl_seeds.summarize(rep)
    want = rows[0]["vmapped_seeds_per_hour"] / rows[0]["sequential_seeds_per_hour"]
    assert rep["summary"]["marl_seeds_per_hour_speedup_vmapped_2_3"] == want
    assert "vmapped / sequential" in (run.out / "marl_seeds_smoke.md").read_text()
