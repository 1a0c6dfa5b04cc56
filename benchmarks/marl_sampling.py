"""Multi-agent replay sampling benchmark: samplers x layouts vs agent count, against NumPy.

Reproduces the mini-batch sampling study of reference.md §2 (MADDPG on cooperative
navigation): one "update round" is the sampling every agent's update needs, timed for

* ``numpy`` -- the original MADDPG sampler (jaxrl_pim/testing/maddpg_numpy_sampler.py):
  per-agent Python lists of tuples, ``random.randint`` indices, and for each of the N agents a
  loop gathering ALL N agents' rows at its indices (N^2 ``sample_index`` calls, N^2 * B row
  lookups). Uniform sampling only, as in the original.
* ``per_agent`` -- JAX, ``per_agent`` layout, faithful mode: each agent draws its own indices
  (``[N, B]``) and gets all agents' data at them (output ``[N, N, B, ...]``).
* ``interleaved_faithful`` -- JAX, ``interleaved`` layout, same faithful per-agent indices:
  N gathers of B whole-time-step rows instead of N^2 gathers.
* ``interleaved`` -- JAX, ``interleaved`` layout, one index set shared by all agents: ONE
  gather of B rows per round (the layout reorganisation of the paper; agents share the
  mini-batch).

for each sampler (``uniform``, ``neighbor`` with 64 references x runs of 16, ``prioritized``
and ``info_prioritized`` with random priorities on every row). A JAX round is one jitted call
(index draws + gathers, output materialised, agent-major ``[N, ...]`` as the buffer's
``gather`` returns it, so the transpose is included); priority updates are not part of the
round. Times are best-of-``repeats`` wall seconds after a warm-up (compile) call; NumPy is
timed the same way in the same process.

Sizes: batch 1,024; observation length of cooperative navigation ``4 + 2N + 4(N-1)``; 5
action entries. Agents 3/6/12/24 on CPU, plus 48 on GPU. Every row is filled with
pseudo-random data (an integer hash of the element index; the buffer is full), so draws
cover the whole allocation. The NumPy baseline's tuples are views into the same host data,
over the first ``min(capacity, 50,000)`` rows (10,000 with ``--quick``): its per-row Python
objects cost about 1 KB per agent, and its time is dominated by the per-row Python work,
which does not depend on the number of rows.

Buffer capacity (rows) is the requested 1e6 capped by memory. One stored time step costs
``row_bytes(N) = 4 N (2 O + A + 2)`` bytes in either layout (float32 obs ``O``, action
``A = 5``, reward, next obs ``O``, done per agent): 516 B at N = 3, 28,320 B at N = 24 and
111,936 B at N = 48, so 1e6 rows of 24 agents take 28.3 GB -- more than the 24 GiB
(25.8 GB) of the whole development machine -- and 1e6 rows of 48 agents 112 GB. Both layouts
hold the same bytes and are built one after the other, never together. The cap
(:func:`fit_capacity`) is the largest capacity whose buffer (plus at most 68 B per row of
priority trees) fits ``memory_fraction`` of the device memory after the round's working set
(:func:`working_bytes`: the faithful ``[N, N, B, ...]`` gather output twice; on CPU also the
NumPy baseline's copy, Python objects and round output, which live in the same memory).
Device memory is the XLA allocator's ``bytes_limit`` on a GPU (75 % of the card by default)
and ``MemAvailable`` of ``/proc/meminfo`` at start on CPU (the machine is shared, so the
default CPU fraction is 0.6; GPU 0.9). ``--quick`` keeps a fixed 256 MiB budget;
``--budget-gib`` sets a fixed budget instead. The script prints the cap for each N, and the
report holds ``memory_model``: bytes per row by field and the largest buffer that fits 24
GiB, an 80 GB H100 and a 141 GB H200, for N = 3 to 48.

Run ``python benchmarks/marl_sampling.py [--quick]``; writes
``benchmarks/results/marl_sampling.{json,md,png}`` (``config.quick`` tells the mode).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

ROOT = Path(__file__).resolve().parents[1]

from jaxrl_pim import report  # noqa: E402
from jaxrl_pim.replay import (  # noqa: E402
    BufferState,
    Transition,
    info_prioritized,
    make_buffer,
    neighbor,
    prioritized,
    state_from_priorities,
    uniform,
)
from jaxrl_pim.testing import maddpg_numpy_sampler as np_ref  # noqa: E402
from jaxrl_pim.timing import PhaseTimer, time_call  # noqa: E402

ACTION_DIM = 5
SAMPLERS = ("uniform", "neighbor", "prioritized", "info_prioritized")
MODES = ("per_agent", "interleaved_faithful", "interleaved")
NEIGHBOR_REFS, NEIGHBOR_RUN = 64, 16
GIB = 2**30
MIB = 2**20
# The NumPy baseline's Python objects per stored row and agent (tuple + five array views).
PY_BYTES_PER_AGENT_ROW = 1024
# Priority state per row, upper bound: the prioritised sum tree, the info-prioritised sum and
# max trees (2P float32 each, P < 2C leaves) and the float32 priority draw: 4 (2 + 4) P + 4 C
# + transient tree levels 8 P <= 68 C.
PRIORITY_BYTES_PER_ROW = 68
# Memory sizes the report's memory model is evaluated for (bytes). H100 / H200: the card's
# memory as nvidia-smi reports it (81,559 MiB and 143,771 MiB), of which the XLA allocator
# takes 75 % by default (XLA_PYTHON_CLIENT_MEM_FRACTION).
MEMORY_TARGETS = {
    "cpu_24GiB": 24 * GIB,
    "h100_80GB_xla_default_75pct": int(0.75 * 81_559 * MIB),
    "h100_80GB_xla_95pct": int(0.95 * 81_559 * MIB),
    "h200_141GB_xla_default_75pct": int(0.75 * 143_771 * MIB),
    "h200_141GB_xla_95pct": int(0.95 * 143_771 * MIB),
}


def obs_dim(num_agents: int) -> int:
    """Cooperative-navigation observation length ``4 + 2L + 4(N-1)`` with ``L = N``."""
    return 4 + 2 * num_agents + 4 * (num_agents - 1)


def row_bytes_by_field(num_agents: int) -> dict[str, int]:
    """Bytes of one stored time step (all ``N`` agents, float32) per field, and ``total``."""
    n, o = num_agents, obs_dim(num_agents)
    fields = {"obs": 4 * n * o, "action": 4 * n * ACTION_DIM, "reward": 4 * n,
              "next_obs": 4 * n * o, "done": 4 * n}
    return {**fields, "total": sum(fields.values())}


def row_bytes(num_agents: int) -> int:
    """Bytes of one stored time step (all agents, float32): ``4 N (2 O + A + 2)``."""
    return 4 * num_agents * (2 * obs_dim(num_agents) + ACTION_DIM + 2)


def working_bytes(num_agents: int, batch: int, numpy_rows: int, host_is_device: bool) -> int:
    """Memory the benchmark needs besides the buffer (bytes).

    The faithful round's gather output ``[N, N, B, ...]`` (``N B row_bytes``) counted twice
    (the interleaved faithful round transposes a copy) and the device-side slice of
    ``numpy_rows`` rows copied out for the NumPy baseline; with ``host_is_device`` (CPU) also
    the baseline's Python objects and its round output (twice: per-row lists, then the
    stacked arrays).
    """
    rb = row_bytes(num_agents)
    work = 2 * num_agents * batch * rb + numpy_rows * rb
    if host_is_device:
        work += numpy_rows * num_agents * PY_BYTES_PER_AGENT_ROW
        work += 2 * num_agents * batch * rb
    return work


def fit_capacity(num_agents: int, requested: int, free_bytes: int) -> int:
    """Largest capacity ``<= requested`` whose buffer and priority state fit ``free_bytes``."""
    per_row = row_bytes(num_agents) + PRIORITY_BYTES_PER_ROW
    return int(max(0, min(requested, free_bytes // per_row)))


def device_memory() -> dict[str, Any]:
    """Memory of the default device: ``{"bytes", "source"}``.

    GPU/TPU: the XLA allocator's ``bytes_limit``. CPU: ``MemAvailable`` (falling back to the
    physical memory) -- what other processes leave free now, since host memory is shared.
    """
    dev = jax.devices()[0]
    try:
        stats = dev.memory_stats() or {}
    except Exception:  # noqa: BLE001 -- some backends do not implement memory_stats
        stats = {}
    if stats.get("bytes_limit"):
        return {"bytes": int(stats["bytes_limit"]),
                "source": f"XLA allocator bytes_limit of {dev.device_kind}"}
    info = {}
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            key, val = line.split(":", 1)
            info[key] = int(val.split()[0]) * 1024
    except (OSError, ValueError):
        pass
    if "MemAvailable" in info:
        return {"bytes": info["MemAvailable"], "total_bytes": info.get("MemTotal"),
                "source": "MemAvailable of /proc/meminfo at start (host memory, shared)"}
    phys = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return {"bytes": int(phys), "source": "physical memory (sysconf)"}


def memory_model(batch: int, numpy_rows: int, requested: int = 1_000_000) -> dict[str, Any]:
    """Bytes per row and the largest buffer that fits each of ``MEMORY_TARGETS``, N = 3..48.

    ``rows_buffer_only``: the memory divided by ``row_bytes`` (nothing else resident);
    ``rows_benchmark``: after the benchmark's working set and priority trees (CPU targets count
    the NumPy baseline too). ``fits_requested``: whether ``requested`` rows fit the latter.
    """
    model: dict[str, Any] = {}
    for n in (3, 6, 12, 24, 48):
        rb = row_bytes(n)
        per_target = {}
        for name, mem in MEMORY_TARGETS.items():
            host = name.startswith("cpu")
            free = mem - working_bytes(n, batch, numpy_rows, host)
            rows = fit_capacity(n, 10**12, free)
            per_target[name] = {"memory_bytes": mem, "rows_buffer_only": mem // rb,
                                "rows_benchmark": rows, "fits_requested": rows >= requested}
        model[str(n)] = {"obs_dim": obs_dim(n), "row_bytes": row_bytes_by_field(n),
                         "requested_rows": requested, "requested_bytes": requested * rb,
                         "targets": per_target}
    return model


def gather_counts(num_agents: int, batch: int) -> dict[str, dict[str, int]]:
    """Logical gathers (one index set read from one array) and row reads per round, per field.

    numpy / per_agent: each of N drawing agents reads each of N agents' buffers -> N^2
    gathers of B rows. interleaved_faithful: N gathers of B time-step rows. interleaved
    (shared): 1 gather of B rows.
    """
    n, b = num_agents, batch
    return {
        "numpy": {"gathers": n * n, "row_reads": n * n * b},
        "per_agent": {"gathers": n * n, "row_reads": n * n * b},
        "interleaved_faithful": {"gathers": n, "row_reads": n * b},
        "interleaved": {"gathers": 1, "row_reads": b},
    }


def make_sampler(name: str, capacity: int):
    if name == "uniform":
        return uniform()
    if name == "neighbor":
        return neighbor(NEIGHBOR_REFS, NEIGHBOR_RUN)
    if name == "prioritized":
        return prioritized(capacity, alpha=0.6, beta=0.4)
    if name == "info_prioritized":
        return info_prioritized(capacity, alpha=0.6, beta=0.4)
    raise ValueError(f"unknown sampler {name!r}")


def _hash_fill(shape: tuple[int, ...], salt: int) -> jax.Array:
    """Pseudo-random float32 in [0, 1) from an integer hash of the element index (cheap on any
    device, unlike counter-based PRNG for GiB-sized buffers; the values do not matter for
    timing, only that every row is distinct memory)."""
    rows, rest = shape[0], int(np.prod(shape[1:]))

    @jax.jit
    def fill():
        # Element index ``r * rest + c`` in wrapping uint32 arithmetic (fields may hold
        # more than 2^32 elements; the hash only needs distinct-looking values).
        r = jax.lax.broadcasted_iota(jnp.uint32, (rows, rest), 0)
        c = jax.lax.broadcasted_iota(jnp.uint32, (rows, rest), 1)
        x = r * jnp.uint32(rest % 2**32) + c + jnp.uint32(salt * 0x9E3779B9 % 2**32)
        x = x * jnp.uint32(2654435761)
        x = x ^ (x >> 16)
        x = x * jnp.uint32(0x45D9F3B)
        x = x ^ (x >> 16)
        return ((x >> 8).astype(jnp.float32) * (1.0 / 2**24)).reshape(shape)

    return fill()


def random_state(layout: str, capacity: int, n: int, salt: int) -> BufferState:
    """A full buffer (``size = capacity``, ``insert_pos = 0``) of pseudo-random float32 data."""
    o = obs_dim(n)
    shapes = {
        "obs": (n, o),
        "action": (n, ACTION_DIM),
        "reward": (n,),
        "next_obs": (n, o),
        "done": (n,),
    }
    arrays = {}
    for i, (name, shape) in enumerate(shapes.items()):
        full = (n, capacity, *shape[1:]) if layout == "per_agent" else (capacity, *shape)
        arrays[name] = _hash_fill(full, salt + i)
    state = BufferState(Transition(**arrays), jnp.int32(0), jnp.int32(capacity))
    return jax.block_until_ready(state)


def sampler_state(name: str, capacity: int, key: jax.Array):
    """Sampler state with an Exponential(1) priority on every row (stateless: ``()``)."""
    if name in ("uniform", "neighbor"):
        return ()
    prio = jax.random.exponential(key, (capacity,)) + 1e-6
    state = state_from_priorities(prio, alpha=0.6, max_tree=name == "info_prioritized")
    return jax.block_until_ready(state)


def modes_for(layout: str, sampler: str) -> tuple[str, ...]:
    """Modes timed for a layout: ``interleaved_faithful`` only with ``uniform`` (it isolates the
    layout effect; the sampler's own cost is the same in every layout)."""
    if layout == "per_agent":
        return ("per_agent",)
    return ("interleaved_faithful", "interleaved") if sampler == "uniform" else ("interleaved",)


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a / b


def make_round(buffer, sampler, mode: str, n: int, batch: int):
    """Jitted ``round(bstate, sstate, key) -> (batch, weights)`` for one sampling mode."""

    def one_draw(bstate, sstate, key):
        idx, w, _ = sampler.sample(sstate, key, bstate.size, bstate.insert_pos, batch)
        return idx, w

    if mode == "interleaved":

        def round_fn(bstate, sstate, key):
            idx, w = one_draw(bstate, sstate, key)
            return buffer.gather(bstate, idx), w

    else:

        def round_fn(bstate, sstate, key):
            keys = jax.random.split(key, n)
            idx, w = jax.vmap(one_draw, in_axes=(None, None, 0))(bstate, sstate, keys)
            return buffer.gather(bstate, idx), w

    return jax.jit(round_fn)


def numpy_buffers(host: dict[str, np.ndarray], capacity: int) -> list[np_ref.ReplayBuffer]:
    """Per-agent list-of-tuples buffers whose arrays are views into ``host`` ([C, N, ...])."""
    n = host["obs"].shape[1]
    bufs = np_ref.make_buffers(n, capacity)
    obs, act, rew, nxt, done = (host[f] for f in Transition._fields)
    for t in range(capacity):
        np_ref.add_step(bufs, obs[t], act[t], rew[t], nxt[t], done[t])
    return bufs


def run_agents(n: int, args: argparse.Namespace, timer: PhaseTimer) -> dict[str, Any]:
    """All timings for one agent count."""
    o = obs_dim(n)
    if args.budget_bytes is not None:
        free = args.budget_bytes
        how = f"fixed budget {args.budget_bytes / GIB:.2f} GiB"
    else:
        free = int(args.memory["bytes"] * args.memory_fraction) - working_bytes(
            n, args.batch, args.numpy_rows, args.on_cpu)
        how = (f"{args.memory_fraction:.2f} x {args.memory['bytes'] / GIB:.1f} GiB device "
               f"memory - {working_bytes(n, args.batch, args.numpy_rows, args.on_cpu) / GIB:.2f}"
               " GiB working set")
    capacity = fit_capacity(n, args.capacity, free)
    if capacity < NEIGHBOR_REFS * NEIGHBOR_RUN:
        raise ValueError(f"N={n}: only {capacity} rows fit ({how}); need >= {args.batch}")
    limited = "requested" if capacity == args.capacity else "memory"
    cap_text = "as requested" if limited == "requested" else "capped by memory"
    print(f"N={n:2d}: capacity {capacity:,} rows x {row_bytes(n):,} B = "
          f"{capacity * row_bytes(n) / GIB:.2f} GiB ({cap_text}; "
          f"{how}; 1e6 rows would need {1e6 * row_bytes(n) / 1e9:.1f} GB)", flush=True)
    res: dict[str, Any] = {
        "num_agents": n,
        "obs_dim": o,
        "capacity": capacity,
        "capacity_limited_by": limited,
        "capacity_rule": how,
        "row_bytes": row_bytes_by_field(n),
        "buffer_bytes": capacity * row_bytes(n),
        "gather_counts": gather_counts(n, args.batch),
        "seconds": {s: {} for s in SAMPLERS},
    }
    key = jax.random.key(args.seed + n)
    numpy_rows = min(capacity, args.numpy_rows)
    res["numpy_rows"] = numpy_rows
    sstates = {}
    with timer.phase("priorities"):
        for i, s in enumerate(SAMPLERS):
            sstates[s] = sampler_state(s, capacity, jax.random.fold_in(key, i))
    for layout in ("interleaved", "per_agent"):
        with timer.phase("fill"):
            bstate = random_state(layout, capacity, n, salt=args.seed * 16 + n)
        buffer = make_buffer(layout, capacity, n, o, ACTION_DIM)
        if layout == "interleaved":
            with timer.phase("numpy_fill"):
                host = {
                    f: np.asarray(getattr(bstate.data, f)[:numpy_rows])
                    for f in Transition._fields
                }
                bufs = numpy_buffers(host, numpy_rows)
            with timer.phase("numpy_rounds"):
                random.seed(args.seed)
                res["seconds"]["numpy"] = time_call(
                    lambda bufs=bufs: np_ref.sample_round(bufs, args.batch),
                    args.numpy_repeats,
                    warmup=0,
                )
            del bufs, host
            gc.collect()
        for s in SAMPLERS:
            sampler = make_sampler(s, capacity)
            for mode in modes_for(layout, s):
                fn = make_round(buffer, sampler, mode, n, args.batch)
                rkey = jax.random.fold_in(key, 7)
                with timer.phase("jax_rounds"):
                    res["seconds"][s][mode] = time_call(
                        lambda fn=fn, b=bstate, ss=sstates[s], k=rkey: fn(b, ss, k), args.repeats
                    )
                del fn
                gc.collect()
        del bstate
        gc.collect()
    numpy_s = res["seconds"].pop("numpy")
    res["numpy_seconds"] = numpy_s
    sec = {s: {m: res["seconds"][s].get(m) for m in MODES} for s in SAMPLERS}
    res["seconds"] = sec
    res["speedup_vs_numpy"] = {s: {m: _ratio(numpy_s, sec[s][m]) for m in MODES} for s in SAMPLERS}
    uni = sec["uniform"]
    res["layout_speedup_faithful"] = uni["per_agent"] / uni["interleaved_faithful"]
    res["layout_speedup_shared"] = uni["per_agent"] / uni["interleaved"]
    res["neighbor_vs_uniform_change"] = {
        m: sec["neighbor"][m] / uni[m] - 1.0 for m in ("per_agent", "interleaved")
    }
    res["prioritized_over_info_prioritized"] = {
        m: sec["prioritized"][m] / sec["info_prioritized"][m] for m in ("per_agent", "interleaved")
    }
    print(
        f"N={n:2d} O={o:3d} capacity={capacity:,}: numpy {numpy_s * 1e3:9.1f} ms | "
        + " | ".join(
            f"{s} " + "/".join(
                "-" if sec[s][m] is None else f"{sec[s][m] * 1e3:.2f}" for m in MODES
            )
            for s in SAMPLERS
        )
        + " ms (per_agent/interleaved_faithful/interleaved)",
        flush=True,
    )
    return res


def _fmt_load(x: float | None) -> str:
    return "?" if x is None else f"{x:.1f}"


def markdown(rep: dict[str, Any]) -> str:
    """Markdown table of a report (round times in ms and speed-ups over NumPy)."""
    cfg, summ = rep["config"], rep["summary"]
    lines = [
        "# Multi-agent replay sampling (one update round, batch "
        f"{cfg['batch']:,})",
        "",
        f"Device: {summ['device']}; jax {rep['system']['jax']}; CPU {rep['system']['cpu']} "
        f"({rep['system']['cpu_count']} cores); mode {'quick' if cfg['quick'] else 'full'}; "
        f"1-min load average {_fmt_load(summ.get('load_average_1min_start'))} at start (a load far "
        "above the core count means other jobs shared the machine and times are inflated).",
        "",
        "Round = every agent's mini-batch. `numpy` = original list-of-tuples sampler "
        "(N^2 gathers, uniform); `per_agent` = JAX per-agent layout, per-agent indices "
        "(N^2 gathers); `interleaved_faithful` = interleaved layout, per-agent indices "
        "(N gathers); `interleaved` = interleaved layout, one shared index set (1 gather). "
        "Times: best-of wall ms; `-` = not timed (interleaved_faithful only with uniform). "
        "NumPy is always uniform sampling: the speed-up columns compare each JAX sampler's "
        "round with the original uniform round.",
        "",
        "| N | obs | capacity | sampler | numpy ms | per_agent ms | interleaved_faithful ms "
        "| interleaved ms | interleaved vs numpy | per_agent vs numpy |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rep["results"]["per_agents"]:
        for s in SAMPLERS:
            t = r["seconds"][s]

            def ms(x):
                return "-" if x is None else f"{x * 1e3:.2f}"

            lines.append(
                f"| {r['num_agents']} | {r['obs_dim']} | {r['capacity']:,} | {s} | "
                f"{r['numpy_seconds'] * 1e3:.1f} | {ms(t['per_agent'])} | "
                f"{ms(t['interleaved_faithful'])} | {ms(t['interleaved'])} | "
                f"{r['speedup_vs_numpy'][s]['interleaved']:.0f}x | "
                f"{r['speedup_vs_numpy'][s]['per_agent']:.1f}x |"
            )
    lines += [
        "",
        "Layout effect (uniform sampling): per_agent round time over interleaved round time.",
        "",
        "| N | faithful (N^2 -> N gathers) | shared (N^2 -> 1 gather) | paper (layout) |",
        "|---|---|---|---|",
    ]
    paper = summ.get("paper_layout_speedup_by_agents", {})
    for r in rep["results"]["per_agents"]:
        ref_x = paper.get(str(r["num_agents"]))
        lines.append(
            f"| {r['num_agents']} | {r['layout_speedup_faithful']:.2f}x | "
            f"{r['layout_speedup_shared']:.1f}x | {'-' if ref_x is None else f'{ref_x}x'} |"
        )
    lines += ["", *memory_markdown(rep)]
    lines += [
        "",
        "Gathers per round per field (analytic): numpy and per_agent N^2, "
        "interleaved_faithful N, interleaved 1.",
        "",
        "Summary:",
        "",
    ]
    for k, v in summ.items():
        if isinstance(v, float):
            lines.append(f"* `{k}`: {v:.3g}")
        elif not isinstance(v, dict | list):
            lines.append(f"* `{k}`: {v}")
    return "\n".join(lines) + "\n"


def memory_markdown(rep: dict[str, Any]) -> list[str]:
    """Lines explaining the buffer capacities: the memory model and this run's caps."""
    cfg = rep["config"]
    mem = rep["results"].get("memory_model")
    lines = []
    dm = cfg.get("device_memory")
    if dm is not None:
        rule = (f"fixed budget {cfg['budget_gib']} GiB per layout"
                if cfg.get("budget_gib") is not None else
                f"{cfg['memory_fraction']} x device memory minus the working set")
        lines += [
            f"Capacity rule of this run: {rule}; device memory {dm['bytes'] / GIB:.1f} GiB "
            f"({dm['source']}). Capacity per N: "
            + ", ".join(f"{r['num_agents']}: {r['capacity']:,} rows "
                        f"({r['buffer_bytes'] / GIB:.2f} GiB, "
                        f"{r.get('capacity_limited_by', 'memory')})"
                        for r in rep["results"]["per_agents"]) + ".",
            "",
        ]
    if not mem:
        return lines
    names = list(next(iter(mem.values()))["targets"])
    lines += [
        "Buffer size vs memory (float32; both layouts store the same bytes per row: obs O, "
        "action 5, reward, next obs O, done per agent, `4 N (2 O + 7)` B). Largest "
        "capacity in rows: memory / row bytes (buffer alone), and after the benchmark's "
        "working set and priority trees (CPU: NumPy baseline included). H100/H200: the XLA "
        "allocator's share of the card (75 % default, `XLA_PYTHON_CLIENT_MEM_FRACTION`).",
        "",
        "| N | obs | bytes/row | 1e6 rows GB | " + " | ".join(
            f"{n} (buffer only / benchmark)" for n in names) + " |",
        "|---|---|---|---|" + "---|" * len(names),
    ]
    for n, m in mem.items():
        cells = []
        for name in names:
            t = m["targets"][name]
            ok = " (1e6 fits)" if t["fits_requested"] else ""
            cells.append(f"{t['rows_buffer_only']:,} / {t['rows_benchmark']:,}{ok}")
        lines.append(f"| {n} | {m['obs_dim']} | {m['row_bytes']['total']:,} | "
                     f"{m['requested_bytes'] / 1e9:.1f} | " + " | ".join(cells) + " |")
    return lines


def plot(rep: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = rep["results"]["per_agents"]
    ns = [r["num_agents"] for r in rows]
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.4))
    ax = axes[0]
    ax.plot(ns, [r["numpy_seconds"] * 1e3 for r in rows], "k-o", label="numpy (original)")
    for m, style in zip(MODES, ("-s", "-^", "-d"), strict=True):
        ax.plot(ns, [r["seconds"]["uniform"][m] * 1e3 for r in rows], style, label=f"JAX {m}")
    ax.set(xscale="log", yscale="log", xlabel="agents N", ylabel="round time (ms)",
           title="uniform sampling: layouts vs NumPy")
    ax.set_xticks(ns, [str(n) for n in ns])
    ax.minorticks_off()
    ax.legend(fontsize=8)
    ax = axes[1]
    for s in SAMPLERS:
        ax.plot(ns, [r["seconds"][s]["interleaved"] * 1e3 for r in rows], "-o",
                label=f"{s} (interleaved)")
        ax.plot(ns, [r["seconds"][s]["per_agent"] * 1e3 for r in rows], "--x",
                label=f"{s} (per_agent)")
    ax.set(xscale="log", yscale="log", xlabel="agents N", ylabel="round time (ms)",
           title="samplers")
    ax.set_xticks(ns, [str(n) for n in ns])
    ax.minorticks_off()
    ax.legend(fontsize=7, ncol=1, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.suptitle(f"MADDPG replay sampling, batch {rep['config']['batch']} -- "
                 f"{rep['summary']['device']}", fontsize=10)
    fig.tight_layout()
    report.atomic_save(path, lambda tmp: fig.savefig(tmp, dpi=110))
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="smaller buffers (256 MiB budget) and fewer repeats")
    parser.add_argument("--agents", type=int, nargs="+", default=None,
                        help="agent counts (default 3 6 12 24, plus 48 on GPU)")
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--capacity", type=int, default=1_000_000,
                        help="requested rows; capped by the memory budget")
    parser.add_argument("--budget-gib", type=float, default=None,
                        help="fixed buffer memory budget per layout (default: fit the device "
                        "memory, see --memory-fraction; --quick 0.25)")
    parser.add_argument("--memory-fraction", type=float, default=None,
                        help="share of the device memory the buffer and working set may use "
                        "(default CPU 0.6 of MemAvailable -- a shared host --, GPU 0.9 of the "
                        "XLA allocator limit)")
    parser.add_argument("--repeats", type=int, default=None, help="JAX timing repeats")
    parser.add_argument("--numpy-repeats", type=int, default=None)
    parser.add_argument("--numpy-rows", type=int, default=None,
                        help="rows in the NumPy baseline's lists (default min(capacity, 50,000);"
                        " 10,000 with --quick): its per-row Python objects cost ~1 KB per agent")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    parser.add_argument("--from-json", type=Path, default=None,
                        help="only rewrite the Markdown table and plot from an existing report")
    args = parser.parse_args(argv)
    if args.from_json is not None:
        rep = json.loads(args.from_json.read_text())
        md = markdown(rep)
        out_md = args.from_json.with_suffix(".md")
        report.atomic_save(out_md, lambda tmp: Path(tmp).write_text(md))
        plot(rep, args.from_json.with_suffix(".png"))
        print(f"wrote {out_md} and {args.from_json.with_suffix('.png')}")
        return 0

    backend = jax.default_backend()
    on_cpu = backend == "cpu"
    if args.agents is None:
        args.agents = [3, 6, 12, 24] + ([] if on_cpu else [48])
    if args.budget_gib is None and args.quick:
        args.budget_gib = 0.25
    args.budget_bytes = None if args.budget_gib is None else int(args.budget_gib * GIB)
    if args.memory_fraction is None:
        args.memory_fraction = 0.6 if on_cpu else 0.9
    if not 0.0 < args.memory_fraction <= 1.0:
        raise ValueError("--memory-fraction must be in (0, 1]")
    args.on_cpu = on_cpu
    args.memory = device_memory()
    print(f"device memory: {args.memory['bytes'] / GIB:.1f} GiB ({args.memory['source']}); "
          + ("fixed budget " + f"{args.budget_gib} GiB" if args.budget_bytes is not None
             else f"buffers may use {args.memory_fraction:.2f} of it minus the working set"),
          flush=True)
    args.repeats = args.repeats or (2 if args.quick else 5)
    args.numpy_repeats = args.numpy_repeats or (1 if args.quick else 2)
    args.numpy_rows = args.numpy_rows or (10_000 if args.quick else 50_000)
    for name in ("batch", "capacity", "repeats", "numpy_repeats", "numpy_rows"):
        if getattr(args, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be >= 1")
    if args.batch != NEIGHBOR_REFS * NEIGHBOR_RUN:
        raise ValueError(f"--batch must be {NEIGHBOR_REFS * NEIGHBOR_RUN} (neighbour 64 x 16)")

    timer = PhaseTimer()
    load_start = os.getloadavg()[0]
    rows = [run_agents(n, args, timer) for n in args.agents]
    load_end = os.getloadavg()[0]
    by_n = {r["num_agents"]: r for r in rows}
    r24 = by_n.get(24)
    mem = memory_model(args.batch, args.numpy_rows, args.capacity)
    summary = {
        "device": report.device_label(),
        "backend": backend,
        "sampler_speedup_vs_numpy_24": (
            r24["speedup_vs_numpy"]["uniform"]["interleaved"] if r24 else None
        ),
        "faithful_interleaved_speedup_vs_numpy_24": (
            r24["speedup_vs_numpy"]["uniform"]["interleaved_faithful"] if r24 else None
        ),
        "per_agent_speedup_vs_numpy_24": (
            r24["speedup_vs_numpy"]["uniform"]["per_agent"] if r24 else None
        ),
        "target_speedup_24": 10.0,
        "target_met": (r24["speedup_vs_numpy"]["uniform"]["interleaved"] >= 10.0) if r24 else None,
        "layout_speedup_faithful_by_agents": {
            str(r["num_agents"]): r["layout_speedup_faithful"] for r in rows
        },
        "paper_layout_speedup_by_agents": {"3": 1.36, "6": 2.26, "12": 4.41, "24": 9.55},
        "gathers_per_round_24": gather_counts(24, args.batch) if r24 else None,
        "gather_reduction_per_agent_to_interleaved_24": (24 if r24 else None),
        "neighbor_vs_uniform_time_change_24_per_agent": (
            r24["neighbor_vs_uniform_change"]["per_agent"] if r24 else None
        ),
        "paper_neighbor_sampling_time_change_24": -0.372,
        "prioritized_over_info_prioritized_24_interleaved": (
            r24["prioritized_over_info_prioritized"]["interleaved"] if r24 else None
        ),
        "capacity_by_agents": {str(r["num_agents"]): r["capacity"] for r in rows},
        "capacity_limited_by_agents": {
            str(r["num_agents"]): r["capacity_limited_by"] for r in rows
        },
        "device_memory_gib": args.memory["bytes"] / GIB,
        "bytes_per_row_24": row_bytes(24),
        "buffer_gb_1e6_rows_24": 1e6 * row_bytes(24) / 1e9,
        "max_rows_24_in_24GiB_buffer_only": mem["24"]["targets"]["cpu_24GiB"]["rows_buffer_only"],
        "max_rows_24_in_24GiB_benchmark": mem["24"]["targets"]["cpu_24GiB"]["rows_benchmark"],
        "fits_1e6_rows_24_h100_80GB": (
            mem["24"]["targets"]["h100_80GB_xla_default_75pct"]["fits_requested"]),
        "fits_1e6_rows_48_h100_80GB": (
            mem["48"]["targets"]["h100_80GB_xla_95pct"]["fits_requested"]),
        "load_average_1min_start": load_start,
        "load_average_1min_end": load_end,
        "gpu": None if on_cpu else report.device_label(),
        "gpu_note": (
            "no GPU in this run: GPU fields are null; run this script unmodified on a GPU host "
            "(adds N = 48; the buffer is sized to the GPU memory)" if on_cpu else "GPU run"
        ),
    }
    config = {
        "quick": args.quick,
        "agents": args.agents,
        "batch": args.batch,
        "requested_capacity": args.capacity,
        "budget_gib": args.budget_gib,
        "memory_fraction": None if args.budget_bytes is not None else args.memory_fraction,
        "device_memory": args.memory,
        "repeats": args.repeats,
        "numpy_repeats": args.numpy_repeats,
        "numpy_rows": args.numpy_rows,
        "seed": args.seed,
        "action_dim": ACTION_DIM,
        "neighbor": {"num_refs": NEIGHBOR_REFS, "run_length": NEIGHBOR_RUN},
        "prioritized": {"alpha": 0.6, "beta": 0.4, "priorities": "Exponential(1) per row"},
        "timing": "best-of-repeats wall seconds per round after one warm-up (compile) call",
    }
    rep = report.make_report(config, {"per_agents": rows, "memory_model": mem}, timer.as_dict(),
                             summary)
    stem = "marl_sampling"
    path = report.write_json(args.out / f"{stem}.json", rep)
    rep = json.loads(path.read_text())
    md = markdown(rep)
    report.atomic_save(args.out / f"{stem}.md", lambda tmp: Path(tmp).write_text(md))
    plot(rep, args.out / f"{stem}.png")
    print(f"wrote {path} (+ .md, .png); speed-up vs numpy at 24 agents: "
          f"{summary['sampler_speedup_vs_numpy_24']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
