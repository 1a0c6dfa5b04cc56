"""Numba CPU baselines (``jaxrl_pim.testing.tabular_numba``) against independent references.

* every baseline and variant against the plain NumPy/Python loop of
  ``jaxrl_pim.testing.tabular_numpy`` (the lanes trainer's semantics with the PIM LCG):
  int32 bit-exact, fp32 to float rounding;
* the LCG draws, draw for draw, against the trainer's own functions (``lcg_next`` /
  ``lcg_int`` / ``lcg_uniform``), including chunk sizes where the float32 product rounds;
* the final tables against the JAX lanes trainer (``rng="lcg"``) for all 12 variants;
* the block-of-lanes kernel against the per-lane kernel (bit-identical, any block size).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

pytest.importorskip("numba")
# one worker runs the file: each Numba kernel is compiled once per process (a few seconds
# each), so tests split over two workers would compile most kernels twice
pytestmark = pytest.mark.xdist_group("numba")

from jaxrl_pim.data.transitions import Dataset, compact  # noqa: E402
from jaxrl_pim.tabular import TabularConfig, chunk, make_train  # noqa: E402
from jaxrl_pim.tabular.config import ALGOS, SAMPLINGS  # noqa: E402
from jaxrl_pim.tabular.sampling import lcg_int, lcg_next, lcg_uniform  # noqa: E402
from jaxrl_pim.testing import tabular_numba as tn  # noqa: E402
from jaxrl_pim.testing.tabular_numpy import train_reference  # noqa: E402

S, A = 16, 4
ROWS = 2000
EPISODES = 6
SYNC = 2
LANES = 4
THREADS = 2
SCALE = 10_000
VARIANTS = list(itertools.product(ALGOS, SAMPLINGS, tn.FORMATS))


def _make_data(seed: int = 7, rows: int = ROWS) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    reward = rng.choice(np.array([-1.0, 0.0, 0.0, 0.25, 1.0], dtype=np.float32), rows)
    return {
        "state": rng.integers(0, S, rows, dtype=np.int32),
        "action": rng.integers(0, A, rows, dtype=np.int32),
        "reward": reward.astype(np.float32),
        "next_state": rng.integers(0, S, rows, dtype=np.int32),
        "terminated": rng.random(rows) < 0.05,
    }


@pytest.fixture(scope="module")
def data():
    return _make_data()


def _cfg(algo, sampling, dtype, **kw):
    """The one config the baselines, the NumPy loop and the trainer all take."""
    return TabularConfig(num_states=S, num_actions=A, algo=algo, sampling=sampling, dtype=dtype,
                         num_cores=LANES, num_episodes=kw.pop("episodes", EPISODES),
                         sync_period=kw.pop("sync", SYNC), epsilon=kw.pop("epsilon", 0.3),
                         rng="lcg", **kw)


@functools.cache
def _reference(cfg: TabularConfig, lanes: int, rows: int = ROWS) -> np.ndarray:
    """The NumPy/Python loop on the test data: float32 [S, A] (int32 descaled)."""
    tcfg = dataclasses.replace(cfg, num_cores=lanes)
    chunks = chunk(tcfg, Dataset(**{k: v[:rows] for k, v in _make_data().items()}))
    return np.asarray(train_reference(tcfg, chunks, jax.random.key(0)))


def _assert_match(got, want, fmt):
    assert got.dtype == np.float32 and got.shape == (S, A)
    assert np.abs(want).max() > 0.05  # the reference learned something
    if fmt == "int32":  # compare the fixed-point integers
        np.testing.assert_array_equal(np.rint(got.astype(np.float64) * SCALE),
                                      np.rint(np.asarray(want, np.float64) * SCALE))
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


# ----------------------------------------------------------------------------------------------
# Against the NumPy/Python reference loop.


@pytest.mark.parametrize("algorithm,sampling,fmt", VARIANTS)
def test_lanes_and_block_match_reference(data, algorithm, sampling, fmt):
    cfg = _cfg(algorithm, sampling, fmt)
    want = _reference(cfg, LANES)
    q_lane, sec = tn.lanes_numba(data, cfg, num_lanes=LANES)
    _assert_match(q_lane, want, fmt)
    assert sec > 0
    q_block, _ = tn.lanes_block_numba(data, cfg, num_lanes=LANES, block_lanes=3)
    np.testing.assert_array_equal(q_block, q_lane)  # same updates in the same order per lane


@pytest.mark.parametrize("algorithm,sampling,fmt", VARIANTS)
def test_sequential_and_cpu_v2_match_reference(data, algorithm, sampling, fmt):
    cfg = _cfg(algorithm, sampling, fmt)
    q, _ = tn.sequential(data, cfg)
    _assert_match(q, _reference(dataclasses.replace(cfg, sync_period=EPISODES), 1), fmt)
    q2, _ = tn.cpu_v2(data, cfg, num_threads=THREADS)
    _assert_match(q2, _reference(cfg, THREADS), fmt)


@pytest.mark.parametrize("fmt", tn.FORMATS)
def test_compat_max0_matches_reference_and_differs(data, fmt):
    cfg = _cfg("q", "seq", fmt, compat_max0=True)
    q, _ = tn.lanes_block_numba(data, cfg, num_lanes=LANES)
    _assert_match(q, _reference(cfg, LANES), fmt)
    q_true, _ = tn.lanes_numba(data, _cfg("q", "seq", fmt), num_lanes=LANES)
    assert not np.array_equal(q, q_true)  # negative rewards: max(0, .) changes the targets
    np.testing.assert_array_equal(tn.lanes_numba(data, cfg, num_lanes=LANES)[0], q)


@pytest.mark.parametrize("fmt", tn.FORMATS)
def test_uneven_stride_and_partial_sync_round(data, fmt):
    # stride 3 does not divide the 500-row chunks; 5 episodes with sync 2 ends on a half round.
    cfg = _cfg("sarsa", "str", fmt, stride=3, episodes=5)
    q, _ = tn.lanes_numba(data, cfg, num_lanes=LANES)
    _assert_match(q, _reference(cfg, LANES), fmt)
    np.testing.assert_array_equal(tn.lanes_block_numba(data, cfg, LANES, block_lanes=4)[0], q)


@pytest.mark.parametrize("fmt", tn.FORMATS)
def test_remainder_rows_are_dropped(data, fmt):
    # 2000 rows in 3 lanes: chunks of 666 rows, the last 2 rows left out (as the JAX trainer).
    cfg = _cfg("q", "ran", fmt)
    q, _ = tn.lanes_numba(data, cfg, num_lanes=3)
    assert tn.last_timing()["rows_used"] == 1998
    _assert_match(q, _reference(cfg, 3), fmt)
    np.testing.assert_array_equal(tn.lanes_block_numba(data, cfg, 3, block_lanes=2)[0], q)
    assert tn.last_timing()["block_lanes"] == 2


# ----------------------------------------------------------------------------------------------
# Block-of-lanes kernel vs the per-lane kernel.


@pytest.mark.parametrize("algorithm,sampling", list(itertools.product(ALGOS, SAMPLINGS)))
@pytest.mark.parametrize("block", [1, 7, 0, 64])
def test_block_kernel_equals_per_lane_kernel(algorithm, sampling, block):
    # 40 lanes in blocks of 1, 7 (a padded last block), the default and 64 (one padded block).
    data = tn.random_dataset(40 * 37, S, A, seed=3, goal_prob=0.1)
    for fmt in tn.FORMATS:
        cfg = _cfg(algorithm, sampling, fmt, episodes=5, sync=3)
        q_lane, _ = tn.lanes_numba(data, cfg, num_lanes=40)
        q_block, _ = tn.lanes_block_numba(data, cfg, num_lanes=40, block_lanes=block)
        assert np.abs(q_lane).max() > 0.01
        np.testing.assert_array_equal(q_block, q_lane)


def test_lanes_independent_of_thread_count(data):
    cfg = _cfg("sarsa", "ran", "fp32")
    q1, _ = tn.lanes_numba(data, cfg, num_lanes=8, num_threads=1)
    q2, _ = tn.lanes_numba(data, cfg, num_lanes=8, num_threads=2)
    np.testing.assert_array_equal(q1, q2)
    b1, _ = tn.lanes_block_numba(data, cfg, num_lanes=8, block_lanes=2, num_threads=1)
    b2, _ = tn.lanes_block_numba(data, cfg, num_lanes=8, block_lanes=2, num_threads=2)
    np.testing.assert_array_equal(b1, b2)
    np.testing.assert_array_equal(b1, q1)


# ----------------------------------------------------------------------------------------------
# CPU-V1.


@pytest.mark.parametrize("algorithm,sampling,fmt",
                         [("q", "seq", "fp32"), ("sarsa", "ran", "int32")])
def test_cpu_v1_one_thread_is_sequential(data, algorithm, sampling, fmt):
    cfg = _cfg(algorithm, sampling, fmt)
    q1, _ = tn.cpu_v1(data, cfg, num_threads=1)
    qs, _ = tn.sequential(data, cfg)
    np.testing.assert_array_equal(q1, qs)


@pytest.mark.parametrize("fmt", tn.FORMATS)
def test_cpu_v1_many_threads_plausible(data, fmt):
    # Racy by design: only bounds hold. |Q| <= max|r| / (1 - gamma), and learning happened.
    q, _ = tn.cpu_v1(data, _cfg("q", "seq", fmt), num_threads=4)
    assert np.isfinite(q).all()
    assert np.abs(q).max() <= 1.0 / (1 - 0.95) + 1e-3
    assert np.abs(q).max() > 0.05


# ----------------------------------------------------------------------------------------------
# The LCG, draw for draw against the trainer's functions.


def test_lcg_closed_form_first_values():
    # x1 = (42 * 1664525 + 1013904223) mod 2**32 = 69910050 + 1013904223 = 1083814273, ...
    expected = [1083814273, 378494188, 2479403867, 955863294, 1613448261]
    assert tn.lcg_next(42) == 42 * 1664525 + 1013904223 == expected[0]
    assert list(tn.lcg_sequence(42, 5)) == expected
    assert tn.lcg_next(2**32 - 1) == (2**32 - 1664525 + 1013904223) % 2**32  # wraps mod 2**32


def _trainer_draws(seed: int, n: int, m: int, ran: bool, sarsa: bool, epsilon: float):
    """The trainer's per-update draws (``lanes.lcg_step_draws`` order) for one lane."""

    def step(x, _):
        idx = u = a = jnp.int32(-1)
        if ran:
            x = lcg_next(x)
            idx = lcg_int(x, m)
        if sarsa:
            x = lcg_next(x)
            u = (lcg_uniform(x) < epsilon).astype(jnp.int32)
            x = lcg_next(x)
            a = lcg_int(x, A)
        return x, (idx, u, a)

    x, (idx, u, a) = jax.lax.scan(step, jnp.uint32(seed), None, length=n)
    return np.asarray(idx), np.asarray(u), np.asarray(a), int(x)


