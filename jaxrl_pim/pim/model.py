"""The PIM cost model itself: counted work per update, cycles, DMA, transfers and the time
breakdown.

:func:`estimate` takes the same :class:`~jaxrl_pim.tabular.config.TabularConfig` the trainer
runs, the dataset's row count and a :class:`PIMSystem`, and returns a :class:`PIMEstimate`
with SwiftRL's time breakdown (``transfer_in``, ``kernel``, ``sync``, ``transfer_out``,
``total``, seconds). The model reads the config's :data:`MODEL_FIELDS` only. Pure host code:
importing this module (and the config's, :mod:`jaxrl_pim.tabular.config`) loads no JAX.

The model, per lane-holding core (DPU); every term is counted from the configuration:

* **Instructions per update** (:func:`update_instructions`, by part): fetching the row's
  fields, the sampling (``seq`` / ``str``: pointer arithmetic; ``ran``: one LCG draw,
  ``x <- a x + c``, and a modulo for the row index), the bootstrap (Q-learning: the max over
  ``A`` entries and the terminal test; SARSA: an LCG draw turned into a real
  ``u = x / 2^32`` and compared with epsilon -- in floating point in every format, as the
  draw is a real number in the published algorithm --, with probability epsilon a second
  draw and a modulo, otherwise the arg-max), and the update (int32 fixed point: 2 32-bit
  multiplies, 2 divisions to rescale and 3 adds; fp32: the reward converted, 2 multiplies
  and 3 adds). :attr:`PIMSystem.literal_precision` says how the kernel was compiled:
  ``"single"`` costs the fp32 update (and the SARSA draw) in single precision; ``"double"``
  reproduces C kernels whose constants (``0.1``, ``0.95``) carry no ``f`` suffix, so the
  update is promoted to double: the operands converted float -> double, 2 double multiplies
  and 3 double adds, the result converted back. fp16 and bf16 are costed as fp32 (UPMEM has
  no half-precision unit). Each operation costs :class:`OpCosts` instructions.
* **Cycles per update** (:func:`cycles_per_update`): one tasklet issues an instruction every
  ``pipeline_depth`` cycles, ``T`` tasklets every ``max(pipeline_depth / T, 1)``. Rows stream
  from MRAM by DMA (``dma_latency_cycles + dma_cycles_per_byte * bytes`` per read; a write's
  fixed cost is ``dma_write_latency_cycles``): ``seq`` in blocks of ``dma_block_bytes``,
  ``str`` block-wise too but each block read once per stride offset, ``ran`` one row-sized
  transfer per update. Tables that do not fit WRAM next to the tasklets' row buffers are read
  and written by DMA at every update. One tasklet waits for its DMA (the cycles add); several
  overlap it with each other's instructions.
* **Kernel** = updates per core x cycles per update / frequency.
* **Transfers** (:class:`Transfer`, one per phase, its mode named in the estimate): ``serial``
  copies to one DPU after another (per DPU: ``calls`` host calls of ``latency_s`` each and its
  bytes at ``bytes_per_s``); ``parallel`` copies a buffer per DPU rank by rank, the ranks in
  parallel (``calls`` latencies and one rank's bytes at the rank's ``bytes_per_s``);
  ``broadcast`` sends one buffer to every DPU of a rank, the ranks in parallel (the same
  arithmetic with the broadcast rate). ``transfer_in`` moves the rows and the initial
  tables, ``transfer_out`` the final tables.
* **Sync**: ``ceil(episodes / sync_period)`` rounds (``TabularConfig.num_rounds``), each
  gathering every lane's table (``sync_gather``), averaging them on the host
  (``host_average_s_per_entry`` per lane's table entry) and broadcasting the average
  (``sync_broadcast``); none in the independent multi-agent mode.

Not modelled: tasklets sharing one lane's table (SwiftRL runs one tasklet per core; more
tasklets are modelled as splitting the core's updates, a what-if), host threads fewer than
the ranks, DPU launch latency, instruction-memory limits, and any compiler effect not in the
operation counts.

Three parameters are calibrated (:func:`~jaxrl_pim.pim.presets.calibrate`), each on one
published SwiftRL figure; every other published figure is predicted
(``benchmarks/pim_model.py``, docs/pim.md).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

from jaxrl_pim.tabular.config import TabularConfig  # jax-free: the trainer does not load

ROW_BYTES = 16  # one transition: s, a, r, s' as four 32-bit words
ENTRY_BYTES = 4  # one Q-table entry (fp32 or int32; fp16/bf16 tables are stored as 4 bytes)
SYSTEM_NAMES = ("swiftrl", "upmem", "upmem-v1b", "hbm-pim", "ideal")
TRANSFER_MODES = ("serial", "parallel", "broadcast")
LITERAL_PRECISIONS = ("single", "double")
TRANSFER_PHASES = ("transfer_in", "transfer_out", "sync_gather", "sync_broadcast")
#: The :class:`TabularConfig` fields the model reads (the others do not change its estimate).
MODEL_FIELDS = ("num_states", "num_actions", "algo", "sampling", "dtype", "num_cores",
                "sync_period", "num_episodes", "epsilon", "stride", "independent")


@dataclasses.dataclass(frozen=True)
class OpCosts:
    """Instructions one operation takes on a core (an emulated operation is a routine).

    Attributes:
      int_add, int_compare, load, store: native, 1 instruction each on UPMEM.
      int_mul, int_div: 32-bit multiply and divide (emulated on UPMEM with multiply /
        divide step instructions).
      fp_add, fp_mul, fp_compare: 32-bit float add (or subtract), multiply, compare.
      fp64_add, fp64_mul, fp64_compare: 64-bit (double) float add, multiply, compare.
      cvt_int_fp: an integer converted to a float or a double.
      cvt_fp_fp: a float converted to a double or back.
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
    fp64_add: float = 1.0
    fp64_mul: float = 1.0
    fp64_compare: float = 1.0
    cvt_int_fp: float = 1.0
    cvt_fp_fp: float = 1.0


