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
import time
import tracemalloc
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as python benchmarks/<name>.py: the package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import jax
import jax.numpy as jnp
import numpy as np

from benchmarks import harness
from jaxrl_pim import report
from jaxrl_pim.marl import MARLConfig
from jaxrl_pim.replay import (
    SAMPLERS,
    BufferState,
    Transition,
    gather_into,
    gather_rows,
    info_prioritized,
    make_buffer,
    neighbor,
    prioritized,
    state_from_priorities,
    uniform,
)
from jaxrl_pim.testing import maddpg_numpy_sampler as np_ref
from jaxrl_pim.timing import PhaseTimer

ACTION_DIM = 5
MODES = ("per_agent", "interleaved_faithful", "interleaved_faithful_agent_major", "interleaved")
FAITHFUL_ONLY_UNIFORM = ("interleaved_faithful", "interleaved_faithful_agent_major")
NEIGHBOR_REFS, NEIGHBOR_RUN = 64, 16
GIB = 2**30
MIB = 2**20
# Priority state per row, upper bound: the prioritised sum tree, the info-prioritised sum and
# max trees (2P float32 each, P < 2C leaves) and the float32 priority draw: 4 (2 + 4) P + 4 C
# + transient tree levels 8 P <= 68 C.
PRIORITY_BYTES_PER_ROW = 68
PY_BYTES_MARGIN = 1.25  # planning margin on the measured Python bytes per agent and row
MEMORY_TARGETS = {
    "cpu_24GiB": 24 * GIB,
    "h100_80GB_xla_default_75pct": int(0.75 * 81_559 * MIB),
    "h100_80GB_xla_95pct": int(0.95 * 81_559 * MIB),
    "h200_141GB_xla_default_75pct": int(0.75 * 143_771 * MIB),
    "h200_141GB_xla_95pct": int(0.95 * 143_771 * MIB),
}
E2E_NAME = "marl_e2e.json"
MIN_RETURN_SEEDS = 4


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


def round_bytes(num_agents: int, batch: int) -> dict[str, int]:
    """Bytes per faithful round: the batch (``output``), the least traffic any implementation
    moves (read the rows, write the batch: ``2 * output``) and the agent-major JAX order's
    (gather then transpose: ``4 * output``); the fast mode's batch is ``batch * row_bytes``."""
    out = num_agents * batch * row_bytes(num_agents)
    return {"output": out, "min_traffic": 2 * out, "agent_major_traffic": 4 * out,
            "fast_mode_output": batch * row_bytes(num_agents),
            "fast_mode_min_traffic": 2 * batch * row_bytes(num_agents)}


def python_bytes_per_agent_row(num_agents: int, rows: int = 1000) -> float:
    """Python heap bytes the original sampler's list-of-tuples costs per agent and stored row
    (``tracemalloc`` over ``rows`` steps whose arrays are views of existing data)."""
    o = obs_dim(num_agents)
    host = {"obs": np.zeros((rows, num_agents, o), np.float32),
            "action": np.zeros((rows, num_agents, ACTION_DIM), np.float32),
            "reward": np.zeros((rows, num_agents), np.float32),
            "next_obs": np.zeros((rows, num_agents, o), np.float32),
            "done": np.zeros((rows, num_agents), np.float32)}
    tracemalloc.start()
    try:
        bufs = numpy_buffers(host, rows)
        used, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    del bufs
    return used / (rows * num_agents)


def working_bytes(num_agents: int, batch: int, host_is_device: bool) -> int:
    """Memory besides the buffers: the JAX side's donated batch plus the agent-major round
    (gather and transposed copy), on a CPU also the NumPy round's stacked arrays (twice)."""
    out = round_bytes(num_agents, batch)["output"]
    return 3 * out + (2 * out if host_is_device else 0)


