"""The hardware presets of the PIM cost model, each parameter with its source
(:data:`SOURCES`), and the calibration of the model's three free parameters on published
SwiftRL figures (:func:`calibrate`, :data:`CALIBRATION_TARGETS`). Pure host code (no JAX).

``SWIFTRL`` is SwiftRL's own machine and software as published (2,524 DPUs at 425 MHz, the
host copying the dataset to one DPU after another, unsuffixed C constants promoting the fp32
update to double); ``UPMEM`` is the generic UPMEM system PrIM characterised (2,560 DPUs at
350 MHz, the SDK's parallel and broadcast transfers, single-precision kernels)."""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any

from jaxrl_pim.pim.model import (
    UPMEM_OPS,
    OpCosts,
    PIMSystem,
    Transfer,
    estimate,
)
from jaxrl_pim.tabular.config import TabularConfig

_PRIM = "PrIM (Gomez-Luna et al., IEEE Access 2022)"
_AS_READ = "as read; not in text stored with the project: assumption until checked"
_SWIFTRL = "SwiftRL (Gogineni et al., ISPASS 2024)"
_RELEASED = ("SwiftRL's released code (github.com/kailashg26/SwiftRL, Multiagent_version.zip "
             "at commit 503433e)")
_PRIM_PROFILES = ("PrIM's released profiles (github.com/CMU-SAFARI/prim-benchmarks at commit "
                  "75763f4, Microbenchmarks/Arithmetic-Throughput/profile/ADD_<TYPE>_tl<T>.txt)")

