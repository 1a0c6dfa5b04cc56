"""The PIM cost model itself: counted work per update, cycles, DMA and the time breakdown.

:func:`estimate` takes the same :class:`~jaxrl_pim.tabular.TabularConfig` the trainer runs
(any object with its fields will do), the dataset's row count and a :class:`PIMSystem`, and
returns a :class:`PIMEstimate` with SwiftRL's time breakdown (``transfer_in``, ``kernel``,
``sync``, ``transfer_out``, ``total``, seconds). Pure host code: importing this module loads
no JAX.

The model, per lane-holding core (DPU); every term is counted from the configuration:

* **Instructions per update** (:func:`update_instructions`): fetching the row's fields, the
  sampling (``seq`` / ``str``: pointer arithmetic; ``ran``: one LCG draw, ``x <- a x + c``,
  and a modulo for the row index), the bootstrap (Q-learning: the max over ``A`` entries;
  SARSA: an LCG draw for epsilon-greedy, a modulo with probability epsilon, otherwise the
  arg-max), and the update (fp32: 2 float multiplies and 3 float adds; int32 fixed point: 2
  32-bit multiplies, 2 divisions to rescale and 3 adds; fp16 and bf16 are costed as fp32,
  as UPMEM has no half-precision unit), the loop, and
  ``update_overhead_instructions``. Each operation costs :class:`OpCosts` instructions
  (integer add / compare native; 32-bit multiply, division and every float operation
  emulated in software on UPMEM).
* **Cycles per update** (:func:`cycles_per_update`): one tasklet issues an instruction every
  ``pipeline_depth`` cycles, ``T`` tasklets every ``max(pipeline_depth / T, 1)``. Rows stream
  from MRAM by DMA (``dma_latency_cycles + dma_cycles_per_byte * bytes`` per transfer):
  ``seq`` in blocks of ``dma_block_bytes``, ``str`` block-wise too but each block read once
  per stride offset (``stride`` times the bytes), ``ran`` one row-sized transfer per update.
  The Q-tables of a core's lanes stay in WRAM when they fit next to the tasklets' row
  buffers; otherwise every update reads ``Q[s, a]`` and the row ``Q[s']`` and writes
  ``Q[s, a]`` by DMA. One tasklet waits for its DMA (the cycles add); several overlap it with
  each other's instructions (the larger of the two, the DMA's fixed latency shared).
* **Kernel** = updates per core x cycles per update / frequency; updates per core = lanes
  per core (``ceil(lanes / num_dpus)``) x rows per lane x episodes.
* **Transfers**: the dataset (16-byte rows) and the initial tables CPU->DPU at
  ``cpu_to_dpu_bytes_per_s``; the final tables DPU->CPU at ``dpu_to_cpu_bytes_per_s``.
* **Sync**: ``ceil(episodes / sync_period)`` rounds, each gathering every lane's table and
  broadcasting the average (``2 x lanes x S x A x 4`` bytes) at ``host_sync_bytes_per_s``;
  none in the independent multi-agent mode.

Not modelled: tasklets sharing one lane's table (SwiftRL runs one tasklet per core; more
tasklets are modelled as splitting the core's updates, a what-if), the host's averaging as
arithmetic separate from the sync rate, the rank-level structure of transfers (64 DPUs per
rank, ranks in parallel), DPU launch latency, instruction-memory limits, and any compiler
effect not in the operation counts.

Two parameters are calibrated (:func:`calibrate`), each on one published SwiftRL figure
(:data:`CALIBRATION_TARGETS`); every other published figure is predicted
(``benchmarks/pim_model.py``, docs/pim.md).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the model reads the fields; the trainer (and jax) need not load
    from jaxrl_pim.tabular.trainer import TabularConfig

ROW_BYTES = 16  # one transition: s, a, r, s' as four 32-bit words
ENTRY_BYTES = 4  # one Q-table entry (fp32 or int32; fp16/bf16 tables are stored as 4 bytes)
SYSTEM_NAMES = ("upmem", "upmem-v1b", "hbm-pim", "ideal")


@dataclasses.dataclass(frozen=True)
class OpCosts:
    """Instructions one operation takes on a core (an emulated operation is a routine).

    Attributes:
      int_add, int_compare, load, store: native, 1 instruction each on UPMEM.
      int_mul, int_div: 32-bit multiply and divide (emulated on UPMEM with multiply /
        divide step instructions).
      fp_add, fp_mul, fp_compare: 32-bit float add (or subtract), multiply, compare
        (emulated on UPMEM).
    """

    int_add: float = 1.0
    int_compare: float = 1.0
    load: float = 1.0
    store: float = 1.0
    int_mul: float = 1.0
    int_div: float = 1.0
    fp_add: float = 1.0
    fp_mul: float = 1.0
    fp_compare: float = 1.0


# UPMEM's emulated operations, in instructions, from PrIM's arithmetic throughput (Gomez-Luna
# et al., IEEE Access 2022, Fig. "arithmetic throughput", 32-bit operations with 16 tasklets
# at 350 MHz: int32 ADD 58.56, MUL 10.27, DIV 11.27, float ADD 4.91, MUL 1.91 MOPS) as
# 350 / MOPS instructions per element minus the 5 of the benchmark's loop; these throughput
# figures are quoted from the paper as read, not from text stored with the project
# (assumption until checked). Float compare is not measured there: an assumption, the cost of
# a float add (both unpack two operands' sign, exponent and mantissa).
UPMEM_OPS = OpCosts(int_add=1, int_compare=1, load=1, store=1, int_mul=29, int_div=26,
                    fp_add=66, fp_mul=178, fp_compare=66)


@dataclasses.dataclass(frozen=True)
class PIMSystem:
    """A PIM system's named hardware parameters (units in the names; sources in
    :data:`SOURCES`, keyed by the preset's ``name`` and the field).

    Attributes:
      name: the preset's name.
      num_dpus: cores (UPMEM DPUs, HBM-PIM PCUs); lanes beyond them run one after another.
      frequency_hz: core clock.
      max_tasklets: hardware threads per core.
      tasklets: threads the kernel uses (SwiftRL: 1 per core).
      pipeline_depth: cycles between two instructions of one tasklet; with this many
        tasklets or more a core issues one instruction per cycle.
      wram_bytes, mram_bytes: scratchpad and DRAM bank per core.
      dma_latency_cycles, dma_cycles_per_byte: MRAM<->WRAM transfer cost, fixed + per byte.
      dma_block_bytes: the largest DMA transfer (the row buffer of one tasklet).
      cpu_to_dpu_bytes_per_s, dpu_to_cpu_bytes_per_s: parallel host transfers, all cores.
      host_sync_bytes_per_s: tables gathered and broadcast per second in a sync round,
        including the host's averaging (calibrated for UPMEM; see :func:`calibrate`).
      ops: instructions per operation.
      update_overhead_instructions: instructions per update not counted operation by
        operation (calibrated for UPMEM).
    """

    name: str
    num_dpus: int
    frequency_hz: float
    max_tasklets: int
    tasklets: int
    pipeline_depth: int
    wram_bytes: int
    mram_bytes: int
    dma_latency_cycles: float
    dma_cycles_per_byte: float
    dma_block_bytes: int
    cpu_to_dpu_bytes_per_s: float
    dpu_to_cpu_bytes_per_s: float
    host_sync_bytes_per_s: float
    ops: OpCosts
    update_overhead_instructions: float = 0.0

    def __post_init__(self) -> None:
        for field in ("num_dpus", "max_tasklets", "pipeline_depth", "dma_block_bytes"):
            if int(getattr(self, field)) < 1:
                raise ValueError(f"{field} must be >= 1, got {getattr(self, field)}")
        if not 1 <= self.tasklets <= self.max_tasklets:
            raise ValueError(f"tasklets must be in [1, {self.max_tasklets}], got "
                             f"{self.tasklets}")
        for field in ("frequency_hz", "cpu_to_dpu_bytes_per_s", "dpu_to_cpu_bytes_per_s",
                      "host_sync_bytes_per_s"):
            if not getattr(self, field) > 0:
                raise ValueError(f"{field} must be > 0, got {getattr(self, field)}")

    def as_dict(self) -> dict[str, Any]:
        """The parameters as JSON values (infinite rates as the string ``"inf"``)."""
        out = dataclasses.asdict(self)
        return {k: ("inf" if isinstance(v, float) and math.isinf(v) else v)
                for k, v in out.items()}


@dataclasses.dataclass(frozen=True)
class PIMEstimate:
    """A projected run: SwiftRL's phases in seconds and the counted work behind them."""

    transfer_in: float
    kernel: float
    sync: float
    transfer_out: float
    work: Mapping[str, Any]

    @property
    def total(self) -> float:
        """Seconds, the sum of the four phases."""
        return self.transfer_in + self.kernel + self.sync + self.transfer_out

    def share(self, phase: str) -> float:
        """A phase's fraction of :attr:`total`."""
        return getattr(self, phase) / self.total

    def as_dict(self) -> dict[str, Any]:
        """Phases (seconds), total and the counted work, as JSON values."""
        return {"transfer_in": self.transfer_in, "kernel": self.kernel, "sync": self.sync,
                "transfer_out": self.transfer_out, "total": self.total,
                "work": dict(self.work)}


