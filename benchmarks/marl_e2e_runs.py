"""What ``benchmarks/marl_e2e.py`` measures: MADDPG runs, timed and scored.

Part 1's timed run of the trainer's defaults, extrapolated to the 60,000-episode schedule
(:func:`time_maddpg`; paper Table I in :data:`PAPER_S`); the buffer capacity that fits the
memory (:func:`fit_capacity`, the host's read by :func:`jaxrl_pim.marl.plan.host_meminfo`);
part 2's short-but-sufficient quality runs (:func:`quality_config`, :func:`quality_run`,
:func:`quality_run_seeds`); part 3's sampling modes over seeds in one vmapped call
(:func:`mode_run`); part 4's throughput per mode (:func:`throughput`, :data:`E2E_MODES`).
The script's docstring describes each part.
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl_pim.marl import MARLConfig, make_init, make_train, make_train_from
from jaxrl_pim.marl.plan import host_meminfo

#: Paper Table I: 60k-episode MADDPG on RTX 3090 + Ryzen 3975WX, seconds (published figures).
PAPER_S = {
    "tag": {3: 3365.99, 6: 8504.99, 12: 23406.16, 24: 82768.15},
    "spread": {3: 2403.64, 6: 5888.64, 12: 15722.43, 24: 52421.81},
}
FULL_EPISODES = 60_000
#: Part 4's modes: name -> (layout, sampling_mode).
E2E_MODES = {"per_agent": ("per_agent", "faithful"), "interleaved": ("interleaved", "faithful"),
             "packed": ("packed", "faithful"), "fast": ("interleaved", "fast")}


def time_maddpg(env: str, agents: int, measure_episodes: int,
                overrides: dict[str, Any]) -> dict[str, Any]:
    """Warm-up + measured piece of a default MADDPG run; extrapolated to 60k."""
    cfg = MARLConfig(env=env, num_agents=agents, num_episodes=FULL_EPISODES, **overrides)
    warm = math.ceil(cfg.learning_starts / (cfg.episode_length * cfg.num_envs))
    state = jax.jit(make_init(cfg))(jax.random.PRNGKey(0))
    t0 = time.perf_counter()
    # the state (replay buffers included) is donated: each call reuses its input's memory,
    # so a buffer sized to --memory-fraction is held once, not twice (input and output)
    # the static schedule: the measured piece, which starts at episode `warm`, is its own program
    warm_c = jax.jit(make_train_from(cfg, warm), donate_argnums=0).lower(state).compile()
    meas_c = jax.jit(make_train_from(cfg, measure_episodes, start_episode=warm),
                     donate_argnums=0).lower(state).compile()
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    state, _ = warm_c(state)
    jax.block_until_ready(state)
    t_warm = time.perf_counter() - t0
    updates0 = int(state.num_updates)
    t0 = time.perf_counter()
    state, metrics = meas_c(state)
    jax.block_until_ready(state)
    t_meas = time.perf_counter() - t0
    return {
        "env": env,
        "agents": agents,
        "config": cfg,
        "warmup_episodes": warm,
        "warmup_s": t_warm,
        "measured_episodes": measure_episodes,
        "measured_s": t_meas,
        "measured_update_rounds": int(state.num_updates) - updates0,
        "compile_s": compile_s,
        "extrapolated_from_episodes": warm + measure_episodes,
        "extrapolated_60k_s": t_warm + (FULL_EPISODES - warm) / measure_episodes * t_meas,
        "paper_60k_s": PAPER_S[env].get(agents),
        "final_return": float(np.asarray(metrics["episode_return"])[-100:, 0].mean()),
    }


def row_bytes(env: str, agents: int) -> int:
    """Bytes of one stored time step of all agents (float32 obs, action, reward, next obs,
    done), from the world's team shapes."""
    from jaxrl_pim.envs import mpe

    world, _ = mpe.make(env, agents)
    return sum(4 * t.num_agents * (2 * t.obs_dim + t.action_dim + 2) for t in world.teams)


