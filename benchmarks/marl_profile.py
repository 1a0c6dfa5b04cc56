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
import time
from pathlib import Path

import jax

from jaxrl_pim import report
from jaxrl_pim.marl.maddpg import MARLConfig
from jaxrl_pim.marl.profiler import PHASES, format_table, plot_shares, profile_phases

MODES = {
    "original": {"sampling_mode": "faithful", "layout": "per_agent"},
    "fast+interleaved": {"sampling_mode": "fast", "layout": "interleaved"},
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default="benchmarks/results")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    gpu = jax.default_backend() != "cpu"
    sizes = [3, 6, 12, 24, 48] if gpu else [3, 6, 12, 24]
    if args.quick:
        sizes = [3, 6]
    capacity = 1_000_000 if gpu else 25_600
    rows = []
    t_all = time.perf_counter()
    for env in ("spread", "tag"):
        for n in sizes:
            for mode, kw in MODES.items():
                cfg = MARLConfig(env=env, num_agents=n, buffer_capacity=capacity,
                                 learning_starts=min(25_600, capacity), **kw)
                t0 = time.perf_counter()
                prof = profile_phases(cfg, repeats=args.repeats)
                sampling = prof["share"]["sampling"]
                upd = sum(prof["share"][p] for p in PHASES[3:])
                print(f"{env} N={n} {mode}: update phases {upd * 100:.0f}% of training time, "
                      f"sampling {sampling * 100:.0f}% ({time.perf_counter() - t0:.0f} s)",
                      flush=True)
                rows.append({"env": env, "agents": n, "mode": mode, "config": cfg,
                             "profile": prof})
    wall = time.perf_counter() - t_all

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