def update_instructions(config: TabularConfig, ops: OpCosts) -> dict[str, float]:
    """Instructions of one update by part (``fetch``, ``sample``, ``bootstrap``,
    ``update``, ``loop``), overhead excluded."""
    a = config.num_actions
    fp = config.dtype != "int32"
    cmp_ = ops.fp_compare if fp else ops.int_compare
    fetch = 4 * ops.load + 4 * ops.int_add  # s, a, r, s'; row and entry addresses
    if config.sampling == "ran":  # LCG draw, row = draw mod rows, its address
        sample = ops.int_mul + 2 * ops.int_add + ops.int_div
    elif config.sampling == "str":  # next row at +stride, wrap to the next offset
        sample = 3 * ops.int_add + ops.int_compare
    else:
        sample = 2 * ops.int_add + ops.int_compare
    argmax = a * ops.load + (a - 1) * (cmp_ + ops.int_add)
    if config.algo == "q":
        bootstrap = argmax + ops.int_compare  # terminal rows do not bootstrap
    else:  # epsilon-greedy a': draw, threshold, random action mod A or the arg-max
        eps = config.epsilon
        bootstrap = (ops.int_mul + ops.int_add + ops.int_compare + eps * ops.int_div
                     + (1 - eps) * argmax + ops.load + ops.int_compare)
    if fp:
        update = 2 * ops.fp_mul + 3 * ops.fp_add + ops.load + ops.store
    else:  # gamma * max and alpha * delta, each rescaled by the fixed-point scale
        update = 2 * ops.int_mul + 2 * ops.int_div + 3 * ops.int_add + ops.load + ops.store
    loop = 2 * ops.int_add + ops.int_compare
    return {"fetch": fetch, "sample": sample, "bootstrap": bootstrap, "update": update,
            "loop": loop}


