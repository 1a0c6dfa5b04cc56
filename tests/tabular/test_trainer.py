"""Lanes trainer vs the plain NumPy reference loop, for every variant, plus bad input."""

from __future__ import annotations

import itertools

import jax
import numpy as np
import pytest

from jaxrl_pim.data import Dataset
from jaxrl_pim.tabular import TabularConfig, chunk, make_train
from jaxrl_pim.testing.tabular_numpy import train_reference
from tests.support.tabular import A, S, random_dataset


def assert_same_fixed_point(q, ref):
    """Exact equality of int32 fixed-point tables (compared as scaled integers)."""
    np.testing.assert_array_equal(np.round(q.astype(np.float64) * 10_000).astype(np.int64),
                                  np.round(ref * 10_000).astype(np.int64))


def run_both(cfg: TabularConfig, data: Dataset, seed: int = 3):
    chunks = chunk(cfg, data)
    key = jax.random.key(seed)
    q, metrics = jax.jit(make_train(cfg))(key, chunks)
    return np.asarray(q), train_reference(cfg, chunks, key), metrics


VARIANTS = list(itertools.product(("q", "sarsa"), ("seq", "ran", "str"), ("fp32", "int32")))


@pytest.mark.parametrize("algo,sampling,dtype", VARIANTS)
def test_matches_numpy_reference(algo, sampling, dtype):
    cfg = TabularConfig(S, A, algo=algo, sampling=sampling, dtype=dtype, num_cores=4,
                        sync_period=2, num_episodes=5, stride=3)
    q, ref, metrics = run_both(cfg, random_dataset(4 * 23 + 3))
    assert metrics["q_delta"].shape == (3,)
    if dtype == "int32":
        assert_same_fixed_point(q, ref)
    else:
        np.testing.assert_allclose(q, ref, rtol=1e-6, atol=1e-6)
    assert np.abs(q).max() > 0.1  # learning happened


