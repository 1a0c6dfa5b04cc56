"""Phase breakdown of MADDPG training (the paper's Figures 2-4) for growing agent counts.

Every phase of a training step / update round is jitted on its own and timed on a realistic
state (buffers filled with random transitions), see :mod:`jaxrl_pim.marl.profiler`. Two
configurations per size: the original (``faithful`` per-agent sampling, ``per_agent`` layout)
and the optimised one (``fast`` shared indices, ``interleaved`` layout). CPU: 3, 6, 12, 24
agents (3, 6 with ``--quick``); GPU adds 48. Buffer capacity: 25,600 rows on CPU (the
``learning_starts`` fill, to keep 24-agent buffers in memory) and 1e6 rows on GPU, cut to
what fits ``--budget-gib`` (the capacity of every run is in its record).

    python benchmarks/marl_profile.py [--quick | --smoke] [--publish]

With ``--budget-s`` no further run starts once that many seconds have passed; the runs
not started are named in ``results.skipped_by_budget`` and the file is marked incomplete.

While it runs, ``marl_profile[_quick].partial.json`` (and ``.md``) next to the results file
holds the rows measured so far (a results file of its own, ``results.complete`` false), so a
run cut short by a time limit keeps what it measured; it is removed when the run completes.

Summary: for the largest agent count, the share of training time in the update-round phases
(sampling, target-Q, critic, actor, target update) and in sampling alone, per env and
configuration. The shares are ESTIMATED from the per-call times of the separately jitted
phases weighted by how often each runs (a fused training step is not timed phase by phase),
hence the ``estimated_`` in their names.
"""

from __future__ import annotations

import copy
import dataclasses
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as python benchmarks/<name>.py: the package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import jax

from benchmarks import harness
from jaxrl_pim import report
from jaxrl_pim.marl import MARLConfig, make_init
from jaxrl_pim.marl.profiler import PHASES, format_table, plot_shares, profile_phases

MODES = {
    "original": {"sampling_mode": "faithful", "layout": "per_agent"},
    "fast+interleaved": {"sampling_mode": "fast", "layout": "interleaved"},
}
#: What runs once per update round: sampling, target-Q, critic, actor, target update (the
#: "update share" column of the table).
UPDATE_PHASES = PHASES[3:]


def state_bytes(cfg: MARLConfig) -> int:
    """Bytes of the whole training state (buffers, networks, optimisers), from shapes only."""
    shapes = jax.eval_shape(make_init(cfg), jax.random.PRNGKey(0))
    return int(sum(x.size * x.dtype.itemsize for x in jax.tree.leaves(shapes)))


