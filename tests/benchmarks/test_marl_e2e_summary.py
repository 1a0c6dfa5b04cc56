"""``benchmarks/marl_e2e.py``'s schema-2 summary: the full-schedule keys are set only by runs
that covered all 60,000 episodes, and the throughput speed-ups are ratios of the records."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def script() -> dict:
    return vars(importlib.import_module("benchmarks.marl_e2e"))


def _timing(env: str, agents: int, measured: int, paper: float | None) -> dict:
    return {"env": env, "agents": agents, "warmup_episodes": 1024, "warmup_s": 10.0,
            "measured_episodes": measured, "measured_s": measured / 100.0,
            "extrapolated_from_episodes": 1024 + measured, "extrapolated_60k_s": 1.0,
            "paper_60k_s": paper, "config": {"buffer_capacity": 1_000_000}}


def _report(schema: int | None) -> dict:
    cfg = {"mode": "full"} | ({} if schema is None else {"summary_schema": schema})
    tp = [{"env": "spread", "agents": n, "mode": m, "steps_per_s": v}
          for n in (3, 24) for m, v in (("per_agent", 100.0 * n), ("interleaved", 300.0 * n),
                                        ("packed", 200.0 * n if n == 24 else 450.0),
                                        ("fast", 500.0 * n))]
    return {"system": {"backend": "cpu", "device_count": 1, "device_kind": "cpu"},
            "config": cfg,
            "results": {"timing": [_timing("spread", 3, 60_000 - 1024, 2403.64),
                                   _timing("tag", 3, 1000, 3365.99),
                                   _timing("spread", 24, 1000, 52421.81)],
                        "throughput": tp}}


def test_full_schedule_and_throughput_keys(script: dict) -> None:
    summ = script["summarize"](_report(2))
    assert summ["maddpg_spread3_60k_s"] == pytest.approx(10.0 + (60_000 - 1024) / 100.0)
    assert summ["maddpg_spread3_60k_seeds"] == 1
    assert summ["maddpg_tag3_60k_s"] is None  # 2,024 episodes run: not the full schedule
    assert summ["maddpg_s_per_1k_episodes"]["spread24"] == pytest.approx(10.0)
    assert summ["paper_s_per_1k_episodes_published"]["spread24"] == pytest.approx(
        52421.81 / 60)
    assert summ["marl_e2e_speedup_interleaved_vs_per_agent_24"] == pytest.approx(3.0)
    assert summ["marl_e2e_speedup_fast_vs_per_agent_by_agents"]["3"] == pytest.approx(5.0)
    assert summ["marl_e2e_speedup_packed_vs_interleaved_by_agents"] == pytest.approx(
        {"3": 0.5, "24": 2 / 3})
    # the fast mode (shared indices) is not a layout: the fastest faithful one is named
    assert summ["marl_e2e_fastest_faithful_layout_by_agents"] == {"3": "interleaved",
                                                                  "24": "interleaved"}
    tp = _report(2)
    for r in tp["results"]["throughput"]:
        if r["mode"] == "packed" and r["agents"] == 3:
            r["steps_per_s"] = 1000.0
    assert script["summarize"](tp)["marl_e2e_fastest_faithful_layout_by_agents"]["3"] == "packed"


def test_files_before_schema_2_keep_their_keys(script: dict) -> None:
    summ = script["summarize"](_report(None))
    assert "maddpg_spread3_60k_s" not in summ
    assert "marl_e2e_speedup_interleaved_vs_per_agent_24" not in summ
    assert "extrapolated_60k_s" in summ
