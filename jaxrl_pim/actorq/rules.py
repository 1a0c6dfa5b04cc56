"""Per-transition rules used by the ActorQ learners (rlax style: one transition, batch with vmap).

* ``n_step_window``: the n-step return of the oldest entry of an actor's window of the last
  ``n`` steps, cut at the first episode end inside the window.
* ``categorical_l2_project``: project a categorical distribution on support ``z_p`` onto a
  uniform support ``z_q`` (the D4PG / C51 projection).
* ``huber``: the Huber loss used by DQN (defined with the DQN loss in
  :mod:`jaxrl_pim.rl.dqn`, re-exported here).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxrl_pim.rl.dqn import huber

__all__ = ["categorical_l2_project", "huber", "n_step_window"]


def n_step_window(
    r_t: jax.Array, discount_t: jax.Array, last_t: jax.Array, gamma: float
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """n-step return of the first step of a window of ``n`` consecutive steps.

    Args:
      r_t: ``[n]`` rewards of steps ``t .. t+n-1``.
      discount_t: ``[n]`` environment discounts (0 where the step terminated, 1 otherwise).
      last_t: ``[n]`` 1 where the step ended an episode (terminated or truncated), else 0.
      gamma: discount factor.

    Returns:
      ``(return, bootstrap_discount, bootstrap_index)``: ``return = sum_j gamma^j r_{t+j}``
      over the steps up to and including the first episode end in the window;
      the target is ``return + bootstrap_discount * V(next_obs[bootstrap_index])`` with
      ``bootstrap_discount = gamma^(k+1) * discount_{t+k}`` for ``k = bootstrap_index``
      (0 after a termination; a truncation bootstraps from its final observation).
    """
    n = r_t.shape[0]
    if discount_t.shape != (n,) or last_t.shape != (n,) or r_t.ndim != 1:
        raise ValueError(
            f"n_step_window expects [n] arrays; got {r_t.shape}, {discount_t.shape}, "
            f"{last_t.shape}"
        )
    last = last_t.astype(r_t.dtype)
    # alive[j] = 1 while no episode ended strictly before step j of the window.
    alive = jnp.concatenate([jnp.ones((1,), r_t.dtype), jnp.cumprod(1.0 - last)[:-1]])
    powers = gamma ** jnp.arange(n, dtype=r_t.dtype)
    ret = jnp.sum(alive * powers * r_t)
    ended = last > 0
    k = jnp.where(jnp.any(ended), jnp.argmax(ended), n - 1)
    boot = gamma ** (k + 1).astype(r_t.dtype) * discount_t[k].astype(r_t.dtype)
    return ret, boot, k


def categorical_l2_project(z_p: jax.Array, probs: jax.Array, z_q: jax.Array) -> jax.Array:
    """Project probabilities ``probs`` on atoms ``z_p`` ``[N]`` onto the uniform support ``z_q``.

    Atoms outside ``[z_q[0], z_q[-1]]`` are clipped to the edges; each source atom's mass is
    split between its two neighbouring target atoms in proportion to closeness. Returns ``[M]``.
    """
    if z_p.ndim != 1 or probs.shape != z_p.shape or z_q.ndim != 1:
        raise ValueError(
            f"categorical_l2_project expects [N], [N], [M]; got {z_p.shape}, {probs.shape}, "
            f"{z_q.shape}"
        )
    v_min, v_max = z_q[0], z_q[-1]
    dz = z_q[1] - z_q[0]
    z_p = jnp.clip(z_p, v_min, v_max)
    weight = jnp.clip(1.0 - jnp.abs(z_p[None, :] - z_q[:, None]) / dz, 0.0, 1.0)  # [M, N]
    return weight @ probs
