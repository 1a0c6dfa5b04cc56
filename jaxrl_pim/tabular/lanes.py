"""The lane kernel: every lane runs episodes over its own chunk with a private Q-table.

``run_episodes`` is the portable ``lax.scan`` path (the reference for the Pallas kernel in
:mod:`jaxrl_pim.tabular.pallas_lanes`): one scan step updates every lane once, lanes being a
vectorised axis. Layout choices (measured in ``benchmarks/NOTES.md``):

* The lanes' tables live in one flat array ``[L * S * A]``; a transition touches
  ``lane * S * A + s * A + a``, and the bootstrap row ``lane * S * A + s' * A + (0..A-1)``.
  The scatter is declared ``unique_indices`` (each lane writes one distinct entry), and the
  indices are unsigned (no negative-index wrap per lane and step).
* Rows are stored once as ``sa = s * A + a`` and ``s'`` in the narrowest integer type, plus
  the reward and the terminal flag, so a step reads few bytes.
* ``seq`` and ``str`` orders are fixed for the whole run: the rows are permuted once and
  scanned time-major ``[m, L]`` with no per-step gather; ``ran`` gathers rows per step.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl_pim.data.transitions import Dataset
from jaxrl_pim.tabular import rules
from jaxrl_pim.tabular.formats import NumericFormat, scale_constant
from jaxrl_pim.tabular.sampling import (
    episode_draws,
    lcg_int,
    lcg_next,
    lcg_uniform,
    stride_order,
)


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
    unroll: int = 1


class LaneDraws(NamedTuple):
    """Where every lane's random draws come from at a kernel call.

    Every lane kernel (:func:`run_episodes` and the Pallas kernels that replace it) takes one
    and returns the advanced LCG states.

    Attributes:
      keys: ``[L]`` PRNG keys, read when ``rng == "jax"`` (fixed for the whole run).
      lcg: ``[L]`` uint32 LCG states, advanced when ``rng == "lcg"``.
      first_episode: global index of the call's first episode (int32 scalar), from which
        the episodes' keys are derived.
    """

    keys: jax.Array
    lcg: jax.Array
    first_episode: jax.Array


class LaneData(NamedTuple):
    """Per-lane rows in compact compute form.

    Fields are ``[L, m]`` (lane-major) or ``[m, L]`` (time-major, for ``seq``/``str``):
    ``sa`` = ``s * A + a`` and ``s2`` in the narrowest integer dtype, ``r`` the reward
    (float32, or scaled int32 for fixed point), ``term`` the terminal flag (bool).
    """

    sa: jax.Array
    s2: jax.Array
    r: jax.Array
    term: jax.Array


def index_dtype(n: int) -> np.dtype:
    """Narrowest dtype holding ``0..n-1`` among uint8, int16, int32."""
    if n <= 256:
        return np.dtype(np.uint8)
    return np.dtype(np.int16) if n <= 32767 else np.dtype(np.int32)


def to_lane_data(chunks: Dataset, spec: LaneSpec) -> LaneData:
    """Convert compact chunks ``[L, m]`` into :class:`LaneData` ``[L, m]``."""
    a_count = spec.num_actions
    sa = (jnp.asarray(chunks.state).astype(jnp.int32) * a_count
          + jnp.asarray(chunks.action).astype(jnp.int32))
    r = (spec.fmt.encode(chunks.reward) if spec.fmt.is_fixed_point
         else jnp.asarray(chunks.reward, jnp.float32))
    return LaneData(
        sa=sa.astype(index_dtype(spec.num_states * a_count)),
        s2=jnp.asarray(chunks.next_state).astype(index_dtype(spec.num_states)),
        r=r,
        term=jnp.asarray(chunks.terminated).astype(bool),
    )


def visiting_rows(data: LaneData, sampling: str, stride: int) -> LaneData:
    """Rows as :func:`run_episodes` reads them: for ``seq`` / ``str``, the lane-major rows
    ``[L, m]`` put in visiting order (``str``: :func:`~jaxrl_pim.tabular.sampling.stride_order`
    with ``stride``) and made time-major ``[m, L]``; ``ran`` rows stay lane-major."""
    if sampling == "ran":
        return data
    m = data.sa.shape[1]
    order = jnp.arange(m) if sampling == "seq" else stride_order(m, stride)
    return LaneData(*(x[:, order].T for x in data))


def lane_update(
    spec: LaneSpec, q_tm1: jax.Array, q_t: jax.Array, r: jax.Array, term: jax.Array,
    explore_u: jax.Array, rand_a: jax.Array,
) -> jax.Array:
    """New ``Q[s, a]`` for a batch of lanes: ``q_tm1`` ``[L]``, bootstrap rows ``q_t`` ``[L, A]``.

    Shared by the scan path and the Pallas kernel so both compute bit-identical values.
    """
    if spec.algo == "q":
        boot = jax.vmap(rules.q_learning_bootstrap, in_axes=(0, None))(q_t, spec.compat_max0)
    else:
        a2 = jax.vmap(rules.sarsa_next_action, in_axes=(0, 0, 0, None))(
            q_t, explore_u, rand_a, spec.epsilon)
        onehot = jnp.arange(spec.num_actions)[None, :] == a2[:, None]
        boot = jnp.sum(jnp.where(onehot, q_t, jnp.zeros_like(q_t)), axis=1)
    if spec.fmt.is_fixed_point:
        disc = 1 - term.astype(jnp.int32)
        return rules.td_update_fixed(q_tm1, r, disc, boot, scale_constant("alpha", spec.alpha),
                                     scale_constant("gamma", spec.gamma))
    disc = 1 - term.astype(jnp.float32)
    return rules.td_update_float(q_tm1, r, disc, boot, spec.alpha, spec.gamma)


def episode_randomness(
    spec: LaneSpec, lane_keys: jax.Array, episode: jax.Array, m: int, num_lanes: int
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Time-major JAX-PRNG draws ``(idx, explore_u, rand_a)``, each ``[m, L]``.

    Only the draws the variant needs are generated; the others are zeros (never read).
    """
    ran, sarsa = spec.sampling == "ran", spec.algo == "sarsa"
    zeros = jnp.zeros((m, num_lanes), jnp.int32)
    if spec.rng != "jax" or not (ran or sarsa):
        return zeros, zeros.astype(jnp.float32), zeros
    idx, eu, ra = jax.vmap(episode_draws, in_axes=(0, None, None, None, None, None))(
        lane_keys, episode, m, spec.num_actions, ran, sarsa)
    return (zeros if idx is None else idx.T,
            zeros.astype(jnp.float32) if eu is None else eu.T,
            zeros if ra is None else ra.T)


