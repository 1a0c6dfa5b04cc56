"""Greedy evaluation of a :class:`~jaxrl_pim.rl.networks.ParametricPolicy` and divergences.

``make_evaluate(policy, env, num_episodes)`` returns a pure ``evaluate(params, key)`` that
plays ``num_episodes`` full episodes in parallel with the greedy action (argmax logits,
Gaussian mean, deterministic action) on any gymnax environment (a registered name, a
Playground task name or an environment object, through :func:`jaxrl_pim.envs.make`) and also
returns the visited observations, so a quantized copy of the parameters can be compared with
the fp32 policy on the same states (:func:`policy_divergence`). Because ``params`` is an
argument, one compiled function serves every quantized variant of a policy.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxrl_pim.checks import check_int
from jaxrl_pim.envs.factory import make
from jaxrl_pim.rl import common
from jaxrl_pim.rl.networks import ParametricPolicy, categorical_kl, gaussian_kl


class EvalRollouts(NamedTuple):
    """The episodes played by :func:`make_evaluate`'s function (arrays, not a summary).

    ``returns``: undiscounted return of each episode ``[num_episodes]``;
    ``obs``: observations seen ``[max_steps, num_episodes, *obs_shape]``;
    ``mask``: 1.0 where ``obs`` belongs to the still-running first episode ``[max_steps, E]``.
    (The tabular learners' summary is :class:`jaxrl_pim.tabular.EvalResult`.)
    """

    returns: jax.Array
    obs: jax.Array
    mask: jax.Array


def make_evaluate(
    policy: ParametricPolicy, env: Any, num_episodes: int, max_steps: int | None = None
) -> Callable[[Any, jax.Array], EvalRollouts]:
    """Build ``evaluate(params, key) -> EvalRollouts`` (pure, jittable).

    Args:
      policy: how to act with ``params`` (``policy.greedy(policy.apply(params, obs))`` on a
        batch ``obs [num_episodes, *obs_shape]``).
      env: a gymnax environment: registered name (``"CartPole-v1"``, any of
        ``gymnax.registered_envs``), ``"playground/<EnvName>"``, an environment object or a
        pair ``(env, env_params)`` (see :func:`jaxrl_pim.envs.make`).
      num_episodes: episodes played in parallel (1 to 1,000,000).
      max_steps: steps per episode; default the environment's time limit
        (``env_params.max_steps_in_episode``). Required when the environment has none.
    """
    check_int("num_episodes", num_episodes, 1, 1_000_000)
    env, env_params = make(env)
    if max_steps is None:
        max_steps = int(getattr(env_params, "max_steps_in_episode", 0) or 0)
        if not 1 <= max_steps <= 10_000_000:
            raise ValueError(
                f"max_steps must be given for an environment without a time limit in 1 to "
                f"10,000,000 steps (env_params.max_steps_in_episode = {max_steps})"
            )
    max_steps = check_int("max_steps", max_steps, 1, 10_000_000)

    def evaluate(params: Any, key: jax.Array) -> EvalRollouts:
        key, k_reset = jax.random.split(key)
        obs, env_state = common.vmap_reset(env, env_params, k_reset, num_episodes)

        def step(carry, _):
            obs, env_state, ret, alive, key = carry
            key, k_step = jax.random.split(key)
            action = policy.greedy(policy.apply(params, obs))
            out = common.vmap_step(env, env_params, k_step, env_state, action)
            ret = ret + out.reward * alive
            new_alive = alive * (1.0 - out.done.astype(jnp.float32))
            return (out.obs, out.env_state, ret, new_alive, key), (obs, alive)

        init = (obs, env_state, jnp.zeros(num_episodes), jnp.ones(num_episodes), key)
        (_, _, ret, _, _), (obs_t, mask) = jax.lax.scan(step, init, None, max_steps)
        return EvalRollouts(ret, obs_t, mask)

    return evaluate


def policy_divergence(
    policy: ParametricPolicy, ref_params: Any, params: Any, obs: jax.Array, mask: jax.Array
) -> dict[str, jax.Array]:
    """How far ``params`` acts from ``ref_params`` on observations ``obs`` ``[..., obs_dim]``.

    Averages over entries where ``mask`` ``[...]`` is 1. Returns:

    * ``kl``: mean ``KL(pi_ref || pi)`` in nats. Categorical KL for categorical policies,
      Gaussian KL for Gaussian ones; for deterministic policies the KL between
      ``N(a_ref, s^2)`` and ``N(a, s^2)`` with ``s = policy.noise_std`` (the exploration
      noise), i.e. ``sum((a_ref - a)^2) / (2 s^2)``.
    * ``action_agreement``: fraction of states where the greedy actions are identical.
    * ``action_mse``: mean squared difference of the greedy actions (continuous; 0 for
      categorical policies, which report agreement instead).
    * ``action_gap``: mean gap between the reference policy's best and second-best logit (for
      DQN, Q-value): how far its greedy choice is from a tie (categorical; 0 otherwise).
    """
    ref = policy.apply(ref_params, obs)
    new = policy.apply(params, obs)
    a_ref, a_new = policy.greedy(ref), policy.greedy(new)
    if policy.kind == "categorical":
        kl = categorical_kl(ref, new)
        mse = jnp.zeros(kl.shape)
        agree = (a_ref == a_new).astype(jnp.float32)
        top2 = jax.lax.top_k(ref, 2)[0]  # [..., 2]
        gap = top2[..., 0] - top2[..., 1]
    elif policy.kind == "gaussian":
        kl = gaussian_kl(ref[0], ref[1], new[0], new[1])
        mse = jnp.mean((a_ref - a_new) ** 2, axis=-1)
        agree = jnp.all(a_ref == a_new, axis=-1).astype(jnp.float32)
        gap = jnp.zeros(kl.shape)
    else:
        std = policy.noise_std
        mse = jnp.mean((a_ref - a_new) ** 2, axis=-1)
        kl = jnp.sum((a_ref - a_new) ** 2, axis=-1) / (2.0 * std**2)
        agree = jnp.all(a_ref == a_new, axis=-1).astype(jnp.float32)
        gap = jnp.zeros(kl.shape)
    kl = jnp.maximum(kl, 0.0)  # KL >= 0; float rounding can give -1e-11 for equal policies
    mask = mask.astype(jnp.float32)
    denom = jnp.maximum(mask.sum(), 1.0)
    return {
        "kl": jnp.sum(kl * mask) / denom,
        "action_agreement": jnp.sum(agree * mask) / denom,
        "action_mse": jnp.sum(mse * mask) / denom,
        "action_gap": jnp.sum(gap * mask) / denom,
    }

