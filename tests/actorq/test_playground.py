"""The MuJoCo Playground adapter (jaxrl_pim.envs.playground) and ActorQ on Playground tasks.

The adapter's gymnax semantics (auto-reset, ``final_observation``, time limit vs termination,
reward passthrough, jit + vmap) are checked against a pure-JAX stub with closed-form dynamics
that mimics Playground's ``MjxEnv`` API, so they run without the ``playground`` extra; the last
tests use the real ``CartpoleBalance`` and skip when ``mujoco_playground`` is not installed.
"""

from __future__ import annotations

import sys
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import struct

from jaxrl_pim.actorq.config import ActorQD4PGConfig, ActorQDQNConfig, default_config
from jaxrl_pim.envs.playground import PlaygroundEnv, parse_name

# ------------------------------------------------------------------------------ the stub


@struct.dataclass
class StubState:
    """Playground's ``mjx_env.State`` fields."""

    data: jax.Array  # [2]: position x, step count k
    obs: jax.Array
    reward: jax.Array
    done: jax.Array
    metrics: dict[str, Any]
    info: dict[str, Any]


X0_MAX = 0.5  # reset: x ~ U[0, 0.5)
GOAL = 3.0  # terminates (done = 1.0) once x >= GOAL


class StubEnv:
    """x' = x + a[0], k' = k + 1, obs = [x, k], reward = 10 x', done = x' >= GOAL."""

    observation_size = 2
    action_size = 1

    def reset(self, rng: jax.Array) -> StubState:
        x = jax.random.uniform(rng, (), maxval=X0_MAX)
        data = jnp.stack([x, jnp.float32(0.0)])
        return StubState(data, data, jnp.float32(0.0), jnp.float32(0.0),
                         {"x": x}, {"rng": rng, "time_out": jnp.float32(0.0)})

    def step(self, state: StubState, action: jax.Array) -> StubState:
        data = state.data + jnp.stack([action[0], jnp.float32(1.0)])
        done = (data[0] >= GOAL).astype(jnp.float32)
        return StubState(data, data, 10.0 * data[0], done, {"x": data[0]}, state.info)


def stub_env(max_steps: int) -> PlaygroundEnv:
    return PlaygroundEnv("Stub", max_steps=max_steps, env=StubEnv())


def x0(key: jax.Array) -> float:
    return float(jax.random.uniform(key, (), maxval=X0_MAX))


def reset_key(step_key: jax.Array) -> jax.Array:
    """The key the adapter resets with after an episode ends (gymnax's split)."""
    return jax.random.split(step_key)[1]


# ------------------------------------------------------------------- adapter semantics


def test_reset_shapes_spaces_and_params():
    env = stub_env(7)
    key = jax.random.PRNGKey(3)
    obs, state = env.reset(key, env.default_params)
    assert obs.dtype == jnp.float32 and obs.shape == (2,)
    np.testing.assert_allclose(np.asarray(obs), [x0(key), 0.0], rtol=1e-6)
    assert int(state.time) == 0
    assert env.default_params.max_steps_in_episode == 7
    assert env.observation_space(env.default_params).shape == (2,)
    space = env.action_space(env.default_params)
    assert (space.low, space.high, space.shape) == (-1.0, 1.0, (1,))


def test_time_limit_truncates_and_auto_resets_with_final_observation():
    env = stub_env(5)
    params = env.default_params
    obs, state = env.reset(jax.random.PRNGKey(0), params)
    start = float(obs[0])
    step = jax.jit(env.step)
    keys = jax.random.split(jax.random.PRNGKey(1), 5)
    for t in range(1, 6):
        obs, state, reward, term, trunc, info = step(keys[t - 1], state, jnp.array([0.1]),
                                                     params)
        x = start + 0.1 * t
        np.testing.assert_allclose(float(reward), 10 * x, rtol=1e-5)  # the step's reward
        np.testing.assert_allclose(np.asarray(info["final_observation"]), [x, t], rtol=1e-5)
        assert not bool(term)
        assert bool(trunc) == (t == 5)
        assert bool(info["truncated"]) == (t == 5) and not bool(info["terminated"])
        if t < 5:
            np.testing.assert_allclose(np.asarray(obs), [x, t], rtol=1e-5)
            assert int(state.time) == t
    # the 5th step hit the limit: a fresh episode from the step key's reset half
    np.testing.assert_allclose(np.asarray(obs), [x0(reset_key(keys[4])), 0.0], rtol=1e-6)
    assert int(state.time) == 0
    np.testing.assert_allclose(np.asarray(state.inner.data), np.asarray(obs))


