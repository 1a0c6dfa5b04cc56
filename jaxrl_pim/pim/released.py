"""What the authors released, as evidence for the cost model: PrIM's arithmetic profiles (the
values the model's ADD costs and pipeline rule are tested against) and SwiftRL's multi-agent
kernel as it is built (costed operation by operation, and set against the published 88.7 s).

Facts read from the released files, never their code: each value names its file. Pure host
code (no JAX).

* :data:`PRIM_ADD_PROFILES`: the ``DPU cycles`` line of PrIM's ADD microbenchmark for INT32,
  FLOAT and DOUBLE at 1 to 24 tasklets (one DPU, 1,048,576 elements; the slowest tasklet's
  cycles in the timed WRAM loop, one add per element plus the loop), each file named by
  :func:`prim_profile_path`; :func:`prim_cycles_per_element` is what the model predicts.
* :data:`RELEASED_KERNEL`: SwiftRL's multi-agent DPU program (``PIM_code/Qlearning.c`` and
  the binary ``PIM_code/Qlearning`` in ``Multiagent_version.zip``): one tasklet
  (``NR_TASKLETS`` = 1 in the binary), four uint8 columns in MRAM read element by element,
  a uint8 Q-table in WRAM, the update computed in double (the binary links ``__muldf3``,
  ``__adddf3``, ``__subdf3``, ``__floatunsidf`` and ``__fixunsdfsi``), 1,000 iterations over
  10,000 rows. :func:`released_kernel` costs one update of it with a preset's operation
  costs; :func:`double_cost_factor_needed` says by how much every double routine would have
  to be cheaper for the program to run in a given time.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from jaxrl_pim.pim.model import PIMSystem, dma_cycles

PRIM_REPOSITORY = "github.com/CMU-SAFARI/prim-benchmarks"
PRIM_COMMIT = "75763f49acde93a6f5eeb3b9b3b93a3ef0f1b003"


def prim_profile_path(dtype: str, tasklets: int) -> str:
    """The released profile file of PrIM's ADD microbenchmark for ``dtype`` (``INT32``,
    ``FLOAT``, ``DOUBLE``) at ``tasklets`` tasklets, relative to the repository's root at
    :data:`PRIM_COMMIT`."""
    return f"Microbenchmarks/Arithmetic-Throughput/profile/ADD_{dtype}_tl{tasklets}.txt"


PRIM_ADD_PROFILES: dict[str, Any] = {
    "source": f"{PRIM_REPOSITORY} at commit {PRIM_COMMIT}: prim_profile_path(type, tasklets); "
              "the timed loop is Microbenchmarks/Arithmetic-Throughput/dpu/task.c, the "
              "host's 'DPU cycles' the slowest tasklet's (host/app.c)",
    "elements": 1_048_576,
    "dpu_cycles": {  # the 'DPU cycles' line of each file, by tasklet count
        "INT32": {1: 6.92941e7, 2: 3.46475e7, 3: 2.31122e7, 4: 1.73262e7, 5: 1.38744e7,
                  6: 1.15581e7, 7: 9.91675e6, 8: 8.66466e6, 9: 7.71637e6, 10: 6.93822e6,
                  11: 6.31261e6, 12: 6.3089e6, 13: 6.31213e6, 14: 6.2971e6, 15: 6.30691e6,
                  16: 6.28186e6, 17: 6.27834e6, 18: 6.28878e6, 19: 6.28821e6, 20: 6.27557e6,
                  21: 6.29917e6, 22: 6.2981e6, 23: 6.29536e6, 24: 6.28288e6},
        "FLOAT": {1: 8.20807e8, 2: 4.10319e8, 3: 2.73729e8, 4: 2.05201e8, 5: 1.64293e8,
                  6: 1.36869e8, 7: 1.17432e8, 8: 1.02603e8, 9: 9.13771e7, 10: 8.21479e7,
                  11: 7.47428e7, 12: 7.4753e7, 13: 7.48134e7, 14: 7.46935e7, 15: 7.48497e7,
                  16: 7.45888e7, 17: 7.46136e7, 18: 7.47368e7, 19: 7.47336e7, 20: 7.46597e7,
                  21: 7.49169e7, 22: 7.49052e7, 23: 7.49505e7, 24: 7.47102e7},
        "DOUBLE": {1: 1.21396e9, 2: 6.06977e8, 3: 4.04621e8, 4: 3.03432e8, 5: 2.42848e8,
                   6: 2.02433e8, 7: 1.73536e8, 8: 1.51737e8, 9: 1.35002e8, 10: 1.2152e8,
                   11: 1.10409e8, 12: 1.104e8, 13: 1.10486e8, 14: 1.10465e8, 15: 1.10498e8,
                   16: 1.10299e8, 17: 1.10323e8, 18: 1.10517e8, 19: 1.10499e8, 20: 1.10384e8,
                   21: 1.10494e8, 22: 1.10464e8, 23: 1.1053e8, 24: 1.10467e8},
    },
}
#: The model's operation each profiled type adds with, and the loop's other instructions.
PRIM_OPS = {"INT32": "int_add", "FLOAT": "fp_add", "DOUBLE": "fp64_add"}
PRIM_LOOP_INSTRUCTIONS = 5


def prim_measured_cycles_per_element(dtype: str, tasklets: int) -> float:
    """Cycles per element of PrIM's released ADD profile (``DPU cycles`` / elements)."""
    return (PRIM_ADD_PROFILES["dpu_cycles"][dtype][tasklets]
            / PRIM_ADD_PROFILES["elements"])


