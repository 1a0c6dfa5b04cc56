"""Greedy-policy evaluation and the optimal policy by value iteration.

``evaluate`` plays ``num_episodes`` vmapped episodes of a gymnax tabular environment with the
greedy policy of a Q-table (ties to the lowest action) and reports the mean/std undiscounted
return and the success rate (episode ended in a goal: a terminal transition with positive
reward for FrozenLake, a terminal transition for Taxi and CliffWalking). Episodes stop at the
environment's time limit (FrozenLake 4x4: 100 steps, Taxi: 200) or at ``max_steps``
(default 1,000: CliffWalking has no time limit, and a poor greedy policy can loop forever).

``value_iteration`` solves the discounted known model (:func:`jaxrl_pim.envs.tabular_model`)
so results can be stated as a fraction of the optimal greedy policy's return.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl_pim.checks import check_float, check_int


class EvalResult(NamedTuple):
    """Evaluation summary (Python floats).

    Attributes:
      mean_return: mean undiscounted episode return.
      std_return: standard deviation of the return over episodes.
      success_rate: fraction of episodes that reached a goal.
      mean_length: mean episode length in steps.
    """

    mean_return: float
    std_return: float
    success_rate: float
    mean_length: float


def _success(env: Any, reward: jax.Array, terminated: jax.Array) -> jax.Array:
    if type(env).__name__ == "FrozenLake":
        return terminated & (reward > 0)
    return terminated


def evaluate(
    env: Any,
    env_params: Any,
    q_table: jax.Array | np.ndarray,
    key: jax.Array,
    num_episodes: int = 1000,
    max_steps: int = 1000,
) -> EvalResult:
    """Play ``num_episodes`` greedy episodes of ``q_table`` ``[S, A]`` (float) in parallel.

    Episodes end at a terminal state, at the environment's time limit, or after
    ``max_steps`` steps, whichever comes first.
    """
    n = check_int("num_episodes", num_episodes, 1)
    horizon = min(int(env_params.max_steps_in_episode), check_int("max_steps", max_steps, 1))
    q = jnp.asarray(q_table, jnp.float32)
    num_states = env.observation_space(env_params).n
    if q.ndim != 2 or q.shape[0] != num_states:
        raise ValueError(f"q_table must be [{num_states}, A]; got shape {tuple(q.shape)}")
    returns, success, length = _play(env, env_params, n, horizon)(q, key)
    returns = np.asarray(returns, np.float64)
    return EvalResult(
        float(returns.mean()), float(returns.std()), float(np.mean(success)),
        float(np.mean(length)),
    )


def _play(env: Any, env_params: Any, n: int, max_steps: int):
    def episode(q, key):
        k_reset, k_run = jax.random.split(key)
        obs, state = env.reset_env(k_reset, env_params)

        def step(carry, k):
            obs, state, done, ret, ok, length = carry
            a = jnp.argmax(q[obs])
            obs2, state2, r, term, _ = env.step_env(k, state, a, env_params)
            live = ~done
            ret = ret + jnp.where(live, r, 0.0)
            ok = ok | (live & _success(env, r, term))
            length = length + live.astype(jnp.int32)
            done = done | term | (state2.time >= max_steps)
            return (obs2, state2, done, ret, ok, length), None

        init = (obs, state, jnp.bool_(False), jnp.float32(0), jnp.bool_(False), jnp.int32(0))
        (_, _, _, ret, ok, length), _ = jax.lax.scan(step, init, jax.random.split(k_run, max_steps))
        return ret, ok, length

    @jax.jit
    def run(q, key):
        return jax.vmap(episode, in_axes=(None, 0))(q, jax.random.split(key, n))

    return run


def value_iteration(
    model: Any, gamma: float, tol: float = 1e-10, max_iters: int = 100_000
) -> np.ndarray:
    """Optimal ``Q*`` ``[S, A]`` (float64) of a known model by value iteration.

    ``model`` is a :class:`jaxrl_pim.envs.TabularModel`; terminal outcomes do not bootstrap.
    """
    gamma = check_float("gamma", gamma, 0.0, 1.0, hi_open=True)
    prob = np.asarray(model.prob, np.float64)
    cont = ~np.asarray(model.terminated)
    expected_r = (prob * model.reward).sum(-1)
    q = np.zeros(prob.shape[:2])
    for _ in range(max_iters):
        v = q.max(axis=1)
        q_new = expected_r + gamma * (prob * cont * v[model.next_state]).sum(-1)
        if np.max(np.abs(q_new - q)) < tol:
            return q_new
        q = q_new
    return q


def optimal_value(model: Any, q_star: np.ndarray) -> float:
    """Expected discounted return of the optimal policy from the initial distribution."""
    return float(np.dot(model.initial_dist, q_star.max(axis=1)))