def test_termination_is_not_truncation_and_both_can_coincide():
    key = jax.random.PRNGKey(2)
    for limit, want_trunc in ((100, False), (3, True)):
        env = stub_env(limit)
        obs, state = env.reset(key)
        start = float(obs[0])
        out = []
        for t in range(3):
            k = jax.random.PRNGKey(10 + t)
            obs, state, r, term, trunc, info = env.step(k, state, jnp.array([1.0]))
            out.append((bool(term), bool(trunc)))
        # x = start + 3 >= GOAL at the third step (start >= 0) and not before (start < 0.5)
        assert out[:2] == [(False, False), (False, False)]
        assert out[2] == (True, want_trunc)
        np.testing.assert_allclose(np.asarray(info["final_observation"]), [start + 3, 3],
                                   rtol=1e-6)
        np.testing.assert_allclose(float(r), 10 * (start + 3), rtol=1e-6)
        np.testing.assert_allclose(np.asarray(obs), [x0(reset_key(k)), 0.0], rtol=1e-6)
        assert int(state.time) == 0


def test_actions_are_clipped_to_unit_range():
    env = stub_env(10)
    obs, state = env.reset(jax.random.PRNGKey(0))
    obs2, *_ = env.step(jax.random.PRNGKey(1), state, jnp.array([5.0]))
    obs3, *_ = env.step(jax.random.PRNGKey(1), state, jnp.array([-5.0]))
    np.testing.assert_allclose(float(obs2[0] - obs[0]), 1.0, rtol=1e-6)
    np.testing.assert_allclose(float(obs3[0] - obs[0]), -1.0, rtol=1e-6)


def test_jit_vmap_rollout_matches_closed_form():
    limit, steps, n = 4, 9, 4
    env = stub_env(limit)
    actions = jnp.array([[0.0], [0.1], [0.25], [1.0]])  # the last env terminates at step 3
    reset_keys = jax.random.split(jax.random.PRNGKey(5), n)
    step_keys = jax.random.split(jax.random.PRNGKey(6), steps * n).reshape(steps, n, 2)

    @jax.jit
    def rollout(reset_keys, step_keys):
        obs, state = jax.vmap(env.reset)(reset_keys)

        def body(state, ks):
            obs, state, r, term, trunc, info = jax.vmap(env.step)(ks, state, actions)
            return state, (obs, r, term, trunc, info["final_observation"])

        return obs, jax.lax.scan(body, state, step_keys)[1]

    obs0, (obs, rew, term, trunc, final) = rollout(reset_keys, step_keys)
    assert obs.shape == (steps, n, 2) and obs.dtype == jnp.float32
    for e in range(n):
        a = float(actions[e, 0])
        x, k = x0(reset_keys[e]), 0
        np.testing.assert_allclose(np.asarray(obs0[e]), [x, 0.0], rtol=1e-6)
        for t in range(steps):
            x, k = x + a, k + 1
            want_term, want_trunc = x >= GOAL, k >= limit
            assert (bool(term[t, e]), bool(trunc[t, e])) == (want_term, want_trunc), (t, e)
            np.testing.assert_allclose(np.asarray(final[t, e]), [x, k], rtol=1e-5)
            np.testing.assert_allclose(float(rew[t, e]), 10 * x, rtol=1e-5)
            if want_term or want_trunc:
                x, k = x0(reset_key(step_keys[t, e])), 0
            np.testing.assert_allclose(np.asarray(obs[t, e]), [x, k], rtol=1e-5)
    # episodes per env over 9 steps: limit 4 -> 2 ends; the fast env ends every 3 steps -> 3
    np.testing.assert_array_equal(np.asarray(term | trunc).sum(0), [2, 2, 2, 3])


