"""Tabular lanes on an accelerator: the lane kernels against the floor of one dependent step.

Every lane is a chain of dependent updates (update ``j + 1`` may read the entry update ``j``
wrote), and lanes are independent, so a run takes ``steps per lane x time of one step``; the
figure that matters is ``ns_per_dependent_step = run seconds / (rows per lane x episodes)``,
printed next to a floor *estimate* from stated constants (see
``tabular_gpu_model.floor_estimate_ns``; ``benchmarks/NOTES.md`` shows the arithmetic).

Sections (one invocation, one results file ``tabular_gpu[_quick|_smoke].{json,md}``):

* ``frozenlake``: FrozenLake 4x4, 1M uniform-random rows, 2,000 lanes, sync period 50, 2,000
  episodes, all 12 variants (Q / SARSA x SEQ / RAN / STR x FP32 / INT32) with the new kernel
  (``pallas_lane`` on GPUs, ``pallas_tpu`` on TPUs), each once per ``--rngs`` entry
  (default both): ``jax``, the trainer's default, whose RAN rows and SARSA draws come from
  an XLA pre-pass before the kernel, and ``lcg``, the PIM generator run inside the kernel.
* ``compare``: the same inputs, every variant, the scan path, the one-hot kernel
  (``pallas_onehot``, GPUs) and the new kernel side by side for ``--compare-episodes``
  episodes (default 50: one sync round); each kernel's table against the scan path's (int32
  must be identical).
* ``multiagent``: 2,000 independent agents x 10,000 FrozenLake rows x 2,000 episodes,
  Q-SEQ FP32 and INT32, new kernel; then all kernels at ``--compare-episodes``; with the
  first rng of ``--rngs``, and with each further one the new-kernel runs of the variants
  that draw random numbers (RAN or SARSA; Q-SEQ draws none: the same program either way).
* ``taxi``: Taxi, 5M rows, 2,000 lanes, 2,000 episodes, Q-SEQ INT32 and FP32, new kernel;
  then all kernels at ``--compare-episodes``.
* ``scaling``: strong scaling, FrozenLake 1M rows over 125 ... 65,536 lanes (the published
  125 -> 2,000 curve extended), Q-SEQ-FP32, all kernels side by side on the same inputs for
  200 episodes (the scan path at 125 lanes walks 8,000 rows per episode; 200 episodes keep
  its run under half a minute).
* ``sweep``: the ``pallas_lane`` kernel's two speed knobs on the frozenlake inputs (2,000
  lanes, ``--compare-episodes`` episodes, Q-SEQ-FP32 and SARSA-RAN-INT32): lanes per program
  (``lanes_per_block``) x prefetch depth (``pallas_gpu.DEFAULT_PREFETCH``, the register
  queue; set for the trace of each point). The point with the smallest summed run time over
  the variants is recorded as the device's best settings next to the library's defaults
  (summary ``sweep_best_*``, ``sweep_default_*``). GPUs only; on a CPU (``--smoke``) every
  point runs in interpret mode and is also lowered for ``cuda`` (``lowers_for_cuda``).

The sections run in the order frozenlake and multiagent with the first rng, the same two
with each further rng, then sweep, taxi, compare, scaling (at the default ``jax``); with
``--budget-s`` no section (and no further variant of ``compare`` or of a further rng's
pass, lane count of ``scaling``) starts once that many seconds have passed, and the file
names what was skipped, so a run under a time limit keeps the headline numbers (the GPU
suite, ``gpu_suite.py``, sets it). Every record names its ``rng``.

Compile time (first call: tracing, XLA and Pallas compilation) is recorded apart from run
time (median of ``--repeats`` blocked calls of the compiled trainer). Summary:
``gpu_frozenlake_2000_lanes_s`` (worst over the 12 variants, and ``_median``),
``gpu_multiagent_2000_s`` (worst of FP32 / INT32), ``gpu_vs_pim_multiagent_speedup`` (the
published PIM time for 2,000 agents over ours; see ``PIM_MULTIAGENT_2000_S``), all of
``rng="jax"`` (a record without ``rng`` is one); on a TPU the ``tpu_`` keys instead; null
with a note elsewhere. Where ``--rngs`` holds ``lcg``, the frozenlake, multiagent and ns per
step keys again for its records, suffixed ``_lcg`` (a multiagent variant that draws no
random numbers counts with its ``jax`` record, the same program), and
``*_frozenlake_lcg_over_jax_worst`` (with its variant) / ``_best``: the largest / smallest
ratio of a variant's ``lcg`` time to its ``jax`` time.

On a GPU (the results go to ``benchmarks/results/<device>/``)::

    python benchmarks/tabular_gpu.py --publish

Sizes: full as above (the default); ``--quick``: 100k FrozenLake rows, 200 episodes, 200
agents x 1,000 rows, Taxi 500k rows, 4 lane counts and 20 scaling episodes, 10 compare
episodes; ``--smoke``: test sizes, one variant per section (frozenlake's, Q-RAN-INT32, with
every rng; the kernels run in Pallas interpret mode on a CPU; numbers meaningless). On a
CPU only ``--smoke`` runs: the kernels are GPU / TPU kernels.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as python benchmarks/<name>.py: the package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks import (
    harness,
    pim_published,
)
from benchmarks import tabular_gpu_knobs as knobs
from benchmarks.tabular_gpu_knobs import lowers_for_cuda
from benchmarks.tabular_gpu_model import (  # noqa: F401 - the floor model, re-exported
    DEPENDENT_LATENCY_CYCLES,
    FLOOR_CLOCK_HZ,
    GPU_SMS,
    ISSUE_PER_CYCLE,
    SCHEDULERS_PER_SM,
    chain_ops,
    draws_random,
    floor_estimate_ns,
    issued_ops,
)
from benchmarks.tabular_gpu_report import (  # the summary and the tables
    LCG_KEYS,  # noqa: F401 - the summary's lcg keys, re-exported
    SECTIONS,
    VARIANTS,
    num,
    render_markdown,
    summarize,
)
from jaxrl_pim.choices import RNGS

#: ``--file-tag``: the GPU suite files the sweep, run last if time is left, as
#: ``tabular_gpu_sweep.json`` (``--sections sweep --file-tag sweep``).
FILE_TAGS = ("sweep",)

#: Published PIM time for 2,000 independent agents (10,000 FrozenLake rows each, 2,000
#: episodes): the Xeon time divided by the PIM speed-up, both as published in "SwiftRL:
#: Towards Efficient Reinforcement Learning on Real Processing-In-Memory Systems" (Gogineni et
#: al., ISPASS 2024); see ``pim_published.MULTI_AGENT``.
PIM_MULTIAGENT_2000_S = pim_published.MULTI_AGENT["pim_seconds_2000_agents_derived"]
PIM_SOURCE = pim_published.SOURCE

MODES: dict[str, dict[str, Any]] = {
    "full": dict(rows=1_000_000, lanes=2000, episodes=2000, sync=50, variants=VARIANTS,
                 compare_variants=VARIANTS, agents=2000, agent_rows=10_000,
                 pair_variants=["q-seq-fp32", "q-seq-int32"], taxi_rows=5_000_000,
                 scaling_lanes=[125, 250, 500, 1000, 2000, 4096, 8192, 16384, 32768, 65536],
                 scaling_episodes=200, compare_episodes=50, repeats=3,
                 sweep_lanes_per_block=[4, 8, 16, 32], sweep_prefetch=[2, 4, 8, 16],
                 sweep_variants=["q-seq-fp32", "sarsa-ran-int32"]),
    "quick": dict(rows=100_000, lanes=2000, episodes=200, sync=50, variants=VARIANTS,
                  compare_variants=VARIANTS, agents=200, agent_rows=1000,
                  pair_variants=["q-seq-fp32", "q-seq-int32"], taxi_rows=500_000,
                  scaling_lanes=[125, 500, 2000, 8192], scaling_episodes=20,
                  compare_episodes=10, repeats=2, sweep_lanes_per_block=[8, 32],
                  sweep_prefetch=[4, 8], sweep_variants=["q-seq-fp32"]),
    # test sizes: one variant per section, and the one-hot kernel left out of the side by
    # side runs (each interpret-mode kernel costs seconds of compilation on a CPU); one sweep
    # point (depth 2: a register queue of more than one slot, as every depth of the full grid);
    # a frozenlake variant that draws random numbers, so that jax and lcg run different programs
    "smoke": dict(rows=480, lanes=8, episodes=4, sync=2, variants=["q-ran-int32"],
                  compare_variants=["sarsa-ran-fp32"], agents=4, agent_rows=30,
                  pair_variants=["q-seq-int32"], taxi_rows=160, scaling_lanes=[8],
                  scaling_episodes=2, compare_episodes=2, repeats=1,
                  sweep_lanes_per_block=[2], sweep_prefetch=[2],
                  sweep_variants=["q-seq-int32"]),
}




# ----------------------------------------------------------------------------- measuring


def _split(variant: str) -> dict[str, str]:
    algo, sampling, dtype = variant.split("-")
    return {"algo": algo, "sampling": sampling, "dtype": dtype}


#: XLA options of every compile: ``--smoke`` compiles at -O0 (the interpret-mode kernels of a
#: CPU host compile about twice as fast; smoke numbers mean nothing anyway).
COMPILER_OPTIONS: dict[str, Any] = {}


def timed_run(cfg: Any, chunks: Any, repeats: int,
              reference: Any = None) -> tuple[dict[str, Any], Any]:
    """Compile and time ``make_train(cfg)`` on ``chunks``: ``(record, table)``."""
    import jax
    import numpy as np

    from jaxrl_pim.tabular import make_train

    key = jax.random.key(1)
    data = jax.device_put(chunks)
    train = jax.jit(make_train(cfg), compiler_options=COMPILER_OPTIONS or None)
    t0 = time.perf_counter()
    compiled = train.lower(key, data).compile()
    compile_s = time.perf_counter() - t0
    times, q = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        q, _ = jax.block_until_ready(compiled(key, data))
        times.append(time.perf_counter() - t0)
    q = np.asarray(q)
    rec = {"compile_s": compile_s, "run_s": statistics.median(times), "run_s_min": min(times),
           "repeats": repeats}
    if reference is not None:
        rec["max_abs_diff_vs_scan"] = float(np.max(np.abs(q - reference)))
    return rec, q


def measure(section: str, env: str, variant: str, kernel: str, cfg_kwargs: dict, chunks: Any,
            repeats: int, reference: Any = None) -> tuple[dict[str, Any], Any]:
    """One record (or an ``error`` record when the kernel fails on this backend). The floor
    estimate is a GPU one (None on a TPU)."""
    import jax

    from jaxrl_pim.tabular import TabularConfig
    from jaxrl_pim.tabular.pallas_gpu import lane_block

    cfg = TabularConfig(kernel=kernel, **_split(variant), **cfg_kwargs)
    m = int(chunks.shape[1])
    rec: dict[str, Any] = {
        "section": section, "env": env, "variant": variant, "rng": cfg.rng, "kernel": kernel,
        "lanes": cfg.num_cores, "rows_per_lane": m, "episodes": cfg.num_episodes,
        "sync_period": cfg.sync_period, "independent": cfg.independent,
        "updates": cfg.num_cores * m * cfg.num_episodes,
    }
    bl = lane_block(cfg.lanes_per_block, cfg.num_states * cfg.num_actions, cfg.num_cores)
    if jax.default_backend() == "tpu":
        rec.update(floor_estimate_ns_per_step=None, floor_estimate_chain_cycles=None,
                   floor_estimate_issue_cycles=None)
    else:
        rec.update(floor_estimate_ns(variant, cfg.num_actions, cfg.num_cores, bl, cfg.rng))
    rec["lanes_per_block_new_kernel"] = bl
    try:
        timing, q = timed_run(cfg, chunks, repeats, reference)
    except Exception as err:  # noqa: BLE001 - a kernel a backend rejects is a result too
        rec["error"] = f"{type(err).__name__}: {str(err).splitlines()[0][:300] if str(err) else ''}"
        print(f"[{section}] {env} {variant} rng={cfg.rng} {kernel}: FAILED {rec['error']}",
              flush=True)
        return rec, None
    rec.update(timing)
    steps = m * cfg.num_episodes
    rec["updates_per_s"] = rec["updates"] / rec["run_s"]
    rec["ns_per_dependent_step"] = rec["run_s"] / steps * 1e9
    floor = rec["floor_estimate_ns_per_step"]
    rec["floor_estimate_s"] = None if floor is None else floor * steps * 1e-9
    rec["over_floor_estimate"] = None if floor is None else rec["ns_per_dependent_step"] / floor
    print(f"[{section}] {env} {variant} rng={cfg.rng} {kernel} lanes={cfg.num_cores} m={m} "
          f"E={cfg.num_episodes}: compile {rec['compile_s']:.1f} s, run {rec['run_s']:.4g} s, "
          f"{rec['ns_per_dependent_step']:.1f} ns/step (floor est. {num(floor, '.1f')})"
          + ("" if reference is None else f", vs scan {rec['max_abs_diff_vs_scan']:.2g}"),
          flush=True)
    return rec, q


def side_by_side(section: str, env: str, variant: str, kernels: list[str], cfg_kwargs: dict,
                 chunks: Any, repeats: int) -> list[dict]:
    """Every kernel on the same inputs; tables compared with the scan path's."""
    out, ref = [], None
    for kernel in kernels:
        rec, q = measure(section, env, variant, kernel, cfg_kwargs, chunks, repeats,
                         None if kernel == "scan" else ref)
        if kernel == "scan":
            ref = q
        out.append(rec)
    return out


