"""Jitted collection of offline datasets with a behaviour policy.

``collect`` runs ``num_envs`` copies of a gymnax environment in parallel (vmap) for
``ceil(M / num_envs)`` steps each under ``lax.scan`` and lays the streams out env-major,
so every trajectory is contiguous and in time order. Rows record the true next state:
episodes that end (terminal, or cut by the time limit) are reset *after* the row is written.
A time-limit cut is recorded with ``terminated=False`` (bootstrap normally).
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl_pim.checks import check_float, check_int
from jaxrl_pim.data.transitions import Transitions, compact

#: A behaviour policy maps ``(key, state int32 [])`` to an action (int32 []).
Policy = Callable[[jax.Array, jax.Array], jax.Array]


def uniform_policy(num_actions: int) -> Policy:
    """Uniform-random behaviour policy over ``num_actions`` actions."""
    check_int("num_actions", num_actions, 1)

    def policy(key: jax.Array, state: jax.Array) -> jax.Array:
        del state
        return jax.random.randint(key, (), 0, num_actions)

    return policy


def epsilon_greedy_policy(q_table: jax.Array, epsilon: float) -> Policy:
    """Epsilon-greedy over ``q_table`` ``[S, A]`` (greedy ties go to the lowest action)."""
    epsilon = check_float("epsilon", epsilon, 0.0, 1.0)
    q_table = jnp.asarray(q_table, jnp.float32)

    def policy(key: jax.Array, state: jax.Array) -> jax.Array:
        k1, k2 = jax.random.split(key)
        greedy = jnp.argmax(q_table[state])
        rand = jax.random.randint(k2, (), 0, q_table.shape[1])
        return jnp.where(jax.random.uniform(k1) < epsilon, rand, greedy)

    return policy


def boltzmann_policy(q_table: jax.Array, temperature: float) -> Policy:
    """Softmax policy ``pi(a|s) ~ exp(Q[s, a] / temperature)`` over ``q_table`` ``[S, A]``."""
    temperature = check_float("temperature", temperature, 0.0, lo_open=True)
    q_table = jnp.asarray(q_table, jnp.float32)

    def policy(key: jax.Array, state: jax.Array) -> jax.Array:
        return jax.random.categorical(key, q_table[state] / temperature)

    return policy


def collect(
    env,
    env_params,
    key: jax.Array,
    num_transitions: int,
    policy: Policy | None = None,
    num_envs: int | None = None,
) -> Transitions:
    """Collect ``num_transitions`` rows with ``policy`` (uniform random by default).

    Args:
      env, env_params: a gymnax environment with integer observations (tabular).
      key: PRNG key.
      num_transitions: rows M to return.
      policy: behaviour policy; default :func:`uniform_policy`.
      num_envs: parallel environment copies (default ``min(1024, M)``).

    Returns:
      Host NumPy :class:`Transitions` with arrays ``[M]`` in compact dtypes.
    """
    m = check_int("num_transitions", num_transitions, 1)
    e = check_int("num_envs", num_envs if num_envs is not None else min(1024, m), 1)
    steps = -(-m // e)
    num_actions = env.action_space(env_params).n
    num_states = env.observation_space(env_params).n
    policy = policy if policy is not None else uniform_policy(num_actions)
    rows = _collect_jit(env, env_params, policy, e, steps)(key)
    rows = jax.tree.map(lambda x: np.asarray(x).reshape(-1)[:m], rows)
    return compact(Transitions(*rows), num_states)


def collect_per_agent(
    env,
    env_params,
    key: jax.Array,
    num_agents: int,
    num_transitions: int,
    policy: Policy | None = None,
) -> Transitions:
    """One dataset per agent (independent keys), arrays ``[K, n]``: agent-major, time order."""
    k = check_int("num_agents", num_agents, 1)
    n = check_int("num_transitions", num_transitions, 1)
    num_actions = env.action_space(env_params).n
    num_states = env.observation_space(env_params).n
    policy = policy if policy is not None else uniform_policy(num_actions)
    run = _collect_jit(env, env_params, policy, 1, n)
    rows = jax.jit(jax.vmap(run))(jax.random.split(key, k))
    rows = jax.tree.map(lambda x: np.asarray(x).reshape(k, n), rows)
    return compact(Transitions(*rows), num_states)


def _collect_jit(env, env_params, policy: Policy, num_envs: int, steps: int):
    max_steps = env_params.max_steps_in_episode

    def one_env(key: jax.Array):
        k_reset, k_run = jax.random.split(key)
        carry0 = env.reset_env(k_reset, env_params)

        def step(carry, k):
            s, env_state = carry
            k_act, k_step, k_reset = jax.random.split(k, 3)
            a = policy(k_act, s)
            s2, next_state, reward, terminated, _ = env.step_env(k_step, env_state, a, env_params)
            done = jnp.logical_or(terminated, next_state.time >= max_steps)
            reset = env.reset_env(k_reset, env_params)
            carry = jax.tree.map(lambda r, n: jnp.where(done, r, n), reset, (s2, next_state))
            return carry, (s, a, reward.astype(jnp.float32), s2, terminated)

        _, rows = jax.lax.scan(step, carry0, jax.random.split(k_run, steps))
        return rows

    @jax.jit
    def run(key: jax.Array):
        return jax.vmap(one_env)(jax.random.split(key, num_envs))  # each field [E, T]

    return run
