"""Quality reached by the lanes trainer on the paper's settings, against the optimal policy.

For each setting: collect a uniform-random dataset, train with 2,000 lanes (sync period 50
unless stated), evaluate the greedy policy over 1,000 episodes and compare with the optimal
policy from value iteration (same evaluation episodes). The paper column holds the figures
published for SwiftRL on UPMEM PIM (not measured here).

    python benchmarks/tabular_quality.py [--publish]   # full: FrozenLake and CliffWalking 1M
                                                       # rows, Taxi 5M, 2,000 episodes
    python benchmarks/tabular_quality.py --quick       # datasets / 10, 300 episodes
    python benchmarks/tabular_quality.py --smoke       # one tiny setting (seconds)

Summary: ``<env>_q_seq_int32_return`` and ``<env>_optimal_return`` (sync period 50),
``max_gap_to_optimal`` (largest ``optimal - greedy`` return over all settings).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as python benchmarks/<name>.py: the package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import jax

from benchmarks import harness
from jaxrl_pim import data as data_lib
from jaxrl_pim import envs
from jaxrl_pim.tabular import TabularConfig, evaluate, value_iteration
from jaxrl_pim.tabular.runner import describe, run

# (env, rows, algo, dtype, sync_period)
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
SMOKE = [("frozenlake", 10_000, "q", "int32", 10)]
#: Published SwiftRL (PIM) greedy returns for (env, algo, sync period): paper figures.
PAPER = {
    ("frozenlake", "q", 10): 0.74, ("frozenlake", "q", 25): 0.7295,
    ("frozenlake", "q", 50): 0.70, ("frozenlake", "sarsa", 50): 0.71,
    ("taxi", "q", 50): -7.9, ("taxi", "sarsa", 50): -8.8,
}


def sizes(mode: str) -> dict[str, Any]:
    """Settings, episodes, lanes and evaluation episodes of a mode (full, quick, smoke)."""
    if mode == "smoke":
        return {"settings": SMOKE, "episodes": 20, "lanes": 50, "eval_episodes": 100}
    if mode == "quick":
        return {"settings": [(e, r // 10, a, d, t) for e, r, a, d, t in FULL], "episodes": 300,
                "lanes": 2000, "eval_episodes": 1000}
    return {"settings": FULL, "episodes": 2000, "lanes": 2000, "eval_episodes": 1000}


def summarize(report: dict[str, Any]) -> dict[str, Any]:
    """Headline numbers from the stored records (see the module docstring)."""
    system, runs = report["system"], report["results"]["runs"]
    summary: dict[str, Any] = {
        "device": f"{system['backend']}: {system['device_count']} x {system['device_kind']}",
        "mode": report["config"]["mode"],
    }
    for r in runs:
        if r["variant"] == "Q-SEQ-INT32" and r["sync_period"] == 50:
            summary[f"{r['env']}_q_seq_int32_return"] = r["mean_return"]
            summary[f"{r['env']}_optimal_return"] = r["optimal_mean_return"]
    summary["max_gap_to_optimal"] = max(
        (r["optimal_mean_return"] - r["mean_return"] for r in runs), default=None)
    return summary


def render_markdown(report: dict[str, Any]) -> str:
    """The results table (from the stored report)."""
    cfg, runs = report["config"], report["results"]["runs"]
    lines = [
        f"Device: {report['summary']['device']}; {cfg['episodes']:,} episodes, "
        f"{cfg['lanes']:,} lanes, greedy returns over {cfg['eval_episodes']:,} evaluation "
        "episodes (the same episodes for the optimal policy). Paper: figures published for "
        "SwiftRL on PIM, not measured here.",
        "",
        "| env | variant | tau | rows | greedy return | optimal | paper |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in runs:
        paper = "" if r["paper"] is None else f"{r['paper']}"
        lines.append(f"| {r['env']} | {r['variant']} | {r['sync_period']} | {r['rows']:,} | "
                     f"{r['mean_return']:.4f} | {r['optimal_mean_return']:.4f} | {paper} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = harness.parser(__doc__)
    parser.add_argument("--only", default=None, metavar="ENV",
                        help="run only the settings of this env (default: all)")
    args = parser.parse_args(argv)
    run_record = harness.record(args)
    mode = harness.mode_of(args)
    size = sizes(mode)
    out = harness.output_path(args, "tabular_quality")
    records = []
    t_all = time.perf_counter()
    for env_name, rows, algo, dtype, tau in size["settings"]:
        if args.only and env_name != args.only:
            continue
        env, params = envs.make(env_name)
        model = envs.tabular_model(env)
        cfg = TabularConfig(model.num_states, model.num_actions, algo=algo, dtype=dtype,
                            num_cores=size["lanes"], sync_period=tau,
                            num_episodes=size["episodes"])
        t0 = time.perf_counter()
        data = data_lib.collect(env, params, jax.random.key(0), rows)
        res = run(cfg, data, jax.random.key(1))
        ev = evaluate(env, params, res.q_table, jax.random.key(2), size["eval_episodes"])
        opt = evaluate(env, params, value_iteration(model, cfg.gamma), jax.random.key(2),
                       size["eval_episodes"])
        rec = {
            **describe(cfg), "env": env_name, "rows": rows, "sync_period": tau,
            "episodes": size["episodes"], "mean_return": ev.mean_return,
            "success_rate": ev.success_rate, "optimal_mean_return": opt.mean_return,
            "paper": PAPER.get((env_name, algo, tau)), "updates_per_s": res.updates_per_s,
            "timing_s": res.timing_s, "wall_s": time.perf_counter() - t0,
        }
        records.append(rec)
        print(f"{env_name:12s} {rec['variant']:16s} tau={tau:3d} rows={rows:>9,d} "
              f"return={ev.mean_return:8.4f} optimal={opt.mean_return:8.4f} "
              f"paper={rec['paper']} ({rec['wall_s']:.0f} s)", flush=True)
    config = {"mode": mode, "episodes": size["episodes"], "lanes": size["lanes"],
              "eval_episodes": size["eval_episodes"], "only": args.only,
              "settings": [dict(zip(("env", "rows", "algo", "dtype", "sync_period"), s,
                                    strict=True)) for s in size["settings"]]}
    harness.write(out, run=run_record, config=config, results={"runs": records},
                  timing_s={"total": time.perf_counter() - t_all}, summarize=summarize,
                  markdown=render_markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