def sweep(m: dict, chunks: Any, episodes: int, repeats: int,
          stop: Callable[[int, int], bool] | None = None) -> list[dict]:
    """The ``sweep`` section (:func:`tabular_gpu_knobs.sweep`) with :func:`measure`."""
    return knobs.sweep(m, chunks, episodes, repeats, stop, measure=measure,
                       lowers=lowers_for_cuda)


def frozenlake_data(rows: int, cache: dict) -> Any:
    """``rows`` uniform-random FrozenLake transitions, collected once per size."""
    if ("frozenlake", rows) not in cache:
        import jax

        from jaxrl_pim import data, envs

        env, params = envs.make("frozenlake")
        cache[("frozenlake", rows)] = data.collect(env, params, jax.random.key(0), rows)
    return cache[("frozenlake", rows)]


#: Order the sections run in: the headline sections first, so that a ``--budget-s`` that runs
#: out skips the side-by-side and scaling runs rather than the headline numbers.
RUN_ORDER = ("frozenlake", "multiagent", "sweep", "taxi", "compare", "scaling")
#: Sections run once per ``--rngs`` entry: the first rng's passes, then each further rng's,
#: then the other sections (at the default rng).
RNG_SECTIONS = ("frozenlake", "multiagent")


def run_order(sections: list[str], rngs: list[str]) -> list[tuple[str, str | None]]:
    """``(section, rng)`` in the order they run (rng None: the section takes none)."""
    order = [(n, r) for r in rngs for n in RUN_ORDER if n in RNG_SECTIONS]
    order += [(n, None) for n in RUN_ORDER if n not in RNG_SECTIONS]
    return [(n, r) for n, r in order if n in sections]


