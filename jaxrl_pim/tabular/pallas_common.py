"""Pieces shared by the lane-per-thread (GPU) and TPU lane kernels.

* **Packed rows.** Each transition becomes one int32 *word* ``sa | s' << bits(S*A) | term <<
  31`` (``sa = s * A + a``) plus the reward as 32 bits (float32 bits, or the scaled int32 of
  fixed point), packed once per run, time-major (lanes on axis 1).
* **Element-wise update.** :func:`update_from_columns` computes the new ``Q[s, a]`` of a batch
  of lanes from ``Q[s, a]`` and the ``A`` bootstrap entries given as separate arrays (no
  stacking, no reductions: what a kernel with one lane per thread, or one lane per vector
  slot, can evaluate). Float formats call :func:`jaxrl_pim.tabular.rules.td_update_float`;
  int32 fixed point uses :func:`mul_const_scaled`, the product ``trunc(c * x / 10000)`` with
  the constant specialised at trace time, which gives the same integers as
  :func:`jaxrl_pim.tabular.formats.mul_scaled` (so the kernels are bit-identical to the scan
  path) with one or two divisions by a small constant (alpha 0.1: ``x / 10``; gamma 0.95:
  ``19 x / 20`` split so nothing overflows) and no 64-bit arithmetic.
* **Random draws per launch.** JAX-PRNG words for every step of a launch in one pre-pass
  (:func:`jax_words`), decoded exactly as :func:`jaxrl_pim.tabular.sampling.episode_draws`
  decodes them, and the PIM LCG for many steps at once by jump-ahead (:func:`lcg_states`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl_pim.tabular import rules
from jaxrl_pim.tabular.constants import pack_bits, packable  # jax-free, re-exported here
from jaxrl_pim.tabular.formats import Q_LIMIT_SCALED, SCALE, scale_constant
from jaxrl_pim.tabular.lanes import LaneData, LaneSpec
from jaxrl_pim.tabular.sampling import LCG_A, LCG_C, lcg_int, lcg_uniform

#: Largest bytes of per-step pre-pass arrays (draw words, gathered rows) one launch may hold;
#: a sync round needing more is split into several launches of whole episodes.
PREPASS_BUDGET_BYTES = 1 << 30


class PackedRows(NamedTuple):
    """Rows packed once per run, time-major ``[m, L]`` int32 each.

    ``word`` holds ``sa | s' << sa_bits | term << 31``; ``r`` the reward's 32 bits (float32
    bit pattern, or the scaled int32 of fixed point).
    """

    word: jax.Array
    r: jax.Array


def pack_rows(spec: LaneSpec, data: LaneData) -> PackedRows:
    """Pack :class:`LaneData` (time-major ``[m, L]``, or lane-major ``[L, m]`` for ``ran``)
    into time-major :class:`PackedRows` ``[m, L]``."""
    if not packable(spec.num_states, spec.num_actions):
        raise ValueError(
            f"num_states={spec.num_states} x num_actions={spec.num_actions} is too large for "
            "the packed 32-bit rows of the lane kernels; use kernel='scan'")
    if spec.sampling == "ran":
        data = LaneData(*(x.T for x in data))
    sa_bits, _ = pack_bits(spec.num_states, spec.num_actions)
    word = (data.sa.astype(jnp.int32) | (data.s2.astype(jnp.int32) << sa_bits)
            | (data.term.astype(jnp.int32) << 31))
    r = data.r if spec.fmt.is_fixed_point else jax.lax.bitcast_convert_type(
        data.r.astype(jnp.float32), jnp.int32)
    return PackedRows(word, r.astype(jnp.int32))


class Row(NamedTuple):
    """One decoded step of a batch of lanes (each field ``[BL]`` or ``[1, BL]``)."""

    sa: jax.Array
    s2: jax.Array
    term: jax.Array
    r: jax.Array


def unpack_row(spec: LaneSpec, word: jax.Array, r_bits: jax.Array) -> Row:
    """Decode a packed word and reward bits (inverse of :func:`pack_rows`)."""
    sa_bits, s_bits = pack_bits(spec.num_states, spec.num_actions)
    sa = word & ((1 << sa_bits) - 1)
    s2 = jax.lax.shift_right_logical(word, sa_bits) & ((1 << s_bits) - 1)
    term = jax.lax.shift_right_logical(word, 31) != 0
    r = r_bits if spec.fmt.is_fixed_point else jax.lax.bitcast_convert_type(r_bits, jnp.float32)
    return Row(sa, s2, term, r)


def mul_const_scaled(c: int, x: jax.Array, bound: int = 3 * Q_LIMIT_SCALED) -> jax.Array:
    """``trunc(c * x / SCALE)`` for a Python int ``c`` in ``[0, SCALE]`` and int32 ``x`` with
    ``|x| <= bound``, exactly, specialised for ``c`` at trace time.

    With ``c / SCALE = p / q`` in lowest terms: ``trunc(p * x / q)`` directly when ``p *
    bound`` fits int32 (``p = 1``: alpha 0.1 is ``x / 10``); otherwise ``x = hi * q + lo``
    with truncating division (``lo`` has the sign of ``x``) and ``p * hi + trunc(p * lo /
    q)``, which is exact because ``p * hi`` and ``p * lo / q`` have the same sign.
    """
    if not 0 <= c <= SCALE:
        raise ValueError(f"constant must be in [0, {SCALE}]; got {c}")
    g = math.gcd(c, SCALE)
    p, q = c // g, SCALE // g
    if p == 0:
        return jnp.zeros_like(x)
    if q == 1:
        return x
    qc = jnp.int32(q)
    if p * bound < 2**31:
        return jax.lax.div(x * p, qc) if p != 1 else jax.lax.div(x, qc)
    hi = jax.lax.div(x, qc)
    lo = x - hi * q
    return hi * p + jax.lax.div(lo * p, qc)


def _column_max(cols: Sequence[jax.Array]) -> jax.Array:
    best = cols[0]
    for c in cols[1:]:
        best = jnp.maximum(best, c)
    return best


def _first_argmax(cols: Sequence[jax.Array]) -> jax.Array:
    """Index of the largest column, ties to the lowest (``jnp.argmax``)."""
    best, arg = cols[0], jnp.zeros(cols[0].shape, jnp.int32)
    for b, c in enumerate(cols[1:], 1):
        better = c > best
        best = jnp.where(better, c, best)
        arg = jnp.where(better, b, arg)
    return arg


def update_from_columns(
    spec: LaneSpec, q_tm1: jax.Array, cols: Sequence[jax.Array], r: jax.Array,
    term: jax.Array, explore_u: jax.Array | None, rand_a: jax.Array | None,
) -> jax.Array:
    """New ``Q[s, a]`` of a batch of lanes, element-wise, in the table's storage dtype.

    Args:
      spec: static kernel facts.
      q_tm1: ``Q[s, a]`` (storage dtype), any shape ``B``.
      cols: the ``A`` bootstrap entries ``Q[s', b]``, each shaped like ``q_tm1``.
      r: reward (float32, or scaled int32 for fixed point); ``term``: bool.
      explore_u, rand_a: SARSA's exploration number and random action (None for Q-learning).

    Computes what :func:`jaxrl_pim.tabular.lanes.lane_update` computes, bit for bit.
    """
    if len(cols) != spec.num_actions:
        raise ValueError(f"need {spec.num_actions} bootstrap columns; got {len(cols)}")
    if spec.algo == "q":
        boot = _column_max(cols)
        if spec.compat_max0:
            boot = jnp.maximum(boot, jnp.zeros_like(boot))
    else:
        a2 = jnp.where(explore_u < spec.epsilon, rand_a, _first_argmax(cols))
        boot = cols[0]
        for b, c in enumerate(cols[1:], 1):
            boot = jnp.where(a2 == b, c, boot)
    if spec.fmt.is_fixed_point:
        g = mul_const_scaled(scale_constant("gamma", spec.gamma), boot, Q_LIMIT_SCALED)
        td = r + jnp.where(term, jnp.zeros_like(g), g) - q_tm1
        new = q_tm1 + mul_const_scaled(scale_constant("alpha", spec.alpha), td)
    else:
        disc = 1 - term.astype(jnp.float32)
        new = rules.td_update_float(q_tm1, r, disc, boot, spec.alpha, spec.gamma)
    return new.astype(spec.fmt.storage)


def decode_sarsa_word(w: jax.Array, num_actions: int) -> tuple[jax.Array, jax.Array]:
    """SARSA's ``(explore_u, rand_a)`` from one JAX-PRNG word, as ``episode_draws`` does."""
    w = w.astype(jnp.uint32)
    u = (w >> 16).astype(jnp.float32) * jnp.float32(2.0**-16)
    a = (((w & jnp.uint32(0xFFFF)) * jnp.uint32(num_actions)) >> 16).astype(jnp.int32)
    return u, a


def jax_words(
    spec: LaneSpec, lane_keys: jax.Array, first_episode: jax.Array, num_episodes: int, m: int,
) -> tuple[jax.Array | None, jax.Array | None]:
    """JAX-PRNG words of ``num_episodes`` episodes, time-major ``[E * m, L]`` uint32 each:
    ``(ran index words or None, SARSA words or None)``, the words ``episode_draws`` draws."""
    ran, sarsa = spec.sampling == "ran", spec.algo == "sarsa"
    if spec.rng != "jax" or not (ran or sarsa):
        return None, None

    def lane(key, e):
        k_idx, k_sarsa = jax.random.split(jax.random.fold_in(key, e))
        return (jax.random.bits(k_idx, (m,), jnp.uint32) if ran else None,
                jax.random.bits(k_sarsa, (m,), jnp.uint32) if sarsa else None)

    num_lanes = lane_keys.shape[0]
    episodes = first_episode + jnp.arange(num_episodes, dtype=jnp.int32)
    # one flat vmap over (episode, lane) pairs (compiles faster than two nested vmaps)
    keys = jnp.broadcast_to(lane_keys[None], (num_episodes, num_lanes)).reshape(-1)
    idx_w, sarsa_w = jax.vmap(lane)(keys, jnp.repeat(episodes, num_lanes))

    def time_major(x):  # [E * L, m] -> [E * m, L]
        if x is None:
            return None
        return jnp.swapaxes(x.reshape(num_episodes, num_lanes, m), 1, 2).reshape(
            num_episodes * m, num_lanes)

    return time_major(idx_w), time_major(sarsa_w)


def gather_rows(rows: PackedRows, idx_words: jax.Array, m: int) -> PackedRows:
    """The rows ``ran`` visits: ``rows[lcg_int(w, m), lane]`` for words ``[n, L]``."""
    idx = lcg_int(idx_words, m)
    lanes = jnp.arange(idx.shape[1])[None, :]
    return PackedRows(*(x[idx, lanes] for x in rows))


def lcg_states(lcg: jax.Array, n: int) -> jax.Array:
    """The PIM LCG's next ``n`` states of every lane, ``[n, L]`` uint32, by jump-ahead.

    State ``k`` is ``A_k * x0 + C_k (mod 2**32)`` where ``(A_k, C_k)`` composes ``k`` steps
    ``x -> a x + c``; the compositions come from one associative scan (exact in uint32).
    """
    a = jnp.full((n,), LCG_A, jnp.uint32)
    c = jnp.full((n,), LCG_C, jnp.uint32)

    def compose(first, second):
        (a1, c1), (a2, c2) = first, second
        return a2 * a1, a2 * c1 + c2

    a_k, c_k = jax.lax.associative_scan(compose, (a, c))
    return a_k[:, None] * lcg[None, :] + c_k[:, None]


def lcg_draws(spec: LaneSpec, lcg: jax.Array, num_steps: int, m: int):
    """The LCG draws of ``num_steps`` updates, time-major ``[n, L]``, and the final state.

    Returns ``(idx or None, explore_u or None, rand_a or None, lcg)`` in the order
    :func:`jaxrl_pim.tabular.lanes.lcg_step_draws` draws them (row index, then SARSA's
    exploration number and random action).
    """
    ran, sarsa = spec.sampling == "ran", spec.algo == "sarsa"
    per_step = int(ran) + 2 * int(sarsa)
    if per_step == 0:
        return None, None, None, lcg
    states = lcg_states(lcg, num_steps * per_step).reshape(num_steps, per_step, -1)
    idx = lcg_int(states[:, 0], m) if ran else None
    u = lcg_uniform(states[:, int(ran)]) if sarsa else None
    a = lcg_int(states[:, int(ran) + 1], spec.num_actions) if sarsa else None
    return idx, u, a, states[-1, -1]


def episodes_per_launch(num_episodes: int, bytes_per_episode: int,
                        budget: int = PREPASS_BUDGET_BYTES) -> int:
    """Whole episodes one launch runs so its pre-pass arrays fit ``budget`` bytes."""
    if bytes_per_episode <= 0:
        return num_episodes
    return int(np.clip(budget // bytes_per_episode, 1, num_episodes))


def run_in_launches(launch, carry, first_episode: jax.Array, num_episodes: int, per_launch: int):
    """Call ``launch(carry, first_episode, n) -> carry`` over ``num_episodes`` episodes in
    launches of ``per_launch`` episodes (a ``lax.scan`` over the full launches, then the
    rest)."""
    full, rest = divmod(num_episodes, per_launch)
    if full == 1:
        carry = launch(carry, first_episode, per_launch)
    elif full > 1:
        def body(c, i):
            return launch(c, first_episode + i * per_launch, per_launch), None

        carry, _ = jax.lax.scan(body, carry, jnp.arange(full, dtype=jnp.int32))
    if rest:
        carry = launch(carry, first_episode + full * per_launch, rest)
    return carry


def pow2_floor(n: int) -> int:
    """The largest power of two <= ``n`` (1 for ``n <= 1``)."""
    return 1 << max(0, int(n).bit_length() - 1)


def resolve_backend(platform: str | None, interpret: bool | None) -> tuple[str, bool]:
    """A lane kernel's ``(platform, interpret)``: the backend to build for (default: jax's
    default backend) and whether Pallas runs in interpret mode (default: on CPU only)."""
    platform = platform or jax.default_backend()
    return platform, (platform == "cpu") if interpret is None else interpret


def pad_axis(x: jax.Array, size: int, axis: int = 1) -> jax.Array:
    """``x`` zero-padded at the end of ``axis`` to ``size`` entries (the lanes axis up to a
    whole number of blocks); ``x`` itself when it already has them."""
    if x.shape[axis] >= size:
        return x
    widths = [(0, 0)] * x.ndim
    widths[axis] = (0, size - x.shape[axis])
    return jnp.pad(x, widths)
