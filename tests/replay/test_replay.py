"""Tests for jaxrl_pim.replay: layouts, ring writes, samplers, weights, distributions.

References are independent: plain NumPy ring-buffer loops, the NumPy port of the original
MADDPG list-of-tuples sampler (jaxrl_pim/testing/maddpg_numpy_sampler.py), closed-form
probabilities / weights and chi-square goodness-of-fit tests with fixed seeds.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from jaxrl_pim.replay import (
    LAYOUTS,
    MAX_CAPACITY,
    Batch,
    Transition,
    check_indices,
    dense_prioritized,
    expand_references,
    info_prioritized,
    make_buffer,
    neighbor,
    prioritized,
    state_from_priorities,
    sum_tree,
    uniform,
)
from jaxrl_pim.replay.buffers import (
    gather_into,
    gather_rows,
    pack_rows,
    packed_row_floats,
    unpack_rows,
)
from jaxrl_pim.testing import maddpg_numpy_sampler as ref

N, OD, AD = 3, 4, 2  # agents, observation length, action length
HYP = settings(max_examples=25, deadline=None)
P_OK = 1e-3  # chi-square: a correct sampler fails with probability 1e-3 (seeds are fixed)


def _steps(rng: np.random.Generator, t: int, n: int = N) -> Transition:
    """``t`` random lock-step transitions stacked on a leading time axis."""
    return Transition(
        obs=rng.normal(size=(t, n, OD)).astype(np.float32),
        action=rng.normal(size=(t, n, AD)).astype(np.float32),
        reward=rng.normal(size=(t, n)).astype(np.float32),
        next_obs=rng.normal(size=(t, n, OD)).astype(np.float32),
        done=(rng.random((t, n)) < 0.2).astype(np.float32),
    )


def _step(steps: Transition, t: int) -> Transition:
    return Transition(*(x[t] for x in steps))


@functools.cache
def _buffer(layout: str, capacity: int):
    buf = make_buffer(layout, capacity, N, OD, AD)
    return buf, jax.jit(buf.add), jax.jit(buf.gather, static_argnames="time_major")


def _filled(layout: str, capacity: int, steps: Transition):
    buf, add, _ = _buffer(layout, capacity)
    state = buf.init()
    for t in range(steps.obs.shape[0]):
        state = add(state, _step(steps, t))
    return state


def _sample_many(sampler, state, size, insert_pos, batch, num_keys, seed=0):
    """Indices and weights of ``num_keys`` independent calls: ``[num_keys, batch]`` each."""
    keys = jax.random.split(jax.random.key(seed), num_keys)
    fn = jax.jit(
        jax.vmap(lambda k: sampler.sample(state, k, size, insert_pos, batch)[:2])
    )
    idx, w = fn(keys)
    return np.asarray(idx), np.asarray(w)


def _chi2_p(counts: np.ndarray, probs: np.ndarray) -> float:
    probs = np.asarray(probs, np.float64)
    expected = probs / probs.sum() * counts.sum()
    return float(stats.chisquare(counts, expected).pvalue)


# ---------------------------------------------------------------- buffers


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(layout="rows"), "layout must be one of"),
        (dict(capacity=0), "capacity must be >= 1"),
        (dict(num_agents=0), "num_agents must be >= 1"),
        (dict(obs_dim=2.5), "obs_dim must be an integer"),
        (dict(action_dim=0), "action_dim must be >= 1"),
    ],
)
def test_make_buffer_rejects_bad_config(kwargs, match):
    args = dict(layout="per_agent", capacity=4, num_agents=2, obs_dim=3, action_dim=5)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        make_buffer(**args)


def test_add_rejects_wrong_shapes():
    buf = make_buffer("interleaved", 4, N, OD, AD)
    good = _step(_steps(np.random.default_rng(0), 1), 0)
    with pytest.raises(ValueError, match=r"transition.obs must have shape \(3, 4\)"):
        buf.add(buf.init(), good._replace(obs=np.zeros((N, OD + 1), np.float32)))
    with pytest.raises(ValueError, match="transition.done must have shape"):
        buf.add(buf.init(), good._replace(done=np.zeros((N + 1,), np.float32)))
    many = _steps(np.random.default_rng(0), 5)
    with pytest.raises(ValueError, match="cannot add 5 steps at once"):
        buf.add(buf.init(), many)


#: The layouts that store every field of a row as given (the ``compact`` one derives
#: ``next_obs`` and takes ``stride`` steps per add: ``tests/replay/test_compact.py``).
STORED_AS_GIVEN = tuple(x for x in LAYOUTS if x != "compact")


@HYP
@given(
    layout=st.sampled_from(STORED_AS_GIVEN),
    capacity=st.integers(1, 5),
    num_steps=st.integers(0, 12),
)
def test_ring_writes_match_numpy_loop(layout, capacity, num_steps):
    steps = _steps(np.random.default_rng(num_steps), num_steps)
    state = _filled(layout, capacity, steps)
    # Plain NumPy ring: row t % capacity holds step t.
    want = {f: np.zeros((capacity, *getattr(steps, f).shape[1:]), np.float32)
            for f in Transition._fields}
    for t in range(num_steps):
        for f in Transition._fields:
            want[f][t % capacity] = getattr(steps, f)[t]
    assert int(state.insert_pos) == num_steps % capacity
    assert int(state.size) == min(num_steps, capacity)
    if layout == "packed":  # row t: step t's fields flattened and side by side
        rows = np.concatenate([want[f].reshape(capacity, -1) for f in Transition._fields], 1)
        np.testing.assert_array_equal(np.asarray(state.data), rows)
        return
    for f in Transition._fields:
        got = np.asarray(getattr(state.data, f))
        if layout == "per_agent":  # [N, capacity, ...]
            got = np.swapaxes(got, 0, 1)
        np.testing.assert_array_equal(got, want[f])


@pytest.mark.parametrize("layout", STORED_AS_GIVEN)
def test_multi_step_add_equals_sequential_adds(layout):
    rng = np.random.default_rng(1)
    steps = _steps(rng, 10)
    buf, add, _ = _buffer(layout, 6)
    seq = _filled(layout, 6, steps)
    # 3 single steps, 6 at once (crosses the ring boundary and overwrites), 1 more.
    multi = buf.init()
    for t in range(3):
        multi = add(multi, _step(steps, t))
    multi = buf.add(multi, Transition(*(x[3:9] for x in steps)))
    multi = add(multi, _step(steps, 9))
    assert int(multi.insert_pos) == int(seq.insert_pos) == 4
    assert int(multi.size) == 6
    for a, b in zip(jax.tree.leaves(multi.data), jax.tree.leaves(seq.data), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_packed_rows_gather_and_unpack():
    """``gather_rows`` returns whole rows (a NumPy take of the stored rows); ``unpack_rows``
    splits them into the fields ``gather`` returns; both reject what is not packed."""
    capacity = 6
    steps = _steps(np.random.default_rng(8), 9)
    state = _filled("packed", capacity, steps)
    idx = np.random.default_rng(9).integers(0, capacity, size=(N, 5)).astype(np.int32)
    rows = gather_rows(state, idx)
    assert rows.shape == (N, 5, packed_row_floats(N, OD, AD)) == (N, 5, N * (2 * OD + AD + 2))
    np.testing.assert_array_equal(rows, np.take(np.asarray(state.data), idx, axis=0))
    fields = unpack_rows(rows, N, OD, AD)
    batch = _buffer("packed", capacity)[2](state, idx, time_major=True)
    for a, b in zip(fields, batch, strict=True):
        np.testing.assert_array_equal(a, b)
    # Row k holds step k + 3 (the ring wrapped once): its obs is that step's obs.
    np.testing.assert_array_equal(unpack_rows(state.data, N, OD, AD).obs[0], steps.obs[6])
    np.testing.assert_array_equal(pack_rows(unpack_rows(state.data, N, OD, AD)), state.data)
    with pytest.raises(ValueError, match="have 36 floats; got a last axis of 35"):
        unpack_rows(rows[..., 1:], N, OD, AD)
    with pytest.raises(ValueError, match="needs a state of the 'packed' layout"):
        gather_rows(_filled("interleaved", capacity, steps), idx)


def test_gather_layouts_agree_and_match_original_sampler():
    capacity, num_steps, batch = 8, 13, 6
    steps = _steps(np.random.default_rng(2), num_steps)
    # The original data structure: per-agent lists of tuples.
    np_bufs = ref.make_buffers(N, capacity)
    for t in range(num_steps):
        ref.add_step(np_bufs, *_step(steps, t))
    states = {layout: _filled(layout, capacity, steps) for layout in LAYOUTS}
    rng = np.random.default_rng(3)

    shared = rng.integers(0, capacity, size=batch).astype(np.int32)
    got = {layout: _buffer(layout, capacity)[2](states[layout], shared) for layout in LAYOUTS}
    for j in range(N):  # agent j's data at the shared indices
        want = np_bufs[j].sample_index(shared)
        for layout in LAYOUTS:
            for f, w in zip(Transition._fields, want, strict=True):
                np.testing.assert_array_equal(np.asarray(getattr(got[layout], f))[j], w)

    faithful = rng.integers(0, capacity, size=(N, batch)).astype(np.int32)
    _, samples = ref.sample_round(np_bufs, batch, indices=faithful)
    for layout in LAYOUTS:
        gather = _buffer(layout, capacity)[2]
        out = gather(states[layout], faithful)
        out_tm = gather(states[layout], faithful, time_major=True)
        assert out.obs.shape == (N, N, batch, OD) and out_tm.obs.shape == (N, batch, N, OD)
        for i in range(N):
            for j in range(N):
                for f, w in zip(Transition._fields, samples[i][j], strict=True):
                    np.testing.assert_array_equal(np.asarray(getattr(out, f))[i, j], w)
                    np.testing.assert_array_equal(np.asarray(getattr(out_tm, f))[i, :, j], w)
        shared_tm = gather(states[layout], shared, time_major=True)
        np.testing.assert_array_equal(
            np.asarray(shared_tm.next_obs), np.swapaxes(np.asarray(got[layout].next_obs), 0, 1)
        )


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("time_major", [False, True])
def test_gather_into_donated_matches_original_sampler(layout, time_major):
    capacity, num_steps, batch = 8, 11, 5
    steps = _steps(np.random.default_rng(4), num_steps)
    np_bufs = ref.make_buffers(N, capacity)
    for t in range(num_steps):
        ref.add_step(np_bufs, *_step(steps, t))
    state = _filled(layout, capacity, steps)
    buf = _buffer(layout, capacity)[0]
    round_fn = jax.jit(lambda s, idx, out: gather_into(buf, s, idx, out, time_major),
                       donate_argnums=2)
    rng = np.random.default_rng(5)
    out = buf.gather(state, jnp.zeros((N, batch), jnp.int32), time_major=time_major)
    for _ in range(3):  # every round overwrites the previous batch's memory
        faithful = rng.integers(0, capacity, size=(N, batch)).astype(np.int32)
        previous = out
        out = round_fn(state, faithful, out)
        assert previous.obs.is_deleted()  # donated: the old batch's buffers were reused
        _, samples = ref.sample_round(np_bufs, batch, indices=faithful)
        for i in range(N):
            for j in range(N):
                for f, w in zip(Transition._fields, samples[i][j], strict=True):
                    got = np.asarray(getattr(out, f))
                    np.testing.assert_array_equal(got[i, :, j] if time_major else got[i, j], w)
    shared = rng.integers(0, capacity, size=batch).astype(np.int32)
    want = buf.gather(state, shared, time_major=time_major)
    got = gather_into(buf, state, shared, jax.tree.map(jnp.zeros_like, want), time_major)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_gather_into_rejects_mismatched_out():
    buf = _buffer("interleaved", 4)[0]
    state = _filled("interleaved", 4, _steps(np.random.default_rng(0), 3))
    idx = jnp.zeros((N, 2), jnp.int32)
    out = buf.gather(state, idx)  # agent-major [N, N, B, ...]
    with pytest.raises(ValueError, match=r"out.obs must have shape \(3, 2, 3, 4\)"):
        gather_into(buf, state, idx, out, time_major=True)
    with pytest.raises(ValueError, match="dtype float32"):
        gather_into(buf, state, idx, Batch(*(x.astype(jnp.float16) for x in out)))
    with pytest.raises(ValueError, match="out must be a Transition"):
        gather_into(buf, state, idx, tuple(out))


def test_gather_rejects_bad_indices():
    buf, _, _ = _buffer("per_agent", 4)
    state = _filled("per_agent", 4, _steps(np.random.default_rng(0), 2))
    with pytest.raises(ValueError, match=r"per-agent indices must have shape \[N=3, B\]"):
        buf.gather(state, jnp.zeros((2, 5), jnp.int32))
    with pytest.raises(ValueError, match="integer array"):
        buf.gather(state, jnp.zeros((5,), jnp.float32))
    with pytest.raises(ValueError, match=r"must lie in \[0, 1\]; found 2"):
        check_indices(state, np.array([0, 2]))
    with pytest.raises(ValueError, match="empty buffer"):
        check_indices(buf.init(), np.array([0]))
    check_indices(state, np.array([[0, 1], [1, 0], [0, 0]]))


# ---------------------------------------------------------------- uniform


@HYP
@given(capacity=st.integers(1, 9), fill=st.integers(1, 20), seed=st.integers(0, 2**16))
def test_uniform_indices_in_valid_range(capacity, fill, seed):
    size, insert_pos = min(fill, capacity), fill % capacity
    idx, w, _ = uniform().sample((), jax.random.key(seed), size, insert_pos, 64)
    idx = np.asarray(idx)
    assert idx.dtype == np.int32 and idx.shape == (64,)
    assert idx.min() >= 0 and idx.max() < size
    np.testing.assert_array_equal(np.asarray(w), 1.0)


def test_uniform_distribution_chi_square():
    idx, _ = _sample_many(uniform(), (), 8, 8, 1000, 8)
    counts = np.bincount(idx.ravel(), minlength=10)
    assert counts[8:].sum() == 0
    assert _chi2_p(counts[:8], np.ones(8)) > P_OK
    # Power check: the same counts reject a skewed hypothesis.
    assert _chi2_p(counts[:8], np.arange(1, 9.0)) < 1e-6


# ---------------------------------------------------------------- neighbour


def _runs_in_time_order(idx, size, insert_pos, run):
    chron = (np.asarray(idx).reshape(-1, run) - insert_pos) % size
    return chron


@HYP
@given(
    capacity=st.integers(3, 12),
    fill=st.integers(3, 30),
    run=st.integers(1, 3),
    seed=st.integers(0, 2**16),
)
def test_neighbor_runs_are_contiguous_in_time(capacity, fill, run, seed):
    size, insert_pos = min(fill, capacity), fill % capacity
    refs = 4
    idx, w, _ = neighbor(refs, run).sample((), jax.random.key(seed), size, insert_pos, refs * run)
    idx = np.asarray(idx)
    assert idx.min() >= 0 and idx.max() < size
    chron = _runs_in_time_order(idx, size, insert_pos, run)
    # Consecutive in time and never from the newest row (size - 1) into the oldest (0).
    np.testing.assert_array_equal(np.diff(chron, axis=1), 1)
    assert chron.min() >= 0 and chron.max() <= size - 1
    np.testing.assert_array_equal(np.asarray(w), 1.0)


def test_neighbor_crosses_physical_ring_end_but_not_newest_to_oldest():
    # Full ring of 8 with insert_pos 5: time order is rows 5,6,7,0,1,2,3,4 (4 is newest).
    idx, _ = _sample_many(neighbor(4, 3), (), 8, 5, 12, 200, seed=1)
    runs = idx.reshape(-1, 3)
    pairs = {(int(a), int(b)) for r in runs for a, b in zip(r[:-1], r[1:], strict=True)}
    assert (7, 0) in pairs  # physical wrap inside a run happens
    assert (4, 5) not in pairs  # newest -> oldest never happens
    assert pairs <= {(5, 6), (6, 7), (7, 0), (0, 1), (1, 2), (2, 3), (3, 4)}
    # Start positions (time order) are uniform over the 8 - 3 + 1 = 6 that fit.
    starts = (runs[:, 0] - 5) % 8
    assert _chi2_p(np.bincount(starts, minlength=6), np.ones(6)) > P_OK


def test_neighbor_window_and_small_buffer():
    # Window n=2: each reference contributes rows i-2..i+2 (5 rows), batch cut at 12 of 15.
    idx, _, _ = neighbor(3, 2, window=True).sample((), jax.random.key(0), 10, 10, 12)
    chron = np.asarray(idx)
    np.testing.assert_array_equal(np.diff(chron[:10].reshape(2, 5), axis=1), 1)
    np.testing.assert_array_equal(np.diff(chron[10:]), 1)
    assert chron.max() <= 9
    # Only part of the windows used: batch 7 of 3 windows of 5 rows -> one window + 2 rows.
    idx = np.asarray(neighbor(3, 2, window=True).sample((), jax.random.key(1), 10, 10, 7)[0])
    np.testing.assert_array_equal(np.diff(idx[:5]), 1)
    assert idx[6] - idx[5] == 1
    # Fewer rows than a run: the run repeats rows k mod size.
    idx, _, _ = neighbor(2, 5).sample((), jax.random.key(0), 3, 3, 10)
    np.testing.assert_array_equal(np.asarray(idx), [0, 1, 2, 0, 1] * 2)


def test_neighbor_rejects_bad_batch():
    with pytest.raises(ValueError, match="batch_size must equal num_refs \\* run_length"):
        neighbor(4, 8).sample((), jax.random.key(0), 100, 0, 30)
    with pytest.raises(ValueError, match=r"batch_size must be <= num_refs \* \(2 \* run_len"):
        neighbor(3, 2, window=True).sample((), jax.random.key(0), 100, 0, 16)
    with pytest.raises(ValueError, match="num_refs must be >= 1"):
        neighbor(0, 8)


# ---------------------------------------------------------------- prioritised

CAP = 6  # not a power of two: exercises the zero padding leaves
TD = np.array([0.5, 2.0, 0.1, 1.0, 3.0, 0.7], np.float32)
EPS = 1e-2


def _prio_state(sampler, td=TD, rows=CAP):
    """Sampler state after adding ``rows`` rows and setting their priorities to |td| + eps."""

    @jax.jit
    def build():
        state = sampler.init()
        for row in range(rows):
            state = sampler.on_add(state, jnp.int32(row))
        return sampler.update_priorities(state, jnp.arange(rows), jnp.asarray(td[:rows]))

    return build()


def _np_prefix_search(leaves: np.ndarray, u: np.ndarray) -> np.ndarray:
    return np.searchsorted(np.cumsum(leaves.astype(np.float64)), u, side="right")


@pytest.mark.parametrize("stratified", [False, True])
def test_prioritized_distribution_chi_square(stratified):
    alpha = 0.7
    sampler = prioritized(CAP, alpha=alpha, beta=0.5, eps=EPS, stratified=stratified)
    state = _prio_state(sampler)
    idx, _ = _sample_many(sampler, state, CAP, 0, 32, 300, seed=4)
    counts = np.bincount(idx.ravel(), minlength=CAP)
    probs = (np.abs(TD) + EPS) ** alpha
    assert _chi2_p(counts, probs) > P_OK
    assert _chi2_p(counts, np.ones(CAP)) < 1e-6  # power check


def test_prioritized_matches_numpy_given_same_uniforms_and_weight_formula():
    alpha, beta, batch = 0.6, 0.4, 16
    sampler = prioritized(CAP, alpha=alpha, beta=beta, eps=EPS, stratified=True)
    state = _prio_state(sampler)
    key = jax.random.key(7)
    idx, w, _ = jax.jit(sampler.sample, static_argnums=4)(state, key, CAP, 0, batch)
    leaves = (np.abs(TD) + EPS) ** alpha
    u = (np.arange(batch) + np.asarray(jax.random.uniform(key, (batch,)))) / batch
    want_idx = _np_prefix_search(leaves, u * leaves.sum())
    np.testing.assert_array_equal(np.asarray(idx), want_idx)
    prob = leaves[want_idx] / leaves.sum()
    want_w = (CAP * prob) ** -beta
    np.testing.assert_allclose(np.asarray(w), want_w / want_w.max(), rtol=1e-5)
    assert np.isclose(np.asarray(w).max(), 1.0)


def test_prioritized_new_rows_get_max_priority_and_unwritten_rows_are_never_drawn():
    sampler = prioritized(CAP, alpha=1.0, beta=0.4, eps=EPS)
    state = _prio_state(sampler, rows=3)  # rows 0..2 written, priorities TD[:3] + eps
    assert np.isclose(float(state.max_priority), 2.0 + EPS)
    idx, _ = _sample_many(sampler, state, 3, 3, 16, 50)
    assert idx.max() <= 2
    state = sampler.on_add(state, jnp.int32(3))
    leaves = np.asarray(sum_tree.leaf_values(state.sum_tree, CAP))
    np.testing.assert_allclose(leaves[:4], [0.5 + EPS, 2.0 + EPS, 0.1 + EPS, 2.0 + EPS], 1e-6)
    np.testing.assert_array_equal(leaves[4:], 0.0)


@pytest.mark.parametrize("make", [prioritized, info_prioritized, dense_prioritized])
def test_on_add_wraps_rows_at_the_capacity_given_at_construction(make):
    """``init()`` builds the state for the constructor's capacity, and ``on_add(pos + e)``
    names ring row ``(pos + e) % capacity``, as the multi-env rollout calls it."""
    sampler = make(5)
    state = sampler.init()
    tree = getattr(state, "sum_tree", None)
    leaves = (lambda st: np.asarray(sum_tree.leaf_values(st.sum_tree, 5))) if tree is not None \
        else (lambda st: np.asarray(st.priority))
    assert leaves(state).shape == (5,) and not leaves(state).any()
    state = sampler.update_priorities(state, jnp.array([0]), jnp.array([3.0]))
    state = sampler.on_add(state, jnp.int32(4 + 3))  # pos 4 + env 3: row 2
    got = leaves(state)
    assert got[2] == got.max() > 0
    np.testing.assert_array_equal(np.nonzero(got)[0], [0, 2])


@functools.cache
def _jit_update(capacity):
    sampler = info_prioritized(capacity, alpha=0.5, eps=EPS)
    return jax.jit(lambda i, t: sampler.update_priorities(sampler.init(), i, t))


@HYP
@given(
    capacity=st.sampled_from([1, 5, 13]),
    updates=st.lists(st.tuples(st.integers(0, 12), st.floats(-5, 5)), min_size=16, max_size=16),
)
def test_sum_tree_consistent_and_last_duplicate_wins(capacity, updates):
    idx = np.array([i % capacity for i, _ in updates], np.int32)
    td = np.array([t for _, t in updates], np.float32)
    state = _jit_update(capacity)(jnp.asarray(idx), jnp.asarray(td))
    want = np.zeros(capacity, np.float32)
    for i, t in zip(idx, td, strict=True):  # sequential updates: the last one wins
        want[i] = abs(t) + EPS
    np.testing.assert_allclose(
        np.asarray(sum_tree.leaf_values(state.sum_tree, capacity)), want**0.5, rtol=1e-6
    )
    for tree, combine in ((state.sum_tree, np.add), (state.max_tree, np.maximum)):
        tree = np.asarray(tree)
        half = tree.shape[0] // 2
        np.testing.assert_allclose(
            tree[1:half], combine(tree[2 : 2 * half : 2], tree[3 : 2 * half : 2]), rtol=1e-5
        )
    assert np.isclose(float(state.max_tree[1]), want.max())
    assert np.isclose(float(state.max_priority), max(1.0, float((np.abs(td) + EPS).max())))


@pytest.mark.parametrize("capacity", [1, 6, 13])
def test_bulk_state_equals_per_row_updates(capacity):
    td = np.random.default_rng(capacity).normal(size=capacity).astype(np.float32)
    sampler = info_prioritized(capacity, alpha=0.7, eps=EPS)
    rows = sampler.update_priorities(sampler.init(), jnp.arange(capacity), td)
    bulk = state_from_priorities(np.abs(td) + EPS, alpha=0.7, max_tree=True)
    for a, b in zip(bulk, rows, strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5)


def test_prioritized_rejects_bad_config():
    with pytest.raises(ValueError, match="alpha must be >= 0.0"):
        prioritized(8, alpha=-1.0)
    with pytest.raises(ValueError, match="eps must be > 0.0"):
        info_prioritized(8, eps=0.0)
    for capacity in (0, MAX_CAPACITY + 1):
        for make in (prioritized, info_prioritized, dense_prioritized):
            with pytest.raises(ValueError, match="capacity must be"):
                make(capacity)
    sampler = prioritized(8)
    with pytest.raises(ValueError, match="same shape"):
        sampler.update_priorities(sampler.init(), jnp.arange(3), jnp.ones(4))


# ---------------------------------------------------------------- info-prioritised


def _np_expand(ref_chron, counts, size, batch):
    chron, slots = [], []
    for r, (c, k) in enumerate(zip(ref_chron, counts, strict=True)):
        start = max(min(int(c), size - int(k)), 0)
        for j in range(int(k)):
            chron.append((start + j) % size)
            slots.append(r)
    return np.array(chron[:batch]), np.array(slots[:batch])


_expand_jit = jax.jit(expand_references, static_argnums=3)


@HYP
@given(
    size=st.integers(1, 10),
    refs=st.lists(st.integers(0, 9), min_size=12, max_size=12),
    counts=st.lists(st.sampled_from([1, 2, 4]), min_size=12, max_size=12),
    batch=st.sampled_from([1, 12]),
)
def test_expand_references_matches_numpy_loop(size, refs, counts, batch):
    refs = np.array(refs) % size
    counts = np.array(counts)
    chron, slot = _expand_jit(jnp.asarray(refs), jnp.asarray(counts), jnp.int32(size), batch)
    want_chron, want_slot = _np_expand(refs, counts, size, batch)
    np.testing.assert_array_equal(np.asarray(chron), want_chron)
    np.testing.assert_array_equal(np.asarray(slot), want_slot)


def test_info_prioritized_matches_numpy_reference_given_same_uniforms():
    # Full ring of 6 with insert_pos 2 (time order: rows 2,3,4,5,0,1). Normalised priorities
    # q = (|td| + eps) / max: row 4 is the max (q = 1 -> 4 rows), rows 1 and 3 fall in the
    # middle band (2 rows), rows 0, 2, 5 in the low band (1 row).
    alpha, beta, batch, insert_pos = 0.8, 0.6, 24, 2
    sampler = info_prioritized(CAP, alpha=alpha, beta=beta, eps=EPS)
    state = _prio_state(sampler)
    key = jax.random.key(11)
    idx, w, _ = jax.jit(sampler.sample, static_argnums=4)(state, key, CAP, insert_pos, batch)

    p = np.abs(TD) + EPS
    leaves = p**alpha
    refs = _np_prefix_search(leaves, np.asarray(jax.random.uniform(key, (batch,))) * leaves.sum())
    q = p[refs] / p.max()
    counts = np.where(q < 0.33, 1, np.where(q <= 0.66, 2, 4))
    chron, slot = _np_expand((refs - insert_pos) % CAP, counts, CAP, batch)
    np.testing.assert_array_equal(np.asarray(idx), (chron + insert_pos) % CAP)
    ww = (CAP * leaves[refs[slot]] / leaves.sum()) ** -beta
    np.testing.assert_allclose(np.asarray(w), ww / ww.max(), rtol=1e-5)
    assert set(counts.tolist()) == {1, 2, 4}  # all three bands are exercised


def test_info_prioritized_reference_distribution_chi_square():
    # The first batch row is the first reference whenever its run is not shifted: row 0 is the
    # maximum (q = 1 -> 4 rows starting at itself, the oldest row); every other row is in the
    # low band (q < 0.33 -> 1 row, itself). So idx[:, 0] ~ P(i) = p_i^alpha / sum.
    td = np.array([1.0, 0.3, 0.2, 0.25, 0.1, 0.3], np.float32)
    sampler = info_prioritized(CAP, alpha=1.0, beta=0.4, eps=EPS)
    state = _prio_state(sampler, td=td)
    idx, w = _sample_many(sampler, state, CAP, 0, 8, 3000, seed=5)
    counts = np.bincount(idx[:, 0], minlength=CAP)
    assert _chi2_p(counts, td + EPS) > P_OK
    assert _chi2_p(counts, np.ones(CAP)) < 1e-6  # power check
    first_is_max = idx[:, 0] == 0
    np.testing.assert_array_equal(
        idx[first_is_max, :4], np.tile([0, 1, 2, 3], (first_is_max.sum(), 1))
    )
    assert np.all(w > 0) and np.allclose(w.max(axis=1), 1.0)


def test_samplers_run_under_jit_with_traced_buffer_position():
    samplers = {
        "uniform": uniform(),
        "neighbor": neighbor(4, 4),
        "prioritized": prioritized(16),
        "info_prioritized": info_prioritized(16),
    }
    for name, sampler in samplers.items():
        state = sampler.init()
        on_add = jax.jit(sampler.on_add)
        for row in range(10):
            state = on_add(state, jnp.int32(row))

        @jax.jit
        def go(state, key, size, pos, sampler=sampler):
            return sampler.sample(state, key, size, pos, 16)

        idx, w, _ = go(state, jax.random.key(0), jnp.int32(10), jnp.int32(10))
        assert idx.shape == (16,) and idx.dtype == jnp.int32, name
        assert w.shape == (16,) and w.dtype == jnp.float32, name
        assert int(idx.min()) >= 0 and int(idx.max()) < 10, name