def run_sections(args: argparse.Namespace, m: dict, new_kernel: str, kernels: list[str]
                 ) -> tuple[dict[str, list], dict[str, str]]:
    """Run the chosen sections in :data:`RUN_ORDER`: ``(records per section, skipped
    sections with the reason)``. A section is not started once ``--budget-s`` is spent."""
    import jax

    from jaxrl_pim import data, envs
    from jaxrl_pim.tabular import TabularConfig, chunk

    cache: dict = {}
    sections: dict[str, list] = {}
    full_e, cmp_e, reps = m["episodes"], args.compare_episodes, args.repeats
    fl_kwargs = dict(num_states=16, num_actions=4, num_cores=m["lanes"], sync_period=m["sync"])

    def fl_chunks(lanes):
        cfg = TabularConfig(16, 4, num_cores=lanes, dtype="int32")
        return chunk(cfg, frozenlake_data(m["rows"], cache))

    def frozenlake(rng: str, first: bool):
        ch, rows = fl_chunks(m["lanes"]), []
        for i, v in enumerate(args.variants):
            if not first and spent("frozenlake", f"at rng={rng} after {i} of "
                                                 f"{len(args.variants)} variants"):
                break
            rows.append(measure("frozenlake", "frozenlake", v, new_kernel,
                                {**fl_kwargs, "num_episodes": full_e, "rng": rng}, ch, reps)[0])
        return rows

    budget = harness.Budget(args.budget_s)
    skipped: dict[str, str] = {}

    def spent(name: str, what: str = "") -> bool:
        """Whether ``--budget-s`` is spent (then ``name`` is noted as skipped or cut)."""
        if not budget.spent():
            return False
        why = f"--budget-s {args.budget_s:g} spent" + (f" {what}" if what else "")
        skipped.setdefault(name, why)  # the first reason stays: a section skipped whole
        print(f"[{name}] {why}", flush=True)
        return True

    def compare():
        ch = fl_chunks(m["lanes"])
        variants = m["compare_variants"] if harness.mode_of(args) == "smoke" else args.variants
        rows = []
        for i, v in enumerate(variants):
            if i and spent("compare", f"after {i} of {len(variants)} variants"):
                break
            rows += side_by_side("compare", "frozenlake", v, kernels,
                                 {**fl_kwargs, "num_episodes": cmp_e}, ch, 1)
        return rows

    def multiagent(rng: str, first: bool):
        if "agents" not in cache:
            env, params = envs.make("frozenlake")
            cache["agents"] = data.collect_per_agent(env, params, jax.random.key(2),
                                                     m["agents"], m["agent_rows"])
        kw = dict(num_states=16, num_actions=4, num_cores=m["agents"], independent=True,
                  sync_period=m["sync"], rng=rng)
        # a further rng: only the variants whose program it changes, without the side by side
        variants = [v for v in m["pair_variants"] if first or draws_random(v)]
        rows = []
        for i, v in enumerate(variants):
            if not first and spent("multiagent", f"at rng={rng} after {i} of "
                                                 f"{len(variants)} variants"):
                break
            cfg = TabularConfig(16, 4, num_cores=m["agents"], independent=True,
                                **_split(v))
            ch = chunk(cfg, cache["agents"])
            rows.append(measure("multiagent", "frozenlake", v, new_kernel,
                                {**kw, "num_episodes": full_e}, ch, reps)[0])
            if first:
                rows += side_by_side("multiagent", "frozenlake", v, kernels,
                                     {**kw, "num_episodes": cmp_e}, ch, 1)
        return rows

    def taxi():
        env, params = envs.make("taxi")
        rows_taxi = data.collect(env, params, jax.random.key(3), m["taxi_rows"])
        lanes = min(m["lanes"], m["taxi_rows"] // 40)
        kw = dict(num_states=500, num_actions=6, num_cores=lanes, sync_period=m["sync"])
        rows = []
        for v in m["pair_variants"]:
            ch = chunk(TabularConfig(500, 6, num_cores=lanes, **_split(v)), rows_taxi)
            rows.append(measure("taxi", "taxi", v, new_kernel, {**kw, "num_episodes": full_e},
                                ch, reps)[0])
            rows += side_by_side("taxi", "taxi", v, kernels, {**kw, "num_episodes": cmp_e},
                                 ch, 1)
        return rows

    def scaling():
        rows = []
        for i, lanes in enumerate(m["scaling_lanes"]):
            if i and spent("scaling", f"after {i} of {len(m['scaling_lanes'])} lane counts"):
                break
            ch = fl_chunks(lanes)
            kw = {**fl_kwargs, "num_cores": lanes}
            rows += side_by_side("scaling", "frozenlake", "q-seq-fp32", kernels,
                                 {**kw, "num_episodes": m["scaling_episodes"]}, ch, 1)
        return rows

    def sweep_section():
        return sweep(m, fl_chunks(m["lanes"]), cmp_e, reps,
                     stop=lambda i, n: spent("sweep", f"after {i} of {n} points"))

    run = {"frozenlake": frozenlake, "compare": compare, "multiagent": multiagent,
           "taxi": taxi, "scaling": scaling, "sweep": sweep_section}
    for name, rng in run_order(args.sections, args.rngs):
        if name == "sweep" and new_kernel != "pallas_lane":
            skipped[name] = f"the sweep is of pallas_lane; {new_kernel} runs here"
            continue
        first = rng in (None, args.rngs[0])
        if first and spent(name):
            continue
        rows = run[name]() if rng is None else run[name](rng, first)
        if first:
            sections[name] = rows
        elif rows:
            sections.setdefault(name, []).extend(rows)
    return sections, skipped


def main(argv: list[str] | None = None) -> int:
    """Measure the sections, write the results file, print the tables."""
    p = harness.parser(__doc__)
    p.add_argument("--sections", nargs="+", choices=SECTIONS, default=list(SECTIONS),
                   help="sections to run (default: all)")
    p.add_argument("--variants", nargs="+", choices=VARIANTS, default=None,
                   help="variants of the frozenlake and compare sections (default: all 12; "
                        "--smoke: q-ran-int32)")
    p.add_argument("--rngs", nargs="+", choices=RNGS, default=list(RNGS),
                   help="rng settings of the trainer the frozenlake and multiagent sections "
                        "run with, each in turn (default: jax, then lcg; run in that order)")
    p.add_argument("--compare-episodes", type=int, default=None,
                   help="episodes of the side-by-side runs (default: 50; --quick 10; "
                        "--smoke 2)")
    p.add_argument("--repeats", type=int, default=None,
                   help="timed calls per new-kernel run, median kept (default: 3; --quick 2; "
                        "--smoke 1); side-by-side runs are timed once")
    harness.add_budget(p, "section")
    harness.add_file_tag(p, FILE_TAGS)
    args, run, mode = harness.start(p, argv, __file__)
    import jax

    from jaxrl_pim import provenance
    from jaxrl_pim.checks import check_int
    m = MODES[mode]
    backend = jax.default_backend()
    if backend not in harness.ACCELERATORS and mode != "smoke":
        print("tabular_gpu measures GPU / TPU kernels; on a CPU host only --smoke runs "
              "(the kernels in Pallas interpret mode)", file=sys.stderr)
        return 2
    args.variants = args.variants or m["variants"]
    args.rngs = [r for r in RNGS if r in args.rngs]  # jax (the default, the headline) first
    args.compare_episodes = check_int("--compare-episodes",
                                      args.compare_episodes or m["compare_episodes"], 1)
    args.repeats = check_int("--repeats", args.repeats or m["repeats"], 1)
    new_kernel = "pallas_tpu" if backend == "tpu" else "pallas_lane"
    kernels = ["scan", "pallas_tpu"] if backend == "tpu" else [
        "scan", "pallas_onehot", "pallas_lane"]
    if mode == "smoke":
        kernels = [k for k in kernels if k != "pallas_onehot"]
        COMPILER_OPTIONS["xla_backend_optimization_level"] = 0
    path = harness.output_path(args, "tabular_gpu")
    t0 = time.perf_counter()
    sections, skipped = run_sections(args, m, new_kernel, kernels)
    config = {"mode": mode, "sections": args.sections, "variants": args.variants,
              "rngs": args.rngs, "compare_episodes": args.compare_episodes, "repeats": args.repeats,
              **{k: v for k, v in m.items() if k not in ("variants",)},
              "kernels": kernels, "compiler_options": dict(COMPILER_OPTIONS),
              "floor_constants": {"clock_hz": FLOOR_CLOCK_HZ,
                                  "dependent_latency_cycles": DEPENDENT_LATENCY_CYCLES,
                                  "issue_per_cycle": ISSUE_PER_CYCLE, "sms": GPU_SMS,
                                  "schedulers_per_sm": SCHEDULERS_PER_SM}}
    results = {"device": provenance.device_label(), "backend": backend, "new_kernel": new_kernel,
               "sections": sections, "skipped_sections": skipped,
               "pim_multiagent_2000_s": PIM_MULTIAGENT_2000_S,
               "pim_source": PIM_SOURCE}
    timing = {"total": time.perf_counter() - t0}
    harness.write(path, run=run, config=config, results=results, timing_s=timing,
                  summarize=summarize, markdown=render_markdown, show=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