def lcg_step_draws(spec: LaneSpec, lcg: jax.Array, m: int):
    """Advance the PIM LCG for one update: returns ``(lcg, idx or None, u or None, a or None)``."""
    idx = u = a = None
    if spec.sampling == "ran":
        lcg = lcg_next(lcg)
        idx = lcg_int(lcg, m)
    if spec.algo == "sarsa":
        lcg = lcg_next(lcg)
        u = lcg_uniform(lcg)
        lcg = lcg_next(lcg)
        a = lcg_int(lcg, spec.num_actions)
    return lcg, idx, u, a


def run_episodes(
    spec: LaneSpec, q: jax.Array, data: LaneData, draws: LaneDraws, num_episodes: int
) -> tuple[jax.Array, jax.Array]:
    """Run ``num_episodes`` episodes on every lane without synchronising.

    Args:
      spec: static kernel facts.
      q: ``[L, S, A]`` tables in the storage dtype.
      data: :class:`LaneData`, time-major ``[m, L]`` for ``seq``/``str`` (already in visiting
        order), lane-major ``[L, m]`` for ``ran``.
      draws: :class:`LaneDraws` (``[L]`` keys and LCG states, the first episode's index).
      num_episodes: static episode count.

    Returns:
      ``(q, lcg_state)`` after the episodes.
    """
    ran = spec.sampling == "ran"
    num_lanes, num_s, num_a = q.shape
    m = data.sa.shape[1] if ran else data.sa.shape[0]
    lane_keys, lcg_state, first_episode = draws
    # Unsigned indices: JAX wraps negative signed indices with a compare and a select per
    # lane and step; these cannot be negative (benchmarks/NOTES.md, the form study).
    lanes = jnp.arange(num_lanes, dtype=jnp.uint32)
    base = lanes * jnp.uint32(num_s * num_a)
    row_base = lanes * jnp.uint32(num_s)

    def episode(carry, e):
        q_flat, lcg = carry
        xs = (episode_randomness(spec, lane_keys, first_episode + e, m, num_lanes),
              None if ran else data)

        def step(carry, x):
            q_flat, lcg = carry
            (idx, eu, ra), row = x
            if spec.rng == "lcg":
                lcg, idx_l, u_l, a_l = lcg_step_draws(spec, lcg, m)
                idx = idx if idx_l is None else idx_l
                eu = eu if u_l is None else u_l
                ra = ra if a_l is None else a_l
            if ran:
                row = LaneData(*(f[lanes, idx.astype(jnp.uint32)] for f in data))
            flat = base + row.sa.astype(jnp.uint32)
            q_tm1 = q_flat[flat]
            # one A-wide row gather per lane (a [L*S, A] view of the same buffer)
            q_t = q_flat.reshape(-1, num_a)[row_base + row.s2.astype(jnp.uint32)]
            new = lane_update(spec, q_tm1, q_t, row.r, row.term, eu, ra)
            q_flat = q_flat.at[flat].set(new.astype(q_flat.dtype), unique_indices=True)
            return (q_flat, lcg), None

        (q_flat, lcg), _ = jax.lax.scan(step, (q_flat, lcg), xs, unroll=spec.unroll)
        return (q_flat, lcg), None

    (q_flat, lcg_state), _ = jax.lax.scan(
        episode, (q.reshape(-1), lcg_state), jnp.arange(num_episodes, dtype=jnp.int32))
    return q_flat.reshape(q.shape), lcg_state
