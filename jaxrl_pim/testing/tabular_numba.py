"""Numba CPU baselines for offline tabular Q-learning / SARSA (the SwiftRL workloads).

What a user would run instead of the JAX lanes trainer (:mod:`jaxrl_pim.tabular`) on a CPU,
with the same semantics draw for draw, so the two can be compared like for like and checked
against each other. Importing this module imports numba (an optional dependency: install the
``dev`` extra); nothing else in the package imports it.

Baselines (all share one update rule and one random-number mapping):

* :func:`sequential` -- one thread, one Q-table, every episode one pass over all rows.
* :func:`cpu_v1` -- the paper's CPU-V1: ``T`` logical threads (``prange`` over thread ids)
  each over its own contiguous chunk, all writing ONE shared table without locks. Racy by
  design: with more than one OS thread the result is not deterministic.
* :func:`cpu_v2` -- the paper's CPU-V2: ``T`` private tables over contiguous chunks, averaged
  every ``sync_period`` episodes (= :func:`lanes_numba` with ``T`` lanes).
* :func:`lanes_numba` -- the lanes trainer's algorithm, one lane at a time: ``prange`` over
  lanes, each lane running its whole chunk (one dependent chain of updates) before the next.
* :func:`lanes_block_numba` -- the same algorithm interleaved like the XLA scan: lanes are
  split into blocks of ``block_lanes``; ``prange`` runs blocks in parallel and, inside a
  block, for each row position ``j`` every lane of the block is updated before ``j + 1``
  (independent chains side by side, so the CPU overlaps their latencies). Rows are stored
  like the trainer's ``LaneData``: ``sa = s * A + a`` and ``s'`` in the narrowest integer
  type, time-major ``[m, C]`` for SEQ/STR (already in visiting order), lane-major ``[C, m]``
  for RAN. Its results equal :func:`lanes_numba`'s bit for bit.

Signatures (``config`` is the trainer's own :class:`~jaxrl_pim.tabular.TabularConfig`,
with ``rng="lcg"``, ``dtype`` fp32 or int32 and ``independent=False``; see
:func:`check_config`)::

    sequential(data, config)                                        -> (q, seconds)
    cpu_v1(data, config, num_threads=None)                          -> (q, seconds)
    cpu_v2(data, config, num_threads=None)                          -> (q, seconds)
    lanes_numba(data, config, num_lanes=None, num_threads=None)     -> (q, seconds)
    lanes_block_numba(data, config, num_lanes=None, block_lanes=0, num_threads=None)
                                                                    -> (q, seconds)

``num_lanes=None`` means ``config.num_cores``; the other baselines split the rows over
threads, not lanes.

``data``: a mapping or an object (e.g. :class:`jaxrl_pim.data.Dataset`) with the fields
``state``, ``action``, ``next_state`` (int ``[M]``), ``reward`` (float ``[M]``) and
``terminated`` (bool ``[M]``). ``q``: float32 ``[num_states, num_actions]`` (descaled for
int32). ``seconds``: ``time.perf_counter`` wall time of the training loop only (all
episodes, every sync round, the final mean); validation, layout, fixed-point scaling,
descaling and JIT compilation are excluded (kernels are compiled on tiny data of the same
dtypes before the first timed call). ``num_threads=None`` uses every numba thread. Chunks are
``m = M // chunks`` rows; the last ``M mod chunks`` rows are dropped, as in the trainer.

Semantics (those of ``TabularConfig(rng="lcg")`` in :mod:`jaxrl_pim.tabular`):

* Sync rounds of ``episodes_in_rounds(config, r, r + 1)`` episodes
  (:mod:`jaxrl_pim.tabular.config`), each ending with the lane mean.
* Episode = one pass over a chunk of ``m`` rows: SEQ ``0 .. m-1``; STR(k) ``o, o+k, ...`` for
  ``o = 0..k-1`` (relative to the chunk start); RAN ``m`` draws with replacement.
* Random numbers: the PIM LCG ``x <- (1664525 x + 1013904223) mod 2**32``, one generator per
  lane (per thread for CPU-V1, one for :func:`sequential`) started at ``config.lcg_seed`` and
  continued across episodes and sync rounds. Per update, in order: the RAN row (RAN only),
  then for SARSA the exploration number and the random action (both drawn on every SARSA
  update). A draw ``x`` maps to ``u = (x >> 8) * 2**-24`` in float32 and to an integer in
  ``[0, n)`` as ``min(floor(u * n), n - 1)`` with the product rounded to float32; SARSA
  explores when ``u < float32(epsilon)`` and otherwise takes the greedy action at ``s'`` on
  the current table (ties to the lowest action).
* Q-learning target ``r + gamma * max_a' Q[s', a']`` (``compat_max0``: ``max(0, .)`` like
  the published C code); ``terminated`` zeroes the bootstrap.
* fp32: ``Q[s,a] += alpha * ((r + gamma * boot) - Q[s,a])`` in float32; lane means are
  accumulated in float64 and rounded to float32 (the trainer sums in float32, so fp32 tables
  agree with it to rounding).
* int32 fixed point (scale 10,000): ``Q``, ``r``, ``alpha``, ``gamma`` stored as
  ``round(x * 10000)``; ``boot = trunc(gamma_s * q / S)``, ``Q += trunc(alpha_s * (r_s +
  boot - Q) / S)`` (C truncation, exact in int64), lane means ``trunc(sum / C)``: bit-exact
  with the trainer. Configurations whose Q-values could leave int32 are rejected.

Also public: :func:`run_baseline` (dispatch by name, one of :data:`BASELINES`),
:func:`warm_up`, :func:`last_timing`, :func:`lcg_next`, :func:`lcg_sequence`,
:func:`lcg_draws` (the draws of one lane, for parity checks) and :func:`random_dataset`.

Example::

    from jaxrl_pim.tabular import TabularConfig
    from jaxrl_pim.testing.tabular_numba import lanes_block_numba, random_dataset
    data = random_dataset(100_000, 16, 4)
    cfg = TabularConfig(num_states=16, num_actions=4, algo="sarsa", sampling="ran",
                        dtype="int32", num_cores=200, num_episodes=10, sync_period=5, rng="lcg")
    q, seconds = lanes_block_numba(data, cfg)

Over 400 lines on purpose: every baseline shares one update rule, one fixed-point
arithmetic and one LCG mapping that must match the trainer draw for draw; one module keeps
that mapping in one place.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import time
from collections.abc import Iterator
from typing import Any

import numba
import numpy as np
from numba import njit, prange

from jaxrl_pim.checks import check_choice, check_finite, check_index_range, check_int
from jaxrl_pim.tabular.config import ALGOS, TabularConfig, round_lengths

#: The Q-table formats these baselines run (``TabularConfig.dtype``; fp16/bf16 are not here).
FORMATS = ("fp32", "int32")
BASELINES = ("sequential", "cpu_v1", "cpu_v2", "lanes_numba", "lanes_block_numba")
LCG_MULTIPLIER = 1664525
LCG_INCREMENT = 1013904223
LCG_MODULUS = 2**32
SCALE = 10_000  # int32 fixed-point scale for Q, reward, alpha and gamma (the paper's)
DEFAULT_BLOCK_LANES = 32  # lanes interleaved per block by lanes_block_numba (block_lanes=0)
_INT32_MAX = 2**31 - 1

_ALGO_CODE = {"q": 0, "sarsa": 1}
_SAMPLING_CODE = {"seq": 0, "ran": 1, "str": 2}


# ----------------------------------------------------------------------------------------------
# The PIM random number generator and the trainer's mapping of its draws.


def lcg_next(state: int) -> int:
    """One step of the PIM LCG: ``(state * 1664525 + 1013904223) mod 2**32``."""
    return (int(state) * LCG_MULTIPLIER + LCG_INCREMENT) % LCG_MODULUS


@njit(cache=False, inline="always")
def _lcg(x):
    return (x * 1664525 + 1013904223) & 0xFFFFFFFF


@njit(cache=False, inline="always")
def _lcg_int(x, n):
    """``min(floor(float32((x >> 8) * 2**-24) * float32(n)), n - 1)``, product in float32."""
    u = np.float32(x >> 8) * np.float32(5.9604644775390625e-08)
    v = np.int64(u * np.float32(n))  # u * n >= 0: truncation is floor
    return min(v, n - 1)


def explore_threshold(epsilon: float) -> int:
    """Integer ``T`` with ``(x >> 8) < T`` exactly when ``float32((x >> 8) * 2**-24) <
    float32(epsilon)`` (both sides are exact multiples of ``2**-24`` or float32 values)."""
    return int(math.ceil(float(np.float32(epsilon)) * 2**24))


@njit(cache=False)
def lcg_sequence(seed: int, n: int) -> np.ndarray:
    """The first ``n`` LCG states after ``seed`` (int64 ``[n]``, values in ``[0, 2**32)``)."""
    out = np.empty(n, dtype=np.int64)
    x = np.int64(seed)
    for i in range(n):
        x = _lcg(x)
        out[i] = x
    return out


@njit(cache=False)
def _lcg_draws(seed, n, m, n_act, ran, sarsa, eps_thr):
    idx = np.full(n, -1, dtype=np.int64)
    explore = np.zeros(n, dtype=np.bool_)
    rand_a = np.full(n, -1, dtype=np.int64)
    x = np.int64(seed)
    for t in range(n):
        if ran:
            x = _lcg(x)
            idx[t] = _lcg_int(x, m)
        if sarsa:
            x = _lcg(x)
            explore[t] = (x >> 8) < eps_thr
            x = _lcg(x)
            rand_a[t] = _lcg_int(x, n_act)
    return idx, explore, rand_a, x


def lcg_draws(config: TabularConfig, num_updates: int, chunk_rows: int
              ) -> dict[str, np.ndarray | int]:
    """The draws one lane makes over ``num_updates`` updates of a ``chunk_rows``-row chunk.

    Returns ``{"index" [n] (RAN row in the chunk, else -1), "explore" [n] bool (SARSA
    explores, else False), "random_action" [n] (SARSA, else -1), "state" (LCG state after
    the last draw)}`` -- what every kernel here consumes, for parity checks.
    """
    check_int("num_updates", num_updates, 0)
    check_int("chunk_rows", chunk_rows, 1)
    idx, explore, rand_a, x = _lcg_draws(
        np.int64(config.lcg_seed), int(num_updates), int(chunk_rows), int(config.num_actions),
        config.sampling == "ran", config.algo == "sarsa",
        explore_threshold(config.epsilon))
    return {"index": idx, "explore": explore, "random_action": rand_a, "state": int(x)}


# ----------------------------------------------------------------------------------------------
# The update, one function per numeric format (scalars in, new stored value out; inlined).


@njit(cache=False, inline="always")
def _tdiv_scale(x):
    """``x / SCALE`` truncated toward zero (C integer division), branch-free for int64 ``x``."""
    sgn = x >> 63  # 0 or -1
    mag = ((x ^ sgn) - sgn) // SCALE  # |x| // SCALE: SCALE is a compile-time constant
    return (mag ^ sgn) - sgn


@njit(cache=False)
def _tdiv(a, b):
    """C integer division of int64 ``a`` by positive ``b``: truncation toward zero."""
    if a >= 0:
        return a // b
    return -((-a) // b)


@njit(cache=False, inline="always")
def _update_f32(q_sa, r, nq, term, alpha, gamma):
    boot = np.float32(0.0)
    if not term:
        boot = gamma * nq
    return q_sa + alpha * ((r + boot) - q_sa)


@njit(cache=False, inline="always")
def _update_i32(q_sa, r, nq, term, alpha, gamma):
    boot = np.int64(0)
    if not term:
        boot = _tdiv_scale(gamma * np.int64(nq))
    cur = np.int64(q_sa)
    return cur + _tdiv_scale(alpha * (np.int64(r) + boot - cur))


@njit(cache=False)
def _avg_f32(q_lanes, out):
    """``out[k] = float32(mean over lanes of q_lanes[:, k])`` (float64 accumulation)."""
    n_lanes = q_lanes.shape[0]
    for k in range(q_lanes.shape[1]):
        acc = 0.0
        for c in range(n_lanes):
            acc += np.float64(q_lanes[c, k])
        out[k] = np.float32(acc / n_lanes)


@njit(cache=False)
def _avg_i32(q_lanes, out):
    """``out[k] = trunc(sum over lanes of q_lanes[:, k] / C)`` (exact, int64 sum)."""
    n_lanes = q_lanes.shape[0]
    for k in range(q_lanes.shape[1]):
        acc = np.int64(0)
        for c in range(n_lanes):
            acc += np.int64(q_lanes[c, k])
        out[k] = _tdiv(acc, np.int64(n_lanes))


# ----------------------------------------------------------------------------------------------
# Kernels, built per numeric format and per action count ``A`` (a compile-time constant, so
# the loops over actions unroll and the max / argmax become branch-free selects: about 2x
# faster than a loop over a runtime ``A``, whose data-dependent branches mispredict). The
# update is written out in the loop bodies: numba helpers that take the data arrays cost 3-7x
# in throughput here. Algorithm and sampling branches are loop-invariant and predicted.


def _build_kernels(update, average, n_act):
    @njit(cache=False)
    def episodes(q, st, ac, rw, ns, tm, start, m, n_ep, algo, sampling, stride, max0, eps_thr,
                 alpha, gamma, rng):
        """``n_ep`` passes over rows ``[start, start + m)`` updating ``q`` ``[S, A]`` in place
        (one dependent chain). Returns the LCG state after the last draw."""
        end = start + m
        for _ in range(n_ep):
            cur = start  # STR: next row; wraps to start + offset + 1 at the chunk end
            off = 0
            for j in range(m):
                if sampling == 0:
                    i = start + j
                elif sampling == 1:
                    rng = _lcg(rng)
                    i = start + _lcg_int(rng, m)
                else:
                    i = cur
                    cur += stride
                    if cur >= end:
                        off += 1
                        cur = start + off
                sn = ns[i]
                if algo == 1:  # SARSA: a' epsilon-greedy on the current table (branch-free)
                    rng = _lcg(rng)
                    explore = (rng >> 8) < eps_thr
                    rng = _lcg(rng)
                    greedy = 0
                    best = q[sn, 0]
                    for b in range(1, n_act):
                        v = q[sn, b]
                        gt = v > best
                        best = v if gt else best
                        greedy = b if gt else greedy
                    ap = _lcg_int(rng, n_act) if explore else greedy
                    nq = q[sn, ap]
                else:
                    nq = q[sn, 0]
                    for b in range(1, n_act):
                        nq = max(nq, q[sn, b])
                    if max0 and nq < 0:
                        nq = nq - nq
                s = st[i]
                a = ac[i]
                q[s, a] = update(q[s, a], rw[i], nq, tm[i], alpha, gamma)
        return rng

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
    def lanes_kernel(q_lanes, out, rngs, st, ac, rw, ns, tm, rounds, algo, sampling,
                     stride, max0, eps_thr, alpha, gamma):
        """Sync round ``k`` runs ``rounds[k]`` episodes on every lane, then averages."""
        n_lanes, n_s, n_a = q_lanes.shape
        m = st.shape[0] // n_lanes
        flat = q_lanes.reshape(n_lanes, n_s * n_a)
        n_rounds = rounds.shape[0]
        for k in range(n_rounds):
            n = rounds[k]
            for c in prange(n_lanes):
                rngs[c] = episodes(q_lanes[c], st, ac, rw, ns, tm, c * m, m, n, algo, sampling,
                                   stride, max0, eps_thr, alpha, gamma, rngs[c])
            average(flat, out)  # serial: S * A * C adds, small beside the updates
            if k + 1 < n_rounds:
                for c in range(n_lanes):
                    flat[c] = out

    return seq_kernel, v1_kernel, lanes_kernel


def _build_block_kernel(update, average, n_act, algo, ran, max0):
    """The block-of-lanes kernel with the action count, algorithm, sampling kind and
    ``compat_max0`` fixed at compile time (no branch in the inner loop but the data's)."""
    sarsa = algo == 1
    draws = ran or sarsa

    @njit(parallel=True, cache=False)
    def block_kernel(q, out, rngs, sa, s2, rw, tm, n_lanes, rounds, eps_thr, alpha, gamma):
        """Blocks of lanes; per row position every lane of a block is updated; sync round
        ``k`` runs ``rounds[k]`` episodes, then averages.

        ``q`` ``[NB, B, S * A]`` (lanes past ``n_lanes`` unused), ``rngs`` ``[NB, B]``;
        ``sa``, ``s2``, ``rw``, ``tm`` block-major ``[NB, m, B]``: block ``bk``, row position
        ``j``, lane ``bk * B + c`` (SEQ/STR rows already in visiting order; RAN draws the
        position).
        """
        n_blocks, m, block = sa.shape
        n_tab = q.shape[2]
        flat = q.reshape(n_blocks * block, n_tab)
        n_rounds = rounds.shape[0]
        for kr in range(n_rounds):
            n = rounds[kr]
            for bk in prange(n_blocks):
                width = min(block, n_lanes - bk * block)
                qb = q[bk]
                rb = rngs[bk]
                sab = sa[bk]
                s2b = s2[bk]
                rwb = rw[bk]
                tmb = tm[bk]
                # Per row position, a first pass over the block's lanes makes their draws
                # and, for RAN, fetches their rows into small scratch arrays (independent
                # loads, many in flight); the update pass then reads them from L1. This cuts
                # the long draw -> row -> bootstrap -> update chain in two, as XLA's separate
                # gather and update ops do.
                rand_a = np.empty(block, dtype=np.int64)
                explore = np.empty(block, dtype=np.bool_)
                k_row = np.empty(block, dtype=np.int64)
                s2_row = np.empty(block, dtype=np.int64)
                r_row = np.empty(block, dtype=rw.dtype)
                t_row = np.empty(block, dtype=np.bool_)
                for _ in range(n):
                    for j in range(m):
                        if draws:
                            for c in range(width):
                                rng = rb[c]
                                if ran:
                                    rng = _lcg(rng)
                                    i = _lcg_int(rng, m)
                                    k_row[c] = sab[i, c]
                                    s2_row[c] = s2b[i, c]
                                    r_row[c] = rwb[i, c]
                                    t_row[c] = tmb[i, c]
                                if sarsa:
                                    rng = _lcg(rng)
                                    explore[c] = (rng >> 8) < eps_thr
                                    rng = _lcg(rng)
                                    rand_a[c] = _lcg_int(rng, n_act)
                                rb[c] = rng
                        for c in range(width):
                            if ran:
                                k = k_row[c]
                                sn = s2_row[c] * n_act
                                r = r_row[c]
                                t = t_row[c]
                            else:
                                k = np.int64(sab[j, c])
                                sn = np.int64(s2b[j, c]) * n_act
                                r = rwb[j, c]
                                t = tmb[j, c]
                            if sarsa:
                                greedy = 0
                                best = qb[c, sn]
                                for b in range(1, n_act):
                                    v = qb[c, sn + b]
                                    gt = v > best
                                    best = v if gt else best
                                    greedy = b if gt else greedy
                                ap = rand_a[c] if explore[c] else greedy
                                nq = qb[c, sn + ap]
                            else:
                                nq = qb[c, sn]
                                for b in range(1, n_act):
                                    nq = max(nq, qb[c, sn + b])
                                if max0 and nq < 0:
                                    nq = nq - nq
                            qb[c, k] = update(qb[c, k], r, nq, t, alpha, gamma)
            average(flat[:n_lanes], out)
            if kr + 1 < n_rounds:
                for c in range(n_lanes):
                    flat[c] = out

    return block_kernel


_UPDATES = {"fp32": (_update_f32, _avg_f32), "int32": (_update_i32, _avg_i32)}
_KERNELS: dict[tuple, Any] = {}


def _kernels(fmt: str, num_actions: int) -> tuple:
    """The per-lane kernels for ``fmt`` with ``A = num_actions`` (built on first use)."""
    key = (fmt, int(num_actions))
    if key not in _KERNELS:
        _KERNELS[key] = _build_kernels(*_UPDATES[fmt], int(num_actions))
    return _KERNELS[key]


def _block_key(config: TabularConfig) -> tuple[str, bool, bool]:
    return (config.algo, config.sampling == "ran", bool(config.compat_max0))


def _block_kernel(config: TabularConfig) -> Any:
    """The block kernel specialised for ``config`` (built on first use)."""
    key = ("block", config.dtype, int(config.num_actions), *_block_key(config))
    if key not in _KERNELS:
        _KERNELS[key] = _build_block_kernel(*_UPDATES[config.dtype], int(config.num_actions),
                                            _ALGO_CODE[config.algo],
                                            config.sampling == "ran", bool(config.compat_max0))
    return _KERNELS[key]


_COMPILED: set[tuple] = set()
_LAST_TIMING: dict[str, Any] = {}


# ----------------------------------------------------------------------------------------------
# Host side: validation, scaling, layout, calling the kernels.


@dataclasses.dataclass(frozen=True)
class _Prepared:
    st: np.ndarray
    ac: np.ndarray
    rw: np.ndarray
    ns: np.ndarray
    tm: np.ndarray
    algo: int
    sampling: int
    eps_thr: int
    alpha: Any
    gamma: Any


def _field(data: Any, name: str) -> np.ndarray:
    if isinstance(data, dict):
        if name not in data:
            raise ValueError(f"data is missing field {name!r}")
        return np.asarray(data[name])
    if not hasattr(data, name):
        raise ValueError(f"data is missing field {name!r}")
    return np.asarray(getattr(data, name))


def check_config(config: TabularConfig) -> TabularConfig:
    """Return ``config`` if these baselines run it: a :class:`TabularConfig` with ``dtype``
    in :data:`FORMATS`, ``rng="lcg"`` (the only generator here) and shared lanes
    (``independent=False``); raise ValueError naming the field otherwise. ``kernel``,
    ``unroll`` and ``lanes_per_block`` (the trainer's speed options) are not read."""
    if not isinstance(config, TabularConfig):
        raise ValueError(f"config must be a TabularConfig, got {type(config).__name__}")
    check_choice("dtype", config.dtype, FORMATS)
    if config.rng != "lcg":
        raise ValueError(f"the Numba baselines draw from the PIM LCG: rng must be 'lcg', got "
                         f"{config.rng!r}")
    if config.independent:
        raise ValueError("the Numba baselines average their lanes: independent must be False")
    return config


def _prepare(data: Any, config: TabularConfig, n_chunks: int) -> _Prepared:
    check_config(config)
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
    arrays = {k: v[:used] for k, v in arrays.items()}  # the last M mod C rows are dropped
    if config.dtype == "fp32":
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
                f"{bound / SCALE:.4g}; use dtype='fp32' or smaller rewards")
        rw = np.ascontiguousarray(rw64.astype(np.int32))
    return _Prepared(
        st=np.ascontiguousarray(arrays["state"], dtype=np.int32),
        ac=np.ascontiguousarray(arrays["action"], dtype=np.int32),
        rw=rw,
        ns=np.ascontiguousarray(arrays["next_state"], dtype=np.int32),
        tm=np.ascontiguousarray(arrays["terminated"] != 0, dtype=np.bool_),
        algo=_ALGO_CODE[config.algo], sampling=_SAMPLING_CODE[config.sampling],
        eps_thr=explore_threshold(config.epsilon), alpha=alpha, gamma=gamma,
    )


