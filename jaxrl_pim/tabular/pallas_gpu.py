"""Lane-per-thread fused kernel for GPUs (Pallas Triton): ``kernel="pallas_lane"``.

One program runs a block of ``BL`` lanes (a power of two, one lane per GPU thread) through
all the episodes of a sync round (independent mode: of each launch) in one ``pallas_call``.
Every lane is a chain of dependent updates, so the kernel is built to keep that chain short:

* **Indexed O(A) table access.** The tables live in the kernel's output buffer
  ``[S*A, lanes]`` (entry-major: one lane's entries are ``lanes`` apart, so a warp's lanes
  fall in different banks / sectors), read and written with integer-array ref indexers
  ``q[entry, lane]`` (Triton gathers and scatters): ``Q[s, a]`` and the ``A`` entries of row
  ``s'`` per update, not a pass over the whole table.
* **Rows packed once per run** into one time-major int32 array ``[m, lanes, 2]`` (the packed
  word ``sa | s' | term`` and the reward bits, :mod:`jaxrl_pim.tabular.pallas_common`): one
  8-byte record per lane and step, contiguous across a warp's lanes.
* **Prefetch.** Rows (and their random draws) are fetched ``prefetch`` steps ahead into a
  register queue, so a row load is never waited on; the table entries of update ``j + 1`` are
  loaded *before* update ``j`` is stored, and when they are the entry update ``j`` writes,
  the new value is forwarded in registers (a compare and a select: exact, so results are the
  scan path's, bit for bit). The dependent chain per step is then the update arithmetic plus
  one select, with no memory access on it.
* **int32 fixed point** with ``alpha`` and ``gamma`` specialised at trace time
  (:func:`~jaxrl_pim.tabular.pallas_common.mul_const_scaled`: division by small constants,
  no 64-bit division).
* **Random draws.** The PIM LCG runs inside the kernel (``prefetch`` steps ahead of the
  updates; ``ran`` rows are gathered from the lane's own chunk by the drawn index). JAX-PRNG
  words come from one pre-pass per launch (threefry, exactly the scan path's words; ``ran``
  rows gathered by XLA in the same pass), split into several launches of whole episodes when
  the pre-pass would exceed :data:`~jaxrl_pim.tabular.pallas_common.PREPASS_BUDGET_BYTES`.

On CPU the kernel runs in Pallas interpret mode (tests); lowering for CUDA is checked on CPU.
Mosaic GPU (shared-memory scratch) was tried for the tables and rejects per-lane vector
indexing ("int_indexer_shape non-empty"), so Triton it is.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

from jaxrl_pim.tabular.lanes import LaneData, LaneDraws, LaneSpec, lcg_step_draws
from jaxrl_pim.tabular.pallas_common import (
    PackedRows,
    decode_sarsa_word,
    episodes_per_launch,
    gather_rows,
    jax_words,
    pack_rows,
    pad_axis,
    pow2_floor,
    resolve_backend,
    run_in_launches,
    unpack_row,
    update_from_columns,
)

#: Steps a lane's rows are fetched ahead of its updates (register queue depth).
DEFAULT_PREFETCH = 8
#: Table entries one program's tables may hold (128 KB of fp32: an SM's L1 share).
TABLE_BUDGET_ENTRIES = 1 << 15


def lane_block(requested: int, table_size: int, num_lanes: int) -> int:
    """Lanes per program (a power of two): ``requested``, or for 0 about ``num_lanes / 128``
    (at least 1, at most 32 = one warp), capped so the block's tables fit
    :data:`TABLE_BUDGET_ENTRIES` and by the lane count rounded up to a power of two."""
    if requested == 0:
        requested = min(32, max(1, num_lanes // 128))
    cap = max(1, TABLE_BUDGET_ENTRIES // max(table_size, 1))
    limit = 1 << max(0, (num_lanes - 1).bit_length())
    return pow2_floor(max(1, min(requested, cap, limit)))


def prepare_rows(spec: LaneSpec, data: LaneData) -> jax.Array:
    """Rows packed once per run: time-major ``[m, L, 2]`` int32 (word, reward bits)."""
    return jnp.stack(pack_rows(spec, data), axis=-1)


def _lane_kernel(spec: LaneSpec, n: int, m: int, prefetch: int, pregathered: bool,
                 jax_sarsa: bool, use_lcg: bool, *refs):
    refs = list(refs)
    rows_ref = refs.pop(0)  # [m or n, BL, 2]
    words_ref = refs.pop(0) if jax_sarsa else None  # [n, BL] uint32
    lcg_in_ref = refs.pop(0) if use_lcg else None  # [BL] uint32
    refs.pop(0)  # the tables' input, aliased with q_ref: read through q_ref
    q_ref = refs.pop(0)  # [S*A, BL]
    lcg_out_ref = refs.pop(0) if use_lcg else None
    bl = rows_ref.shape[1]
    num_a = spec.num_actions
    ran, sarsa = spec.sampling == "ran", spec.algo == "sarsa"
    lanes = jax.lax.broadcasted_iota(jnp.int32, (bl,), 0)

    def fetch(s, state):
        """Row (and draws) of step ``s``; steps past the end read valid rows, draw nothing."""
        lcg, j = state
        eu = ra = None
        if use_lcg:
            new_lcg, idx, eu, ra = lcg_step_draws(spec, lcg, m)
            lcg = jnp.where(s < n, new_lcg, lcg)
        if ran and use_lcg:
            word, r_bits = rows_ref[idx, lanes, 0], rows_ref[idx, lanes, 1]
        elif pregathered:
            sc = jnp.minimum(s, n - 1)
            word, r_bits = rows_ref[sc, :, 0], rows_ref[sc, :, 1]
        else:
            word, r_bits = rows_ref[j, :, 0], rows_ref[j, :, 1]
            j = jnp.where(j + 1 == m, 0, j + 1)
        if jax_sarsa:
            eu, ra = decode_sarsa_word(words_ref[jnp.minimum(s, n - 1), :], num_a)
        item = (word, r_bits, eu, ra) if sarsa else (word, r_bits)
        return item, (lcg, j)

    def consume(item):
        """Decode a fetched step and load its table entries (issued before any pending
        store: the caller forwards the value being stored)."""
        row = unpack_row(spec, item[0], item[1])
        base = row.s2 * num_a
        q_tm1 = q_ref[row.sa, lanes]
        cols = tuple(q_ref[base + b, lanes] for b in range(num_a))
        return row, base, item[2:], q_tm1, cols

    def forward(step, sa_prev, new):
        row, base, draws, q_tm1, cols = step
        q_tm1 = jnp.where(row.sa == sa_prev, new, q_tm1)
        cols = tuple(jnp.where(base + b == sa_prev, new, c) for b, c in enumerate(cols))
        return row, base, draws, q_tm1, cols

    def advance(t, k, cur, queue, state):
        """Update step ``t`` (``k = t mod prefetch``, static) and fetch step ``t+1+prefetch``."""
        slot = (k + 1) % prefetch
        nxt = consume(queue[slot])  # step t + 1, loaded before step t is stored
        row, _, draws, q_tm1, cols = cur
        eu, ra = draws if sarsa else (None, None)
        new = update_from_columns(spec, q_tm1, cols, row.r, row.term, eu, ra)
        nxt = forward(nxt, row.sa, new)
        q_ref[row.sa, lanes] = new
        queue = list(queue)
        queue[slot], state = fetch(t + 1 + prefetch, state)
        return nxt, tuple(queue), state

    lcg0 = lcg_in_ref[...] if use_lcg else None
    state = (lcg0, None if (ran and use_lcg) or pregathered else jnp.int32(0))
    first, state = fetch(jnp.int32(0), state)
    cur = consume(first)
    queue = [None] * prefetch
    for s in range(1, prefetch + 1):
        queue[s % prefetch], state = fetch(jnp.int32(s), state)
    queue = tuple(queue)

    def group(g, carry):
        cur, queue, state = carry
        for k in range(prefetch):
            cur, queue, state = advance(g * prefetch + k, k, cur, queue, state)
        return cur, queue, state

    groups, tail = divmod(n, prefetch)
    carry = jax.lax.fori_loop(0, groups, group, (cur, queue, state))
    for k in range(tail):
        carry = advance(jnp.int32(groups * prefetch + k), k, *carry)
    if use_lcg:
        lcg_out_ref[...] = carry[2][0]


def _compiler_params(platform: str, num_warps: int):
    if platform in ("gpu", "cuda", "rocm"):
        from jax.experimental.pallas import triton as pl_triton

        return pl_triton.CompilerParams(num_warps=num_warps, num_stages=1)
    return None


def run_episodes_lane(
    spec: LaneSpec, q: jax.Array, rows: jax.Array, draws: LaneDraws, num_episodes: int,
    lanes_per_block: int = 0, interpret: bool | None = None, platform: str | None = None,
    prefetch: int | None = None,
) -> tuple[jax.Array, jax.Array]:
    """Run ``num_episodes`` episodes on every lane with the lane-per-thread kernel.

    Same contract as :func:`jaxrl_pim.tabular.lanes.run_episodes` except the rows, which come
    from :func:`prepare_rows` (``[m, L, 2]`` int32, time-major in visiting order for
    ``seq``/``str``, in chunk order for ``ran``).

    Args:
      spec: static kernel facts.
      q: ``[L, S, A]`` tables in the storage dtype.
      rows: packed rows ``[m, L, 2]``.
      draws: :class:`~jaxrl_pim.tabular.lanes.LaneDraws` (``[L]`` keys and LCG states, the
        first episode's index).
      num_episodes: static episode count (one launch, or several within the pre-pass budget).
      lanes_per_block: lanes per program (0: see :func:`lane_block`).
      interpret: Pallas interpret mode (default: on CPU).
      platform: backend to build for (default: jax's default backend).
      prefetch: steps rows are fetched ahead (register queue depth, >= 1; default
        :data:`DEFAULT_PREFETCH`).

    Returns:
      ``(q, lcg_state)`` after the episodes.
    """
    prefetch = DEFAULT_PREFETCH if prefetch is None else prefetch
    if prefetch < 1:
        raise ValueError(f"prefetch must be >= 1; got {prefetch}")
    lane_keys, lcg_state, first_episode = draws
    platform, interpret = resolve_backend(platform, interpret)
    num_lanes, num_s, num_a = q.shape
    table = num_s * num_a
    m = rows.shape[0]
    ran, sarsa = spec.sampling == "ran", spec.algo == "sarsa"
    pregathered = ran and spec.rng == "jax"
    jax_sarsa = sarsa and spec.rng == "jax"
    use_lcg = spec.rng == "lcg" and (ran or sarsa)
    bl = lane_block(lanes_per_block, table, num_lanes)
    padded = -(-num_lanes // bl) * bl

    pad = functools.partial(pad_axis, size=padded)

    rows_p = None if pregathered else pad(rows)
    bytes_per_episode = m * padded * (8 * pregathered + 4 * jax_sarsa)
    per_launch = episodes_per_launch(num_episodes, bytes_per_episode)

    def launch(carry, e0, num_e):
        q_t, lcg = carry
        n = num_e * m
        idx_w, sarsa_w = jax_words(spec, lane_keys, e0, num_e, m)
        if pregathered:
            stream = pad(jnp.stack(gather_rows(PackedRows(rows[..., 0], rows[..., 1]), idx_w, m),
                                   axis=-1))
        else:
            stream = rows_p
        args = [stream]
        in_specs = [pl.BlockSpec((stream.shape[0], bl, 2), lambda i: (0, i, 0))]
        if jax_sarsa:
            args.append(pad(sarsa_w))
            in_specs.append(pl.BlockSpec((n, bl), lambda i: (0, i)))
        lane_spec = pl.BlockSpec((bl,), lambda i: (i,))
        table_spec = pl.BlockSpec((table, bl), lambda i: (0, i))
        out_specs, aliases = [table_spec], {}
        out_shape = [jax.ShapeDtypeStruct(q_t.shape, q_t.dtype)]
        if use_lcg:
            args.append(lcg)
            in_specs.append(lane_spec)
            out_specs.append(lane_spec)
            out_shape.append(jax.ShapeDtypeStruct(lcg.shape, lcg.dtype))
            aliases[len(args) - 1] = 1
        args.append(q_t)
        in_specs.append(table_spec)
        aliases[len(args) - 1] = 0
        out = pl.pallas_call(
            functools.partial(_lane_kernel, spec, n, m, prefetch, pregathered, jax_sarsa,
                              use_lcg),
            grid=(padded // bl,),
            in_specs=in_specs,
            out_specs=out_specs,
            out_shape=out_shape,
            input_output_aliases=aliases,
            interpret=interpret,
            compiler_params=None if interpret else _compiler_params(platform, max(1, bl // 32)),
        )(*args)
        return out[0], (out[1] if use_lcg else lcg)

    q_t = pad(q.reshape(num_lanes, table).T)  # entry-major [S*A, lanes]
    q_t, lcg_p = run_in_launches(launch, (q_t, pad(lcg_state, axis=0)), first_episode,
                                 num_episodes, per_launch)
    return q_t[:, :num_lanes].T.reshape(q.shape), lcg_p[:num_lanes]
