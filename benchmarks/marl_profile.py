"""Phase breakdown of MADDPG training (the paper's Figures 2-4) for growing agent counts.

Every phase of a training step / update round is jitted on its own and timed on a realistic
state (buffers filled with random transitions), see :mod:`jaxrl_pim.marl.profiler`. Two
configurations per size: the original (``faithful`` per-agent sampling, ``per_agent`` layout)
and the optimised one (``fast`` shared indices, ``interleaved`` layout). CPU: 3, 6, 12, 24
agents (3, 6 with ``--quick``); GPU adds 48. Buffer capacity: 25,600 rows on CPU (the
``learning_starts`` fill, to keep 24-agent buffers in memory) and 1e6 rows on GPU.

    python benchmarks/marl_profile.py [--quick]
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path

import jax

from jaxrl_pim import report
from jaxrl_pim.marl.maddpg import MARLConfig, make_init
from jaxrl_pim.marl.profiler import PHASES, format_table, plot_shares, profile_phases

MODES = {
    "original": {"sampling_mode": "faithful", "layout": "per_agent"},
    "fast+interleaved": {"sampling_mode": "fast", "layout": "interleaved"},
}


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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default="benchmarks/results")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--sizes", type=int, nargs="+", default=None,
                    help="agent counts (default 3 6 12 24, plus 48 on GPU)")
    ap.add_argument("--capacity", type=int, default=None,
                    help="buffer rows (default 1e6 on GPU, 25,600 on CPU)")
    ap.add_argument("--budget-gib", type=float, default=20.0,
                    help="device memory the training state may take; larger buffers are cut "
                    "to fit (the profiler also holds a filled copy while timing)")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    gpu = jax.default_backend() != "cpu"
    sizes = [3, 6, 12, 24, 48] if gpu else [3, 6, 12, 24]
    if args.quick:
        sizes = [3, 6]
    sizes = args.sizes or sizes
    capacity = args.capacity or (1_000_000 if gpu else 25_600)
    budget = args.budget_gib * 2**30
    rows = []
    t_all = time.perf_counter()
    for env in ("spread", "tag"):
        for n in sizes:
            for mode, kw in MODES.items():
                cap = capacity_that_fits(MARLConfig(env=env, num_agents=n, **kw), capacity,
                                         budget)
                if cap < capacity:
                    print(f"{env} N={n}: {capacity:,} rows need more than {args.budget_gib} GiB;"
                          f" using {cap:,} rows", flush=True)
                cfg = MARLConfig(env=env, num_agents=n, buffer_capacity=cap,
                                 learning_starts=min(25_600, cap), **kw)
                t0 = time.perf_counter()
                prof = profile_phases(cfg, repeats=args.repeats)
                sampling = prof["share"]["sampling"]
                upd = sum(prof["share"][p] for p in PHASES[3:])
                print(f"{env} N={n} {mode}: update phases {upd * 100:.0f}% of training time, "
                      f"sampling {sampling * 100:.0f}% ({time.perf_counter() - t0:.0f} s)",
                      flush=True)
                rows.append({"env": env, "agents": n, "mode": mode, "config": cfg,
                             "capacity": cap,
                             "profile": prof})
                # keep what is measured so far if the run is cut short (time-limited hosts)
                report.write_json(out / "marl_profile.partial.json", report.make_report(
                    {"sizes": sizes, "modes": MODES, "repeats": args.repeats},
                    {"rows": rows, "complete": False}, {"total": time.perf_counter() - t_all},
                    {"device": report.device_label()}))
    wall = time.perf_counter() - t_all
    (out / "marl_profile.partial.json").unlink(missing_ok=True)

    def share_of(env: str, n: int, mode: str, phases: tuple[str, ...]) -> float | None:
        for r in rows:
            if (r["env"], r["agents"], r["mode"]) == (env, n, mode):
                return sum(r["profile"]["share"][p] for p in phases)
        return None

    big = max(sizes)
    summary = {
        "device": report.device_label(),
        "capacity": capacity,
        "largest_agents": big,
        "update_share_spread_largest_original": share_of("spread", big, "original", PHASES[3:]),
        "sampling_share_spread_largest_original": share_of("spread", big, "original",
                                                           ("sampling",)),
        "update_share_tag_largest_original": share_of("tag", big, "original", PHASES[3:]),
        "capacity_by_run": {f"{r['env']}-{r['agents']}-{r['mode']}": r["capacity"]
                            for r in rows},
        "gpu_note": None if gpu else "CPU run; 48 agents and 1e6-row buffers only on GPU "
        "(sizes chosen from jax.default_backend()).",
    }
    rep = report.make_report({"quick": args.quick, "sizes": sizes, "modes": MODES,
                              "repeats": args.repeats}, {"rows": rows}, {"total": wall},
                             summary)
    report.write_json(out / "marl_profile.json", rep)
    md = [f"Device: {summary['device']}; buffer capacity {capacity:,} rows; per-call times "
          "(best of repeats) and share of training time weighted by call frequency.", "",
          format_table(rows), ""]
    (out / "marl_profile.md").write_text("\n".join(md))
    plot_shares(rows, str(out / "marl_profile.png"),
                f"MADDPG phase shares ({summary['device']})")
    print(f"wrote {out / 'marl_profile.json'}")


if __name__ == "__main__":
    main()