def index_dtype(n: int) -> np.dtype:
    """Narrowest dtype holding ``0..n-1`` among uint8, int16, int32 (as the trainer)."""
    if n <= 256:
        return np.dtype(np.uint8)
    return np.dtype(np.int16) if n <= 32767 else np.dtype(np.int32)


def stride_order(m: int, k: int) -> np.ndarray:
    """The STR visiting order of an ``m``-row chunk with stride ``k`` (``[m]`` int64)."""
    return np.concatenate([np.arange(o, m, k) for o in range(min(k, m))])


def _block_layout(p: _Prepared, config: TabularConfig, n_lanes: int,
                  block: int) -> tuple[np.ndarray, ...]:
    """``(sa, s2, rw, tm)`` block-major ``[NB, m, B]`` for the block kernel (SEQ/STR rows in
    visiting order); lanes past ``n_lanes`` in the last block are zero padding, never read."""
    m = p.st.shape[0] // n_lanes
    n_blocks = -(-n_lanes // block)
    sa = (p.st.astype(np.int64) * config.num_actions + p.ac).astype(
        index_dtype(config.num_states * config.num_actions)).reshape(n_lanes, m)
    s2 = p.ns.astype(index_dtype(config.num_states)).reshape(n_lanes, m)
    order = np.arange(m)
    if config.sampling == "str":
        order = stride_order(m, config.stride)
    out = []
    for f in (sa, s2, p.rw.reshape(n_lanes, m), p.tm.reshape(n_lanes, m)):
        padded = np.zeros((n_blocks * block, m), dtype=f.dtype)
        padded[:n_lanes] = f[:, order]
        out.append(np.ascontiguousarray(padded.reshape(n_blocks, block, m).transpose(0, 2, 1)))
    return tuple(out)


def _qdtype(config: TabularConfig) -> type:
    return np.float32 if config.dtype == "fp32" else np.int32


def _descale(q: np.ndarray, config: TabularConfig) -> np.ndarray:
    if config.dtype == "fp32":
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


@contextlib.contextmanager
def _chunksize(n_items: int) -> Iterator[None]:
    """Hand ``prange`` iterations out in small blocks (dynamic scheduling) rather than one
    static block per thread, so a thread slowed by other processes does not hold up the sync
    round."""
    previous = numba.set_parallel_chunksize(max(1, n_items // (8 * numba.get_num_threads())))
    try:
        yield
    finally:
        numba.set_parallel_chunksize(previous)


def _lanes(config: TabularConfig, num_lanes: int | None) -> int:
    """The lanes of a lanes baseline: ``num_lanes``, or ``config.num_cores`` when None."""
    return config.num_cores if num_lanes is None else check_int("num_lanes", num_lanes, 1)


def _resolve_block(block_lanes: int, n_lanes: int) -> int:
    return min(block_lanes or DEFAULT_BLOCK_LANES, n_lanes)


def _call(kind: str, p: _Prepared, config: TabularConfig, n_chunks: int,
          layout: tuple[np.ndarray, ...] | None) -> tuple[np.ndarray, float, float]:
    """Run kernel ``kind`` once; returns (stored table [S, A], wall s, process CPU s)."""
    seq_kernel, v1_kernel, lanes_kernel = _kernels(config.dtype, config.num_actions)
    s, a = config.num_states, config.num_actions
    n_ep = int(config.num_episodes)
    rounds = np.asarray(round_lengths(config), dtype=np.int64)  # episodes per sync round
    seed = np.int64(config.lcg_seed)
    max0 = bool(config.compat_max0)
    scal = (p.algo, p.sampling, int(config.stride), max0, p.eps_thr, p.alpha, p.gamma)
    if kind in ("seq", "v1"):
        q = np.zeros((s, a), dtype=_qdtype(config))
        c0, t0 = time.process_time(), time.perf_counter()
        if kind == "seq":
            seq_kernel(q, p.st, p.ac, p.rw, p.ns, p.tm, n_ep, *scal, seed)
        else:
            v1_kernel(q, p.st, p.ac, p.rw, p.ns, p.tm, int(n_chunks), n_ep, *scal, seed)
        return q, time.perf_counter() - t0, time.process_time() - c0
    out = np.zeros(s * a, dtype=_qdtype(config))
    if kind == "lanes":
        rngs = np.full(n_chunks, seed, dtype=np.int64)
        q_lanes = np.zeros((n_chunks, s, a), dtype=_qdtype(config))
        with _chunksize(n_chunks):
            c0, t0 = time.process_time(), time.perf_counter()
            lanes_kernel(q_lanes, out, rngs, p.st, p.ac, p.rw, p.ns, p.tm, rounds, *scal)
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    else:
        n_blocks, _, block = layout[0].shape
        rngs = np.full((n_blocks, block), seed, dtype=np.int64)
        q_blocks = np.zeros((n_blocks, block, s * a), dtype=_qdtype(config))
        block_kernel = _block_kernel(config)
        with _chunksize(n_blocks):
            c0, t0 = time.process_time(), time.perf_counter()
            block_kernel(q_blocks, out, rngs, *layout, int(n_chunks), rounds, p.eps_thr,
                         p.alpha, p.gamma)
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return out.reshape(s, a), wall, cpu


def _compile(kind: str, config: TabularConfig, index_dtypes: tuple[str, ...] = ()) -> None:
    """Compile ``kind`` for ``config.dtype`` and ``config.num_actions`` (and, for the block
    kernel, the row-index dtypes) by running it on tiny data of the same types."""
    sig = (kind, config.dtype, config.num_actions, tuple(index_dtypes))
    if kind == "block":
        sig += _block_key(config)
    if sig in _COMPILED:
        return
    tiny = {
        "state": np.zeros(8, dtype=np.int32), "action": np.zeros(8, dtype=np.int32),
        "reward": np.ones(8, dtype=np.float32), "next_state": np.zeros(8, dtype=np.int32),
        "terminated": np.zeros(8, dtype=bool),
    }
    small = dataclasses.replace(config, num_states=1, num_episodes=2, sync_period=1)
    if kind != "block":  # the per-lane kernels take these as run-time arguments
        small = dataclasses.replace(small, sampling="seq", algo="q", compat_max0=False)
    p = _prepare(tiny, small, 2)
    layout = None
    if kind == "block":
        layout = _block_layout(p, small, 2, 1)
        layout = (layout[0].astype(index_dtypes[0]), layout[1].astype(index_dtypes[1]),
                  *layout[2:])
    _call(kind, p, small, 2, layout)
    _COMPILED.add(sig)


def _run(kind: str, data: Any, config: TabularConfig, n_chunks: int,
         block_lanes: int = 0) -> tuple[np.ndarray, float]:
    """Validate, lay out, compile ``kind`` if needed, run it once timed."""
    p = _prepare(data, config, n_chunks)
    block = _resolve_block(block_lanes, n_chunks)
    layout = _block_layout(p, config, n_chunks, block) if kind == "block" else None
    _compile(kind, config, () if layout is None else tuple(str(x.dtype) for x in layout[:2]))
    q, wall, cpu = _call(kind, p, config, n_chunks, layout)
    _LAST_TIMING.clear()
    _LAST_TIMING.update(wall_s=wall, cpu_s=cpu, kind=kind, chunks=int(n_chunks),
                        rows_used=int(p.st.shape[0]),
                        block_lanes=int(block) if kind == "block" else None)
    return _descale(q, config), wall


def last_timing() -> dict[str, Any]:
    """Timing of the most recent timed run in this process: ``wall_s`` (perf_counter, what the
    baselines return), ``cpu_s`` (process CPU time over the same region, summed over threads;
    ``cpu_s / wall_s`` shows how much of the machine the run got), ``kind``, ``chunks``,
    ``rows_used`` (rows trained on: the last ``M mod chunks`` rows are dropped) and
    ``block_lanes`` (lanes_block_numba only, else None)."""
    return dict(_LAST_TIMING)


def warm_up(dtype: str | None = None, num_actions: int = 4, num_states: int = 16) -> None:
    """Compile every kernel for ``dtype`` (both formats when None), ``num_actions`` and the row
    index dtypes of ``num_states`` ahead of timed calls (other sizes compile on first use,
    outside the timed region)."""
    check_int("num_actions", num_actions, 1, 255)
    check_int("num_states", num_states, 1)
    dtypes = (str(index_dtype(num_states * num_actions)), str(index_dtype(num_states)))
    for f in FORMATS if dtype is None else (check_choice("dtype", dtype, FORMATS),):
        cfg = TabularConfig(num_states=num_states, num_actions=num_actions, dtype=f,
                            rng="lcg")
        for kind in ("seq", "v1", "lanes"):
            _compile(kind, cfg)
        for algo in ALGOS:  # the block kernel is specialised per algorithm and
            for sampling in ("seq", "ran"):  # sampling kind (STR compiles as SEQ)
                _compile("block", dataclasses.replace(cfg, algo=algo, sampling=sampling),
                         dtypes)


# ----------------------------------------------------------------------------------------------
# Public baselines.


def sequential(data: Any, config: TabularConfig) -> tuple[np.ndarray, float]:
    """Single-thread loop, one Q-table, each episode one pass over all M rows.

    Returns (Q float32 [num_states, num_actions], wall seconds of training).
    """
    return _run("seq", data, config, 1)


def cpu_v1(
    data: Any, config: TabularConfig, num_threads: int | None = None
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
    data: Any, config: TabularConfig, num_threads: int | None = None
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
    data: Any, config: TabularConfig, num_lanes: int | None = None,
    num_threads: int | None = None,
) -> tuple[np.ndarray, float]:
    """The lanes trainer's algorithm, one lane's chain at a time: ``num_lanes`` private
    Q-tables over equal contiguous chunks (``prange`` over lanes on ``num_threads`` OS
    threads, default all), averaged every ``config.sync_period`` episodes; final = lane mean.

    ``num_lanes`` defaults to ``config.num_cores``. Deterministic for any thread count.
    Returns (Q float32 [S, A], wall seconds).
    """
    num_lanes = _lanes(config, num_lanes)
    if num_threads is not None:
        check_int("num_threads", num_threads, 1)
    with _threads(num_threads):
        return _run("lanes", data, config, int(num_lanes))


def lanes_block_numba(
    data: Any, config: TabularConfig, num_lanes: int | None = None, block_lanes: int = 0,
    num_threads: int | None = None,
) -> tuple[np.ndarray, float]:
    """The lanes trainer's algorithm interleaved over blocks of lanes (see module docstring):
    ``prange`` over blocks of ``block_lanes`` lanes (0: :data:`DEFAULT_BLOCK_LANES`, at most
    ``num_lanes``); inside a block, every lane takes row ``j`` before any takes row ``j + 1``.

    ``num_lanes`` defaults to ``config.num_cores``. Same results as :func:`lanes_numba`, bit
    for bit. Returns (Q float32 [S, A], wall s).
    """
    num_lanes = _lanes(config, num_lanes)
    check_int("block_lanes", block_lanes, 0)
    if num_threads is not None:
        check_int("num_threads", num_threads, 1)
    with _threads(num_threads):
        return _run("block", data, config, int(num_lanes), int(block_lanes))


def run_baseline(name: str, data: Any, config: TabularConfig, num_lanes: int | None = None,
                 block_lanes: int = 0) -> tuple[np.ndarray, float]:
    """Run baseline ``name`` (one of :data:`BASELINES`) on all numba threads; ``num_lanes``
    (default ``config.num_cores``) is used by the two lanes baselines, ``block_lanes`` by
    ``lanes_block_numba``.
    Returns (Q float32 [S, A], wall seconds)."""
    check_choice("baseline", name, BASELINES)
    if name == "sequential":
        return sequential(data, config)
    if name == "cpu_v1":
        return cpu_v1(data, config)
    if name == "cpu_v2":
        return cpu_v2(data, config)
    if name == "lanes_numba":
        return lanes_numba(data, config, num_lanes)
    return lanes_block_numba(data, config, num_lanes, block_lanes)


def updates_of(name: str, config: TabularConfig, num_rows: int,
               num_lanes: int | None = None) -> int:
    """Updates baseline ``name`` performs on ``num_rows`` rows (dropped rows excluded;
    ``num_lanes`` as in :func:`run_baseline`)."""
    check_choice("baseline", name, BASELINES)
    if name == "sequential":
        chunks = 1
    elif name in ("cpu_v1", "cpu_v2"):
        chunks = numba.config.NUMBA_NUM_THREADS
    else:
        chunks = _lanes(config, num_lanes)
    return (num_rows // chunks) * chunks * config.num_episodes


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