def prim_cycles_per_element(system: PIMSystem, dtype: str, tasklets: int) -> float:
    """What the model predicts for PrIM's ADD loop: (the add's instructions + the loop's 5)
    issued every ``max(pipeline_depth / tasklets, 1)`` cycles."""
    instr = getattr(system.ops, PRIM_OPS[dtype]) + PRIM_LOOP_INSTRUCTIONS
    return instr * max(system.pipeline_depth / tasklets, 1.0)


RELEASED_KERNEL: dict[str, Any] = {
    "source": "github.com/kailashg26/SwiftRL at commit "
              "503433e29ab60aea882a75abb75d6a54e30c4d7f, Multiagent_version.zip: "
              "PIM_code/Qlearning.c (the kernel), PIM_code/Qlearning (its DPU binary), "
              "PIM_code/host.py (the host: one copy per column per DPU, times dpus.exec()), "
              "CPU_code/multiq.c (the CPU version)",
    "nr_tasklets": 1,  # the binary's NR_TASKLETS symbol
    "column_bytes": 1,  # uint8 state, action, reward, next state, each an MRAM array
    "columns": 4,
    "rows_per_dpu": 10_000,  # the inner loop's bound
    "iterations": 1000,  # NUM_ITERATIONS
    "table": "uint8 [16][4] in WRAM (__host)",
    "double_routines": ["__muldf3", "__adddf3", "__subdf3", "__floatunsidf", "__fixunsdfsi"],
    "constants": "LEARNING_RATE 0.1, DISCOUNT_FACTOR 0.95, written without an f suffix",
}

#: One update of the released kernel, operation by operation, read from its source: four
#: uint8 MRAM reads (each an 8-byte DMA into the runtime's cache, its address and a byte
#: load), the max over 4 uint8 entries, the update in double -- reward, max and Q[s, a]
#: converted (__floatunsidf, 3), 0.95 x max and 0.1 x (...) (__muldf3, 2), the two adds and
#: the subtract (__adddf3, __subdf3: 3), the result back to uint8 (__fixunsdfsi, costed as a
#: conversion) --, Q[s, a]'s address, load and store, and the loop. Not counted: the runtime
#: cache's bookkeeping beyond one address add per read, the unused read of Q[s, a] before the
#: max (dead code), and the barrier once per iteration.
RELEASED_UPDATE_OPS: dict[str, int] = {
    "int_add": 4 * 2 + 4 + 1 + 2, "load": 4 + 4 + 1, "store": 1, "int_compare": 4 + 1,
    "cvt_int_fp": 3 + 1, "fp64_mul": 2, "fp64_add": 3,
}
RELEASED_MRAM_READ_BYTES = 8  # the smallest DMA: each uint8 element read moves 8 bytes
DOUBLE_OPS = ("fp64_add", "fp64_mul", "fp64_compare", "cvt_int_fp", "cvt_fp_fp")


