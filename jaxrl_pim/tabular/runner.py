"""Host-side driver for one tabular run with the paper's time breakdown.

Phases (seconds, wall clock, each blocked until the device is done):

* ``prepare``: validation and chunking on the host (no device work);
* ``transfer_in``: host -> device copy of the chunked dataset (sharded over the mesh);
* ``compile``: tracing and XLA compilation of the trainer (not part of the paper's figures);
* ``compute``: the trainer's run time minus the estimated ``sync`` time;
* ``sync``: ``num_rounds`` x the time of the sync step measured in isolation (lane mean and
  broadcast, with the cross-device reduction when several devices are used);
* ``transfer_out``: device -> host copy of the final Q-table.

``total`` sums the phases except ``compile``. ``updates_per_s`` counts every lane's updates
(``C * m * episodes``) over ``compute + sync``.

Across processes (after ``jax.distributed.initialize``, see :mod:`jaxrl_pim.distributed`) the
mesh spans every process's devices and the trainer runs unchanged on it. Each process holds
the chunks of a contiguous range of lanes (:func:`process_lanes`), builds only those (the
dataset rows :func:`process_rows` names) and hands them over as process-local data of the
global chunk array; the sync's ``psum`` then crosses processes. Lane ``c`` gets rows
``c * m .. (c + 1) * m`` of the dataset whatever the layout, so the results equal one
process's with the same device count (bit for bit for int32). Every process gets the final
Q-table; the phases are timed on each process for its own part.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from jaxrl_pim.data.transitions import Transitions
from jaxrl_pim.distributed import failed_processes
from jaxrl_pim.tabular.trainer import (
    Callback,
    TabularConfig,
    chunk,
    dropped_rows,
    make_mesh,
    make_sync,
    make_train,
)
from jaxrl_pim.timing import PhaseTimer, time_call


class RunResult(NamedTuple):
    """Outcome of :func:`run`.

    Attributes:
      q_table: float32 NumPy ``[S, A]`` (``[K, S, A]`` in independent mode), descaled.
      metrics: NumPy metrics from the trainer (``q_delta`` per sync round).
      timing_s: seconds per phase (see module docstring) plus ``total``.
      updates: number of Q-updates performed over all lanes (all processes).
      updates_per_s: ``updates / (compute + sync)``.
      dropped_rows: dataset rows left out by chunking.
      num_devices: devices the lanes ran on (all processes).
      num_processes: processes the lanes ran on.
      lanes: ``(lo, hi)``, the lanes whose chunks this process held.
    """

    q_table: np.ndarray
    metrics: dict[str, np.ndarray]
    timing_s: dict[str, float]
    updates: int
    updates_per_s: float
    dropped_rows: int
    num_devices: int
    num_processes: int = 1
    lanes: tuple[int, int] = (0, 0)


def run_mesh(config: TabularConfig, num_devices: int | None = None) -> Mesh:
    """The mesh :func:`run` uses: ``num_devices`` devices, by default the largest number of
    visible devices that divides ``num_cores``. Across processes it spans every device of
    every process (``num_devices`` None or the global count; ``num_cores`` must divide)."""
    total = len(jax.devices())
    if jax.process_count() > 1:
        if num_devices not in (None, total):
            raise ValueError(
                f"devices={num_devices}: a multi-process run uses every device of every "
                f"process ({total}); leave --devices out")
        if config.num_cores % total:
            raise ValueError(
                f"num_cores={config.num_cores} is not divisible by the {total} devices of the "
                f"{jax.process_count()} processes; choose --cores so that it divides")
        return make_mesh(total)
    if num_devices is None:
        num_devices = max(d for d in range(1, total + 1) if config.num_cores % d == 0)
    mesh = make_mesh(num_devices)
    if config.num_cores % mesh.devices.size:
        raise ValueError(
            f"num_cores={config.num_cores} is not divisible by the {mesh.devices.size} devices "
            "in use; choose --devices or --cores so that it divides"
        )
    return mesh


def process_lanes(config: TabularConfig, mesh: Mesh) -> tuple[int, int]:
    """Lanes ``(lo, hi)`` whose chunks this process holds on ``mesh`` (all in one process)."""
    sharding = NamedSharding(mesh, P(mesh.axis_names[0]))
    spans = sorted((s[0].start or 0, s[0].stop or config.num_cores) for s in
                   sharding.addressable_devices_indices_map((config.num_cores,)).values())
    lo, hi = spans[0][0], spans[-1][1]
    if sum(b - a for a, b in set(spans)) != hi - lo:
        raise ValueError(f"this process's devices hold lanes {spans}, not one contiguous range")
    return lo, hi


def process_rows(config: TabularConfig, num_rows: int, lanes: tuple[int, int]) -> tuple[int, int]:
    """Rows ``(start, stop)`` of a dataset of ``num_rows`` rows (of agents ``[K, n]`` in
    independent mode) that lanes ``lanes`` train on: lane ``c`` takes ``c * m .. (c + 1) * m``
    with ``m = num_rows // num_cores`` (see :func:`~jaxrl_pim.tabular.chunk`)."""
    lo, hi = lanes
    if config.independent:
        if num_rows != config.num_cores:
            raise ValueError(f"independent mode needs num_cores={config.num_cores} per-agent "
                             f"datasets; got {num_rows}")
        return lo, hi
    m = num_rows // config.num_cores
    if m == 0:
        raise ValueError(
            f"num_cores={config.num_cores} exceeds the dataset size {num_rows}: "
            "every lane needs at least one transition"
        )
    return lo * m, hi * m