@pytest.mark.parametrize("algo,sampling", [("q", "ran"), ("sarsa", "seq"), ("sarsa", "ran")])
@pytest.mark.parametrize("dtype", ["fp32", "int32"])
def test_pim_lcg_matches_reference(algo, sampling, dtype):
    cfg = TabularConfig(S, A, algo=algo, sampling=sampling, dtype=dtype, num_cores=3,
                        sync_period=3, num_episodes=4, rng="lcg")
    q, ref, _ = run_both(cfg, random_dataset(3 * 17))
    if dtype == "int32":
        assert_same_fixed_point(q, ref)
    else:
        np.testing.assert_allclose(q, ref, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("algo", ["q", "sarsa"])
def test_low_precision_within_one_ulp(dtype, algo):
    cfg = TabularConfig(S, A, algo=algo, sampling="str", dtype=dtype, num_cores=4,
                        sync_period=2, num_episodes=4)
    q, ref, _ = run_both(cfg, random_dataset(4 * 19))
    ulp = 2.0**-10 if dtype == "fp16" else 2.0**-7
    np.testing.assert_allclose(q, ref.astype(np.float32), rtol=2 * ulp, atol=1e-3)


def test_compat_max0_bootstraps_with_zero_floor():
    data = random_dataset(4 * 20)
    data = data._replace(reward=-np.abs(data.reward) - 1.0)  # every Q-value turns negative
    base = TabularConfig(S, A, num_cores=4, sync_period=2, num_episodes=4)
    compat = TabularConfig(S, A, num_cores=4, sync_period=2, num_episodes=4, compat_max0=True)
    q1, _, _ = run_both(base, data)
    q2, ref2, _ = run_both(compat, data)
    np.testing.assert_allclose(q2, ref2, rtol=1e-6, atol=1e-6)
    assert not np.allclose(q1, q2)
    assert (q2 >= q1 - 1e-6).all()  # max(0, .) can only raise the bootstrap


def test_independent_agents_match_reference_and_do_not_average():
    k, n = 3, 25
    parts = [random_dataset(n, seed=i) for i in range(k)]
    per_agent = Dataset(*(np.stack([p[f] for p in parts]) for f in range(5)))
    cfg = TabularConfig(S, A, num_cores=k, independent=True, num_episodes=3, sync_period=2,
                        algo="sarsa", sampling="ran")
    q, ref, _ = run_both(cfg, per_agent)
    assert q.shape == (k, S, A)
    np.testing.assert_allclose(q, ref, rtol=1e-6, atol=1e-6)
    assert not np.allclose(q[0], q[1])


def test_vmap_over_seeds_gives_per_seed_results():
    cfg = TabularConfig(S, A, sampling="ran", num_cores=2, sync_period=2, num_episodes=2)
    chunks = chunk(cfg, random_dataset(40))
    train = make_train(cfg)
    keys = jax.random.split(jax.random.key(0), 3)
    qs, _ = jax.jit(jax.vmap(train, in_axes=(0, None)))(keys, chunks)
    single, _ = jax.jit(train)(keys[1], chunks)
    np.testing.assert_allclose(qs[1], single, rtol=1e-6)
    assert not np.allclose(qs[0], qs[1])


def test_remainder_rows_are_dropped():
    cfg = TabularConfig(S, A, num_cores=4)
    chunks = chunk(cfg, random_dataset(4 * 10 + 3))
    assert chunks.shape == (4, 10)
    np.testing.assert_array_equal(chunks.state.reshape(-1), random_dataset(43).state[:40])


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(algo="dqn"), "algo must be one of"),
        (dict(sampling="shuffle"), "sampling must be one of"),
        (dict(dtype="int8"), "dtype must be one of"),
        (dict(num_cores=0), "num_cores must be >= 1"),
        (dict(sync_period=0), "sync_period must be >= 1"),
        (dict(alpha=0.0), "alpha must be >"),
        (dict(gamma=1.5), "gamma must be <="),
        (dict(algo="sarsa", compat_max0=True), "compat_max0"),
        (dict(dtype="int32", num_cores=70_000), "num_cores must be <= 65536"),
    ],
)
def test_bad_config_is_rejected(kwargs, match):
    with pytest.raises(ValueError, match=match):
        TabularConfig(S, A, **kwargs)


def _with(t: Dataset, **fields) -> Dataset:
    return t._replace(**fields)


@pytest.mark.parametrize(
    "mutate,match",
    [
        (lambda t: _with(t, state=t.state.astype(np.int32) + S), r"state must lie in \[0, 6\]"),
        (lambda t: _with(t, action=np.full_like(t.action, A)), r"action must lie in \[0, 2\]"),
        (lambda t: _with(t, next_state=-np.ones(len(t.state), np.int32)), "next_state must lie"),
        (lambda t: _with(t, reward=np.where(np.arange(len(t.reward)) == 5, np.nan, t.reward)),
         "NaN/infinite"),
        (lambda t: _with(t, reward=np.full(len(t.reward), np.inf, np.float32)), "NaN/infinite"),
        (lambda t: _with(t, state=t.state.astype(np.float32)), "must hold integers"),
        (lambda t: Dataset(*(x[:0] for x in t)), "empty"),
        (lambda t: _with(t, reward=t.reward[:-1]), "share one shape"),
    ],
)
def test_bad_data_is_rejected_before_compute(mutate, match):
    cfg = TabularConfig(S, A, num_cores=2)
    with pytest.raises(ValueError, match=match):
        chunk(cfg, mutate(random_dataset(30)))


def test_too_many_cores_and_int32_overflow_are_rejected():
    with pytest.raises(ValueError, match="exceeds the dataset size"):
        chunk(TabularConfig(S, A, num_cores=100), random_dataset(30))
    big = random_dataset(30, reward_scale=1000.0)  # |r| 3,000 / (1 - 0.95) = 60,000 > limit
    with pytest.raises(ValueError, match="exact fixed-point limit"):
        chunk(TabularConfig(S, A, num_cores=2, dtype="int32"), big)
    chunk(TabularConfig(S, A, num_cores=2, dtype="fp32"), big)  # fp32 is fine
