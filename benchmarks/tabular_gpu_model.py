"""The floor estimate of ``benchmarks/tabular_gpu.py``: the ns one dependent step of a lane
kernel costs at the least on an NVIDIA GPU, from stated constants (estimates, not
measurements; ``benchmarks/NOTES.md`` has the reasoning and the arithmetic).

A lane's updates form a chain (update ``j + 1`` may read the entry update ``j`` wrote), so a
step costs the larger of the chain's dependent latency (:func:`chain_ops`) and the issue time
of the warps sharing one scheduler (:func:`issued_ops`); :func:`floor_estimate_ns` combines
them. Pure arithmetic: importing this module loads no JAX.
"""

from __future__ import annotations

# Floor estimate constants (estimates, not measurements; benchmarks/NOTES.md has the
# reasoning). One lane is one GPU thread; a warp runs up to 32 lanes in lockstep.
#: SM clock the estimate assumes (an H100 SXM sustains about 1.7 GHz under load).
FLOOR_CLOCK_HZ = 1.7e9
#: Cycles from one dependent FP32 / INT32 instruction to the next (Hopper ALU latency).
DEPENDENT_LATENCY_CYCLES = 4
#: Instructions one warp scheduler issues per cycle; H100 SMs and schedulers per SM.
ISSUE_PER_CYCLE = 1.0
GPU_SMS = 132
SCHEDULERS_PER_SM = 4


def chain_ops(algo: str, dtype: str, num_actions: int) -> int:
    """Dependent instructions from one update's new value to the next one's (estimate).

    The next update's table entries are loaded before this one is stored and the value just
    written is forwarded by a select, so the chain holds no memory access: the forward
    select, the bootstrap over the ``A`` entries (Q: a max chain of ``A - 1``; SARSA: a
    first-argmax chain of compare+select pairs, the exploration select and a select chain
    of ``A - 1``), and the TD update (float: multiply-add, subtract, multiply-add, plus a
    rounding convert for 16-bit storage; int32 fixed point: the gamma product
    ``19 x / 20`` as divide-by-constant (3), multiply-subtract, multiply, divide (3), add;
    the terminal select; two adds; alpha as divide-by-ten (3); the final add).
    """
    boot = num_actions - 1 if algo == "q" else 2 * (num_actions - 1) + 1 + (num_actions - 1)
    if dtype == "int32":
        update = 9 + 1 + 2 + 3 + 1
    else:
        update = 3 + (1 if dtype in ("fp16", "bf16") else 0)
    return 1 + boot + update


def issued_ops(algo: str, sampling: str, dtype: str, rng: str, num_actions: int) -> int:
    """Instructions one lane's thread issues per update (estimate): row loads and decode,
    ``A + 1`` table loads with their addresses, forwarding compares and selects, the store,
    loop bookkeeping, the update's own instructions and the random draws."""
    entries = num_actions + 1
    base = 2 + 4 + 2 * entries + 2 * entries + 2 + 3
    if algo == "q":
        update = num_actions - 1
    else:
        update = 3 * (num_actions - 1) + 2 + 2 * (num_actions - 1)
    update += 19 if dtype == "int32" else 3
    draws = 0
    if algo == "sarsa":
        draws += 6 if rng == "jax" else 11
    if sampling == "ran" and rng == "lcg":
        draws += 8
    return base + update + draws


def floor_estimate_ns(variant: str, num_actions: int, lanes: int, lanes_per_block: int,
                      rng: str = "jax") -> dict[str, float]:
    """Estimated ns per dependent step: the larger of the dependent chain's latency and the
    issue time of the warps sharing one scheduler (``ceil(warps / (SMs x 4))`` of them, each
    program of ``lanes_per_block <= 32`` lanes being one warp)."""
    algo, sampling, dtype = variant.split("-")
    chain = chain_ops(algo, dtype, num_actions) * DEPENDENT_LATENCY_CYCLES
    warps = -(-lanes // max(1, lanes_per_block))
    per_scheduler = -(-warps // (GPU_SMS * SCHEDULERS_PER_SM))
    issue = per_scheduler * issued_ops(algo, sampling, dtype, rng, num_actions) / ISSUE_PER_CYCLE
    cycles = max(chain, issue)
    return {"floor_estimate_ns_per_step": cycles / FLOOR_CLOCK_HZ * 1e9,
            "floor_estimate_chain_cycles": chain, "floor_estimate_issue_cycles": issue}


def draws_random(variant: str) -> bool:
    """Whether ``variant`` (``algo-sampling-dtype``) draws random numbers: RAN sampling's
    rows or SARSA's exploration. One that draws none runs the same program under either
    ``rng`` (the kernels generate no draws for it, so ``rng`` reaches nothing)."""
    algo, sampling, _ = variant.split("-")
    return sampling == "ran" or algo == "sarsa"
