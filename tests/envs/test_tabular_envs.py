"""Tabular environments against gymnasium 1.3 (Taxi-v4, CliffWalking-v1, FrozenLake-v1).

Gymnasium's transition tables ``env.unwrapped.P`` are the independent reference: every
(state, action) pair of the deterministic worlds is stepped through the jitted, vmapped gymnax
``step``; slippery worlds are compared by next-state frequencies; ``tabular_model`` is compared
outcome set by outcome set.
"""

from __future__ import annotations

from collections import deque

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl_pim.envs import (
    ENV_NAMES,
    CliffWalking,
    FrozenLake,
    Taxi,
    make,
    tabular_model,
)
from jaxrl_pim.envs import taxi as taxi_mod
from jaxrl_pim.envs.cliffwalking import EnvParams as CliffParams
from jaxrl_pim.envs.frozenlake import EnvState as FrozenState

# (make name, make kwargs, gymnasium id)
CASES = {
    "taxi": ("taxi", {}, "Taxi-v4"),
    "cliff": ("cliffwalking", {}, "CliffWalking-v1"),
    "cliff_slippery": ("cliffwalking", {"is_slippery": True}, "CliffWalkingSlippery-v1"),
    "frozen4": ("frozenlake", {}, "FrozenLake-v1"),
    "frozen8": ("frozenlake8x8", {}, "FrozenLake8x8-v1"),
}


def _gym(gym_id: str):
    return gym.make(gym_id).unwrapped


def _outcomes(prob, next_state, reward, terminated) -> list[tuple]:
    """Canonical sorted list of outcomes with nonzero probability."""
    return sorted(
        (round(float(p), 12), int(n), float(r), bool(t))
        for p, n, r, t in zip(prob, next_state, reward, terminated, strict=True)
        if p > 0
    )


def _gym_distribution(P, s: int, a: int) -> dict[int, float]:
    dist: dict[int, float] = {}
    for p, n, _, _ in P[s][a]:
        dist[int(n)] = dist.get(int(n), 0.0) + float(p)
    return dist


def _batched_step(env, states, actions, keys):
    """jit(vmap(env.step)) over a batch of states/actions with default params."""
    step = jax.jit(jax.vmap(env.step, in_axes=(0, 0, 0, None)))
    return step(keys, states, actions, env.default_params)


# --------------------------------------------------------------------------- deterministic


@pytest.mark.parametrize("case", ["taxi", "cliff"])
def test_deterministic_step_matches_gymnasium_for_every_pair(case):
    name, kwargs, gym_id = CASES[case]
    env, _ = make(name, **kwargs)
    P = _gym(gym_id).P
    S, A = len(P), len(P[0])
    s = np.repeat(np.arange(S), A).astype(np.int32)
    a = np.tile(np.arange(A), S).astype(np.int32)
    keys = jax.random.split(jax.random.key(1), S * A)
    obs, state, reward, terminated, truncated, info = _batched_step(
        env, env.state_from_index(s), a, keys
    )
    want = [P[int(si)][int(ai)] for si, ai in zip(s, a, strict=True)]
    assert all(len(w) == 1 and w[0][0] == 1.0 for w in want)
    np.testing.assert_array_equal(np.asarray(info["final_observation"]), [w[0][1] for w in want])
    np.testing.assert_array_equal(np.asarray(reward), [w[0][2] for w in want])
    np.testing.assert_array_equal(np.asarray(terminated), [w[0][3] for w in want])
    assert not np.asarray(truncated).any()
    # Non-terminal steps keep the stepped observation; terminal ones reset.
    t = np.asarray(terminated)
    np.testing.assert_array_equal(np.asarray(obs)[~t], np.asarray(info["final_observation"])[~t])
    assert t.any() and (np.asarray(state.time)[t] == 0).all()
    assert (np.asarray(state.time)[~t] == 1).all()
    # Sanity that the comparison is not vacuous: all three reward kinds occur.
    assert set(np.unique(np.asarray(reward)).tolist()) == (
        {-10.0, -1.0, 20.0} if case == "taxi" else {-100.0, -1.0}
    )


