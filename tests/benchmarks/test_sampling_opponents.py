"""The opponents of ``benchmarks/marl_sampling.py`` (the original sampler, vectorised NumPy,
flashbax's item and prioritised item buffers) return the same rows as the library's gather
for the same indices, draw independent index sets per agent, and the script's one-thread pass
writes every opponent key."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from benchmarks.sampling import opponents
from jaxrl_pim.replay import BufferState, Transition, make_buffer
from tests.support import bench

ROOT = Path(__file__).resolve().parents[2]
N, C, B = 3, 64, 16

pytest.importorskip("flashbax", reason="the 'bench' extra is not installed")


@pytest.fixture(scope="module")
def script(tmp_path_factory) -> dict:
    return vars(importlib.import_module("benchmarks.marl_sampling"))


def _labelled_state(script: dict):
    """A full interleaved buffer whose ``obs[t, 0, 0]`` is the row number ``t``."""
    state = script["random_state"]("interleaved", C, N, salt=3)
    obs = state.data.obs.at[:, 0, 0].set(jnp.arange(C, dtype=jnp.float32))
    return state._replace(data=state.data._replace(obs=obs))


def _same_as_library(script: dict, state, batch: dict, idx: np.ndarray) -> None:
    """``batch`` (time-major ``[N_draw, B, N_all, ...]`` per field) equals the library's
    gather of ``state`` at ``idx``."""
    buffer = make_buffer("interleaved", C, N, script["obs_dim"](N), script["ACTION_DIM"])
    want = buffer.gather(state, jnp.asarray(idx), time_major=True)
    for f in Transition._fields:
        np.testing.assert_array_equal(np.asarray(batch[f]), np.asarray(getattr(want, f)), f)


def test_vectorized_numpy_and_the_original_return_the_library_rows(script: dict) -> None:
    state = _labelled_state(script)
    host = {f: np.asarray(getattr(state.data, f)) for f in Transition._fields}
    idx = np.random.default_rng(0).integers(0, C, (N, B))
    vec = script["VectorizedNumpy"](host, B, seed=1)
    _same_as_library(script, state, vec.gather(idx), idx)
    drawn = vec()["obs"][:, :, 0, 0].astype(int)  # its own draws: one index set per agent
    assert len({tuple(row) for row in drawn}) == N
    bufs = script["numpy_buffers"](host, C)
    buffer = make_buffer("interleaved", C, N, script["obs_dim"](N), script["ACTION_DIM"])
    want = buffer.gather(state, jnp.asarray(idx), time_major=True)
    for i in range(N):  # agent i's draw: every agent j's fields at idx[i]
        for j in range(N):
            got = bufs[j].sample_index(list(idx[i]))
            for k, f in enumerate(Transition._fields):
                np.testing.assert_array_equal(got[k], np.asarray(getattr(want, f))[i, :, j])


def test_packed_row_rounds_return_whole_rows(script: dict) -> None:
    state = _labelled_state(script)
    rows = np.concatenate([np.asarray(getattr(state.data, f)).reshape(C, -1)
                           for f in Transition._fields], axis=1)  # [C, R], rows[t, 0] == t
    assert rows.shape[1] * 4 == script["row_bytes"](N)
    idx = np.random.default_rng(0).integers(0, C, (N, B))
    vec = script["VectorizedNumpy"]({"rows": rows}, B, seed=1, num_agents=N)
    got = vec.gather(idx)["rows"]  # [N, B, R]
    buffer = make_buffer("interleaved", C, N, script["obs_dim"](N), script["ACTION_DIM"])
    want = buffer.gather(state, jnp.asarray(idx), time_major=True)
    np.testing.assert_array_equal(got, np.concatenate(
        [np.asarray(getattr(want, f)).reshape(N, B, -1) for f in Transition._fields], axis=2))
    fn = opponents.packed_round(N, B)
    packed = BufferState(jnp.asarray(rows), jnp.int32(0), jnp.int32(C))
    out = fn(packed, jax.random.key(5), jnp.zeros((N, B, rows.shape[1])))
    drawn = np.asarray(out[:, :, 0]).astype(int)  # the library's own draws
    np.testing.assert_array_equal(np.asarray(out), rows[drawn])
    assert len({tuple(r) for r in drawn}) == N  # one index set per agent


def test_flashbax_uniform_rounds_return_the_library_rows(script: dict) -> None:
    state = _labelled_state(script)
    data = jax.tree.map(jnp.copy, state.data)  # donated to the flashbax buffer
    buf, fstate = opponents.flashbax_state(data, B)
    batch = opponents.flashbax_round(buf, N, False)(fstate, jax.random.key(0))
    assert batch["obs"].shape == (N, B, N, script["obs_dim"](N))
    idx = np.asarray(batch["obs"][:, :, 0, 0]).astype(int)
    assert len({tuple(row) for row in idx}) == N  # N independent index sets
    _same_as_library(script, state, batch, idx)


def test_flashbax_prioritized_round_weights_rows_and_update(script: dict) -> None:
    state = _labelled_state(script)
    prio = jnp.linspace(0.1, 5.0, C)
    buf, fstate = opponents.flashbax_state(jax.tree.map(jnp.copy, state.data), B, prio)
    nodes0 = np.asarray(fstate.sum_tree_state.nodes).copy()
    exp, w, new = opponents.flashbax_round(buf, N, True)(fstate, jax.random.key(1))
    idx = np.asarray(exp["obs"][:, :, 0, 0]).astype(int)
    _same_as_library(script, state, exp, idx)
    w = np.asarray(w)
    assert w.shape == (N, B) and np.allclose(w.max(axis=1), 1.0) and (w > 0).all()
    # high-priority rows are drawn more often than low ones (P ~ p^0.6)
    assert (idx >= C // 2).mean() > 0.5
    # the priorities of the drawn rows were replaced by u + eps < 1 + eps: total mass falls
    assert np.asarray(new.sum_tree_state.nodes)[0] < nodes0[0]


def test_library_prioritized_round_updates_the_drawn_rows(script: dict) -> None:
    from jaxrl_pim.replay import state_from_priorities

    state = _labelled_state(script)
    buffer = make_buffer("interleaved", C, N, script["obs_dim"](N), script["ACTION_DIM"])
    sampler = script["make_sampler"]("prioritized", C)
    sstate = state_from_priorities(jnp.full((C,), 4.0), alpha=0.6)
    total0 = float(sstate.sum_tree[1])
    fn = opponents.library_prio_round(buffer, sampler, "interleaved_faithful", N, B)
    batch, w, new = fn(state, sstate, jax.random.key(2), None)
    idx = np.asarray(batch.obs[:, :, 0, 0]).astype(int)
    _same_as_library(script, state, batch._asdict(), idx)
    assert np.asarray(w).shape == (N, B)
    assert float(new.sum_tree[1]) < total0  # priorities 4 -> u + eps at the drawn rows


@pytest.mark.xdist_group(bench.group("marl_sampling"))  # with its provenance check
def test_one_thread_pass_writes_every_opponent_key(smoke_run) -> None:
    # python benchmarks/marl_sampling.py --smoke --one-thread (tests.support.bench)
    proc = smoke_run("marl_sampling")
    out = proc.out
    assert proc.returncode == 0, proc.stderr[-4000:]
    data = json.loads((out / "marl_sampling_smoke.json").read_text())
    summ = data["summary"]
    assert data["results"]["one_thread"]["affinity"] and len(
        data["results"]["one_thread"]["affinity"]) == 1
    for suffix in ("", "_one_thread"):
        for key in ("sampler_speedup_vs_vectorized_numpy_3", "sampler_speedup_vs_flashbax_"
                    "uniform_3", "sampler_speedup_vs_flashbax_prioritized_3"):
            assert summ[key + suffix] > 0, key + suffix
        assert summ["sampler_speedup_vs_flashbax_uniform_24" + suffix] is None  # N = 3 only
        # the packed layout's round against the same opponents: their time over its time
        sec = data["results"]["one_thread" if suffix else "per_agents"]
        r3 = (sec["per_agents"] if suffix else sec)[0]
        best_numpy = min(r3["numpy_vectorized_seconds"], r3["numpy_vectorized_packed_seconds"])
        assert summ["packed_layout_round_speedup_vs_vectorized_numpy_by_agents" + suffix][
            "3"] == pytest.approx(best_numpy / r3["library_packed_rows_seconds"])
    assert "sampler_speedup_vs_original_24" in summ
    assert "sampler_speedup_vs_numpy_24" not in summ
    md = (out / "marl_sampling_smoke.md").read_text()
    assert "vectorised NumPy" in md and "flashbax" in md and "One thread" in md