def fit_capacity(num_agents: int, requested: int, device_free: int, host_free: int,
                 host_is_device: bool, py_bytes: float) -> int:
    """Largest capacity ``<= requested`` whose JAX buffer (+ priority trees) and NumPy baseline
    (Python objects; plus a host copy of the data when the device is not the host) fit."""
    rb = row_bytes(num_agents)
    py_row = num_agents * py_bytes
    if host_is_device:
        rows = device_free // (rb + PRIORITY_BYTES_PER_ROW + py_row)
    else:
        rows = min(device_free // (rb + PRIORITY_BYTES_PER_ROW), host_free // (rb + py_row))
    return int(max(0, min(requested, rows)))


def host_memory() -> dict[str, Any]:
    """``MemAvailable`` of ``/proc/meminfo`` (what other processes leave free now)."""
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


def device_memory() -> dict[str, Any]:
    """The default device's memory: the XLA allocator's ``bytes_limit`` on a GPU/TPU, the
    host's (:func:`host_memory`) on a CPU."""
    dev = jax.devices()[0]
    try:
        stats = dev.memory_stats() or {}
    except Exception:  # noqa: BLE001 -- some backends do not implement memory_stats
        stats = {}
    if stats.get("bytes_limit"):
        return {"bytes": int(stats["bytes_limit"]),
                "source": f"XLA allocator bytes_limit of {dev.device_kind}"}
    return host_memory()


def memory_model(batch: int, py_bytes: float, requested: int = 1_000_000) -> dict[str, Any]:
    """Bytes per row and the largest buffer that fits each of ``MEMORY_TARGETS``, N = 3..48.

    ``rows_buffer_only``: the memory divided by ``row_bytes``; ``rows_benchmark``: after this
    benchmark's working set and priority trees (the CPU target also holds the NumPy
    baseline's Python objects at ``py_bytes`` per agent and row).
    """
    model: dict[str, Any] = {}
    for n in (3, 6, 12, 24, 48):
        rb = row_bytes(n)
        per_target = {}
        for name, mem in MEMORY_TARGETS.items():
            host = name.startswith("cpu")
            free = mem - working_bytes(n, batch, host)
            rows = fit_capacity(n, 10**12, free, 10**15, host, py_bytes if host else 0.0)
            per_target[name] = {"memory_bytes": mem, "rows_buffer_only": mem // rb,
                                "rows_benchmark": rows, "fits_requested": rows >= requested}
        model[str(n)] = {"obs_dim": obs_dim(n), "row_bytes": row_bytes_by_field(n),
                         "requested_rows": requested, "requested_bytes": requested * rb,
                         "targets": per_target}
    return model


def gather_counts(num_agents: int, batch: int) -> dict[str, dict[str, int]]:
    """Logical gathers (one index set read from one array) and row reads per round."""
    n, b = num_agents, batch
    faithful = {"gathers": n, "row_reads": n * b}
    return {
        "numpy": {"gathers": n * n, "row_reads": n * n * b},
        "per_agent": {"gathers": n * n, "row_reads": n * n * b},
        "interleaved_faithful": faithful,
        "interleaved_faithful_agent_major": faithful,
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
    """A full buffer (``size = capacity``, ``insert_pos = 0``) of pseudo-random float32 data in
    ``layout``'s own arrays (the shapes of the library buffer's ``init``; array ``i`` hashed
    with ``salt + i``)."""
    buffer = make_buffer(layout, capacity, n, obs_dim(n), ACTION_DIM)
    leaves, tree = jax.tree.flatten(jax.eval_shape(buffer.init).data)
    data = jax.tree.unflatten(tree, [_hash_fill(a.shape, salt + i) for i, a in enumerate(leaves)])
    return jax.block_until_ready(BufferState(data, jnp.int32(0), jnp.int32(capacity)))


def sampler_state(name: str, capacity: int, key: jax.Array):
    """Sampler state with an Exponential(1) priority on every row (stateless: ``()``)."""
    if name in ("uniform", "neighbor"):
        return ()
    prio = jax.random.exponential(key, (capacity,)) + 1e-6
    state = state_from_priorities(prio, alpha=0.6, max_tree=name == "info_prioritized")
    return jax.block_until_ready(state)


def modes_for(layout: str, sampler: str) -> tuple[str, ...]:
    """Modes timed for a layout (the faithful interleaved modes with ``uniform`` only: they
    isolate the layout and output-order effects; the sampler's own cost is the same)."""
    if layout == "per_agent":
        return ("per_agent",)
    if sampler == "uniform":
        return (*FAITHFUL_ONLY_UNIFORM, "interleaved")
    return ("interleaved",)


def faithful_draw(sampler, sstate, key: jax.Array, size: jax.Array, insert_pos: jax.Array,
                  num_agents: int, batch: int) -> tuple[jax.Array, jax.Array]:
    """The faithful draw of one round: every agent its own ``batch`` indices from ``sampler``
    (one key each, split from ``key``); ``(indices [N, B], weights [N, B])``."""
    def one(k):
        idx, w, _ = sampler.sample(sstate, k, size, insert_pos, batch)
        return idx, w

    return jax.vmap(one)(jax.random.split(key, num_agents))


class Round:
    """One jitted sampling round ``(bstate, sstate, key) -> batch`` for a mode; after the
    first round (a fresh batch), every round writes into the previous round's donated batch
    (kept here between calls)."""

    def __init__(self, buffer, sampler, mode: str, n: int, batch: int):
        faithful = mode != "interleaved"
        time_major = mode in ("interleaved_faithful", "interleaved")

        def draw(bstate, sstate, key):
            if not faithful:
                idx, w, _ = sampler.sample(sstate, key, bstate.size, bstate.insert_pos, batch)
                return idx, w
            return faithful_draw(sampler, sstate, key, bstate.size, bstate.insert_pos, n, batch)

        def fresh(bstate, sstate, key):
            idx, w = draw(bstate, sstate, key)
            return buffer.gather(bstate, idx, time_major=time_major), w

        def into(bstate, sstate, key, out):
            idx, w = draw(bstate, sstate, key)
            return gather_into(buffer, bstate, idx, out, time_major), w

        self._fresh = jax.jit(fresh)
        self._into = jax.jit(into, donate_argnums=3)
        self.out = None

    def __call__(self, bstate, sstate, key) -> float:
        """Run one round (blocked); returns its wall seconds."""
        t0 = time.perf_counter()
        if self.out is None:
            self.out, _ = jax.block_until_ready(self._fresh(bstate, sstate, key))
        else:
            self.out, _ = jax.block_until_ready(self._into(bstate, sstate, key, self.out))
        return time.perf_counter() - t0

    def best(self, bstate, sstate, key, repeats: int) -> float:
        """Best of ``repeats`` rounds after two warm-up rounds (compile; first donation); every
        round draws new indices (its own key), as the NumPy sampler does."""
        keys = jax.block_until_ready(jax.random.split(key, repeats + 2))
        self(bstate, sstate, keys[0])
        self(bstate, sstate, keys[1])
        return min(self(bstate, sstate, k) for k in keys[2:])


def numpy_buffers(host: dict[str, np.ndarray], capacity: int) -> list[np_ref.ReplayBuffer]:
    """Per-agent list-of-tuples buffers whose arrays are views into ``host`` ([C, N, ...])."""
    n = host["obs"].shape[1]
    bufs = np_ref.make_buffers(n, capacity)
    obs, act, rew, nxt, done = (host[f] for f in Transition._fields)
    for t in range(capacity):
        np_ref.add_step(bufs, obs[t], act[t], rew[t], nxt[t], done[t])
    return bufs


# ----------------------------------------------------------------------------- opponents
#
# The samplers a user would pick instead, faithful semantics on every side (N independent
# uniform index sets per round, all agents' fields at each index, with replacement).

#: The trainer's default path (``MARLConfig`` defaults), the mode the headline keys compare.
TRAINER_MODE = {"per_agent": "per_agent", "interleaved": "interleaved_faithful"}[
    MARLConfig().layout] if MARLConfig().sampling_mode == "faithful" else "interleaved"
PRIO_ALPHA, PRIO_BETA, PRIO_EPS = 0.6, 0.4, 1e-6


class VectorizedNumpy:
    """Vectorised NumPy faithful sampler over host arrays ``[C, N, ...]``: one
    ``Generator.integers`` draw of ``[N, B]`` indices, then per field one ``np.take`` into a
    preallocated time-major batch ``[N_draw, B, N_all, ...]`` (the library's
    ``interleaved_faithful`` order; ``mode="clip"`` writes straight into ``out``, and the
    indices are in range, so it clips nothing)."""

    def __init__(self, host: dict[str, np.ndarray], batch: int, seed: int = 0,
                 num_agents: int | None = None):
        self.host, self.batch = host, batch
        first = next(iter(host.values()))
        self.size = first.shape[0]
        # [C, N, ...] fields carry N; packed rows [C, R] (``{"rows": ...}``) need it given
        self.num_agents = first.shape[1] if num_agents is None else num_agents
        self.rng = np.random.default_rng(seed)
        self.out = {f: np.empty((self.num_agents, batch, *a.shape[1:]), a.dtype)
                    for f, a in host.items()}

    def gather(self, idx: np.ndarray) -> dict[str, np.ndarray]:
        """The batch at indices ``idx`` ``[N, B]``, written into the preallocated arrays."""
        for f, a in self.host.items():
            np.take(a, idx, axis=0, out=self.out[f], mode="clip")
        return self.out

    def __call__(self) -> dict[str, np.ndarray]:
        """One round: draw the ``N`` index sets, gather."""
        return self.gather(self.rng.integers(0, self.size, (self.num_agents, self.batch)))


def packed_round(num_agents: int, batch: int):
    """The library's ``packed`` layout's standalone uniform faithful round: the trainer's
    index draw (``num_agents`` uniform index sets), then :func:`jaxrl_pim.replay.gather_rows`
    (one whole-row gather) written into the previous round's donated batch ``[N, B, R]``;
    ``fn(bstate, key, out)`` with a ``packed``-layout state. Not the trainer's path: the
    trainer's default layout keeps one array per field, and with the packed layout its
    ``Buffer.gather`` slices the rows into fields, which XLA fuses into the learner
    (``benchmarks/marl_e2e.py`` times that end to end)."""
    sampler = uniform()

    def fn(bstate, key, out):
        idx, _ = faithful_draw(sampler, (), key, bstate.size, bstate.insert_pos, num_agents,
                               batch)
        return out.at[...].set(gather_rows(bstate, idx))

    return jax.jit(fn, donate_argnums=2)


def time_packed(bstate: BufferState, n: int, args, rkey: jax.Array) -> dict[str, Any]:
    """Alternating rounds over one ``packed``-layout buffer (rows ``[C, R]``) that both sides
    share: the vectorised NumPy sampler (``np.take`` of whole rows into a preallocated
    ``[N, B, R]`` batch) and :func:`packed_round`; the rounds of each and the best."""
    rows = bstate.data
    host = np.asarray(rows)  # on a CPU a view of the JAX buffer
    vec = VectorizedNumpy({"rows": host}, args.batch, args.seed, num_agents=n)
    fn = packed_round(n, args.batch)
    keys = jax.block_until_ready(jax.random.split(jax.random.fold_in(rkey, 11),
                                                  args.repeats + 2))
    out = jnp.zeros((n, args.batch, rows.shape[1]), rows.dtype)
    for k in keys[:2]:  # compile, first donation; the NumPy batch's first touch
        out = jax.block_until_ready(fn(bstate, k, out))
        vec()
    numpy_s, jax_s = [], []
    for k in keys[2:]:
        numpy_s.append(harness.seconds(vec))
        t0 = time.perf_counter()
        out = jax.block_until_ready(fn(bstate, k, out))
        jax_s.append(time.perf_counter() - t0)
    return {"packed_row_floats": int(rows.shape[1]),
            "numpy_vectorized_packed_seconds_by_round": numpy_s,
            "numpy_vectorized_packed_seconds": min(numpy_s),
            "library_packed_rows_seconds_by_round": jax_s,
            "library_packed_rows_seconds": min(jax_s)}


def flashbax_state(data: Transition, batch: int, priorities: jax.Array | None = None):
    """flashbax 0.1.3 item buffer (``priorities`` given: prioritised item buffer, exponent
    ``PRIO_ALPHA``) holding ``data`` (``[C, N, ...]`` per field, or a buffer's ``[1, C, N,
    ...]``; DONATED: the buffer takes its memory) as one full buffer of joint transitions;
    returns ``(buffer, state)``. The state is built with flashbax's own ``init`` and
    ``set_priorities`` and its dataclass ``replace`` (experience, ``is_full``), as if ``C``
    transitions had been added."""
    fbx = harness.require_baseline("flashbax")
    # arrays [1, C, ...] (a flashbax buffer's experience) are taken as they are
    leading = data.done.ndim == 3
    capacity = data.obs.shape[1 if leading else 0]
    if priorities is None:
        buf = fbx.make_item_buffer(max_length=capacity, min_length=1, sample_batch_size=batch)
    else:
        buf = fbx.make_prioritised_item_buffer(
            max_length=capacity, min_length=1, sample_batch_size=batch,
            priority_exponent=PRIO_ALPHA, device=jax.default_backend())

    def build(experience, prio):
        state = buf.init(jax.tree.map(lambda a: a[0, 0] if leading else a[0], experience))
        state = state.replace(experience=jax.tree.map(lambda a: a if leading else a[None],
                                                      experience),
                              is_full=jnp.asarray(True),
                              current_index=jnp.zeros_like(state.current_index))
        if prio is not None:
            state = buf.set_priorities(state, jnp.arange(capacity), prio)
        return state

    experience = data._asdict()
    return buf, jax.block_until_ready(jax.jit(build, donate_argnums=0)(experience, priorities))


def flashbax_round(buf, num_agents: int, prioritized_: bool):
    """Jitted faithful round on a flashbax buffer: ``N`` index sets (``vmap`` of
    ``buf.sample`` over ``N`` keys) -> time-major batch dict ``[N, B, N, ...]``; prioritised:
    also importance weights ``(C P)^-beta / max`` per set and ``set_priorities`` of all
    ``N B`` drawn rows to ``u + eps`` (``u`` uniform, the same draw as the library side),
    returning the new state (donated)."""

    def uniform_round(state, key):
        keys = jax.random.split(key, num_agents)
        return jax.vmap(lambda k: buf.sample(state, k).experience)(keys)

    def prio_round(state, key):
        keys = jax.random.split(key, num_agents)
        smp = jax.vmap(lambda k: buf.sample(state, k))(keys)
        size = state.experience["obs"].shape[1]
        w = (size * smp.probabilities) ** (-PRIO_BETA)
        w = w / jnp.max(w, axis=-1, keepdims=True)
        td = jax.random.uniform(jax.random.fold_in(key, 1), smp.indices.shape)
        state = buf.set_priorities(state, smp.indices.reshape(-1), td.reshape(-1) + PRIO_EPS)
        return smp.experience, w, state

    if prioritized_:
        return jax.jit(prio_round, donate_argnums=0)
    return jax.jit(uniform_round)


def library_prio_round(buffer, sampler, mode: str, num_agents: int, batch: int):
    """Jitted faithful prioritised round of the library, the same work as
    :func:`flashbax_round`'s: ``N`` index sets from ``sampler`` (``prioritized``), the gather
    of ``mode``'s layout and order into the donated previous batch, importance weights, and
    ``update_priorities`` of all ``N B`` rows to ``|u| + eps``; ``(bstate, sstate, key, out)
    -> (out, w, sstate)``."""
    time_major = mode in ("interleaved_faithful", "interleaved")

    def fn(bstate, sstate, key, out):
        idx, w = faithful_draw(sampler, sstate, key, bstate.size, bstate.insert_pos,
                               num_agents, batch)
        got = (buffer.gather(bstate, idx, time_major=time_major) if out is None
               else gather_into(buffer, bstate, idx, out, time_major))
        td = jax.random.uniform(jax.random.fold_in(key, 1), idx.shape)
        sstate = sampler.update_priorities(sstate, idx.reshape(-1), td.reshape(-1))
        return got, w, sstate

    return jax.jit(fn, donate_argnums=(1, 3))


def time_flashbax(data: Transition, n: int, args, rkey: jax.Array,
                  prio: jax.Array | None) -> dict[str, float | None]:
    """Best round seconds of flashbax's uniform item buffer and (``prio`` given) prioritised
    item buffer, faithful, over ``data`` (donated: rebuilt from the uniform buffer's memory
    for the prioritised one)."""
    keys = jax.block_until_ready(jax.random.split(jax.random.fold_in(rkey, 3),
                                                  args.repeats + 2))
    buf, state = flashbax_state(data, args.batch)
    fn = flashbax_round(buf, n, False)
    out: dict[str, float | None] = {
        "flashbax_uniform": harness.best_seconds(lambda k, st=state: fn(st, k), keys),
        "flashbax_prioritized": None}
    if prio is None:
        return out
    data = Transition(**state.experience)  # [1, C, ...], donated to the prioritised buffer
    del state, fn
    buf, pstate = flashbax_state(data, args.batch, prio)
    del data
    fn = flashbax_round(buf, n, True)
    holder = [pstate]

    def call(k):
        _, _, holder[0] = jax.block_until_ready(fn(holder[0], k))

    out["flashbax_prioritized"] = harness.best_seconds(call, keys)
    return out


def time_library_prio(buffer, bstate: BufferState, sstate, mode: str, n: int, args,
                      rkey: jax.Array) -> float:
    """Best round seconds of :func:`library_prio_round` (the priority state carried from
    round to round, as flashbax's)."""
    keys = jax.block_until_ready(jax.random.split(jax.random.fold_in(rkey, 3),
                                                  args.repeats + 2))
    fn = library_prio_round(buffer, make_sampler("prioritized", bstate.data.obs.shape[0]),
                            mode, n, args.batch)
    holder = [jax.tree.map(jnp.copy, sstate), None]

    def call(k):
        holder[1], _, holder[0] = jax.block_until_ready(fn(bstate, holder[0], k, holder[1]))

    return harness.best_seconds(call, keys)


def run_agents(n: int, args, timer: PhaseTimer) -> dict[str, Any]:
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


def read_e2e(path: Path) -> dict[str, Any]:
    """The fast-vs-faithful records of the MADDPG end-to-end results file at ``path``: per
    seed final returns of both modes and their run times, with the file's provenance."""
    rel = str(path.relative_to(harness.ROOT)) if path.is_relative_to(harness.ROOT) else str(path)
    out: dict[str, Any] = {"source": rel}
    if not path.exists():
        out["note"] = f"{rel} not found: the fast mode's effect on return is not available"
        return out
    rep = json.loads(path.read_text())
    runs = rep.get("results", {}).get("fast_mode") or {}  # marl_e2e: {"faithful", "fast"}
    if not {"faithful", "fast"} <= set(runs):
        out["note"] = f"{rel} holds no fast-mode section (results.fast_mode)"
        return out
    system = rep.get("system", {})
    out.update(
        source_start_utc=system.get("start_utc") or system.get("time_utc"),
        source_git_commit=system.get("git_commit"), source_device=system.get("device_kind"),
        seeds={m: runs[m].get("seeds") for m in ("faithful", "fast")},
        final_return_per_seed={m: runs[m].get("final_return_per_seed")
                               for m in ("faithful", "fast")},
        run_s={m: runs[m].get("run_s") for m in ("faithful", "fast")},
        setting={k: runs["faithful"].get("config", {}).get(k) for k in
                 ("env", "num_agents", "num_episodes", "sampler", "layout", "batch_size")},
    )
    return out


# ----------------------------------------------------------------------------- summary


#: Version of the summary's key names. 2: the paired standard error of the fast mode's
#: return change is ``fast_mode_return_delta_se_paired`` (``marl_e2e``'s
#: ``fast_mode_return_delta_se`` is the unpaired one: one key, one meaning across files);
#: files written before carry no version and keep the old name until they are republished.
#: 3: the opponents (vectorised NumPy, flashbax uniform and prioritised, each also on one
#: thread) and the original sampler's speed-up renamed ``sampler_speedup_vs_original_24``.
SUMMARY_SCHEMA = 3


def _fast_mode_return(e2e: dict[str, Any], se_key: str) -> dict[str, Any]:
    """Mean and standard error of the fast mode's return change, recomputed from the per-seed
    records (paired by seed: both modes start from the same keys); the standard error under
    ``se_key``."""
    out: dict[str, Any] = {"fast_mode_return_delta": None, se_key: None,
                           "fast_mode_return_seeds": None,
                           "fast_mode_return_source": e2e.get("source"),
                           "fast_mode_e2e_time_ratio_faithful_over_fast": None}
    rets = e2e.get("final_return_per_seed")
    if not rets:
        out["fast_mode_return_note"] = e2e.get("note", "no fast-mode records")
        return out
    fa, fs = (np.asarray(rets[m], np.float64) for m in ("faithful", "fast"))
    seeds = e2e.get("seeds", {})
    if seeds.get("faithful") != seeds.get("fast") or fa.shape != fs.shape:
        out["fast_mode_return_note"] = "the two modes were not run on the same seeds"
        return out
    if fa.size < MIN_RETURN_SEEDS:
        out["fast_mode_return_note"] = (f"only {fa.size} seeds in {e2e.get('source')}; at least "
                                        f"{MIN_RETURN_SEEDS} are needed")
        return out
    diff = fs - fa
    scale = abs(float(fa.mean()))
    out.update(
        fast_mode_return_delta=float(diff.mean()) / scale,
        **{se_key: float(diff.std(ddof=1) / np.sqrt(diff.size)) / scale},
        fast_mode_return_seeds=int(diff.size),
        fast_mode_return_note=("relative change of the final return, (fast - faithful) / "
                               "|faithful mean|, paired by seed; standard error over seeds"),
    )
    run_s = e2e.get("run_s") or {}
    if run_s.get("faithful") and run_s.get("fast"):
        out["fast_mode_e2e_time_ratio_faithful_over_fast"] = run_s["faithful"] / run_s["fast"]
    return out


def _summarize_v2(rep: dict[str, Any]) -> dict[str, Any]:
    """Headline numbers of a file of summary schema <= 2 (before the opponents), computed
    from the stored records."""
    res = rep["results"]
    rows = res["per_agents"]
    by_n = {r["num_agents"]: r for r in rows}
    r24 = by_n.get(24)
    copy_bw = res["copy_bandwidth"]["best_B_per_s"]

    def speed(r, mode, sampler="uniform"):
        t = r["seconds"][sampler][mode]
        return None if t is None else r["numpy_seconds"] / t

    out: dict[str, Any] = {
        "device": res["device"],
        "sampler_speedup_vs_numpy_24": None,
        "sampler_speedup_semantics": "faithful vs faithful: every agent draws its own uniform "
                                     "indices on both sides, same capacity, batch 1,024",
        "target_speedup_24": 10.0,
        "target_met": None,
        "faithful_agent_major_fresh_speedup_vs_numpy_24": None,
        "per_agent_speedup_vs_numpy_24": None,
        "fast_mode_sampler_speedup_24": None,
        "capacity_24": None,
        "bytes_per_round_24": None,
        "min_traffic_bytes_per_round_24": None,
        "numpy_GB_per_s_24": None,
        "jax_faithful_GB_per_s_24": None,
        "copy_bandwidth_GB_per_s": copy_bw / 1e9,
        "jax_faithful_fraction_of_copy_bw_24": None,
        "speedup_bound_at_copy_bw_24": None,
        "speedup_by_agents": {str(r["num_agents"]): speed(r, "interleaved_faithful")
                              for r in rows},
        "capacity_by_agents": {str(r["num_agents"]): r["capacity"] for r in rows},
        "layout_speedup_faithful_by_agents": {
            str(r["num_agents"]): r["seconds"]["uniform"]["per_agent"]
            / r["seconds"]["uniform"]["interleaved_faithful"] for r in rows},
        "paper_layout_speedup_by_agents": {"3": 1.36, "6": 2.26, "12": 4.41, "24": 9.55},
        "neighbor_vs_uniform_time_change_24_per_agent": None,
        "paper_neighbor_sampling_time_change_24": -0.372,
    }
    if r24:
        rb = r24["round_bytes"]
        t_jax = r24["seconds"]["uniform"]["interleaved_faithful"]
        s = speed(r24, "interleaved_faithful")
        out.update(
            sampler_speedup_vs_numpy_24=s, target_met=s >= 10.0,
            faithful_agent_major_fresh_speedup_vs_numpy_24=speed(
                r24, "interleaved_faithful_agent_major"),
            per_agent_speedup_vs_numpy_24=speed(r24, "per_agent"),
            fast_mode_sampler_speedup_24=speed(r24, "interleaved"),
            capacity_24=r24["capacity"], bytes_per_round_24=rb["output"],
            min_traffic_bytes_per_round_24=rb["min_traffic"],
            numpy_GB_per_s_24=rb["min_traffic"] / r24["numpy_seconds"] / 1e9,
            jax_faithful_GB_per_s_24=rb["min_traffic"] / t_jax / 1e9,
            jax_faithful_fraction_of_copy_bw_24=rb["min_traffic"] / t_jax / copy_bw,
            speedup_bound_at_copy_bw_24=r24["numpy_seconds"] / (rb["min_traffic"] / copy_bw),
        )
        if r24["seconds"]["neighbor"]["per_agent"] is not None:
            out["neighbor_vs_uniform_time_change_24_per_agent"] = (
                r24["seconds"]["neighbor"]["per_agent"] / r24["seconds"]["uniform"]["per_agent"]
                - 1.0)
    paired = rep["config"].get("summary_schema", 1) >= 2
    out.update(_fast_mode_return(res["fast_mode_return"], "fast_mode_return_delta_se_paired"
                                 if paired else "fast_mode_return_delta_se"))
    return out


# ----------------------------------------------------------------------------- output


#: Targets for the trainer's path against each opponent, at every N (issue 16).
TARGET_VS_NUMPY, TARGET_VS_FLASHBAX = 1.5, 1.0
OPPONENTS = ("numpy_original", "numpy_vectorized", "flashbax_uniform", "flashbax_prioritized")


def opponent_seconds(r: dict[str, Any]) -> dict[str, float | None]:
    """Round seconds of each opponent (``OPPONENTS``) and of the library's trainer path
    (``library_uniform``: faithful uniform; ``library_prioritized``: with the priority update)
    and its headline layout (``library_interleaved_faithful``) at one agent count."""
    fb = r.get("flashbax_seconds", {})
    fields, packed = r.get("numpy_vectorized_seconds"), r.get("numpy_vectorized_packed_seconds")
    return {"numpy_original": r["numpy_seconds"],
            # the best vectorised NumPy: the faster of its two layouts (field arrays, rows)
            "numpy_vectorized": min((t for t in (fields, packed) if t is not None),
                                    default=None),
            "numpy_vectorized_fields": fields,
            "numpy_vectorized_packed": packed,
            "library_packed_rows": r.get("library_packed_rows_seconds"),
            "flashbax_uniform": fb.get("flashbax_uniform"),
            "flashbax_prioritized": fb.get("flashbax_prioritized"),
            "library_uniform": r["seconds"]["uniform"][r.get("trainer_mode", TRAINER_MODE)],
            "library_interleaved_faithful": r["seconds"]["uniform"]["interleaved_faithful"],
            "library_prioritized": r.get("library_prioritized_update_seconds")}


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a / b


def _at_24(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The record of N = 24 among ``rows`` (None when it was not run)."""
    return next((r for r in rows if r["num_agents"] == 24), None)


def _original_speedup_24(rows: list[dict[str, Any]], mode: str) -> float | None:
    """The original sampler's round time over ``mode``'s uniform round at N = 24."""
    r24 = _at_24(rows)
    return None if r24 is None else r24["numpy_seconds"] / r24["seconds"]["uniform"][mode]


def opponent_keys(rows: list[dict[str, Any]], copy_bw: float, suffix: str = "") -> dict:
    """Speed-ups of the trainer's path over each opponent (uniform against uniform,
    prioritised against prioritised with the priority update on both sides), per agent count
    and at N = 3 and 24, GB/s at N = 24, and whether the targets hold at every N."""
    sec = {r["num_agents"]: opponent_seconds(r) for r in rows}
    out: dict[str, Any] = {}
    pairs = {"vectorized_numpy": ("numpy_vectorized", "library_uniform"),
             "flashbax_uniform": ("flashbax_uniform", "library_uniform"),
             "flashbax_prioritized": ("flashbax_prioritized", "library_prioritized")}
    for name, (opp, lib) in pairs.items():
        by_n = {str(n): _ratio(t[opp], t[lib]) for n, t in sec.items()}
        out[f"sampler_speedup_vs_{name}_by_agents{suffix}"] = by_n
        for n in (3, 24):
            out[f"sampler_speedup_vs_{name}_{n}{suffix}"] = by_n.get(str(n))
    out[f"interleaved_faithful_speedup_vs_vectorized_numpy_by_agents{suffix}"] = {
        str(n): _ratio(t["numpy_vectorized"], t["library_interleaved_faithful"])
        for n, t in sec.items()}
    out[f"vectorized_numpy_best_layout_by_agents{suffix}"] = {
        str(n): None if t["numpy_vectorized_packed"] is None else (
            "packed" if t["numpy_vectorized_packed"] < t["numpy_vectorized_fields"] else "fields")
        for n, t in sec.items()}
    out[f"packed_rows_round_speedup_vs_trainer_by_agents{suffix}"] = {
        str(n): _ratio(t["library_uniform"], t["library_packed_rows"]) for n, t in sec.items()}
    # the packed layout's standalone round (whole rows, ``replay.gather_rows``) against the
    # uniform opponents: what that layout gives a host-driven round; not the trainer's path
    for name, opp in (("vectorized_numpy", "numpy_vectorized"),
                      ("flashbax_uniform", "flashbax_uniform")):
        out[f"packed_layout_round_speedup_vs_{name}_by_agents{suffix}"] = {
            str(n): _ratio(t[opp], t["library_packed_rows"]) for n, t in sec.items()}
    vals = [(v, TARGET_VS_NUMPY if "numpy" in k else TARGET_VS_FLASHBAX)
            for k, d in out.items() if k.endswith(f"_by_agents{suffix}")
            and k.startswith("sampler_speedup") for v in d.values()]
    out[f"opponent_targets_met_every_n{suffix}"] = (
        None if not vals or any(v is None for v, _ in vals) else all(v >= t for v, t in vals))
    r24 = _at_24(rows)
    if r24 is not None:
        traffic = r24["round_bytes"]["min_traffic"]
        for side, t in sec[24].items():
            out[f"{side}_GB_per_s_24{suffix}"] = None if t is None else traffic / t / 1e9
            out[f"{side}_fraction_of_copy_bw_24{suffix}"] = (
                None if t is None else traffic / t / copy_bw)
    return out


def summarize(rep: dict[str, Any]) -> dict[str, Any]:
    """Headline numbers, computed from the stored records (files of summary schema <= 2 keep
    their old keys: :func:`_summarize_v2`)."""
    if rep["config"].get("summary_schema", 1) < 3:
        return _summarize_v2(rep)
    res = rep["results"]
    out = _summarize_v2(rep)
    trainer = res["per_agents"][0].get("trainer_mode", TRAINER_MODE)
    out["trainer_mode"] = trainer
    # v2's headline (time-major interleaved gather) keeps its value under a name that says
    # which round it is; the original-sampler headline is the trainer's path
    out["time_major_speedup_vs_original_24"] = out.pop("sampler_speedup_vs_numpy_24")
    out.pop("faithful_agent_major_fresh_speedup_vs_numpy_24", None)
    out["sampler_speedup_vs_original_24"] = _original_speedup_24(res["per_agents"], trainer)
    out["target_met"] = (None if out["sampler_speedup_vs_original_24"] is None
                         else out["sampler_speedup_vs_original_24"] >= out["target_speedup_24"])
    out["targets_vs_opponents"] = {"vectorized_numpy": TARGET_VS_NUMPY,
                                   "flashbax": TARGET_VS_FLASHBAX}
    out.update(opponent_keys(res["per_agents"], res["copy_bandwidth"]["best_B_per_s"]))
    one = res.get("one_thread")
    if one:
        out.update(opponent_keys(one["per_agents"], one["copy_bandwidth"]["best_B_per_s"],
                                 "_one_thread"))
        out["sampler_speedup_vs_original_24_one_thread"] = _original_speedup_24(
            one["per_agents"], trainer)
    r24 = _at_24(res["per_agents"])
    out["fast_mode_bytes_per_round_24"] = (None if r24 is None
                                           else r24["round_bytes"]["fast_mode_min_traffic"])
    out["fast_mode_bytes_saved_fraction_24"] = (None if r24 is None else 1.0 - r24[
        "round_bytes"]["fast_mode_min_traffic"] / r24["round_bytes"]["min_traffic"])
    return out


def opponents_markdown(rows: list[dict[str, Any]], copy_bw: float, title: str) -> list[str]:
    """One table: round ms of the trainer's path and of each opponent, speed-ups, GB/s."""
    lines = [title, "",
             "| N | capacity | original ms | NumPy fields / rows ms | flashbax uniform ms | JAX "
             "uniform ms | vs best NumPy | vs flashbax | JAX rows ms | flashbax prioritised "
             "ms | JAX prioritised ms | vs flashbax prio | JAX GB/s (of copy BW) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        t = opponent_seconds(r)
        traffic = r["round_bytes"]["min_traffic"]
        x = (lambda a, b: "-" if _ratio(a, b) is None else f"{a / b:.2f}x")
        ms = (lambda v: "-" if v is None else f"{v * 1e3:.2f}")
        lib = t["library_uniform"]
        lines.append(
            f"| {r['num_agents']} | {r['capacity']:,} | {ms(t['numpy_original'])} | "
            f"{ms(t['numpy_vectorized_fields'])} / {ms(t['numpy_vectorized_packed'])} | "
            f"{ms(t['flashbax_uniform'])} | {ms(lib)} | "
            f"{x(t['numpy_vectorized'], lib)} | {x(t['flashbax_uniform'], lib)} | "
            f"{ms(t['library_packed_rows'])} | "
            f"{ms(t['flashbax_prioritized'])} | {ms(t['library_prioritized'])} | "
            f"{x(t['flashbax_prioritized'], t['library_prioritized'])} | "
            f"{traffic / lib / 1e9:.2f} ({traffic / lib / copy_bw:.2f}) |")
    return lines


def render_markdown(rep: dict[str, Any]) -> str:
    """Markdown tables of a stored report (the opponents, round times, speed-ups, bytes,
    memory); what ``make_docs.py --check`` regenerates (schema <= 2 files:
    :func:`_render_markdown_v2`)."""
    if rep["config"].get("summary_schema", 1) < 3:
        return _render_markdown_v2(rep)
    res = rep["results"]
    mode = res["per_agents"][0].get("trainer_mode", TRAINER_MODE)
    head = (f"Opponents, faithful semantics on every side (N independent index sets per round, "
            f"batch {rep['config']['batch']:,}, same capacity, same data): the original "
            "pure-Python sampler; vectorised NumPy (Generator draws, `np.take` into "
            "preallocated arrays) over the field arrays and over packed rows (every field of "
            "a time step in one `[C, R]` row), 'vs best NumPy' against the faster of the two; "
            "flashbax 0.1.3's item buffer (one buffer of joint "
            "transitions, N index sets per round in one jit); flashbax's prioritised item "
            f"buffer against the library's `prioritized` (sample, importance weights and "
            f"priority update on both sides). JAX = the trainer's default path (`{mode}`); "
            "JAX rows = the library's `packed` layout's uniform faithful round (one whole-row "
            "gather, `replay.gather_rows`; not the trainer's path, whose default layout keeps "
            "one array per field). "
            "GB/s = the least traffic of a round (2 x batch bytes) over its time.")
    lines = opponents_markdown(res["per_agents"], res["copy_bandwidth"]["best_B_per_s"],
                               "All cores. " + head)
    one = res.get("one_thread")
    if one:
        lines += ["", *opponents_markdown(
            one["per_agents"], one["copy_bandwidth"]["best_B_per_s"],
            f"One thread on both sides ({one['how']}); copy bandwidth on one thread "
            f"{one['copy_bandwidth']['best_B_per_s'] / 1e9:.1f} GB/s.")]
    summ = summarize(rep)
    if summ["fast_mode_bytes_per_round_24"] is not None:
        delta, seeds = summ["fast_mode_return_delta"], summ["fast_mode_return_seeds"]
        ret = ("its effect on return is not available" if delta is None else
               f"its measured return change is {delta * 100:+.1f} % ({seeds} seeds, "
               f"{summ['fast_mode_return_source']})")
        lines += ["", "At the copy floor only fewer bytes help: the fast mode moves "
                  f"{summ['fast_mode_bytes_per_round_24'] / 1e6:.0f} MB per round at N = 24 "
                  f"({summ['fast_mode_bytes_saved_fraction_24'] * 100:.0f} % fewer than a "
                  f"faithful round); {ret}. The neighbour sampler moves the same bytes in "
                  "contiguous runs (its time change is "
                  + ("not measured" if summ["neighbor_vs_uniform_time_change_24_per_agent"]
                     is None else
                     f"{summ['neighbor_vs_uniform_time_change_24_per_agent'] * 100:+.0f} %")
                  + " at N = 24, per-agent layout)."]
    return "\n".join(lines) + "\n\n" + _render_markdown_v2(rep, summ)




#: milliseconds in the tables: the layer's number format of seconds x 1e3, "-" if not measured
_ms = functools.partial(harness.fmt, spec=".2f", missing="-", scale=1e3)


def _render_markdown_v2(rep: dict[str, Any], summ: dict[str, Any] | None = None) -> str:
    """Markdown tables of a stored report of summary schema <= 2 (before the opponents); the
    summary list shows ``summ`` (default: :func:`_summarize_v2`)."""
    cfg, res = rep["config"], rep["results"]
    summ = summ if summ is not None else _summarize_v2(rep)
    copy = res["copy_bandwidth"]
    load = rep["system"].get("load_average_start")
    lines = [
        f"# Multi-agent replay sampling (one update round, batch {cfg['batch']:,})", "",
        f"Device: {summ['device']}; mode {cfg['mode']}; 1/5/15-min load average at start "
        f"{load} (a load above the core count means other jobs shared the machine). Copy "
        f"bandwidth measured in this run: {copy['best_B_per_s'] / 1e9:.1f} GB/s (read + "
        f"write; NumPy copyto {copy['numpy_copyto_B_per_s'] / 1e9:.1f}, XLA "
        f"{copy['xla_copy_B_per_s'] / 1e9:.1f}).", "",
        "Faithful vs faithful (every agent its own uniform indices; same capacity on both "
        "sides; `numpy` = the original list-of-tuples sampler, `JAX` = interleaved layout, "
        "time-major batch written into the previous round's donated memory). Traffic = the "
        "least bytes a round moves (read the rows, write the batch: 2 x batch bytes).", "",
        "| N | capacity | batch MB | numpy ms | JAX ms | speed-up | numpy GB/s | JAX GB/s | "
        "JAX / copy BW |", "|---|---|---|---|---|---|---|---|---|",
    ]
    bw = copy["best_B_per_s"]
    for r in res["per_agents"]:
        rb, t = r["round_bytes"], r["seconds"]["uniform"]["interleaved_faithful"]
        lines.append(
            f"| {r['num_agents']} | {r['capacity']:,} | {rb['output'] / 1e6:.1f} | "
            f"{r['numpy_seconds'] * 1e3:.1f} | {t * 1e3:.2f} | {r['numpy_seconds'] / t:.1f}x | "
            f"{rb['min_traffic'] / r['numpy_seconds'] / 1e9:.2f} | "
            f"{rb['min_traffic'] / t / 1e9:.2f} | {rb['min_traffic'] / t / bw:.2f} |")
    lines += [
        "", "All JAX modes (best-of wall ms per round; `-` = not timed). `interleaved_faithful"
        "_agent_major` = the same faithful gather in agent-major order "
        + ("into a fresh output; " if cfg.get("summary_schema", 1) < 3
           else "(the trainer's), donated; "
           if res["per_agents"][0].get("trainer_mode") == "interleaved_faithful_agent_major"
           else "(the learner's order before its batches became time-major), donated; ") +
        "`per_agent` = per-agent layout, faithful (N^2 gathers); `interleaved` = the fast "
        "mode (one index set shared by all agents, 1 gather). Speed-ups are over the NumPy "
        "faithful uniform round.", "",
        "| N | sampler | numpy ms | " + " | ".join(f"{m} ms" for m in MODES)
        + " | faithful speed-up | fast-mode speed-up |",
        "|---|---|---|" + "---|" * len(MODES) + "---|---|",
    ]
    for r in res["per_agents"]:
        for s in SAMPLERS:
            t = r["seconds"][s]
            if all(v is None for v in t.values()):
                continue
            fa, fm = t["interleaved_faithful"], t["interleaved"]
            np_s = r["numpy_seconds"]
            fa_x = "-" if fa is None else f"{np_s / fa:.1f}x"
            fm_x = "-" if fm is None else f"{np_s / fm:.0f}x"
            lines.append(f"| {r['num_agents']} | {s} | {np_s * 1e3:.1f} | "
                         + " | ".join(_ms(t[m]) for m in MODES) + f" | {fa_x} | {fm_x} |")
    lines += ["", "Summary:", ""]
    for k, v in summ.items():
        if isinstance(v, float):
            lines.append(f"* `{k}`: {v:.3g}")
        elif not isinstance(v, dict | list):
            lines.append(f"* `{k}`: {v}")
    lines += ["", *memory_markdown(rep)]
    return "\n".join(lines) + "\n"


def memory_markdown(rep: dict[str, Any]) -> list[str]:
    """Lines explaining the buffer capacities: this run's rule and the memory model."""
    cfg = rep["config"]
    mem = rep["results"].get("memory_model")
    dm = cfg["device_memory"]
    lines = [
        f"Capacity of this run (both sides): device memory {dm['bytes'] / GIB:.1f} GiB "
        f"({dm['source']}); " + ", ".join(
            f"N = {r['num_agents']}: {r['capacity']:,} rows ({r['capacity_rule']}; "
            f"{r['capacity_limited_by']}; NumPy objects {r['python_bytes_per_agent_row']:.0f} "
            "B per agent and row)" for r in rep["results"]["per_agents"]) + ".", ""]
    if not mem:
        return lines
    names = list(next(iter(mem.values()))["targets"])
    lines += [
        "Buffer size vs memory (float32; `4 N (2 O + 7)` B per row in every layout). Largest "
        "capacity in rows: memory / row bytes (buffer alone), and with this benchmark's "
        "working set, priority trees and (CPU) the NumPy baseline's objects.", "",
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
    for m, style in zip(MODES, ("-s", "-^", "-v", "-d"), strict=True):
        ax.plot(ns, [r["seconds"]["uniform"][m] * 1e3 for r in rows], style, label=f"JAX {m}")
    ax.set(xscale="log", yscale="log", xlabel="agents N", ylabel="round time (ms)",
           title="uniform sampling: NumPy vs JAX modes")
    ax.set_xticks(ns, [str(n) for n in ns])
    ax.minorticks_off()
    ax.legend(fontsize=7)
    ax = axes[1]
    for s in SAMPLERS:
        if any(r["seconds"][s]["interleaved"] is None for r in rows):
            continue
        ax.plot(ns, [r["seconds"][s]["interleaved"] * 1e3 for r in rows], "-o",
                label=f"{s} (fast mode)")
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


def thread_child(args) -> int:
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
        "device": report.device_label(), "per_agents": rows, "copy_bandwidth": copy,
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
