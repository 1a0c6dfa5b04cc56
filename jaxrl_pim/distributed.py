"""Runs across processes and hosts with ``jax.distributed``: the library side.

A multi-process run is one program started once per process (on one host or several). The
processes join through ``jax.distributed`` (process 0 hosts the coordination service) and
see one global device list; a mesh over it spans every process, and the collectives of a
``shard_map`` program (``lax.psum``) cross processes (gloo over TCP on CPU). Each process
feeds only its own devices' shards (``jax.make_array_from_process_local_data``).

* :func:`initialize` joins a run (``jax.distributed.initialize``) from an explicit
  coordinator, process count and index, or, with none, from the environment of a cluster
  job (a SLURM ``srun`` step, an Open MPI ``mpirun``; see :func:`cluster_tasks`);
  :func:`check_flags` validates the three values first.
* :func:`failed_processes` tells every process which ones failed (a small collective), so a
  data error in one process stops all of them before training.
* :func:`describe_lost_peer` turns the error of a collective whose peer went away into one
  line.

The command-line side (the process options, the fault relay that folds the coordination
service's fatal report into one line, the local launcher ``jaxrl-pim launch``) lives in
:mod:`jaxrl_pim.cli.launch`. This module imports jax only inside functions.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import NamedTuple

#: Seconds without heartbeats after which the coordination service declares a process dead.
HEARTBEAT_TIMEOUT_S = 30
#: Seconds finished processes wait at exit for the others (process 0 evaluates and writes).
SHUTDOWN_TIMEOUT_S = 600
#: Seconds the processes wait for each other to join.
JOIN_TIMEOUT_S = 300


class Processes(NamedTuple):
    """Where this process stands in the run: ``index`` of ``count`` (0 of 1 when alone)."""

    index: int
    count: int

    @property
    def is_main(self) -> bool:
        """True on process 0, the one that evaluates and writes reports."""
        return self.index == 0


def cluster_tasks(environ: Mapping[str, str] | None = None) -> int:
    """Tasks of the job step this process was started in (a SLURM ``srun`` step or an Open
    MPI ``mpirun``), else 1. A plain command inside a SLURM allocation (no ``srun``) is 1."""
    env = os.environ if environ is None else environ
    for name in ("SLURM_STEP_NUM_TASKS", "OMPI_COMM_WORLD_SIZE"):
        value = env.get(name, "")
        if value.isdigit():
            return int(value)
    return 1


def parse_coordinator(address: str) -> tuple[str, int]:
    """Split ``HOST:PORT`` (IPv6 hosts in brackets); ValueError naming the flag otherwise."""
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise ValueError(f"--coordinator must be HOST:PORT with a port in [1, 65535]; "
                         f"got {address!r}")
    return host, int(port)


def check_flags(
    coordinator: str | None, num_processes: int | None, process_id: int | None,
    heartbeat_timeout_s: int = HEARTBEAT_TIMEOUT_S,
) -> None:
    """ValueError naming the flag unless the process flags describe a run (or are all None)."""
    given = [coordinator, num_processes, process_id]
    if any(v is not None for v in given) and any(v is None for v in given):
        raise ValueError("--coordinator, --num-processes and --process-id go together; "
                         f"got {coordinator!r}, {num_processes!r}, {process_id!r}")
    if coordinator is not None:
        parse_coordinator(coordinator)
        if num_processes < 1:
            raise ValueError(f"--num-processes must be >= 1, got {num_processes}")
        if not 0 <= process_id < num_processes:
            raise ValueError(f"--process-id must lie in [0, {num_processes - 1}], "
                             f"got {process_id}")
    if heartbeat_timeout_s < 1:
        raise ValueError(f"--heartbeat-timeout must be >= 1 s, got {heartbeat_timeout_s}")


def initialize(
    coordinator: str | None = None,
    num_processes: int | None = None,
    process_id: int | None = None,
    *,
    heartbeat_timeout_s: int = HEARTBEAT_TIMEOUT_S,
    join_timeout_s: int = JOIN_TIMEOUT_S,
    shutdown_timeout_s: int = SHUTDOWN_TIMEOUT_S,
) -> Processes:
    """Join a multi-process run (``jax.distributed.initialize``); call before any jax work.

    With ``coordinator``, ``num_processes`` and ``process_id`` all None the cluster
    environment supplies them (SLURM, Open MPI, Cloud TPU). Processes that have not all
    joined within ``join_timeout_s`` seconds fail; at exit a process waits up to
    ``shutdown_timeout_s`` seconds for the others to finish.
    """
    check_flags(coordinator, num_processes, process_id, heartbeat_timeout_s)
    import jax

    jax.distributed.initialize(
        coordinator, num_processes, process_id,
        initialization_timeout=join_timeout_s,
        heartbeat_timeout_seconds=heartbeat_timeout_s,
        shutdown_timeout_seconds=shutdown_timeout_s,
    )
    return Processes(jax.process_index(), jax.process_count())


def failed_processes(ok: bool) -> list[int]:
    """Tell every process whether this one is ``ok``; returns the indices that are not.

    All processes must call it at the same point (a small collective); with one process it
    returns ``[]`` or ``[0]`` without any communication.
    """
    import jax
    import numpy as np

    if jax.process_count() == 1:
        return [] if ok else [0]
    from jax.experimental import multihost_utils

    flags = np.asarray(multihost_utils.process_allgather(np.array([int(ok)], np.int32)))
    return [i for i, f in enumerate(flags.reshape(-1)) if not f]


def describe_lost_peer(err: BaseException) -> str:
    """One line for a collective that failed because another process went away."""
    text = " ".join(str(err).split())
    text = text.rsplit("Error dispatching computation: ", 1)[-1]
    return f"lost contact with another process of the run ({text[:300]})"
