"""Known-model view of the tabular environments: dense NumPy transition tables.

``tabular_model(env)`` enumerates every (state, action) pair through the environment's own
JAX dynamics (one jitted, vmapped call) and returns a :class:`TabularModel`. It serves value
iteration, exact evaluation of greedy policies and exact checks in tests.

Layout: ``K`` outcomes per (state, action). Deterministic worlds (Taxi, CliffWalking) have
``K = 1``; slippery ones (FrozenLake, CliffWalkingSlippery) have ``K = 3`` ordered like
gymnasium: direction ``a - 1``, ``a``, ``a + 1`` (mod 4), probabilities
``(1 - success_rate) / 2``, ``success_rate``, ``(1 - success_rate) / 2``. Outcomes are not
merged: two entries may share the same next state (e.g. against a wall); sum ``prob`` over them
when a distribution is needed.

Terminal states (``terminal_states[s]``: FrozenLake holes and goal, the CliffWalking goal, the
100 Taxi states whose passenger stands at its destination) never start a transition in an
episode. Their rows are absorbing: outcome 0 has probability 1, next state ``s``, reward 0 and
``terminated=True``; the other ``K - 1`` outcomes have probability 0 (same ``s``/0/True).
This equals gymnasium's FrozenLake ``P``. Gymnasium's Taxi and CliffWalking ``P`` instead keep
moving dynamics in those rows (never used by an episode); that is the only difference.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl_pim.envs import cliffwalking as _cliff
from jaxrl_pim.envs import taxi as _taxi


class TabularModel(NamedTuple):
    """Dense known model of a tabular environment (all NumPy, host side).

    Attributes:
      prob: ``[S, A, K]`` float64, probability of each outcome (sums to 1 over K).
      next_state: ``[S, A, K]`` int32, next state index of each outcome.
      reward: ``[S, A, K]`` float32, reward of each outcome.
      terminated: ``[S, A, K]`` bool, whether the outcome ends the episode (no bootstrap).
      initial_dist: ``[S]`` float64, distribution of the state after ``reset``.
      terminal_states: ``[S]`` bool, states that end an episode (never a dataset row's s).
      num_states: S.
      num_actions: A.
    """

    prob: np.ndarray
    next_state: np.ndarray
    reward: np.ndarray
    terminated: np.ndarray
    initial_dist: np.ndarray
    terminal_states: np.ndarray
    num_states: int
    num_actions: int


# move(state_index, direction) -> (next_state, reward, terminated), jnp scalars.
MoveFn = Callable[[jax.Array, jax.Array], tuple[jax.Array, jax.Array, jax.Array]]


def tabular_model(env: Any) -> TabularModel:
    """Return the :class:`TabularModel` of a Taxi, CliffWalking or FrozenLake instance.

    Args:
      env: an environment from :func:`jaxrl_pim.envs.make` (or constructed directly).

    Raises:
      ValueError: for any other environment type.
    """
    key = jax.random.key(0)
    if isinstance(env, _taxi.Taxi):
        params = env.default_params

        def move(s: jax.Array, a: jax.Array):
            obs, _, reward, terminated, _ = env.step_env(key, env.state_from_index(s), a, params)
            return obs, reward, terminated

        init = np.zeros(_taxi.NUM_STATES)
        init[_taxi.initial_states()] = 1.0
        return _build(
            move,
            num_states=_taxi.NUM_STATES,
            num_actions=_taxi.NUM_ACTIONS,
            offsets=(0,),
            probs=(1.0,),
            initial_dist=init / init.sum(),
            terminal_states=_taxi.terminal_mask(),
        )
    if isinstance(env, _cliff.CliffWalking):
        init = np.zeros(_cliff.NUM_STATES)
        init[_cliff.START] = 1.0
        terminal = np.zeros(_cliff.NUM_STATES, dtype=bool)
        terminal[_cliff.GOAL] = True
        offsets, probs = ((-1, 0, 1), (1 / 3, 1 / 3, 1 / 3)) if env.is_slippery else ((0,), (1.0,))
        return _build(
            env.move,
            num_states=_cliff.NUM_STATES,
            num_actions=_cliff.NUM_ACTIONS,
            offsets=offsets,
            probs=probs,
            initial_dist=init,
            terminal_states=terminal,
        )
    from jaxrl_pim.envs import frozenlake as _frozen  # imports gymnax; only FrozenLake needs it

    if isinstance(env, _frozen.FrozenLake):
        params = env.default_params
        # Same dynamics with the slip removed: the direction is then chosen here.
        firm = copy.copy(env)
        firm.is_slippery = False

        def move(s: jax.Array, a: jax.Array):
            state = _frozen.EnvState(time=jnp.int32(0), position=s)
            obs, _, reward, terminated, _ = firm.step_env(key, state, a, params)
            return obs, reward, terminated

        if env.is_slippery:
            fail = (1.0 - env.success_rate) / 2.0
            offsets, probs = (-1, 0, 1), (fail, env.success_rate, fail)
        else:
            offsets, probs = (0,), (1.0,)
        start, _ = env.reset_env(key, params)
        init = np.zeros(env.n_states)
        init[int(start)] = 1.0
        return _build(
            move,
            num_states=env.n_states,
            num_actions=env.num_actions,
            offsets=offsets,
            probs=probs,
            initial_dist=init,
            terminal_states=_frozen.terminal_mask(env),
        )
    raise ValueError(
        f"tabular_model supports Taxi, CliffWalking and FrozenLake; got {type(env).__name__}"
    )


def _build(
    move: MoveFn,
    *,
    num_states: int,
    num_actions: int,
    offsets: tuple[int, ...],
    probs: tuple[float, ...],
    initial_dist: np.ndarray,
    terminal_states: np.ndarray,
) -> TabularModel:
    """Enumerate ``move`` over all (s, a, k) with direction ``(a + offsets[k]) % A``."""
    s = jnp.arange(num_states, dtype=jnp.int32)[:, None, None]
    a = jnp.arange(num_actions, dtype=jnp.int32)[None, :, None]
    off = jnp.asarray(offsets, dtype=jnp.int32)[None, None, :]
    shape = (num_states, num_actions, len(offsets))
    s_b = jnp.broadcast_to(s, shape)
    dirs = jnp.broadcast_to((a + off) % num_actions, shape)
    flat = jax.jit(jax.vmap(move))(s_b.reshape(-1), dirs.reshape(-1))
    next_state, reward, terminated = (np.asarray(x).reshape(shape) for x in flat)

    prob = np.broadcast_to(np.asarray(probs, dtype=np.float64), shape).copy()
    next_state = next_state.astype(np.int32)
    reward = reward.astype(np.float32)
    terminated = terminated.astype(bool)

    # Absorbing rows for terminal states.
    term = np.asarray(terminal_states, dtype=bool)
    prob[term] = 0.0
    prob[term, :, 0] = 1.0
    next_state[term] = np.arange(num_states, dtype=np.int32)[term, None, None]
    reward[term] = 0.0
    terminated[term] = True

    return TabularModel(
        prob=prob,
        next_state=next_state,
        reward=reward,
        terminated=terminated,
        initial_dist=np.asarray(initial_dist, dtype=np.float64),
        terminal_states=term,
        num_states=int(num_states),
        num_actions=int(num_actions),
    )