def released_kernel(system: PIMSystem) -> dict[str, Any]:
    """One update of SwiftRL's released multi-agent kernel on ``system`` (one tasklet: the
    cycles are ``pipeline_depth x instructions + the four reads' DMA``): ``instructions``
    (and ``double_instructions``, those of the double routines), ``dma_cycles``, ``cycles``,
    and ``seconds_per_iteration`` (one pass over the 10,000 rows). The preset's calibrated
    overhead is not added: it was fitted to another kernel."""
    per = {op: n * getattr(system.ops, op) for op, n in RELEASED_UPDATE_OPS.items()}
    instr = sum(per.values())
    double = sum(v for op, v in per.items() if op in DOUBLE_OPS)
    dma = RELEASED_KERNEL["columns"] * dma_cycles(system, RELEASED_MRAM_READ_BYTES)
    cycles = system.pipeline_depth * instr + dma
    return {"instructions": instr, "double_instructions": double, "dma_cycles": dma,
            "cycles": cycles, "instructions_by_op": per,
            "seconds_per_iteration": RELEASED_KERNEL["rows_per_dpu"] * cycles
            / system.frequency_hz}


def released_kernel_seconds(system: PIMSystem, iterations: int) -> float:
    """Seconds of the released kernel's ``iterations`` passes over its 10,000 rows."""
    return iterations * released_kernel(system)["seconds_per_iteration"]


def double_cost_factor_needed(system: PIMSystem, seconds: float, iterations: int) -> float:
    """By how much every double routine (:data:`DOUBLE_OPS`) would have to be cheaper for
    the released kernel to take ``seconds`` over ``iterations`` passes: the modelled double
    instructions over those the time leaves them (``inf`` when the rest alone takes longer)."""
    k = released_kernel(system)
    cycles = seconds * system.frequency_hz / (iterations * RELEASED_KERNEL["rows_per_dpu"])
    rest = k["cycles"] - system.pipeline_depth * k["double_instructions"]
    left = (cycles - rest) / system.pipeline_depth
    return k["double_instructions"] / left if left > 0 else float("inf")


def with_double_costs_scaled(system: PIMSystem, factor: float) -> PIMSystem:
    """``system`` with every double routine's cost (:data:`DOUBLE_OPS`) times ``factor``."""
    ops = dataclasses.replace(system.ops, **{op: getattr(system.ops, op) * factor
                                             for op in DOUBLE_OPS})
    return dataclasses.replace(system, ops=ops)


def prim_profile_checks(system: PIMSystem) -> list[dict[str, Any]]:
    """Every released PrIM ADD profile against :func:`prim_cycles_per_element` on
    ``system``: ``type``, ``tasklets``, ``file`` (its source), ``measured`` and ``predicted``
    cycles per element and the relative ``error``."""
    out = []
    for dtype, by_t in PRIM_ADD_PROFILES["dpu_cycles"].items():
        for t in by_t:
            m = prim_measured_cycles_per_element(dtype, t)
            p = prim_cycles_per_element(system, dtype, t)
            out.append({"type": dtype, "tasklets": t, "file": prim_profile_path(dtype, t),
                        "measured": m, "predicted": p, "error": (p - m) / m})
    return out


def if_released_kernel_took(system: PIMSystem, seconds: float,
                            iterations: int) -> dict[str, Any]:
    """What the released kernel taking ``seconds`` over ``iterations`` passes would imply:
    ``factor`` (:func:`double_cost_factor_needed`), ``double_add`` (the double add's cost
    then, instructions), ``system`` (``system`` with every double routine that much cheaper)
    and ``q_int32_over_fp32`` (FrozenLake Q-SEQ on 2,000 cores, total time FP32 / INT32, on
    that system)."""
    from jaxrl_pim.pim.model import estimate
    from jaxrl_pim.tabular.config import TabularConfig

    factor = double_cost_factor_needed(system, seconds, iterations)
    cheap = with_double_costs_scaled(system, 1 / factor)
    fp, i32 = (estimate(TabularConfig(16, 4, "q", "seq", d, num_cores=2000), 1_000_000, cheap)
               for d in ("fp32", "int32"))
    return {"factor": factor, "double_add": cheap.ops.fp64_add, "system": cheap,
            "q_int32_over_fp32": fp.total / i32.total}