# UPMEM's emulated operations, in instructions, from PrIM's arithmetic throughput (Gomez-Luna
# et al., IEEE Access 2022, Fig. "arithmetic throughput", 16 tasklets at 350 MHz: int32 ADD
# 58.56, MUL 10.27, DIV 11.27; float ADD 4.91, MUL 1.91; double ADD 3.32, MUL 0.53 MOPS) as
# 350 / MOPS instructions per element minus the 5 of the benchmark's loop (its int32 add loop
# is 350 / 58.56 = 6 instructions). The three ADD costs are checked against PrIM's released
# profiles (Microbenchmarks/Arithmetic-Throughput/profile/ADD_*_tl*.txt: 6.02, 71.3 and 105.3
# cycles per element at 11 or more tasklets; tests/test_pim.py); MUL and DIV have no released
# profile: as read, varied by jaxrl_pim.pim.sensitivity. Compares are not measured there:
# assumed to cost an add of the same type; conversions are not measured either: assumed 20
# instructions (unpack, shift, repack).
UPMEM_OPS = OpCosts(int_add=1, int_compare=1, load=1, store=1, int_mul=29, int_div=26,
                    fp_add=66, fp_mul=178, fp_compare=66, fp64_add=100, fp64_mul=655,
                    fp64_compare=100, cvt_int_fp=20, cvt_fp_fp=20)


@dataclasses.dataclass(frozen=True)
class Transfer:
    """How the host moves one phase's data: a mode, a per-call latency and a bandwidth.

    Attributes:
      mode: ``"serial"`` (one DPU after another), ``"parallel"`` (a buffer per DPU, rank by
        rank, ranks in parallel) or ``"broadcast"`` (one buffer to every DPU of a rank, ranks
        in parallel).
      latency_s: seconds per host call (serial: per DPU and call; parallel / broadcast: per
        call, the ranks' calls overlapping).
      bytes_per_s: serial: one DPU's rate; parallel / broadcast: one rank's rate.
      calls: host calls per DPU (serial) or per rank (parallel / broadcast), e.g. one per
        column copied.
    """

    mode: str
    latency_s: float
    bytes_per_s: float
    calls: int = 1

    def __post_init__(self) -> None:
        if self.mode not in TRANSFER_MODES:
            raise ValueError(f"mode must be one of {', '.join(TRANSFER_MODES)}, got "
                             f"{self.mode!r}")
        if not self.latency_s >= 0:
            raise ValueError(f"latency_s must be >= 0, got {self.latency_s}")
        if not self.bytes_per_s > 0:
            raise ValueError(f"bytes_per_s must be > 0, got {self.bytes_per_s}")
        if int(self.calls) < 1:
            raise ValueError(f"calls must be >= 1, got {self.calls}")