def _process_chunks(
    config: TabularConfig, transitions: Transitions, lanes: tuple[int, int],
    num_rows: int | None,
) -> tuple[Transitions, int]:
    """This process's chunks ``[hi - lo, m]`` and the whole dataset's row count (or agents)."""
    lo, hi = lanes
    if num_rows is None:  # the whole dataset: validate all of it, keep this process's lanes
        chunks = chunk(config, transitions)
        whole = transitions.shape[0]
        if (lo, hi) == (0, config.num_cores):
            return chunks, whole
        return Transitions(*(np.asarray(x)[lo:hi] for x in chunks)), whole
    start, stop = process_rows(config, num_rows, lanes)
    want = (stop - start,) if not config.independent else (stop - start, *transitions.shape[1:])
    if transitions.shape[:1] != want[:1]:
        raise ValueError(f"this process holds lanes {lo}..{hi - 1}: it needs rows "
                         f"{start}..{stop - 1} of the {num_rows} ({stop - start}), got "
                         f"{transitions.shape[0]}")
    local = dataclasses.replace(config, num_cores=hi - lo)
    return chunk(local, transitions), num_rows


def run(
    config: TabularConfig,
    transitions: Transitions,
    key: jax.Array,
    num_devices: int | None = None,
    callback: Callback | None = None,
    *,
    num_rows: int | None = None,
) -> RunResult:
    """Train on ``num_devices`` devices (see :func:`run_mesh`) and time every phase.

    ``transitions`` is the whole dataset (``[M]``, or ``[K, n]`` in independent mode), or,
    with ``num_rows`` (the whole dataset's ``M``, or ``K``), only the rows this process's lanes
    train on (:func:`process_rows`). Across processes every process calls ``run`` with the
    same arguments but its own rows; a data error in any process stops all of them.
    """
    timer = PhaseTimer()
    mesh = run_mesh(config, num_devices)
    lanes = process_lanes(config, mesh)
    with timer.phase("prepare"):
        error: ValueError | None = None
        try:
            chunks, whole = _process_chunks(config, transitions, lanes, num_rows)
        except ValueError as err:
            error = err
        failed = failed_processes(error is None)
        if error is not None:
            raise error
        if failed:
            raise ValueError(f"process {failed[0]} rejected its part of the data (see its "
                             "output)")
    n_dev = mesh.devices.size
    use_mesh = mesh if n_dev > 1 else None
    sharding = NamedSharding(mesh, P(mesh.axis_names[0]))
    replicated = NamedSharding(mesh, P())
    lane_shape = (config.num_cores, *chunks.shape[1:])
    with timer.phase("transfer_in"):
        device_chunks = timer.block(
            jax.make_array_from_process_local_data(sharding, chunks, lane_shape))
    # across processes every process reads the whole table: gather it inside the program
    out = replicated if jax.process_count() > 1 else None
    train = jax.jit(make_train(config, use_mesh, callback), out_shardings=out)
    with timer.phase("compile"):
        compiled = train.lower(key, device_chunks).compile()
    with timer.phase("run"):
        q, metrics = timer.block(compiled(key, device_chunks))
    # sync time measured in isolation on the real shapes, times the number of rounds
    sync_fn = jax.jit(make_sync(config, use_mesh))
    if config.independent:
        sync_s = 0.0
    else:
        q_lanes = jax.make_array_from_process_local_data(
            sharding, np.zeros((lanes[1] - lanes[0], config.num_states, config.num_actions),
                               config.format.storage),
            (config.num_cores, config.num_states, config.num_actions))
        sync_s = time_call(lambda: sync_fn(q_lanes), repeats=5) * config.num_rounds
    run_s = timer.seconds.pop("run")
    sync_s = min(sync_s, run_s)
    timer.add("compute", run_s - sync_s)
    timer.add("sync", sync_s)
    with timer.phase("transfer_out"):
        q_host = np.asarray(jax.device_get(q))
        metrics_host = {k: np.asarray(jax.device_get(v)) for k, v in metrics.items()}
    timing = timer.as_dict(total=False)
    timing["total"] = sum(v for k, v in timing.items() if k != "compile")
    updates = config.num_cores * chunks.shape[1] * config.num_episodes
    return RunResult(
        q_host, metrics_host, timing, updates, updates / max(run_s, 1e-12),
        0 if config.independent else dropped_rows(config, whole), n_dev,
        jax.process_count(), lanes,
    )


def describe(config: TabularConfig) -> dict[str, Any]:
    """Short variant label pieces, e.g. ``{"variant": "Q-SEQ-INT32"}``."""
    algo = {"q": "Q", "sarsa": "SARSA"}[config.algo]
    return {"variant": f"{algo}-{config.sampling.upper()}-{config.dtype.upper()}"}
