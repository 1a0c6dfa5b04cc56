"""What-if study of the PIM cost model (``jaxrl_pim.pim``): where the time of a SwiftRL run
would go on other PIM configurations, and the crossover points.

A computation, not a timing. Sweeps, each from the paper's workload (2,000 episodes, sync
period 50; FrozenLake 16 x 4 with 1M transitions, Taxi 500 x 6 with 5M) on the ``swiftrl``
preset (SwiftRL's own machine: 2,524 DPUs at 425 MHz, serial dataset copies, the fp32 update
promoted to double) unless it says otherwise:

* ``dpus``: FrozenLake Q-SEQ-INT32 with one lane per DPU, 125 .. 2,524 DPUs and beyond
  (5,120, 10,240: the preset with more DPUs);
* ``tasklets``: 1 .. 24 tasklets per DPU splitting each core's updates (SwiftRL uses 1),
  FrozenLake and Taxi Q-SEQ-INT32 on 2,000 DPUs;
* ``sync_period``: Taxi Q-SEQ-INT32, 1 .. 2,000 episodes per sync round;
* ``variants``: the 12 {Q, SARSA} x {SEQ, RAN, STR} x {FP32, INT32} variants on FrozenLake
  (2,000 DPUs) on every preset (``swiftrl``, ``upmem``, ``upmem-v1b``, ``hbm-pim``,
  ``ideal``), each
  next to the CPU time of the same work measured in the published
  ``benchmarks/results/cpu/tabular_scaling.json`` (its ``numba`` section: the fastest CPU
  implementation measured there for that variant on 2,000 lanes and 1M FrozenLake rows --
  the lanes trainer or one of the Numba kernels, named in each record as ``cpu_opponent`` --
  so CPU seconds = 2,000 episodes x 1M updates / its rate); GPU: not measured;
* ``table_size``: Q-SEQ-INT32 over tables of 64 .. 65,536 states x 4 actions (1M rows,
  2,000 DPUs), 1 and 16 tasklets: where the table stops fitting WRAM and MRAM streaming
  starts.

Crossovers (in the summary): the sync period below which the host's sync takes longer than
the kernel; the table size above which the table streams from MRAM; the tasklet count above
which one more tasklet saves under 1 %; and whether, once the table streams, MRAM transfers
dominate the cycles of an update.

Sensitivity: every record is computed again at each end of each unverified cost's range
(``jaxrl_pim.pim.sensitivity``: one parameter at a time, the calibration fitted again;
``results.points`` names them) and keeps its totals there (``total_by_point``) and their range
(``total_band``, ``band_widest``); the summary gives the headline speed-ups' and crossovers'
ranges and the plots draw them as error bars. ``hbm-pim`` and ``ideal`` are bounds with their
own assumptions and do not move. ``--quick`` / ``--smoke`` compute the same and only name the
files. Writes ``pim_whatif[_quick|_smoke].json``, a Markdown table and plots.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as python benchmarks/<name>.py: the package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks import harness

SCALING = Path("benchmarks/results/cpu/tabular_scaling.json")
DPUS = [125, 250, 500, 1000, 2000, 2524, 5120, 10240]
TASKLETS = [1, 2, 4, 8, 11, 12, 16, 24]
PERIODS = [1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2000]
STATES = [64, 256, 1024, 2048, 2049, 3968, 3969, 16384, 65536]  # WRAM edges: 16, 1 tasklets
PHASES = ("transfer_in", "kernel", "sync", "transfer_out")
SYSTEM_ORDER = ("swiftrl", "upmem", "upmem-v1b", "hbm-pim", "ideal")


def _record(sweep: str, x: Any, w: Any, rows: int, system: Any, **extra: Any) -> dict:
    from jaxrl_pim.pim import estimate, model_fields

    e = estimate(w, rows, system).as_dict()
    return {"sweep": sweep, "x": x, "system": system.name, "tasklets": system.tasklets,
            "num_dpus": system.num_dpus, "workload": model_fields(w), "rows": rows,
            **{k: e[k] for k in (*PHASES, "total")}, "work": e["work"], **extra}


def cpu_rates(root: Path) -> dict[str, Any]:
    """The fastest measured CPU updates per second per variant from the published scaling
    file: the lanes trainer (``jax``) or the best Numba kernel, whichever is faster, and
    which one it is (the opponent a user would pick)."""
    data = json.loads((root / SCALING).read_text())
    sec = data["results"]["sections"]["numba"]
    best = {}
    for r in sec["rows"]:
        rates = {"jax": r["jax_updates_per_s"], **r["numba_updates_per_s"]}
        name = max(rates, key=rates.get)
        best[r["variant"]] = (name, rates[name])
    return {"file": str(SCALING), "commit": data["system"]["git_commit"],
            "lanes": sec["lanes"], "rows": sec["rows_per_dataset"],
            "updates_per_s": {v: rate for v, (_, rate) in best.items()},
            "opponent": {v: name for v, (name, _) in best.items()}}


def sweeps(cpu: dict[str, Any], systems: Any = None) -> list[dict[str, Any]]:
    """Every record of the study, on ``systems`` (the presets by name; default
    ``jaxrl_pim.pim.SYSTEMS``)."""
    from jaxrl_pim.pim import SYSTEMS
    from jaxrl_pim.tabular.config import TabularConfig

    systems = SYSTEMS if systems is None else systems
    BASE = systems["swiftrl"]  # noqa: N806  (the sweeps' base preset)

    fl, taxi = dict(num_states=16, num_actions=4), dict(num_states=500, num_actions=6)
    out = []
    for n in DPUS:
        system = dataclasses.replace(BASE, num_dpus=n) if n > BASE.num_dpus else BASE
        out.append(_record("dpus", n, TabularConfig(**fl, dtype="int32", num_cores=n),
                           1_000_000, system))
    for env, rows in (("frozenlake", 1_000_000), ("taxi", 5_000_000)):
        shape = fl if env == "frozenlake" else taxi
        for t in TASKLETS:
            out.append(_record("tasklets", t, TabularConfig(**shape, dtype="int32"), rows,
                               dataclasses.replace(BASE, tasklets=t), env=env))
    for tau in PERIODS:
        out.append(_record("sync_period", tau, TabularConfig(**taxi, dtype="int32",
                                                             sync_period=tau), 5_000_000, BASE))
    for system in (systems[n] for n in SYSTEM_ORDER):
        for algo in ("q", "sarsa"):
            for sampling in ("seq", "ran", "str"):
                for dtype in ("fp32", "int32"):
                    variant = f"{algo.upper()}-{sampling.upper()}-{dtype.upper()}"
                    w = TabularConfig(**fl, algo=algo, sampling=sampling, dtype=dtype,
                                      num_cores=cpu["lanes"])
                    rate = cpu["updates_per_s"].get(variant)
                    cpu_s = None if rate is None else w.num_episodes * cpu["rows"] / rate
                    rec = _record("variants", variant, w, cpu["rows"], system,
                                  cpu_measured_s=cpu_s, gpu_measured_s=None)
                    rec["speedup_over_cpu"] = None if cpu_s is None else cpu_s / rec["total"]
                    rec["cpu_opponent"] = cpu["opponent"].get(variant)
                    out.append(rec)
    for t in (1, 16):
        for s in STATES:
            out.append(_record("table_size", s, TabularConfig(s, 4, dtype="int32"), 1_000_000,
                               dataclasses.replace(BASE, tasklets=t)))
    return out


def with_bands(cpu: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """:func:`sweeps` on the presets, each record with its total at every end of every
    unverified cost's range (``total_by_point``; the sync-period records also
    ``kernel_by_point`` and ``sync_s_per_round_by_point``), the range (``total_band``) and the
    parameter that moves it most (``band_widest``, None if none does); and the points."""
    from jaxrl_pim.pim import sensitivity

    recs = sweeps(cpu)
    points = [{"parameter": u.name, "end": end, "factor": f}
              for u in sensitivity.UNCERTAIN for end, f in (("low", u.low), ("high", u.high))]
    at = [sweeps(cpu, sensitivity.presets_at(p["parameter"], p["factor"])) for p in points]
    for i, r in enumerate(recs):
        r["total_by_point"] = [a[i]["total"] for a in at]
        if r["sweep"] == "sync_period":
            r["kernel_by_point"] = [a[i]["kernel"] for a in at]
            r["sync_s_per_round_by_point"] = [a[i]["work"]["sync_s_per_round"] for a in at]
        every = [*r["total_by_point"], r["total"]]
        r["total_band"] = [min(every), max(every)]
        spread = {p["parameter"]: 0.0 for p in points}
        for p, lo, hi in zip(points[::2], r["total_by_point"][::2], r["total_by_point"][1::2],
                             strict=True):
            spread[p["parameter"]] = abs(hi - lo)
        widest = max(spread, key=spread.get)
        r["band_widest"] = widest if spread[widest] > 1e-9 * r["total"] else None
        if r.get("speedup_over_cpu") is not None:
            cpu_s = r["cpu_measured_s"]
            r["speedup_band"] = [cpu_s / r["total_band"][1], cpu_s / r["total_band"][0]]
    return recs, points


def _median(xs: list[float]) -> float:
    return sorted(xs)[len(xs) // 2]


def summarize(report: dict[str, Any]) -> dict[str, Any]:
    """The crossovers and the headline ratios, computed from the records."""
    recs = report["results"]["records"]

    def sweep(name: str, **match: Any) -> list[dict]:
        return [r for r in recs if r["sweep"] == name
                and all(r.get(k) == v for k, v in match.items())]

    out: dict[str, Any] = {}
    periods = sweep("sync_period")
    dominated = [r["x"] for r in periods if r["sync"] > r["kernel"]]
    out["sync_exceeds_kernel_for_periods_up_to"] = max(dominated) if dominated else None
    k = periods[0]  # continuous crossover: (episodes / period) * seconds per round = kernel
    out["sync_equals_kernel_at_period"] = (
        k["workload"]["num_episodes"] * k["work"]["sync_s_per_round"] / k["kernel"])
    for t in (1, 16):
        fits = [r["x"] for r in sweep("table_size", tasklets=t) if r["work"]["table_in_wram"]]
        out[f"wram_largest_table_states_x4_tasklets_{t}"] = max(fits)
        out[f"wram_largest_table_bytes_tasklets_{t}"] = max(fits) * 4 * 4
        spilled = [r for r in sweep("table_size", tasklets=t) if not r["work"]["table_in_wram"]]
        r = spilled[0]
        share = r["work"]["dma_cycles_per_update"] / (
            r["work"]["dma_cycles_per_update"] + r["work"]["compute_cycles_per_update"])
        out[f"mram_dma_cycle_share_after_spill_tasklets_{t}"] = share
    for env in ("frozenlake", "taxi"):
        ts = sweep("tasklets", env=env)
        base = ts[0]["kernel"]
        out[f"tasklets_kernel_speedup_max_{env}"] = base / min(r["kernel"] for r in ts)
        gains = [b["x"] for a, b in zip(ts, ts[1:], strict=False)
                 if (a["kernel"] - b["kernel"]) / a["kernel"] >= 0.01]
        out[f"tasklets_last_useful_{env}"] = max(gains) if gains else 1
    dp = {r["x"]: r for r in sweep("dpus")}
    out["dpus_speedup_125_to_2524"] = dp[125]["total"] / dp[2524]["total"]
    out["dpus_speedup_2524_to_10240"] = dp[2524]["total"] / dp[10240]["total"]
    npoints = len(report["results"]["points"])

    def ranged(values: Any) -> dict[str, float]:
        """The range of a quantity computed at the presets and at every point."""
        xs = [values(None)] + [values(i) for i in range(npoints)]
        return {"low": min(xs), "high": max(xs)}

    def total(r: dict, i: int | None) -> float:
        return r["total"] if i is None else r["total_by_point"][i]

    out["sync_equals_kernel_at_period_band"] = ranged(lambda i: (
        k["workload"]["num_episodes"]
        * (k["work"]["sync_s_per_round"] if i is None else k["sync_s_per_round_by_point"][i])
        / (k["kernel"] if i is None else k["kernel_by_point"][i])))
    out["dpus_speedup_125_to_2524_band"] = ranged(
        lambda i: total(dp[125], i) / total(dp[2524], i))
    out["dpus_speedup_2524_to_10240_band"] = ranged(
        lambda i: total(dp[2524], i) / total(dp[10240], i))
    for system in SYSTEM_ORDER:
        rows = [r for r in sweep("variants", system=system)
                if r["speedup_over_cpu"] is not None]
        sp = [r["speedup_over_cpu"] for r in rows]
        out[f"speedup_over_cpu_median_{system}"] = _median(sp)
        out[f"speedup_over_cpu_min_{system}"] = min(sp)
        out[f"speedup_over_cpu_median_{system}_band"] = ranged(lambda i, rows=rows: _median(
            [r["cpu_measured_s"] / total(r, i) for r in rows]))
    out["speedup_over_gpu"] = None
    out["cpu_source"] = report["results"]["cpu"]["file"]
    return out


def render_markdown(report: dict[str, Any]) -> str:
    """One table per sweep."""
    recs = report["results"]["records"]

    def table(xlabel: str, rows: list[dict], extra: tuple = ()) -> list[str]:
        head = f"| {xlabel} | " + " | ".join(f"{p} s" for p in (*PHASES, "total"))
        head += " | total range s | moved most by"
        head += "".join(f" | {e}" for e in extra) + " |"
        sep = "|---|" + "---:|" * (len(PHASES) + 2) + "---|" + "---:|" * len(extra)
        lines = [head, sep]
        for r in rows:
            cells = [f"{r[p]:.4g}" for p in (*PHASES, "total")]
            lo, hi = r["total_band"]
            cells += [f"{lo:.4g} to {hi:.4g}", r["band_widest"] or "-"]
            for e in extra:
                v = r.get(e, r["work"].get(e))
                cells.append("n/a" if v is None else f"{v:.3g}" if isinstance(v, float)
                             else str(v))
            lines.append(f"| {r['x']} | " + " | ".join(cells) + " |")
        return lines

    out = ["DPUs (FrozenLake Q-SEQ-INT32, one lane per DPU, `swiftrl`):", ""]
    out += table("DPUs", [r for r in recs if r["sweep"] == "dpus"])
    for env in ("frozenlake", "taxi"):
        out += ["", f"Tasklets per DPU ({env} Q-SEQ-INT32, 2,000 DPUs):", ""]
        out += table("tasklets",
                     [r for r in recs if r["sweep"] == "tasklets" and r.get("env") == env])
    out += ["", "Sync period (Taxi Q-SEQ-INT32, 2,000 DPUs):", ""]
    out += table("sync period", [r for r in recs if r["sweep"] == "sync_period"])
    for system in SYSTEM_ORDER:
        out += ["", f"Variants on `{system}` (FrozenLake, 2,000 DPUs) next to the fastest "
                f"measured CPU run of the same work ({report['results']['cpu']['file']}; "
                "the projection is the model's, the CPU time measured; GPU not measured):", ""]
        out += table("variant",
                     [r for r in recs if r["sweep"] == "variants" and r["system"] == system],
                     ("cpu_opponent", "cpu_measured_s", "speedup_over_cpu"))
    for t in (1, 16):
        out += ["", f"Table size (states x 4 actions, Q-SEQ-INT32, {t} tasklet(s)):", ""]
        out += table("states",
                     [r for r in recs if r["sweep"] == "table_size" and r["tasklets"] == t],
                     ("table_in_wram", "dma_cycles_per_update", "compute_cycles_per_update"))
    return "\n".join(out) + "\n"


def plots(report: dict[str, Any], stem: Path) -> None:
    """Time breakdown per DPU count and per sync period; speed-up over the CPU run."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    recs = report["results"]["records"]
    colors = dict(zip(PHASES, ("tab:blue", "tab:orange", "tab:red", "tab:green"), strict=True))
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, name, xlabel in ((axes[0], "dpus", "DPUs (one lane each)"),
                             (axes[1], "sync_period", "sync period (episodes)")):
        rows = [r for r in recs if r["sweep"] == name]
        xs = [str(r["x"]) for r in rows]
        bottom = [0.0] * len(rows)
        for p in PHASES:
            vals = [r[p] for r in rows]
            ax.bar(xs, vals, bottom=bottom, label=p, color=colors[p])
            bottom = [b + v for b, v in zip(bottom, vals, strict=True)]
        ax.errorbar(xs, bottom, yerr=[[t - r["total_band"][0] for t, r in zip(bottom, rows,
                                                                              strict=True)],
                                      [r["total_band"][1] - t for t, r in zip(bottom, rows,
                                                                              strict=True)]],
                    fmt="none", ecolor="black", capsize=3, label="range over the costs")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("projected seconds (swiftrl)")
        ax.tick_params(axis="x", rotation=45)
    axes[0].set_title("FrozenLake Q-SEQ-INT32")
    axes[1].set_title("Taxi Q-SEQ-INT32, 2,000 DPUs")
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(f"{stem}_breakdown.png", dpi=110)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(11, 4))
    systems = SYSTEM_ORDER
    variants = [r["x"] for r in recs if r["sweep"] == "variants" and r["system"] == "swiftrl"]
    width = 0.16
    for i, system in enumerate(systems):
        rows = [r for r in recs if r["sweep"] == "variants" and r["system"] == system]
        sp = [r["speedup_over_cpu"] for r in rows]
        xs = [j + i * width for j in range(len(variants))]
        ax.bar(xs, sp, width, label=system)
        ax.errorbar(xs, sp, yerr=[[v - r["speedup_band"][0] for v, r in zip(sp, rows,
                                                                            strict=True)],
                                  [r["speedup_band"][1] - v for v, r in zip(sp, rows,
                                                                            strict=True)]],
                    fmt="none", ecolor="black", elinewidth=0.8, capsize=2)
    ax.axhline(1.0, color="black", lw=0.8)
    ax.set_yscale("log")
    ax.set_xticks([j + 2 * width for j in range(len(variants))], variants, rotation=45,
                  ha="right")
    ax.set_ylabel("speed-up over the measured CPU run")
    ax.set_title("FrozenLake, 2,000 lanes, 2,000 episodes: projected PIM vs measured CPU "
                 "(2-core host); bars: range over the unverified costs")
    ax.legend()
    fig.tight_layout()
    fig.savefig(f"{stem}_speedup.png", dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    """Run every sweep, write the results file and the plots, print the table."""
    p = harness.parser(__doc__)
    args = p.parse_args(argv)
    from jaxrl_pim import pim

    run = harness.record(args)
    path = harness.output_path(args, "pim_whatif")
    cpu = cpu_rates(harness.ROOT)
    recs, points = with_bands(cpu)
    cfg = {"mode": harness.mode_of(args),
           "dpus": DPUS, "tasklets": TASKLETS, "sync_periods": PERIODS, "states": STATES,
           "systems": {k: v.as_dict() for k, v in pim.SYSTEMS.items()}}
    stored = harness.write(path, run=run, config=cfg, results={"records": recs, "cpu": cpu,
                                                        "points": points},
                           timing_s={}, summarize=summarize, markdown=render_markdown)
    plots(stored, path.with_suffix(""))
    print(json.dumps(stored["summary"], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
