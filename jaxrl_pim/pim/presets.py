"""The hardware presets of the PIM cost model, each parameter with its source
(:data:`SOURCES`), and the calibration of the model's two free parameters on published SwiftRL
figures (:func:`calibrate`, :data:`CALIBRATION_TARGETS`). Pure host code (no JAX)."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from jaxrl_pim.pim.model import (
    UPMEM_OPS,
    OpCosts,
    PIMSystem,
    Workload,
    estimate,
)

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