@pytest.mark.parametrize("m", [500, 333, 3, 16_777_259, 100_000_007])
@pytest.mark.parametrize("algorithm,sampling", [("q", "ran"), ("sarsa", "seq"),
                                                ("sarsa", "ran")])
def test_lcg_draws_match_trainer_draw_for_draw(m, algorithm, sampling):
    # Chunks above 2**24 rows make the float32 product u * m round: the mapping must agree.
    n = 4000
    cfg = TabularConfig(num_states=S, num_actions=A, algo=algorithm, sampling=sampling,
                        epsilon=0.1, rng="lcg", lcg_seed=123)
    got = tn.lcg_draws(cfg, n, m)
    idx, explore, rand_a, state = _trainer_draws(123, n, m, sampling == "ran",
                                                 algorithm == "sarsa", 0.1)
    if sampling == "ran":
        np.testing.assert_array_equal(got["index"], idx)
        assert 0 <= idx.min() and idx.max() < m
    if algorithm == "sarsa":
        np.testing.assert_array_equal(got["explore"], explore.astype(bool))
        np.testing.assert_array_equal(got["random_action"], rand_a)
        assert 0.05 < explore.mean() < 0.15
    assert got["state"] == state


@pytest.mark.parametrize("epsilon", [0.0, 0.1, 0.3, 0.5, 1.0, 1e-7])
def test_explore_threshold_equals_float32_comparison(epsilon):
    t = tn.explore_threshold(epsilon)
    ks = np.array([0, 1, t - 1, t, t + 1, 2**24 - 1], dtype=np.int64)
    ks = ks[(ks >= 0) & (ks < 2**24)]
    u = ks.astype(np.float32) * np.float32(2.0**-24)
    np.testing.assert_array_equal(ks < t, u < np.float32(epsilon))


