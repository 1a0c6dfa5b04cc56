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


def test_fill_summary_is_seeds_over_one_seed_and_names_what_was_not_measured():
    rows = [{"agents": 3, "seeds": 1, "update_piece_s": 2.0, "s_per_1000_episodes": 2.0,
             "us_per_env_step_no_updates": 80.0},
            {"agents": 3, "seeds": 64, "update_piece_s": 4.0, "s_per_1000_episodes": 4.0,
             "us_per_env_step_no_updates": 90.0},
            {"agents": 24, "seeds": 16, "skipped": "--budget-s spent"}]
    rep = {"system": {"backend": "gpu", "device_count": 1, "device_kind": "H200"},
           "config": {"mode": "full", "piece_episodes": 1024}, "results": {"fill": rows}}
    s = marl_seeds.summarize(rep)
    # 64 seeds in twice one seed's time: 32 times the seeds per hour
    assert s["gpu_marl_seeds_per_hour_ratio_64_3"] == 64 * 2.0 / 4.0 == 32
    assert s["gpu_marl_us_per_env_step_3"] == 80.0  # one seed's, not the group's
    assert s["fill_not_measured"] == ["24:16: --budget-s spent"]
    assert "gpu_marl_seeds_per_hour_ratio_16_24" not in s  # no one-seed point at N = 24
    rep["system"]["backend"] = "cpu"  # never a GPU key from a CPU run
    assert "marl_seeds_per_hour_ratio_64_3" in marl_seeds.summarize(rep)
    assert not any(k.startswith("gpu_") for k in marl_seeds.summarize(rep))


def test_fill_points_parse_in_order_and_refuse_bad_items():
    assert marl_seeds.parse_points("3:1,64 24:1") == [(3, 1), (3, 64), (24, 1)]
    for bad in ("3", "3:0", "x:1", "3:1,,2"):
        with pytest.raises(ValueError, match="--points takes N:S"):
            marl_seeds.parse_points(bad)
