"""Jitted collection of offline datasets with a behaviour policy.

``collect`` runs ``num_envs`` copies of a gymnax environment in parallel (vmap) for
``ceil(M / num_envs)`` steps each under ``lax.scan`` and lays the streams out env-major,
so every trajectory is contiguous and in time order. Each stream depends only on its own key,
so a range of rows can be collected alone (``rows=``, e.g. one process's lanes), giving
exactly those rows of the full dataset. Rows record the true next state:
episodes that end (terminal, or cut by the time limit) are reset *after* the row is written.
A time-limit cut is recorded with ``terminated=False`` (bootstrap normally).
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl_pim.checks import check_float, check_int
from jaxrl_pim.data.transitions import Dataset, compact

#: A behaviour policy maps ``(key, state int32 [])`` to an action (int32 []); it collects
#: datasets (not :class:`jaxrl_pim.rl.ParametricPolicy`, a parametrised network).
BehaviourPolicy = Callable[[jax.Array, jax.Array], jax.Array]


def uniform_policy(num_actions: int) -> BehaviourPolicy:
    """Uniform-random behaviour policy over ``num_actions`` actions."""
    check_int("num_actions", num_actions, 1)

    def policy(key: jax.Array, state: jax.Array) -> jax.Array:
        del state
        return jax.random.randint(key, (), 0, num_actions)

    return policy


def epsilon_greedy_policy(q_table: jax.Array, epsilon: float) -> BehaviourPolicy:
    """Epsilon-greedy over ``q_table`` ``[S, A]`` (greedy ties go to the lowest action)."""
    epsilon = check_float("epsilon", epsilon, 0.0, 1.0)
    q_table = jnp.asarray(q_table, jnp.float32)

    def policy(key: jax.Array, state: jax.Array) -> jax.Array:
        k1, k2 = jax.random.split(key)
        greedy = jnp.argmax(q_table[state])
        rand = jax.random.randint(k2, (), 0, q_table.shape[1])
        return jnp.where(jax.random.uniform(k1) < epsilon, rand, greedy)

    return policy


def boltzmann_policy(q_table: jax.Array, temperature: float) -> BehaviourPolicy:
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
    policy: BehaviourPolicy | None = None,
    num_envs: int | None = None,
    rows: tuple[int, int] | None = None,
) -> Dataset:
    """Collect ``num_transitions`` rows with ``policy`` (uniform random by default).

    Args:
      env, env_params: a gymnax environment with integer observations (tabular).
      key: PRNG key.
      num_transitions: rows M of the whole dataset.
      policy: behaviour policy; default :func:`uniform_policy`.
      num_envs: parallel environment copies (default ``min(1024, M)``).
      rows: ``(start, stop)`` to return only rows ``start:stop`` of the M-row dataset,
        bit for bit, running only the environment streams they come from.

    Returns:
      Host NumPy :class:`Dataset` with arrays ``[M]`` (``[stop - start]``) in compact
      dtypes.
    """
    m = check_int("num_transitions", num_transitions, 1)
    e = check_int("num_envs", num_envs if num_envs is not None else min(1024, m), 1)
    start, stop = (0, m) if rows is None else rows
    start = check_int("rows start", start, 0, m - 1)
    stop = check_int("rows stop", stop, start + 1, m)
    steps = -(-m // e)
    first, last = start // steps, -(-stop // steps)  # the streams holding rows start:stop
    num_actions = env.action_space(env_params).n
    num_states = env.observation_space(env_params).n
    policy = policy if policy is not None else uniform_policy(num_actions)
    out = _collect_jit(env, env_params, policy, e, steps, (first, last))(key)
    offset = first * steps
    out = jax.tree.map(lambda x: np.asarray(x).reshape(-1)[start - offset:stop - offset], out)
    return compact(Dataset(*out), num_states)


def collect_per_agent(
    env,
    env_params,
    key: jax.Array,
    num_agents: int,
    num_transitions: int,
    policy: BehaviourPolicy | None = None,
    agents: tuple[int, int] | None = None,
) -> Dataset:
    """One dataset per agent (independent keys), arrays ``[K, n]``: agent-major, time order.

    ``agents=(start, stop)`` returns only those agents' datasets ``[stop - start, n]``, bit for
    bit the same as in the full call.
    """
    k = check_int("num_agents", num_agents, 1)
    n = check_int("num_transitions", num_transitions, 1)
    start, stop = (0, k) if agents is None else agents
    start = check_int("agents start", start, 0, k - 1)
    stop = check_int("agents stop", stop, start + 1, k)
    num_actions = env.action_space(env_params).n
    num_states = env.observation_space(env_params).n
    policy = policy if policy is not None else uniform_policy(num_actions)
    run = _collect_jit(env, env_params, policy, 1, n)
    rows = jax.jit(jax.vmap(run))(jax.random.split(key, k)[start:stop])
    rows = jax.tree.map(lambda x: np.asarray(x).reshape(stop - start, n), rows)
    return compact(Dataset(*rows), num_states)


def _collect_jit(env, env_params, policy: BehaviourPolicy, num_envs: int, steps: int,
                 envs: tuple[int, int] | None = None):
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

    first, last = (0, num_envs) if envs is None else envs

    @jax.jit
    def run(key: jax.Array):
        keys = jax.random.split(key, num_envs)[first:last]
        return jax.vmap(one_env)(keys)  # each field [E, T]

    return run

