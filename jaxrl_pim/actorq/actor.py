"""Actor side: stepping environments with a (quantized) policy and emitting n-step transitions.

Each environment keeps a window of its last ``n`` steps; every step emits the n-step
transition of the window's oldest step (``rules.n_step_window``), so transitions never cross
an episode boundary and a truncated episode bootstraps from its true final observation
(gymnax's ``info["final_observation"]``). The first ``n - 1`` emissions of a run are marked
invalid. Everything here is for ONE environment; batch with ``jax.vmap``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxrl_pim.actorq.agent import Agent, EnvInfo
from jaxrl_pim.actorq.rules import n_step_window
from jaxrl_pim.replay import NStepTransition


class Window(NamedTuple):
    """The last ``n`` steps of one environment, oldest first."""

    obs: jax.Array  # [n, obs_dim]
    action: jax.Array  # [n, ...]
    reward: jax.Array  # [n] scaled rewards
    discount: jax.Array  # [n] 0 where terminated
    last: jax.Array  # [n] 1 where the episode ended
    next_obs: jax.Array  # [n, obs_dim] true next observations (before auto-reset)
    filled: jax.Array  # int32 steps pushed so far (saturates at n)


class EnvCarry(NamedTuple):
    """Per-environment actor state."""

    env_state: Any
    obs: jax.Array
    window: Window
    ep_return: jax.Array  # unscaled return of the running episode


class StepOut(NamedTuple):
    """What one actor step emits for one environment."""

    transition: NStepTransition
    valid: jax.Array  # bool: the window was full
    episode_return: jax.Array  # return of the episode that ended at this step (else 0)
    episode_done: jax.Array  # bool


def init_carry(env: Any, env_params: Any, agent: Agent, n: int, key: jax.Array) -> EnvCarry:
    """Reset one environment and build an empty window."""
    obs, state = env.reset(key, env_params)
    obs = obs.astype(jnp.float32)
    a = agent.action_example
    window = Window(
        obs=jnp.zeros((n,) + obs.shape, jnp.float32),
        action=jnp.zeros((n,) + a.shape, a.dtype),
        reward=jnp.zeros((n,), jnp.float32),
        discount=jnp.zeros((n,), jnp.float32),
        last=jnp.zeros((n,), jnp.float32),
        next_obs=jnp.zeros((n,) + obs.shape, jnp.float32),
        filled=jnp.zeros((), jnp.int32),
    )
    return EnvCarry(state, obs, window, jnp.zeros((), jnp.float32))


def _push(buf: jax.Array, x: jax.Array) -> jax.Array:
    return jnp.concatenate([buf[1:], x[None].astype(buf.dtype)], axis=0)


def env_step(
    env: Any,
    env_params: Any,
    agent: Agent,
    gamma: float,
    reward_scale: float,
    params: Any,
    carry: EnvCarry,
    key: jax.Array,
    explore: jax.Array,
) -> tuple[EnvCarry, StepOut]:
    """One step of one environment with policy ``params``; returns the new carry and output."""
    k_act, k_env = jax.random.split(key)
    action = agent.act(params, carry.obs, k_act, explore)
    obs2, state2, reward, terminated, truncated, info = env.step(
        k_env, carry.env_state, action, env_params
    )
    reward = jnp.asarray(reward, jnp.float32).reshape(())
    terminated = jnp.asarray(terminated).reshape(())
    last = jnp.logical_or(terminated, jnp.asarray(truncated).reshape(()))
    final_obs = info["final_observation"].astype(jnp.float32)
    w = carry.window
    n = w.reward.shape[0]
    w = Window(
        obs=_push(w.obs, carry.obs),
        action=_push(w.action, action),
        reward=_push(w.reward, reward * reward_scale),
        discount=_push(w.discount, 1.0 - terminated.astype(jnp.float32)),
        last=_push(w.last, last.astype(jnp.float32)),
        next_obs=_push(w.next_obs, final_obs),
        filled=jnp.minimum(w.filled + 1, n),
    )
    ret, boot, k = n_step_window(w.reward, w.discount, w.last, gamma)
    transition = NStepTransition(w.obs[0], w.action[0], ret, boot, w.next_obs[k])
    ep_ret = carry.ep_return + reward
    out = StepOut(transition, w.filled >= n, jnp.where(last, ep_ret, 0.0), last)
    new = EnvCarry(state2, obs2.astype(jnp.float32), w, jnp.where(last, 0.0, ep_ret))
    return new, out


def evaluate(
    env: Any, env_params: Any, agent: Agent, info: EnvInfo, params: Any, key: jax.Array,
    episodes: int,
) -> jax.Array:
    """Mean undiscounted return of ``episodes`` greedy episodes with ``params`` (jittable)."""

    def one(k):
        k_reset, k_run = jax.random.split(k)
        obs, state = env.reset(k_reset, env_params)

        def body(c, kk):
            obs, state, total, alive = c
            a = agent.greedy(params, obs.astype(jnp.float32))
            obs, state, r, term, trunc, _ = env.step(kk, state, a, env_params)
            total = total + alive * jnp.asarray(r, jnp.float32).reshape(())
            alive = alive * (1.0 - jnp.logical_or(term, trunc).astype(jnp.float32).reshape(()))
            return (obs, state, total, alive), None

        init = (obs, state, jnp.zeros((), jnp.float32), jnp.ones((), jnp.float32))
        (_, _, total, _), _ = jax.lax.scan(body, init, jax.random.split(k_run, info.max_steps))
        return total

    return jnp.mean(jax.vmap(one)(jax.random.split(key, episodes)))
