"""What a tabular run would cost on processing-in-memory hardware: a counted-work cost model.

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


SOURCES: dict[str, dict[str, str]] = {
    "upmem": {
        "num_dpus": "SwiftRL (Gogineni et al., ISPASS 2024): up to 2,560 PIM cores; PrIM "
                    "(Gomez-Luna et al., IEEE Access 2022): 20 DIMMs, 2,560 DPUs",
        "frequency_hz": "UPMEM SDK user manual, 'DPU chip characteristics': v1A 350 MHz",
        "max_tasklets": "UPMEM SDK user manual: v1A <= 24 tasklets",
        "tasklets": "assumption: one tasklet per core, as SwiftRL's kernels are described "
                    "in the project's issue 17 (not checked against the paper's text)",
        "pipeline_depth": "UPMEM at Hot Chips 31 (AnandTech report) and PrIM: a 14-stage "
                          "pipeline that needs 11 tasklets for one instruction per cycle",
        "wram_bytes": "UPMEM SDK user manual: v1A WRAM <= 65,536 bytes",
        "mram_bytes": "UPMEM at Hot Chips 31 and PrIM: a 64 MB DRAM bank per DPU",
        "dma_latency_cycles": "PrIM: MRAM read latency alpha = 77 cycles (as read; not in "
                              "text stored with the project: assumption until checked)",
        "dma_cycles_per_byte": "PrIM: beta = 0.5 cycles per byte (as read; assumption "
                               "until checked)",
        "dma_block_bytes": "UPMEM SDK mram_read / mram_write: at most 2,048 bytes",
        "cpu_to_dpu_bytes_per_s": "PrIM: parallel CPU-DPU transfers into one rank of 64 "
                                  "DPUs, 6.68 GB/s (as read; a third-party note stored with "
                                  "the project quotes the same figure for 64 DPUs); applied "
                                  "to the whole system: an assumption, as rank-level effects "
                                  "are not modelled",
        "dpu_to_cpu_bytes_per_s": "PrIM: parallel DPU-CPU transfers out of one rank of 64 "
                                  "DPUs, 4.74 GB/s (as read; assumption until checked); "
                                  "applied to the whole system",
        "host_sync_bytes_per_s": "calibrated: Taxi Q-SEQ-INT32 sync share at 2,000 cores "
                                 "(SwiftRL); see pim.calibrate",
        "ops": "PrIM arithmetic throughput (see UPMEM_OPS; float compare an assumption)",
        "update_overhead_instructions": "calibrated: 2,000 independent agents, about 88.7 s "
                                        "(SwiftRL); see pim.calibrate",
    },
    "upmem-v1b": {
        "frequency_hz": "UPMEM SDK user manual, 'DPU chip characteristics': v1B 400 MHz",
        "max_tasklets": "UPMEM SDK user manual: v1B <= 16 tasklets",
        "wram_bytes": "UPMEM SDK user manual: v1B WRAM <= 63,488 bytes",
        "other fields": "as upmem (not published separately for v1B: assumption)",
    },
    "hbm-pim": {
        "num_dpus": "one Aquabolt-XL cube: 32 programmable computing units (PCUs) per PIM "
                    "die (The Memory Guy, 2022, on Samsung's ISSCC 2021 paper) x 4 PIM dies "
                    "(assumption: the die count is not in text stored with the project)",
        "frequency_hz": "Samsung HBM-PIM (Aquabolt-XL): PCUs at 300 MHz, FP16 ADD / MUL / "
                        "MAC / MAD, 1.2 TFLOPS per cube (Samsung announcement, Feb 2021)",
        "max_tasklets": "no hardware threads: one command stream from the host",
        "pipeline_depth": "assumption: one operation per cycle",
        "wram_bytes": "assumption: the PCU's register files (16 x 256-bit), so Q-tables stay "
                      "in the DRAM banks",
        "mram_bytes": "assumption: the two 32 MiB banks a PCU serves",
        "dma_latency_cycles": "assumption: a bank access of about 46 ns at 300 MHz",
        "dma_cycles_per_byte": "assumption: one 32-byte column per cycle",
        "dma_block_bytes": "assumption: a 256-byte burst (8 columns of 32 bytes)",
        "cpu_to_dpu_bytes_per_s": "assumption: HBM2 Aquabolt, 1,024 pins x 2.4 Gb/s = "
                                  "307.2 GB/s per cube (the host shares the PIM's bus)",
        "dpu_to_cpu_bytes_per_s": "as cpu_to_dpu (assumption)",
        "host_sync_bytes_per_s": "as cpu_to_dpu (assumption: a bound, no host overhead)",
        "ops": "one instruction per operation: FP16 is native; the PCU has no integer unit, "
               "so int32 estimates are a bound as if it had (assumption)",
    },
    "ideal": {
        "all": "a bound: UPMEM's cores and clock, transfers and DMA free, one instruction "
               "per operation and per cycle, tables always in WRAM",
    },
}

# The published SwiftRL figures (ISPASS 2024) the two calibrated parameters are fitted to;
# benchmarks/pim_published.py holds the same figures and benchmarks/pim_model.py checks that.
CALIBRATION_TARGETS: dict[str, Any] = {
    "multi_agent_2000_agents_s": 1943.78 / 21.92,  # Xeon seconds / PIM speed-up
    "multi_agent_workload": Workload(16, 4, "q", "seq", "int32", num_cores=2000,
                                     independent=True),
    "multi_agent_rows": 2000 * 10_000,
    "taxi_q_seq_int32_sync_share": 0.2079,
    "taxi_workload": Workload(500, 6, "q", "seq", "int32", num_cores=2000),
    "taxi_rows": 5_000_000,
}

_UPMEM_BASE = PIMSystem(
    name="upmem", num_dpus=2560, frequency_hz=350e6, max_tasklets=24, tasklets=1,
    pipeline_depth=11, wram_bytes=65536, mram_bytes=64 * 2**20, dma_latency_cycles=77.0,
    dma_cycles_per_byte=0.5, dma_block_bytes=2048, cpu_to_dpu_bytes_per_s=6.68e9,
    dpu_to_cpu_bytes_per_s=4.74e9, host_sync_bytes_per_s=1.0, ops=UPMEM_OPS)


def calibrate(base: PIMSystem = _UPMEM_BASE) -> dict[str, float]:
    """Fit the two free parameters in closed form, each to one published figure
    (:data:`CALIBRATION_TARGETS`): ``update_overhead_instructions`` so that 2,000
    independent FrozenLake agents (Q-SEQ-INT32 assumed) take the published time, then
    ``host_sync_bytes_per_s`` so that Taxi Q-SEQ-INT32 on 2,000 cores has the published
    sync share. Needs ``base.tasklets == 1`` (time then linear in the overhead)."""
    if base.tasklets != 1:
        raise ValueError("calibrate needs a one-tasklet system")
    t = CALIBRATION_TARGETS
    zero = dataclasses.replace(base, update_overhead_instructions=0.0)
    est = estimate(t["multi_agent_workload"], t["multi_agent_rows"], zero)
    per_instruction_s = (est.work["updates_per_dpu"] * base.pipeline_depth
                         / base.frequency_hz)
    overhead = (t["multi_agent_2000_agents_s"] - est.total) / per_instruction_s
    fitted = dataclasses.replace(zero, update_overhead_instructions=overhead)
    taxi = estimate(t["taxi_workload"], t["taxi_rows"], fitted)
    share = t["taxi_q_seq_int32_sync_share"]
    rest = taxi.transfer_in + taxi.kernel + taxi.transfer_out
    sync_s = share / (1 - share) * rest
    rate = taxi.work["sync_rounds"] * taxi.work["sync_bytes_per_round"] / sync_s
    return {"update_overhead_instructions": overhead, "host_sync_bytes_per_s": rate}


CALIBRATED: dict[str, float] = calibrate()
UPMEM = dataclasses.replace(_UPMEM_BASE, **CALIBRATED)
UPMEM_V1B = dataclasses.replace(UPMEM, name="upmem-v1b", frequency_hz=400e6,
                                max_tasklets=16, wram_bytes=63488)
HBM_PIM = PIMSystem(
    name="hbm-pim", num_dpus=128, frequency_hz=300e6, max_tasklets=1, tasklets=1,
    pipeline_depth=1, wram_bytes=512, mram_bytes=64 * 2**20, dma_latency_cycles=14.0,
    dma_cycles_per_byte=1 / 32, dma_block_bytes=256, cpu_to_dpu_bytes_per_s=307.2e9,
    dpu_to_cpu_bytes_per_s=307.2e9, host_sync_bytes_per_s=307.2e9, ops=OpCosts())
IDEAL = PIMSystem(
    name="ideal", num_dpus=2560, frequency_hz=350e6, max_tasklets=24, tasklets=1,
    pipeline_depth=1, wram_bytes=2**40, mram_bytes=64 * 2**20, dma_latency_cycles=0.0,
    dma_cycles_per_byte=0.0, dma_block_bytes=2048, cpu_to_dpu_bytes_per_s=math.inf,
    dpu_to_cpu_bytes_per_s=math.inf, host_sync_bytes_per_s=math.inf, ops=OpCosts())
SYSTEMS: dict[str, PIMSystem] = {"upmem": UPMEM, "upmem-v1b": UPMEM_V1B,
                                 "hbm-pim": HBM_PIM, "ideal": IDEAL}


def get_system(name: str) -> PIMSystem:
    """A preset by name (one of :data:`SYSTEM_NAMES`)."""
    if name not in SYSTEMS:
        raise ValueError(f"unknown PIM system {name!r}; choose from {', '.join(SYSTEMS)}")
    return SYSTEMS[name]


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


def report_estimate(config: TabularConfig, num_rows: int, name: str,
                    measured: Mapping[str, float]) -> dict[str, Any]:
    """For a command's ``--pim-estimate NAME``: print the projected phases next to the
    measured ``timing_s`` (seconds) and return what the report stores under
    ``results.pim_estimate`` (the system's name and parameters, the projected phases in
    seconds and their counted work)."""
    system = get_system(name)
    est = estimate(config, num_rows, system)
    print(f"Projected on {name} (jaxrl_pim.pim: a cost model, not a measurement; "
          "docs/pim.md):")
    print(side_by_side(measured, est))
    return {"system": name, "parameters": system.as_dict(), **est.as_dict()}
