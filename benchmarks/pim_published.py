"""Published SwiftRL (UPMEM PIM) figures, for printing beside numbers measured here.

Nothing in this module is measured by jaxrl_pim: every value is a figure reported in
"SwiftRL: Towards Efficient Reinforcement Learning on Real Processing-In-Memory Systems"
(K. Gogineni et al., ISPASS 2024). Each group carries a ``source`` note; keys name the unit.
This is a data module imported by the tabular benchmark scripts (not a script itself). Use
:data:`PUBLISHED` (all groups) or one group dict directly, e.g.
``MULTI_AGENT["xeon_seconds_2000_agents"]``.
"""

from __future__ import annotations

from typing import Any

SOURCE = (
    "SwiftRL: Towards Efficient Reinforcement Learning on Real Processing-In-Memory Systems "
    "(Gogineni et al., ISPASS 2024; offline tabular Q-learning / SARSA on UPMEM PIM); "
    "published values, not measured by jaxrl_pim"
)

HEADLINE: dict[str, Any] = {
    "source": SOURCE + "; workload Q-learner-SEQ-INT32 on FrozenLake unless noted",
    "speedup_125_to_2000_cores": 15.0,  # near-linear strong scaling
    "int32_over_fp32_speedup_on_pim": 8.16,
    "pim_over_xeon_silver_4110_8core_min_speedup": 1.62,  # "at least"
    "pim_over_rtx_3090_speedup": 4.84,
}

HARDWARE: dict[str, Any] = {
    "source": SOURCE,
    "pim_system": "UPMEM: up to 2,560 PIM cores (DPUs) at 350-450 MHz, each with a 64 MB "
    "DRAM bank (MRAM) and a 64 KB scratchpad (WRAM); no core-to-core link, all exchange "
    "through the host CPU; integer add native, 32-bit multiply and floating point emulated",
    "pim_max_cores": 2560,
    "cpu_baseline": "Intel Xeon Silver 4110, 8 cores",
    "cpu_baseline_implementation": "C with pthreads (16 threads); CPU-V1 = threads sharing one "
    "Q-table without locks, CPU-V2 = threads with private Q-tables",
    "cpu_baseline_timer": "clock() (CPU time summed over threads), not wall time",
    "gpu_baseline": "NVIDIA RTX 3090",
}

WORKLOAD: dict[str, Any] = {
    "source": SOURCE,
    "algorithms": ["q_learning", "sarsa"],
    "samplings": ["seq", "ran", "str"],
    "formats": ["fp32", "int32"],
    "frozenlake": {"states": 16, "actions": 4, "transitions": 1_000_000},
    "taxi": {"states": 500, "actions": 6, "transitions": 5_000_000},
    "alpha": 0.1,
    "gamma": 0.95,
    "episodes": 2000,
    "sync_period": 50,
    "sync_periods_studied": [10, 25, 50],
    "stride": 4,
    "cores_studied": [125, 250, 500, 1000, 2000],
    "int32_scale": 10_000,
}

MULTI_AGENT: dict[str, Any] = {
    "source": SOURCE + "; independent Q-learning, one agent per core, 10,000 FrozenLake "
    "transitions per agent, 2,000 episodes, no averaging",
    "xeon_seconds_1000_agents": 996.52,
    "xeon_seconds_2000_agents": 1943.78,
    "pim_speedup_1000_agents": 11.23,
    "pim_speedup_2000_agents": 21.92,
    "pim_seconds_2000_agents_derived": 1943.78 / 21.92,  # about 88.7 s (derived, not printed)
}

QUALITY: dict[str, Any] = {
    "source": SOURCE + "; mean reward over 1,000 greedy evaluation episodes",
    "frozenlake_q_seq_pim_by_sync_period": {10: 0.74, 25: 0.7295, 50: 0.70},
    "frozenlake_sarsa_seq_pim": 0.71,
    "frozenlake_sarsa_seq_cpu": 0.723,
    "taxi_q_seq_pim": -7.9,
    "taxi_q_seq_cpu": -8.6,
    "taxi_sarsa_seq_pim": -8.8,
    "taxi_sarsa_seq_cpu": -8.2,
    "taxi_optimal_note": "an optimal Taxi policy scores about +8; the published Taxi figures "
    "are far from optimal",
}

TIME_BREAKDOWN: dict[str, Any] = {
    "source": SOURCE + "; phases: PIM kernel, CPU->PIM transfer, PIM->CPU transfer, "
    "inter-core synchronisation",
    "largest_sync_share_percent": 21.19,
    "largest_sync_share_workload": "Q-STR-INT32, Taxi, 2,000 cores",
    "sync_share_percent_taxi_2000_cores": {"q_str_int32": 21.19, "q_seq_int32": 20.79,
                                           "q_ran_int32": 17.0},  # SEQ, RAN: as issue 17 quotes
    "largest_transfer_in_share_percent": 29.61,
    "largest_transfer_in_share_workload": "Q-STR-INT32, FrozenLake",
}

EXTRA: dict[str, Any] = {
    "source": SOURCE + "; figures beyond the headline, read against the paper's text",
    "sarsa_int32_over_fp32_speedup_on_pim": 4.73,  # SARSA-SEQ, FrozenLake
    # FP32 PIM over the CPU-V1 baseline (no absolute CPU time is published for these)
    "fp32_over_cpu_v1": {"frozenlake_q_seq": 1.84, "frozenlake_sarsa_seq": 2.08,
                         "frozenlake_q_ran": 1.96, "taxi_q_seq": 0.64},
    "taxi_over_frozenlake_data": 47.0,  # "47x": 3,000 vs 64 table entries
    "taxi_transfers": "negligible",
    "pim_frequency_hz": 425e6,  # "2,524 PIM cores running at 425 MHz"
    "pim_cores": 2524,
    "table1_system_gops": 1088,
    "table1_system_bandwidth_gb_s": 2145,
}

PUBLISHED: dict[str, dict[str, Any]] = {
    "headline": HEADLINE,
    "hardware": HARDWARE,
    "workload": WORKLOAD,
    "multi_agent": MULTI_AGENT,
    "quality": QUALITY,
    "time_breakdown": TIME_BREAKDOWN,
    "extra": EXTRA,
}
