"""Speed of the tabular lanes trainer: Numba side by side, scaling, multi-agent, memory traffic.

Every section below runs in ONE invocation and is written to one results file
(``tabular_scaling[_quick].{json,md}`` plus PNG plots; see ``benchmarks/harness.py``).

* ``numba`` (CPU only) -- like for like against Numba: FrozenLake, 1M rows, 2,000 lanes, sync
  period 50, the PIM LCG on both sides (``TabularConfig(rng="lcg")`` and
  :mod:`jaxrl_pim.testing.tabular_numba`, which make the same draws: the final tables are
  compared and recorded). For each of the 12 variants (Q / SARSA x SEQ / RAN / STR x FP32 /
  INT32) the JAX trainer and the two Numba lanes baselines (``lanes_block_numba``: blocks of
  lanes interleaved per row like the XLA scan; ``lanes_numba``: one lane's chain at a time)
  run the same number of episodes, chosen so that the fastest of them takes at least
  ``--min-seconds`` (50 % margin over a calibration run, rounds repeated once with twice the
  episodes if a run still came out shorter; each record keeps its ``shortest_run_s``); then
  ``--rounds`` rounds alternate JAX, block, lane, JAX, ...; each
  side's best round is its figure. Ratio = JAX / best Numba; the summary gives its minimum
  and median over the variants.
* ``forms`` (CPU only) -- the lane step written in the forms of
  :mod:`jaxrl_pim.testing.lane_forms` (entry-major vs lane-major tables, the max over ``A``
  unrolled, scalar bootstrap gathers, unsigned in-bounds indexing, one fused row word), each
  timed beside the Numba baselines on the ``numba`` section's dataset and lanes (Q-SEQ-FP32,
  no sync), with the operations XLA runs per scan step of each.
* ``strong`` -- lanes 250-2,000 (CPU; 125-65,536 on GPU) on FrozenLake 1M and Taxi 5M.
* ``weak`` -- updates/s vs dataset size (Q-SEQ-FP32, 2,000 lanes).
* ``multiagent`` -- independent agents (1,000 and 2,000) x 10,000 transitions each.
* ``roofline`` -- the copy bandwidth measured in this run against the streamed traffic of the
  ``numba`` section's JAX runs.

The lane kernels themselves (scan, Pallas) are compared by ``benchmarks/tabular_gpu.py``.

Devices: on a CPU the script sets ``--xla_force_host_platform_device_count`` to the core
count inside ``main`` (before jax starts its backends), every JAX run splits its lanes over
all of those devices and Numba uses all cores; lane counts must divide by the device count
(it is stated in each section). Times for 2,000 episodes are measured when a section runs
2,000 episodes and otherwise extrapolated from the episodes run (``compute`` and ``sync``
scale with episodes, transfers do not): such records carry ``extrapolated_from_episodes``,
tables say "extrapolated", and summary keys holding such times end in ``_extrapolated``.

    python benchmarks/tabular_scaling.py            # full (CPU: about 20-30 min)
    python benchmarks/tabular_scaling.py --quick    # 100k-row datasets, short runs
    python benchmarks/tabular_scaling.py --smoke    # seconds; numbers meaningless
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import math
import os
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as python benchmarks/<name>.py: the package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import jax
import numpy as np

from benchmarks import (
    harness,
    pim_published,
)
from benchmarks.tabular_scaling_report import (  # the summary, the tables and the plots
    plots,
    render_markdown,
    summarize,
)
from benchmarks.tabular_scaling_runs import (  # the timed runs the sections are made of
    ENV_ROWS,
    FULL_EPISODES,
    JaxLanes,
    check_lanes,
    dataset,
    jax_run,
    selected_variants,
    variant_name,
)
from jaxrl_pim import provenance
from jaxrl_pim.xla_env import CPU_WORKAROUND_FLAGS, with_flags

SECTIONS = ("numba", "forms", "strong", "weak", "multiagent", "roofline")
DEFAULT_SECTIONS = "numba,forms,strong,weak,multiagent,roofline"
NUMBA_CONTENDERS = ("lanes_block_numba", "lanes_numba")
# Sizes per mode: rows divisor, lanes, numba rounds / min seconds, episodes per section.
MODES = {
    "full": {"scale": 1, "lanes": 2000, "rounds": 5, "min_seconds": 1.0, "strong_episodes": 500,
             "forms_episodes": 400,
             "weak_episodes": 100, "multiagent_episodes": 200, "agents": [1000, 2000],
             "sizes": [1, 4, 16], "strong_lanes": [250, 500, 1000, 2000],
             "strong_variants": ["q-seq-fp32", "q-seq-int32"], "envs": ["frozenlake", "taxi"],
             "multiagent_rows": 10_000},
    "quick": {"scale": 10, "lanes": 2000, "rounds": 3, "min_seconds": 0.3, "strong_episodes": 100,
              "forms_episodes": 400,
              "weak_episodes": 50, "multiagent_episodes": 50, "agents": [1000],
              "sizes": [1, 2], "strong_lanes": [250, 1000, 2000],
              "strong_variants": ["q-seq-fp32", "q-seq-int32"], "envs": ["frozenlake"],
              "multiagent_rows": 10_000},
    # smoke: the strong section's 40-lane run is the weak section's program (Q-SEQ-FP32, 40
    # lanes, 2 episodes, 4,000 rows), read back from jax's compilation cache where one is on
    # (the test suite's)
    "smoke": {"scale": 250, "lanes": 40, "rounds": 1, "min_seconds": 0.0, "strong_episodes": 2,
              "forms_episodes": 2,
              "weak_episodes": 2, "multiagent_episodes": 2, "agents": [8],
              "sizes": [1], "strong_lanes": [20, 40], "strong_variants": ["q-seq-fp32"],
              "envs": ["frozenlake"], "multiagent_rows": 100},
}


def on_gpu() -> bool:
    """Whether jax runs on an accelerator (:data:`harness.ACCELERATORS`)."""
    return jax.default_backend() in harness.ACCELERATORS


# ----------------------------------------------------------------------------- sections


def section_numba(args: argparse.Namespace, cache: dict) -> dict:
    """JAX lanes vs the Numba lanes baselines, every variant, alternating best-of rounds."""
    from jaxrl_pim.tabular import TabularConfig
    from jaxrl_pim.testing import tabular_numba as tn

    transitions, model = dataset("frozenlake", ENV_ROWS["frozenlake"] // args.scale, cache)
    lanes, sync, n_dev = args.numba_lanes, 50, args.n_dev
    check_lanes(lanes, n_dev, "numba")
    rows = []
    for algo, sampling, dtype in selected_variants(args, "numba"):
        name = variant_name(algo, sampling, dtype)
        bcfg = TabularConfig(model.num_states, model.num_actions, algo=algo, sampling=sampling,
                             dtype=dtype, num_cores=lanes, num_episodes=sync, sync_period=sync,
                             rng="lcg")
        # Calibrate: best of two one-round (50-episode) runs per contender; every side then
        # runs the episodes the fastest needs for min_seconds (a multiple of the sync period,
        # 50 % margin). If a timed run still came out shorter (the machine got faster), the
        # rounds are run again once with twice the episodes.
        cal = JaxLanes(model, transitions, algo, sampling, dtype, lanes, sync, sync, n_dev)
        cal()  # first call: allocation
        rates = {"jax": cal.updates / min(cal()[1], cal()[1])}
        for b in NUMBA_CONTENDERS:
            tn.run_baseline(b, transitions, bcfg, lanes)  # compiles outside the timed region
            sec = min(tn.run_baseline(b, transitions, bcfg, lanes)[1] for _ in range(2))
            rates[b] = tn.updates_of(b, bcfg, transitions.num_rows, lanes) / sec
        per_episode = cal.updates / sync
        episodes = max(sync, sync * math.ceil(
            1.5 * args.min_seconds * max(rates.values()) / per_episode / sync))
        for attempt in range(2):
            jax_fn = cal if episodes == sync else JaxLanes(
                model, transitions, algo, sampling, dtype, lanes, episodes, sync, n_dev)
            run_cfg = dataclasses.replace(bcfg, num_episodes=episodes)
            seconds: dict[str, list[float]] = {"jax": [], **{b: [] for b in NUMBA_CONTENDERS}}
            tables: dict[str, np.ndarray] = {}
            for _ in range(args.rounds):
                tables["jax"], sec = jax_fn()
                seconds["jax"].append(sec)
                for b in NUMBA_CONTENDERS:
                    tables[b], sec = tn.run_baseline(b, transitions, run_cfg, lanes)
                    seconds[b].append(sec)
            if attempt or min(min(v) for v in seconds.values()) >= args.min_seconds:
                break
            episodes *= 2
        updates = jax_fn.updates
        best = {k: min(v) for k, v in seconds.items()}
        numba_rates = {b: updates / best[b] for b in NUMBA_CONTENDERS}
        best_numba = max(numba_rates, key=numba_rates.get)
        diff = max(float(np.max(np.abs(tables["jax"] - tables[b]))) for b in NUMBA_CONTENDERS)
        if dtype == "int32":  # compare the fixed-point integers (descaling rounds differently)
            fixed = {k: np.rint(v.astype(np.float64) * 10_000) for k, v in tables.items()}
            identical = all(np.array_equal(fixed["jax"], fixed[b]) for b in NUMBA_CONTENDERS)
        else:
            identical = all(np.array_equal(tables["jax"], tables[b]) for b in NUMBA_CONTENDERS)
        rec = {
            "variant": name, "lanes": lanes, "devices": n_dev, "numba_threads": args.threads,
            "sync_period": sync, "episodes": episodes, "updates": updates, "rng": "lcg",
            "calibration_updates_per_s": rates, "seconds_by_round": seconds,
            "jax_compile_s": jax_fn.compile_s, "jax_updates_per_s": updates / best["jax"],
            "numba_updates_per_s": numba_rates, "best_numba": best_numba,
            "ratio_vs_best_numba": (updates / best["jax"]) / numba_rates[best_numba],
            "max_abs_q_diff": diff, "tables_identical": bool(identical),
            "shortest_run_s": min(min(v) for v in seconds.values()),
        }
        rows.append(rec)
        print(f"[numba] {name:16s} {episodes} ep x {args.rounds} rounds: jax "
              f"{rec['jax_updates_per_s']:.3e}/s  best numba ({best_numba}) "
              f"{numba_rates[best_numba]:.3e}/s  ratio {rec['ratio_vs_best_numba']:.2f}  "
              f"max|dQ| {diff:.1e}", flush=True)
    return {"rows": rows, "lanes": lanes, "devices": n_dev, "numba_threads": args.threads,
            "rows_per_dataset": transitions.num_rows, "rounds": args.rounds,
            "min_seconds": args.min_seconds, "contenders": ["jax", *NUMBA_CONTENDERS],
            "setup": f"{lanes} lanes on {n_dev} XLA device(s) for JAX, {lanes} lanes on "
                     f"{args.threads} Numba thread(s); same episodes on both sides"}


def section_strong(args: argparse.Namespace, cache: dict) -> dict:
    """Strong scaling over lanes, sync period 50, the same devices for every record."""
    for n in args.strong_lanes:
        check_lanes(n, args.n_dev, "strong")
    rows = []
    episodes = args.strong_episodes
    for env_name in args.envs:
        transitions, model = dataset(env_name, ENV_ROWS[env_name] // args.scale, cache)
        for (algo, sampling, dtype), n in itertools.product(
                selected_variants(args, "strong"), args.strong_lanes):
            rec = jax_run(model, transitions, algo, sampling, dtype, n, episodes,
                          min(50, episodes), args.n_dev)
            rows.append({"env": env_name, "rows": transitions.num_rows, **rec})
            print(f"[strong] {env_name:10s} {rec['variant']:16s} lanes {n:6d} "
                  f"{rec['updates_per_s']:.3e}/s", flush=True)
    return {"rows": rows, "lanes": args.strong_lanes, "devices": args.n_dev,
            "episodes": episodes}


def section_weak(args: argparse.Namespace, cache: dict) -> dict:
    """Updates/s vs dataset size (Q-SEQ-FP32, 2,000 lanes)."""
    lanes = args.numba_lanes
    check_lanes(lanes, args.n_dev, "weak")
    rows = []
    for millions in args.sizes:
        transitions, model = dataset("frozenlake", millions * 1_000_000 // args.scale, {})
        rec = jax_run(model, transitions, "q", "seq", "fp32", lanes, args.weak_episodes,
                      min(50, args.weak_episodes), args.n_dev)
        rows.append({"rows": transitions.num_rows, **rec})
        print(f"[weak] {transitions.num_rows:>10,d} rows  {rec['updates_per_s']:.3e}/s",
              flush=True)
    return {"rows": rows, "lanes": lanes, "devices": args.n_dev,
            "episodes": args.weak_episodes}


def section_multiagent(args: argparse.Namespace, cache: dict) -> dict:
    """Independent agents x 10,000 transitions (paper: 1,000 and 2,000 agents, 2,000
    episodes), Q-SEQ-INT32, no averaging."""
    from jaxrl_pim import data as data_lib
    from jaxrl_pim import envs

    env, params = envs.make("frozenlake")
    rows = []
    for k in args.agents:
        check_lanes(k, args.n_dev, "multiagent")
    for k in args.agents:
        per_agent = data_lib.collect_per_agent(env, params, jax.random.key(3), k,
                                               args.multiagent_rows)
        rec = jax_run(envs.tabular_model(env), per_agent, "q", "seq", "int32", k,
                      args.multiagent_episodes, 50, args.n_dev, independent=True)
        rows.append({"agents": k, "rows_per_agent": args.multiagent_rows, **rec})
        print(f"[multiagent] {k} agents  {rec['updates_per_s']:.3e}/s", flush=True)
    return {"rows": rows, "devices": args.n_dev, "episodes": args.multiagent_episodes}


def section_forms(args: argparse.Namespace, cache: dict) -> dict:
    """The lane step's forms (:mod:`jaxrl_pim.testing.lane_forms`) side by side with the Numba
    lanes baselines: Q-SEQ-FP32 on the ``numba`` section's dataset and lanes, every side
    ``forms_episodes`` episodes with no sync in between (Numba: ``sync_period`` = the episode
    count, so its one average is at the end), ``--rounds`` alternating rounds, best of each;
    plus what XLA emits for one scan step of each form (the innermost loop body's operations)."""
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    from jaxrl_pim.tabular import TabularConfig, chunk
    from jaxrl_pim.tabular.lanes import to_lane_data, visiting_rows
    from jaxrl_pim.tabular.trainer import make_mesh
    from jaxrl_pim.testing import lane_forms
    from jaxrl_pim.testing import tabular_numba as tn

    transitions, model = dataset("frozenlake", ENV_ROWS["frozenlake"] // args.scale, cache)
    lanes, n_dev, episodes = args.numba_lanes, args.n_dev, args.forms_episodes
    check_lanes(lanes, n_dev, "forms")
    cfg = TabularConfig(model.num_states, model.num_actions, algo="q", sampling="seq",
                        dtype="fp32", num_cores=lanes, sync_period=episodes,
                        num_episodes=episodes, rng="lcg")
    spec = cfg.lane_spec()
    lane_forms.check_spec(spec)
    data = visiting_rows(to_lane_data(chunk(cfg, transitions), spec), spec.sampling, cfg.stride)
    mesh = make_mesh(n_dev)
    axis = mesh.axis_names[0]
    q0 = jax.device_put(np.zeros((lanes, model.num_states, model.num_actions), np.float32),
                       NamedSharding(mesh, P(axis)))
    fns, rows_of, ops, opcodes, compile_s = {}, {}, {}, {}, {}
    for name, form in lane_forms.FORMS.items():
        rows = form.prepare(spec, data)
        rows_of[name] = jax.block_until_ready(
            jax.device_put(rows, NamedSharding(mesh, P(None, axis))))

        def run(q, r, form=form):
            return form.run(spec, q, r, episodes)

        t0 = time.perf_counter()
        fn = jax.jit(jax.shard_map(run, mesh=mesh, in_specs=(P(axis), P(None, axis)),
                                   out_specs=P(axis), check_vma=False))
        fns[name] = fn.lower(q0, rows_of[name]).compile()
        compile_s[name] = time.perf_counter() - t0
        text = fns[name].as_text()
        ops[name] = lane_forms.innermost_loop_body(text)
        opcodes[name] = lane_forms.innermost_loop_opcodes(text)
    for b in NUMBA_CONTENDERS:
        tn.run_baseline(b, transitions, cfg, lanes)  # compiles outside the timed region
    seconds: dict[str, list[float]] = {k: [] for k in [*fns, *NUMBA_CONTENDERS]}
    tables: dict[str, np.ndarray] = {}
    for _ in range(args.rounds):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            out = jax.block_until_ready(fn(q0, rows_of[name]))
            seconds[name].append(time.perf_counter() - t0)
            tables[name] = np.asarray(out)
        for b in NUMBA_CONTENDERS:
            tables[b], sec = tn.run_baseline(b, transitions, cfg, lanes)
            seconds[b].append(sec)
    updates = lanes * data.sa.shape[0] * episodes
    rate = {k: updates / min(v) for k, v in seconds.items()}
    best_numba = max(NUMBA_CONTENDERS, key=rate.get)
    ref = tables["library"]
    lane_mean = ref.mean(axis=0)
    rows = [{"form": name, "description": form.description, "kind": "jax",
             "updates_per_s": rate[name], "compile_s": compile_s[name],
             "ops_per_step": len(ops[name]), "loop_body": ops[name],
             "instructions_per_step": sum(opcodes[name].values()),
             "loop_opcodes": opcodes[name],
             "ratio_vs_library": rate[name] / rate["library"],
             "ratio_vs_best_numba": rate[name] / rate[best_numba],
             "max_abs_q_diff_vs_library": float(np.max(np.abs(tables[name] - ref)))}
            for name, form in lane_forms.FORMS.items()]
    rows += [{"form": b, "kind": "numba", "updates_per_s": rate[b],
              "ratio_vs_library": rate[b] / rate["library"],
              "ratio_vs_best_numba": rate[b] / rate[best_numba],
              "max_abs_q_diff_vs_library_lane_mean": float(np.max(np.abs(tables[b] - lane_mean)))}
             for b in NUMBA_CONTENDERS]
    for r in rows:
        print(f"[forms] {r['form']:18s} {r['updates_per_s']:.3e}/s  vs library "
              f"{r['ratio_vs_library']:.2f}  vs best numba {r['ratio_vs_best_numba']:.2f}",
              flush=True)
    return {"rows": rows, "variant": "Q-SEQ-FP32", "lanes": lanes, "devices": n_dev,
            "numba_threads": args.threads, "episodes": episodes, "updates": updates,
            "rows_per_dataset": transitions.num_rows, "rounds": args.rounds,
            "best_numba": best_numba, "seconds_by_round": seconds}


def bytes_per_update(num_states: int, num_actions: int, sampling: str, algo: str
                     ) -> tuple[int, int]:
    """Bytes the scan path touches per update: ``(streamed, table)``.

    Streamed bytes (the row ``sa``, ``s'``, reward and flag) come from the dataset in main
    memory once per update (the LCG draws are computed, not read); table bytes (``Q[s, a]``
    read and write, the ``A``-entry bootstrap row) hit the lanes' tables, which stay
    cache-resident while they fit (2,000 FrozenLake tables: 512 KB).
    """
    from jaxrl_pim.tabular.lanes import index_dtype

    del sampling, algo
    sa = np.dtype(index_dtype(num_states * num_actions)).itemsize
    s2 = np.dtype(index_dtype(num_states)).itemsize
    return sa + s2 + 4 + 1, 4 + 4 * num_actions + 4


def section_roofline(args: argparse.Namespace, numba_rows: list[dict]) -> dict:
    """Streamed bandwidth of each ``numba`` section JAX run against this run's copy bandwidth."""
    copy = harness.copy_bandwidth(256 * 2**20, repeats=10)
    copy_bw = copy["best_B_per_s"]
    rows = []
    for r in numba_rows:
        algo, sampling = r["variant"].split("-")[0].lower(), r["variant"].split("-")[1].lower()
        streamed, table = bytes_per_update(16, 4, sampling, algo)
        bw = streamed * r["jax_updates_per_s"]
        rows.append({"variant": r["variant"], "streamed_bytes_per_update": streamed,
                     "table_bytes_per_update": table, "streamed_B_per_s": bw,
                     "table_B_per_s": table * r["jax_updates_per_s"],
                     "fraction_of_copy_bw": bw / copy_bw})
    worst = max((r["fraction_of_copy_bw"] for r in rows), default=0.0)
    bound = ("memory bandwidth (streamed data)" if worst > 0.5 else
             "per-update latency of the gather/scatter loop: streamed traffic is a small "
             "fraction of the copy bandwidth and the tables are cache-resident")
    return {"copy_bandwidth_B_per_s": copy_bw, "copy_bandwidth": copy, "rows": rows,
            "bound": bound}


# ----------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    p = harness.parser(__doc__)
    p.add_argument("--sections", default=DEFAULT_SECTIONS,
                   help=f"comma-separated, from {', '.join(SECTIONS)} (default "
                        f"{DEFAULT_SECTIONS})")
    p.add_argument("--variants", nargs="+", default=None,
                   help="numba-section variants, e.g. q-seq-fp32 sarsa-str-int32 (default all "
                        "12)")
    p.add_argument("--rounds", type=int, default=None,
                   help="alternating timed rounds per side in the numba section (default 5; "
                        "--quick 3)")
    p.add_argument("--min-seconds", type=float, default=None,
                   help="shortest timed run of the fastest side in the numba section "
                        "(default 1.0 s; --quick 0.3)")
    p.add_argument("--strong-lanes", type=int, nargs="+", default=None,
                   help="strong-scaling lane counts, divisible by the device count (default "
                        "CPU 250 500 1000 2000; GPU 125 ... 65536)")
    p.add_argument("--strong-variants", nargs="+", default=None,
                   help="strong-scaling variants (default CPU q-seq-fp32 q-seq-int32; GPU all)")
    p.add_argument("--strong-episodes", type=int, default=None,
                   help="episodes per strong-scaling run (default GPU 2000, CPU 500)")
    p.add_argument("--envs", nargs="+", default=None, choices=sorted(ENV_ROWS),
                   help="strong-scaling datasets (default frozenlake taxi)")
    p.add_argument("--sizes", type=int, nargs="+", default=None,
                   help="weak-scaling dataset sizes in millions of rows (default CPU 1 4 16, "
                        "GPU 1 4 16 64)")
    args = p.parse_args(argv)
    run = harness.record(args, None if argv is None else [__file__, *argv])
    # Before the first jax computation: one XLA CPU device per core (lanes split over them).
    os.environ["XLA_FLAGS"] = with_flags(
        os.environ.get("XLA_FLAGS", ""),
        f"--xla_force_host_platform_device_count={os.cpu_count() or 1}", *CPU_WORKAROUND_FLAGS)
    mode = harness.mode_of(args)
    m = MODES[mode]
    gpu = on_gpu()
    args.scale = m["scale"]
    args.numba_lanes = m["lanes"]
    args.rounds = args.rounds or m["rounds"]
    args.min_seconds = m["min_seconds"] if args.min_seconds is None else args.min_seconds
    args.strong_episodes = args.strong_episodes or (
        FULL_EPISODES if gpu and mode == "full" else m["strong_episodes"])
    args.forms_episodes = m["forms_episodes"]
    args.weak_episodes = FULL_EPISODES if gpu and mode == "full" else m["weak_episodes"]
    args.multiagent_episodes = (FULL_EPISODES if gpu and mode == "full"
                                else m["multiagent_episodes"])
    args.multiagent_rows = m["multiagent_rows"]
    args.agents = m["agents"]
    args.sizes = args.sizes or ([1, 4, 16, 64] if gpu and mode == "full" else m["sizes"])
    args.envs = args.envs or m["envs"]
    args.strong_lanes = args.strong_lanes or (
        [125, 250, 500, 1000, 2000, 4096, 8192, 16384, 32768, 65536] if gpu and mode == "full"
        else m["strong_lanes"])
    args.strong_variants = args.strong_variants or (
        None if gpu and mode == "full" else m["strong_variants"])
    if mode == "smoke" and args.variants is None:
        args.variants = ["sarsa-ran-int32"]  # each variant compiles Numba kernels: one
    wanted = [s.strip() for s in args.sections.split(",") if s.strip()]
    unknown = set(wanted) - set(SECTIONS)
    if unknown:
        raise ValueError(f"unknown sections {sorted(unknown)}; choose from {SECTIONS}")
    if args.rounds < 1 or args.min_seconds < 0:
        raise ValueError("--rounds must be >= 1 and --min-seconds >= 0")
    for name in ("variants", "strong_variants"):
        if getattr(args, name):
            selected_variants(args, "numba" if name == "variants" else "strong")
    path = harness.output_path(args, "tabular_scaling")

    import numba

    args.n_dev = len(jax.devices())
    args.threads = numba.get_num_threads()
    cache: dict = {}
    sections: dict = {}
    t0 = time.perf_counter()
    timing: dict[str, float] = {}
    if "numba" in wanted and not gpu:
        sections["numba"] = section_numba(args, cache)
    if "forms" in wanted and not gpu:
        t = time.perf_counter()
        sections["forms"] = section_forms(args, cache)
        timing["forms"] = time.perf_counter() - t
    for name, fn in (("strong", section_strong), ("weak", section_weak),
                     ("multiagent", section_multiagent)):
        if name in wanted:
            t = time.perf_counter()
            sections[name] = fn(args, cache)
            timing[name] = time.perf_counter() - t
    if "roofline" in wanted and "numba" in sections:
        sections["roofline"] = section_roofline(args, sections["numba"]["rows"])
    timing["total"] = time.perf_counter() - t0

    device = provenance.device_label()
    results = {"device": device, "devices_used": args.n_dev, "sections": sections,
               "published": pim_published.PUBLISHED}
    config = {"mode": mode, "sections": wanted, "rounds": args.rounds,
              "min_seconds": args.min_seconds, "lanes": args.numba_lanes,
              "rows_divisor": args.scale, "variants": args.variants,
              "strong_lanes": args.strong_lanes, "strong_variants": args.strong_variants,
              "strong_episodes": args.strong_episodes, "envs": args.envs,
              "forms_episodes": args.forms_episodes,
              "weak_sizes_millions": args.sizes, "weak_episodes": args.weak_episodes,
              "multiagent_agents": args.agents, "multiagent_episodes": args.multiagent_episodes,
              "multiagent_rows_per_agent": args.multiagent_rows,
              "numba_threads": args.threads,
              "xla_flags": os.environ.get("XLA_FLAGS", "")}
    stored = harness.write(path, run=run, config=config, results=results, timing_s=timing,
                           summarize=summarize, markdown=render_markdown)
    try:
        files = plots(path, sections, device)
        print("plots: " + ", ".join(files))
    except Exception as err:  # a missing plotting backend must not lose the measurements
        print(f"plots skipped: {err}", file=sys.stderr)
    print(render_markdown(stored))
    return 0


if __name__ == "__main__":
    sys.exit(main())
