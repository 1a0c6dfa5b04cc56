"""Tests for jaxrl_pim.envs.mpe against an independent NumPy port and (optionally) mpe2.

The NumPy reference (jaxrl_pim/testing/mpe_numpy.py, float64, one entity at a time) always
runs, so CI without mpe2 still checks physics, observations and rewards step by step. The
mpe2 comparisons (the maintained PettingZoo port) skip cleanly when mpe2 is not installed.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl_pim.envs import mpe
from jaxrl_pim.testing import mpe_numpy as ref

STEPS = 25
ATOL = 1e-5


# ----------------------------------------------------------------------------- helpers


def _state(agent_pos, agent_vel, landmark_pos) -> mpe.MPEState:
    return mpe.MPEState(
        agent_pos=jnp.asarray(agent_pos, jnp.float32),
        agent_vel=jnp.asarray(agent_vel, jnp.float32),
        landmark_pos=jnp.asarray(landmark_pos, jnp.float32),
        time=jnp.zeros((), jnp.int32),
    )


def _f32(x) -> np.ndarray:
    """Values as the float32 the JAX env holds, widened to float64 for the reference."""
    return np.asarray(x, np.float32).astype(np.float64)


def _spread_start(rng: np.random.Generator, n: int):
    """Agents packed in a small box so that contacts happen, random velocities."""
    pos = rng.uniform(-0.35, 0.35, (n, 2))
    vel = rng.uniform(-0.5, 0.5, (n, 2))
    lm = rng.uniform(-1, 1, (n, 2))
    return _f32(pos), _f32(vel), _f32(lm)


def _tag_start(rng: np.random.Generator, a: int, g: int, n_l: int):
    """Predators around prey, obstacles in the middle, one prey near the +x border."""
    pos = rng.uniform(-0.3, 0.3, (a + g, 2))
    pos[a] = [0.93, -0.2]  # first prey starts inside the 0.9..1 penalty band
    pos[-1], pos[1] = [-0.6, 0.6], [-0.45, 0.6]  # predator 1 closes in on the last prey
    vel = rng.uniform(-0.3, 0.3, (a + g, 2))
    vel[1], vel[-1] = [-1.0, 0.0], [0.0, 0.0]
    lm = rng.uniform(-0.25, 0.25, (n_l, 2))
    return _f32(pos), _f32(vel), _f32(lm)


def _actions(rng: np.random.Generator, n: int, push: tuple[int, ...] = ()) -> np.ndarray:
    """Uniform [0, 1) action vectors; agents in ``push`` press +x fully (hits speed limits)."""
    act = rng.uniform(0, 1, (n, 5)).astype(np.float32)
    for i in push:
        act[i, 1], act[i, 2] = 1.0, 0.0
    return act


def _step(env, state, actions, params):
    obs, state, rew, term, trunc, info = env.step(jax.random.key(0), state, actions, params)
    return info["final_observation"], state, rew, term, trunc


# ----------------------------------------------------------------------------- sizes


@pytest.mark.parametrize("n,dim", [(3, 18), (6, 36), (12, 72), (24, 144), (48, 288)])
def test_spread_observation_sizes(n, dim):
    env, params = mpe.make_spread(n)
    assert env.teams == (mpe.TeamSpec("agents", n, dim, 5),)
    # shapes only: trace without compiling (keeps the suite fast)
    obs, state = jax.eval_shape(env.reset, jax.random.key(0), params)
    assert len(obs) == 1 and obs[0].shape == (n, dim) and obs[0].dtype == jnp.float32
    assert state.landmark_pos.shape == (n, 2)
    acts = (jax.ShapeDtypeStruct((n, 5), jnp.float32),)
    obs, _, rew, *_ = jax.eval_shape(env.step, jax.random.key(0), state, acts, params)
    assert obs[0].shape == (n, dim) and rew[0].shape == (n,) and rew[0].dtype == jnp.float32


@pytest.mark.parametrize(
    "sizes,dims", [((3, 1, 2), (16, 14)), ((24, 8, 8), (98, 96)), ((6, 2, 2), (26, 24))]
)
def test_tag_observation_sizes(sizes, dims):
    env, params = mpe.make_tag(*sizes)
    assert [t.name for t in env.teams] == ["predators", "prey"]
    assert tuple(t.obs_dim for t in env.teams) == dims
    obs, state = jax.eval_shape(env.reset, jax.random.key(0), params)
    assert [o.shape for o in obs] == [(sizes[0], dims[0]), (sizes[1], dims[1])]
    acts = tuple(jax.ShapeDtypeStruct((k, 5), jnp.float32) for k in sizes[:2])
    obs, _, rew, *_ = jax.eval_shape(env.step, jax.random.key(0), state, acts, params)
    assert [o.shape for o in obs] == [(sizes[0], dims[0]), (sizes[1], dims[1])]
    assert [r.shape for r in rew] == [(sizes[0],), (sizes[1],)]


def test_equal_configs_share_compiled_code():
    assert mpe.make_spread(3)[0] == mpe.make_spread(3)[0]
    assert hash(mpe.make_spread(3)[0]) == hash(mpe.make_spread(3)[0])
    assert mpe.make_spread(3)[0] != mpe.make_spread(3, reward="pettingzoo")[0]
    assert mpe.make_spread(3)[0] != mpe.make_spread(4)[0]
    assert mpe.make_tag(3, 1, 2)[0] != mpe.make_tag(3, 1, 2, integration="mpe2")[0]
    assert not mpe.make_spread(3)[0].split_pairs and mpe.make_spread(24)[0].split_pairs
    # the entity count decides: spread-6 has 12 entities, tag-6 (6 predators, 2 prey) 10
    assert mpe.make_spread(6)[0].split_pairs and not mpe.make("tag", 6)[0].split_pairs


def test_presets():
    assert tuple(mpe.SPREAD_PRESETS) == (3, 6, 12, 24, 48)
    assert mpe.TAG_PRESETS[3] == (3, 1, 2) and mpe.TAG_PRESETS[24] == (24, 8, 8)
    for k, (a, g, n_l) in mpe.TAG_PRESETS.items():
        env, _ = mpe.make("tag", k)
        assert (env.num_predators, env.num_prey, env.num_landmarks) == (a, g, n_l) and a == k
    env, _ = mpe.make("spread", 12)
    assert env.teams[0].obs_dim == 72


# ----------------------------------------------------------------------------- NumPy reference


# split with 10 agents: the entity axis is padded to 16 (world.PAIR_LANES)
@pytest.mark.parametrize("convention,split,n", [("original", False, 3), ("pettingzoo", True, 3),
                                                ("original", True, 10)])
def test_spread_matches_numpy_reference(convention, split, n):
    rng = np.random.default_rng(1)
    env, params = mpe.make_spread(n, reward=convention, local_ratio=0.3)
    env.split_pairs = split  # both layouts of the pairwise terms (auto picks by entity count)
    pos, vel, lm = _spread_start(rng, n)
    state = _state(pos, vel, lm)
    world = ref.spread_world(pos, vel, lm)
    collisions = 0
    for _ in range(STEPS):
        act = _actions(rng, n)
        obs, state, rew, term, _ = _step(env, state, (jnp.asarray(act),), params)
        world.step(list(act.astype(np.float64)))
        np.testing.assert_allclose(obs[0], np.stack(ref.spread_obs(world)), atol=ATOL)
        expect = ref.spread_rewards(world, convention, local_ratio=0.3)
        np.testing.assert_allclose(rew[0], expect, atol=ATOL, rtol=1e-6)
        assert not bool(term)
        collisions += sum(
            ref._touching(a, b) for i, a in enumerate(world.agents) for b in world.agents[i + 1:]
        )
    assert collisions > 0, "the start state should make agents collide"


def test_spread_original_reward_offset():
    """Original convention: -N * coverage - (ordered colliding pairs) - N (self-collisions)."""
    env, params = mpe.make_spread(3)
    state = _state([[0.0, 0.0], [0.2, 0.0], [2.0, 2.0]], np.zeros((3, 2)),
                   [[0.0, 0.0], [0.2, 0.0], [2.0, 2.0]])
    rew, info = env._rewards(state, params)
    # coverage 0 (each landmark under an agent), one colliding pair counted by both agents
    np.testing.assert_allclose(rew[0], [-(2 + 3)] * 3, atol=1e-6)
    assert int(info["collisions"]) == 1 and int(info["occupied_landmarks"]) == 3
    env_pz, params_pz = mpe.make_spread(3, reward="pettingzoo", local_ratio=0.5)
    rew_pz, _ = env_pz._rewards(state, params_pz)
    np.testing.assert_allclose(rew_pz[0], [-0.5, -0.5, 0.0], atol=1e-6)


# split with 6 + 3 agents and 2 obstacles: the entity axis is padded to 16
@pytest.mark.parametrize("split,sizes", [(False, (3, 2, 2)), (True, (3, 2, 2)),
                                         (True, (6, 3, 2))])
def test_tag_matches_numpy_reference(split, sizes):
    rng = np.random.default_rng(2)
    a, g, n_l = sizes
    env, params = mpe.make_tag(a, g, n_l)
    env.split_pairs = split
    pos, vel, lm = _tag_start(rng, a, g, n_l)
    state = _state(pos, vel, lm)
    world = ref.tag_world(pos[:a], vel[:a], pos[a:], vel[a:], lm)
    caught, capped, obstacle_contacts, bands = 0, 0, 0, set()
    for _ in range(STEPS):
        act = _actions(rng, a + g, push=(0, a))
        acts = (jnp.asarray(act[:a]), jnp.asarray(act[a:]))
        obs, state, rew, _, _ = _step(env, state, acts, params)
        world.step(list(act.astype(np.float64)))
        ref_pred, ref_prey = ref.tag_obs(world)
        np.testing.assert_allclose(obs[0], np.stack(ref_pred), atol=ATOL)
        np.testing.assert_allclose(obs[1], np.stack(ref_prey), atol=ATOL)
        r_pred, r_prey = ref.tag_rewards(world)
        np.testing.assert_allclose(rew[0], r_pred, atol=ATOL)
        np.testing.assert_allclose(rew[1], r_prey, atol=1e-4, rtol=1e-5)
        caught += r_pred[0] > 0
        capped += math_isclose(np.hypot(*world.agents[0].vel), 1.0)
        obstacle_contacts += any(ref._touching(x, o) for x in world.agents
                                 for o in world.landmarks)
        # boundary-penalty branches: 0 (< 0.9), linear (< 1), exp (< 1 + ln(10) / 2), capped
        bands |= {int(np.searchsorted([0.9, 1.0, 1 + np.log(10) / 2], abs(c)))
                  for x in world.agents[a:] for c in x.pos}
    # the scenario must exercise every branch: captures, speed limit, obstacles, penalty
    assert caught > 0 and capped > 0 and obstacle_contacts > 0
    assert bands == {0, 1, 2, 3}


def math_isclose(x: float, y: float) -> bool:
    return abs(x - y) < 1e-9


def test_tag_contact_with_obstacle_pushes_agent_out():
    """An agent overlapping an obstacle is pushed away along the centre line."""
    env, params = mpe.make_tag(1, 1, 1)
    state = _state([[0.25, 0.0], [-5.0, -5.0]], np.zeros((2, 2)), [[0.0, 0.0]])
    zero = (jnp.zeros((1, 5)), jnp.zeros((1, 5)))
    _, state, _, _, _ = _step(env, state, zero, params)
    # penetration 0.025: softplus(25) * 1e-3 ~ 0.025 -> force ~2.5 (+x), dv = 0.25 -> capped?
    dist = 0.25
    overlap = -(dist - 0.275) / 1e-3
    force = 100.0 * (np.log1p(np.exp(-overlap)) + overlap) * 1e-3
    v = min(force * 0.1, 1.0)
    np.testing.assert_allclose(np.asarray(state.agent_vel[0]), [v, 0.0], rtol=1e-5)
    np.testing.assert_allclose(np.asarray(state.agent_pos[0]), [0.25 + v * 0.1, 0.0], rtol=1e-5)


@pytest.mark.parametrize(
    "x,expect", [(0.0, 0.0), (0.5, 0.0), (0.95, 0.5), (0.999, 0.99), (1.0, 1.0),
                 (1.2, np.exp(0.4)), (2.0, np.exp(2.0)), (3.0, 10.0)]
)
def test_boundary_penalty_closed_form(x, expect):
    got = float(mpe.scenarios._boundary_penalty(jnp.float32(x)))
    assert got == pytest.approx(expect, rel=1e-5, abs=1e-5)
    assert ref.boundary_penalty(x) == pytest.approx(expect, rel=1e-12, abs=1e-12)


def test_off_diagonal_matches_mask():
    x = np.arange(5 * 5 * 2).reshape(5, 5, 2)
    mask = ~np.eye(5, dtype=bool)
    np.testing.assert_array_equal(mpe.off_diagonal(jnp.asarray(x)), x[mask].reshape(5, 4, 2))
    assert mpe.off_diagonal(jnp.ones((1, 1, 2))).shape == (1, 0, 2)


# ----------------------------------------------------------------------------- mpe2


def _mpe2_actions(act: np.ndarray) -> np.ndarray:
    """mpe2 reads u = (a[2] - a[1], a[4] - a[3]); ours (and the original) (a[1] - a[2], ...)."""
    return act[:, [0, 2, 1, 4, 3]].astype(np.float32)


def _set_mpe2_state(world, pos, vel, lm) -> None:
    for agent, p, v in zip(world.agents, pos, vel, strict=True):
        agent.state.p_pos = np.array(p, np.float64)
        agent.state.p_vel = np.array(v, np.float64)
    for landmark, p in zip(world.landmarks, lm, strict=True):
        landmark.state.p_pos = np.array(p, np.float64)


def test_spread_matches_mpe2():
    mpe2_spread = pytest.importorskip("mpe2.simple_spread_v3")
    n, lr = 3, 0.5
    penv = mpe2_spread.parallel_env(N=n, local_ratio=lr, max_cycles=STEPS,
                                    continuous_actions=True)
    penv.reset(seed=0)
    world, scenario = penv.unwrapped.world, penv.unwrapped.scenario
    env, params = mpe.make_spread(n, reward="pettingzoo", integration="mpe2", local_ratio=lr)
    env_orig, params_orig = mpe.make_spread(n, reward="original", integration="mpe2")
    rng = np.random.default_rng(3)
    pos, vel, lm = _spread_start(rng, n)
    _set_mpe2_state(world, pos, vel, lm)
    state = state_orig = _state(pos, vel, lm)
    names = [a.name for a in world.agents]
    for t in range(STEPS):
        act = _actions(rng, n)
        obs, state, rew, _, trunc = _step(env, state, (jnp.asarray(act),), params)
        _, state_orig, rew_orig, _, _ = _step(env_orig, state_orig, (jnp.asarray(act),),
                                              params_orig)
        m_act = _mpe2_actions(act)
        m_obs, m_rew, _, m_trunc, _ = penv.step({k: m_act[i] for i, k in enumerate(names)})
        np.testing.assert_allclose(obs[0], np.stack([m_obs[k] for k in names]), atol=ATOL)
        np.testing.assert_allclose(rew[0], [m_rew[k] for k in names], atol=ATOL)
        # original convention from mpe2's own components: sum_i (global + local_i - 1)
        glob = scenario.global_reward(world)
        local = [scenario.reward(a, world) for a in world.agents]
        np.testing.assert_allclose(rew_orig[0], [n * glob + sum(local) - n] * n, atol=1e-4)
        assert bool(trunc) == all(m_trunc.values()) == (t == STEPS - 1)


def test_tag_matches_mpe2():
    mpe2_tag = pytest.importorskip("mpe2.simple_tag_v3")
    a, g, n_l = 3, 1, 2
    penv = mpe2_tag.parallel_env(num_good=g, num_adversaries=a, num_obstacles=n_l,
                                 max_cycles=STEPS, continuous_actions=True)
    penv.reset(seed=0)
    world = penv.unwrapped.world
    env, params = mpe.make_tag(a, g, n_l, integration="mpe2")
    rng = np.random.default_rng(4)
    pos, vel, lm = _tag_start(rng, a, g, n_l)
    _set_mpe2_state(world, pos, vel, lm)
    state = _state(pos, vel, lm)
    names = [x.name for x in world.agents]
    for _ in range(STEPS):
        act = _actions(rng, a + g, push=(0, a))
        obs, state, rew, _, _ = _step(env, state, (jnp.asarray(act[:a]), jnp.asarray(act[a:])),
                                      params)
        m_act = _mpe2_actions(act)
        m_obs, m_rew, _, _, _ = penv.step({k: m_act[i] for i, k in enumerate(names)})
        np.testing.assert_allclose(obs[0], np.stack([m_obs[k] for k in names[:a]]), atol=ATOL)
        np.testing.assert_allclose(obs[1], np.stack([m_obs[k] for k in names[a:]]), atol=ATOL)
        np.testing.assert_allclose(
            np.concatenate(rew), [m_rew[k] for k in names], atol=1e-4, rtol=1e-5
        )


def test_numpy_reference_matches_mpe2_integration():
    """The NumPy port with mpe2's update order reproduces mpe2 exactly (validates the port)."""
    mpe2_tag = pytest.importorskip("mpe2.simple_tag_v3")
    a, g, n_l = 3, 1, 2
    penv = mpe2_tag.parallel_env(max_cycles=STEPS, continuous_actions=True)
    penv.reset(seed=0)
    world = penv.unwrapped.world
    rng = np.random.default_rng(5)
    pos, vel, lm = _tag_start(rng, a, g, n_l)
    _set_mpe2_state(world, pos, vel, lm)
    rworld = ref.tag_world(pos[:a], vel[:a], pos[a:], vel[a:], lm, integration="mpe2")
    names = [x.name for x in world.agents]
    for _ in range(10):
        act = _actions(rng, a + g, push=(0, a)).astype(np.float64)
        m_act = _mpe2_actions(act)
        m_obs, _, _, _, _ = penv.step({k: m_act[i] for i, k in enumerate(names)})
        rworld.step(list(act))
        pred, prey = ref.tag_obs(rworld)
        for mine, theirs in zip(pred + prey, [m_obs[k] for k in names], strict=True):
            np.testing.assert_allclose(mine, theirs, atol=1e-6)


