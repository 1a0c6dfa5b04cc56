"""Particle-world throughput: environment steps per second of vmapped MPE rollouts.

For every scenario and size, ``jaxrl_pim.envs.mpe.make_rollout`` steps ``--num-envs``
vmapped environments for ``--num-steps`` steps (auto-reset included) under uniform random
actions drawn inside the jitted loop; the time is the best of ``--repeats`` blocked runs
after a compiling warm-up run. Steps per second = ``num_envs * num_steps / best seconds``.

``--clock wall`` (default) times wall seconds; ``--clock process`` counts the CPU seconds of
this process, a load-insensitive figure that equals one idle core's wall time only when XLA
runs on one thread::

    XLA_FLAGS=--xla_cpu_multi_thread_eigen=false taskset -c 0 \\
        python benchmarks/mpe_rollout.py --clock process

Sizes: full -- presets 3 and 24 of both scenarios, 64 envs, 1,000 steps, best of 5;
``--quick`` 200 steps, best of 3; ``--smoke`` spread-3 only, 2 envs, 3 steps, one repeat.
Writes ``mpe_rollout[_quick|_smoke].json`` and a Markdown table (see ``benchmarks/harness.py``
for ``--out`` / ``--publish``).
"""

from __future__ import annotations

import time
from typing import Any

import harness

SIZES = {  # mode -> (scenarios, presets, num_envs, num_steps, repeats)
    "full": (["spread", "tag"], [3, 24], 64, 1000, 5),
    "quick": (["spread", "tag"], [3, 24], 64, 200, 3),
    "smoke": (["spread"], [3], 2, 3, 1),
}


def steps_per_second(env: Any, params: Any, num_envs: int, num_steps: int, repeats: int,
                     seed: int = 0, clock: str = "wall") -> dict[str, Any]:
    """Time :func:`jaxrl_pim.envs.mpe.make_rollout`: ``{"steps_per_s", "seconds" (best run),
    "compile_s" (first call), "num_envs", "num_steps", "clock"}``."""
    import jax

    from jaxrl_pim.envs import mpe

    timer = time.perf_counter if clock == "wall" else time.process_time
    rollout = mpe.make_rollout(env, params, num_envs, num_steps)
    key = jax.random.key(seed)
    t0 = time.perf_counter()
    jax.block_until_ready(rollout(key))
    compile_s = time.perf_counter() - t0
    best = float("inf")
    for i in range(repeats):
        k = jax.random.fold_in(key, i + 1)
        t0 = timer()
        jax.block_until_ready(rollout(k))
        best = min(best, timer() - t0)
    return {"steps_per_s": num_envs * num_steps / best, "seconds": best,
            "compile_s": compile_s, "num_envs": num_envs, "num_steps": num_steps,
            "clock": clock}


def summarize(report: dict[str, Any]) -> dict[str, Any]:
    """Steps per second per world (``<env>_steps_per_s``) and the device."""
    out: dict[str, Any] = {f"{r['env']}_steps_per_s": r["steps_per_s"]
                           for r in report["results"]["rows"]}
    out["device"] = report["system"].get("device_kind")
    return out


def render_markdown(report: dict[str, Any]) -> str:
    """The throughput table of a stored report."""
    cfg = report["config"]
    lines = [
        f"Device: {report['system'].get('device_kind')}; {cfg['num_envs']} vmapped envs, "
        f"{cfg['num_steps']} steps, best of {cfg['repeats']}, {cfg['clock']} clock.",
        "",
        "| env | agents | steps/s | best run s | compile s |",
        "|---|---:|---:|---:|---:|",
    ]
    for r in report["results"]["rows"]:
        lines.append(f"| {r['env']} | {r['agents']} | {r['steps_per_s']:,.0f} | "
                     f"{r['seconds']:.3f} | {r['compile_s']:.1f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Measure, print the table, write the results file."""
    p = harness.parser(__doc__)
    p.add_argument("--scenarios", nargs="+", choices=["spread", "tag"], default=None,
                   help="worlds to time (default: spread tag; --smoke: spread)")
    p.add_argument("--sizes", type=int, nargs="+", default=None,
                   help="presets (spread: agents; tag: predators) (default: 3 24; --smoke: 3)")
    p.add_argument("--num-envs", type=int, default=None,
                   help="vmapped environments (default: 64; --smoke: 2)")
    p.add_argument("--num-steps", type=int, default=None,
                   help="steps per timed rollout (default: 1000; --quick: 200; --smoke: 3)")
    p.add_argument("--repeats", type=int, default=None,
                   help="timed rollouts, the best is kept (default: 5; --quick: 3; --smoke: 1)")
    p.add_argument("--clock", choices=["wall", "process"], default="wall",
                   help="wall seconds, or CPU seconds of this process (default: wall)")
    args = p.parse_args(argv)

    from jaxrl_pim.xla_env import apply_cpu_workarounds

    apply_cpu_workarounds()
    from jaxrl_pim import report
    from jaxrl_pim.checks import check_int

    run = report.RunRecord()
    mode = "smoke" if args.smoke else "quick" if args.quick else "full"
    scenarios, sizes, num_envs, num_steps, repeats = SIZES[mode]
    cfg = {
        "mode": mode,
        "scenarios": args.scenarios or scenarios,
        "sizes": args.sizes or sizes,
        "num_envs": check_int("--num-envs", args.num_envs or num_envs, lo=1),
        "num_steps": check_int("--num-steps", args.num_steps or num_steps, lo=1),
        "repeats": check_int("--repeats", args.repeats or repeats, lo=1),
        "clock": args.clock,
    }
    path = harness.output_path(args, "mpe_rollout")

    from jaxrl_pim.envs import mpe

    rows, timing = [], {}
    for scenario in cfg["scenarios"]:
        for size in cfg["sizes"]:
            env, params = mpe.make(scenario, size)
            r = steps_per_second(env, params, cfg["num_envs"], cfg["num_steps"],
                                 cfg["repeats"], clock=cfg["clock"])
            rows.append({"scenario": scenario, "preset": size, "env": env.name,
                         "agents": env.num_agents, **r})
            timing[env.name] = r["seconds"]
    stored = harness.write(path, run=run, config=cfg, results={"rows": rows},
                           timing_s=timing, summarize=summarize, markdown=render_markdown)
    print(render_markdown(stored))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
