"""Per-transition update rules (rlax style): one transition in, the new ``Q[s, a]`` out.

Naming follows rlax: ``q_tm1`` is the current estimate ``Q[s, a]``, ``r_t`` the reward,
``discount_t`` 0 when ``s'`` is terminal and 1 otherwise, ``q_t`` the row ``Q[s', :]``
(``[A]``). Batch them over lanes with ``jax.vmap``. Float rules compute in float32 and
return float32 (callers round to the storage format); fixed-point rules take and return
scaled int32 (see :mod:`jaxrl_pim.tabular.formats`).
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp

from jaxrl_pim.tabular.formats import mul_scaled


def q_learning_bootstrap(q_t: jax.Array, compat_max0: bool = False) -> jax.Array:
    """``max_a' Q[s', a']``; with ``compat_max0`` the published C code's ``max(0, .)``."""
    chex.assert_rank(q_t, 1)
    best = jnp.max(q_t)
    return jnp.maximum(best, jnp.zeros_like(best)) if compat_max0 else best


def sarsa_next_action(
    q_t: jax.Array, explore_u: jax.Array, random_action: jax.Array, epsilon: float
) -> jax.Array:
    """Epsilon-greedy ``a'`` at ``s'``: ``random_action`` when ``explore_u < epsilon``,
    otherwise the greedy action with ties to the lowest index."""
    chex.assert_rank(q_t, 1)
    return jnp.where(explore_u < epsilon, random_action, jnp.argmax(q_t)).astype(jnp.int32)


def td_update_float(
    q_tm1: jax.Array, r_t: jax.Array, discount_t: jax.Array, bootstrap: jax.Array,
    alpha: float, gamma: float,
) -> jax.Array:
    """``Q + alpha * (r + gamma * discount * bootstrap - Q)`` in float32."""
    q_tm1 = q_tm1.astype(jnp.float32)
    target = r_t + gamma * discount_t * bootstrap.astype(jnp.float32)
    return q_tm1 + alpha * (target - q_tm1)


def td_update_fixed(
    q_tm1: jax.Array, r_t: jax.Array, discount_t: jax.Array, bootstrap: jax.Array,
    alpha_s: int, gamma_s: int,
) -> jax.Array:
    """Fixed-point ``Q + trunc(alpha_s * (r_s + trunc(gamma_s * boot / S) * discount - Q) / S)``.

    All operands scaled int32; exact while the range check in ``formats`` holds.
    """
    g = mul_scaled(jnp.int32(gamma_s), bootstrap) * discount_t.astype(jnp.int32)
    td = r_t + g - q_tm1
    return q_tm1 + mul_scaled(jnp.int32(alpha_s), td)