# ----------------------------------------------------------------------------- episodes, vmap


def test_episode_is_25_steps_and_auto_resets():
    env, params = mpe.make_tag(3, 1, 2)
    obs0, state = env.reset(jax.random.key(0), params)
    acts = (jnp.full((3, 5), 0.3), jnp.full((1, 5), 0.7))
    for t in range(1, STEPS + 1):
        obs, state, rew, term, trunc, info = env.step(jax.random.key(t), state, acts, params)
        assert not bool(term)
        assert bool(trunc) == (t == STEPS)
        assert bool(info["truncated"]) == (t == STEPS)
    # auto-reset: fresh episode (time 0, zero velocities), final obs kept in info
    assert int(state.time) == 0
    np.testing.assert_array_equal(state.agent_vel, 0.0)
    assert not np.allclose(obs[0], info["final_observation"][0])
    np.testing.assert_array_equal(obs[0][:, :2], 0.0)


def test_reset_ranges():
    env, params = mpe.make_tag(24, 8, 8)
    keys = jax.random.split(jax.random.key(0), 64)
    _, states = jax.vmap(env.reset, in_axes=(0, None))(keys, params)
    assert np.abs(states.agent_pos).max() <= 1.0 and np.abs(states.agent_pos).max() > 0.95
    assert np.abs(states.landmark_pos).max() <= 0.9 and np.abs(states.landmark_pos).max() > 0.85
    np.testing.assert_array_equal(states.agent_vel, 0.0)