SOURCES: dict[str, dict[str, str]] = {
    "swiftrl": {
        "num_dpus": f"{_SWIFTRL}, evaluation setup: '2,524 PIM cores running at 425 MHz'",
        "frequency_hz": f"{_SWIFTRL}, evaluation setup: 425 MHz (its section 2.2 says 450 MHz "
                        "for the UPMEM part); Table 1's 2,145 GB/s over 2,524 DPUs = 0.85 "
                        "GB/s per DPU = 2 bytes per cycle at 425 MHz agrees",
        "max_tasklets": "UPMEM SDK user manual, 'DPU chip characteristics': <= 24 tasklets "
                        "(v1A; SwiftRL does not say which model: assumption)",
        "tasklets": "one tasklet per core: the released multi-agent DPU binary "
                    f"({_RELEASED}, PIM_code/Qlearning) is linked with NR_TASKLETS = 1 and its "
                    "kernel runs the whole loop in every tasklet (no split of the rows); the "
                    "single-agent kernels are not released (assumption: the same)",
        "pipeline_depth": "UPMEM at Hot Chips 31 (AnandTech report) and PrIM: a 14-stage "
                          "pipeline that needs 11 tasklets for one instruction per cycle; "
                          f"checked against {_PRIM_PROFILES}: cycles per element at T < 11 "
                          "tasklets are 11 / T times those at 11 or more; "
                          f"{_SWIFTRL} Table 1: 1,088 GOPS over 2,524 DPUs = 1 operation per "
                          "cycle per DPU at 425 MHz",
        "wram_bytes": "UPMEM SDK user manual: WRAM <= 65,536 bytes (v1A: assumption)",
        "mram_bytes": "UPMEM at Hot Chips 31, PrIM, SwiftRL: a 64 MB DRAM bank per DPU",
        "dma_latency_cycles": f"{_PRIM}: MRAM read latency alpha = 77 cycles ({_AS_READ}; "
                              "third-party notes quote the same figure)",
        "dma_write_latency_cycles": f"{_PRIM}: MRAM write latency alpha = 61 cycles "
                                    f"({_AS_READ})",
        "dma_cycles_per_byte": f"{_PRIM}: beta = 0.5 cycles per byte ({_AS_READ}); "
                               f"{_SWIFTRL} Table 1: 0.85 GB/s per DPU = 2 bytes per cycle "
                               "at 425 MHz",
        "dma_block_bytes": "UPMEM SDK mram_read / mram_write: at most 2,048 bytes",
        "dpus_per_rank": "UPMEM SDK and PrIM: 64 DPUs per rank (8 chips of 8 DPUs)",
        "transfer_in": "serial, as the released SwiftRL host code copies each DPU's data "
                       "one DPU at a time, one call per column (4 calls: s, a, r, s'; the "
                       "single-agent host code is not released: assumption); rate: "
                       f"{_PRIM} serial CPU-DPU, one DPU, 0.33 GB/s ({_AS_READ}); "
                       "latency_s: calibrated on the FrozenLake transfer-in share (see "
                       "pim.calibrate), one host-call latency for every phase",
        "transfer_out": "parallel, as the released host code gathers the tables with one "
                        f"set-wide copy; rate: {_PRIM} parallel DPU-CPU, one rank of 64 "
                        f"DPUs, 4.74 GB/s ({_AS_READ}); latency: the calibrated host call",
        "sync_gather": "as transfer_out (the tables gathered with one set-wide copy)",
        "sync_broadcast": f"broadcast of the average; rate: {_PRIM} broadcast CPU-DPU, one "
                          f"rank of 64 DPUs, 16.88 GB/s ({_AS_READ}); latency: the "
                          "calibrated host call",
        "host_average_s_per_entry": "calibrated: Taxi Q-SEQ-INT32 sync share at 2,000 cores "
                                    f"({_SWIFTRL}); see pim.calibrate",
        "ops": f"int_add, fp_add and fp64_add checked against {_PRIM_PROFILES} (ADD at 11 or "
               "more tasklets: INT32 6.02, FLOAT 71.3, DOUBLE 105.3 cycles per element, 5 of "
               "them the loop's); int_mul, int_div, fp_mul, fp64_mul: "
               f"{_PRIM} arithmetic throughput (see UPMEM_OPS; {_AS_READ}); compares and "
               "conversions: assumptions (jaxrl_pim.pim.sensitivity varies each)",
        "literal_precision": "double: the released SwiftRL kernels write constants such as "
                             "0.1 and 0.95 without an 'f' suffix, so C evaluates the fp32 "
                             "update in double precision",
        "update_overhead_instructions": "calibrated: 2,000 independent agents, about 88.7 s "
                                        f"of kernel ({_SWIFTRL}); see pim.calibrate",
    },
    "upmem": {
        "num_dpus": f"{_PRIM}: 20 DIMMs, 2,560 DPUs",
        "frequency_hz": "UPMEM SDK user manual, 'DPU chip characteristics': v1A 350 MHz",
        "max_tasklets": "UPMEM SDK user manual: v1A <= 24 tasklets",
        "tasklets": "assumption: one tasklet per core, as SwiftRL runs",
        "pipeline_depth": "UPMEM at Hot Chips 31 (AnandTech report) and PrIM: a 14-stage "
                          "pipeline that needs 11 tasklets for one instruction per cycle",
        "wram_bytes": "UPMEM SDK user manual: v1A WRAM <= 65,536 bytes",
        "mram_bytes": "UPMEM at Hot Chips 31 and PrIM: a 64 MB DRAM bank per DPU",
        "dma_latency_cycles": "as swiftrl",
        "dma_write_latency_cycles": "as swiftrl",
        "dma_cycles_per_byte": "as swiftrl",
        "dma_block_bytes": "UPMEM SDK mram_read / mram_write: at most 2,048 bytes",
        "dpus_per_rank": "UPMEM SDK and PrIM: 64 DPUs per rank",
        "transfer_in": f"parallel, the SDK's per-rank transfers; rate: {_PRIM} parallel "
                       f"CPU-DPU, one rank of 64 DPUs, 6.68 GB/s ({_AS_READ}); latency: "
                       "swiftrl's calibrated host call (assumption: the same host)",
        "transfer_out": "parallel, as swiftrl",
        "sync_gather": "parallel, as swiftrl",
        "sync_broadcast": "broadcast, as swiftrl",
        "host_average_s_per_entry": "swiftrl's calibrated value (assumption: the same host)",
        "ops": f"{_PRIM} arithmetic throughput (see UPMEM_OPS)",
        "literal_precision": "single: a kernel written with float constants",
        "update_overhead_instructions": "swiftrl's calibrated value (the same kernel code)",
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
        "dma_write_latency_cycles": "as dma_latency_cycles (assumption)",
        "dma_cycles_per_byte": "assumption: one 32-byte column per cycle",
        "dma_block_bytes": "assumption: a 256-byte burst (8 columns of 32 bytes)",
        "dpus_per_rank": "assumption: the cube's PCUs reached together",
        "transfer_in": "parallel; assumption: HBM2 Aquabolt, 1,024 pins x 2.4 Gb/s = "
                       "307.2 GB/s per cube (the host shares the PIM's bus), no call latency",
        "transfer_out": "as transfer_in (assumption)",
        "sync_gather": "as transfer_in (assumption)",
        "sync_broadcast": "as transfer_in (assumption)",
        "host_average_s_per_entry": "assumption: 0, a bound with no host overhead",
        "ops": "one instruction per operation: FP16 is native; the PCU has no integer unit, "
               "so int32 estimates are a bound as if it had (assumption)",
        "literal_precision": "single (FP16 native; a bound)",
    },
    "ideal": {
        "all": "a bound: UPMEM's cores and clock, transfers, DMA and host averaging free, "
               "one instruction per operation and per cycle, tables always in WRAM",
    },
}

