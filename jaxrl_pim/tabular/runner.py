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
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from jaxrl_pim.data.transitions import Transitions
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
      updates: number of Q-updates performed over all lanes.
      updates_per_s: ``updates / (compute + sync)``.
      dropped_rows: dataset rows left out by chunking.
      num_devices: devices the lanes ran on.
    """

    q_table: np.ndarray
    metrics: dict[str, np.ndarray]
    timing_s: dict[str, float]
    updates: int
    updates_per_s: float
    dropped_rows: int
    num_devices: int


def run(
    config: TabularConfig,
    transitions: Transitions,
    key: jax.Array,
    num_devices: int | None = None,
    callback: Callback | None = None,
) -> RunResult:
    """Train on ``num_devices`` devices and time every phase.

    By default, the largest number of visible devices that divides ``num_cores``.
    """
    timer = PhaseTimer()
    with timer.phase("prepare"):
        chunks = chunk(config, transitions)
    if num_devices is None:
        num_devices = max(d for d in range(1, len(jax.devices()) + 1) if config.num_cores % d == 0)
    mesh = make_mesh(num_devices)
    n_dev = mesh.devices.size
    if config.num_cores % n_dev:
        raise ValueError(
            f"num_cores={config.num_cores} is not divisible by the {n_dev} devices in use; "
            "choose --devices or --cores so that it divides"
        )
    use_mesh = mesh if n_dev > 1 else None
    sharding = NamedSharding(mesh, P(mesh.axis_names[0]))
    with timer.phase("transfer_in"):
        device_chunks = timer.block(jax.device_put(chunks, sharding))
    train = jax.jit(make_train(config, use_mesh, callback))
    with timer.phase("compile"):
        compiled = train.lower(key, device_chunks).compile()
    with timer.phase("run"):
        q, metrics = timer.block(compiled(key, device_chunks))
    # sync time measured in isolation on the real shapes, times the number of rounds
    sync_fn = jax.jit(make_sync(config, use_mesh))
    if config.independent:
        sync_s = 0.0
    else:
        q_lanes = jax.device_put(
            np.zeros((config.num_cores, config.num_states, config.num_actions),
                     config.format.storage), sharding)
        sync_s = time_call(lambda: sync_fn(q_lanes), repeats=5) * config.num_rounds
    run_s = timer.seconds.pop("run")
    sync_s = min(sync_s, run_s)
    timer.add("compute", run_s - sync_s)
    timer.add("sync", sync_s)
    with timer.phase("transfer_out"):
        q_host = np.asarray(jax.device_get(q))
        metrics_host = {k: np.asarray(v) for k, v in metrics.items()}
    timing = timer.as_dict(total=False)
    timing["total"] = sum(v for k, v in timing.items() if k != "compile")
    updates = chunks.num_rows * config.num_episodes
    return RunResult(
        q_host, metrics_host, timing, updates, updates / max(run_s, 1e-12),
        dropped_rows(config, transitions.num_rows), n_dev,
    )


def describe(config: TabularConfig) -> dict[str, Any]:
    """Short variant label pieces, e.g. ``{"variant": "Q-SEQ-INT32"}``."""
    algo = {"q": "Q", "sarsa": "SARSA"}[config.algo]
    return {"variant": f"{algo}-{config.sampling.upper()}-{config.dtype.upper()}"}
