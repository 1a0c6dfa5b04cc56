"""Fused lane kernel for TPUs (Pallas Mosaic TPU): ``kernel="pallas_tpu"``.

A TPU vector register is 8 x 128, and Pallas TPU blocks must have their last two dimensions
divisible by 8 and 128 (or equal to the array's). Lanes therefore go on the 128-wide axis:

* tables ``[S*A, lanes]`` (entry-major), one block of 128 lanes per program kept in VMEM for
  a whole launch (its block index does not change along the episode axes of the grid);
* rows packed once per run (:class:`~jaxrl_pim.tabular.pallas_common.PackedRows`, time-major
  ``[m, lanes]``) and streamed in chunks of at most :data:`CHUNK_ROWS` rows (a multiple of
  8, so every block obeys the tiling rule), pipelined by Pallas;
* grid ``(lane blocks, episodes, chunks)``: lane blocks are parallel, episodes and chunks run
  in order, so one launch covers all the episodes of a sync round;
* table reads and writes by exact one-hot selection over the ``S*A`` entries (Mosaic TPU
  has no per-lane gather from VMEM; compare, select and a sublane sum, as in the one-hot GPU
  kernel, but over ``[S*A, 128]`` vregs): ``O(S*A)`` work per update spread over 128 lanes;
* random draws and ``ran`` rows from one pre-pass per launch (JAX PRNG words, or the PIM LCG
  by jump-ahead), gathered by XLA into the same chunked time-major layout.

Float tables are held as float32 inside the kernel (every stored value is rounded to the
storage format first, so fp16 / bf16 results are unchanged); int32 fixed point uses the
trace-time specialised products of :mod:`~jaxrl_pim.tabular.pallas_common`. Lowering for
``tpu`` is checked on a CPU host (``lower(lowering_platforms=("tpu",))``); bit-identity with
the scan path is checked in interpret mode.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

from jaxrl_pim.tabular.lanes import LaneData, LaneDraws, LaneSpec
from jaxrl_pim.tabular.pallas_common import (
    PackedRows,
    decode_sarsa_word,
    episodes_per_launch,
    jax_words,
    lcg_draws,
    pack_rows,
    pad_axis,
    resolve_backend,
    run_in_launches,
    unpack_row,
    update_from_columns,
)
from jaxrl_pim.tabular.sampling import lcg_int

#: Most rows in one streamed chunk (per lane block: CHUNK_ROWS x 128 x 4 bytes per array).
CHUNK_ROWS = 1024
#: Lanes on the vector axis of one TPU vreg.
TPU_LANES = 128


def prepare_rows(spec: LaneSpec, data: LaneData) -> PackedRows:
    """Rows packed once per run: time-major :class:`PackedRows` ``[m, L]``."""
    return pack_rows(spec, data)


def chunk_rows(m: int) -> tuple[int, int]:
    """``(C, K)``: rows per streamed chunk (a multiple of 8, at most :data:`CHUNK_ROWS`) and
    chunks per episode, ``K * C >= m``."""
    k = -(-m // CHUNK_ROWS)
    per_chunk = -(-m // k)
    return -(-per_chunk // 8) * 8, k


def tpu_block(requested: int) -> int:
    """Lanes per program: ``requested`` rounded up to a multiple of 128 (0: 128)."""
    return max(1, -(-requested // TPU_LANES)) * TPU_LANES


def _tpu_kernel(spec: LaneSpec, m: int, chunk: int, sarsa: bool, *refs):
    if sarsa:
        word_ref, r_ref, eu_ref, ra_ref, q_in_ref, q_ref = refs
    else:
        (word_ref, r_ref, q_in_ref, q_ref), eu_ref, ra_ref = refs, None, None
    num_a = spec.num_actions
    k = pl.program_id(2)

    @pl.when((pl.program_id(1) == 0) & (k == 0))
    def _():
        q_ref[...] = q_in_ref[...]

    ent = jax.lax.broadcasted_iota(jnp.int32, q_ref.shape, 0)
    ent_s = jax.lax.div(ent, jnp.int32(num_a))
    ent_a = ent - ent_s * num_a

    def body(t, carry):
        row = unpack_row(spec, word_ref[pl.ds(t, 1), :], r_ref[pl.ds(t, 1), :])  # [1, BL]
        q = q_ref[...]
        zero = jnp.zeros((), q.dtype)
        hit = ent == row.sa
        q_tm1 = jnp.sum(jnp.where(hit, q, zero), axis=0, keepdims=True)
        in_row = ent_s == row.s2
        cols = [jnp.sum(jnp.where(in_row & (ent_a == b), q, zero), axis=0, keepdims=True)
                for b in range(num_a)]
        eu = eu_ref[pl.ds(t, 1), :] if sarsa else None
        ra = ra_ref[pl.ds(t, 1), :] if sarsa else None
        new = update_from_columns(spec, q_tm1, cols, row.r, row.term, eu, ra).astype(q.dtype)
        valid = k * chunk + t < m  # the last chunk of an episode may be padding
        q_ref[...] = jnp.where(hit & valid, new, q)
        return carry

    jax.lax.fori_loop(0, chunk, body, 0)


def _compiler_params(platform: str):
    if platform == "tpu":
        from jax.experimental.pallas import tpu as pltpu

        return pltpu.CompilerParams(dimension_semantics=("parallel", "arbitrary", "arbitrary"))
    return None


def run_episodes_tpu(
    spec: LaneSpec, q: jax.Array, rows: PackedRows, draws: LaneDraws, num_episodes: int,
    lanes_per_block: int = 0, interpret: bool | None = None, platform: str | None = None,
) -> tuple[jax.Array, jax.Array]:
    """Run ``num_episodes`` episodes on every lane with the TPU kernel.

    Same contract as :func:`jaxrl_pim.tabular.lanes.run_episodes` except the rows, which come
    from :func:`prepare_rows` (:class:`PackedRows` ``[m, L]``; ``seq``/``str`` in visiting
    order, ``ran`` in chunk order). ``lanes_per_block`` is rounded up to a multiple of 128.
    Returns ``(q, lcg_state)``.
    """
    lane_keys, lcg_state, first_episode = draws
    platform, interpret = resolve_backend(platform, interpret)
    num_lanes, num_s, num_a = q.shape
    table = num_s * num_a
    m = rows.word.shape[0]
    ran, sarsa = spec.sampling == "ran", spec.algo == "sarsa"
    chunk, per_episode = chunk_rows(m)
    m_p = chunk * per_episode
    bl = tpu_block(lanes_per_block)
    padded = -(-num_lanes // bl) * bl

    pad = functools.partial(pad_axis, size=padded)

    def episode_major(x, num_e):
        """``[E * m, L]`` -> ``[E * m_p, Lp]`` (each episode padded to whole chunks)."""
        x = x.reshape(num_e, m, num_lanes)
        x = jnp.pad(x, ((0, 0), (0, m_p - m), (0, 0))).reshape(num_e * m_p, num_lanes)
        return pad(x)

    rows_p = PackedRows(*(pad(jnp.pad(x, ((0, m_p - m), (0, 0)))) for x in rows))
    per_launch = episodes_per_launch(num_episodes, m_p * padded * (8 * ran + 8 * sarsa))
    compute = jnp.int32 if spec.fmt.is_fixed_point else jnp.float32

    def launch(carry, e0, num_e):
        q_t, lcg = carry
        n = num_e * m
        if spec.rng == "lcg":
            idx, eu, ra, lcg = lcg_draws(spec, lcg, n, m)
        else:
            idx_w, sarsa_w = jax_words(spec, lane_keys, e0, num_e, m)
            idx = None if idx_w is None else lcg_int(idx_w, m)
            eu, ra = decode_sarsa_word(sarsa_w, num_a) if sarsa else (None, None)
        if ran:
            lanes = jnp.arange(num_lanes)[None, :]
            stream = PackedRows(*(episode_major(x[idx, lanes], num_e) for x in rows))
            row_map = (lambda i, e, c: (e * per_episode + c, i))
        else:
            stream = rows_p
            row_map = (lambda i, e, c: (c, i))
        args = list(stream)
        in_specs = [pl.BlockSpec((chunk, bl), row_map)] * 2
        if sarsa:
            args += [episode_major(eu, num_e), episode_major(ra, num_e)]
            in_specs += [pl.BlockSpec((chunk, bl), lambda i, e, c: (e * per_episode + c, i))] * 2
        table_spec = pl.BlockSpec((table, bl), lambda i, e, c: (0, i))
        args.append(q_t)
        in_specs.append(table_spec)
        q_t = pl.pallas_call(
            functools.partial(_tpu_kernel, spec, m, chunk, sarsa),
            grid=(padded // bl, num_e, per_episode),
            in_specs=in_specs,
            out_specs=table_spec,
            out_shape=jax.ShapeDtypeStruct(q_t.shape, q_t.dtype),
            input_output_aliases={len(args) - 1: 0},
            interpret=interpret,
            compiler_params=None if interpret else _compiler_params(platform),
        )(*args)
        return q_t, lcg

    q_t = pad(q.reshape(num_lanes, table).T.astype(compute))  # entry-major [S*A, lanes]
    q_t, lcg_state = run_in_launches(launch, (q_t, lcg_state), first_episode, num_episodes,
                                     per_launch)
    return q_t[:, :num_lanes].T.reshape(q.shape).astype(q.dtype), lcg_state
