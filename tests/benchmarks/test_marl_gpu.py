"""``benchmarks/marl_gpu.py``: the committed H200 file still recomputes, the planner's
capacity decision (fit, cut, or skipped with ``--no-cut``), the ``compact`` layout's smoke
run and the paper-size keys, present only for a 1e6-row spread-48 run on an accelerator."""

from __future__ import annotations

import copy
import json
import math
import os
from pathlib import Path

import pytest

from benchmarks import make_docs, marl_gpu
from jaxrl_pim.marl import MARLConfig, plan

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = ROOT / "benchmarks" / "results" / "h200" / "marl_gpu.json"


def test_the_committed_h200_file_recomputes_without_new_keys() -> None:
    rep = json.loads(COMMITTED.read_text())
    assert marl_gpu.summarize(rep) == rep["summary"]
    assert marl_gpu.render_markdown(rep) == COMMITTED.with_suffix(".md").read_text()


def _paper_report(capacity: int, backend: str = "gpu") -> dict:
    rec = {"env": "spread", "agents": 48, "layout": "compact", "sampling_mode": "faithful",
           "capacity": capacity, "piece_episodes": 1024, "compile_s": 12.0, "warmup_s": 2.0,
           "measured_piece_s": 5.12, "measured_update_rounds": 256,
           "s_per_1000_episodes": 5.0, "warmup_env_steps": 25_600, "warmup_update_rounds": 1,
           "us_per_env_step_no_updates": 2.0 / 25_600 * 1e6}
    slow = {**rec, "layout": "interleaved", "s_per_1000_episodes": 6.0}
    return {"system": {"backend": backend}, "config": {"mode": "full"},
            "results": {"device": f"{backend}: 1 x X", "schedule": [],
                        "scaling": [rec, slow]}}


def test_paper_keys_only_for_1e6_rows_on_an_accelerator() -> None:
    s = marl_gpu.summarize(_paper_report(1_000_000))
    assert s["gpu_spread48_1e6_s_per_1000_episodes"] == 5.0  # the faster layout
    assert s["gpu_spread48_1e6_layout"] == "compact"
    # the warm-up piece, then the timed rate over the other 58,976 episodes
    assert s["gpu_spread48_1e6_60k_schedule_s_extrapolated"] == pytest.approx(
        2.0 + 5.0 * 58.976)
    md = marl_gpu.render_markdown(_paper_report(1_000_000))
    assert "warm-up us per env step |" in md and "EXTRAPOLATED" in md
    for rep in (_paper_report(1_000_000, "cpu"), _paper_report(395_264)):
        assert not any(k.startswith("gpu_spread48_1e6") for k in marl_gpu.summarize(rep))
    fast_only = copy.deepcopy(_paper_report(1_000_000))
    for r in fast_only["results"]["scaling"]:
        r["sampling_mode"] = "fast"
    assert "gpu_spread48_1e6_layout" not in marl_gpu.summarize(fast_only)


def test_plan_capacity_fits_cuts_or_skips() -> None:
    cfg = MARLConfig(env="spread", num_agents=3, layout="compact")
    need = plan.state_bytes(cfg)
    assert marl_gpu.plan_capacity(cfg, 1_000_000, None, False) == (1_000_000, {})
    rows, info = marl_gpu.plan_capacity(cfg, 1_000_000, (need, "test"), False)
    assert rows == 1_000_000 and info["fits"] and info["state_bytes"] == need
    rows, info = marl_gpu.plan_capacity(cfg, 1_000_000, (need // 2, "test"), False)
    assert rows % 1_024 == 0 and rows <= info["max_capacity"] < 1_000_000
    assert plan.state_bytes(cfg, rows) <= need // 2 < plan.state_bytes(cfg, rows + 1_024)
    rows, info = marl_gpu.plan_capacity(cfg, 1_000_000, (need // 2, "test"), True)
    assert rows is None and info["skipped"].startswith("--no-cut: the state at 1,000,000 rows")
    # 48 agents, compact, 1e6 rows: about 60 GB, over 0.4 of an H200's bytes_limit, under 0.6
    big = MARLConfig(env="spread", num_agents=48, layout="compact")
    limit = 112_583_507_968
    assert marl_gpu.plan_capacity(big, 1_000_000, (int(0.4 * limit), "t"), True)[0] is None
    rows, info = marl_gpu.plan_capacity(big, 1_000_000, (int(0.6 * limit), "t"), True)
    assert rows == 1_000_000 and info["usable_bytes"] == math.floor(0.6 * limit)


def test_no_cut_skips_with_the_reason_before_compiling(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv(plan.MEMORY_LIMIT_ENV, "1000000")  # the planner's host memory: 1 MB
    monkeypatch.setenv("XLA_FLAGS", os.environ.get("XLA_FLAGS", ""))  # main() adds to it
    out = tmp_path / "out"
    assert marl_gpu.main(["--smoke", "--parts", "scaling", "--layouts", "compact",
                          "--no-cut", "--out", str(out)]) == 0
    rep = json.loads((out / "marl_gpu_smoke.json").read_text())
    (r,) = rep["results"]["scaling"]
    assert r["skipped"].startswith("--no-cut:") and not r["memory_plan"]["fits"]
    assert rep["summary"]["not_measured"] == [f"spread3_compact_fast: {r['skipped']}"]


@pytest.mark.slow
def test_compact_smoke_run_records_the_warm_up_per_env_step(tmp_path: Path,
                                                            monkeypatch) -> None:
    monkeypatch.setenv("XLA_FLAGS", os.environ.get("XLA_FLAGS", ""))  # main() adds to it
    out = tmp_path / "out"
    assert marl_gpu.main(["--smoke", "--parts", "scaling", "--layouts", "compact", "--out",
                          str(out)]) == 0
    path = out / "marl_gpu_smoke.json"
    assert make_docs.check_results_file(path, ROOT, committed=False) == []
    (r,) = json.loads(path.read_text())["results"]["scaling"]
    assert (r["layout"], r["capacity"], r["memory_plan"]) == ("compact", 4_096, {})
    assert r["warmup_update_rounds"] == 0 and r["warmup_env_steps"] == 11 * 25
    assert r["us_per_env_step_no_updates"] == pytest.approx(r["warmup_s"] / 275 * 1e6)
