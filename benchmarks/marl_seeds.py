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

``--fill`` (the GPU suite's first part) asks another question: how many seeds fill the device.
For each point ``N:S`` of ``--points`` (default ``3:1,64,16,256 24:1,16``: the ratio the suite
files first comes first) S seeds run vmapped in one program on the paper's schedule in two
pieces of ``--piece-episodes`` episodes (default 1,024, the paper's 25,600-step warm-up): the
first piece stores transitions and runs no update round (its time per env step is the per-step
cost without updates), the second runs an update round every 100 env steps (batch 1,024, 2x64
networks), as every later piece of the paper's schedule does. The buffer holds both pieces
(capacity = their steps). A point whose training states do not fit by the library's memory
planner (:func:`jaxrl_pim.marl.plan.memory_plan`) is skipped and says so; with ``--budget-s``
no point starts once the budget is spent. Each point is compiled once (compile seconds apart)
and its first piece run once on other seeds' states (a first execution pays one-time costs);
then each piece is timed once, results blocked. No sequential baseline runs: the comparison is
S seeds in one program against one seed alone, in the same run. Summary (prefixed ``gpu_`` on
an accelerator): ``<p>marl_seeds_per_hour_ratio_<S>_<N>`` (seeds per hour of S vmapped seeds
over one seed's, from the pieces with updates: ``S t_1 / t_S``),
``<p>marl_us_per_env_step_<N>`` (one seed, the piece without updates, microseconds per env
step) and ``<p>marl_s_per_1000_episodes_<S>_<N>`` (the group's seconds per 1,000 episodes with
updates).

    python benchmarks/marl_seeds.py --fill                 # the GPU suite's tier 1
    python benchmarks/marl_seeds.py --fill --points 3:1,4  # any host
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
from jaxrl_pim.marl import MARLConfig, make_init, make_train_from, plan, seeds

#: ``--fill`` writes ``marl_seeds_fill[_quick].json`` (make_docs accepts the name).
FILE_TAGS = ("fill",)
#: ``--fill``'s default points (agents: seed counts), most wanted first.
FILL_POINTS = {"full": "3:1,64,16,256 24:1,16", "quick": "3:1,16,64",
               "smoke": "3:1,2"}
#: ``--fill``'s piece length in episodes: the paper's warm-up, ceil(25,600 / 25).
FILL_PIECE_EPISODES = {"full": 1_024, "quick": 1_024, "smoke": 2}


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


# ------------------------------------------------------------------ --fill: seeds filling a device


def parse_points(text: str) -> list[tuple[int, int]]:
    """``"3:1,64 24:1,16"`` -> ``[(3, 1), (3, 64), (24, 1), (24, 16)]`` (agents, seeds), in
    order. Raises ValueError naming the bad item."""
    points = []
    for item in text.split():
        n, _, ss = item.partition(":")
        try:
            pts = [(int(n), int(x)) for x in ss.split(",")]
        except ValueError:
            pts = []
        if not pts or min(min(p) for p in pts) < 1:
            raise ValueError(f"--points takes N:S[,S...] items with N, S >= 1; got {item!r}")
        points += pts
    return points


def fill_config(n: int, piece: int, smoke: bool) -> MARLConfig:
    """The paper's schedule over two pieces of ``piece`` episodes: learning starts after the
    first piece, the buffer holds both (see the module docstring)."""
    steps = piece * 25
    if smoke:
        return MARLConfig(env="spread", num_agents=n, num_episodes=2 * piece,
                          buffer_capacity=2 * steps, batch_size=16, learning_starts=steps,
                          update_every=10, hidden=(8,))
    return MARLConfig(env="spread", num_agents=n, num_episodes=2 * piece,
                      buffer_capacity=2 * steps, batch_size=1_024, learning_starts=steps,
                      update_every=100, hidden=(64, 64))


def measure_fill(cfg: MARLConfig, num_seeds: int, piece: int) -> dict[str, Any]:
    """One point of ``--fill``: compile, one throwaway run of the first piece (other seeds'
    states), then the piece without and the piece with updates."""
    keys = seeds.seed_keys(0, num_seeds)
    mesh = seeds.seed_mesh(num_seeds)
    state = jax.block_until_ready(seeds.make_init_seeds(cfg, mesh)(keys))
    t0 = time.perf_counter()
    # the static schedule: the first piece (warm-up) and the second (rounds) are two programs
    fns = [seeds.make_train_seeds_from(cfg, piece, mesh, start).lower(state).compile()
           for start in (0, piece)]
    compile_s = time.perf_counter() - t0
    # a first execution pays one-time costs: a throwaway run of the first piece on other states
    jax.block_until_ready(
        fns[0](seeds.make_init_seeds(cfg, mesh)(seeds.seed_keys(10_000, num_seeds))))
    times, rounds = [], []
    for fn in fns:
        before = int(state.num_updates[0])
        t0 = time.perf_counter()
        state, _ = jax.block_until_ready(fn(state))
        times.append(time.perf_counter() - t0)
        rounds.append(int(state.num_updates[0]) - before)
    steps = piece * 25
    return {"seeds": num_seeds, "devices": int(mesh.devices.size), "piece_episodes": piece,
            "compile_s": compile_s, "no_update_piece_s": times[0], "update_piece_s": times[1],
            "update_rounds": rounds, "us_per_env_step_no_updates": times[0] / steps * 1e6,
            "s_per_1000_episodes": times[1] / piece * 1000,
            "seeds_per_hour_update_piece": num_seeds / times[1] * 3600}


def run_fill(points: list[tuple[int, int]], piece: int, mode: str,
             budget: harness.Budget) -> list[dict[str, Any]]:
    """Every point of ``--fill`` in order, skipped (with the reason) past the budget or when
    the library's memory planner (:func:`jaxrl_pim.marl.plan.memory_plan`) says its states do
    not fit; a failing point is recorded with its error and the rest run."""
    rows = []
    for n, s in points:
        cfg = fill_config(n, piece, mode == "smoke")
        mp = plan.memory_plan(cfg, s, devices=seeds.seed_mesh(s).devices.size)
        row: dict[str, Any] = {"agents": n, "seeds": s, "config": cfg,
                               "state_bytes": s * mp.seed_bytes}
        if budget.spent():
            row["skipped"] = "--budget-s spent"
        elif not mp.fits:
            row["skipped"] = (f"{mp.seeds_per_device} states of {plan.human_bytes(mp.seed_bytes)}"
                              f" over the {plan.human_bytes(mp.usable_bytes)} usable "
                              f"({mp.source})")
        else:
            try:
                row.update(measure_fill(cfg, s, piece))
            except Exception as err:  # noqa: BLE001 - recorded; the other points run
                row["error"] = f"{type(err).__name__}: {str(err)[:300]}"
        rows.append(row)
        what = (f"{row['s_per_1000_episodes']:.3g} s per 1,000 episodes with updates, "
                f"{row['us_per_env_step_no_updates']:.3g} us per env step without"
                if "s_per_1000_episodes" in row else row.get("skipped") or row.get("error"))
        print(f"[fill] N={n} S={s}: {what}", flush=True)
    return rows


def summarize_fill(rows: list[dict[str, Any]], prefix: str) -> dict[str, Any]:
    """``--fill``'s summary keys (module docstring) from its stored rows."""
    out: dict[str, Any] = {}
    ok = [r for r in rows if r.get("update_piece_s") is not None]
    one = {r["agents"]: r for r in ok if r["seeds"] == 1}
    for r in ok:
        n, s = r["agents"], r["seeds"]
        out[f"{prefix}marl_s_per_1000_episodes_{s}_{n}"] = r["s_per_1000_episodes"]
        if n in one:
            out[f"{prefix}marl_seeds_per_hour_ratio_{s}_{n}"] = (
                s * one[n]["update_piece_s"] / r["update_piece_s"])
    for n, r in one.items():
        out[f"{prefix}marl_us_per_env_step_{n}"] = r["us_per_env_step_no_updates"]
    out["fill_not_measured"] = [f"{r['agents']}:{r['seeds']}: "
                                f"{r.get('skipped') or r.get('error')}"
                                for r in rows if r.get("update_piece_s") is None]
    return out


def summarize(report_: dict[str, Any]) -> dict[str, Any]:
    """Headline numbers from the stored rows (see the module docstring)."""
    system = report_["system"]
    summary: dict[str, Any] = {
        "device": f"{system['backend']}: {system['device_count']} x {system['device_kind']}",
        "mode": report_["config"]["mode"]}
    if "fill" in report_["results"]:
        prefix = "gpu_" if system["backend"] in harness.ACCELERATORS else ""
        summary["piece_episodes"] = report_["config"]["piece_episodes"]
        return {**summary, **summarize_fill(report_["results"]["fill"], prefix)}
    summary["episodes"] = report_["config"]["episodes"]
    for r in report_["results"]["rows"]:
        tag = f"{r['seeds']}_{r['agents']}"
        summary[f"marl_seeds_per_hour_vmapped_{tag}"] = r["vmapped_seeds_per_hour"]
        summary[f"marl_seeds_per_hour_speedup_vmapped_{tag}"] = (
            r["vmapped_seeds_per_hour"] / r["sequential_seeds_per_hour"])
    return summary


def render_fill(report_: dict[str, Any]) -> str:
    """``--fill``'s table (from the stored report)."""
    rows = []
    for r in report_["results"]["fill"]:
        if r.get("update_piece_s") is None:
            rows.append((r["agents"], r["seeds"], harness.fmt(r["state_bytes"] / 2**30, ".3g"),
                         f"not measured: {r.get('skipped') or r.get('error')}", "", "", "", ""))
            continue
        one = next((o for o in report_["results"]["fill"] if o["agents"] == r["agents"]
                    and o["seeds"] == 1 and o.get("update_piece_s") is not None), None)
        ratio = None if one is None else r["seeds"] * one["update_piece_s"] / r["update_piece_s"]
        rows.append((r["agents"], r["seeds"], harness.fmt(r["state_bytes"] / 2**30, ".3g"),
                     harness.fmt(r["s_per_1000_episodes"], ".3g"),
                     harness.fmt(r["us_per_env_step_no_updates"], ".3g"),
                     harness.fmt(r["seeds_per_hour_update_piece"], ".4g"),
                     harness.fmt(ratio, ".3g"), r["update_rounds"][1]))
    cfg = report_["results"]["fill"][0]["config"] if report_["results"]["fill"] else {}
    return "\n".join([
        f"Device: {report_['summary']['device']}; spread, MADDPG, S seeds vmapped in one "
        f"program; two pieces of {report_['config']['piece_episodes']:,} episodes (the first "
        f"without update rounds, the second with one every {cfg.get('update_every')} env "
        f"steps, batch {cfg.get('batch_size')}), each timed once after a throwaway run of "
        "the first piece, compilation excluded.", "",
        *harness.md_table(["agents", "seeds", "state GiB", "s per 1,000 episodes",
                           "us per env step, no updates", "seeds/h",
                           "seeds/h over one seed's", "update rounds timed"], rows), ""])


def render_markdown(report_: dict[str, Any]) -> str:
    """The seeds-per-hour table (from the stored report)."""
    if "fill" in report_["results"]:
        return render_fill(report_)
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
    ap.add_argument("--fill", action="store_true",
                    help="measure how many seeds fill the device instead (module docstring; "
                         "writes marl_seeds_fill.json; default: off)")
    ap.add_argument("--points", default=None, metavar="'N:S,S ...'",
                    help=f"--fill's points (default '{FILL_POINTS['full']}'; --quick "
                         f"'{FILL_POINTS['quick']}'; --smoke '{FILL_POINTS['smoke']}')")
    ap.add_argument("--piece-episodes", type=int, default=None,
                    help="--fill's piece length (default 1024; --smoke 2)")
    harness.add_budget(ap, "point of --fill")
    args, run, mode = harness.start(ap, argv, __file__)
    if args.fill:
        return main_fill(args, run, mode)
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


def main_fill(args: Any, run: Any, mode: str) -> int:
    """``--fill``: every point, then the results file."""
    try:
        points = parse_points(args.points or FILL_POINTS[mode])
    except ValueError as err:
        print(f"marl_seeds.py: {err}", file=sys.stderr)
        return 2
    piece = args.piece_episodes or FILL_PIECE_EPISODES[mode]
    if piece < 1:
        print("marl_seeds.py: --piece-episodes must be >= 1", file=sys.stderr)
        return 2
    args.file_tag = "fill"
    out = harness.output_path(args, "marl_seeds")
    t_start = time.perf_counter()
    rows = run_fill(points, piece, mode, harness.Budget(args.budget_s))
    config = {"mode": mode, "points": points, "piece_episodes": piece,
              "budget_s": args.budget_s}
    harness.write(out, run=run, config=config, results={"fill": rows},
                  timing_s={"total": time.perf_counter() - t_start}, summarize=summarize,
                  markdown=render_markdown, show=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