# ----------------------------------------------------------------------------------------------
# Against the JAX lanes trainer (rng="lcg"): the same draws, the same tables.


@pytest.mark.parametrize("algorithm,sampling,fmt", VARIANTS)
def test_tables_equal_jax_trainer(data, algorithm, sampling, fmt):
    cfg = _cfg(algorithm, sampling, fmt)
    tcfg = dataclasses.replace(cfg, num_cores=LANES)
    q_jax, _ = jax.jit(make_train(tcfg))(jax.random.key(0), chunk(tcfg, Dataset(**data)))
    q_nb, _ = tn.lanes_block_numba(data, cfg, LANES)
    _assert_match(q_nb, np.asarray(q_jax), fmt)


# ----------------------------------------------------------------------------------------------
# Validation: bad input is rejected before compute, with the field named.


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
@pytest.mark.parametrize("baseline", ["lanes_numba", "lanes_block_numba"])
def test_bad_data_rejected(data, changes, match, baseline):
    bad = {**data, **changes}
    if changes.get("terminated", 0) is None:
        del bad["terminated"]
    with pytest.raises(ValueError, match=match):
        tn.run_baseline(baseline, bad, _cfg("q", "seq", "fp32"), num_lanes=LANES)


def test_bad_sizes_and_options_rejected(data):
    cfg = _cfg("q", "seq", "fp32")
    with pytest.raises(ValueError, match="2001 chunks exceed the dataset size 2000"):
        tn.lanes_block_numba(data, cfg, num_lanes=2001)
    with pytest.raises(ValueError, match="num_lanes must be >= 1"):
        tn.lanes_numba(data, cfg, num_lanes=0)
    with pytest.raises(ValueError, match="block_lanes must be >= 0"):
        tn.lanes_block_numba(data, cfg, num_lanes=4, block_lanes=-1)
    with pytest.raises(ValueError, match="num_threads must be >= 1"):
        tn.cpu_v1(data, cfg, num_threads=0)
    with pytest.raises(ValueError, match="dtype must be one of 'fp32', 'int32'; got 'fp16'"):
        tn.sequential(data, _cfg("q", "seq", "fp16"))
    with pytest.raises(ValueError, match="rng must be 'lcg', got 'jax'"):
        tn.lanes_numba(data, dataclasses.replace(cfg, rng="jax"))
    with pytest.raises(ValueError, match="independent must be False"):
        tn.cpu_v2(data, dataclasses.replace(cfg, independent=True))
    with pytest.raises(ValueError, match="config must be a TabularConfig, got dict"):
        tn.sequential(data, {"num_states": S, "num_actions": A})
    with pytest.raises(ValueError, match="baseline must be one of"):
        tn.run_baseline("gpu", data, cfg, num_lanes=4)
    big = {**data, "reward": np.full(ROWS, 20_000.0, dtype=np.float32)}
    with pytest.raises(ValueError, match="int32 fixed point at scale 10000 could overflow"):
        tn.sequential(big, _cfg("q", "seq", "int32"))


def test_accepts_library_transitions_with_compact_dtypes(data):
    t = compact(Dataset(**data), S)
    assert t.action.dtype == np.uint8
    cfg = _cfg("sarsa", "seq", "int32")
    q, _ = tn.run_baseline("lanes_block_numba", t, cfg, num_lanes=LANES)
    np.testing.assert_array_equal(q, tn.lanes_numba(data, cfg, num_lanes=LANES)[0])


def test_updates_of_counts_dropped_rows():
    cfg = _cfg("q", "seq", "fp32", episodes=3)
    assert tn.updates_of("lanes_block_numba", cfg, 2000, 3) == 1998 * 3
    assert tn.updates_of("sequential", cfg, 2000, 3) == 2000 * 3
