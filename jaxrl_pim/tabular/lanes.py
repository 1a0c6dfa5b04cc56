"""The lane kernel: every lane runs episodes over its own chunk with a private Q-table.

``run_episodes`` is the portable ``lax.scan`` path: one scan step updates every lane once
(lanes are a vmapped axis). Data arrive lane-major ``[L, m]``; sequential and strided orders
are fixed for the whole run, so their rows are permuted once and scanned time-major
``[m, L]`` with no per-step gather; ``ran`` gathers its rows per step.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxrl_pim.data.transitions import Transitions
from jaxrl_pim.tabular import rules
from jaxrl_pim.tabular.formats import NumericFormat, scale_constant
from jaxrl_pim.tabular.sampling import episode_draws, lcg_int, lcg_next, lcg_uniform


class LaneSpec(NamedTuple):
    """Static facts the kernel needs (all Python values, static under jit)."""

    num_states: int
    num_actions: int
    algo: str  # "q" | "sarsa"
    sampling: str  # "seq" | "ran" | "str"
    fmt: NumericFormat
    alpha: float
    gamma: float
    epsilon: float
    rng: str  # "jax" | "lcg"
    compat_max0: bool


class LaneData(NamedTuple):
    """Per-lane data in compute dtypes: int32 ids, reward (float32, or scaled int32), discount.

    Fields are ``[L, m]`` (lane-major) or ``[m, L]`` (time-major, for ``seq``/``str``).
    """

    s: jax.Array
    a: jax.Array
    r: jax.Array
    s2: jax.Array
    discount: jax.Array


def to_lane_data(chunks: Transitions, spec: LaneSpec) -> LaneData:
    """Convert compact chunks ``[L, m]`` into :class:`LaneData` ``[L, m]``."""
    if spec.fmt.is_fixed_point:
        r = spec.fmt.encode(chunks.reward)
    else:
        r = jnp.asarray(chunks.reward, jnp.float32)
    return LaneData(
        s=jnp.asarray(chunks.state).astype(jnp.int32),
        a=jnp.asarray(chunks.action).astype(jnp.int32),
        r=r,
        s2=jnp.asarray(chunks.next_state).astype(jnp.int32),
        discount=1 - jnp.asarray(chunks.terminated).astype(r.dtype),
    )


def _update(spec: LaneSpec, q: jax.Array, s, a, r, s2, disc, explore_u, rand_a) -> jax.Array:
    """One transition for every lane. ``q`` is ``[L, S, A]``; the rest ``[L]``."""
    lanes = jnp.arange(q.shape[0])
    q_tm1 = q[lanes, s, a]
    q_t = q[lanes, s2]  # [L, A]
    if spec.algo == "q":
        boot = jax.vmap(rules.q_learning_bootstrap, in_axes=(0, None))(q_t, spec.compat_max0)
    else:
        a2 = jax.vmap(rules.sarsa_next_action, in_axes=(0, 0, 0, None))(
            q_t, explore_u, rand_a, spec.epsilon
        )
        boot = q_t[lanes, a2]
    if spec.fmt.is_fixed_point:
        new = rules.td_update_fixed(
            q_tm1, r, disc, boot, scale_constant("alpha", spec.alpha),
            scale_constant("gamma", spec.gamma),
        )
    else:
        new = rules.td_update_float(q_tm1, r, disc, boot, spec.alpha, spec.gamma)
    return q.at[lanes, s, a].set(new.astype(q.dtype))


def run_episodes(
    spec: LaneSpec,
    q: jax.Array,
    data: LaneData,
    lane_keys: jax.Array,
    lcg_state: jax.Array,
    first_episode: jax.Array,
    num_episodes: int,
) -> tuple[jax.Array, jax.Array]:
    """Run ``num_episodes`` episodes on every lane without synchronising.

    Args:
      spec: static kernel facts.
      q: ``[L, S, A]`` tables in the storage dtype.
      data: :class:`LaneData`, time-major ``[m, L]`` for ``seq``/``str`` (already in visiting
        order), lane-major ``[L, m]`` for ``ran``.
      lane_keys: ``[L]`` PRNG keys (``rng == "jax"``).
      lcg_state: ``[L]`` uint32 LCG states (``rng == "lcg"``).
      first_episode: global index of the first episode (int32 scalar), for key derivation.
      num_episodes: static episode count.

    Returns:
      ``(q, lcg_state)`` after the episodes.
    """
    ran = spec.sampling == "ran"
    sarsa = spec.algo == "sarsa"
    num_lanes = q.shape[0]
    m = data.s.shape[1] if ran else data.s.shape[0]
    lanes = jnp.arange(num_lanes)

    def episode(carry, e):
        q, lcg = carry
        if spec.rng == "jax" and (ran or sarsa):
            idx, eu, ra = jax.vmap(episode_draws, in_axes=(0, None, None, None))(
                lane_keys, first_episode + e, m, spec.num_actions
            )
            draws = (idx.T, eu.T, ra.T)  # [m, L]
        else:
            zeros = jnp.zeros((m, num_lanes), jnp.int32)
            draws = (zeros, zeros.astype(jnp.float32), zeros)
        xs = (draws, None if ran else data)

        def step(carry, x):
            q, lcg = carry
            (idx, eu, ra), row = x
            if spec.rng == "lcg":
                if ran:
                    lcg = lcg_next(lcg)
                    idx = lcg_int(lcg, m)
                if sarsa:
                    lcg = lcg_next(lcg)
                    eu = lcg_uniform(lcg)
                    lcg = lcg_next(lcg)
                    ra = lcg_int(lcg, spec.num_actions)
            if ran:
                row = LaneData(*(f[lanes, idx] for f in data))
            q = _update(spec, q, row.s, row.a, row.r, row.s2, row.discount, eu, ra)
            return (q, lcg), None

        (q, lcg), _ = jax.lax.scan(step, (q, lcg), xs)
        return (q, lcg), None

    (q, lcg_state), _ = jax.lax.scan(
        episode, (q, lcg_state), jnp.arange(num_episodes, dtype=jnp.int32)
    )
    return q, lcg_state
