"""Seeds per hour: S MADDPG seeds vmapped in one program against the same S seeds one after
another, both through the library.

For N = 3 and N = 24 spread agents and S = 1, 4 and 16 seeds: ``vmapped`` is
:func:`jaxrl_pim.marl.seeds.make_train_seeds_from` (all S seeds in one jitted program, split
over the local devices), ``sequential`` is ``jax.jit(make_train_from(config))`` called once per
seed. Both start from the same initial states (``make_init`` of keys 0 .. S-1), are compiled
before timing (compile seconds are recorded apart) and are timed end to end, results blocked,
best of ``--repeats`` whole runs. Seeds per hour = S / seconds x 3600.

The schedule is the paper's (batch 1,024, an update round every 100 env steps, one env)
shortened to ``--episodes`` episodes of 25 steps (default 200: 5,000 steps; ``--quick``
100), so the buffer holds every transition of the run (capacity = steps) and learning starts
after a quarter of them, and not before one batch is stored (the paper's 25,600 would never
be reached); both stated in the file's config. Sizes at which no update round would run are
refused.

    python benchmarks/marl_seeds.py [--quick | --smoke] [--publish]
    python benchmarks/marl_seeds.py --agents 3 --seeds 1 64 --episodes 100   # the GPU suite's

Summary: ``marl_seeds_per_hour_speedup_vmapped_<S>_<N>`` (vmapped over sequential seeds per
hour) for every S and N, and ``marl_seeds_per_hour_vmapped_<S>_<N>``.
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
from jaxrl_pim.marl import MARLConfig, make_init, make_train_from, seeds


def sizes(mode: str) -> dict[str, Any]:
    """Agent counts, seed counts, episodes, repeats and widths of a mode."""
    if mode == "smoke":
        return {"agents": [3], "seeds": [2], "episodes": 2, "repeats": 1,
                "batch_size": 16, "update_every": 10, "hidden": (8,)}
    return {"agents": [3] if mode == "quick" else [3, 24], "seeds": [1, 4, 16],
            "episodes": 100 if mode == "quick" else 200, "repeats": 3 if mode == "quick" else 2,
            "batch_size": 1_024, "update_every": 100, "hidden": (64, 64)}


def config_for(n: int, size: dict[str, Any]) -> MARLConfig:
    """The shortened paper schedule at ``n`` agents (see the module docstring)."""
    steps = size["episodes"] * 25
    if max(size["batch_size"], steps // 4) >= steps:
        raise ValueError(f"{size['episodes']} episodes ({steps} steps) never reach learning "
                         f"(after max(batch {size['batch_size']}, a quarter of the steps)): "
                         "the run would time no update round")
    return MARLConfig(env="spread", num_agents=n, num_episodes=size["episodes"],
                      buffer_capacity=max(steps, size["batch_size"]),
                      batch_size=size["batch_size"],
                      learning_starts=max(size["batch_size"], steps // 4),
                      update_every=size["update_every"], hidden=size["hidden"])


def measure(cfg: MARLConfig, num_seeds: int, repeats: int) -> dict[str, Any]:
    """Seconds of S seeds vmapped and one after another (best of ``repeats``), compile
    seconds, and the update rounds each seed ran (the same in both)."""
    keys = seeds.seed_keys(0, num_seeds)
    mesh = seeds.seed_mesh(num_seeds)
    init_group = seeds.make_init_seeds(cfg, mesh)
    t0 = time.perf_counter()
    group = seeds.make_train_seeds_from(cfg, cfg.num_episodes, mesh).lower(
        init_group(keys)).compile()
    compile_group = time.perf_counter() - t0
    init_one = jax.jit(make_init(cfg))
    t0 = time.perf_counter()
    one = jax.jit(make_train_from(cfg)).lower(init_one(keys[0])).compile()
    compile_one = time.perf_counter() - t0

    def vmapped() -> Any:
        state = init_group(keys)
        jax.block_until_ready(state)
        t = time.perf_counter()
        out = jax.block_until_ready(group(state))
        return time.perf_counter() - t, out

    def sequential() -> Any:
        states = [jax.block_until_ready(init_one(k)) for k in keys]
        t, outs = time.perf_counter(), []
        for s in states:
            outs.append(jax.block_until_ready(one(s)))
        return time.perf_counter() - t, outs

    v = [vmapped() for _ in range(repeats)]
    s = [sequential() for _ in range(repeats)]
    v_s, s_s = min(x[0] for x in v), min(x[0] for x in s)
    return {"seeds": num_seeds, "devices": int(mesh.devices.size),
            "vmapped_s": v_s, "sequential_s": s_s,
            "vmapped_seeds_per_hour": num_seeds / v_s * 3600,
            "sequential_seeds_per_hour": num_seeds / s_s * 3600,
            "compile_vmapped_s": compile_group, "compile_sequential_s": compile_one,
            "update_rounds": int(v[0][1][0].num_updates[0])}


def summarize(report_: dict[str, Any]) -> dict[str, Any]:
    """Headline numbers from the stored rows (see the module docstring)."""
    system = report_["system"]
    summary: dict[str, Any] = {
        "device": f"{system['backend']}: {system['device_count']} x {system['device_kind']}",
        "mode": report_["config"]["mode"], "episodes": report_["config"]["episodes"]}
    for r in report_["results"]["rows"]:
        tag = f"{r['seeds']}_{r['agents']}"
        summary[f"marl_seeds_per_hour_vmapped_{tag}"] = r["vmapped_seeds_per_hour"]
        summary[f"marl_seeds_per_hour_speedup_vmapped_{tag}"] = (
            r["vmapped_seeds_per_hour"] / r["sequential_seeds_per_hour"])
    return summary


def render_markdown(report_: dict[str, Any]) -> str:
    """The seeds-per-hour table (from the stored report)."""
    cfg = report_["config"]
    rows = [(r["agents"], r["seeds"], r["devices"],
             harness.fmt(r["sequential_seeds_per_hour"], ".4g"),
             harness.fmt(r["vmapped_seeds_per_hour"], ".4g"),
             harness.fmt(r["vmapped_seeds_per_hour"] / r["sequential_seeds_per_hour"], ".3g"),
             r["update_rounds"]) for r in report_["results"]["rows"]]
    return "\n".join([
        f"Device: {report_['summary']['device']}; spread, MADDPG, {cfg['episodes']} episodes of "
        f"25 steps (the paper's schedule shortened; capacity = every step, learning after a "
        f"quarter); best of {cfg['repeats']} whole runs, compilation excluded.",
        "",
        *harness.md_table(["agents", "seeds", "devices", "sequential seeds/h",
                           "vmapped seeds/h", "vmapped / sequential", "update rounds"], rows),
        "",
    ])


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__)
    ap.add_argument("--episodes", type=int, default=None,
                    help="episodes per seed (default 200; --quick 100; --smoke 2)")
    ap.add_argument("--repeats", type=int, default=None,
                    help="whole runs timed per variant, best taken (default 2; --quick 3)")
    ap.add_argument("--agents", type=int, nargs="+", default=None, metavar="N",
                    help="agent counts (default 3 24; --quick and --smoke 3)")
    ap.add_argument("--seeds", type=int, nargs="+", default=None, metavar="S",
                    help="seed counts, each vmapped in one program against the same seeds "
                         "one after another (default 1 4 16; --smoke 2)")
    args, run, mode = harness.start(ap, argv, __file__)
    size = sizes(mode)
    if args.episodes:
        size["episodes"] = args.episodes
    for name in ("agents", "seeds"):
        values = getattr(args, name)
        if values and min(values) < 1:
            print(f"marl_seeds.py: --{name} must be >= 1, got {values}", file=sys.stderr)
            return 2
        size[name] = values or size[name]
    repeats = args.repeats or size["repeats"]
    try:
        configs = {n: config_for(n, size) for n in size["agents"]}
    except ValueError as err:
        print(f"marl_seeds.py: {err}", file=sys.stderr)
        return 2
    out = harness.output_path(args, "marl_seeds")
    config = {"mode": mode, "agents": size["agents"], "seeds": size["seeds"],
              "episodes": size["episodes"], "repeats": repeats, "configs": configs}
    rows = []
    t_start = time.perf_counter()
    for n, cfg in configs.items():
        for s in size["seeds"]:
            row = {"agents": n, **measure(cfg, s, repeats)}
            print(f"N={n} S={s}: sequential {row['sequential_seeds_per_hour']:.4g} seeds/h, "
                  f"vmapped {row['vmapped_seeds_per_hour']:.4g} seeds/h", flush=True)
            rows.append(row)
    harness.write(out, run=run, config=config, results={"rows": rows},
                  timing_s={"total": time.perf_counter() - t_start}, summarize=summarize,
                  markdown=render_markdown, show=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