def lanes_per_dpu(config: TabularConfig, system: PIMSystem) -> int:
    """Lanes one core runs, one after another: ``ceil(num_cores / num_dpus)``."""
    return -(-config.num_cores // system.num_dpus)


def table_in_wram(config: TabularConfig, system: PIMSystem) -> bool:
    """Whether a core's lane tables fit in WRAM next to its tasklets' row buffers."""
    tables = lanes_per_dpu(config, system) * config.num_states * config.num_actions
    return (tables * ENTRY_BYTES + system.tasklets * system.dma_block_bytes
            <= system.wram_bytes)


def _dma(system: PIMSystem, nbytes: float) -> float:
    return system.dma_latency_cycles + system.dma_cycles_per_byte * nbytes


def dma_per_update(config: TabularConfig, system: PIMSystem) -> dict[str, float]:
    """MRAM<->WRAM work of one update: ``transfers`` (count), ``bytes`` and ``cycles``."""
    rows_per_block = system.dma_block_bytes // ROW_BYTES
    if config.sampling == "ran":
        n, nbytes = 1.0, float(ROW_BYTES)
    else:
        reads = config.stride if config.sampling == "str" else 1
        n, nbytes = reads / rows_per_block, float(reads * ROW_BYTES)
    cycles = n * system.dma_latency_cycles + system.dma_cycles_per_byte * nbytes
    if not table_in_wram(config, system):  # read Q[s, a] and Q[s'], write Q[s, a]
        row = max(8, -(-config.num_actions * ENTRY_BYTES // 8) * 8)
        n += 3
        nbytes += row + 16
        cycles += _dma(system, row) + 2 * _dma(system, 8)
    return {"transfers": n, "bytes": nbytes, "cycles": cycles}


def cycles_per_update(config: TabularConfig, system: PIMSystem) -> dict[str, float]:
    """Core cycles per update (amortised over the tasklets): ``compute``, ``dma`` and
    ``total``."""
    instr = sum(update_instructions(config, system.ops).values())
    instr += system.update_overhead_instructions
    t = system.tasklets
    compute = instr * max(system.pipeline_depth / t, 1.0)
    dma = dma_per_update(config, system)
    if t == 1:
        total = compute + dma["cycles"]
    else:
        shared = (dma["cycles"] - dma["transfers"] * system.dma_latency_cycles
                  + dma["transfers"] * system.dma_latency_cycles / t)
        total = max(compute, shared)
    return {"instructions": instr, "compute": compute, "dma": dma["cycles"], "total": total}


def estimate(config: TabularConfig, num_rows: int, system: PIMSystem) -> PIMEstimate:
    """Project a run of ``config`` over a dataset of ``num_rows`` transitions (all lanes
    together; the remainder that does not divide into the lanes is dropped, as the trainer
    does) onto ``system``. Seconds per phase; see the module docstring for the equations."""
    if num_rows < config.num_cores:
        raise ValueError(f"num_rows={num_rows} is fewer than one row per lane "
                         f"({config.num_cores} lanes)")
    lanes = config.num_cores
    rows_per_lane = num_rows // lanes
    per_core = lanes_per_dpu(config, system)
    updates = per_core * rows_per_lane * config.num_episodes
    cycles = cycles_per_update(config, system)
    kernel = updates * cycles["total"] / system.frequency_hz
    table_bytes = config.num_states * config.num_actions * ENTRY_BYTES
    bytes_in = lanes * rows_per_lane * ROW_BYTES + lanes * table_bytes
    bytes_out = lanes * table_bytes
    rounds = 0 if config.independent else -(-config.num_episodes // config.sync_period)
    sync_bytes = 2 * lanes * table_bytes
    work = {
        "system": system.name, "lanes": lanes, "lanes_per_dpu": per_core,
        "rows_per_lane": rows_per_lane, "updates_per_dpu": updates,
        "instructions_per_update": cycles["instructions"],
        "cycles_per_update": cycles["total"], "compute_cycles_per_update": cycles["compute"],
        "dma_cycles_per_update": cycles["dma"],
        "table_in_wram": table_in_wram(config, system), "table_bytes": table_bytes,
        "bytes_in": bytes_in, "bytes_out": bytes_out, "sync_rounds": rounds,
        "sync_bytes_per_round": sync_bytes,
    }
    return PIMEstimate(
        transfer_in=bytes_in / system.cpu_to_dpu_bytes_per_s,
        kernel=kernel,
        sync=rounds * sync_bytes / system.host_sync_bytes_per_s,
        transfer_out=bytes_out / system.dpu_to_cpu_bytes_per_s,
        work=work,
    )


@dataclasses.dataclass(frozen=True)
class Workload:
    """The fields of :class:`~jaxrl_pim.tabular.TabularConfig` the model reads, with the
    same defaults (for host code that does not load the trainer)."""

    num_states: int
    num_actions: int
    algo: str = "q"
    sampling: str = "seq"
    dtype: str = "fp32"
    num_cores: int = 2000
    sync_period: int = 50
    num_episodes: int = 2000
    epsilon: float = 0.1
    stride: int = 4
    independent: bool = False


PHASES = (("transfer_in", "transfer_in"), ("compute", "kernel"), ("sync", "sync"),
          ("transfer_out", "transfer_out"), ("total", "total"))


def side_by_side(measured: Mapping[str, float], est: PIMEstimate) -> str:
    """A table of the measured phases (seconds, ``timing_s`` of a run: ``compute`` is the
    kernel) next to the projected ones, with each projected phase's share of the total."""
    proj = est.as_dict()
    lines = [f"{'phase':<13} {'measured s':>12} {est.work['system'] + ' s':>14} {'share':>7}"]
    for run_key, pim_key in PHASES:
        m = measured.get(run_key)
        ms = f"{m:12.4f}" if isinstance(m, (int, float)) else f"{'-':>12}"
        share = proj[pim_key] / est.total if est.total > 0 else 0.0
        lines.append(f"{run_key:<13} {ms} {proj[pim_key]:14.4f} {share:7.1%}")
    return "\n".join(lines)