@pytest.mark.parametrize("case", ["taxi", "cliff"])
def test_deterministic_step_matches_gymnasium_rollout(case):
    """Random (state, action) pairs from a 4,000-step gymnasium rollout, stepped in one batch."""
    name, kwargs, gym_id = CASES[case]
    env, _ = make(name, **kwargs)
    genv = gym.make(gym_id)
    rng = np.random.default_rng(0)
    s, _ = genv.reset(seed=0)
    rows = []
    for _ in range(4000):
        a = int(rng.integers(env.num_actions))
        s2, r, term, trunc, _ = genv.step(a)
        rows.append((s, a, r, s2, term))
        s = genv.reset()[0] if term or trunc else s2
    s_arr, a_arr, r_arr, s2_arr, t_arr = (np.array(c) for c in zip(*rows, strict=True))
    keys = jax.random.split(jax.random.key(2), len(rows))
    _, _, reward, terminated, _, info = _batched_step(
        env, env.state_from_index(s_arr.astype(np.int32)), a_arr.astype(np.int32), keys
    )
    np.testing.assert_array_equal(np.asarray(info["final_observation"]), s2_arr)
    np.testing.assert_array_equal(np.asarray(reward), r_arr)
    np.testing.assert_array_equal(np.asarray(terminated), t_arr)


def test_cliff_sends_back_to_start_without_terminating():
    env, params = make("cliffwalking")
    key = jax.random.key(0)
    obs, state = env.reset(key, params)
    assert int(obs) == 36
    obs, state, reward, terminated, truncated, _ = env.step(key, state, 1, params)  # right
    got = (int(obs), float(reward), bool(terminated), bool(truncated))
    assert got == (36, -100.0, False, False)
    assert int(state.time) == 1


# --------------------------------------------------------------------------- Taxi helpers


def test_taxi_encode_decode_match_gymnasium_for_all_states():
    genv = _gym("Taxi-v4")
    want = np.array([genv.decode(i) for i in range(500)])
    got = np.stack([np.asarray(x) for x in taxi_mod.decode(jnp.arange(500))], axis=1)
    np.testing.assert_array_equal(got, want)
    enc = taxi_mod.encode(want[:, 0], want[:, 1], want[:, 2], want[:, 3])
    np.testing.assert_array_equal(np.asarray(enc), np.arange(500))
    assert all(genv.encode(*map(int, w)) == i for i, w in enumerate(want))
    # jit + vmap work on the helpers.
    np.testing.assert_array_equal(
        np.asarray(jax.jit(jax.vmap(taxi_mod.encode))(*taxi_mod.decode(jnp.arange(500)))),
        np.arange(500),
    )


def test_taxi_initial_distribution_matches_gymnasium():
    genv = _gym("Taxi-v4")
    ref = genv.initial_state_distrib
    env, params = make("taxi")
    np.testing.assert_allclose(tabular_model(env).initial_dist, ref, rtol=0, atol=1e-15)
    support = set(np.flatnonzero(ref).tolist())
    assert len(support) == 300
    n = 30_000
    obs, _ = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))(
        jax.random.split(jax.random.key(3), n), params
    )
    counts = np.bincount(np.asarray(obs), minlength=500)
    assert set(np.flatnonzero(counts).tolist()) == support
    # Uniform over the support: expected 100 per state, sd ~10.
    assert np.abs(counts[sorted(support)] - n / 300).max() < 6 * np.sqrt(n / 300)


def test_taxi_truncates_after_200_steps_like_gymnasium():
    env, params = make("taxi")
    assert params.max_steps_in_episode == 200
    start = int(taxi_mod.encode(2, 2, 0, 1))

    def body(state, key):
        obs, state, reward, term, trunc, _ = env.step(key, state, 1, params)  # north
        return state, (term, trunc, state.time)

    keys = jax.random.split(jax.random.key(4), 201)
    _, (term, trunc, time) = jax.lax.scan(body, env.state_from_index(start), keys)
    trunc = np.asarray(trunc)
    assert not np.asarray(term).any()
    assert np.flatnonzero(trunc).tolist() == [199]  # the 200th step
    assert int(time[199]) == 0 and int(time[200]) == 1  # reset after truncation

    genv = gym.make("Taxi-v4")
    genv.reset(seed=0)
    genv.unwrapped.s = start
    flags = [genv.step(1)[3] for _ in range(200)]
    assert flags.index(True) == 199 and sum(flags) == 1


