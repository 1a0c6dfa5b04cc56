"""End-to-end MADDPG: wall time (vs the paper's Table I) and learning quality.

Part 1 (time): MADDPG with the trainer's defaults, the original's algorithm (1 env, faithful
sampling: every agent its own indices, uniform, 1e6 buffer, batch 1,024, update every 100 steps
after 25,600 transitions) in the default replay layout (``MARLConfig().layout``; the layout
changes where rows live, not the maths).
The run is timed in two pieces after compilation: the warm-up episodes before the first update
(``ceil(25,600 / 25) = 1,024`` episodes, env steps and buffer writes only), then
``measured_episodes`` further episodes with updates. The 60,000-episode time is EXTRAPOLATED
linearly, ``t_warm + (60,000 - 1,024) / measured_episodes * t_measured`` (compile excluded);
each record says from how many episodes (``extrapolated_from_episodes``). CPU: 3 agents
(spread and tag); GPU: 3, 6, 12, 24 agents.

Part 2 (quality): MADDPG on cooperative navigation with 3 agents in a short-but-sufficient
setting (32 vmapped envs, an update round after every vectorised step, i.e. one round per 32
transitions instead of per 100), with uniform, neighbour and information-prioritised
sampling. The metric is the mean per-agent episode return over the last 10 % of episodes,
compared with a uniform-random policy measured in the same run and env (the better of:
Gumbel-softmax of zero logits, uniformly random one-hot actions):
``improvement = (R - R_rand) / |R_rand|``. Quick and full runs average ``--seeds`` seeds
(>= 4, vmapped in one call per sampler; ``quality_seeds`` in the summary); smoke runs one.

Part 3 (fast mode): the same quality setting (uniform sampler) in ``faithful`` mode (every
agent draws its own indices, target actions recomputed per drawing agent, as the original)
and in ``fast`` mode (one index set per round shared by all agents, target actions computed
once), each over several seeds vmapped in ONE jitted call (seed ``s`` uses ``PRNGKey(s)``,
so both modes start from the same networks and envs). Summary: final return mean over seeds
per mode, ``fast_mode_return_delta = (mean_fast - mean_faithful) / |mean_faithful|``
(positive: fast mode ends higher), its standard error, and the run-time ratio. The sampler
speed-up of the fast mode itself is measured by ``benchmarks/marl_sampling.py``.

Part 4 (throughput): end-to-end training throughput, env steps per second including the
updates (compile and the update-free warm-up excluded), with the trainer's defaults at N = 3,
6, 12, 24 (quick: 3, 6; smoke: 3, ``per_agent`` and ``interleaved`` only) in four modes:
``per_agent`` (per-agent layout, faithful: the original's), ``interleaved`` (interleaved
layout, faithful: the trainer's default), ``packed`` (packed-row layout, faithful: one
whole-row gather per drawing agent) and ``fast`` (interleaved, one shared index set). Buffer
capacity: 1e6 rows where ``--memory-fraction`` of the memory holds them, else the largest that
fits (each record says).
Keys ``marl_e2e_speedup_interleaved_vs_per_agent_24``,
``marl_e2e_speedup_packed_vs_interleaved_by_agents`` and
``marl_e2e_fastest_faithful_layout_by_agents`` (the layout with the most env steps per second
at each N).

Full schedule (full mode, summary schema 2): spread-3 and tag-3 run the WHOLE 60,000-episode
schedule, one seed each (``maddpg_spread3_60k_s``, ``maddpg_tag3_60k_s``: measured, not
extrapolated); N = 6, 12, 24 run 1,000 (GPU 2,000) episodes of it after the warm-up, reported
as seconds per 1,000 episodes with the buffer capacity used, next to the paper's Table I
(published figures, 60k seconds / 60).

    python benchmarks/marl_e2e.py [--publish]   # full
    python benchmarks/marl_e2e.py --quick       # a few minutes on 2 CPU cores
    python benchmarks/marl_e2e.py --smoke       # test sizes, parts 1-2 (a minute)
    python benchmarks/marl_e2e.py --parts fast_mode   # one part only (others absent)
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as python benchmarks/<name>.py: the package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import jax
import numpy as np

from benchmarks import harness
from benchmarks.marl_e2e_report import (  # what the script makes of its records
    SUMMARY_SCHEMA,
    plot_curves,
    render_markdown,
    summarize,
)
from benchmarks.marl_e2e_runs import (  # what it measures
    E2E_MODES,
    FULL_EPISODES,
    fit_capacity,
    mode_run,
    quality_config,
    quality_run,
    quality_run_seeds,
    throughput,
    time_maddpg,
)
from jaxrl_pim.marl import MARLConfig, random_policy_return

PARTS = ("timing", "quality", "fast_mode", "throughput")
#: Part 2's samplers (full and quick sizes).
SAMPLERS = ("uniform", "neighbor", "info_prioritized")


def sizes(mode: str, gpu: bool) -> dict[str, Any]:
    """Sizes of every part for a mode (full, quick, smoke) and backend."""
    if mode == "smoke":
        # learning_starts 256 -> 11 warm-up episodes; measuring 11 reuses that program
        return {"timing_envs": ["spread"], "timing_agents": [3], "measure_episodes": 11,
                "throughput_agents": [3], "throughput_episodes": 11,
                # two modes: every mode is the same code with another layout (a compile each);
                # interleaved is the timing part's program, read back from the compile cache
                "throughput_modes": ["per_agent", "interleaved"],
                "timing_overrides": {"buffer_capacity": 4_096, "learning_starts": 256,
                                     "batch_size": 64},
                "quality_episodes": 10, "samplers": ["uniform"], "seeds": 2,
                "fast_mode_episodes": 10,
                "quality_overrides": {"num_envs": 4, "buffer_capacity": 2_048,
                                      "batch_size": 32, "learning_starts": 128, "num_refs": 4},
                "random_episodes": 5}
    agents = [3, 6, 12, 24] if gpu else [3]
    quick = mode == "quick"
    return {"timing_envs": ["spread", "tag"],
            "timing_agents": agents[:2] if quick else [3, 6, 12, 24],
            "measure_episodes": 2000 if gpu else (200 if quick else 1000),
            "full_schedule_agents": [] if quick else [3],
            "throughput_agents": [3, 6] if quick else [3, 6, 12, 24],
            "throughput_episodes": 100 if quick else 400, "throughput_modes": list(E2E_MODES),
            "timing_overrides": {}, "quality_episodes": 300 if quick else 400,
            "samplers": list(SAMPLERS), "seeds": 8 if gpu else (4 if quick else 6),
            "fast_mode_episodes": 150 if quick else 400, "quality_overrides": {},
            "random_episodes": 50}


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__)
    harness.add_parts(ap, PARTS, "timing and quality, part 3 being part 2's trainer vmapped "
                      "over seeds, whose compile alone takes most of a minute")
    ap.add_argument("--seeds", type=int, default=None,
                    help="seeds of part 3 (default CPU 6, --quick 4, GPU 8, --smoke 2)")
    ap.add_argument("--memory-fraction", type=float, default=0.5,
                    help="share of the memory the replay buffer may use; capacity is 1e6 "
                         "rows where that holds them (default 0.5)")
    args, run, mode = harness.start(ap, argv, __file__, cpu_workarounds=False)
    gpu = jax.default_backend() != "cpu"
    size = sizes(mode, gpu)
    seeds = args.seeds or size["seeds"]
    ap_parts = ["timing", "quality", "throughput"] if mode == "smoke" else list(PARTS)
    args.parts = args.parts or ap_parts
    out = harness.output_path(args, "marl_e2e")
    timer: dict[str, float] = {}
    results: dict[str, Any] = {}

    if "timing" in args.parts:
        t0 = time.perf_counter()
        rows = []
        for env in size["timing_envs"]:
            for n in size["timing_agents"]:
                over = dict(size["timing_overrides"])
                if not over:  # 1e6 rows where memory allows
                    over["buffer_capacity"] = fit_capacity(env, n, args.memory_fraction)
                episodes = size["measure_episodes"]
                if n in size.get("full_schedule_agents", []):  # the whole 60k schedule
                    warm = math.ceil(MARLConfig().learning_starts / MARLConfig().episode_length)
                    episodes = FULL_EPISODES - warm
                row = time_maddpg(env, n, episodes, over)
                print(f"[time] {env} N={n}: ~{row['extrapolated_60k_s']:.0f} s for 60k episodes "
                      f"(extrapolated from {row['extrapolated_from_episodes']:,}; paper "
                      f"{row['paper_60k_s']})", flush=True)
                rows.append(row)
        results["timing"] = rows
        timer["timing"] = time.perf_counter() - t0

    if "quality" in args.parts:
        t0 = time.perf_counter()
        cfg0 = quality_config("uniform", size["quality_episodes"],
                              overrides=size["quality_overrides"])
        key = jax.random.PRNGKey(123)
        rand_gumbel = float(random_policy_return(cfg0, key, size["random_episodes"])[0])
        rand_onehot = float(random_policy_return(cfg0, key, size["random_episodes"],
                                                 one_hot=True)[0])
        runs = {}
        for s in size["samplers"]:
            qcfg = quality_config(s, size["quality_episodes"],
                                  overrides=size["quality_overrides"])
            # smoke: one seed (a vmapped compile per sampler would dominate the test)
            runs[s] = (quality_run(qcfg, seed=0) if mode == "smoke"
                       else quality_run_seeds(qcfg, seeds))
            print(f"[quality] {s}: final return {runs[s]['final_return']:.2f} (random "
                  f"{max(rand_gumbel, rand_onehot):.2f})", flush=True)
        results["quality"] = {"random_return_gumbel": rand_gumbel,
                              "random_return_one_hot": rand_onehot,
                              "random_return": max(rand_gumbel, rand_onehot), "runs": runs}
        timer["quality"] = time.perf_counter() - t0

    if "fast_mode" in args.parts:
        t0 = time.perf_counter()
        fast_mode = {}
        for m in ("faithful", "fast"):
            cfg = quality_config("uniform", size["fast_mode_episodes"], sampling_mode=m,
                                 overrides=size["quality_overrides"])
            fast_mode[m] = r = mode_run(cfg, seeds)
            print(f"[fast-mode] {m}: final returns {np.round(r['final_return_per_seed'], 2)}; "
                  f"run {r['run_s']:.1f} s, compile {r['compile_s']:.1f} s", flush=True)
        results["fast_mode"] = fast_mode
        timer["fast_mode"] = time.perf_counter() - t0

    if "throughput" in args.parts:
        t0 = time.perf_counter()
        rows = []
        for n in size["throughput_agents"]:
            over = dict(size["timing_overrides"])
            if not over:
                over["buffer_capacity"] = fit_capacity("spread", n, args.memory_fraction)
            for m in size["throughput_modes"]:
                r = throughput("spread", n, m, size["throughput_episodes"], over)
                print(f"[throughput] spread N={n} {m}: {r['steps_per_s']:,.0f} env steps/s "
                      f"(capacity {r['buffer_capacity']:,})", flush=True)
                rows.append(r)
        results["throughput"] = rows
        timer["throughput"] = time.perf_counter() - t0

    config = {"mode": mode, "parts": list(args.parts), "seeds": seeds, "sizes": size,
              "summary_schema": SUMMARY_SCHEMA, "memory_fraction": args.memory_fraction}
    harness.write(out, run=run, config=config, results=results, timing_s=timer,
                  summarize=summarize, markdown=render_markdown)
    if results.get("quality") or results.get("fast_mode"):
        plot_curves(results.get("quality", {}), results.get("fast_mode", {}),
                    out.with_suffix(".png"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
