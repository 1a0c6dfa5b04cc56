"""MADDPG end to end on the device: the full schedule, and time per 1,000 episodes up to 48 agents.

Part 1 (``schedule``): MADDPG with the original defaults (1 env, faithful per-agent sampling,
uniform, ``per_agent`` layout, 1e6-row buffer, batch 1,024, an update round every 100 steps
after 25,600 transitions) on spread-3 and tag-3. The run goes in compiled pieces of
``chunk`` episodes (the first piece is the warm-up before the first update,
``ceil(25,600 / 25) = 1,024`` episodes; the same program runs every later piece). After the
first piece with updates the time of the whole 60,000-episode schedule is estimated; when it
fits what is left of ``--budget-s`` the rest of the schedule runs and ``schedule_s`` is the
measured sum of the pieces (compile excluded), otherwise only ``s_per_1000_episodes`` (from
the measured piece with updates, on the full schedule's configuration) is recorded, and the
summary key says so in its name.

Part 2 (``scaling``): spread with N = 6, 12, 24 and 48 agents, each replay layout
(``per_agent``, ``interleaved``) and sampling mode (``faithful``, ``fast``): one warm-up piece
(compiling, filling the buffer), then one timed piece of the same length with updates;
reported per 1,000 episodes. Buffers hold ``--capacity`` rows (1e6) where the training state
fits ``--memory-fraction`` of the device memory (its ``bytes_limit``), and are cut to fit
otherwise (every record holds its capacity); with ``--no-cut`` a state that does not fit is
not cut but skipped, the reason recorded. Whether it fits is the library planner's decision
(:func:`jaxrl_pim.marl.plan.memory_plan`: the state's bytes from its shapes, the fraction of
the device memory as its usable bytes; on a CPU only ``--no-cut`` asks it, about the host's
available memory); each record keeps the plan (``memory_plan``). The state is donated to
each piece, so one copy lives on the device. ``--layouts compact`` adds the ``compact``
replay layout (every observation stored once, about half the bytes: 1e6 rows at N = 48 fit
where the other layouts are cut). The paper's 48-agent run at its 1e6 rows on one H200 (the
state, about 60 GB by the planner, is over 0.4 of the device's 112.6 GB ``bytes_limit``)::

    python benchmarks/marl_gpu.py --parts scaling --agents 48 --layouts compact \
        --modes faithful --capacity 1000000 --no-cut --memory-fraction 0.6

Every run also records its warm-up piece per env step, ``us_per_env_step_no_updates``
(microseconds; the piece before learning starts: its only update round, if any, is the
schedule's first, at its last step, counted in ``warmup_update_rounds``; 1 of 25,600 steps at
the paper's sizes).

A configuration not started within ``--budget-s`` is recorded as skipped, so the file is
always written (the GPU suite gives this script a share of its deadline).

    python benchmarks/marl_gpu.py [--publish]   # on a GPU (runs anywhere)
    python benchmarks/marl_gpu.py --quick       # N = 6, 12; schedule estimated only
    python benchmarks/marl_gpu.py --smoke       # test sizes (seconds; numbers meaningless)

Summary: ``<env>3_schedule_s`` (measured whole schedule, or null),
``<env>3_s_per_1000_episodes_full_schedule``, ``<env>3_paper_60k_s`` (the paper's Table I
figure, published, not measured), and ``spread<N>_<layout>_<mode>_s_per_1000_episodes``.
Where a spread-48 run with faithful sampling held 1e6 rows on an accelerator (the fastest
layout if several did): ``gpu_spread48_1e6_s_per_1000_episodes``, its ``_layout``, and
``gpu_spread48_1e6_60k_schedule_s_extrapolated``: the measured warm-up piece plus the timed
piece's rate over the schedule's other episodes, ``warmup_s + s_per_1000_episodes x (60,000
- warm-up episodes) / 1,000`` (what part 1 estimates before running a schedule; compile
excluded): an extrapolation from the one timed piece, not a measured schedule.
"""

