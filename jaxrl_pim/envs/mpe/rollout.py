"""A jitted random-action rollout of vmapped particle worlds (the throughput workload).

``make_rollout(env, params, num_envs, num_steps)`` is pure JAX; ``benchmarks/mpe_rollout.py``
times it.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxrl_pim.checks import check_int
from jaxrl_pim.envs.mpe.world import MPEParams, ParticleWorld


def make_rollout(env: ParticleWorld, params: MPEParams, num_envs: int, num_steps: int):
    """A jitted ``rollout(key) -> summed reward`` stepping ``num_envs`` vmapped envs for
    ``num_steps`` steps (with auto-reset) under uniform-[0, 1) random actions.

    It returns a scalar so that timing it covers the whole computation but no large
    transfer (``benchmarks/mpe_rollout.py`` measures env steps per second with it).
    """
    check_int("num_envs", num_envs, 1)
    check_int("num_steps", num_steps, 1)
    step = jax.vmap(env.step, in_axes=(0, 0, 0, None))

    def one_step(carry, key):
        state, acc = carry
        k_act, k_step = jax.random.split(key)
        keys = jax.random.split(k_act, len(env.teams))
        actions = tuple(
            jax.random.uniform(k, (num_envs, t.num_agents, t.action_dim))
            for k, t in zip(keys, env.teams, strict=True)
        )
        _, state, rewards, _, _, _ = step(jax.random.split(k_step, num_envs), state, actions,
                                          params)
        acc = acc + sum(jnp.sum(r) for r in rewards)
        return (state, acc), None

    @jax.jit
    def rollout(key: jax.Array) -> jax.Array:
        k_reset, k_run = jax.random.split(key)
        _, state = jax.vmap(env.reset, in_axes=(0, None))(
            jax.random.split(k_reset, num_envs), params
        )
        (_, acc), _ = jax.lax.scan(
            one_step, (state, jnp.zeros((), jnp.float32)), jax.random.split(k_run, num_steps)
        )
        return acc

    return rollout
