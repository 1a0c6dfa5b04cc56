"""What a sampling round and a replay buffer take, and the capacity that fits.

Bytes of one stored time step (:func:`row_bytes`) and of one round (:func:`round_bytes`), the
gathers a round makes (:func:`gather_counts`), the memory of this host and device
(:func:`host_memory`, :func:`device_memory`; the host's read by
:func:`jaxrl_pim.marl.plan.host_meminfo`), the largest capacity that fits them
(:func:`fit_capacity`) and the memory model of the results file (:func:`memory_model`).
"""

from __future__ import annotations

import os
from typing import Any

import jax

from jaxrl_pim.marl.plan import host_meminfo

ACTION_DIM = 5
GIB = 2**30
MIB = 2**20
# Priority state per row, upper bound: the prioritised sum tree, the info-prioritised sum and
# max trees (2P float32 each, P < 2C leaves) and the float32 priority draw: 4 (2 + 4) P + 4 C
# + transient tree levels 8 P <= 68 C.
PRIORITY_BYTES_PER_ROW = 68
PY_BYTES_MARGIN = 1.25  # planning margin on the measured Python bytes per agent and row
MEMORY_TARGETS = {
    "cpu_24GiB": 24 * GIB,
    "h100_80GB_xla_default_75pct": int(0.75 * 81_559 * MIB),
    "h100_80GB_xla_95pct": int(0.95 * 81_559 * MIB),
    "h200_141GB_xla_default_75pct": int(0.75 * 143_771 * MIB),
    "h200_141GB_xla_95pct": int(0.95 * 143_771 * MIB),
}


def obs_dim(num_agents: int) -> int:
    """Cooperative-navigation observation length ``4 + 2L + 4(N-1)`` with ``L = N``."""
    return 4 + 2 * num_agents + 4 * (num_agents - 1)


def row_bytes_by_field(num_agents: int) -> dict[str, int]:
    """Bytes of one stored time step (all ``N`` agents, float32) per field, and ``total``."""
    n, o = num_agents, obs_dim(num_agents)
    fields = {"obs": 4 * n * o, "action": 4 * n * ACTION_DIM, "reward": 4 * n,
              "next_obs": 4 * n * o, "done": 4 * n}
    return {**fields, "total": sum(fields.values())}


def row_bytes(num_agents: int) -> int:
    """Bytes of one stored time step (all agents, float32): ``4 N (2 O + A + 2)``."""
    return 4 * num_agents * (2 * obs_dim(num_agents) + ACTION_DIM + 2)


def round_bytes(num_agents: int, batch: int) -> dict[str, int]:
    """Bytes per faithful round: the batch (``output``), the least traffic any implementation
    moves (read the rows, write the batch: ``2 * output``) and the agent-major JAX order's
    (gather then transpose: ``4 * output``); the fast mode's batch is ``batch * row_bytes``."""
    out = num_agents * batch * row_bytes(num_agents)
    return {"output": out, "min_traffic": 2 * out, "agent_major_traffic": 4 * out,
            "fast_mode_output": batch * row_bytes(num_agents),
            "fast_mode_min_traffic": 2 * batch * row_bytes(num_agents)}


def working_bytes(num_agents: int, batch: int, host_is_device: bool) -> int:
    """Memory besides the buffers: the JAX side's donated batch plus the agent-major round
    (gather and transposed copy), on a CPU also the NumPy round's stacked arrays (twice)."""
    out = round_bytes(num_agents, batch)["output"]
    return 3 * out + (2 * out if host_is_device else 0)


def fit_capacity(num_agents: int, requested: int, device_free: int, host_free: int,
                 host_is_device: bool, py_bytes: float) -> int:
    """Largest capacity ``<= requested`` whose JAX buffer (+ priority trees) and NumPy baseline
    (Python objects; plus a host copy of the data when the device is not the host) fit."""
    rb = row_bytes(num_agents)
    py_row = num_agents * py_bytes
    if host_is_device:
        rows = device_free // (rb + PRIORITY_BYTES_PER_ROW + py_row)
    else:
        rows = min(device_free // (rb + PRIORITY_BYTES_PER_ROW), host_free // (rb + py_row))
    return int(max(0, min(requested, rows)))


def host_memory() -> dict[str, Any]:
    """``MemAvailable`` of ``/proc/meminfo`` (what other processes leave free now) and its
    ``MemTotal``, read by :func:`jaxrl_pim.marl.plan.host_meminfo`; else the physical memory."""
    info = host_meminfo()
    if "MemAvailable" in info:
        return {"bytes": info["MemAvailable"], "total_bytes": info.get("MemTotal"),
                "source": "MemAvailable of /proc/meminfo at start (host memory, shared)"}
    phys = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return {"bytes": int(phys), "source": "physical memory (sysconf)"}


def device_memory() -> dict[str, Any]:
    """The default device's memory: the XLA allocator's ``bytes_limit`` on a GPU/TPU, the
    host's (:func:`host_memory`) on a CPU."""
    dev = jax.devices()[0]
    try:
        stats = dev.memory_stats() or {}
    except Exception:  # noqa: BLE001 -- some backends do not implement memory_stats
        stats = {}
    if stats.get("bytes_limit"):
        return {"bytes": int(stats["bytes_limit"]),
                "source": f"XLA allocator bytes_limit of {dev.device_kind}"}
    return host_memory()


def memory_model(batch: int, py_bytes: float, requested: int = 1_000_000) -> dict[str, Any]:
    """Bytes per row and the largest buffer that fits each of ``MEMORY_TARGETS``, N = 3..48.

    ``rows_buffer_only``: the memory divided by ``row_bytes``; ``rows_benchmark``: after this
    benchmark's working set and priority trees (the CPU target also holds the NumPy
    baseline's Python objects at ``py_bytes`` per agent and row).
    """
    model: dict[str, Any] = {}
    for n in (3, 6, 12, 24, 48):
        rb = row_bytes(n)
        per_target = {}
        for name, mem in MEMORY_TARGETS.items():
            host = name.startswith("cpu")
            free = mem - working_bytes(n, batch, host)
            rows = fit_capacity(n, 10**12, free, 10**15, host, py_bytes if host else 0.0)
            per_target[name] = {"memory_bytes": mem, "rows_buffer_only": mem // rb,
                                "rows_benchmark": rows, "fits_requested": rows >= requested}
        model[str(n)] = {"obs_dim": obs_dim(n), "row_bytes": row_bytes_by_field(n),
                         "requested_rows": requested, "requested_bytes": requested * rb,
                         "targets": per_target}
    return model


def gather_counts(num_agents: int, batch: int) -> dict[str, dict[str, int]]:
    """Logical gathers (one index set read from one array) and row reads per round."""
    n, b = num_agents, batch
    faithful = {"gathers": n, "row_reads": n * b}
    return {
        "numpy": {"gathers": n * n, "row_reads": n * n * b},
        "per_agent": {"gathers": n * n, "row_reads": n * n * b},
        "interleaved_faithful": faithful,
        "interleaved_faithful_agent_major": faithful,
        "interleaved": {"gathers": 1, "row_reads": b},
    }
