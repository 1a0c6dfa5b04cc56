"""Greedy evaluation of a :class:`~jaxrl_pim.rl.networks.Policy` and policy divergences.

``make_evaluate(policy, env_name, num_episodes)`` returns a pure ``evaluate(params, key)``
that plays ``num_episodes`` full episodes in parallel with the greedy action (argmax logits,
Gaussian mean, deterministic action) and also returns the visited observations, so a
quantized copy of the parameters can be compared with the fp32 policy on the same states
(:func:`policy_divergence`). Because ``params`` is an argument, one compiled function serves
every quantized variant of a policy.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxrl_pim.checks import check_int
from jaxrl_pim.rl import common
from jaxrl_pim.rl.networks import Policy, categorical_kl, gaussian_kl


class EvalResult(NamedTuple):
    """Outcome of :func:`make_evaluate`'s function.

    ``returns``: undiscounted return of each episode ``[num_episodes]``;
    ``obs``: observations seen ``[max_steps, num_episodes, obs_dim]``;
    ``mask``: 1.0 where ``obs`` belongs to the still-running first episode ``[max_steps, E]``.
    """

    returns: jax.Array
    obs: jax.Array
    mask: jax.Array


def make_evaluate(
    policy: Policy, env_name: str, num_episodes: int
) -> Callable[[Any, jax.Array], EvalResult]:
    """Build ``evaluate(params, key) -> EvalResult`` (pure, jittable)."""
    check_int("num_episodes", num_episodes, 1, 1_000_000)
    env, env_params = common.make_env(env_name)
    max_steps = int(env_params.max_steps_in_episode)

    def evaluate(params: Any, key: jax.Array) -> EvalResult:
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
        return EvalResult(ret, obs_t, mask)

    return evaluate


def policy_divergence(
    policy: Policy, ref_params: Any, params: Any, obs: jax.Array, mask: jax.Array
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
