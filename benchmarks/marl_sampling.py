"""Multi-agent replay sampling: the original NumPy sampler against the JAX samplers and layouts.

One "update round" is the sampling every agent's MADDPG update needs (batch 1,024). The
headline is like for like: FAITHFUL semantics on both sides (each of the N agents draws its
own uniform indices, with replacement, and gets ALL agents' obs, action, reward, next obs and
done at them) over the SAME buffer capacity holding the same data:

* ``numpy`` -- the original sampler (``jaxrl_pim/testing/maddpg_numpy_sampler.py``):
  per-agent Python lists of tuples, ``random.randint`` indices, N^2 ``sample_index`` calls
  stacking N^2 B rows into fresh arrays each round. Its tuples are views into the host copy
  of the buffer (on a CPU the JAX buffer itself: no second copy of the data), built with the
  garbage collector off and then frozen (``gc.freeze``), so no collection walks them while
  rounds are timed.
* ``interleaved_faithful`` -- JAX, ``interleaved`` layout (one row per time step), the same
  per-agent indices: N gathers of B time-step rows, written time-major (``[N_draw, B,
  N_all, ...]``, the drawing agent's critic input order) into the previous round's donated
  batch (``jaxrl_pim.replay.gather_into``): no transpose, no fresh allocation. The MARL
  learner's faithful gather, which runs in this order inside the trainer's jitted update,
  where XLA reuses the batch memory from round to round: the trainer's path,
  ``TRAINER_MODE``, is this mode when ``MARLConfig``'s default layout is ``interleaved``.
* ``interleaved_faithful_agent_major`` -- the same gather in agent-major order (``[N_draw,
  N_all, B, ...]``), written into the previous round's donated batch: the learner's order
  before its batches became time-major, kept to show what the transpose costs.
* ``per_agent`` -- JAX, ``per_agent`` layout (N ring buffers), faithful: N^2 gathers, in
  agent-major order (that layout's natural one), donated. The learner asks this layout for
  time-major batches too, so with ``layout="per_agent"`` its gather also transposes.
* ``interleaved`` -- the FAST mode: ONE index set shared by all agents, one gather of B rows
  (time-major, donated, like the headline round; a different sampling algorithm, reported
  as ``fast_mode_sampler_speedup_24`` next to its measured effect on return, read from the
  MADDPG end-to-end results file).

Opponents, the samplers a user would pick instead, faithful on every side and timed in the
same run over the same data and capacity (summary keys ``sampler_speedup_vs_<opponent>_<N>``
for the trainer's default path, ``TRAINER_MODE``; targets >= 1.5x the vectorised NumPy and
>= 1x flashbax at every N):

* the original sampler above (``sampler_speedup_vs_original_24``);
* ``numpy_vectorized`` -- :class:`VectorizedNumpy`: ``Generator.integers`` draws of ``[N, B]``
  indices and one ``np.take`` per field into preallocated arrays, timed over the field arrays
  and over packed rows (every field of a time step in one ``[C, R]`` row, one ``np.take`` of
  whole rows; its own buffer, shared with :func:`packed_round`, the library's ``packed``
  layout's round, timed beside it but not the trainer's path); the faster of the two layouts
  is the opponent;
* ``flashbax_uniform`` -- flashbax 0.1.3's item buffer holding the joint transitions, N
  independent ``sample`` calls per round (``vmap``) inside one jit;
* ``flashbax_prioritized`` -- flashbax's prioritised item buffer against the library's
  ``prioritized``: sample, importance weights and the priority update of all ``N B`` drawn
  rows on both sides.

``--one-thread`` (default on a CPU, full and quick) runs the measured part a second time in a
child process pinned to one core (``taskset -c``) with ``XLA_FLAGS=--xla_cpu_multi_thread_
eigen=false`` and one BLAS/OpenMP thread, at the same capacities: the same keys with the suffix
``_one_thread`` tell thread count and algorithm apart. flashbax comes from the ``bench``
extra (``pip install -e ".[bench]"``; in ``dev``).

Samplers (JAX): ``uniform``, ``neighbor`` (64 references x runs of 16), ``prioritized`` and
``info_prioritized`` (random priorities on every row); NumPy is uniform only, as the original.
A JAX round is one jitted call (index draws + gather, batch materialised); priority updates
are not part of it. Rounds alternate NumPy and ``interleaved_faithful`` (uniform); each
side's best round is its time; the other modes are best of ``--repeats`` after a warm-up.

Bytes: a faithful round must deliver ``N * B`` agent-major blocks of one time step of all
agents, ``output = N * B * row_bytes(N)`` (0.7 GB at N = 24), read from random rows and
written out: at least ``2 * output`` bytes of memory traffic on either side (the agent-major
JAX order moves twice that: gather, then transpose). Each side's achieved GB/s is that
traffic over its round time, set against the copy bandwidth measured in the same run
(NumPy ``copyto`` and an XLA copy of ``output`` bytes into existing memory; the larger).

Capacity: the same on both sides, the largest (up to 1e6 rows) whose JAX buffer, the NumPy
baseline's per-row Python objects (measured per agent and row with ``tracemalloc``), the
priority trees and the round's working set fit ``--memory-fraction`` of the memory (CPU: 0.6
of ``MemAvailable``, the host being shared; GPU: 0.9 of the XLA allocator's limit for the
device side, 0.6 of the host's for the NumPy side). ``row_bytes(N) = 4 N (2 O + 7)`` with
``O = 4 + 2N + 4(N-1)``: 516 B at N = 3, 28,320 B at N = 24, 111,936 B at N = 48.

With ``--budget-s`` no further agent count starts once that many seconds have passed (the
counts not run are named in ``results.agents_skipped_by_budget``).

    python benchmarks/marl_sampling.py            # N = 3, 6, 12, 24 (+ 48 on GPU)
    python benchmarks/marl_sampling.py --quick    # 256 MiB buffers
    python benchmarks/marl_sampling.py --smoke    # seconds; numbers meaningless
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import os
import random
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as python benchmarks/<name>.py: the package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import jax
import numpy as np

from benchmarks import harness
from benchmarks.sampling.memory import (
    ACTION_DIM,
    GIB,
    PY_BYTES_MARGIN,
    device_memory,
    fit_capacity,
    gather_counts,
    host_memory,
    memory_model,
    obs_dim,
    round_bytes,
    row_bytes,
    row_bytes_by_field,
    working_bytes,
)
from benchmarks.sampling.opponents import (
    PRIO_ALPHA,
    PRIO_EPS,
    VectorizedNumpy,
    numpy_buffers,
    python_bytes_per_agent_row,
    time_flashbax,
    time_library_prio,
    time_packed,
)
from benchmarks.sampling.rounds import (
    MODES,
    NEIGHBOR_REFS,
    NEIGHBOR_RUN,
    TRAINER_MODE,
    Round,
    make_sampler,
    modes_for,
    random_state,
    sampler_state,
)
from benchmarks.sampling.summary import E2E_NAME, SUMMARY_SCHEMA, read_e2e, summarize
from benchmarks.sampling.tables import plot, render_markdown
from jaxrl_pim import provenance
from jaxrl_pim.replay import SAMPLERS, Transition, make_buffer, state_from_priorities
from jaxrl_pim.testing import maddpg_numpy_sampler as np_ref
from jaxrl_pim.timing import PhaseTimer


def run_agents(n: int, args: argparse.Namespace, timer: PhaseTimer) -> dict[str, Any]:
    """All timings for one agent count."""
    o = obs_dim(n)
    py_bytes = python_bytes_per_agent_row(n)
    plan_py = py_bytes * PY_BYTES_MARGIN
    work = working_bytes(n, args.batch, args.on_cpu)
    if args.budget_bytes is not None:
        dev_free = host_free = args.budget_bytes
        how = f"fixed budget {args.budget_bytes / GIB:.3f} GiB"
    else:
        dev_free = int(args.memory["bytes"] * args.memory_fraction) - work
        host_free = int(args.host_memory["bytes"] * args.host_fraction) - (
            0 if args.on_cpu else 2 * round_bytes(n, args.batch)["output"])
        how = (f"{args.memory_fraction:.2f} x {args.memory['bytes'] / GIB:.1f} GiB - "
               f"{work / GIB:.2f} GiB working set")
    capacity = fit_capacity(n, args.capacity, dev_free, host_free, args.on_cpu, plan_py)
    if getattr(args, "fixed_capacity", None):
        capacity, how = args.fixed_capacity[n], "the all-cores pass's capacity"
    if capacity < args.batch:
        raise ValueError(f"N={n}: only {capacity} rows fit ({how}); need >= {args.batch}")
    limited = "requested" if capacity == args.capacity else "memory"
    print(f"N={n:2d}: capacity {capacity:,} rows on both sides ({limited}; {how}); "
          f"{capacity * row_bytes(n) / GIB:.2f} GiB of data + {capacity * n * py_bytes / GIB:.2f}"
          f" GiB of Python objects", flush=True)
    rb = round_bytes(n, args.batch)
    res: dict[str, Any] = {
        "num_agents": n, "obs_dim": o, "capacity": capacity, "capacity_limited_by": limited,
        "capacity_rule": how, "python_bytes_per_agent_row": py_bytes,
        "row_bytes": row_bytes_by_field(n), "buffer_bytes": capacity * row_bytes(n),
        "round_bytes": rb, "gather_counts": gather_counts(n, args.batch),
        "seconds": {s: {} for s in SAMPLERS},
    }
    key = jax.random.key(args.seed + n)
    rkey = jax.random.fold_in(key, 7)
    sstates = {}
    with timer.phase("priorities"):
        for i, s in enumerate(args.samplers):
            sstates[s] = sampler_state(s, capacity, jax.random.fold_in(key, i))
    # --- interleaved layout, the NumPy baseline over the same data, the headline pair.
    with timer.phase("fill"):
        bstate = random_state("interleaved", capacity, n, salt=args.seed * 16 + n)
    buffer = make_buffer("interleaved", capacity, n, o, ACTION_DIM)
    with timer.phase("numpy_fill"):
        host = {f: np.asarray(getattr(bstate.data, f)) for f in Transition._fields}
        res["numpy_shares_jax_memory"] = bool(
            host["obs"].ctypes.data == bstate.data.obs.unsafe_buffer_pointer()) if args.on_cpu \
            else False
        gc.disable()  # millions of tuples: no collections while building them
        try:
            bufs = numpy_buffers(host, capacity)
        finally:
            gc.enable()
        gc.freeze()  # and none that walk them during the timed rounds
    headline = Round(buffer, make_sampler("uniform", capacity), "interleaved_faithful", n,
                     args.batch)
    vec = VectorizedNumpy(host, args.batch, args.seed)
    with timer.phase("headline_rounds"):
        headline.best(bstate, sstates["uniform"], rkey, 1)  # compile and first donation
        vec()  # first touch of the preallocated batch
        random.seed(args.seed)
        numpy_s, vec_s, jax_s = [], [], []
        keys = jax.block_until_ready(jax.random.split(jax.random.fold_in(rkey, 1), args.repeats))
        for k in keys:
            original = functools.partial(np_ref.sample_round, bufs, args.batch)
            numpy_s.append(harness.seconds(original))
            vec_s.append(harness.seconds(vec))
            jax_s.append(headline(bstate, sstates["uniform"], k))
    res["numpy_seconds_by_round"] = numpy_s
    res["numpy_vectorized_seconds_by_round"] = vec_s
    res["interleaved_faithful_seconds_by_round"] = jax_s
    del bufs, host, vec
    gc.unfreeze()
    gc.collect()
    res["seconds"]["uniform"]["interleaved_faithful"] = min(jax_s)
    for s in args.samplers:
        sampler = make_sampler(s, capacity)
        for mode in modes_for("interleaved", s):
            if s == "uniform" and mode == "interleaved_faithful":
                continue
            fn = Round(buffer, sampler, mode, n, args.batch)
            with timer.phase("jax_rounds"):
                res["seconds"][s][mode] = fn.best(bstate, sstates[s], rkey, args.repeats)
            del fn
            gc.collect()
    prio = jax.block_until_ready(
        jax.random.exponential(jax.random.fold_in(key, 99), (capacity,)) + PRIO_EPS)
    lib_prio = jax.block_until_ready(state_from_priorities(prio, alpha=PRIO_ALPHA))
    if TRAINER_MODE != "per_agent":
        with timer.phase("library_prioritized_update"):
            res["library_prioritized_update_seconds"] = time_library_prio(
                buffer, bstate, lib_prio, TRAINER_MODE, n, args, rkey)
    del headline
    data = bstate.data
    del bstate
    gc.collect()
    with timer.phase("flashbax"):  # takes the interleaved buffer's memory (donated)
        res["flashbax_seconds"] = time_flashbax(data, n, args, rkey, prio)
    del data
    gc.collect()
    # --- packed layout [C, R] (built after the interleaved buffer is gone; same capacity).
    with timer.phase("fill"):
        bstate = random_state("packed", capacity, n, salt=args.seed * 16 + n + 8)
    with timer.phase("packed_rounds"):
        res.update(time_packed(bstate, n, args, rkey))
    del bstate
    gc.collect()
    # --- per-agent layout (built after the interleaved buffer is gone).
    with timer.phase("fill"):
        bstate = random_state("per_agent", capacity, n, salt=args.seed * 16 + n)
    buffer = make_buffer("per_agent", capacity, n, o, ACTION_DIM)
    for s in args.samplers:
        fn = Round(buffer, make_sampler(s, capacity), "per_agent", n, args.batch)
        with timer.phase("jax_rounds"):
            res["seconds"][s]["per_agent"] = fn.best(bstate, sstates[s], rkey, args.repeats)
        del fn
        gc.collect()
    if TRAINER_MODE == "per_agent":
        with timer.phase("library_prioritized_update"):
            res["library_prioritized_update_seconds"] = time_library_prio(
                buffer, bstate, lib_prio, TRAINER_MODE, n, args, rkey)
    res["trainer_mode"] = TRAINER_MODE
    del bstate, lib_prio, prio
    gc.collect()
    res["numpy_seconds"] = min(numpy_s)
    res["numpy_vectorized_seconds"] = min(vec_s)
    res["seconds"] = {s: {m: res["seconds"][s].get(m) for m in MODES} for s in SAMPLERS}
    sec = res["seconds"]
    print(f"N={n:2d} O={o:3d}: numpy {res['numpy_seconds'] * 1e3:9.1f} ms | uniform "
          + " / ".join(f"{m} {sec['uniform'][m] * 1e3:.2f}" for m in MODES) + " ms", flush=True)
    fb = res["flashbax_seconds"]
    print(f"       vectorised numpy {res['numpy_vectorized_seconds'] * 1e3:.2f} ms (packed rows "
          f"{res['numpy_vectorized_packed_seconds'] * 1e3:.2f} ms; the library's round over "
          f"them {res['library_packed_rows_seconds'] * 1e3:.2f} ms) | flashbax "
          f"uniform {fb['flashbax_uniform'] * 1e3:.2f} ms, prioritised "
          f"{fb['flashbax_prioritized'] * 1e3:.2f} ms vs library prioritised ({TRAINER_MODE}) "
          f"{res['library_prioritized_update_seconds'] * 1e3:.2f} ms", flush=True)
    return res


def _version(dist: str) -> str | None:
    """Installed version of a distribution, or None."""
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


#: One thread: XLA's CPU client sizes its intra-op pool by the process's CPU affinity, and
#: ``--xla_cpu_multi_thread_eigen=false`` keeps Eigen's kernels on the calling thread (jax
#: 0.10 has no ``intra_op_parallelism_threads`` flag: XLA_FLAGS takes only ``--xla_*``).
ONE_THREAD_XLA_FLAG = "--xla_cpu_multi_thread_eigen=false"
ONE_THREAD_ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def run_one_thread(argv: list[str], capacities: dict[int, int]) -> dict[str, Any]:
    """Run the measured part again in a child process pinned to one core (the first of this
    process's affinity mask, as ``taskset -c``), with :data:`ONE_THREAD_XLA_FLAG` and one
    BLAS/OpenMP thread, at the same capacities; returns its records."""
    import subprocess
    import tempfile

    from jaxrl_pim.xla_env import with_flags

    cpu = min(os.sched_getaffinity(0))
    env = {**os.environ, **ONE_THREAD_ENV}
    env["XLA_FLAGS"] = with_flags(env.get("XLA_FLAGS", ""), ONE_THREAD_XLA_FLAG)
    drop = {"--one-thread", "--no-one-thread", "--publish"}
    args = [a for a in argv if a not in drop]
    if "--out" in args:
        i = args.index("--out")
        del args[i:i + 2]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "one_thread.json"
        cmd = ["taskset", "-c", str(cpu), sys.executable, str(Path(__file__).resolve()), *args,
               "--thread-child", str(out), "--capacity-by-agents",
               json.dumps({str(k): v for k, v in capacities.items()})]
        print("one-thread pass: " + " ".join(cmd[:6]) + " ...", flush=True)
        subprocess.run(cmd, env=env, check=True)
        child = json.loads(out.read_text())
    child["how"] = (f"taskset -c {cpu}, XLA_FLAGS {ONE_THREAD_XLA_FLAG}, "
                    + ", ".join(f"{k}=1" for k in ONE_THREAD_ENV))
    return child


def thread_child(args: argparse.Namespace) -> int:
    """The one-thread pass's child: measure every agent count and the copy bandwidth, write
    the records (not a results file: the parent stores them in its own)."""
    timer = PhaseTimer()
    rows = [run_agents(n, args, timer) for n in args.agents if n in args.fixed_capacity]
    copy = harness.copy_bandwidth(max(round_bytes(r["num_agents"], args.batch)["output"]
                                      for r in rows))
    args.thread_child.write_text(json.dumps({
        "per_agents": rows, "copy_bandwidth": copy, "affinity": sorted(os.sched_getaffinity(0)),
        "xla_flags": os.environ.get("XLA_FLAGS", ""), "timing_s": timer.as_dict()}))
    return 0


def main(argv: list[str] | None = None) -> int:
    p = harness.parser(__doc__)
    p.add_argument("--agents", type=int, nargs="+", default=None,
                   help="agent counts (default 3 6 12 24, plus 48 on GPU; --smoke 3)")
    p.add_argument("--batch", type=int, default=1024,
                   help="rows per agent's mini-batch (must be 1,024 = 64 x 16 for the "
                        "neighbour sampler; default 1,024)")
    p.add_argument("--capacity", type=int, default=1_000_000,
                   help="requested rows; capped by memory (default 1,000,000)")
    p.add_argument("--budget-gib", type=float, default=None,
                   help="fixed memory budget for each side instead of the memory fit "
                        "(default: fit the memory; --quick 0.25, --smoke 0.01)")
    p.add_argument("--memory-fraction", type=float, default=None,
                   help="share of the device memory buffers and working set may use "
                        "(default CPU 0.6 of MemAvailable, GPU 0.9 of the XLA limit)")
    p.add_argument("--repeats", type=int, default=None,
                   help="timed rounds per mode; the NumPy and headline JAX rounds alternate "
                        "(default 5; --quick 3; --smoke 1)")
    p.add_argument("--seed", type=int, default=0)
    harness.add_budget(p, "agent count")
    p.add_argument("--one-thread", action=argparse.BooleanOptionalAction, default=None,
                   help="after the all-cores pass, run the measured part again on one thread "
                        "on both sides (a child process pinned to one core, XLA's Eigen pool "
                        "off) and report both (default: on for a CPU's full and quick runs, "
                        "off for --smoke and on GPU)")
    p.add_argument("--thread-child", type=Path, default=None, help=argparse.SUPPRESS)
    p.add_argument("--capacity-by-agents", type=str, default=None, help=argparse.SUPPRESS)
    p.add_argument("--e2e-results", type=Path, default=None,
                   help=f"MADDPG end-to-end results file for the fast mode's effect on return "
                        f"(default benchmarks/results/<device>/{E2E_NAME})")
    args = p.parse_args(argv)
    args.fixed_capacity = ({int(k): v for k, v in json.loads(args.capacity_by_agents).items()}
                           if args.capacity_by_agents else None)
    mode = harness.mode_of(args)
    # the one-thread child writes only its records (no results folder)
    path = None if args.thread_child else harness.output_path(args, "marl_sampling")
    backend = jax.default_backend()
    args.on_cpu = backend == "cpu"
    if args.agents is None:
        args.agents = [3] if mode == "smoke" else [3, 6, 12, 24] + ([] if args.on_cpu else [48])
    if args.budget_gib is None and mode != "full":
        args.budget_gib = 0.01 if mode == "smoke" else 0.25
    args.budget_bytes = None if args.budget_gib is None else int(args.budget_gib * GIB)
    if args.memory_fraction is None:
        args.memory_fraction = 0.6 if args.on_cpu else 0.9
    args.host_fraction = 0.6
    if not 0.0 < args.memory_fraction <= 1.0:
        raise ValueError("--memory-fraction must be in (0, 1]")
    args.repeats = args.repeats or {"full": 5, "quick": 3, "smoke": 1}[mode]
    args.samplers = ("uniform",) if mode == "smoke" else SAMPLERS  # smoke: fewer compiles
    for name in ("batch", "capacity", "repeats"):
        if getattr(args, name) < 1:
            raise ValueError(f"--{name} must be >= 1")
    if args.batch != NEIGHBOR_REFS * NEIGHBOR_RUN:
        raise ValueError(f"--batch must be {NEIGHBOR_REFS * NEIGHBOR_RUN} (neighbour 64 x 16)")
    args.memory = device_memory()
    args.host_memory = host_memory()
    if args.one_thread is None:
        args.one_thread = args.on_cpu and mode != "smoke"
    if args.thread_child is not None:
        return thread_child(args)
    run = harness.record(args, None if argv is None else [__file__, *argv])
    print(f"device memory: {args.memory['bytes'] / GIB:.1f} GiB ({args.memory['source']})",
          flush=True)
    timer = PhaseTimer()
    rows, skipped, budget = [], [], harness.Budget(args.budget_s)
    for n in args.agents:
        if rows and budget.spent():
            skipped.append(n)
            continue
        rows.append(run_agents(n, args, timer))
    if skipped:
        print(f"--budget-s {args.budget_s:g} spent; agent counts not run: {skipped}", flush=True)
    biggest = max(round_bytes(n, args.batch)["output"] for n in args.agents
                  if n not in skipped)
    with timer.phase("copy_bandwidth"):
        copy = harness.copy_bandwidth(biggest)
    if args.one_thread:
        with timer.phase("one_thread"):
            one_thread = run_one_thread(argv if argv is not None else sys.argv[1:],
                                        {r["num_agents"]: r["capacity"] for r in rows})
    e2e_path = args.e2e_results or harness.RESULTS / harness.device_dir() / E2E_NAME
    py_bytes = max(r["python_bytes_per_agent_row"] for r in rows) * PY_BYTES_MARGIN
    results = {
        "device": provenance.device_label(), "per_agents": rows, "copy_bandwidth": copy,
        "memory_model": memory_model(args.batch, py_bytes, args.capacity),
        "fast_mode_return": read_e2e(Path(e2e_path).resolve()),
    }
    if skipped:
        results["agents_skipped_by_budget"] = skipped
    if args.one_thread:
        results["one_thread"] = one_thread
    config = {
        "mode": mode, "agents": args.agents, "batch": args.batch,
        "requested_capacity": args.capacity, "budget_gib": args.budget_gib,
        "memory_fraction": None if args.budget_bytes is not None else args.memory_fraction,
        "host_fraction": args.host_fraction, "device_memory": args.memory,
        "host_memory": args.host_memory, "repeats": args.repeats, "seed": args.seed,
        "summary_schema": SUMMARY_SCHEMA,
        "action_dim": ACTION_DIM, "samplers": list(args.samplers),
        "one_thread": bool(args.one_thread), "trainer_mode": TRAINER_MODE,
        "baselines": {"flashbax": _version("flashbax"), "numpy": np.__version__},
        "neighbor": {"num_refs": NEIGHBOR_REFS, "run_length": NEIGHBOR_RUN},
        "prioritized": {"alpha": 0.6, "beta": 0.4, "priorities": "Exponential(1) per row"},
        "timing": "wall seconds per round; NumPy and the headline JAX round alternate, best "
                  "of --repeats each; other JAX modes best of --repeats after two warm-up "
                  "rounds (compile, first donation)",
    }
    rep = harness.write(path, run=run, config=config, results=results,
                        timing_s=timer.as_dict(), summarize=summarize,
                        markdown=render_markdown)
    try:
        plot(rep, path.with_suffix(".png"))
    except Exception as err:  # a missing plotting backend must not lose the measurements
        print(f"plot skipped: {err}", file=sys.stderr)
    s = rep["summary"]
    print(f"speed-up vs the original at 24 agents (faithful vs faithful): "
          f"{s['sampler_speedup_vs_original_24']}; vs vectorised NumPy "
          f"{s['sampler_speedup_vs_vectorized_numpy_24']}; vs flashbax uniform "
          f"{s['sampler_speedup_vs_flashbax_uniform_24']}; fast mode: "
          f"{s['fast_mode_sampler_speedup_24']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