def capacity_that_fits(cfg: MARLConfig, wanted: int, budget_bytes: float) -> int:
    """The largest buffer capacity up to ``wanted`` whose training state fits the budget.

    State bytes are affine in the capacity; the slope and intercept come from two shape-only
    evaluations. The result is rounded down to a multiple of 1,024 rows.
    """
    small, large = 1_024, 2_048
    b1 = state_bytes(dataclasses.replace(cfg, buffer_capacity=small, learning_starts=small))
    b2 = state_bytes(dataclasses.replace(cfg, buffer_capacity=large, learning_starts=small))
    per_row = (b2 - b1) / (large - small)
    fits = int((budget_bytes - (b1 - per_row * small)) / per_row)
    return max(1_024, min(wanted, fits // 1_024 * 1_024))


def sizes(mode: str, gpu: bool) -> dict[str, Any]:
    """Agent counts, envs, capacity, repeats and configurations of a mode (full, quick,
    smoke)."""
    if mode == "smoke":
        return {"sizes": [3], "envs": ["spread"], "capacity": 2_048, "repeats": 1,
                "modes": ["fast+interleaved"]}
    agents = [3, 6, 12, 24, 48] if gpu else [3, 6, 12, 24]
    return {"sizes": agents[:2] if mode == "quick" else agents, "envs": ["spread", "tag"],
            "capacity": 1_000_000 if gpu else 25_600, "repeats": 3, "modes": list(MODES)}


def _share(row: dict[str, Any], phases: tuple[str, ...]) -> float:
    return sum(row["profile"]["share"][p] for p in phases)


def summarize(report_: dict[str, Any]) -> dict[str, Any]:
    """Headline numbers from the stored rows (see the module docstring)."""
    system, results = report_["system"], report_["results"]
    rows = results["rows"]
    summary: dict[str, Any] = {
        "device": f"{system['backend']}: {system['device_count']} x {system['device_kind']}",
        "mode": report_["config"]["mode"],
        "complete": results["complete"],
        "largest_agents": max((r["agents"] for r in rows), default=None),
    }
    for r in rows:
        if r["agents"] != summary["largest_agents"]:
            continue
        tag = f"{r['env']}_largest_{'original' if r['mode'] == 'original' else 'fast'}"
        summary[f"estimated_update_share_{tag}"] = _share(r, UPDATE_PHASES)
        summary[f"estimated_sampling_share_{tag}"] = _share(r, ("sampling",))
    summary["capacity_by_run"] = {f"{r['env']}-{r['agents']}-{r['mode']}": r["capacity"]
                                  for r in rows}
    return summary


def render_markdown(report_: dict[str, Any]) -> str:
    """The phase table (from the stored report)."""
    cfg, rows = report_["config"], report_["results"]["rows"]
    caps = sorted({r["capacity"] for r in rows})
    cap = (f"{caps[0]:,} rows" if len(caps) == 1 else
           f"{caps[0]:,}-{caps[-1]:,} rows (cut to fit {cfg['budget_gib']} GiB; per run in "
           "the JSON)")
    return "\n".join([
        f"Device: {report_['summary']['device']}; buffer capacity {cap}; per-call times "
        f"(best of {cfg['repeats']}) and the share of training time they imply (estimated: "
        "per-call times weighted by call frequency)"
        + ("" if report_["results"]["complete"] else "; INCOMPLETE run") + ".",
        "",
        format_table(rows),
        "",
    ])


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__)
    ap.add_argument("--repeats", type=int, default=None,
                    help="timed calls per phase, best taken (default 3; --smoke 1)")
    ap.add_argument("--sizes", type=int, nargs="+", default=None,
                    help="agent counts (default 3 6 12 24, plus 48 on GPU; --quick 3 6)")
    ap.add_argument("--capacity", type=int, default=None,
                    help="buffer rows (default 1e6 on GPU, 25,600 on CPU)")
    ap.add_argument("--budget-gib", type=float, default=20.0,
                    help="device memory the training state may take; larger buffers are cut "
                    "to fit (the profiler also holds a filled copy while timing; default 20)")
    harness.add_budget(ap, "run (the file is then marked incomplete)")
    args, run, mode = harness.start(ap, argv, __file__, cpu_workarounds=False)
    gpu = jax.default_backend() != "cpu"
    size = sizes(mode, gpu)
    agent_counts = args.sizes or size["sizes"]
    capacity = args.capacity or size["capacity"]
    repeats = args.repeats or size["repeats"]
    out = harness.output_path(args, "marl_profile")
    partial = out.with_name(f"{out.stem}.partial.json")
    budget = args.budget_gib * 2**30
    modes = {name: MODES[name] for name in size["modes"]}
    config = {"mode": mode, "sizes": agent_counts, "envs": size["envs"], "modes": modes,
              "capacity": capacity, "budget_gib": args.budget_gib, "repeats": repeats}
    rows: list[dict[str, Any]] = []
    skipped: list[str] = []
    time_left = harness.Budget(args.budget_s)
    for env in size["envs"]:
        for n in agent_counts:
            for mode_name, kw in modes.items():
                if rows and time_left.spent():
                    skipped.append(f"{env}-{n}-{mode_name}")
                    continue
                base = MARLConfig(env=env, num_agents=n, **kw)
                cap = capacity_that_fits(base, capacity, budget)
                if cap < capacity:
                    print(f"{env} N={n}: {capacity:,} rows need more than {args.budget_gib} GiB;"
                          f" using {cap:,} rows", flush=True)
                cfg = MARLConfig(env=env, num_agents=n, buffer_capacity=cap,
                                 learning_starts=min(25_600, cap), **kw)
                t0 = time.perf_counter()
                prof = profile_phases(cfg, repeats=repeats)
                row = {"env": env, "agents": n, "mode": mode_name, "config": cfg,
                       "capacity": cap, "profile": prof}
                print(f"{env} N={n} {mode_name}: update phases "
                      f"{_share(row, UPDATE_PHASES) * 100:.0f}% of training time, sampling "
                      f"{_share(row, ('sampling',)) * 100:.0f}% "
                      f"({time.perf_counter() - t0:.0f} s)", flush=True)
                rows.append(row)
                # what is measured so far survives a run cut short (time-limited hosts)
                report.write_results(partial, run=copy.copy(run), config=config,
                                     results={"rows": rows, "complete": False},
                                     timing_s={"total": time.perf_counter() - time_left.start},
                                     summarize=summarize, markdown=render_markdown)
    results: dict[str, Any] = {"rows": rows, "complete": not skipped}
    if skipped:
        print(f"--budget-s {args.budget_s:g} spent; not run: {', '.join(skipped)}", flush=True)
        results["skipped_by_budget"] = skipped
    harness.write(out, run=run, config=config, results=results,
                  timing_s={"total": time.perf_counter() - time_left.start}, summarize=summarize,
                  markdown=render_markdown)
    partial.unlink(missing_ok=True)
    partial.with_suffix(".md").unlink(missing_ok=True)
    device = f"{jax.default_backend()}: {len(jax.devices())} x {jax.devices()[0].device_kind}"
    plot_shares(rows, str(out.with_suffix(".png")), f"MADDPG phase shares ({device})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
