"""The actor's n-step adder on a real gymnax stream (terminations and truncations) against
a NumPy loop over the raw transitions."""

from __future__ import annotations

import jax
import numpy as np

from jaxrl_pim.actorq.actor import env_step, init_carry
from jaxrl_pim.actorq.algorithms import make_agent
from jaxrl_pim.actorq.config import default_config
from jaxrl_pim.envs import make_with_info


def test_actor_emits_n_step_transitions_matching_numpy():
    n, gamma, scale, T = 4, 0.9, 0.5, 200
    cfg = default_config("dqn", "CartPole-v1", hidden=(4,), n_step=n, gamma=gamma)
    env, env_params, info = make_with_info(cfg.env_name)
    env_params = env_params.replace(max_steps_in_episode=15)  # force truncations too
    agent = make_agent(cfg, info)
    params = agent.policy_params(agent.init(jax.random.PRNGKey(0)))

    def body(carry, key):
        carry, out = env_step(env, env_params, agent, gamma, scale, params, carry, key, 1.0)
        w = carry.window  # newest raw step sits at the end of the window
        raw = (w.obs[-1], w.action[-1], w.reward[-1], w.discount[-1], w.last[-1], w.next_obs[-1])
        return carry, (out, raw)

    carry = init_carry(env, env_params, agent, n, jax.random.PRNGKey(1))
    _, (out, raw) = jax.jit(lambda c: jax.lax.scan(body, c, jax.random.split(
        jax.random.PRNGKey(2), T)))(carry)
    obs, act, rew, disc, last, nxt = (np.asarray(x) for x in raw)
    term = (disc == 0) & (last == 1)
    trunc = (disc == 1) & (last == 1)
    assert term.sum() >= 3 and trunc.sum() >= 3
    np.testing.assert_array_equal(np.asarray(out.valid), np.arange(T) >= n - 1)
    # the observation after a non-final step is the next step's observation
    cont = last[:-1] == 0
    np.testing.assert_array_equal(nxt[:-1][cont], obs[1:][cont])
    tr = jax.tree.map(np.asarray, out.transition)
    for s in range(n - 1, T):
        t = s - n + 1  # emitted at step s: the n-step transition starting at t
        g, boot, k = 0.0, gamma**n, t + n - 1
        for j in range(n):
            g += gamma**j * rew[t + j]
            if last[t + j]:
                boot, k = (0.0 if term[t + j] else gamma ** (j + 1)), t + j
                break
        np.testing.assert_array_equal(tr.obs[s], obs[t])
        assert tr.action[s] == act[t]
        np.testing.assert_allclose(tr.reward[s], g, rtol=1e-5)
        np.testing.assert_allclose(tr.discount[s], boot, rtol=1e-6)
        np.testing.assert_array_equal(tr.next_obs[s], nxt[k])
    # CartPole pays 1 per step; the actor stores scaled rewards, reports unscaled returns
    np.testing.assert_allclose(rew, scale)
    ep = np.asarray(out.episode_return)[np.asarray(out.episode_done)]
    lengths = np.diff(np.concatenate([[-1], np.flatnonzero(last)]))
    np.testing.assert_allclose(ep, lengths)
