"""Lanes across processes: what a sync round costs when its reduction crosses processes.

One workload, two layouts of the same two host CPU devices on this machine:

* ``1x2`` -- one process with 2 devices: a sync round's ``lax.psum`` stays inside the process;
* ``2x1`` -- two processes with 1 device each, joined by ``jax.distributed`` on 127.0.0.1:
  the ``psum`` goes through gloo over TCP between the processes.

Every run is one ``jaxrl-pim tabular`` command (``1x2`` with ``--devices 2``; ``2x1`` through
``jaxrl-pim launch --processes 2 --devices-per-process 1``) whose JSON report is read back:
``run_s`` = its ``compute + sync`` (the trainer's run, compilation excluded) and
``sync_step_s`` = its ``sync / rounds`` (one sync step timed alone, best of 5). Workload:
FrozenLake, Q-SEQ-INT32, uniform-random dataset; the sync period varies so the number of
rounds does, the episodes stay fixed. Per layout the cost of one round is the least-squares
slope of ``run_s`` over the rounds (the intercept keeps the work that does not depend on the
rounds, and one-time costs such as gloo opening its connections at the first collective);
the cost of crossing processes per round is the ``2x1`` slope minus the ``1x2`` slope.
Layouts alternate within each repeat, each point keeps its best repeat, and the final
Q-tables of the two layouts are compared (int32: equal bit for bit).

Sizes: full -- 1M transitions, 2,000 lanes, 200 episodes, sync periods 1/2/5/20/100, best of
3; ``--quick`` 100k transitions, 200 lanes, 100 episodes, sync periods 1/10/100, one repeat;
``--smoke`` 4,000 transitions, 8 lanes, 6 episodes, sync period 3 (no slope). Writes
``tabular_multiprocess[_quick|_smoke].json`` and a Markdown table (``benchmarks/harness.py``
for ``--out`` / ``--publish``). The machine's 2 cores are shared by both layouts' devices; a
loaded machine inflates both.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as python benchmarks/<name>.py: the package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks import harness

SIZES = {  # mode -> (transitions, lanes, episodes, sync periods, repeats)
    "full": (1_000_000, 2000, 200, [1, 2, 5, 20, 100], 3),
    "quick": (100_000, 200, 100, [1, 10, 100], 1),
    "smoke": (4000, 8, 6, [3], 1),
}
LAYOUTS = {"1x2": (1, 2), "2x1": (2, 1)}  # name -> (processes, devices per process)
RUN_TIMEOUT_S = 1800


def run_layout(layout: str, cfg: dict[str, Any], sync_period: int, folder: Path) -> dict:
    """One ``jaxrl-pim tabular`` run in ``layout``; the numbers of its report."""
    from jaxrl_pim.cli.launch import process_environment
    from jaxrl_pim.tabular.config import TabularConfig

    processes, devices = LAYOUTS[layout]
    report, q = folder / f"{layout}-{sync_period}.json", folder / f"{layout}-{sync_period}.npy"
    tabular = ["tabular", "--env", "frozenlake", "--algo", "q", "--sampling", "seq",
               "--dtype", "int32", "--cores", str(cfg["lanes"]), "--transitions",
               str(cfg["transitions"]), "--episodes", str(cfg["episodes"]), "--sync-period",
               str(sync_period), "--eval-episodes", "1", "--no-progress", "--seed", "0",
               "--json", str(report), "--save-q", str(q)]
    if processes == 1:
        argv = [*tabular, "--devices", str(devices)]
    else:
        argv = ["launch", "--processes", str(processes), "--devices-per-process",
                str(devices), "--", *tabular]
    env = process_environment(devices)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(harness.ROOT),
                                                      env.get("PYTHONPATH")]))
    proc = subprocess.run([sys.executable, "-m", "jaxrl_pim.cli", *argv], env=env,
                          capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    if proc.returncode != 0:
        raise RuntimeError(f"{layout} run failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    data = json.loads(report.read_text())
    t, res = data["timing_s"], data["results"]
    rounds = TabularConfig(**data["config"]).num_rounds  # the run's own config
    if (res["processes"], res["devices"]) != (processes, processes * devices):
        raise RuntimeError(f"{layout}: the report says {res['processes']} processes, "
                           f"{res['devices']} devices")
    return {
        "layout": layout, "processes": processes, "devices_per_process": devices,
        "sync_period": sync_period, "rounds": rounds,
        "run_s": t["compute"] + t["sync"], "sync_step_s": t["sync"] / rounds,
        "compile_s": t["compile"], "updates_per_s": res["updates_per_s"],
        "q_table": str(q),
    }


def slope(xs: list[float], ys: list[float]) -> float | None:
    """Least-squares slope of ``ys`` over ``xs`` (None with fewer than two distinct xs)."""
    if len(set(xs)) < 2:
        return None
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return (sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
            / sum((x - mx) ** 2 for x in xs))


def _median(values: list[float]) -> float:
    v = sorted(values)
    return v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2


def summarize(report: dict[str, Any]) -> dict[str, Any]:
    """Per layout: seconds per sync round (slope) and per sync step alone (median); the cost
    of crossing processes per round (``2x1`` minus ``1x2``) and the ratio of the sync steps."""
    points = report["results"]["points"]
    out: dict[str, Any] = {}
    for layout in LAYOUTS:
        mine = [p for p in points if p["layout"] == layout]
        out[f"round_s_{layout}"] = slope([p["rounds"] for p in mine], [p["run_s"] for p in mine])
        out[f"sync_step_s_{layout}"] = _median([p["sync_step_s"] for p in mine])
        top = max(mine, key=lambda p: p["sync_period"])
        out[f"updates_per_s_{layout}_sync_period_{top['sync_period']}"] = top["updates_per_s"]
    a, b = out["round_s_1x2"], out["round_s_2x1"]
    out["cross_process_cost_per_round_s"] = None if a is None or b is None else b - a
    out["sync_step_ratio_2x1_over_1x2"] = out["sync_step_s_2x1"] / out["sync_step_s_1x2"]
    out["tables_equal"] = report["results"]["tables_equal"]
    return out


def render_markdown(report: dict[str, Any]) -> str:
    """The table of a stored report."""
    cfg, s = report["config"], report["summary"]
    lines = [
        f"FrozenLake Q-SEQ-INT32, {cfg['transitions']:,} transitions, {cfg['lanes']} lanes, "
        f"{cfg['episodes']} episodes, best of {cfg['repeats']}; "
        f"{report['system'].get('cpu')} ({report['system'].get('cpu_count')} cores).",
        "",
        "| layout | sync period | rounds | run s | sync step s (alone) | updates/s |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for p in report["results"]["points"]:
        lines.append(f"| {p['layout']} | {p['sync_period']} | {p['rounds']} | "
                     f"{p['run_s']:.4f} | {p['sync_step_s']:.2e} | {p['updates_per_s']:.3e} |")

    fmt = functools.partial(harness.fmt, spec=".2e", missing="n/a")

    lines += [
        "",
        f"Seconds per round (slope): 1x2 {fmt(s['round_s_1x2'])}, 2x1 {fmt(s['round_s_2x1'])};"
        f" crossing processes costs {fmt(s['cross_process_cost_per_round_s'])} s per round. "
        f"Sync step alone: 2x1 / 1x2 = {s['sync_step_ratio_2x1_over_1x2']:.2f}. "
        f"Final tables equal across layouts: {s['tables_equal']}.",
    ]
    lines += _round_breakdown(report["results"]["points"], s, fmt)
    return "\n".join(lines) + "\n"


def _round_breakdown(points: list[dict], s: dict[str, Any], fmt: Any) -> list[str]:
    """How firm the per-round slopes are (slopes between adjacent points) and how much of the
    cross-process cost the sync step timed alone accounts for."""
    out = []
    for layout in LAYOUTS:
        mine = sorted((p for p in points if p["layout"] == layout), key=lambda p: p["rounds"])
        steps = [(b["run_s"] - a["run_s"]) / (b["rounds"] - a["rounds"])
                 for a, b in zip(mine, mine[1:], strict=False) if b["rounds"] != a["rounds"]]
        if steps:
            out.append(f"Slope between adjacent points, {layout}: {fmt(min(steps))} to "
                       f"{fmt(max(steps))} s per round (the fit above is over all points).")
    cost, alone = s["cross_process_cost_per_round_s"], s["sync_step_s_2x1"]
    if cost is not None:
        out.append(f"Of the {fmt(cost)} s a round costs more across processes, the sync step "
                   f"timed alone accounts for {fmt(alone)} s (2x1); the remaining "
                   f"{fmt(cost - alone)} s is not broken down by this benchmark.")
    return ["", *out] if out else []


def main(argv: list[str] | None = None) -> int:
    """Measure both layouts, print the table, write the results file."""
    p = harness.parser(__doc__)
    args, run, mode = harness.start(p, argv, __file__)
    import numpy as np

    transitions, lanes, episodes, periods, repeats = SIZES[mode]
    cfg = {"mode": mode, "env": "frozenlake", "variant": "Q-SEQ-INT32",
           "transitions": transitions, "lanes": lanes, "episodes": episodes,
           "sync_periods": periods, "repeats": repeats, "layouts": LAYOUTS}
    path = harness.output_path(args, "tabular_multiprocess")
    best: dict[tuple[str, int], dict] = {}
    tables_equal = True
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(repeats):
            for period in periods:
                tables = {}
                for layout in LAYOUTS:
                    point = run_layout(layout, cfg, period, Path(tmp))
                    tables[layout] = np.load(point.pop("q_table"))
                    print(f"repeat {rep}, sync period {period}, {layout}: "
                          f"run {point['run_s']:.4f} s", flush=True)
                    key = (layout, period)
                    if key not in best or point["run_s"] < best[key]["run_s"]:
                        best[key] = point
                tables_equal &= bool(np.array_equal(tables["1x2"], tables["2x1"]))
    points = [best[(layout, period)] for layout in LAYOUTS for period in periods]
    timing = {f"{p['layout']}_sync_period_{p['sync_period']}": p["run_s"] for p in points}
    harness.write(path, run=run, config=cfg,
                  results={"points": points, "tables_equal": tables_equal},
                  timing_s=timing, summarize=summarize, markdown=render_markdown, show=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