def transfer_seconds(t: Transfer, num_dpus: int, bytes_per_dpu: float,
                     dpus_per_rank: int) -> float:
    """Seconds to move ``bytes_per_dpu`` to (or from) each of ``num_dpus`` DPUs.

    serial: ``num_dpus x (calls x latency + bytes_per_dpu / rate)``; parallel and broadcast:
    ``calls x latency + min(num_dpus, dpus_per_rank) x bytes_per_dpu / rate`` (the ranks in
    parallel, each rank's DPUs at the rank's rate). Zero DPUs or bytes cost nothing."""
    if num_dpus <= 0 or bytes_per_dpu <= 0:
        return 0.0
    if t.mode == "serial":
        return num_dpus * (t.calls * t.latency_s + bytes_per_dpu / t.bytes_per_s)
    return t.calls * t.latency_s + min(num_dpus, dpus_per_rank) * bytes_per_dpu / t.bytes_per_s


def _free() -> Transfer:
    return Transfer("parallel", 0.0, math.inf)


@dataclasses.dataclass(frozen=True)
class PIMSystem:
    """A PIM system's named hardware and host parameters (units in the names; sources in
    :data:`~jaxrl_pim.pim.presets.SOURCES`, keyed by the preset's ``name`` and the field).

    Attributes:
      name: the preset's name.
      num_dpus: cores (UPMEM DPUs, HBM-PIM PCUs); lanes beyond them run one after another.
      frequency_hz: core clock.
      max_tasklets: hardware threads per core.
      tasklets: threads the kernel uses (SwiftRL: 1 per core).
      pipeline_depth: cycles between two instructions of one tasklet; with this many
        tasklets or more a core issues one instruction per cycle.
      wram_bytes, mram_bytes: scratchpad and DRAM bank per core.
      dma_latency_cycles, dma_write_latency_cycles, dma_cycles_per_byte: MRAM -> WRAM read
        and WRAM -> MRAM write cost, fixed + per byte.
      dma_block_bytes: the largest DMA transfer (the row buffer of one tasklet).
      dpus_per_rank: DPUs a parallel or broadcast transfer reaches in one call.
      transfer_in, transfer_out, sync_gather, sync_broadcast: each phase's :class:`Transfer`.
      host_average_s_per_entry: host seconds per table entry per lane in a sync round.
      ops: instructions per operation.
      literal_precision: ``"single"`` or ``"double"``: how the fp32 kernel's arithmetic was
        compiled (double: unsuffixed C constants promote the update to double).
      update_overhead_instructions: instructions per update not counted operation by
        operation.
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
    dma_write_latency_cycles: float
    dma_cycles_per_byte: float
    dma_block_bytes: int
    dpus_per_rank: int
    transfer_in: Transfer
    transfer_out: Transfer
    sync_gather: Transfer
    sync_broadcast: Transfer
    host_average_s_per_entry: float
    ops: OpCosts
    literal_precision: str = "single"
    update_overhead_instructions: float = 0.0

    def __post_init__(self) -> None:
        for field in ("num_dpus", "max_tasklets", "pipeline_depth", "dma_block_bytes",
                      "dpus_per_rank"):
            if int(getattr(self, field)) < 1:
                raise ValueError(f"{field} must be >= 1, got {getattr(self, field)}")
        if not 1 <= self.tasklets <= self.max_tasklets:
            raise ValueError(f"tasklets must be in [1, {self.max_tasklets}], got "
                             f"{self.tasklets}")
        if not self.frequency_hz > 0:
            raise ValueError(f"frequency_hz must be > 0, got {self.frequency_hz}")
        if not self.host_average_s_per_entry >= 0:
            raise ValueError("host_average_s_per_entry must be >= 0, got "
                             f"{self.host_average_s_per_entry}")
        if self.literal_precision not in LITERAL_PRECISIONS:
            raise ValueError(f"literal_precision must be one of "
                             f"{', '.join(LITERAL_PRECISIONS)}, got {self.literal_precision!r}")

    def as_dict(self) -> dict[str, Any]:
        """The parameters as JSON values (infinite rates as the string ``"inf"``)."""

        def clean(v: Any) -> Any:
            if isinstance(v, dict):
                return {k: clean(x) for k, x in v.items()}
            return "inf" if isinstance(v, float) and math.isinf(v) else v

        return clean(dataclasses.asdict(self))


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


def update_instructions(config: TabularConfig, ops: OpCosts,
                        literal_precision: str = "single") -> dict[str, float]:
    """Instructions of one update by part (``fetch``, ``sample``, ``bootstrap``,
    ``update``, ``loop``), overhead excluded. ``literal_precision`` as in
    :class:`PIMSystem`."""
    if literal_precision not in LITERAL_PRECISIONS:
        raise ValueError(f"literal_precision must be one of {', '.join(LITERAL_PRECISIONS)}, "
                         f"got {literal_precision!r}")
    a = config.num_actions
    fp = config.dtype != "int32"
    double = literal_precision == "double"
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
    else:  # epsilon-greedy a': draw, u = draw / 2^32 (a real), u < eps, then mod A or argmax
        eps = config.epsilon
        if double:
            real = ops.cvt_int_fp + ops.fp64_mul + ops.fp64_compare
        else:
            real = ops.cvt_int_fp + ops.fp_mul + ops.fp_compare
        bootstrap = (ops.int_mul + ops.int_add + real
                     + eps * (ops.int_mul + ops.int_add + ops.int_div)
                     + (1 - eps) * argmax + ops.load + ops.int_compare)
    if not fp:  # gamma * max and alpha * delta, each rescaled by the fixed-point scale
        update = 2 * ops.int_mul + 2 * ops.int_div + 3 * ops.int_add + ops.load + ops.store
    elif double:  # r, max and Q[s,a] to double; 2 multiplies, 3 adds; the result to float
        update = (ops.cvt_int_fp + 2 * ops.cvt_fp_fp + 2 * ops.fp64_mul + 3 * ops.fp64_add
                  + ops.cvt_fp_fp + ops.load + ops.store)
    else:  # r to float; 2 multiplies, 3 adds
        update = ops.cvt_int_fp + 2 * ops.fp_mul + 3 * ops.fp_add + ops.load + ops.store
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


def dma_cycles(system: PIMSystem, nbytes: float, write: bool = False) -> float:
    """Cycles of one MRAM<->WRAM transfer of ``nbytes`` (fixed cost + per byte)."""
    fixed = system.dma_write_latency_cycles if write else system.dma_latency_cycles
    return fixed + system.dma_cycles_per_byte * nbytes


def dma_per_update(config: TabularConfig, system: PIMSystem) -> dict[str, float]:
    """MRAM<->WRAM work of one update: ``transfers`` (count), ``bytes``, ``cycles`` and
    ``fixed_cycles`` (the transfers' fixed costs)."""
    rows_per_block = system.dma_block_bytes // ROW_BYTES
    if config.sampling == "ran":
        n, nbytes = 1.0, float(ROW_BYTES)
    else:
        reads = config.stride if config.sampling == "str" else 1
        n, nbytes = reads / rows_per_block, float(reads * ROW_BYTES)
    fixed = n * system.dma_latency_cycles
    if not table_in_wram(config, system):  # read Q[s'] and Q[s, a], write Q[s, a]
        row = max(8, -(-config.num_actions * ENTRY_BYTES // 8) * 8)
        n += 3
        nbytes += row + 16
        fixed += 2 * system.dma_latency_cycles + system.dma_write_latency_cycles
    cycles = fixed + system.dma_cycles_per_byte * nbytes
    return {"transfers": n, "bytes": nbytes, "cycles": cycles, "fixed_cycles": fixed}


def cycles_per_update(config: TabularConfig, system: PIMSystem) -> dict[str, float]:
    """Core cycles per update (amortised over the tasklets): ``instructions``, ``compute``,
    ``dma`` and ``total``."""
    instr = sum(update_instructions(config, system.ops, system.literal_precision).values())
    instr += system.update_overhead_instructions
    t = system.tasklets
    compute = instr * max(system.pipeline_depth / t, 1.0)
    dma = dma_per_update(config, system)
    if t == 1:
        total = compute + dma["cycles"]
    else:  # the tasklets overlap each other's transfers' fixed costs
        shared = dma["cycles"] - dma["fixed_cycles"] + dma["fixed_cycles"] / t
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
    used = min(lanes, system.num_dpus)
    updates = per_core * rows_per_lane * config.num_episodes
    cycles = cycles_per_update(config, system)
    kernel = updates * cycles["total"] / system.frequency_hz
    entries = config.num_states * config.num_actions
    table_bytes = entries * ENTRY_BYTES
    in_per_dpu = per_core * (rows_per_lane * ROW_BYTES + table_bytes)
    out_per_dpu = per_core * table_bytes
    rounds = 0 if config.independent else config.num_rounds
    r = system.dpus_per_rank
    t_in = transfer_seconds(system.transfer_in, used, in_per_dpu, r)
    t_out = transfer_seconds(system.transfer_out, used, out_per_dpu, r)
    gather = transfer_seconds(system.sync_gather, used, out_per_dpu, r)
    average = lanes * entries * system.host_average_s_per_entry
    broadcast = transfer_seconds(system.sync_broadcast, used, table_bytes, r)
    per_round = gather + average + broadcast
    work = {
        "system": system.name, "lanes": lanes, "lanes_per_dpu": per_core, "dpus_used": used,
        "rows_per_lane": rows_per_lane, "updates_per_dpu": updates,
        "instructions_per_update": cycles["instructions"],
        "cycles_per_update": cycles["total"], "compute_cycles_per_update": cycles["compute"],
        "dma_cycles_per_update": cycles["dma"], "literal_precision": system.literal_precision,
        "table_in_wram": table_in_wram(config, system), "table_bytes": table_bytes,
        "bytes_in_per_dpu": in_per_dpu, "bytes_out_per_dpu": out_per_dpu,
        "bytes_in": used * in_per_dpu, "bytes_out": used * out_per_dpu,
        "transfer_modes": {p: getattr(system, p).mode for p in TRANSFER_PHASES},
        "sync_rounds": rounds, "sync_gather_s_per_round": gather,
        "sync_average_s_per_round": average, "sync_broadcast_s_per_round": broadcast,
        "sync_s_per_round": per_round,
    }
    return PIMEstimate(transfer_in=t_in, kernel=kernel, sync=rounds * per_round,
                       transfer_out=t_out, work=work)


def model_fields(config: TabularConfig) -> dict[str, Any]:
    """The :data:`MODEL_FIELDS` of ``config`` as a dict (what a report records of a
    workload the model costs)."""
    return {f: getattr(config, f) for f in MODEL_FIELDS}


PHASES = (("transfer_in", "transfer_in"), ("compute", "kernel"), ("sync", "sync"),
          ("transfer_out", "transfer_out"), ("total", "total"))


def side_by_side(measured: Mapping[str, float], est: PIMEstimate) -> str:
    """A table of the measured phases (seconds, ``timing_s`` of a run: ``compute`` is the
    kernel) next to the projected ones, with each projected phase's share of the total and
    the transfer mode of each transfer phase."""
    proj = est.as_dict()
    modes = est.work.get("transfer_modes", {})
    mode_of = {"transfer_in": modes.get("transfer_in", ""),
               "transfer_out": modes.get("transfer_out", ""),
               "sync": "/".join(m for m in (modes.get("sync_gather"),
                                            modes.get("sync_broadcast")) if m)}
    lines = [f"{'phase':<13} {'measured s':>12} {est.work['system'] + ' s':>14} {'share':>7}"
             f"  transfer"]
    for run_key, pim_key in PHASES:
        m = measured.get(run_key)
        ms = f"{m:12.4f}" if isinstance(m, (int, float)) else f"{'-':>12}"
        share = proj[pim_key] / est.total if est.total > 0 else 0.0
        lines.append(f"{run_key:<13} {ms} {proj[pim_key]:14.4f} {share:7.1%}  "
                     f"{mode_of.get(pim_key, '')}".rstrip())
    return "\n".join(lines)
