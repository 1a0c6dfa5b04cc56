"""Dataset collection, compact dtypes and file I/O."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from jaxrl_pim import data as data_lib
from jaxrl_pim import envs


@pytest.fixture(scope="module")
def frozen():
    env, params = envs.make("frozenlake")
    return env, params, envs.tabular_model(env)


def test_collected_rows_follow_the_known_model(frozen):
    env, params, model = frozen
    d = data_lib.collect(env, params, jax.random.key(0), 20_000, num_envs=64)
    assert d.state.dtype == np.uint8 and d.action.dtype == np.uint8
    assert d.num_rows == 20_000
    assert not model.terminal_states[d.state].any()  # terminal states never appear as s
    # every row is a possible outcome with the model's reward and terminal flag
    s, a, s2 = d.state.astype(int), d.action.astype(int), d.next_state.astype(int)
    hit = (model.next_state[s, a] == s2[:, None]) & (model.prob[s, a] > 0)
    assert hit.any(axis=1).all()
    k = hit.argmax(axis=1)
    np.testing.assert_array_equal(d.reward, model.reward[s, a, k])
    np.testing.assert_array_equal(d.terminated, model.terminated[s, a, k])
    # trajectories are contiguous: a non-terminal row continues from its s'
    per_env = 20_000 // 64 + 1
    cont = ~d.terminated[:-1] & (np.arange(len(s) - 1) % per_env != per_env - 1)
    np.testing.assert_array_equal(s[1:][cont], s2[:-1][cont])
    # uniform behaviour policy
    assert np.abs(np.bincount(a, minlength=4) / len(a) - 0.25).max() < 0.02


def test_taxi_time_limit_truncates_without_terminal_flag():
    env, params = envs.make("taxi")
    d = data_lib.collect(env, params, jax.random.key(1), 2_000, num_envs=1)
    assert d.state.dtype == np.int16
    s, s2, term = d.state.astype(int), d.next_state.astype(int), d.terminated
    breaks = np.flatnonzero(s[1:] != s2[:-1])  # rows after which a new episode starts
    for b in breaks:
        assert term[b] or (b + 1) % 200 == 0  # terminal, or cut at 200 steps
    assert any(not term[b] for b in breaks)  # some cut episodes bootstrap normally


def test_policies_and_per_agent_datasets(frozen):
    env, params, _ = frozen
    q = np.zeros((16, 4), np.float32)
    q[:, 2] = 1.0
    greedy = data_lib.collect(env, params, jax.random.key(2), 4_000,
                              policy=data_lib.epsilon_greedy_policy(q, 0.0))
    assert (greedy.action == 2).all()
    soft = data_lib.collect(env, params, jax.random.key(2), 4_000,
                            policy=data_lib.boltzmann_policy(q, 1.0))
    frac = (soft.action == 2).mean()
    expected = np.e / (np.e + 3)
    assert abs(frac - expected) < 0.03
    per = data_lib.collect_per_agent(env, params, jax.random.key(3), 5, 300)
    assert per.shape == (5, 300)
    assert not np.array_equal(per.action[0], per.action[1])


def test_npz_and_text_round_trip(tmp_path, frozen):
    env, params, model = frozen
    d = data_lib.collect(env, params, jax.random.key(4), 1_000, num_envs=10)
    data_lib.save_npz(tmp_path / "d.npz", d)
    back = data_lib.load(tmp_path / "d.npz", 16, 4)
    for x, y in zip(d, back, strict=True):
        np.testing.assert_array_equal(x, y)
    assert d.terminated.any()  # the flags below are not all zeros
    # five columns "s a r s' terminated": the flags round-trip without a model
    data_lib.write_text(tmp_path / "d5.txt", d)
    lines = (tmp_path / "d5.txt").read_text().splitlines()
    assert [[int(v) for v in ln.split()] for ln in lines] == [
        [int(x[i]) for x in (d.state, d.action, d.reward, d.next_state, d.terminated)]
        for i in range(len(lines))]
    for x, y in zip(d, data_lib.load(tmp_path / "d5.txt", 16, 4), strict=True):
        np.testing.assert_array_equal(x, y)
    # with the model's terminal states the flags must agree with the column
    for x, y in zip(d, data_lib.load(tmp_path / "d5.txt", 16, 4,
                                     terminal_states=model.terminal_states), strict=True):
        np.testing.assert_array_equal(x, y)
    # the published four columns "s a r s'": flags come from terminal_states, or none at all
    data_lib.write_text(tmp_path / "d.txt", d, terminated=False)
    first = (tmp_path / "d.txt").read_text().splitlines()[0].split()
    assert [int(v) for v in first] == [d.state[0], d.action[0], int(d.reward[0]), d.next_state[0]]
    txt = data_lib.load(tmp_path / "d.txt", 16, 4, terminal_states=model.terminal_states)
    for x, y in zip(d, txt, strict=True):
        np.testing.assert_array_equal(x, y)
    assert not data_lib.load(tmp_path / "d.txt", 16, 4).terminated.any()


def test_text_comments_blank_lines_and_flag_mismatch(tmp_path):
    path = tmp_path / "mine.txt"
    path.write_text("# s a r s' terminated\n0 1 -1 2 0\n\n2 0 5 3 1\n")
    d = data_lib.read_text(path, 4, 2)
    np.testing.assert_array_equal(d.state, [0, 2])
    np.testing.assert_array_equal(d.reward, np.float32([-1, 5]))
    np.testing.assert_array_equal(d.terminated, [False, True])
    mask = np.array([False, False, True, False])  # says s' = 2 is terminal, s' = 3 is not
    with pytest.raises(ValueError, match="row 1: terminated is 0 but terminal_states says 1"):
        data_lib.read_text(path, 4, 2, terminal_states=mask)
    with pytest.raises(ValueError, match=r"boolean mask \[4\]"):
        data_lib.read_text(path, 4, 2, terminal_states=np.zeros(3, bool))


@pytest.mark.parametrize(
    "content,match",
    [
        ("", "empty dataset"),
        ("0 1 0\n", "expected 4 or 5 numbers"),
        ("0 1 0 2 1 7\n", "expected 4 or 5 numbers"),
        ("0 1 0 2 1\n0 1 0 2\n", r"bad.txt:2: expected 5 numbers"),
        ("0 1 0 2 2\n", "terminated must be 0 or 1"),
        ("0 1 0 4\n0 x 0 1\n", "not numbers"),
        ("0 1 0 16\n", r"next_state must lie in \[0, 15\]"),
        ("0 4 0 1\n", r"action must lie in \[0, 3\]"),
        ("0.5 1 0 1\n", "must be integers"),
    ],
)
def test_bad_text_files(tmp_path, content, match):
    path = tmp_path / "bad.txt"
    path.write_text(content)
    with pytest.raises(ValueError, match=match):
        data_lib.read_text(path, 16, 4)


def test_bad_npz_and_missing_files(tmp_path):
    with pytest.raises(FileNotFoundError):
        data_lib.load(tmp_path / "none.npz", 16, 4)
    np.savez(tmp_path / "partial.npz", state=np.zeros(3, np.uint8))
    with pytest.raises(ValueError, match="missing arrays"):
        data_lib.load_npz(tmp_path / "partial.npz", 16, 4)
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="not a readable"):
        data_lib.load_npz(tmp_path / "junk.npz", 16, 4)


def test_save_is_atomic(tmp_path, frozen):
    env, params, _ = frozen
    d = data_lib.collect(env, params, jax.random.key(5), 100)
    path = tmp_path / "keep.npz"
    data_lib.save_npz(path, d)
    before = path.read_bytes()
    with pytest.raises(ValueError):
        data_lib.write_text(path, d._replace(reward=d.reward + 0.5))
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.npz"]