# The published SwiftRL figures (ISPASS 2024) the three calibrated parameters are fitted to;
# benchmarks/pim_published.py holds the same figures and benchmarks/pim_model.py checks that.
CALIBRATION_TARGETS: dict[str, Any] = {
    "multi_agent_2000_agents_s": 1943.78 / 21.92,  # Xeon seconds / PIM speed-up
    "multi_agent_workload": TabularConfig(16, 4, "q", "seq", "int32", num_cores=2000,
                                          independent=True),
    "multi_agent_rows": 2000 * 10_000,
    "taxi_q_seq_int32_sync_share": 0.2079,
    "taxi_workload": TabularConfig(500, 6, "q", "seq", "int32", num_cores=2000),
    "taxi_rows": 5_000_000,
    "frozenlake_q_str_int32_transfer_in_share": 0.2961,
    "frozenlake_workload": TabularConfig(16, 4, "q", "str", "int32", num_cores=2000),
    "frozenlake_rows": 1_000_000,
}

_HOST = Transfer("parallel", 0.0, 4.74e9)  # latency replaced by the calibrated host call
#: ``swiftrl`` before calibration (its three fitted parameters at zero): what
#: :func:`calibrate` fits and :mod:`~jaxrl_pim.pim.sensitivity` varies.
SWIFTRL_BASE = PIMSystem(
    name="swiftrl", num_dpus=2524, frequency_hz=425e6, max_tasklets=24, tasklets=1,
    pipeline_depth=11, wram_bytes=65536, mram_bytes=64 * 2**20, dma_latency_cycles=77.0,
    dma_write_latency_cycles=61.0, dma_cycles_per_byte=0.5, dma_block_bytes=2048,
    dpus_per_rank=64, transfer_in=Transfer("serial", 0.0, 0.33e9, calls=4),
    transfer_out=_HOST, sync_gather=_HOST, sync_broadcast=Transfer("broadcast", 0.0, 16.88e9),
    host_average_s_per_entry=0.0, ops=UPMEM_OPS, literal_precision="double")


def with_host_latency(system: PIMSystem, latency_s: float) -> PIMSystem:
    """``system`` with every transfer phase's per-call latency set to ``latency_s``."""
    return dataclasses.replace(system, **{
        p: dataclasses.replace(getattr(system, p), latency_s=latency_s)
        for p in ("transfer_in", "transfer_out", "sync_gather", "sync_broadcast")})


def _root(f: Any, lo: float, hi: float) -> float:
    """The zero of an affine function of one variable from two evaluations."""
    flo, fhi = f(lo), f(hi)
    return lo - flo * (hi - lo) / (fhi - flo)


def calibrate(base: PIMSystem = SWIFTRL_BASE, iterations: int = 60,
              host_latency_s: float | None = None) -> dict[str, float]:
    """Fit the three free parameters, each to one published figure
    (:data:`CALIBRATION_TARGETS`):

    * ``update_overhead_instructions`` so that 2,000 independent FrozenLake agents
      (Q-SEQ-INT32 assumed) take the published kernel time (closed form: the kernel is
      linear in it, and nothing else enters it);
    * ``host_average_s_per_entry`` so that Taxi Q-SEQ-INT32 on 2,000 cores has the
      published sync share;
    * ``host_latency_s`` (every transfer's per-call latency) so that FrozenLake Q-STR-INT32
      on 2,000 cores has the published transfer-in share.

    The last two each enter the other's figure a little (both shares' totals hold every
    phase), so they are solved in turn until they agree (each step an affine root). Needs
    ``base.tasklets == 1`` (time then linear in the overhead).

    ``host_latency_s`` given: the latency is held at that value (seconds per host call)
    instead of fitted, and the FrozenLake share becomes a prediction (what the sensitivity
    study does when it varies the latency). Returns the three values by name."""
    if base.tasklets != 1:
        raise ValueError("calibrate needs a one-tasklet system")
    t = CALIBRATION_TARGETS
    zero = dataclasses.replace(base, update_overhead_instructions=0.0)
    est = estimate(t["multi_agent_workload"], t["multi_agent_rows"], zero)
    per_instruction_s = (est.work["updates_per_dpu"] * base.pipeline_depth
                         / base.frequency_hz)
    overhead = (t["multi_agent_2000_agents_s"] - est.kernel) / per_instruction_s
    sys_ = dataclasses.replace(zero, update_overhead_instructions=overhead)
    h, lat = 0.0, 0.0 if host_latency_s is None else float(host_latency_s)

    def gap(phase: str, name: str, avg: float, latency: float) -> float:
        """The named figure's phase minus what its published share asks of it."""
        system = dataclasses.replace(with_host_latency(sys_, latency),
                                     host_average_s_per_entry=avg)
        e = estimate(t[f"{name}_workload"], t[f"{name}_rows"], system)
        share = t[{"sync": "taxi_q_seq_int32_sync_share",
                   "transfer_in": "frozenlake_q_str_int32_transfer_in_share"}[phase]]
        return getattr(e, phase) - share / (1 - share) * (e.total - getattr(e, phase))

    for _ in range(iterations):
        h = _root(functools.partial(gap, "sync", "taxi", latency=lat), 0.0, 1e-6)
        if host_latency_s is None:
            lat = _root(functools.partial(gap, "transfer_in", "frozenlake", h), 0.0, 1e-3)
    return {"update_overhead_instructions": overhead, "host_average_s_per_entry": h,
            "host_latency_s": lat}