def test_cliffwalking_custom_time_limit():
    env = CliffWalking()
    params = CliffParams(max_steps_in_episode=5)
    state = env.state_from_index(0)
    truncs = []
    for i in range(6):
        _, state, _, term, trunc, _ = env.step(jax.random.key(i), state, 0, params)
        truncs.append(bool(trunc))
        assert not bool(term)
    assert truncs == [False] * 4 + [True, False]


# --------------------------------------------------------------------------- slippery worlds


@pytest.mark.parametrize("case", ["frozen4", "frozen8", "cliff_slippery"])
def test_slippery_next_state_frequencies_match_gymnasium(case):
    name, kwargs, gym_id = CASES[case]
    env, _ = make(name, **kwargs)
    P = _gym(gym_id).P
    model = tabular_model(env)
    live = np.flatnonzero(~model.terminal_states)
    n = 1000
    s = np.repeat(live, env.num_actions * n).astype(np.int32)
    a = np.tile(np.repeat(np.arange(env.num_actions), n), len(live)).astype(np.int32)
    if isinstance(env, FrozenLake):
        states = FrozenState(time=jnp.zeros_like(s), position=jnp.asarray(s))
    else:
        states = env.state_from_index(s)
    keys = jax.random.split(jax.random.key(5), len(s))
    _, _, reward, terminated, _, info = _batched_step(env, states, a, keys)
    nxt = np.asarray(info["final_observation"]).reshape(len(live), env.num_actions, n)
    reward = np.asarray(reward).reshape(nxt.shape)
    terminated = np.asarray(terminated).reshape(nxt.shape)
    worst = 0.0
    for i, si in enumerate(live):
        for ai in range(env.num_actions):
            # Outcome = (next state, reward, terminated): CliffWalking reaches 36 both by a
            # step (-1) and by a cliff fall (-100) from the same (s, a).
            ref: dict[tuple, float] = {}
            for p, ns, r, t in P[int(si)][ai]:
                ref[(int(ns), float(r), bool(t))] = ref.get((int(ns), float(r), bool(t)), 0) + p
            rows = np.stack([nxt[i, ai], reward[i, ai], terminated[i, ai]], axis=1)
            uniq, counts = np.unique(rows, axis=0, return_counts=True)
            got = {
                (int(u[0]), float(u[1]), bool(u[2])): c / n
                for u, c in zip(uniq, counts, strict=True)
            }
            assert set(got) <= set(ref), (si, ai, got, ref)
            for outcome, p in ref.items():
                sd = np.sqrt(p * (1 - p) / n) if p < 1 else 1.0
                worst = max(worst, abs(got.get(outcome, 0.0) - p) / sd)
    # Max over a few hundred (s, a, s') z-scores; 5 sd is loose but catches wrong probabilities
    # (e.g. 1/2 vs 1/3 gives z ~ 11 at n = 1000).
    assert worst < 5.0, worst


# --------------------------------------------------------------------------- tabular_model


@pytest.mark.parametrize("case", list(CASES))
def test_tabular_model_matches_gymnasium_P(case):
    name, kwargs, gym_id = CASES[case]
    env, _ = make(name, **kwargs)
    genv = _gym(gym_id)
    P = genv.P
    m = tabular_model(env)
    S, A = len(P), len(P[0])
    assert (m.num_states, m.num_actions) == (S, A)
    assert m.prob.dtype == np.float64 and m.next_state.dtype == np.int32
    assert m.reward.dtype == np.float32 and m.terminated.dtype == bool
    assert m.prob.shape == m.next_state.shape == m.reward.shape == m.terminated.shape
    assert m.prob.shape[:2] == (S, A)
    np.testing.assert_allclose(m.prob.sum(-1), 1.0, rtol=0, atol=1e-12)
    np.testing.assert_allclose(m.initial_dist, genv.initial_state_distrib, rtol=0, atol=1e-15)
    assert not m.initial_dist[m.terminal_states].any()
    for s in range(S):
        for a in range(A):
            got = _outcomes(m.prob[s, a], m.next_state[s, a], m.reward[s, a], m.terminated[s, a])
            if m.terminal_states[s]:
                assert got == [(1.0, s, 0.0, True)]
            if not m.terminal_states[s] or case.startswith("frozen"):
                # FrozenLake's P is absorbing at holes/goal too; Taxi/CliffWalking P keep
                # moving dynamics at terminal states, which no episode uses.
                assert got == _outcomes(*zip(*P[s][a], strict=True)), (s, a)


