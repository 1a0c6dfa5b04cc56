"""SwiftRL on lanes: chunking and the jittable trainer (:class:`TabularConfig`, re-exported
here, lives in the jax-free :mod:`jaxrl_pim.tabular.config`).

``make_train(config, mesh=None, callback=None)`` returns ``train(key, chunks)`` where
``chunks`` is a :class:`~jaxrl_pim.data.Dataset` with lane-major arrays ``[C, m]``
(see :func:`chunk`). ``train`` is pure and jittable (vmappable over keys) and returns
``(q_table, metrics)``:

* normal mode: the final averaged table ``[S, A]`` float32 (descaled);
* independent multi-agent mode: one table per lane ``[C, S, A]``, never averaged.

``metrics["q_delta"]`` is ``[R]``: the mean absolute change of the (mean) table over each
sync round (``R = ceil(num_episodes / sync_period)`` rounds of ``sync_period`` episodes,
the last possibly shorter).

A run can also go in segments of whole sync rounds: ``make_train_from(config, num_rounds)``
returns ``train_from(state, chunks) -> (state, metrics)`` over a :class:`TabularState` (the
key, the table, the lanes' LCG states and the round counter; :func:`init_state` before round
0, :func:`q_table` to read it), pure and jittable with the round traced, so one compiled
segment continues from any round and a checkpointed run ends with the uninterrupted run's
table bit for bit. ``make_train`` is the single segment of all rounds.

With a ``mesh`` the lanes are split over its single axis with ``jax.shard_map``; a sync
averages lanes locally (a sum), then reduces over devices (``lax.psum``), so results do not
depend on the device count (bit-exact for int32).

Long on purpose: chunking, the sync step, the state and
``make_train`` / ``make_train_from`` read top to bottom in one module, as the trainer
contract asks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as P

from jaxrl_pim.checks import check_int
from jaxrl_pim.data.transitions import Dataset, validate
from jaxrl_pim.tabular import formats
from jaxrl_pim.tabular.config import (  # the config lives in a jax-free module
    ALGOS,
    KERNELS,
    RNGS,
    TabularConfig,
    episodes_in_rounds,
)
from jaxrl_pim.tabular.lanes import LaneDraws, to_lane_data, visiting_rows
from jaxrl_pim.tabular.pallas_select import get_kernel

__all__ = ["ALGOS", "KERNELS", "RNGS", "TabularConfig", "TabularState", "chunk",
           "dropped_rows", "init_state", "make_mesh", "make_sync", "make_train",
           "make_train_from", "q_table"]

def chunk(config: TabularConfig, transitions: Dataset) -> Dataset:
    """Validate a dataset and split it into ``num_cores`` equal contiguous chunks ``[C, m]``.

    Normal mode takes ``[M]`` arrays; ``m = M // C`` and the last ``M mod C`` rows are
    dropped (every lane must do the same number of updates per episode). Independent mode
    takes per-agent datasets ``[K, n]`` with ``K == num_cores`` and returns them unchanged.
    Also checks that an int32 run cannot overflow (``formats.check_fixed_point_range``).
    """
    validate(transitions, config.num_states, config.num_actions)
    shape = transitions.shape
    if config.independent:
        if len(shape) != 2 or shape[0] != config.num_cores:
            raise ValueError(
                f"independent mode needs per-agent datasets of shape [num_cores={config.num_cores}"
                f", n]; got {shape}"
            )
        out = transitions
    else:
        if len(shape) != 1:
            raise ValueError(f"the dataset must be one-dimensional [M]; got shape {shape}")
        m = shape[0] // config.num_cores
        if m == 0:
            raise ValueError(
                f"num_cores={config.num_cores} exceeds the dataset size {shape[0]}: "
                "every lane needs at least one transition"
            )
        out = Dataset(
            *(np.asarray(x)[: m * config.num_cores].reshape(config.num_cores, m)
              for x in transitions)
        )
    if config.dtype == "int32":
        formats.check_fixed_point_range(float(np.abs(np.asarray(out.reward)).max()), config.gamma)
        r = np.asarray(out.reward, np.float64) * formats.SCALE
        if not np.allclose(r, np.round(r)):
            raise ValueError("dtype int32 needs rewards that are multiples of 1e-4")
    return out


def dropped_rows(config: TabularConfig, num_rows: int) -> int:
    """Rows :func:`chunk` drops from a dataset of ``num_rows`` (0 in independent mode)."""
    return 0 if config.independent else num_rows - (num_rows // config.num_cores) * config.num_cores


def make_mesh(num_devices: int | None = None, axis: str = "cores") -> Mesh:
    """A 1-D mesh over the first ``num_devices`` devices (all by default), axis ``cores``."""
    devices = jax.devices()
    n = len(devices) if num_devices is None else check_int("devices", num_devices, 1, len(devices))
    return jax.make_mesh((n,), (axis,), axis_types=(jax.sharding.AxisType.Auto,),
                         devices=devices[:n])


Callback = Callable[[jax.Array, int, dict], None]


def _lane_mean(q: jax.Array, fmt: formats.NumericFormat, c: int, axis: str | None) -> jax.Array:
    """Mean over all ``c`` lanes: local sum of ``q`` ``[L, S, A]``, then psum over ``axis``."""
    if fmt.is_fixed_point:
        hi, lo = formats.int_lane_sum_parts(q)
        if axis is not None:
            hi, lo = formats.int_normalize(jax.lax.psum(hi, axis), jax.lax.psum(lo, axis))
        return formats.int_mean_from_parts(hi, lo, c)
    total = jnp.sum(q.astype(jnp.float32), axis=0)
    if axis is not None:
        total = jax.lax.psum(total, axis)
    return (total / c).astype(q.dtype)


def make_sync(config: TabularConfig, mesh: Mesh | None = None) -> Callable[[jax.Array], jax.Array]:
    """The sync step alone: ``q [C, S, A] -> q`` with every lane set to the lane mean.

    Used to time synchronisation in isolation (the trainer fuses it into its rounds).
    """
    fmt, c = config.format, config.num_cores
    axis = mesh.axis_names[0] if mesh is not None else None

    def sync(q: jax.Array) -> jax.Array:
        return jnp.broadcast_to(_lane_mean(q, fmt, c, axis), q.shape)

    if mesh is None:
        return sync
    return jax.shard_map(sync, mesh=mesh, in_specs=P(axis), out_specs=P(axis))


class TabularState(NamedTuple):
    """What a run carries from one sync round to the next: a pytree that resumes a run.

    Attributes:
      key: the run's typed PRNG key, shape ``[]``. Lane ``c`` draws its episode-``e`` random
        numbers from ``fold_in(split(key, C)[c], e)``, so the key never changes during a run.
      q: the Q-table in the format's storage dtype (int32 tables hold ``round(Q * 10,000)``):
        ``[S, A]``, every lane's table after the last sync (zeros at the start), or
        ``[C, S, A]``, one per agent, in independent mode.
      lcg: ``[C]`` uint32 PIM LCG states, one per lane (only ``rng="lcg"`` advances them).
      round: int32 ``[]``: sync rounds done, ``0 .. config.num_rounds``.
    """

    key: jax.Array
    q: jax.Array
    lcg: jax.Array
    round: jax.Array


def init_state(config: TabularConfig, key: jax.Array) -> TabularState:
    """The state before the first round: zero tables, LCGs at ``lcg_seed``, round 0.

    Pure and jittable (``jax.eval_shape(lambda k: init_state(config, k), key)`` gives a
    checkpoint template); ``key`` is a typed PRNG key (``jax.random.key``).
    """
    c, s, a = config.num_cores, config.num_states, config.num_actions
    shape = (c, s, a) if config.independent else (s, a)
    return TabularState(
        key=key,
        q=jnp.zeros(shape, config.format.storage),
        lcg=jnp.full((c,), config.lcg_seed, jnp.uint32),
        round=jnp.zeros((), jnp.int32),
    )


def q_table(config: TabularConfig, state: TabularState) -> jax.Array:
    """The state's table(s) descaled to float32: ``[S, A]`` (``[C, S, A]`` independent).

    Computed by XLA also for host (NumPy) tables, so it equals the table ``make_train``
    returns bit for bit (NumPy's float32 division rounds differently).
    """
    return config.format.decode(jnp.asarray(state.q))


TrainFrom = Callable[[TabularState, Dataset], tuple[TabularState, dict[str, jax.Array]]]


def make_train_from(
    config: TabularConfig,
    num_rounds: int | None = None,
    mesh: Mesh | None = None,
    callback: Callback | None = None,
) -> TrainFrom:
    """Build ``train_from(state, chunks) -> (state, metrics)``: continue a run by whole rounds.

    ``train_from`` runs the sync rounds ``state.round .. state.round + num_rounds - 1`` (each
    ``sync_period`` episodes; the run's last round ``num_episodes mod sync_period`` when that
    is not 0) and returns the state after them with ``metrics["q_delta"]`` ``[num_rounds]``
    (see the module docstring). It is pure and jittable, and ``state.round`` is a traced
    value: one compiled segment continues a run from any round. Rounds past the run's end
    (``config.num_rounds``) leave the state unchanged and report a ``q_delta`` of 0. Running a
    run as segments gives the uninterrupted run's tables bit for bit, in every format: the
    rounds compute the same values whatever segment they fall in, e.g.::

        state = init_state(cfg, key)
        seg = jax.jit(make_train_from(cfg, 5))
        while int(state.round) < cfg.num_rounds:
            state, _ = seg(state, chunks)   # save ``state`` here to resume later
        q = q_table(cfg, state)             # == jax.jit(make_train(cfg))(key, chunks)[0]

    Args:
      config: validated :class:`TabularConfig`.
      num_rounds: rounds per call, ``1 .. config.num_rounds`` (default all of them).
      mesh: optional 1-D mesh; lanes are split over its axis (``num_cores`` must divide).
      callback: optional host callback ``callback(round, num_rounds, {"q_delta": x})`` called
        after each sync round through ``jax.debug.callback`` (``round`` counts from 1 to
        ``config.num_rounds`` over the whole run, whichever segment runs it).
    """
    total = config.num_rounds
    seg_rounds = total if num_rounds is None else check_int("num_rounds", num_rounds, 1, total)
    spec = config.lane_spec()
    fmt = config.format
    c, num_s, num_a = config.num_cores, config.num_states, config.num_actions
    if mesh is not None:
        if len(mesh.axis_names) != 1:
            raise ValueError(f"mesh must have one axis; got {mesh.axis_names}")
        n_dev = mesh.devices.size
        if c % n_dev:
            raise ValueError(f"num_cores={c} must be divisible by the {n_dev} devices of the mesh")
    axis = mesh.axis_names[0] if mesh is not None else None
    last = episodes_in_rounds(config, total - 1, total)  # the run's last round's episodes
    kernel = config.resolved_kernel(probe=True)
    impl = get_kernel(kernel)

    def lane_mean(q: jax.Array) -> jax.Array:
        return _lane_mean(q, fmt, c, axis)

    def local_round(q, data, draws, num_episodes):
        before = fmt.decode(q[0])  # every lane holds the last mean (zeros at the start)
        q, lcg = impl.run(spec, q, data, draws, num_episodes, config.lanes_per_block)
        if config.independent:
            return q, lcg, jnp.zeros((), jnp.float32)
        mean = lane_mean(q)
        q = jnp.broadcast_to(mean, q.shape)
        return q, lcg, jnp.mean(jnp.abs(fmt.decode(mean) - before))

    def make_round(num_episodes: int):
        def fn(q, data, draws):
            q, lcg, delta = local_round(q, data, draws, num_episodes)
            return q, lcg, delta[None]  # one entry per device (all equal after a sync)

        if mesh is None:
            return fn
        lanes = P(axis)
        # a prefix spec for the kernel's prepared rows (lanes on axis 1 when time-major)
        data_spec = P(None, axis) if impl.time_major or spec.sampling != "ran" else lanes
        # pallas_call outputs carry no varying-axes type, so the Pallas paths opt out of
        # shard_map's varying-axes check (every output here is split over the lane axis).
        return jax.shard_map(
            fn, mesh=mesh,
            in_specs=(lanes, data_spec, LaneDraws(lanes, lanes, P())),
            out_specs=(lanes, lanes, lanes),
            check_vma=kernel == "scan",
        )

    round_full = make_round(config.sync_period)
    round_rest = make_round(last) if last < config.sync_period else None

    def train_from(
        state: TabularState, chunks: Dataset,
    ) -> tuple[TabularState, dict[str, jax.Array]]:
        if chunks.shape[0] != c or len(chunks.shape) != 2:
            raise ValueError(f"chunks must be [num_cores={c}, m]; got {chunks.shape}")
        want = (c, num_s, num_a) if config.independent else (num_s, num_a)
        if (state.q.shape, state.q.dtype, state.lcg.shape) != (want, fmt.storage, (c,)):
            raise ValueError(
                f"state does not fit this config: q {state.q.shape} {state.q.dtype} (want "
                f"{want} {np.dtype(fmt.storage)}), lcg {state.lcg.shape} (want ({c},))")
        data = visiting_rows(to_lane_data(chunks, spec), spec.sampling, config.stride)
        data = impl.prepare(spec, data)  # the kernel's row layout, once per call
        keys = jax.random.split(state.key, c)
        q = state.q
        if not config.independent:
            q = jnp.broadcast_to(q, (c, num_s, num_a))  # every lane starts from the mean
        start = jnp.asarray(state.round, jnp.int32)

        def body(carry, i):
            q, lcg = carry
            r = start + i
            args = (q, data, LaneDraws(keys, lcg, r * config.sync_period))
            if round_rest is None:
                new_q, new_lcg, delta = round_full(*args)
            else:  # the run's last round is the shorter one
                new_q, new_lcg, delta = jax.lax.cond(r == total - 1, round_rest, round_full,
                                                     *args)
            # a round past the run's end changes nothing (select, so no value is altered)
            active = r < total
            q = jnp.where(active, new_q, q)
            lcg = jnp.where(active, new_lcg, lcg)
            delta = (jnp.float32(0) if config.independent
                     else jnp.where(active, delta[0], jnp.float32(0)))
            if callback is not None:
                jax.debug.callback(callback, jnp.minimum(r + 1, total), total,
                                   {"q_delta": delta})
            return (q, lcg), delta

        (q, lcg), deltas = jax.lax.scan(body, (q, jnp.asarray(state.lcg, jnp.uint32)),
                                        jnp.arange(seg_rounds, dtype=jnp.int32))
        out = TabularState(
            key=state.key,
            q=q if config.independent else q[0],
            lcg=lcg,
            round=jnp.minimum(start + seg_rounds, total).astype(jnp.int32),
        )
        return out, {"q_delta": deltas}

    return train_from


def make_train(
    config: TabularConfig,
    mesh: Mesh | None = None,
    callback: Callback | None = None,
) -> Callable[[jax.Array, Dataset], tuple[jax.Array, dict[str, jax.Array]]]:
    """Build ``train(key, chunks) -> (q_table, metrics)`` (see module docstring).

    The whole run in one call: ``train_from(init_state(config, key), chunks)`` of
    :func:`make_train_from`, returning the descaled table (:func:`q_table`).

    Args:
      config: validated :class:`TabularConfig`.
      mesh: optional 1-D mesh; lanes are split over its axis (``num_cores`` must divide).
      callback: optional host callback ``callback(round, num_rounds, {"q_delta": x})`` called
        after each sync round through ``jax.debug.callback`` (progress display).
    """
    train_from = make_train_from(config, None, mesh, callback)

    def train(key: jax.Array, chunks: Dataset) -> tuple[jax.Array, dict[str, jax.Array]]:
        state, metrics = train_from(init_state(config, key), chunks)
        return q_table(config, state), metrics

    return train