def _apply(system: PIMSystem, fitted: dict[str, float]) -> PIMSystem:
    out = dataclasses.replace(
        system, update_overhead_instructions=fitted["update_overhead_instructions"],
        host_average_s_per_entry=fitted["host_average_s_per_entry"])
    return with_host_latency(out, fitted["host_latency_s"])


#: ``upmem`` before calibration (it takes ``swiftrl``'s three fitted values: the same host
#: and kernel code).
UPMEM_BASE = PIMSystem(
    name="upmem", num_dpus=2560, frequency_hz=350e6, max_tasklets=24, tasklets=1,
    pipeline_depth=11, wram_bytes=65536, mram_bytes=64 * 2**20, dma_latency_cycles=77.0,
    dma_write_latency_cycles=61.0, dma_cycles_per_byte=0.5, dma_block_bytes=2048,
    dpus_per_rank=64, transfer_in=Transfer("parallel", 0.0, 6.68e9), transfer_out=_HOST,
    sync_gather=_HOST, sync_broadcast=Transfer("broadcast", 0.0, 16.88e9),
    host_average_s_per_entry=0.0, ops=UPMEM_OPS, literal_precision="single")


def calibrated_presets(swiftrl_base: PIMSystem = SWIFTRL_BASE,
                       upmem_base: PIMSystem = UPMEM_BASE,
                       host_latency_s: float | None = None,
                       ) -> tuple[dict[str, float], dict[str, PIMSystem]]:
    """The three UPMEM presets fitted together: :func:`calibrate` on ``swiftrl_base``
    (``host_latency_s`` as there), its values applied to both bases, ``upmem-v1b`` derived
    from ``upmem``. Returns ``(fitted values, {"swiftrl", "upmem", "upmem-v1b": system})``;
    the module's presets are this function at its defaults."""
    fitted = calibrate(swiftrl_base, host_latency_s=host_latency_s)
    upmem = _apply(upmem_base, fitted)
    return fitted, {"swiftrl": _apply(swiftrl_base, fitted), "upmem": upmem,
                    "upmem-v1b": dataclasses.replace(upmem, name="upmem-v1b",
                                                     frequency_hz=400e6, max_tasklets=16,
                                                     wram_bytes=63488)}


CALIBRATED, _FITTED = calibrated_presets()
SWIFTRL, UPMEM, UPMEM_V1B = _FITTED["swiftrl"], _FITTED["upmem"], _FITTED["upmem-v1b"]
_HBM = Transfer("parallel", 0.0, 307.2e9)
HBM_PIM = PIMSystem(
    name="hbm-pim", num_dpus=128, frequency_hz=300e6, max_tasklets=1, tasklets=1,
    pipeline_depth=1, wram_bytes=512, mram_bytes=64 * 2**20, dma_latency_cycles=14.0,
    dma_write_latency_cycles=14.0, dma_cycles_per_byte=1 / 32, dma_block_bytes=256,
    dpus_per_rank=128, transfer_in=_HBM, transfer_out=_HBM, sync_gather=_HBM,
    sync_broadcast=_HBM, host_average_s_per_entry=0.0, ops=OpCosts())
_FREE = Transfer("parallel", 0.0, math.inf)
IDEAL = PIMSystem(
    name="ideal", num_dpus=2560, frequency_hz=350e6, max_tasklets=24, tasklets=1,
    pipeline_depth=1, wram_bytes=2**40, mram_bytes=64 * 2**20, dma_latency_cycles=0.0,
    dma_write_latency_cycles=0.0, dma_cycles_per_byte=0.0, dma_block_bytes=2048,
    dpus_per_rank=64, transfer_in=_FREE, transfer_out=_FREE, sync_gather=_FREE,
    sync_broadcast=_FREE, host_average_s_per_entry=0.0, ops=OpCosts())
SYSTEMS: dict[str, PIMSystem] = {"swiftrl": SWIFTRL, "upmem": UPMEM, "upmem-v1b": UPMEM_V1B,
                                 "hbm-pim": HBM_PIM, "ideal": IDEAL}


def get_system(name: str) -> PIMSystem:
    """A preset by name (one of :data:`~jaxrl_pim.pim.model.SYSTEM_NAMES`)."""
    if name not in SYSTEMS:
        raise ValueError(f"unknown PIM system {name!r}; choose from {', '.join(SYSTEMS)}")
    return SYSTEMS[name]
