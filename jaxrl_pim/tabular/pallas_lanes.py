"""One-hot fused lane kernel (``kernel="pallas_onehot"``): one program runs a whole episode
for a block of lanes.

The ``lax.scan`` path (:func:`jaxrl_pim.tabular.lanes.run_episodes`) returns to XLA after
every transition. Here one ``pallas_call`` per episode runs all ``m`` updates of a block of
``lanes_per_block`` lanes inside the kernel, with the block's Q-tables ``[BL, S*A]`` loaded
once into a kernel-local value (registers / on-chip memory on GPU and TPU) and written back
once at the end. On GPUs ``kernel="auto"`` prefers the lane-per-thread kernel of
:mod:`jaxrl_pim.tabular.pallas_gpu` (``O(A)`` indexed access, one launch per sync round) and
falls back to this one when that does not compile.

To use only element-wise operations and reductions (iota, compare, select, sums; no gathers
or scatters), table reads and writes are one-hot selections over the ``S*A``
entries of each lane's table: exact (a sum of one value and zeros, a max over a masked row),
so results are bit-identical to the scan path. The work per update is ``O(S*A)`` instead of
``O(A)``, which is cheap for small tables (FrozenLake: 64 entries) and the price of keeping
the table on chip for larger ones (Taxi: 3,000 entries; use fewer lanes per block).

Random numbers (JAX PRNG or the PIM LCG) come from a cheap element-wise pre-pass per episode,
and ``ran`` rows are gathered by XLA before the kernel; both produce exactly the draws and
rows of the scan path. On CPU the kernel runs in Pallas interpret mode (tests only).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

from jaxrl_pim.tabular.lanes import (
    LaneData,
    LaneDraws,
    LaneSpec,
    episode_randomness,
    lane_update,
    lcg_step_draws,
)
from jaxrl_pim.tabular.pallas_common import pad_axis, resolve_backend


def _pow2(n: int) -> int:
    """The smallest power of two >= ``n`` (1 for ``n <= 1``)."""
    return 1 << max(0, (n - 1).bit_length())


def block_lanes(requested: int, table_size: int, num_lanes: int,
                budget_entries: int = 1 << 15) -> int:
    """Lanes per program: ``requested`` capped so a block's tables fit ``budget_entries``
    (a power of two, at least 1, at most the lane count rounded up to a power of two).

    ``requested=0`` asks for about ``num_lanes / 128`` lanes per program (at most 128), i.e.
    at least ~128 programs when there are enough lanes: each program walks its rows
    sequentially, so the number of programs in flight sets the speed.
    """
    if requested == 0:
        requested = min(128, max(1, num_lanes // 128))
    cap = max(1, budget_entries // max(table_size, 1))
    bl = max(1, min(requested, cap, _pow2(num_lanes)))
    return 1 << (bl.bit_length() - 1)


def _lcg_draws(spec: LaneSpec, lcg: jax.Array, m: int):
    """The LCG draws of one episode, time-major ``[m, L]``, and the advanced state."""

    def step(lcg, _):
        lcg, idx, u, a = lcg_step_draws(spec, lcg, m)
        zeros_i = jnp.zeros_like(lcg, jnp.int32)
        return lcg, (zeros_i if idx is None else idx,
                     jnp.zeros_like(lcg, jnp.float32) if u is None else u,
                     zeros_i if a is None else a)

    return jax.lax.scan(step, lcg, None, length=m)


def _kernel(spec: LaneSpec, m: int, sa_ref, s2_ref, r_ref, term_ref, eu_ref, ra_ref,
            q_in_ref, q_out_ref):
    num_a = spec.num_actions
    q = q_in_ref[...]  # [BL, T]: the S*A entries, zero-padded to a power of two T
    iota = jax.lax.broadcasted_iota(jnp.int32, q.shape, 1)
    iota_state = iota // num_a  # padding entries get states >= S: never a bootstrap row
    iota_action = iota - iota_state * num_a
    zero = jnp.zeros((), q.dtype)
    # Triton tiles are powers of two: the bootstrap row is padded to A_p columns with copies
    # of action 0, which change neither its max nor its first argmax (exact results)
    num_ap = _pow2(num_a)
    spec_p = spec._replace(num_actions=num_ap)
    iota_a = jax.lax.broadcasted_iota(jnp.int32, (q.shape[0], num_ap), 1)

    def body(j, q):
        sa = sa_ref[pl.ds(j, 1), :][0].astype(jnp.int32)
        s2 = s2_ref[pl.ds(j, 1), :][0].astype(jnp.int32)
        r = r_ref[pl.ds(j, 1), :][0]
        term = term_ref[pl.ds(j, 1), :][0] != 0
        eu = eu_ref[pl.ds(j, 1), :][0]
        ra = ra_ref[pl.ds(j, 1), :][0]
        hit = iota == sa[:, None]
        q_tm1 = jnp.sum(jnp.where(hit, q, zero), axis=1)
        row = iota_state == s2[:, None]
        # the bootstrap row [BL, A], assembled column by column with selects (Triton lowers
        # no stack of more than two arrays)
        q_t = jnp.zeros((q.shape[0], num_ap), q.dtype)
        for b in range(num_a):
            col = jnp.sum(jnp.where(row & (iota_action == b), q, zero), axis=1)
            q_t = jnp.where((iota_a == b) | ((b == 0) & (iota_a >= num_a)), col[:, None], q_t)
        new = lane_update(spec_p, q_tm1, q_t, r, term, eu, ra).astype(q.dtype)
        return jnp.where(hit, new[:, None], q)

    q_out_ref[...] = jax.lax.fori_loop(0, m, body, q)


def _compiler_params(platform: str):
    """Triton on NVIDIA GPUs (the kernel is a sequential loop over small register tiles,
    which Triton handles at any block size); the backend default elsewhere."""
    if platform in ("gpu", "cuda"):
        from jax.experimental.pallas import triton as pl_triton

        return pl_triton.CompilerParams(num_warps=4, num_stages=1)
    return None


def run_episodes_pallas(
    spec: LaneSpec, q: jax.Array, data: LaneData, draws: LaneDraws, num_episodes: int,
    lanes_per_block: int = 0, interpret: bool | None = None, platform: str | None = None,
) -> tuple[jax.Array, jax.Array]:
    """Drop-in replacement of :func:`jaxrl_pim.tabular.lanes.run_episodes` (same arguments
    and results) running each episode as one fused Pallas kernel."""
    lane_keys, lcg_state, first_episode = draws
    platform, interpret = resolve_backend(platform, interpret)
    ran = spec.sampling == "ran"
    num_lanes, num_s, num_a = q.shape
    table = _pow2(num_s * num_a)  # padded width (power-of-two tiles); padding never hit
    m = data.sa.shape[1] if ran else data.sa.shape[0]
    bl = block_lanes(lanes_per_block, table, num_lanes)
    padded = -(-num_lanes // bl) * bl
    lanes = jnp.arange(num_lanes)

    data_spec = pl.BlockSpec((m, bl), lambda i: (0, i))
    q_spec = pl.BlockSpec((bl, table), lambda i: (i, 0))
    call = pl.pallas_call(
        functools.partial(_kernel, spec, m),
        grid=(padded // bl,),
        in_specs=[data_spec] * 6 + [q_spec],
        out_specs=q_spec,
        out_shape=jax.ShapeDtypeStruct((padded, table), q.dtype),
        input_output_aliases={6: 0},
        interpret=interpret,
        compiler_params=None if interpret else _compiler_params(platform),
    )

    def episode(carry, e):
        q_tab, lcg = carry
        if spec.rng == "lcg":
            lcg, (idx, eu, ra) = _lcg_draws(spec, lcg, m)
        else:
            idx, eu, ra = episode_randomness(spec, lane_keys, first_episode + e, m, num_lanes)
        rows = LaneData(*(f[lanes[None, :], idx] for f in data)) if ran else data
        args = [pad_axis(x, padded) for x in (*rows[:3], rows.term.astype(jnp.int32), eu, ra)]
        q_tab = call(*args, q_tab)
        return (q_tab, lcg), None

    q0 = q.reshape(num_lanes, num_s * num_a)
    q0 = pad_axis(jnp.pad(q0, ((0, 0), (0, table - num_s * num_a))), padded, axis=0)
    (q_tab, lcg_state), _ = jax.lax.scan(
        episode, (q0, lcg_state), jnp.arange(num_episodes, dtype=jnp.int32))
    return q_tab[:num_lanes, :num_s * num_a].reshape(q.shape), lcg_state

