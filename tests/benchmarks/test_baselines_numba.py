"""Numba CPU baselines against an independent plain-Python reference loop.

The reference below re-implements the SwiftRL semantics (reference.md §1) directly from the
definitions, with Python ints / NumPy float32 scalars and float LCG uniforms, one update at a
time. int32 results must match exactly, fp32 to 1e-5 relative.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

numba = pytest.importorskip("numba")

from benchmarks import baselines_numba as bn  # noqa: E402
from benchmarks import pim_published  # noqa: E402

S, A = 16, 4
ROWS = 2000
EPISODES = 6
SYNC = 2
LANES = 4
THREADS = 2
SCALE = 10_000


# ----------------------------------------------------------------------------------------------
# Reference (independent of the module under test).


def _lcg(x: int) -> int:
    return (x * 1664525 + 1013904223) % 4294967296


def _trunc_div(a: int, b: int) -> int:
    return math.trunc(a / b)  # exact here: |a| << 2**53


def _reference(data, *, algorithm, sampling, fmt, n_chunks, episodes=EPISODES, sync=SYNC,
               alpha=0.1, gamma=0.95, epsilon=0.1, stride=4, max0=False, seed=42,
               shared=False):
    """Train like the paper: ``n_chunks`` private tables (or one shared table run chunk after
    chunk when ``shared``), averaged every ``sync`` episodes. Returns float32 [S, A]."""
    st = [int(x) for x in data["state"]]
    ac = [int(x) for x in data["action"]]
    ns = [int(x) for x in data["next_state"]]
    tm = [bool(x) for x in data["terminated"]]
    m = len(st) // n_chunks
    if fmt == "fp32":
        rw = [np.float32(x) for x in data["reward"]]
        al, ga = np.float32(alpha), np.float32(gamma)
        zero = np.float32(0.0)
    else:
        rw = [round(float(x) * SCALE) for x in data["reward"]]
        al, ga = round(alpha * SCALE), round(gamma * SCALE)
        zero = 0

    def episode(q, start, rng):
        """One pass; ``rng`` is one stream shared by RAN row draws and SARSA draws (per
        update: the row draw first, then the SARSA draws)."""
        if sampling == "seq":
            rows = range(start, start + m)
        elif sampling == "str":
            rows = [start + o + stride * t for o in range(stride)
                    for t in range(m) if o + stride * t < m]
        else:
            rows = [None] * m
        for i in rows:
            if i is None:
                rng = _lcg(rng)
                i = start + math.floor(rng / 2**32 * m)
            rng = update(q, i, rng)
        return rng

    def update(q, i, rng):
        s, a, sn = st[i], ac[i], ns[i]
        row = q[sn]
        if algorithm == "sarsa":
            rng = _lcg(rng)
            if rng / 2**32 < epsilon:
                rng = _lcg(rng)
                ap = math.floor(rng / 2**32 * A)
            else:
                ap = max(range(A), key=lambda b: (row[b], -b))  # ties -> lowest action
            nxt = row[ap]
        else:
            nxt = max(row)
            if max0:
                nxt = max(nxt, zero)
        if fmt == "fp32":
            boot = zero if tm[i] else ga * nxt
            q[s][a] = q[s][a] + al * ((rw[i] + boot) - q[s][a])
        else:
            boot = 0 if tm[i] else _trunc_div(ga * nxt, SCALE)
            q[s][a] = q[s][a] + _trunc_div(al * (rw[i] + boot - q[s][a]), SCALE)
        return rng

    def mean(tables):
        if fmt == "fp32":
            return np.mean(np.array(tables, dtype=np.float64), axis=0).astype(np.float32)
        total = np.sum(np.array(tables, dtype=np.int64), axis=0)
        return np.vectorize(lambda v: _trunc_div(int(v), len(tables)))(total)

    def new_table():
        return [[zero] * A for _ in range(S)]

    if shared:
        q = new_table()
        for c in range(n_chunks):
            rng = seed
            for _ in range(episodes):
                rng = episode(q, c * m, rng)
        final = np.array(q)
    else:
        tables = [new_table() for _ in range(n_chunks)]
        rngs = [seed] * n_chunks
        done = 0
        while done < episodes:
            n = min(sync, episodes - done)
            for c in range(n_chunks):
                for _ in range(n):
                    rngs[c] = episode(tables[c], c * m, rngs[c])
            done += n
            avg = mean(tables)
            tables = [[list(r) for r in avg] for _ in range(n_chunks)]
        final = avg
    if fmt == "fp32":
        return np.asarray(final, dtype=np.float32)
    return (np.asarray(final, dtype=np.float64) / SCALE).astype(np.float32)


# ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(7)
    term = rng.random(ROWS) < 0.05
    reward = rng.choice(np.array([-1.0, 0.0, 0.0, 0.25, 1.0], dtype=np.float32), ROWS)
    return {
        "state": rng.integers(0, S, ROWS, dtype=np.int32),
        "action": rng.integers(0, A, ROWS, dtype=np.int32),
        "reward": reward.astype(np.float32),
        "next_state": rng.integers(0, S, ROWS, dtype=np.int32),
        "terminated": term,
    }


def _cfg(algorithm, sampling, fmt, **kw):
    return bn.BaselineConfig(num_states=S, num_actions=A, algorithm=algorithm,
                             sampling=sampling, fmt=fmt, num_episodes=kw.pop("episodes", EPISODES),
                             sync_period=SYNC, **kw)


def _assert_match(got, want, fmt):
    assert got.dtype == np.float32 and got.shape == (S, A)
    assert np.abs(want).max() > 0.05  # the reference learned something
    if fmt == "int32":
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


VARIANTS = [(a, s, f) for a in bn.ALGORITHMS for s in bn.SAMPLINGS for f in bn.FORMATS]


@pytest.mark.parametrize("algorithm,sampling,fmt", VARIANTS)
def test_sequential_matches_reference(data, algorithm, sampling, fmt):
    q, sec = bn.sequential(data, _cfg(algorithm, sampling, fmt))
    want = _reference(data, algorithm=algorithm, sampling=sampling, fmt=fmt, n_chunks=1,
                      sync=EPISODES)
    _assert_match(q, want, fmt)
    assert sec > 0


@pytest.mark.parametrize("algorithm,sampling,fmt", VARIANTS)
def test_lanes_matches_reference(data, algorithm, sampling, fmt):
    q, _ = bn.lanes_numba(data, _cfg(algorithm, sampling, fmt), num_lanes=LANES)
    want = _reference(data, algorithm=algorithm, sampling=sampling, fmt=fmt, n_chunks=LANES)
    _assert_match(q, want, fmt)


@pytest.mark.parametrize("algorithm,sampling,fmt", VARIANTS)
def test_cpu_v2_matches_reference(data, algorithm, sampling, fmt):
    q, _ = bn.cpu_v2(data, _cfg(algorithm, sampling, fmt), num_threads=THREADS)
    want = _reference(data, algorithm=algorithm, sampling=sampling, fmt=fmt, n_chunks=THREADS)
    _assert_match(q, want, fmt)


@pytest.mark.parametrize("fmt", bn.FORMATS)
def test_compat_max0_matches_reference_and_differs(data, fmt):
    cfg = _cfg("q_learning", "seq", fmt, compat_max0=True)
    q, _ = bn.lanes_numba(data, cfg, num_lanes=LANES)
    want = _reference(data, algorithm="q_learning", sampling="seq", fmt=fmt, n_chunks=LANES,
                      max0=True)
    _assert_match(q, want, fmt)
    q_true, _ = bn.lanes_numba(data, _cfg("q_learning", "seq", fmt), num_lanes=LANES)
    assert not np.array_equal(q, q_true)  # negative rewards: max(0, .) changes the targets


@pytest.mark.parametrize("fmt", bn.FORMATS)
def test_uneven_stride_and_partial_sync_round(data, fmt):
    # stride 3 does not divide the 500-row chunks; 5 episodes with sync 2 ends on a half round.
    cfg = _cfg("sarsa", "str", fmt, stride=3, episodes=5)
    q, _ = bn.lanes_numba(data, cfg, num_lanes=LANES)
    want = _reference(data, algorithm="sarsa", sampling="str", fmt=fmt, n_chunks=LANES,
                      stride=3, episodes=5)
    _assert_match(q, want, fmt)


@pytest.mark.parametrize("algorithm,sampling,fmt",
                         [("q_learning", "seq", "fp32"), ("sarsa", "ran", "int32")])
def test_cpu_v1_one_thread_is_sequential(data, algorithm, sampling, fmt):
    cfg = _cfg(algorithm, sampling, fmt)
    q1, _ = bn.cpu_v1(data, cfg, num_threads=1)
    qs, _ = bn.sequential(data, cfg)
    np.testing.assert_array_equal(q1, qs)
    want = _reference(data, algorithm=algorithm, sampling=sampling, fmt=fmt, n_chunks=1,
                      shared=True)
    _assert_match(q1, want, fmt)


@pytest.mark.parametrize("fmt", bn.FORMATS)
def test_cpu_v1_many_threads_plausible(data, fmt):
    # Racy by design: only bounds hold. |Q| <= max|r| / (1 - gamma), and learning happened.
    q, _ = bn.cpu_v1(data, _cfg("q_learning", "seq", fmt), num_threads=4)
    assert np.isfinite(q).all()
    assert np.abs(q).max() <= 1.0 / (1 - 0.95) + 1e-3
    assert np.abs(q).max() > 0.05


@pytest.mark.parametrize("fmt", bn.FORMATS)
def test_remainder_rows_are_dropped(data, fmt):
    # 2000 rows in 3 lanes: chunks of 666 rows, the last 2 rows left out (as the JAX trainer).
    cfg = _cfg("q_learning", "ran", fmt)
    q, _ = bn.lanes_numba(data, cfg, num_lanes=3)
    assert bn.last_timing()["rows_used"] == 1998
    trimmed = {k: v[:1998] for k, v in data.items()}
    want = _reference(trimmed, algorithm="q_learning", sampling="ran", fmt=fmt, n_chunks=3)
    _assert_match(q, want, fmt)


def test_lanes_independent_of_thread_count(data):
    cfg = _cfg("sarsa", "ran", "fp32")
    q1, _ = bn.lanes_numba(data, cfg, num_lanes=8, num_threads=1)
    q2, _ = bn.lanes_numba(data, cfg, num_lanes=8, num_threads=2)
    np.testing.assert_array_equal(q1, q2)


def test_lcg_closed_form_first_values():
    # x1 = (42 * 1664525 + 1013904223) mod 2**32 = 69910050 + 1013904223 = 1083814273, ...
    expected = [1083814273, 378494188, 2479403867, 955863294, 1613448261]
    assert bn.lcg_next(42) == 42 * 1664525 + 1013904223 == expected[0]
    assert list(bn.lcg_sequence(42, 5)) == expected
    x, seen = 42, []
    for _ in range(5):
        x = bn.lcg_next(x)
        seen.append(x)
    assert seen == expected
    assert bn.lcg_next(2**32 - 1) == (2**32 - 1664525 + 1013904223) % 2**32  # wraps mod 2**32


# ----------------------------------------------------------------------------------------------
# Validation: bad input is rejected before compute, with the field named.


def _bad(data, **changes):
    out = dict(data)
    out.update(changes)
    return out


@pytest.mark.parametrize(
    "changes,match",
    [
        ({"state": np.full(ROWS, S, dtype=np.int32)}, "data.state must lie in"),
        ({"action": np.full(ROWS, -1, dtype=np.int32)}, "data.action must lie in"),
        ({"reward": np.full(ROWS, np.nan, dtype=np.float32)}, "data.reward holds 2000 NaN"),
        ({"next_state": np.zeros(ROWS - 1, dtype=np.int32)}, "data.next_state must be 1-D"),
        ({"terminated": None}, "data is missing field 'terminated'"),
    ],
)
def test_bad_data_rejected(data, changes, match):
    bad = _bad(data, **changes)
    if changes.get("terminated", 0) is None:
        del bad["terminated"]
    with pytest.raises(ValueError, match=match):
        bn.lanes_numba(bad, _cfg("q_learning", "seq", "fp32"), num_lanes=LANES)


def test_bad_sizes_and_options_rejected(data):
    cfg = _cfg("q_learning", "seq", "fp32")
    with pytest.raises(ValueError, match="2001 chunks exceed the dataset size 2000"):
        bn.lanes_numba(data, cfg, num_lanes=2001)
    with pytest.raises(ValueError, match="num_lanes must be >= 1"):
        bn.lanes_numba(data, cfg, num_lanes=0)
    with pytest.raises(ValueError, match="num_threads must be >= 1"):
        bn.cpu_v1(data, cfg, num_threads=0)
    with pytest.raises(ValueError, match="sampling must be one of"):
        bn.BaselineConfig(num_states=S, num_actions=A, sampling="random")
    with pytest.raises(ValueError, match="compat_max0 applies to algorithm='q_learning'"):
        bn.BaselineConfig(num_states=S, num_actions=A, algorithm="sarsa", compat_max0=True)
    with pytest.raises(ValueError, match="gamma must round below 1"):
        bn.BaselineConfig(num_states=S, num_actions=A, fmt="int32", gamma=1.0)
    big = _bad(data, reward=np.full(ROWS, 20_000.0, dtype=np.float32))
    with pytest.raises(ValueError, match="int32 fixed point at scale 10000 could overflow"):
        bn.sequential(big, _cfg("q_learning", "seq", "int32"))


def test_published_figures_consistent():
    ma = pim_published.MULTI_AGENT
    assert ma["xeon_seconds_2000_agents"] == 1943.78
    assert ma["xeon_seconds_1000_agents"] == 996.52
    # reference.md: PIM takes about 88.7 s for 2,000 agents (1,943.78 s / 21.92).
    assert abs(ma["pim_seconds_2000_agents_derived"] - 88.7) < 0.05
    head = pim_published.HEADLINE
    assert (head["int32_over_fp32_speedup_on_pim"], head["pim_over_rtx_3090_speedup"]) == (
        8.16, 4.84)
    for name, group in pim_published.PUBLISHED.items():
        assert "source" in group, name


def test_benchmark_script_writes_report(tmp_path):
    import json

    rc = bn.main(["--quick", "--rows", "400", "--lanes", "4", "--episodes", "2",
                  "--algorithms", "sarsa", "--samplings", "str", "--out", str(tmp_path)])
    assert rc == 0
    rep = json.loads((tmp_path / "baselines_numba_quick.json").read_text())
    assert set(rep) >= {"system", "config", "results", "timing_s", "summary"}
    rows = rep["results"]["rows"]
    assert [(r["baseline"], r["fmt"]) for r in rows] == [
        (b, f) for f in bn.FORMATS for b in bn.BASELINES]
    assert all(r["updates"] == 800 and r["updates_per_s"] > 0 for r in rows)
    assert rep["summary"]["gpu"] is None and rep["summary"]["extrapolated"] is True
    assert (tmp_path / "baselines_numba_quick.md").read_text().count("| sarsa | str |") == 8
    assert (tmp_path / "baselines_numba_quick.png").stat().st_size > 0


def test_benchmark_script_rejects_bad_options(capsys):
    assert bn.cli(["--formats", "fp16"]) == 2
    assert "--formats must be one of 'fp32', 'int32'; got 'fp16'" in capsys.readouterr().err


def test_accepts_library_transitions_with_compact_dtypes(data):
    # The lead's scaling benchmark passes jaxrl_pim.data.Transitions (uint8 states/actions).
    transitions = pytest.importorskip("jaxrl_pim.data.transitions")
    t = transitions.compact(transitions.Transitions(**data), S)
    assert t.action.dtype == np.uint8
    cfg = _cfg("sarsa", "seq", "int32")
    q, _ = bn.run_baseline("lanes_numba", t, cfg, num_lanes=LANES)
    np.testing.assert_array_equal(q, bn.lanes_numba(data, cfg, num_lanes=LANES)[0])


@pytest.mark.parametrize("sampling,fmt,max0", [("seq", "int32", False), ("str", "fp32", True)])
def test_lanes_agrees_with_jax_trainer(data, sampling, fmt, max0):
    # Q-learning over SEQ/STR uses no random numbers, so the JAX lanes trainer and lanes_numba
    # run the same algorithm: identical int32 tables, fp32 equal up to summation order.
    trainer = pytest.importorskip("jaxrl_pim.tabular.trainer")
    import jax

    from jaxrl_pim.data.transitions import Transitions

    tcfg = trainer.TabularConfig(num_states=S, num_actions=A, algo="q", sampling=sampling,
                                 dtype=fmt, num_cores=LANES, sync_period=SYNC,
                                 num_episodes=EPISODES, rng="lcg", compat_max0=max0)
    q_jax, _ = jax.jit(trainer.make_train(tcfg))(jax.random.key(0),
                                                 trainer.chunk(tcfg, Transitions(**data)))
    q_jax = np.asarray(q_jax, dtype=np.float64)
    q_nb, _ = bn.lanes_numba(data, _cfg("q_learning", sampling, fmt, compat_max0=max0), LANES)
    if fmt == "int32":  # compare the fixed-point integers (the descaling roundings differ)
        np.testing.assert_array_equal(np.rint(q_jax * SCALE), np.rint(q_nb * np.float64(SCALE)))
    else:
        np.testing.assert_allclose(q_nb, q_jax, rtol=1e-5, atol=1e-6)
