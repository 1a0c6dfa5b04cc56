"""Replay bytes per stored time step, interleaved against compact (every observation once),
and the largest 48-agent spread buffer that fits one accelerator -- computed, not timed.

For spread and predator-prey (tag presets) at 3, 24 and 48 agents, one env and episodes of 25
steps (the paper's schedule): the bytes of every team's replay buffers over 1e6 rows
(``jaxrl_pim.marl.plan.replay_bytes``, which a test checks against the state arrays) per
stored time step, in the ``interleaved`` layout (the default; ``obs`` and ``next_obs`` both
stored) and in the ``compact`` one, and their ratio. Then the largest capacity whose whole
one-seed train state (``plan.state_bytes``: networks, optimisers, buffers) is at most 141e9
bytes (an H200) and 80e9 bytes (an H100), per layout: arithmetic on the layouts' shapes, hence
the ``computed_`` in the names.

    python benchmarks/replay_bytes.py [--smoke] [--publish]

Summary: ``replay_bytes_per_step_ratio_48`` (compact over interleaved at 48 agents, the worst
of spread and tag), the ratio per world and size, and
``computed_max_capacity_spread48_<141|80>gb_<layout>``.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as python benchmarks/<name>.py: the package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import harness
from jaxrl_pim.marl import MARLConfig, plan

LAYOUTS = ("interleaved", "compact")
ROWS = 1_000_000
BUDGETS_GB = (141, 80)


def sizes(mode: str) -> dict[str, Any]:
    """Agent counts and worlds of a mode."""
    if mode == "smoke":
        return {"agents": [3], "envs": ["spread"]}
    return {"agents": [3, 24, 48], "envs": ["spread", "tag"]}


def largest_capacity(cfg: MARLConfig, budget_bytes: int) -> int:
    """The largest capacity whose one-seed train state is at most ``budget_bytes``: the state
    without its replay part (``plan.state_bytes - plan.replay_bytes``, from shapes) plus the
    replay bytes at that capacity."""
    fixed = plan.state_bytes(cfg) - plan.replay_bytes(cfg)
    lo, hi = 0, 2**30
    while lo < hi:
        mid = (lo + hi + 1) // 2
        fits = fixed + plan.replay_bytes(cfg, mid) <= budget_bytes
        lo, hi = (mid, hi) if fits else (lo, mid - 1)
    return lo


def summarize(report_: dict[str, Any]) -> dict[str, Any]:
    """Headline numbers from the stored rows (see the module docstring)."""
    rows = report_["results"]["rows"]
    summary: dict[str, Any] = {"mode": report_["config"]["mode"]}
    largest = max(r["agents"] for r in rows)
    for r in rows:
        summary[f"replay_bytes_per_step_ratio_{r['env']}{r['agents']}"] = r["ratio"]
    summary[f"replay_bytes_per_step_ratio_{largest}"] = max(
        r["ratio"] for r in rows if r["agents"] == largest)
    for c in report_["results"]["capacities"]:
        summary[f"computed_max_capacity_spread{c['agents']}_{c['budget_gb']}gb_"
                f"{c['layout']}"] = c["capacity"]
    return summary


def render_markdown(report_: dict[str, Any]) -> str:
    """The bytes-per-step table and the capacities (from the stored report)."""
    res = report_["results"]
    rows = [(r["env"], r["agents"], f"{r['bytes_per_step']['interleaved']:,.0f}",
             f"{r['bytes_per_step']['compact']:,.0f}", f"{r['ratio']:.3f}") for r in res["rows"]]
    caps = [(c["agents"], c["layout"], f"{c['budget_gb']}e9",
             f"{c['capacity']:,}") for c in res["capacities"]]
    return "\n".join([
        f"Computed (not timed): replay bytes per stored time step over {ROWS:,} rows, one env, "
        "episodes of 25 steps; compact = every observation stored once.",
        "",
        *harness.md_table(["world", "agents", "interleaved B/step", "compact B/step",
                           "compact / interleaved"], rows),
        "",
        "Largest spread capacity (rows) whose one-seed train state fits the bytes (computed "
        "from the layouts):",
        "",
        *harness.md_table(["agents", "layout", "bytes", "capacity"], caps),
        "",
    ])


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__)
    args, run, mode = harness.start(ap, argv, __file__)
    size = sizes(mode)
    out = harness.output_path(args, "replay_bytes")
    t0 = time.perf_counter()
    rows = []
    for env in size["envs"]:
        for n in size["agents"]:
            base = MARLConfig(env=env, num_agents=n, buffer_capacity=ROWS)
            per_step = {lay: plan.replay_bytes(dataclasses.replace(base, layout=lay)) / ROWS
                        for lay in LAYOUTS}
            rows.append({"env": env, "agents": n, "bytes_per_step": per_step,
                         "ratio": per_step["compact"] / per_step["interleaved"]})
    big = max(size["agents"])
    capacities = [{"agents": big, "layout": lay, "budget_gb": gb,
                   "capacity": largest_capacity(
                       MARLConfig(num_agents=big, layout=lay), gb * 10**9)}
                  for gb in BUDGETS_GB for lay in LAYOUTS]
    config = {"mode": mode, "rows": ROWS, "num_envs": 1, "episode_length": 25,
              "agents": size["agents"], "envs": size["envs"], "budgets_gb": list(BUDGETS_GB)}
    harness.write(out, run=run, config=config,
                  results={"rows": rows, "capacities": capacities},
                  timing_s={"total": time.perf_counter() - t0}, summarize=summarize,
                  markdown=render_markdown, show=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
