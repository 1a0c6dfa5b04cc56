"""The JaxMARL adapters against JaxMARL itself.

* Parity: JaxMARL's ``MPE_simple_spread_v3`` / ``MPE_simple_tag_v3`` and the library's spread /
  tag worlds with matching options (``reward="pettingzoo"``, ``integration="mpe2"``), started
  from the same state every episode and stepped with the same actions (JaxMARL's action entries
  mapped by ``ACTION_PERMUTATION``), give the same observations, rewards and positions to float
  tolerance over 300 steps (12 episodes of 25).
* In: ``from_jaxmarl`` groups simple_tag's agents into two teams of different observation
  sizes, and its steps equal JaxMARL's own (argmax of the action vectors for discrete agents).
* Out: ``to_jaxmarl`` worlds run JaxMARL's own rollout code (its ``LogWrapper``, ``step`` with
  auto-reset, spaces' ``sample``) under ``jit``/``vmap``/``scan``, and a wrapped spread-3
  stepped with discrete actions equals JaxMARL's spread.
* Unsupported environments are refused with one line.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl_pim.envs import mpe
from jaxrl_pim.envs.jaxmarl_adapter import (
    ACTION_PERMUTATION,
    SUPPORTED,
    check_supported,
    from_jaxmarl,
    to_jaxmarl,
)
from jaxrl_pim.marl import MARLConfig
from tests.support.marl import JAXMARL_MARKS

pytestmark = JAXMARL_MARKS


@pytest.fixture(scope="module")
def jaxmarl():
    """JaxMARL, imported when a test of this module first runs (not at collection)."""
    import jaxmarl

    return jaxmarl

EPISODES, STEPS = 12, 25
ATOL = 1e-4




def _library_state(jm_state, n_agents: int) -> mpe.MPEState:
    return mpe.MPEState(agent_pos=jm_state.p_pos[:n_agents],
                        agent_vel=jm_state.p_vel[:n_agents],
                        landmark_pos=jm_state.p_pos[n_agents:], time=jnp.zeros((), jnp.int32))


def _parity(jm_env, world, params, key) -> dict[str, float]:
    """Max abs differences (obs, rewards, positions) over EPISODES x STEPS steps."""
    agents = jm_env.agents
    n = len(agents)

    @jax.jit
    def episode(key):
        k0, k1 = jax.random.split(key)
        _, jm_state = jm_env.reset(k0)
        lib_state = _library_state(jm_state, n)

        def step(carry, k):
            jm_state, lib_state = carry
            a = jax.random.uniform(k, (n, 5))
            jo, jm_state, jr, _, _ = jm_env.step_env(k, jm_state,
                                                     {ag: a[i] for i, ag in enumerate(agents)})
            lo, lib_state, lr, _, _ = world.step_env(k, lib_state,
                                                     world._split(a[:, ACTION_PERMUTATION]),
                                                     params)
            d_obs = jnp.max(jnp.stack([jnp.max(jnp.abs(jo[ag] - row)) for ag, row in
                                       zip(agents, [r for x in lo for r in x], strict=True)]))
            d_rew = jnp.max(jnp.abs(jnp.stack([jr[ag] for ag in agents])
                                    - jnp.concatenate(lr)))
            d_pos = jnp.maximum(jnp.max(jnp.abs(jm_state.p_pos[:n] - lib_state.agent_pos)),
                                jnp.max(jnp.abs(jm_state.p_vel[:n] - lib_state.agent_vel)))
            return (jm_state, lib_state), jnp.stack([d_obs, d_rew, d_pos])

        _, d = jax.lax.scan(step, (jm_state, lib_state), jax.random.split(k1, STEPS))
        return d.max(axis=0)

    d = np.max([np.asarray(episode(k)) for k in jax.random.split(key, EPISODES)], axis=0)
    return {"obs": float(d[0]), "reward": float(d[1]), "state": float(d[2])}


@pytest.mark.parametrize("num_agents", [3, 5])
def test_spread_parity(jaxmarl, num_agents):
    jm_env = jaxmarl.make("MPE_simple_spread_v3", num_agents=num_agents,
                          num_landmarks=num_agents, action_type="Continuous")
    world, params = mpe.make_spread(num_agents, reward="pettingzoo", integration="mpe2")
    d = _parity(jm_env, world, params, jax.random.PRNGKey(num_agents))
    assert max(d.values()) < ATOL, d


def test_tag_parity(jaxmarl):
    jm_env = jaxmarl.make("MPE_simple_tag_v3", action_type="Continuous")
    world, params = mpe.make_tag(3, 1, 2, integration="mpe2")
    d = _parity(jm_env, world, params, jax.random.PRNGKey(7))
    assert max(d.values()) < ATOL, d


def test_parity_fails_with_the_original_integration(jaxmarl):
    """The parity check can fail: the original integration order (velocity first) differs."""
    jm_env = jaxmarl.make("MPE_simple_spread_v3", action_type="Continuous")
    world, params = mpe.make_spread(3, reward="pettingzoo", integration="original")
    assert _parity(jm_env, world, params, jax.random.PRNGKey(0))["state"] > 1e-2


def test_from_jaxmarl_tag_teams_and_steps(jaxmarl):
    env, params = from_jaxmarl("jaxmarl:MPE_simple_tag_v3")
    assert params is None
    assert [(t.name, t.num_agents, t.obs_dim, t.action_dim) for t in env.teams] == [
        ("adversary", 3, 16, 5), ("agent", 1, 14, 5)]
    assert env.team_agents == (("adversary_0", "adversary_1", "adversary_2"), ("agent_0",))
    raw = jaxmarl.make("MPE_simple_tag_v3")
    key = jax.random.PRNGKey(3)
    obs, state = env.reset(key)
    r_obs, r_state = raw.reset(key)
    np.testing.assert_array_equal(obs[1][0], r_obs["agent_0"])
    for t in range(30):
        k = jax.random.fold_in(key, t)
        acts = (jax.random.uniform(k, (3, 5)), jax.random.uniform(jax.random.fold_in(k, 1),
                                                                  (1, 5)))
        obs, state, rew, done, _ = env.step_env(k, state, acts)
        disc = {f"adversary_{i}": jnp.argmax(acts[0][i]) for i in range(3)}
        disc["agent_0"] = jnp.argmax(acts[1][0])
        r_obs, r_state, r_rew, r_done, _ = raw.step_env(k, r_state, disc)
        for i in range(3):
            np.testing.assert_array_equal(obs[0][i], r_obs[f"adversary_{i}"])
            assert rew[0][i] == r_rew[f"adversary_{i}"]
        np.testing.assert_array_equal(obs[1][0], r_obs["agent_0"])
        assert rew[1][0] == r_rew["agent_0"]
        assert bool(done) == bool(r_done["__all__"])


def test_unsupported_envs_are_one_line(jaxmarl):
    with pytest.raises(ValueError, match=r"^jaxmarl:SMAX is not supported.*supported: "
                                         r"MPE_simple_v3") as err:
        check_supported("jaxmarl:SMAX")
    assert "\n" not in str(err.value)
    with pytest.raises(ValueError, match="is not a registered JaxMARL environment"):
        from_jaxmarl("jaxmarl:MPE_nonexistent")
    with pytest.raises(ValueError, match="jaxmarl:hanabi"):
        MARLConfig(env="jaxmarl:hanabi")
    for name in SUPPORTED:
        assert name in jaxmarl.registered_envs
    # and every registered MPE world is one of them (jaxrl_pim.choices keeps the list without
    # importing JaxMARL; a JaxMARL that registers another world shows here)
    assert sorted(SUPPORTED) == sorted(n for n in jaxmarl.registered_envs if n.startswith("MPE_"))


def _jaxmarl_rollout(env, num_envs: int, steps: int, key):
    """A rollout written the way JaxMARL's baselines write theirs: LogWrapper, vmapped
    reset/step with auto-reset, actions sampled from the action spaces, inside lax.scan."""
    from jaxmarl.wrappers.baselines import LogWrapper

    env = LogWrapper(env)
    k_reset, k_run = jax.random.split(key)
    obs, state = jax.vmap(env.reset)(jax.random.split(k_reset, num_envs))

    def step(carry, k):
        obs, state = carry
        k_act, k_env = jax.random.split(k)
        ks = jax.random.split(k_act, env.num_agents)
        actions = {a: jax.vmap(env.action_space(a).sample)(jax.random.split(ks[i], num_envs))
                   for i, a in enumerate(env.agents)}
        obs, state, reward, done, info = jax.vmap(env.step)(
            jax.random.split(k_env, num_envs), state, actions)
        return (obs, state), (reward, done["__all__"], info["returned_episode_returns"])

    (obs, _), out = jax.jit(lambda k: jax.lax.scan(step, (obs, state),
                                                   jax.random.split(k, steps)))(k_run)
    return obs, out


@pytest.mark.parametrize("scenario, preset, action_type", [
    ("spread", 3, "Discrete"), ("spread", 12, "Continuous"), ("tag", 6, "Discrete")])
def test_jaxmarl_rollout_runs_on_library_worlds(scenario, preset, action_type):
    world, params = mpe.make(scenario, preset)
    env = to_jaxmarl((world, params), action_type=action_type)
    assert env.num_agents == world.num_agents == len(env.agents)
    obs, (rewards, dones, returns) = _jaxmarl_rollout(env, 4, 60, jax.random.PRNGKey(0))
    for t, agents in zip(world.teams, env.agent_classes.values(), strict=True):
        for a in agents:
            assert obs[a].shape == (4, t.obs_dim) == (4, *env.observation_space(a).shape)
    # episodes of 25 steps: done at steps 25 and 50, then auto-reset
    assert np.flatnonzero(np.asarray(dones)[:, 0]).tolist() == [24, 49]
    ret = np.asarray(returns)[:, :, 0]  # [steps, envs, agents] in env.agents order
    r = np.asarray(rewards[env.agents[0]])
    np.testing.assert_allclose(ret[24], r[:25].sum(axis=0), rtol=1e-5)
    assert np.all(np.isfinite(r))


def test_to_jaxmarl_spread_equals_jaxmarl_spread_with_discrete_actions(jaxmarl):
    world, params = mpe.make_spread(3, reward="pettingzoo", integration="mpe2")
    ours = to_jaxmarl(world, params)
    theirs = jaxmarl.make("MPE_simple_spread_v3")
    key = jax.random.PRNGKey(11)
    _, ts = theirs.reset(key)
    _, os_ = ours.reset(key)
    os_ = os_.replace(world=_library_state(ts, 3))
    for t in range(40):
        k = jax.random.fold_in(key, t)
        acts = {a: jax.random.randint(jax.random.fold_in(k, i), (), 0, 5)
                for i, a in enumerate(theirs.agents)}
        to, ts, tr, _, _ = theirs.step_env(k, ts, acts)
        oo, os_, orw, _, _ = ours.step_env(k, os_, acts)
        for a in theirs.agents:
            np.testing.assert_allclose(oo[a], to[a], atol=ATOL)
            np.testing.assert_allclose(orw[a], tr[a], atol=ATOL)