from __future__ import annotations

import dataclasses
import math
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as python benchmarks/<name>.py: the package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks import harness

FULL_EPISODES = 60_000
LAYOUTS = ("per_agent", "interleaved", "compact")
#: the layouts part 2 runs without ``--layouts`` (``compact`` only when asked for)
DEFAULT_LAYOUTS = ("per_agent", "interleaved")
#: the paper's buffer rows; the spread-48 run holding them fills the ``gpu_spread48_1e6_`` keys
PAPER_ROWS = 1_000_000
SAMPLING_MODES = ("faithful", "fast")
PARTS = ("schedule", "scaling")
#: ``--file-tag``: the GPU suite files the 60k-episode schedule, run last if time is left, as
#: ``marl_gpu_schedule.json`` (``--parts schedule --file-tag schedule``), and spread-48 at 1e6
#: rows as ``marl_gpu_spread48.json`` (the command in the docstring, ``--file-tag spread48``).
FILE_TAGS = ("schedule", "spread48")
#: Paper Table I: 60k-episode MADDPG at 3 agents on an RTX 3090 + Ryzen 3975WX, seconds
#: (published figures, not measured here).
PAPER_3_AGENTS_S = {"tag": 3365.99, "spread": 2403.64}

SIZES: dict[str, dict[str, Any]] = {
    "full": {"schedule_envs": ["spread", "tag"], "schedule_episodes": FULL_EPISODES,
             "run_schedule": True, "agents": [6, 12, 24, 48], "capacity": 1_000_000,
             "overrides": {}},
    "quick": {"schedule_envs": ["spread", "tag"], "schedule_episodes": FULL_EPISODES,
              "run_schedule": False, "agents": [6, 12], "capacity": 1_000_000,
              "overrides": {}},
    # learning_starts 256 -> pieces of 11 episodes; a 33-episode schedule
    "smoke": {"schedule_envs": ["spread"], "schedule_episodes": 33, "run_schedule": True,
              "agents": [3], "capacity": 4_096,
              "overrides": {"learning_starts": 256, "batch_size": 64}},
}


def _device_memory_bytes() -> int | None:
    import jax

    stats = getattr(jax.devices()[0], "memory_stats", lambda: None)()
    return None if not stats else stats.get("bytes_limit")


def _pieces(cfg: Any) -> int:
    """Episodes of the warm-up piece (before the first update round)."""
    return math.ceil(cfg.learning_starts / (cfg.episode_length * cfg.num_envs))


def _warmup_fields(cfg: Any, piece: int, t_warm: float, rounds: int) -> dict[str, Any]:
    """The warm-up piece per env step (of the vectorised batch), in microseconds."""
    steps = piece * cfg.episode_length
    return {"warmup_env_steps": steps, "warmup_update_rounds": rounds,
            "us_per_env_step_no_updates": t_warm / steps * 1e6}