def test_tabular_model_terminal_states():
    taxi = tabular_model(make("taxi")[0])
    _, _, p, d = (np.asarray(x) for x in taxi_mod.decode(np.arange(500)))
    np.testing.assert_array_equal(taxi.terminal_states, p == d)
    cliff = tabular_model(make("cliffwalking")[0])
    assert np.flatnonzero(cliff.terminal_states).tolist() == [47]
    frozen = tabular_model(make("frozenlake")[0])
    assert np.flatnonzero(frozen.terminal_states).tolist() == [5, 7, 11, 12, 15]
    # Every terminating transition lands on a terminal state and vice versa (live rows).
    for m in (taxi, cliff, frozen):
        live = ~m.terminal_states
        landed = m.terminal_states[m.next_state[live]]
        np.testing.assert_array_equal(landed, m.terminated[live])


def _value_iteration(m, gamma: float, iters: int = 2000) -> np.ndarray:
    v = np.zeros(m.num_states)
    for _ in range(iters):
        q = (m.prob * (m.reward + gamma * (~m.terminated) * v[m.next_state])).sum(-1)
        v_new = q.max(axis=1)
        if np.abs(v_new - v).max() < 1e-12:
            return v_new
        v = v_new
    raise AssertionError("value iteration did not converge")


def test_tabular_model_value_iteration_closed_forms():
    # CliffWalking: the optimal undiscounted return from the start is -13 (up, 11 x right, down).
    v = _value_iteration(tabular_model(make("cliffwalking")[0]), gamma=1.0)
    assert v[36] == pytest.approx(-13.0)
    # Taxi: optimal undiscounted return = 21 - (shortest number of actions to deliver), with the
    # shortest path found by breadth-first search over gymnasium's own transition table.
    P = _gym("Taxi-v4").P
    m = tabular_model(make("taxi")[0])
    v = _value_iteration(m, gamma=1.0)
    dist = np.full(500, -1)
    preds: dict[int, list[int]] = {s: [] for s in range(500)}
    queue: deque[int] = deque()
    for s in range(500):
        for a in range(6):
            _, ns, _, term = P[s][a][0]
            if term:
                if dist[s] < 0:
                    dist[s] = 1
                    queue.append(s)
            else:
                preds[int(ns)].append(s)
    while queue:
        s = queue.popleft()
        for ps in preds[s]:
            if dist[ps] < 0:
                dist[ps] = dist[s] + 1
                queue.append(ps)
    starts = np.flatnonzero(m.initial_dist)
    np.testing.assert_allclose(v[starts], 21.0 - dist[starts])


# --------------------------------------------------------------------------- make / errors


def test_make_builds_each_name_with_default_params():
    expected = {
        "frozenlake": (FrozenLake, 16, 100),
        "frozenlake8x8": (FrozenLake, 64, 200),
        "taxi": (Taxi, 500, 200),
        "cliffwalking": (CliffWalking, 48, 2**31 - 2),
    }
    assert set(ENV_NAMES) == set(expected)
    for name, (cls, n_states, max_steps) in expected.items():
        env, params = make(name)
        assert isinstance(env, cls)
        assert env.observation_space(params).n == n_states
        assert params.max_steps_in_episode == max_steps
    env, _ = make("frozenlake", map_name="8x8", is_slippery=False)
    assert env.n_states == 64 and env.is_slippery is False
    assert make("frozenlake")[0].is_slippery is True


@pytest.mark.parametrize(
    ("name", "kwargs", "match"),
    [
        ("pong", {}, "frozenlake.*taxi.*cliffwalking"),
        ("taxi", {"is_slippery": True}, "unknown argument"),
        ("frozenlake", {"map_name": "5x5"}, "map_name"),
        ("frozenlake", {"is_slippery": 1}, "is_slippery"),
        ("frozenlake8x8", {"map_name": "4x4"}, "unknown argument"),
    ],
)
def test_make_rejects_bad_input(name, kwargs, match):
    with pytest.raises(ValueError, match=match):
        make(name, **kwargs)


def test_tabular_model_rejects_other_envs():
    from gymnax.environments.classic_control.cartpole import CartPole

    with pytest.raises(ValueError, match="Taxi, CliffWalking and FrozenLake"):
        tabular_model(CartPole())