def fit_capacity(env: str, agents: int, fraction: float, requested: int = 1_000_000) -> int:
    """The requested capacity, or the largest whose buffer fits ``fraction`` of the memory
    (the XLA allocator's limit on an accelerator, ``MemAvailable`` on a CPU)."""
    dev = jax.devices()[0]
    try:
        limit = (dev.memory_stats() or {}).get("bytes_limit")
    except Exception:  # noqa: BLE001 -- some backends do not implement memory_stats
        limit = None
    if not limit:
        limit = host_meminfo().get("MemAvailable", 0)
    return int(min(requested, fraction * limit // row_bytes(env, agents)))


def throughput(env: str, agents: int, mode: str, episodes: int,
               overrides: dict[str, Any]) -> dict[str, Any]:
    """Part 4: one mode's env steps per second including updates (after the warm-up)."""
    layout, sampling = E2E_MODES[mode]
    row = time_maddpg(env, agents, episodes,
                      {**overrides, "layout": layout, "sampling_mode": sampling})
    cfg = row["config"]
    steps = row["measured_episodes"] * cfg.episode_length * cfg.num_envs
    return {**{k: v for k, v in row.items() if k not in ("extrapolated_60k_s",
                                                         "extrapolated_from_episodes")},
            "mode": mode, "buffer_capacity": cfg.buffer_capacity,
            "env_steps": steps, "steps_per_s": steps / row["measured_s"]}


def quality_config(sampler: str, episodes: int, sampling_mode: str = "fast",
                   overrides: dict[str, Any] | None = None) -> MARLConfig:
    """The short-but-sufficient spread-3 setting of parts 2 and 3."""
    base = MARLConfig(
        env="spread", num_agents=3, num_envs=32, num_episodes=episodes, update_every=1,
        sampling_mode=sampling_mode, sampler=sampler, buffer_capacity=100_000, batch_size=256,
        learning_starts=6400, num_refs=16,
    )
    return dataclasses.replace(base, **(overrides or {}))


def quality_run(cfg: MARLConfig, seed: int) -> dict[str, Any]:
    """Short MADDPG run; returns the learning curve and the final return."""
    t0 = time.perf_counter()
    state, metrics = jax.jit(make_train(cfg))(jax.random.PRNGKey(seed))
    returns = np.asarray(metrics["episode_return"])[:, 0]
    wall = time.perf_counter() - t0
    tail = max(1, cfg.num_episodes // 10)
    return {
        "config": cfg,
        "sampler": cfg.sampler,
        "seed": seed,
        "wall_s_incl_compile": wall,
        "update_rounds": int(state.num_updates),
        "final_return": float(returns[-tail:].mean()),
        "final_window_episodes": tail,
        "curve": returns.tolist(),
    }


def quality_run_seeds(cfg: MARLConfig, seeds: int) -> dict[str, Any]:
    """Part 2 over ``seeds`` seeds (vmapped in one call, :func:`mode_run`): the record of
    :func:`quality_run` with ``final_return`` the mean over seeds, ``final_return_per_seed``,
    ``seeds`` and ``curve`` the seed-mean learning curve."""
    r = mode_run(cfg, seeds)
    return {"config": cfg, "sampler": cfg.sampler, "seed": None, "seeds": r["seeds"],
            "wall_s_incl_compile": r["compile_s"] + r["run_s"],
            "update_rounds": r["update_rounds"],
            "final_return": float(np.mean(r["final_return_per_seed"])),
            "final_return_per_seed": r["final_return_per_seed"],
            "final_window_episodes": r["final_window_episodes"], "curve": r["curve_mean"]}


def mode_run(cfg: MARLConfig, seeds: int) -> dict[str, Any]:
    """Part 3: one sampling mode over ``seeds`` seeds in one vmapped call.

    Returns per-seed final returns (mean per-agent return over the last 10 % of episodes),
    the seed-mean learning curve ``[episodes]`` and its std, and ``compile_s`` / ``run_s``
    (wall seconds for all seeds together).
    """
    keys = jnp.stack([jax.random.PRNGKey(s) for s in range(seeds)])
    fn = jax.jit(jax.vmap(make_train(cfg)))
    t0 = time.perf_counter()
    compiled = fn.lower(keys).compile()
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    state, metrics = compiled(keys)
    jax.block_until_ready((state, metrics))
    run_s = time.perf_counter() - t0
    returns = np.asarray(metrics["episode_return"])[:, :, 0]  # [seeds, episodes]
    tail = max(1, cfg.num_episodes // 10)
    finals = returns[:, -tail:].mean(axis=1)
    return {
        "config": cfg,
        "sampling_mode": cfg.sampling_mode,
        "seeds": list(range(seeds)),
        "vmapped_over_seeds": True,
        "compile_s": compile_s,
        "run_s": run_s,
        "update_rounds": int(np.asarray(state.num_updates).reshape(-1)[0]),
        "final_window_episodes": tail,
        "final_return_per_seed": finals.tolist(),
        "curve_mean": returns.mean(axis=0).tolist(),
        "curve_std": returns.std(axis=0).tolist(),
    }