def plan_capacity(cfg: Any, wanted: int, memory: tuple[int, str] | None,
                  no_cut: bool) -> tuple[int | None, dict[str, Any]]:
    """``(rows, plan)``: the buffer rows part 2 runs ``cfg`` with (None: skipped, the reason in
    ``plan["skipped"]``) and the library planner's record. ``memory`` ``(bytes, source)`` is
    what the state may take (None on a CPU: no cut; with ``no_cut`` the planner checks the
    host's available memory); a state over it is cut to the largest multiple of 1,024 rows
    that fits (at least 1,024), or with ``no_cut`` skipped."""
    from jaxrl_pim.marl import plan

    if memory is None and not no_cut:
        return wanted, {}
    at = dataclasses.replace(cfg, buffer_capacity=wanted,
                             learning_starts=min(cfg.learning_starts, wanted))
    # memory_plan lets a state take plan.MEMORY_FRACTION of what it is offered
    offer = None if memory is None else (math.ceil(memory[0] / plan.MEMORY_FRACTION), memory[1])
    mp = plan.memory_plan(at, available=offer, max_rows=wanted)
    info = {"state_bytes": mp.seed_bytes, "usable_bytes": mp.usable_bytes,
            "source": mp.source, "fits": mp.fits, "max_capacity": mp.max_capacity}
    if mp.fits:
        return wanted, info
    if no_cut:
        return None, {**info, "skipped": (
            f"--no-cut: the state at {wanted:,} rows needs {plan.human_bytes(mp.seed_bytes)}, "
            f"{plan.human_bytes(mp.usable_bytes)} usable ({mp.source}); {mp.max_capacity:,} "
            "rows would fit")}
    return max(1_024, mp.max_capacity // 1_024 * 1_024), info


def _run(cfg: Any, episodes: int, state: Any) -> tuple[Any, Any, float, float]:
    """The next ``episodes`` of the run at ``state``: ``(state, metrics, seconds, compile
    seconds)``. The piece's program (``piece_program``: one per static plan, kept) is got
    before the clock starts; compile seconds are 0 when it was kept."""
    import jax

    from jaxrl_pim.marl import piece_program

    t0 = time.perf_counter()
    program = piece_program(cfg, episodes, state)
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    state, metrics = program(state)
    jax.block_until_ready(state)
    return state, metrics, time.perf_counter() - t0, compile_s


def schedule_run(env: str, size: dict[str, Any], budget: harness.Budget) -> dict[str, Any]:
    """Part 1 for one env (see the module docstring)."""
    import jax
    import numpy as np

    from jaxrl_pim.marl import MARLConfig, make_init

    total = size["schedule_episodes"]
    cfg = MARLConfig(env=env, num_agents=3, num_episodes=total,
                     buffer_capacity=size["capacity"], **size["overrides"])
    piece = _pieces(cfg)
    state = jax.jit(make_init(cfg))(jax.random.PRNGKey(0))
    state, _, t_warm, compile_s = _run(cfg, piece, state)
    warm = _warmup_fields(cfg, piece, t_warm, int(state.num_updates))
    state, metrics, t_piece, c = _run(cfg, piece, state)
    compile_s += c
    rec: dict[str, Any] = {
        "env": env, "agents": 3, "config": cfg, "capacity": cfg.buffer_capacity,
        "piece_episodes": piece, "compile_s": compile_s, "warmup_s": t_warm,
        "measured_piece_s": t_piece, "s_per_1000_episodes": t_piece / piece * 1000,
        "schedule_episodes": total, **warm,
    }
    done = 2 * piece
    rest = total - done
    estimate = t_warm + t_piece * (total - piece) / piece
    rec["schedule_s_estimate_before_running"] = estimate
    rec["schedule_s"] = None
    if not size["run_schedule"] or rest < 0:
        rec["schedule_skipped"] = "not run at these sizes"
    elif estimate - t_warm - t_piece > budget.left():
        rec["schedule_skipped"] = (f"estimated {estimate:.0f} s does not fit the "
                                   f"{budget.left():.0f} s left of --budget-s")
    else:
        times = [t_warm, t_piece]
        full, tail = divmod(rest, piece)
        for n in [piece] * full + [tail] * bool(tail):
            state, metrics, t, c = _run(cfg, n, state)
            rec["compile_s"] += c
            times.append(t)
        rec["schedule_s"] = float(sum(times))
        rec["piece_s"] = times
    rec["episodes_run"] = total if rec["schedule_s"] is not None else done
    rec["final_return"] = float(np.asarray(metrics["episode_return"])[-min(100, piece):, 0].mean())
    print(f"[schedule] {env}-3: {rec['s_per_1000_episodes']:.2f} s per 1,000 episodes; "
          + (f"schedule {rec['schedule_s']:.1f} s" if rec["schedule_s"] is not None else
             f"schedule not run ({rec['schedule_skipped']})"), flush=True)
    return rec


def scaling_run(agents: int, layout: str, mode: str, size: dict[str, Any],
                memory: tuple[int, str] | None, capacity: int | None = None,
                no_cut: bool = False) -> dict[str, Any]:
    """Part 2 for one configuration: a warm-up piece, then a timed piece with updates
    (``capacity`` rows wanted, default the size's; see :func:`plan_capacity`)."""
    import jax

    from jaxrl_pim.marl import MARLConfig, make_init

    base = MARLConfig(env="spread", num_agents=agents, num_episodes=FULL_EPISODES,
                      layout=layout, sampling_mode=mode, **size["overrides"])
    cap, mplan = plan_capacity(base, capacity or size["capacity"], memory, no_cut)
    if cap is None:
        print(f"[scaling] spread-{agents} {layout} {mode}: skipped ({mplan['skipped']})",
              flush=True)
        return {"env": "spread", "agents": agents, "layout": layout, "sampling_mode": mode,
                "skipped": mplan.pop("skipped"), "memory_plan": mplan}
    cfg = dataclasses.replace(base, buffer_capacity=cap,
                              learning_starts=min(base.learning_starts, cap))
    piece = _pieces(cfg)
    state = jax.jit(make_init(cfg))(jax.random.PRNGKey(0))
    state, _, t_warm, compile_s = _run(cfg, piece, state)
    updates0 = int(state.num_updates)
    state, _, t_piece, c = _run(cfg, piece, state)
    compile_s += c
    rec = {"env": "spread", "agents": agents, "layout": layout, "sampling_mode": mode,
           "config": cfg, "capacity": cap, "piece_episodes": piece, "compile_s": compile_s,
           "warmup_s": t_warm, "measured_piece_s": t_piece,
           "measured_update_rounds": int(state.num_updates) - updates0,
           "s_per_1000_episodes": t_piece / piece * 1000, "memory_plan": mplan,
           **_warmup_fields(cfg, piece, t_warm, updates0)}
    print(f"[scaling] spread-{agents} {layout} {mode} ({cap:,} rows): "
          f"{rec['s_per_1000_episodes']:.2f} s per 1,000 episodes", flush=True)
    return rec


def summarize(report: dict[str, Any]) -> dict[str, Any]:
    """Headline numbers from the stored records (see the module docstring)."""
    res = report["results"]
    out: dict[str, Any] = {"device": res["device"], "mode": report["config"]["mode"]}
    for r in res["schedule"]:
        tag = f"{r['env']}{r['agents']}"
        ok = not r.get("error")
        out[f"{tag}_schedule_s"] = r.get("schedule_s") if ok else None
        out[f"{tag}_s_per_1000_episodes_full_schedule"] = r["s_per_1000_episodes"] if ok else None
        out[f"{tag}_paper_60k_s"] = PAPER_3_AGENTS_S.get(r["env"])
    for r in res["scaling"]:
        key = f"spread{r['agents']}_{r['layout']}_{r['sampling_mode']}_s_per_1000_episodes"
        out[key] = r.get("s_per_1000_episodes")
    out["capacity_by_run"] = {
        f"spread{r['agents']}_{r['layout']}_{r['sampling_mode']}": r.get("capacity")
        for r in res["scaling"]}
    paper = [r for r in res["scaling"]
             if r["agents"] == 48 and r.get("capacity") == PAPER_ROWS
             and r["sampling_mode"] == "faithful" and r.get("s_per_1000_episodes") is not None
             and report.get("system", {}).get("backend", "cpu") != "cpu"]
    if paper:  # absent otherwise (and from the files written before these keys)
        best = min(paper, key=lambda r: r["s_per_1000_episodes"])
        out["gpu_spread48_1e6_s_per_1000_episodes"] = best["s_per_1000_episodes"]
        out["gpu_spread48_1e6_layout"] = best["layout"]
        out["gpu_spread48_1e6_60k_schedule_s_extrapolated"] = (
            best["warmup_s"]
            + best["s_per_1000_episodes"] * (FULL_EPISODES - best["piece_episodes"]) / 1000)
    out["not_measured"] = [f"{r.get('env', 'spread')}{r['agents']}"
                           + (f"_{r['layout']}_{r['sampling_mode']}" if "layout" in r else "")
                           + f": {r.get('error') or r.get('skipped')}"
                           for r in res["schedule"] + res["scaling"]
                           if r.get("error") or r.get("skipped")]
    return out


def render_markdown(report: dict[str, Any]) -> str:
    """The schedule table and the scaling table, from the stored records."""
    res = report["results"]
    lines = [f"Device: {res['device']} ({report['config']['mode']} sizes). Seconds of "
             "compiled pieces of episodes (compile excluded); the paper's figure is its "
             "Table I (published, RTX 3090).", "",
             "| env | agents | capacity | s per 1,000 episodes | whole schedule s | "
             "episodes | paper 60k s |", "|---|---|---|---|---|---|---|"]
    for r in res["schedule"]:
        if r.get("error"):
            lines.append(f"| {r['env']} | {r['agents']} | | failed: {r['error'][:80]} | | | |")
            continue
        sched = (harness.fmt(r["schedule_s"], ".1f") if r.get("schedule_s") is not None else
                 f"not run ({r.get('schedule_skipped', '')[:60]})")
        lines.append(f"| {r['env']} | {r['agents']} | {r['capacity']:,} | "
                     f"{r['s_per_1000_episodes']:.3g} | {sched} | {r['schedule_episodes']:,} | "
                     f"{harness.fmt(PAPER_3_AGENTS_S.get(r['env']), '.0f')} |")
    # the warm-up column only for files that record it (older files render as they did)
    warm = any("us_per_env_step_no_updates" in r for r in res["scaling"])
    lines += ["", "| agents | layout | sampling | capacity | s per 1,000 episodes | "
              "update rounds timed | compile s |"
              + (" warm-up us per env step |" if warm else ""),
              "|---|---|---|---|---|---|---|" + ("---|" if warm else "")]
    for r in res["scaling"]:
        head = f"| {r['agents']} | {r['layout']} | {r['sampling_mode']} | "
        if r.get("error") or r.get("skipped"):
            lines.append(head + f"| {(r.get('error') or r.get('skipped'))[:80]} | | |"
                         + (" |" if warm else ""))
            continue
        lines.append(head + f"{r['capacity']:,} | {r['s_per_1000_episodes']:.3g} | "
                     f"{r['measured_update_rounds']:,} | {r['compile_s']:.1f} |"
                     + (f" {harness.fmt(r.get('us_per_env_step_no_updates'))} |"
                        if warm else ""))
    s = summarize(report)
    if "gpu_spread48_1e6_s_per_1000_episodes" in s:
        lines += ["", f"Spread-48 at {PAPER_ROWS:,} rows ({s['gpu_spread48_1e6_layout']} "
                  f"layout, faithful): {s['gpu_spread48_1e6_s_per_1000_episodes']:.3g} s per "
                  "1,000 episodes; the 60,000-episode schedule EXTRAPOLATED from it (warm-up "
                  "piece + timed rate, compile excluded): "
                  f"{s['gpu_spread48_1e6_60k_schedule_s_extrapolated']:.0f} s."]
    return "\n".join(lines) + "\n"


def _error(err: BaseException) -> str:
    return f"{type(err).__name__}: {str(err).splitlines()[0][:200] if str(err) else ''}"


def main(argv: list[str] | None = None) -> int:
    """Measure both parts, write the results file, print the tables."""
    p = harness.parser(__doc__)
    harness.add_budget(p, "configuration")
    p.add_argument("--memory-fraction", type=float, default=0.4,
                   help="share of the device memory (bytes_limit) the training state may "
                        "take; larger buffers are cut to fit (default 0.4; CPU: no cut)")
    p.add_argument("--capacity", type=int, default=None, metavar="ROWS",
                   help="buffer rows wanted in part 2 (default 1e6; --smoke 4,096)")
    p.add_argument("--no-cut", action="store_true",
                   help="skip a part-2 configuration whose state at --capacity rows does not "
                        "fit, the reason recorded, instead of cutting its buffer (on a CPU: "
                        "checked against the host's available memory; default: off)")
    p.add_argument("--agents", type=int, nargs="+", default=None,
                   help="agent counts of part 2 (default 6 12 24 48; --quick 6 12)")
    p.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS),
                   help="parts to run (default: both)")
    p.add_argument("--schedule-envs", nargs="+", choices=("spread", "tag"), default=None,
                   help="envs of part 1 (default spread tag; --smoke spread)")
    p.add_argument("--layouts", nargs="+", choices=LAYOUTS, default=None,
                   help="replay layouts of part 2 (default: per_agent interleaved; --smoke "
                        "interleaved)")
    p.add_argument("--modes", nargs="+", choices=SAMPLING_MODES, default=None,
                   help="sampling modes of part 2 (default: both; --smoke fast)")
    harness.add_file_tag(p, FILE_TAGS)
    args, run, mode = harness.start(p, argv, __file__)
    import jax

    from jaxrl_pim import provenance
    size = SIZES[mode]
    agents = args.agents or size["agents"]
    envs = (args.schedule_envs or size["schedule_envs"]) if "schedule" in args.parts else []
    if "scaling" not in args.parts:
        agents = []
    # --smoke: one configuration by default (every one costs a compile)
    layouts = args.layouts or (["interleaved"] if mode == "smoke" else list(DEFAULT_LAYOUTS))
    modes = args.modes or (["fast"] if mode == "smoke" else list(SAMPLING_MODES))
    if not 0.0 < args.memory_fraction <= 1.0:
        raise ValueError("--memory-fraction must be in (0, 1]")
    limit = _device_memory_bytes() if jax.default_backend() != "cpu" else None
    memory = None if limit is None else (
        int(args.memory_fraction * limit),
        f"--memory-fraction {args.memory_fraction:g} of bytes_limit")
    path = harness.output_path(args, "marl_gpu")
    budget = harness.Budget(args.budget_s)
    timing: dict[str, float] = {}
    schedule, scaling = [], []
    t0 = time.perf_counter()
    for env in envs:
        if budget.left() <= 0:
            schedule.append({"env": env, "agents": 3, "skipped": "--budget-s spent"})
            continue
        try:
            schedule.append(schedule_run(env, size, budget))
        except Exception as err:  # noqa: BLE001 - a failed run is recorded, the rest runs
            schedule.append({"env": env, "agents": 3, "error": _error(err)})
    timing["schedule"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    for n in agents:
        for layout in layouts:
            for sm in modes:
                head = {"env": "spread", "agents": n, "layout": layout, "sampling_mode": sm}
                if budget.left() <= 0:
                    scaling.append({**head, "skipped": "--budget-s spent"})
                    continue
                try:
                    scaling.append(scaling_run(n, layout, sm, size, memory, args.capacity,
                                               args.no_cut))
                except Exception as err:  # noqa: BLE001
                    scaling.append({**head, "error": _error(err)})
    timing["scaling"] = time.perf_counter() - t0
    config = {"mode": mode, "sizes": size, "parts": args.parts, "schedule_envs": envs,
              "agents": agents, "layouts": layouts, "sampling_modes": modes,
              "budget_s": args.budget_s, "capacity": args.capacity, "no_cut": args.no_cut,
              "memory_fraction": args.memory_fraction, "device_memory_bytes": limit}
    results = {"device": provenance.device_label(), "schedule": schedule, "scaling": scaling}
    harness.write(path, run=run, config=config, results=results, timing_s=timing,
                  summarize=summarize, markdown=render_markdown, show=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
