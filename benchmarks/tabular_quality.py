"""Quality reached by the lanes trainer on the paper's settings, against the optimal policy.

For each setting: collect a uniform-random dataset, train with 2,000 lanes (sync period 50
unless stated), evaluate the greedy policy over 1,000 episodes and compare with the optimal
policy from value iteration. Writes ``benchmarks/results/tabular_quality.json`` (with a
``summary``) and ``tabular_quality.md``.

    python benchmarks/tabular_quality.py            # full: FrozenLake 1M and Taxi 5M
    python benchmarks/tabular_quality.py --quick    # smaller datasets and fewer episodes
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import jax

from jaxrl_pim import data as data_lib
from jaxrl_pim import envs
from jaxrl_pim.report import device_label, make_report, write_json
from jaxrl_pim.tabular import TabularConfig, evaluate, value_iteration
from jaxrl_pim.tabular.runner import describe, run

RESULTS = Path(__file__).resolve().parent / "results"

# (env, rows, algo, dtype, sync_period) ; paper figures from reference.md section 1
FULL = [
    ("frozenlake", 1_000_000, "q", "int32", 50),
    ("frozenlake", 1_000_000, "q", "fp32", 50),
    ("frozenlake", 1_000_000, "q", "int32", 10),
    ("frozenlake", 1_000_000, "q", "int32", 25),
    ("frozenlake", 1_000_000, "sarsa", "int32", 50),
    ("taxi", 5_000_000, "q", "int32", 50),
    ("taxi", 5_000_000, "sarsa", "int32", 50),
    ("cliffwalking", 1_000_000, "q", "int32", 50),
]
PAPER = {
    ("frozenlake", "q", 10): 0.74, ("frozenlake", "q", 25): 0.7295,
    ("frozenlake", "q", 50): 0.70, ("frozenlake", "sarsa", 50): 0.71,
    ("taxi", "q", 50): -7.9, ("taxi", "sarsa", 50): -8.8,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--episodes", type=int, default=None)
    parser.add_argument("--only", default=None, help="run only settings of this env")
    parser.add_argument("--out", type=Path, default=RESULTS / "tabular_quality.json")
    args = parser.parse_args(argv)
    episodes = args.episodes or (300 if args.quick else 2000)
    rows_scale = 10 if args.quick else 1
    records = []
    for env_name, rows, algo, dtype, tau in FULL:
        if args.only and env_name != args.only:
            continue
        rows //= rows_scale
        env, params = envs.make(env_name)
        model = envs.tabular_model(env)
        cfg = TabularConfig(model.num_states, model.num_actions, algo=algo, dtype=dtype,
                            num_cores=2000, sync_period=tau, num_episodes=episodes)
        key = jax.random.key(0)
        t0 = time.perf_counter()
        data = data_lib.collect(env, params, key, rows)
        res = run(cfg, data, jax.random.key(1))
        ev = evaluate(env, params, res.q_table, jax.random.key(2), 1000)
        opt = evaluate(env, params, value_iteration(model, cfg.gamma), jax.random.key(2), 1000)
        rec = {
            **describe(cfg), "env": env_name, "rows": rows, "sync_period": tau,
            "episodes": episodes, "mean_return": ev.mean_return,
            "success_rate": ev.success_rate, "optimal_mean_return": opt.mean_return,
            "paper": PAPER.get((env_name, algo, tau)), "updates_per_s": res.updates_per_s,
            "timing_s": res.timing_s, "wall_s": time.perf_counter() - t0,
        }
        records.append(rec)
        print(f"{env_name:12s} {rec['variant']:16s} tau={tau:3d} rows={rows:>9,d} "
              f"return={ev.mean_return:8.4f} optimal={opt.mean_return:8.4f} "
              f"paper={rec['paper']} ({rec['wall_s']:.0f} s)", flush=True)
    summary = {"device": device_label(), "quick": args.quick}
    for r in records:
        if r["variant"] == "Q-SEQ-INT32" and r["sync_period"] == 50:
            summary[f"{r['env']}_q_seq_int32_return"] = r["mean_return"]
            summary[f"{r['env']}_optimal_return"] = r["optimal_mean_return"]
    out = args.out
    write_json(out, make_report({"episodes": episodes, "quick": args.quick, "lanes": 2000},
                                {"runs": records}, {}, summary))
    lines = ["| env | variant | tau | rows | greedy return | optimal | paper |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for r in records:
        paper = "" if r["paper"] is None else f"{r['paper']}"
        lines.append(f"| {r['env']} | {r['variant']} | {r['sync_period']} | {r['rows']:,} | "
                     f"{r['mean_return']:.4f} | {r['optimal_mean_return']:.4f} | {paper} |")
    header = f"Device: {device_label()}; {episodes} episodes, 2,000 lanes.\n\n"
    out.with_suffix(".md").write_text(header + "\n".join(lines) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
