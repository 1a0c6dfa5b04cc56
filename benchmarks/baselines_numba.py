"""Numba CPU baselines for offline tabular Q-learning / SARSA (SwiftRL, reference.md §1).

These are what a user would run instead of the JAX lanes trainer on a CPU. All four share one
per-chunk update loop; they differ only in how the dataset is partitioned and how tables are
shared:

* :func:`sequential` -- one thread, one Q-table, every episode is a pass over the whole
  dataset.
* :func:`cpu_v1` -- the paper's CPU-V1: ``num_threads`` logical threads (numba ``prange`` over
  thread ids) each run all episodes over their own contiguous chunk, all writing ONE shared
  Q-table without locks. Racy by design (as in the paper): with more than one OS thread the
  result is not deterministic.
* :func:`cpu_v2` -- the paper's CPU-V2: ``num_threads`` private Q-tables over contiguous
  chunks, averaged every ``sync_period`` episodes; final table = mean. Algorithmically this is
  :func:`lanes_numba` with ``num_lanes = num_threads``.
* :func:`lanes_numba` -- the JAX lanes trainer's algorithm: ``num_lanes`` lanes (e.g. 2,000,
  the PIM cores), each with a private Q-table over its contiguous chunk, ``prange`` over
  lanes, averaged every ``sync_period`` episodes; final table = mean of the lanes.

Exact signatures (all keyword options live in :class:`BaselineConfig`)::

    sequential(data, config)                                   -> (q, seconds)
    cpu_v1(data, config, num_threads=None)                     -> (q, seconds)
    cpu_v2(data, config, num_threads=None)                     -> (q, seconds)
    lanes_numba(data, config, num_lanes, num_threads=None)     -> (q, seconds)

``data`` is a mapping or an object (e.g. a NamedTuple) with the fields ``state`` int [M],
``action`` int [M], ``reward`` float [M], ``next_state`` int [M], ``terminated`` bool [M].
``q`` is a float32 NumPy array [num_states, num_actions] (descaled for int32). ``seconds`` is
``time.perf_counter`` wall time of the training loop only (all episodes, every sync round and
the final mean); it excludes input validation, fixed-point scaling, descaling and JIT
compilation (every kernel is warmed up on tiny data before the first timed call).
``num_threads=None`` means every numba thread (all cores, ``numba.get_num_threads()``); for
``cpu_v1``/``cpu_v2`` it is also the number of chunks T. When T exceeds the OS threads, the T
logical threads are spread over the available ones. Chunks are equal, ``m = M // chunks`` rows
each; like the JAX lanes trainer, the last ``M mod chunks`` rows are dropped (every row is still
validated). ``last_timing()["rows_used"]`` reports how many rows took part.

Semantics (identical in all four; the tests compare them to a plain-Python loop):

* Episode = one pass over the chunk of ``m`` rows starting at ``start``:
  SEQ ``start .. start+m-1``; RAN ``m`` draws ``start + floor(u * m)`` (with replacement);
  STR(k) ``for o in 0..k-1: start+o, start+o+k, ...`` (every row once, chunk offset kept).
* Random numbers: the PIM LCG ``x <- (x * 1664525 + 1013904223) mod 2**32``, ``u = x / 2**32``.
  Every lane / thread / the sequential loop owns one generator, started at ``config.seed``
  (42: every PIM core runs the same program), continued across episodes and sync rounds.
  Per update the draws happen in this order: the RAN row index (RAN only); then for SARSA one
  epsilon draw ``u``; if ``u < epsilon`` one more draw picks ``a' = floor(u2 * A)``, otherwise
  ``a'`` is greedy at ``s'`` on the current table (ties -> lowest action). The SARSA draws are
  made for every update, also when the row is terminated.
* Q-learning target ``r + gamma * max_a' Q[s', a']``; ``compat_max0=True`` uses
  ``max(0, max_a' Q[s', a'])`` like the published C code. ``terminated`` zeroes the bootstrap.
* fp32: ``Q[s,a] += alpha * ((r + gamma * next_q) - Q[s,a])``, every operation in float32;
  averages are accumulated in float64 and rounded to float32.
* int32 fixed point (scale ``S = 10,000``): ``Q``, ``r``, ``alpha``, ``gamma`` are stored as
  ``round(x * S)`` (``np.rint``, half to even; exact for integer rewards). Each update, with
  ``tdiv`` = C integer division (truncation toward zero) on int64 intermediates::

      boot = 0 if terminated else tdiv(gamma_s * next_q_s, S)
      Q_s[s, a] += tdiv(alpha_s * (r_s + boot - Q_s[s, a]), S)

  Averages are ``tdiv(sum of lanes (int64), C)``. The result is descaled as
  ``float32(Q_s / S)`` (computed in float64). Configurations whose Q-values could leave int32
  (``max|r_s| * S / (S - gamma_s)``) are rejected before any compute.

Example (from the repository root, or with ``benchmarks/`` on ``sys.path`` and
``import baselines_numba``)::

    from benchmarks.baselines_numba import BaselineConfig, lanes_numba, random_dataset
    data = random_dataset(1_000_000, 16, 4)            # dict of NumPy arrays
    cfg = BaselineConfig(num_states=16, num_actions=4, algorithm="q_learning",
                         sampling="seq", fmt="int32", num_episodes=2000, sync_period=50)
    q, seconds = lanes_numba(data, cfg, num_lanes=2000)
    updates_per_s = cfg.num_episodes * 1_000_000 / seconds

Also public: ``run_baseline(name, data, config, num_lanes)`` (dispatch by name, one of
``BASELINES``), ``warm_up(fmt=None)`` (compile ahead; otherwise the first call per kernel
compiles before its timed run), ``lcg_next`` / ``lcg_sequence`` and ``random_dataset``.

Run ``python benchmarks/baselines_numba.py --quick`` for a table of updates/s per baseline and
variant (JSON + Markdown + PNG under ``benchmarks/results/``).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numba
import numpy as np
from numba import njit, prange

from jaxrl_pim.checks import check_choice, check_finite, check_float, check_index_range, check_int

ALGORITHMS = ("q_learning", "sarsa")
SAMPLINGS = ("seq", "ran", "str")
FORMATS = ("fp32", "int32")
LCG_MULTIPLIER = 1664525
LCG_INCREMENT = 1013904223
LCG_MODULUS = 2**32
_INT32_MAX = 2**31 - 1
CHUNKED_SCHEDULE = True  # lanes: dynamic blocks of about C / (8 threads) lanes
SCALE = 10_000  # int32 fixed-point scale for Q, reward, alpha and gamma (the paper's)

_ALGO_CODE = {"q_learning": 0, "sarsa": 1}
_SAMPLING_CODE = {"seq": 0, "ran": 1, "str": 2}


@dataclasses.dataclass(frozen=True)
class BaselineConfig:
    """Options shared by every baseline; validated at construction (ValueError on bad input).

    Attributes:
      num_states, num_actions: table size S x A.
      algorithm: ``"q_learning"`` or ``"sarsa"``.
      sampling: ``"seq"``, ``"ran"`` or ``"str"`` (stride ``stride``).
      fmt: ``"fp32"`` or ``"int32"`` (fixed point, scale :data:`SCALE` = 10,000).
      num_episodes: passes over each chunk (the paper: 2,000).
      sync_period: episodes between averaging rounds (tau; the paper: 50). Unused by
        ``sequential`` and ``cpu_v1``.
      alpha, gamma: learning rate and discount.
      epsilon: SARSA exploration probability for the bootstrap action.
      stride: k for STR sampling.
      compat_max0: Q-learning bootstraps with ``max(0, max Q)`` like the published C code.
      seed: LCG seed of every lane / thread.
    """

    num_states: int
    num_actions: int
    algorithm: str = "q_learning"
    sampling: str = "seq"
    fmt: str = "fp32"
    num_episodes: int = 2000
    sync_period: int = 50
    alpha: float = 0.1
    gamma: float = 0.95
    epsilon: float = 0.1
    stride: int = 4
    compat_max0: bool = False
    seed: int = 42

    def __post_init__(self) -> None:
        check_int("num_states", self.num_states, 1, _INT32_MAX)
        check_int("num_actions", self.num_actions, 1, 2**16)
        check_choice("algorithm", self.algorithm, ALGORITHMS)
        check_choice("sampling", self.sampling, SAMPLINGS)
        check_choice("fmt", self.fmt, FORMATS)
        check_int("num_episodes", self.num_episodes, 1)
        check_int("sync_period", self.sync_period, 1)
        check_float("alpha", self.alpha, 0.0, 1.0, lo_open=True)
        check_float("gamma", self.gamma, 0.0, 1.0)
        check_float("epsilon", self.epsilon, 0.0, 1.0)
        check_int("stride", self.stride, 1)
        check_int("seed", self.seed, 0, LCG_MODULUS - 1)
        if not isinstance(self.compat_max0, bool):
            raise ValueError(f"compat_max0 must be a bool, got {self.compat_max0!r}")
        if self.compat_max0 and self.algorithm != "q_learning":
            raise ValueError("compat_max0 applies to algorithm='q_learning' only; got 'sarsa'")
        if self.fmt == "int32":
            if round(self.alpha * SCALE) < 1:
                raise ValueError(
                    f"alpha * {SCALE} must round to >= 1 for int32, got alpha={self.alpha}"
                )
            if round(self.gamma * SCALE) >= SCALE:
                raise ValueError(
                    f"gamma must round below 1 at scale {SCALE} for int32 (Q-values would "
                    f"be unbounded), got gamma={self.gamma}"
                )


# ----------------------------------------------------------------------------------------------
# The PIM random number generator.


def lcg_next(state: int) -> int:
    """One step of the PIM LCG: ``(state * 1664525 + 1013904223) mod 2**32``."""
    return (int(state) * LCG_MULTIPLIER + LCG_INCREMENT) % LCG_MODULUS


@njit(cache=False, inline="always")
def _lcg(x):
    return (x * 1664525 + 1013904223) & 0xFFFFFFFF


@njit(cache=False)
def lcg_sequence(seed: int, n: int) -> np.ndarray:
    """The first ``n`` LCG states after ``seed`` (int64 [n], values in [0, 2**32))."""
    out = np.empty(n, dtype=np.int64)
    x = np.int64(seed)
    for i in range(n):
        x = _lcg(x)
        out[i] = x
    return out


# ----------------------------------------------------------------------------------------------
# Episode loops, one per numeric format. The update is written out in the loop body (not in a
# helper function): numba helpers taking the data arrays cost 3-7x in throughput here. The
# algorithm / sampling branches are loop-invariant and predicted.


@njit(cache=False)
def _tdiv(a, b):
    """C integer division of int64 ``a`` by positive ``b``: truncation toward zero."""
    if a >= 0:
        return a // b
    return -((-a) // b)


@njit(cache=False, inline="always")
def _tdiv_scale(x):
    """``x / SCALE`` truncated toward zero (C integer division), branch-free for int64 ``x``."""
    sgn = x >> 63  # 0 or -1
    mag = ((x ^ sgn) - sgn) // SCALE  # |x| // SCALE: SCALE is a compile-time constant
    return (mag ^ sgn) - sgn


@njit(cache=False)
def _episodes_f32(q, st, ac, rw, ns, tm, start, m, n_ep, algo, sampling, stride, max0, eps_thr,
                  alpha, gamma, rng):
    """``n_ep`` passes over rows [start, start+m) updating float32 ``q`` [S, A] in place.

    Returns the LCG state after the last draw.
    """
    n_act = q.shape[1]
    end = start + m
    for _ in range(n_ep):
        cur = start  # STR: next row; wraps to start + offset + 1 at the chunk end
        off = 0
        for j in range(m):
            if sampling == 0:
                i = start + j
            elif sampling == 1:
                rng = (rng * 1664525 + 1013904223) & 0xFFFFFFFF
                i = start + ((rng * m) >> 32)
            else:
                i = cur
                cur += stride
                if cur >= end:
                    off += 1
                    cur = start + off
            sn = ns[i]
            if algo == 1:  # SARSA: a' epsilon-greedy on the current table
                rng = (rng * 1664525 + 1013904223) & 0xFFFFFFFF
                if rng < eps_thr:
                    rng = (rng * 1664525 + 1013904223) & 0xFFFFFFFF
                    ap = (rng * n_act) >> 32
                else:
                    ap = 0
                    best = q[sn, 0]
                    for b in range(1, n_act):
                        v = q[sn, b]
                        if v > best:
                            best = v
                            ap = b
                nq = q[sn, ap]
            else:
                nq = q[sn, 0]
                for b in range(1, n_act):
                    if q[sn, b] > nq:
                        nq = q[sn, b]
                if max0 and nq < 0:
                    nq = np.float32(0.0)
            boot = np.float32(0.0)
            if not tm[i]:
                boot = gamma * nq
            s = st[i]
            a = ac[i]
            q[s, a] = q[s, a] + alpha * ((rw[i] + boot) - q[s, a])
    return rng


@njit(cache=False)
def _episodes_i32(q, st, ac, rw, ns, tm, start, m, n_ep, algo, sampling, stride, max0, eps_thr,
                  alpha, gamma, rng):
    """As :func:`_episodes_f32` for int32 fixed point (``alpha``, ``gamma`` int64, scaled).

    ``SCALE`` is a module constant so numba turns the divisions into multiply-shifts.
    """
    n_act = q.shape[1]
    end = start + m
    for _ in range(n_ep):
        cur = start
        off = 0
        for j in range(m):
            if sampling == 0:
                i = start + j
            elif sampling == 1:
                rng = (rng * 1664525 + 1013904223) & 0xFFFFFFFF
                i = start + ((rng * m) >> 32)
            else:
                i = cur
                cur += stride
                if cur >= end:
                    off += 1
                    cur = start + off
            sn = ns[i]
            if algo == 1:
                rng = (rng * 1664525 + 1013904223) & 0xFFFFFFFF
                if rng < eps_thr:
                    rng = (rng * 1664525 + 1013904223) & 0xFFFFFFFF
                    ap = (rng * n_act) >> 32
                else:
                    ap = 0
                    best = q[sn, 0]
                    for b in range(1, n_act):
                        v = q[sn, b]
                        if v > best:
                            best = v
                            ap = b
                nq = np.int64(q[sn, ap])
            else:
                nq = np.int64(q[sn, 0])
                for b in range(1, n_act):
                    if q[sn, b] > nq:
                        nq = np.int64(q[sn, b])
                if max0 and nq < 0:
                    nq = np.int64(0)
            boot = np.int64(0)
            if not tm[i]:
                boot = _tdiv_scale(gamma * nq)
            s = st[i]
            a = ac[i]
            cur_q = np.int64(q[s, a])
            q[s, a] = cur_q + _tdiv_scale(alpha * (np.int64(rw[i]) + boot - cur_q))
    return rng


@njit(cache=False)
def _avg_row_f32(q_lanes, row, out):
    n_lanes = q_lanes.shape[0]
    for b in range(q_lanes.shape[2]):
        acc = 0.0
        for c in range(n_lanes):
            acc += np.float64(q_lanes[c, row, b])
        out[row, b] = np.float32(acc / n_lanes)


@njit(cache=False)
def _avg_row_i32(q_lanes, row, out):
    n_lanes = q_lanes.shape[0]
    for b in range(q_lanes.shape[2]):
        acc = np.int64(0)
        for c in range(n_lanes):
            acc += np.int64(q_lanes[c, row, b])
        out[row, b] = _tdiv(acc, np.int64(n_lanes))


# ----------------------------------------------------------------------------------------------
# Kernels, built once per numeric format around that format's episode loop and average.


def _build_kernels(episodes, avg_row):
    @njit(cache=False)
    def seq_kernel(q, st, ac, rw, ns, tm, n_ep, algo, sampling, stride, max0, eps_thr, alpha,
                   gamma, seed):
        episodes(q, st, ac, rw, ns, tm, 0, st.shape[0], n_ep, algo, sampling, stride, max0,
                 eps_thr, alpha, gamma, seed)

    @njit(parallel=True, cache=False)
    def v1_kernel(q, st, ac, rw, ns, tm, n_chunks, n_ep, algo, sampling, stride, max0, eps_thr,
                  alpha, gamma, seed):
        m = st.shape[0] // n_chunks
        for t in prange(n_chunks):  # all chunks write the one shared table, no locks
            episodes(q, st, ac, rw, ns, tm, t * m, m, n_ep, algo, sampling, stride, max0,
                     eps_thr, alpha, gamma, seed)

    @njit(parallel=True, cache=False)
    def lanes_kernel(q_lanes, out, rngs, st, ac, rw, ns, tm, n_ep, sync_period, algo, sampling,
                     stride, max0, eps_thr, alpha, gamma):
        n_lanes = q_lanes.shape[0]
        n_rows = q_lanes.shape[1]
        m = st.shape[0] // n_lanes
        done = 0
        while done < n_ep:
            n = min(sync_period, n_ep - done)
            for c in prange(n_lanes):
                rngs[c] = episodes(q_lanes[c], st, ac, rw, ns, tm, c * m, m, n, algo, sampling,
                                   stride, max0, eps_thr, alpha, gamma, rngs[c])
            done += n
            # Sync round: serial (S * A * C adds, small beside the updates; one prange keeps
            # compile time down).
            for row in range(n_rows):
                avg_row(q_lanes, row, out)
            if done < n_ep:
                for c in range(n_lanes):
                    q_lanes[c] = out

    return seq_kernel, v1_kernel, lanes_kernel


_KERNELS = {
    "fp32": _build_kernels(_episodes_f32, _avg_row_f32),
    "int32": _build_kernels(_episodes_i32, _avg_row_i32),
}
_WARM: set[tuple[str, str]] = set()
_LAST_TIMING: dict[str, Any] = {}


# ----------------------------------------------------------------------------------------------
# Host side: validation, scaling, calling the kernels.


@dataclasses.dataclass(frozen=True)
class _Prepared:
    st: np.ndarray
    ac: np.ndarray
    rw: np.ndarray
    ns: np.ndarray
    tm: np.ndarray
    scalars: tuple


def _field(data: Any, name: str) -> np.ndarray:
    if isinstance(data, dict):
        if name not in data:
            raise ValueError(f"data is missing field {name!r}")
        return np.asarray(data[name])
    if not hasattr(data, name):
        raise ValueError(f"data is missing field {name!r}")
    return np.asarray(getattr(data, name))


def _prepare(data: Any, config: BaselineConfig, n_chunks: int) -> _Prepared:
    if not isinstance(config, BaselineConfig):
        raise ValueError(f"config must be a BaselineConfig, got {type(config).__name__}")
    arrays = {k: _field(data, k) for k in ("state", "action", "reward", "next_state",
                                             "terminated")}
    n = arrays["state"].shape
    for k, v in arrays.items():
        if v.ndim != 1 or v.shape != n:
            raise ValueError(f"data.{k} must be 1-D with the same length as data.state {n}, "
                             f"got shape {v.shape}")
    m_total = n[0]
    if m_total == 0:
        raise ValueError("data holds no transitions")
    if m_total > _INT32_MAX:
        raise ValueError(f"data holds {m_total} rows; at most {_INT32_MAX} are supported")
    used = (m_total // n_chunks) * n_chunks
    if used == 0:
        raise ValueError(f"{n_chunks} chunks exceed the dataset size {m_total}: every chunk "
                         f"needs at least one transition")
    check_index_range("data.state", arrays["state"], config.num_states)
    check_index_range("data.next_state", arrays["next_state"], config.num_states)
    check_index_range("data.action", arrays["action"], config.num_actions)
    if arrays["reward"].dtype.kind not in "fiub":
        raise ValueError(f"data.reward must be numeric, got dtype {arrays['reward'].dtype}")
    check_finite("data.reward", arrays["reward"])
    if arrays["terminated"].dtype.kind not in "biu":
        raise ValueError(f"data.terminated must be bool, got dtype {arrays['terminated'].dtype}")
    # Like the JAX lanes trainer: equal chunks of M // C rows; the last M mod C rows are dropped.
    arrays = {k: v[:used] for k, v in arrays.items()}

    algo = _ALGO_CODE[config.algorithm]
    sampling = _SAMPLING_CODE[config.sampling]
    eps_thr = float(config.epsilon) * float(LCG_MODULUS)
    if config.fmt == "fp32":
        rw = np.ascontiguousarray(arrays["reward"], dtype=np.float32)
        alpha, gamma = np.float32(config.alpha), np.float32(config.gamma)
    else:
        rw64 = np.rint(arrays["reward"].astype(np.float64) * SCALE)
        alpha = np.int64(round(config.alpha * SCALE))
        gamma = np.int64(round(config.gamma * SCALE))
        r_max = float(np.abs(rw64).max())
        bound = r_max * SCALE / (SCALE - int(gamma)) + r_max + 1
        if bound > _INT32_MAX:
            raise ValueError(
                f"int32 fixed point at scale {SCALE} could overflow: |reward| up to "
                f"{r_max / SCALE:g} with gamma={config.gamma} allows |Q| up to "
                f"{bound / SCALE:.4g}; use fmt='fp32' or smaller rewards"
            )
        rw = np.ascontiguousarray(rw64.astype(np.int32))
    return _Prepared(
        st=np.ascontiguousarray(arrays["state"], dtype=np.int32),
        ac=np.ascontiguousarray(arrays["action"], dtype=np.int32),
        rw=rw,
        ns=np.ascontiguousarray(arrays["next_state"], dtype=np.int32),
        tm=np.ascontiguousarray(arrays["terminated"] != 0, dtype=np.bool_),
        scalars=(algo, sampling, int(config.stride), bool(config.compat_max0), eps_thr, alpha,
                 gamma),
    )


def _qdtype(config: BaselineConfig) -> type:
    return np.float32 if config.fmt == "fp32" else np.int32


def _descale(q: np.ndarray, config: BaselineConfig) -> np.ndarray:
    if config.fmt == "fp32":
        return np.array(q, dtype=np.float32)
    return (q.astype(np.float64) / SCALE).astype(np.float32)


@contextlib.contextmanager
def _threads(num_threads: int | None) -> Iterator[int]:
    """Run the body with ``min(num_threads, NUMBA_NUM_THREADS)`` numba threads."""
    previous = numba.get_num_threads()
    n = numba.config.NUMBA_NUM_THREADS if num_threads is None else num_threads
    numba.set_num_threads(max(1, min(n, numba.config.NUMBA_NUM_THREADS)))
    try:
        yield numba.get_num_threads()
    finally:
        numba.set_num_threads(previous)


def _run(kind: str, data: Any, config: BaselineConfig, n_chunks: int) -> tuple[np.ndarray, float]:
    """Validate, warm up ``kind`` for ``config.fmt`` if needed, run it once timed."""
    p = _prepare(data, config, n_chunks)
    if (kind, config.fmt) not in _WARM:
        _warm_up(kind, config)
    seq_kernel, v1_kernel, lanes_kernel = _KERNELS[config.fmt]
    s, a = config.num_states, config.num_actions
    algo, sampling, stride, max0, eps_thr, alpha, gamma = p.scalars
    n_ep = int(config.num_episodes)
    seed = np.int64(config.seed)
    if kind == "seq":
        q = np.zeros((s, a), dtype=_qdtype(config))
        c0, t0 = time.process_time(), time.perf_counter()
        seq_kernel(q, p.st, p.ac, p.rw, p.ns, p.tm, n_ep, algo, sampling, stride, max0,
                   eps_thr, alpha, gamma, seed)
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    elif kind == "v1":
        q = np.zeros((s, a), dtype=_qdtype(config))
        c0, t0 = time.process_time(), time.perf_counter()
        v1_kernel(q, p.st, p.ac, p.rw, p.ns, p.tm, int(n_chunks), n_ep, algo, sampling, stride,
                  max0, eps_thr, alpha, gamma, seed)
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    else:
        q_lanes = np.zeros((n_chunks, s, a), dtype=_qdtype(config))
        q = np.zeros((s, a), dtype=_qdtype(config))
        rngs = np.full(n_chunks, seed, dtype=np.int64)
        # Hand lanes out in small blocks (dynamic scheduling) rather than one static block per
        # thread, so a thread slowed by other processes does not hold up the sync round.
        previous = numba.set_parallel_chunksize(
            max(1, n_chunks // (8 * numba.get_num_threads())) if CHUNKED_SCHEDULE else 0)
        try:
            c0, t0 = time.process_time(), time.perf_counter()
            lanes_kernel(q_lanes, q, rngs, p.st, p.ac, p.rw, p.ns, p.tm, n_ep,
                         int(config.sync_period), algo, sampling, stride, max0, eps_thr, alpha,
                         gamma)
            seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
        finally:
            numba.set_parallel_chunksize(previous)
    _LAST_TIMING.update(wall_s=seconds, cpu_s=cpu, kind=kind, chunks=int(n_chunks),
                        rows_used=int(p.st.shape[0]))
    return _descale(q, config), seconds


def last_timing() -> dict[str, Any]:
    """Timing of the most recent timed run in this process: ``wall_s`` (perf_counter, what the
    baselines return), ``cpu_s`` (process CPU time over the same region, summed over threads;
    ``cpu_s / wall_s`` shows how much of the machine the run got), ``kind``, ``chunks`` and
    ``rows_used`` (rows trained on: the last ``M mod chunks`` rows are dropped)."""
    return dict(_LAST_TIMING)


def _warm_up(kind: str, config: BaselineConfig) -> None:
    """Compile ``kind`` for ``config.fmt`` on 8 rows (2 chunks) so timed calls exclude JIT."""
    _WARM.add((kind, config.fmt))
    tiny = {
        "state": np.array([0, 1, 0, 1, 0, 1, 0, 1], dtype=np.int32),
        "action": np.zeros(8, dtype=np.int32),
        "reward": np.ones(8, dtype=np.float32),
        "next_state": np.array([1, 0, 1, 0, 1, 0, 1, 0], dtype=np.int32),
        "terminated": np.zeros(8, dtype=bool),
    }
    small = dataclasses.replace(config, num_states=2, num_actions=1, num_episodes=2,
                                sync_period=1)
    _run(kind, tiny, small, 2)


def warm_up(fmt: str | None = None) -> None:
    """Compile every kernel for ``fmt`` (both formats when None) ahead of timed calls."""
    for f in FORMATS if fmt is None else (check_choice("fmt", fmt, FORMATS),):
        cfg = BaselineConfig(num_states=2, num_actions=1, fmt=f)
        for kind in ("seq", "v1", "lanes"):
            if (kind, f) not in _WARM:
                _warm_up(kind, cfg)


# ----------------------------------------------------------------------------------------------
# Public baselines.


def sequential(data: Any, config: BaselineConfig) -> tuple[np.ndarray, float]:
    """Single-thread loop, one Q-table, each episode one pass over all M rows.

    Returns (Q float32 [num_states, num_actions], wall seconds of training).
    """
    return _run("seq", data, config, 1)


def cpu_v1(
    data: Any, config: BaselineConfig, num_threads: int | None = None
) -> tuple[np.ndarray, float]:
    """CPU-V1: T threads share ONE Q-table without locks, each over its own contiguous chunk.

    Every thread runs ``config.num_episodes`` passes over its M/T rows with its own LCG; there
    is no synchronisation (``sync_period`` is unused). Racy and nondeterministic when more than
    one OS thread runs; with T = 1 it equals :func:`sequential`.
    ``num_threads`` = T (default: all numba threads). Returns (Q float32 [S, A], wall seconds).
    """
    if num_threads is not None:
        check_int("num_threads", num_threads, 1)
    with _threads(num_threads) as n_os:
        return _run("v1", data, config, n_os if num_threads is None else num_threads)


def cpu_v2(
    data: Any, config: BaselineConfig, num_threads: int | None = None
) -> tuple[np.ndarray, float]:
    """CPU-V2: T threads with private Q-tables over contiguous chunks, averaged every
    ``config.sync_period`` episodes; final table = mean of the T tables.

    ``num_threads`` = T (default: all numba threads). Deterministic. Returns (Q float32 [S, A],
    wall seconds).
    """
    if num_threads is not None:
        check_int("num_threads", num_threads, 1)
    with _threads(num_threads) as n_os:
        return _run("lanes", data, config, n_os if num_threads is None else num_threads)


def lanes_numba(
    data: Any, config: BaselineConfig, num_lanes: int, num_threads: int | None = None
) -> tuple[np.ndarray, float]:
    """The JAX lanes trainer's algorithm in Numba: ``num_lanes`` private Q-tables over equal
    contiguous chunks (``prange`` over lanes on ``num_threads`` OS threads, default all),
    averaged every ``config.sync_period`` episodes; final table = lane mean.

    Deterministic for any thread count. Returns (Q float32 [S, A], wall seconds).
    """
    check_int("num_lanes", num_lanes, 1)
    if num_threads is not None:
        check_int("num_threads", num_threads, 1)
    with _threads(num_threads):
        return _run("lanes", data, config, int(num_lanes))


BASELINES = ("sequential", "cpu_v1", "cpu_v2", "lanes_numba")


# ----------------------------------------------------------------------------------------------
# Benchmark.


def run_baseline(name: str, data: Any, config: BaselineConfig,
                 num_lanes: int) -> tuple[np.ndarray, float]:
    """Run baseline ``name`` (one of :data:`BASELINES`) with default threads; ``num_lanes`` is
    used by ``lanes_numba`` only. Returns (Q float32 [S, A], wall seconds)."""
    check_choice("baseline", name, BASELINES)
    if name == "sequential":
        return sequential(data, config)
    if name == "cpu_v1":
        return cpu_v1(data, config)
    if name == "cpu_v2":
        return cpu_v2(data, config)
    return lanes_numba(data, config, num_lanes)


def random_dataset(num_rows: int, num_states: int, num_actions: int, seed: int = 0,
                   goal_prob: float = 0.015) -> dict[str, np.ndarray]:
    """FrozenLake-like random transitions: uniform s, a, s'; reward 1 and terminated with
    probability ``goal_prob`` (about FrozenLake 4x4's rate under a random policy), else 0."""
    rng = np.random.default_rng(seed)
    goal = rng.random(num_rows) < goal_prob
    return {
        "state": rng.integers(0, num_states, num_rows, dtype=np.int32),
        "action": rng.integers(0, num_actions, num_rows, dtype=np.int32),
        "reward": goal.astype(np.float32),
        "next_state": rng.integers(0, num_states, num_rows, dtype=np.int32),
        "terminated": goal,
    }


def main(argv: list[str] | None = None) -> int:
    """Measure updates/s of every baseline x variant; write JSON, Markdown and a PNG plot."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="fewer episodes (updates/s extrapolated per update)")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--states", type=int, default=16)
    parser.add_argument("--actions", type=int, default=4)
    parser.add_argument("--lanes", type=int, default=2000)
    parser.add_argument("--episodes", type=int, default=None,
                        help="episodes per run (default 2000; 20 with --quick)")
    parser.add_argument("--repeats", type=int, default=1,
                        help="timed runs per baseline and variant; the fastest is reported")
    parser.add_argument("--sync-period", type=int, default=50)
    parser.add_argument("--baselines", default=",".join(BASELINES))
    parser.add_argument("--algorithms", default=",".join(ALGORITHMS))
    parser.add_argument("--samplings", default=",".join(SAMPLINGS))
    parser.add_argument("--formats", default=",".join(FORMATS))
    parser.add_argument("--out", default=str(Path(__file__).parent / "results"))
    args = parser.parse_args(argv)

    try:
        from benchmarks import pim_published
    except ImportError:  # run as a script: benchmarks/ is sys.path[0]
        import pim_published  # type: ignore[no-redef]
    from jaxrl_pim import report

    episodes = args.episodes or (20 if args.quick else 2000)
    check_int("--repeats", args.repeats, 1)
    check_int("--rows", args.rows, 1)
    check_int("--lanes", args.lanes, 1)
    check_int("--episodes", episodes, 1)
    if args.lanes > args.rows:
        raise ValueError(f"--lanes {args.lanes} exceeds --rows {args.rows}")
    baselines = _pick("--baselines", args.baselines, BASELINES)
    variants = [(a, s, f) for a in _pick("--algorithms", args.algorithms, ALGORITHMS)
                for s in _pick("--samplings", args.samplings, SAMPLINGS)
                for f in _pick("--formats", args.formats, FORMATS)]
    data = random_dataset(args.rows, args.states, args.actions)
    n_threads = numba.get_num_threads()
    rows = []
    t_start = time.perf_counter()
    warm_up()
    t_warm = time.perf_counter() - t_start
    for algo, samp, fmt in variants:
        cfg = BaselineConfig(num_states=args.states, num_actions=args.actions, algorithm=algo,
                             sampling=samp, fmt=fmt, num_episodes=episodes,
                             sync_period=args.sync_period)
        for b in baselines:
            parts = {"sequential": 1, "lanes_numba": args.lanes}.get(b, n_threads)
            times, cpus = [], []
            for _ in range(args.repeats):
                q, sec = run_baseline(b, data, cfg, args.lanes)
                times.append(sec)
                cpus.append(last_timing()["cpu_s"])
            best = int(np.argmin(times))
            sec, cpu = times[best], cpus[best]
            updates = episodes * last_timing()["rows_used"]  # M mod chunks rows are dropped
            rows.append({
                "baseline": b, "algorithm": algo, "sampling": samp, "fmt": fmt,
                "chunks": parts, "episodes": episodes, "updates": updates, "seconds": sec,
                "seconds_all_repeats": times, "cpu_seconds": cpu,
                "cpu_utilisation": cpu / sec, "updates_per_cpu_s": updates / cpu,
                "load_average_1min": os.getloadavg()[0],
                "updates_per_s": updates / sec,
                "seconds_2000_episodes_extrapolated": sec * 2000 / episodes,
                "q_mean": float(q.mean()),
            })
            print(f"{b:12s} {algo:10s} {samp:3s} {fmt:5s} {updates / sec:10.3e} updates/s "
                  f"({sec:.3f} s wall, {cpu / sec:.2f} cores busy)", flush=True)
    t_total = time.perf_counter() - t_start

    summary = {
        f"{r['baseline']}_updates_per_s_{r['algorithm']}_{r['sampling']}_{r['fmt']}":
        r["updates_per_s"]
        for r in rows if r["algorithm"] == "q_learning" and r["sampling"] == "seq"
    }
    summary["best_updates_per_s"] = max(r["updates_per_s"] for r in rows)
    summary["numba_threads"] = n_threads
    summary["extrapolated"] = episodes != 2000
    summary["gpu"] = None
    summary["gpu_note"] = "Numba CPU baselines: no GPU variant exists; GPU fields are null."
    config = {"rows": args.rows, "states": args.states, "actions": args.actions,
              "lanes": args.lanes, "episodes": episodes, "sync_period": args.sync_period,
              "quick": args.quick, "repeats": args.repeats, "numba": numba.__version__,
              "numba_threads": n_threads,
              "dataset": "uniform random s, a, s'; reward 1 + terminated w.p. 0.015"}
    results = {"rows": rows, "published": pim_published.PUBLISHED}
    rep = report.make_report(config, results, {"warm_up": t_warm, "total": t_total}, summary)
    out = Path(args.out)
    stem = "baselines_numba_quick" if args.quick else "baselines_numba"
    report.write_json(out / f"{stem}.json", rep)
    md = _markdown(rows, rep["system"], config, pim_published)
    report.atomic_save(out / f"{stem}.md", lambda p: Path(p).write_text(md))
    print()
    print(md)
    try:
        _plot(rows, baselines, variants, out / f"{stem}.png", rep["system"])
    except Exception as err:  # a missing plotting backend must not lose the measurements
        print(f"plot skipped: {err}", file=sys.stderr)
    return 0


def _markdown(rows: list[dict], system: dict, config: dict, published: Any) -> str:
    lines = [
        f"Numba baselines, {config['rows']:,} rows, {config['states']} states x "
        f"{config['actions']} actions, {config['episodes']} episodes, sync every "
        f"{config['sync_period']}, lanes_numba with {config['lanes']} lanes; "
        f"{system['cpu']} ({system['cpu_count']} cores, numba {config['numba']}, "
        f"{config['numba_threads']} threads). Wall time, compile excluded.",
        "",
        "Cores busy = process CPU time / wall time over the timed region (below the thread "
        "count when other processes share the machine).",
        "",
        "| baseline | algorithm | sampling | format | chunks | updates/s | s for 2,000 ep. "
        "| cores busy | updates/CPU-s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['baseline']} | {r['algorithm']} | {r['sampling']} | {r['fmt']} | "
            f"{r['chunks']} | {r['updates_per_s']:.3e} | "
            f"{r['seconds_2000_episodes_extrapolated']:.2f} | {r['cpu_utilisation']:.2f} | "
            f"{r['updates_per_cpu_s']:.3e} |"
        )
    lines += ["", "Published (paper, not measured here):", ""]
    for k, v in published.HEADLINE.items():
        lines.append(f"- {k}: {v}")
    return "\n".join(lines) + "\n"


def _pick(name: str, text: str, allowed: tuple[str, ...]) -> list[str]:
    picked = [x.strip() for x in text.split(",") if x.strip()]
    if not picked:
        raise ValueError(f"{name} is empty; choose from {', '.join(allowed)}")
    return [check_choice(name, x, allowed) for x in picked]


def _plot(rows: list[dict], baselines: list[str], variants: list[tuple[str, str, str]],
          path: Path, system: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [f"{a[0].upper()}-{s.upper()}-{f.upper()}" for a, s, f in variants]
    fig, ax = plt.subplots(figsize=(12, 4.5))
    width = 0.8 / max(1, len(baselines))
    for j, b in enumerate(baselines):
        vals = [r["updates_per_s"] for r in rows if r["baseline"] == b]
        xs = [i + j * width for i in range(len(vals))]
        ax.bar(xs, vals, width=width, label=b)
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(labels))])
    ax.set_xticklabels(labels, rotation=45, ha="right", fontsize=8)
    ax.set_ylabel("updates / s")
    ax.set_title(f"Numba CPU baselines ({system['cpu']}, {system['cpu_count']} cores)",
                 fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    from jaxrl_pim import report

    report.atomic_save(path, lambda p: fig.savefig(p, dpi=120))
    plt.close(fig)


def cli(argv: list[str] | None = None) -> int:
    """``main`` with bad options reported as one line (exit status 2) instead of a traceback."""
    try:
        return main(argv)
    except ValueError as err:
        print(f"baselines_numba: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(cli())