def test_vmap_1024_envs_matches_single_env():
    env, params = mpe.make_spread(3)
    num_envs, steps = 1024, 26
    rng = np.random.default_rng(6)
    actions = rng.uniform(0, 1, (steps, num_envs, 3, 5)).astype(np.float32)
    batched_step = jax.vmap(env.step, in_axes=(0, 0, 0, None))

    @jax.jit
    def run(key, actions):
        k_reset, k_step = jax.random.split(key)
        _, state = jax.vmap(env.reset, in_axes=(0, None))(
            jax.random.split(k_reset, num_envs), params
        )

        def body(s, xs):
            k, a = xs
            o, s, r, term, trunc, info = batched_step(jax.random.split(k, num_envs), s, (a,),
                                                      params)
            return s, (info["final_observation"][0], r[0], term, trunc)

        final, ys = jax.lax.scan(body, state, (jax.random.split(k_step, steps), actions))
        return state, final, ys

    start, final, (o, r, term, trunc) = run(jax.random.key(0), actions)
    assert o.shape == (steps, num_envs, 3, 18) and r.shape == (steps, num_envs, 3)
    assert np.isfinite(np.asarray(o)).all() and np.isfinite(np.asarray(r)).all()
    assert not np.asarray(term).any()
    np.testing.assert_array_equal(np.asarray(trunc).sum(0), 1)  # exactly one end per env
    assert np.asarray(trunc)[STEPS - 1].all()
    np.testing.assert_array_equal(final.time, 1)  # one step into the second episode
    # lanes are independent: a few lanes replayed one env at a time in the NumPy reference
    for lane in (0, 7, 1023):
        world = ref.spread_world(_f32(start.agent_pos[lane]), _f32(start.agent_vel[lane]),
                                 _f32(start.landmark_pos[lane]))
        for t in range(5):
            world.step(list(actions[t, lane].astype(np.float64)))
            np.testing.assert_allclose(o[t, lane], np.stack(ref.spread_obs(world)), atol=ATOL)
            np.testing.assert_allclose(r[t, lane], ref.spread_rewards(world), atol=ATOL)