def test_structured_observations_are_rejected():
    class DictObs(StubEnv):
        observation_size = {"state": (2,), "privileged_state": (4,)}

    with pytest.raises(ValueError, match="flat vector observations"):
        PlaygroundEnv("DictObs", max_steps=10, env=DictObs())


# ------------------------------------------------------------------- names and configs


def test_names_parse_and_configs_accept_playground_for_d4pg_only():
    assert parse_name("playground/CartpoleBalance") == ("CartpoleBalance", None)
    assert parse_name("playground/CartpoleBalance@200") == ("CartpoleBalance", 200)
    cfg = default_config("d4pg", "playground/CartpoleBalance")
    assert (cfg.algo, cfg.env_name, cfg.n_step, cfg.reward_scale) == (
        "d4pg", "playground/CartpoleBalance", 5, 1.0)
    with pytest.raises(ValueError, match="algo='d4pg'"):
        ActorQDQNConfig(env_name="playground/CartpoleBalance")
    for bad in ("playground/", "playground/Cartpole@0", "playground/Cartpole@x",
                "playground/a/b"):
        with pytest.raises(ValueError, match="playground"):
            ActorQD4PGConfig(env_name=bad)
    # gymnax names keep their old validation
    with pytest.raises(ValueError, match="env_name"):
        ActorQD4PGConfig(env_name="CartPole-v1")


def test_missing_playground_install_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "mujoco_playground", None)  # import now fails
    with pytest.raises(ImportError, match=r"pip install \"jaxrl_pim\[playground\]\""):
        PlaygroundEnv("CartpoleBalance")


# ------------------------------------------------------------- the real Playground task


def test_real_cartpole_adapter_matches_playground_and_d4pg_runs():
    pytest.importorskip("mujoco_playground")
    from jaxrl_pim.envs import make_with_info
    from tests.support.actorq import run_tiny_d4pg

    with pytest.raises(ValueError, match="CartpoleBalance"):
        PlaygroundEnv("NoSuchTask")

    env, params, info = make_with_info("playground/CartpoleBalance")
    assert (info.obs_dim, info.action_dim, info.discrete) == (5, 1, False)
    assert (info.action_low, info.action_high, info.max_steps) == (-1.0, 1.0, 1000)
    direct = env.unwrapped
    steps = 6
    actions = jnp.sin(jnp.arange(steps, dtype=jnp.float32))[:, None]  # in [-1, 1]

    @partial(jax.jit)  # MJX compiles slowly
    def both(key):
        obs, state = env.reset(key, params)
        ref = direct.reset(key)

        def body(c, xs):
            state, ref = c
            k, a = xs
            obs, state, r, term, trunc, _ = env.step(k, state, a, params)
            ref = direct.step(ref, a)
            return (state, ref), (obs, r, term | trunc, ref.obs, ref.reward)

        ks = jax.random.split(jax.random.PRNGKey(9), steps)
        return obs, ref.obs, jax.lax.scan(body, (state, ref), (ks, actions))[1]

    obs0, ref0, (obs, rew, ended, ref_obs, ref_rew) = both(jax.random.PRNGKey(0))
    np.testing.assert_array_equal(np.asarray(obs0), np.asarray(ref0))
    np.testing.assert_allclose(np.asarray(obs), np.asarray(ref_obs), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(np.asarray(rew), np.asarray(ref_rew), rtol=1e-6)
    assert not np.any(np.asarray(ended))
    assert np.all(np.asarray(rew) > 0.5)  # the pole starts near upright: reward near 1
    assert float(jnp.abs(obs[-1] - obs0).max()) > 1e-3  # the physics moved

    # a tiny single-program D4PG run with a 25-step time limit: 2 actors x 100 iterations
    ret = run_tiny_d4pg("playground/CartpoleBalance@25", 8, total_timesteps=200,
                        learning_starts=32, batch_size=16, actor_update_period=10,
                        buffer_capacity=256)
    # 8 episodes of 25 steps, DM Control rewards are in [0, 1] per step
    assert ret.size == 8 and np.all((ret > 0) & (ret <= 25)), ret
