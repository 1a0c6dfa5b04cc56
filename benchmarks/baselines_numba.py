"""Numba CPU baselines for offline tabular Q-learning / SARSA: updates/s per baseline and variant.

Times every baseline of :mod:`jaxrl_pim.testing.tabular_numba` (``sequential``, ``cpu_v1``,
``cpu_v2``, ``lanes_numba``, ``lanes_block_numba``; semantics and signatures in that module)
on every variant {Q-learning, SARSA} x {SEQ, RAN, STR} x {fp32, int32}, on a FrozenLake-like
random dataset (uniform s, a, s'; reward 1 and terminated with probability 0.015). Each cell
is the best of ``--repeats`` runs of ``--episodes`` episodes; updates/s is measured, not
extrapolated, and each record also gives the time 2,000 episodes would take at that rate
(``seconds_2000_episodes_extrapolated``, marked with ``extrapolated_from_episodes``).

    python benchmarks/baselines_numba.py              # 1M rows, 2,000 lanes, 20 episodes
    python benchmarks/baselines_numba.py --quick      # 100k rows, 200 lanes, 10 episodes
    python benchmarks/baselines_numba.py --smoke      # seconds; numbers meaningless

Files: ``baselines_numba[_quick].{json,md,png}`` (see ``benchmarks/harness.py`` for where).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as python benchmarks/<name>.py: the package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import numpy as np

from benchmarks import harness
from jaxrl_pim import report
from jaxrl_pim.checks import check_choice, check_int

FULL_EPISODES = 2000


def summarize(rep: dict[str, Any]) -> dict[str, Any]:
    """Headline numbers from the stored records: per variant the fastest baseline and its
    updates/s, the fastest cell overall and the thread count."""
    rows = rep["results"]["rows"]
    best: dict[str, dict[str, Any]] = {}
    for r in rows:
        name = f"{r['algorithm']}_{r['sampling']}_{r['fmt']}"
        if name not in best or r["updates_per_s"] > best[name]["updates_per_s"]:
            best[name] = {"baseline": r["baseline"], "updates_per_s": r["updates_per_s"]}
    out: dict[str, Any] = {
        "best_baseline_by_variant": {k: v["baseline"] for k, v in best.items()},
        "best_updates_per_s_by_variant": {k: v["updates_per_s"] for k, v in best.items()},
        "best_updates_per_s": max((r["updates_per_s"] for r in rows), default=None),
        "numba_threads": rep["config"]["numba_threads"],
        "rows": rep["config"]["rows"],
        "lanes": rep["config"]["lanes"],
        "episodes_measured": rep["config"]["episodes"],
    }
    return out


def _pick(name: str, text: str, allowed: tuple[str, ...]) -> list[str]:
    picked = [x.strip() for x in text.split(",") if x.strip()]
    if not picked:
        raise ValueError(f"{name} is empty; choose from {', '.join(allowed)}")
    return [check_choice(name, x, allowed) for x in picked]


#: The results' algorithm labels and the ``TabularConfig.algo`` each names.
ALGORITHMS = {"q_learning": "q", "sarsa": "sarsa"}


def main(argv: list[str] | None = None) -> int:
    """Measure updates/s of every baseline x variant; write JSON, Markdown and a PNG plot."""
    from jaxrl_pim.tabular.config import SAMPLINGS, TabularConfig
    from jaxrl_pim.testing import tabular_numba as tn

    p = harness.parser(__doc__)
    p.add_argument("--rows", type=int, default=None,
                   help="dataset rows (default 1,000,000; --quick 100,000; --smoke 4,000)")
    p.add_argument("--lanes", type=int, default=None,
                   help="lanes of lanes_numba / lanes_block_numba (default 2,000; --quick 200; "
                        "--smoke 8)")
    p.add_argument("--block-lanes", type=int, default=0,
                   help="lanes per block of lanes_block_numba (default 0: the module default)")
    p.add_argument("--episodes", type=int, default=None,
                   help="episodes per run (default 20; --quick 10; --smoke 2)")
    p.add_argument("--repeats", type=int, default=None,
                   help="timed runs per cell, fastest reported (default 3; --quick/--smoke 1)")
    p.add_argument("--sync-period", type=int, default=None,
                   help="episodes between lane averages (default 50, at most --episodes)")
    p.add_argument("--baselines", default=None,
                   help=f"comma-separated (default all: {','.join(tn.BASELINES)}; --smoke "
                        "lanes_numba,lanes_block_numba)")
    p.add_argument("--algorithms", default=None,
                   help="comma-separated q_learning,sarsa (default both; --smoke sarsa)")
    p.add_argument("--samplings", default=None,
                   help="comma-separated (default all three; --smoke ran)")
    p.add_argument("--formats", default=None, help="comma-separated (default both)")
    args = p.parse_args(argv)
    run = harness.record(args, None if argv is None else [__file__, *argv])
    size = harness.mode_of(args)
    rows_n = args.rows or {"full": 1_000_000, "quick": 100_000, "smoke": 4_000}[size]
    lanes = args.lanes or {"full": 2000, "quick": 200, "smoke": 8}[size]
    episodes = args.episodes or {"full": 20, "quick": 10, "smoke": 2}[size]
    repeats = args.repeats or (3 if size == "full" else 1)
    sync = args.sync_period or min(50, episodes)
    for name, v in (("--rows", rows_n), ("--lanes", lanes), ("--episodes", episodes),
                    ("--repeats", repeats), ("--sync-period", sync)):
        check_int(name, v, 1)
    check_int("--block-lanes", args.block_lanes, 0)
    if lanes > rows_n:
        raise ValueError(f"--lanes {lanes} exceeds --rows {rows_n}")
    smoke = size == "smoke"  # every kernel variant compiles for seconds: compile few
    baselines = _pick("--baselines", args.baselines or (
        "lanes_numba,lanes_block_numba" if smoke else ",".join(tn.BASELINES)), tn.BASELINES)
    variants = [(a, s, f) for a in _pick("--algorithms", args.algorithms or (
                    "sarsa" if smoke else ",".join(ALGORITHMS)), ALGORITHMS)
                for s in _pick("--samplings", args.samplings or (
                    "ran" if smoke else ",".join(SAMPLINGS)), SAMPLINGS)
                for f in _pick("--formats", args.formats or ",".join(tn.FORMATS), tn.FORMATS)]
    path = harness.output_path(args, "baselines_numba")

    import numba

    data = tn.random_dataset(rows_n, 16, 4)
    n_threads = numba.get_num_threads()
    rows = []
    t_start = time.perf_counter()
    for algo, samp, fmt in variants:
        cfg = TabularConfig(num_states=16, num_actions=4, algo=ALGORITHMS[algo],
                            sampling=samp, dtype=fmt, num_cores=lanes, num_episodes=episodes,
                            sync_period=sync, rng="lcg")
        for b in baselines:
            times, cpus = [], []
            for _ in range(repeats):
                q, sec = tn.run_baseline(b, data, cfg, lanes, args.block_lanes)
                times.append(sec)
                cpus.append(tn.last_timing()["cpu_s"])
            timing = tn.last_timing()
            k = int(np.argmin(times))
            sec, cpu = times[k], cpus[k]
            updates = episodes * timing["rows_used"]  # M mod chunks rows are dropped
            rows.append({
                "baseline": b, "algorithm": algo, "sampling": samp, "fmt": fmt,
                "chunks": timing["chunks"], "block_lanes": timing["block_lanes"],
                "episodes": episodes, "updates": updates, "seconds": sec,
                "seconds_all_repeats": times, "cpu_seconds": cpu,
                "cpu_utilisation": cpu / sec, "updates_per_cpu_s": updates / cpu,
                "updates_per_s": updates / sec,
                "seconds_2000_episodes_extrapolated": sec * FULL_EPISODES / episodes,
                "extrapolated_from_episodes": episodes if episodes != FULL_EPISODES else None,
                "q_mean": float(q.mean()),
            })
            print(f"{b:18s} {algo:10s} {samp:3s} {fmt:5s} {updates / sec:10.3e} updates/s "
                  f"({sec:.3f} s wall, {cpu / sec:.2f} cores busy)", flush=True)
    t_total = time.perf_counter() - t_start
    config = {"size": size, "quick": args.quick, "smoke": args.smoke, "rows": rows_n,
              "states": 16, "actions": 4, "lanes": lanes, "block_lanes": args.block_lanes,
              "episodes": episodes, "sync_period": sync, "repeats": repeats,
              "numba": numba.__version__, "numba_threads": n_threads,
              "dataset": "uniform random s, a, s'; reward 1 + terminated w.p. 0.015",
              "timing": "perf_counter wall seconds of the training loop; each kernel compiles "
                        "on tiny data before its first timed run; fastest of the repeats"}
    results = {"rows": rows}
    rep = harness.write(path, run=run, config=config, results=results,
                        timing_s={"total": t_total}, summarize=summarize,
                        markdown=render_markdown)
    print()
    print(render_markdown(rep))
    try:
        _plot(rows, baselines, variants, path.with_suffix(".png"), rep["system"])
    except Exception as err:  # a missing plotting backend must not lose the measurements
        print(f"plot skipped: {err}", file=sys.stderr)
    return 0


def render_markdown(report: dict[str, Any]) -> str:
    """The ``.md`` table of a stored report (what ``make_docs.py --check`` regenerates)."""
    return _markdown(report["results"]["rows"], report["config"], summarize(report))


def _markdown(rows: list[dict], config: dict, summary: dict) -> str:
    ext = config["episodes"] != FULL_EPISODES
    lines = [
        f"Numba baselines, {config['rows']:,} rows, {config['states']} states x "
        f"{config['actions']} actions, {config['episodes']} episodes, sync every "
        f"{config['sync_period']}, lanes baselines with {config['lanes']} lanes; numba "
        f"{config['numba']} on {config['numba_threads']} threads. Wall time, compile excluded.",
        "",
        "Cores busy = process CPU time / wall time over the timed region (below the thread "
        "count when other processes share the machine)."
        + (f" Seconds for 2,000 episodes are extrapolated from {config['episodes']} episodes "
           "at the measured rate." if ext else ""),
        "",
        "| baseline | algorithm | sampling | format | chunks | updates/s | s for 2,000 ep."
        + (" (extrapolated)" if ext else "") + " | cores busy | updates/CPU-s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['baseline']} | {r['algorithm']} | {r['sampling']} | {r['fmt']} | "
            f"{r['chunks']} | {r['updates_per_s']:.3e} | "
            f"{r['seconds_2000_episodes_extrapolated']:.2f} | {r['cpu_utilisation']:.2f} | "
            f"{r['updates_per_cpu_s']:.3e} |")
    lines += ["", "Fastest baseline per variant:", "", "| variant | baseline | updates/s |",
              "|---|---|---|"]
    for k, b in summary["best_baseline_by_variant"].items():
        lines.append(f"| {k} | {b} | {summary['best_updates_per_s_by_variant'][k]:.3e} |")
    return "\n".join(lines) + "\n"


def _plot(rows: list[dict], baselines: list[str], variants: list[tuple[str, str, str]],
          path: Path, system: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [f"{a[0].upper()}-{s.upper()}-{f.upper()}" for a, s, f in variants]
    fig, ax = plt.subplots(figsize=(12, 4.5))
    width = 0.8 / max(1, len(baselines))
    for j, b in enumerate(baselines):
        vals = [r["updates_per_s"] for r in rows if r["baseline"] == b]
        ax.bar([i + j * width for i in range(len(vals))], vals, width=width, label=b)
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(labels))])
    ax.set_xticklabels(labels, rotation=45, ha="right", fontsize=8)
    ax.set_ylabel("updates / s")
    ax.set_title(f"Numba CPU baselines ({system['cpu']}, {system['cpu_count']} cores)",
                 fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    report.atomic_save(path, lambda p: fig.savefig(p, dpi=120))
    plt.close(fig)


def cli(argv: list[str] | None = None) -> int:
    """``main`` with bad options reported as one line (exit status 2) instead of a traceback."""
    try:
        return main(argv)
    except ValueError as err:
        print(f"baselines_numba: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(cli())