# ----------------------------------------------------------------------------- bad input


def test_bad_arguments_are_rejected():
    with pytest.raises(ValueError, match="num_agents"):
        mpe.make_spread(0)
    with pytest.raises(ValueError, match="reward"):
        mpe.make_spread(3, reward="shared")
    with pytest.raises(ValueError, match="integration"):
        mpe.make_tag(3, 1, 2, integration="rk4")
    with pytest.raises(ValueError, match="num_prey"):
        mpe.make_tag(3, 0, 2)
    with pytest.raises(ValueError, match="preset"):
        mpe.make("spread", 5)
    env, params = mpe.make_tag(3, 1, 2)
    _, state = env.reset(jax.random.key(0), params)
    with pytest.raises(ValueError, match="one per team"):
        env.step(jax.random.key(0), state, jnp.zeros((4, 5)), params)
    with pytest.raises(ValueError, match=r"'prey' must have shape \(1, 5\)"):
        env.step(jax.random.key(0), state, (jnp.zeros((3, 5)), jnp.zeros((1, 2))), params)
    with pytest.raises(ValueError, match="floating point"):
        env.step(jax.random.key(0), state, (jnp.zeros((3, 5), jnp.int32), jnp.zeros((1, 5))),
                 params)


def test_library_holds_no_timer_or_command():
    # the throughput timer and its command line are benchmarks/mpe_rollout.py (its smoke run:
    # tests/benchmarks/test_mpe_rollout.py)
    assert not hasattr(mpe, "measure_steps_per_second")
    assert not hasattr(mpe, "main")
