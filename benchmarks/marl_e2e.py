"""End-to-end MADDPG: wall time (vs the paper's Table I) and learning quality.

Part 1 (time): MADDPG with the trainer's defaults, the original's algorithm (1 env, faithful
sampling: every agent its own indices, uniform, 1e6 buffer, batch 1,024, update every 100 steps
after 25,600 transitions) in the default replay layout (``MARLConfig().layout``; the layout
changes where rows live, not the maths).
The run is timed in two pieces after compilation: the warm-up episodes before the first update
(``ceil(25,600 / 25) = 1,024`` episodes, env steps and buffer writes only), then
``measured_episodes`` further episodes with updates. The 60,000-episode time is EXTRAPOLATED
linearly, ``t_warm + (60,000 - 1,024) / measured_episodes * t_measured`` (compile excluded);
each record says from how many episodes (``extrapolated_from_episodes``). CPU: 3 agents
(spread and tag); GPU: 3, 6, 12, 24 agents.

Part 2 (quality): MADDPG on cooperative navigation with 3 agents in a short-but-sufficient
setting (32 vmapped envs, an update round after every vectorised step, i.e. one round per 32
transitions instead of per 100), with uniform, neighbour and information-prioritised
sampling. The metric is the mean per-agent episode return over the last 10 % of episodes,
compared with a uniform-random policy measured in the same run and env (the better of:
Gumbel-softmax of zero logits, uniformly random one-hot actions):
``improvement = (R - R_rand) / |R_rand|``. Quick and full runs average ``--seeds`` seeds
(>= 4, vmapped in one call per sampler; ``quality_seeds`` in the summary); smoke runs one.

Part 3 (fast mode): the same quality setting (uniform sampler) in ``faithful`` mode (every
agent draws its own indices, target actions recomputed per drawing agent, as the original)
and in ``fast`` mode (one index set per round shared by all agents, target actions computed
once), each over several seeds vmapped in ONE jitted call (seed ``s`` uses ``PRNGKey(s)``,
so both modes start from the same networks and envs). Summary: final return mean over seeds
per mode, ``fast_mode_return_delta = (mean_fast - mean_faithful) / |mean_faithful|``
(positive: fast mode ends higher), its standard error, and the run-time ratio. The sampler
speed-up of the fast mode itself is measured by ``benchmarks/marl_sampling.py``.

Part 4 (throughput): end-to-end training throughput, env steps per second including the
updates (compile and the update-free warm-up excluded), with the trainer's defaults at N = 3,
6, 12, 24 (quick: 3, 6; smoke: 3) in four modes: ``per_agent`` (per-agent layout, faithful:
the original's), ``interleaved`` (interleaved layout, faithful: the trainer's default),
``packed`` (packed-row layout, faithful: one whole-row gather per drawing agent) and ``fast``
(interleaved, one shared index set). Buffer capacity: 1e6 rows where
``--memory-fraction`` of the memory holds them, else the largest that fits (each record says).
Keys ``marl_e2e_speedup_interleaved_vs_per_agent_24``,
``marl_e2e_speedup_packed_vs_interleaved_by_agents`` and
``marl_e2e_fastest_faithful_layout_by_agents`` (the layout with the most env steps per second
at each N).

Full schedule (full mode, summary schema 2): spread-3 and tag-3 run the WHOLE 60,000-episode
schedule, one seed each (``maddpg_spread3_60k_s``, ``maddpg_tag3_60k_s``: measured, not
extrapolated); N = 6, 12, 24 run 1,000 (GPU 2,000) episodes of it after the warm-up, reported
as seconds per 1,000 episodes with the buffer capacity used, next to the paper's Table I
(published figures, 60k seconds / 60).

    python benchmarks/marl_e2e.py [--publish]   # full
    python benchmarks/marl_e2e.py --quick       # a few minutes on 2 CPU cores
    python benchmarks/marl_e2e.py --smoke       # test sizes, parts 1-2 (a minute)
    python benchmarks/marl_e2e.py --parts fast_mode   # one part only (others absent)
"""

from __future__ import annotations

import dataclasses
import math
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as python benchmarks/<name>.py: the package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import jax
import jax.numpy as jnp
import numpy as np

from benchmarks import harness
from jaxrl_pim import report
from jaxrl_pim.marl import MARLConfig, make_init, make_train, make_train_from, random_policy_return

#: Paper Table I: 60k-episode MADDPG on RTX 3090 + Ryzen 3975WX, seconds (published figures).
PAPER_S = {
    "tag": {3: 3365.99, 6: 8504.99, 12: 23406.16, 24: 82768.15},
    "spread": {3: 2403.64, 6: 5888.64, 12: 15722.43, 24: 52421.81},
}
FULL_EPISODES = 60_000
PARTS = ("timing", "quality", "fast_mode", "throughput")
#: Part 4's modes: name -> (layout, sampling_mode).
E2E_MODES = {"per_agent": ("per_agent", "faithful"), "interleaved": ("interleaved", "faithful"),
             "packed": ("packed", "faithful"), "fast": ("interleaved", "fast")}
#: The faithful modes, one per replay layout: the default layout is the fastest of these.
FAITHFUL_LAYOUTS = ("per_agent", "interleaved", "packed")
#: Version of the summary's keys: 2 adds the full-schedule and throughput keys; files without
#: it keep the keys they were written with.
SUMMARY_SCHEMA = 2
SAMPLERS = ("uniform", "neighbor", "info_prioritized")


def sizes(mode: str, gpu: bool) -> dict[str, Any]:
    """Sizes of every part for a mode (full, quick, smoke) and backend."""
    if mode == "smoke":
        # learning_starts 256 -> 11 warm-up episodes; measuring 11 reuses that program
        return {"timing_envs": ["spread"], "timing_agents": [3], "measure_episodes": 11,
                "throughput_agents": [3], "throughput_episodes": 11,
                "timing_overrides": {"buffer_capacity": 4_096, "learning_starts": 256,
                                     "batch_size": 64},
                "quality_episodes": 10, "samplers": ["uniform"], "seeds": 2,
                "fast_mode_episodes": 10,
                "quality_overrides": {"num_envs": 4, "buffer_capacity": 2_048,
                                      "batch_size": 32, "learning_starts": 128, "num_refs": 4},
                "random_episodes": 5}
    agents = [3, 6, 12, 24] if gpu else [3]
    quick = mode == "quick"
    return {"timing_envs": ["spread", "tag"],
            "timing_agents": agents[:2] if quick else [3, 6, 12, 24],
            "measure_episodes": 2000 if gpu else (200 if quick else 1000),
            "full_schedule_agents": [] if quick else [3],
            "throughput_agents": [3, 6] if quick else [3, 6, 12, 24],
            "throughput_episodes": 100 if quick else 400,
            "timing_overrides": {}, "quality_episodes": 300 if quick else 400,
            "samplers": list(SAMPLERS), "seeds": 8 if gpu else (4 if quick else 6),
            "fast_mode_episodes": 150 if quick else 400, "quality_overrides": {},
            "random_episodes": 50}


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
        limit = 0
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                limit = int(line.split()[1]) * 1024
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


def fast_mode_stats(fast_mode: dict[str, Any]) -> dict[str, Any]:
    """Mean, sample std (``ddof=1``; None for one seed) per mode, the relative difference
    of the means, its standard error (independent means, relative to |faithful|), the
    paired per-seed differences and the run-time ratio."""
    out: dict[str, Any] = {}
    for mode in ("faithful", "fast"):
        x = np.asarray(fast_mode[mode]["final_return_per_seed"], np.float64)
        out[mode] = {"mean": float(x.mean()),
                     "std": float(x.std(ddof=1)) if len(x) > 1 else None, "n": len(x)}
    fa, fs = out["faithful"], out["fast"]
    out["return_delta"] = (fs["mean"] - fa["mean"]) / abs(fa["mean"])
    out["return_delta_se"] = None
    if fa["std"] is not None and fs["std"] is not None:
        out["return_delta_se"] = float(np.sqrt(fa["std"] ** 2 / fa["n"] + fs["std"] ** 2
                                               / fs["n"]) / abs(fa["mean"]))
    out["return_diff_per_seed"] = (
        np.asarray(fast_mode["fast"]["final_return_per_seed"])
        - np.asarray(fast_mode["faithful"]["final_return_per_seed"])).tolist()
    out["time_ratio_faithful_over_fast"] = (fast_mode["faithful"]["run_s"]
                                            / fast_mode["fast"]["run_s"])
    return out


def _improvement(quality: dict[str, Any], sampler: str) -> float | None:
    run = quality["runs"].get(sampler)
    if run is None:
        return None
    rand = quality["random_return"]
    return (run["final_return"] - rand) / abs(rand)


def _gap(quality: dict[str, Any], sampler: str) -> float | None:
    run, base = quality["runs"].get(sampler), quality["runs"].get("uniform")
    if run is None or base is None:
        return None
    return abs(run["final_return"] - base["final_return"]) / abs(base["final_return"])


def summarize(report_: dict[str, Any]) -> dict[str, Any]:
    """Headline numbers from the stored records (see the module docstring)."""
    system, res = report_["system"], report_["results"]
    quality, fast_mode, timing = res.get("quality"), res.get("fast_mode"), res.get("timing")
    summary: dict[str, Any] = {
        "device": f"{system['backend']}: {system['device_count']} x {system['device_kind']}",
        "mode": report_["config"]["mode"],
        "maddpg_spread3_improvement_vs_random": (
            _improvement(quality, "uniform") if quality else None),
        "neighbor_gap_vs_uniform": _gap(quality, "neighbor") if quality else None,
        "info_prioritized_gap_vs_uniform": (
            _gap(quality, "info_prioritized") if quality else None),
    }
    if fast_mode:
        st = fast_mode_stats(fast_mode)
        summary.update(
            fast_mode_seeds=st["fast"]["n"],
            faithful_final_return_mean=st["faithful"]["mean"],
            fast_final_return_mean=st["fast"]["mean"],
            fast_mode_return_delta=st["return_delta"],
            fast_mode_return_delta_se=st["return_delta_se"],
            fast_mode_time_ratio_faithful_over_fast=st["time_ratio_faithful_over_fast"],
        )
    else:
        summary.update(fast_mode_seeds=None, fast_mode_return_delta=None,
                       fast_mode_return_delta_se=None)
    rows = timing or []
    summary["extrapolated_60k_s"] = {f"{r['env']}{r['agents']}": r["extrapolated_60k_s"]
                                     for r in rows}
    summary["extrapolated_speedup_vs_paper"] = {
        f"{r['env']}{r['agents']}": r["paper_60k_s"] / r["extrapolated_60k_s"]
        for r in rows if r["paper_60k_s"]}
    if report_["config"].get("summary_schema", 1) < 2:
        return summary
    full = {f"{r['env']}{r['agents']}": r for r in rows
            if r["extrapolated_from_episodes"] >= FULL_EPISODES}
    for env in ("spread", "tag"):
        r = full.get(f"{env}3")
        summary[f"maddpg_{env}3_60k_s"] = None if r is None else r["warmup_s"] + r["measured_s"]
        summary[f"maddpg_{env}3_60k_seeds"] = None if r is None else 1
    summary["maddpg_s_per_1k_episodes"] = {
        f"{r['env']}{r['agents']}": 1000 * r["measured_s"] / r["measured_episodes"]
        for r in rows}
    summary["paper_s_per_1k_episodes_published"] = {
        f"{r['env']}{r['agents']}": r["paper_60k_s"] / 60 for r in rows if r["paper_60k_s"]}
    summary["maddpg_buffer_capacity"] = {f"{r['env']}{r['agents']}": _cfg(r, "buffer_capacity")
                                         for r in rows}
    summary["quality_seeds"] = None if not quality else min(
        len(r.get("seeds") or [r["seed"]]) for r in quality["runs"].values())
    tp = res.get("throughput") or []
    sps = {m: {str(r["agents"]): r["steps_per_s"] for r in tp if r["mode"] == m}
           for m in E2E_MODES}
    summary["marl_e2e_steps_per_s"] = sps
    for m in ("interleaved", "packed", "fast"):
        by_n = {n: v / sps["per_agent"][n] for n, v in sps[m].items() if n in sps["per_agent"]}
        summary[f"marl_e2e_speedup_{m}_vs_per_agent_by_agents"] = by_n
        summary[f"marl_e2e_speedup_{m}_vs_per_agent_24"] = by_n.get("24")
    summary["marl_e2e_speedup_packed_vs_interleaved_by_agents"] = {
        n: v / sps["interleaved"][n] for n, v in sps["packed"].items() if n in sps["interleaved"]}
    summary["marl_e2e_fastest_faithful_layout_by_agents"] = {
        n: max((m for m in FAITHFUL_LAYOUTS if n in sps[m]), key=lambda m, n=n: sps[m][n])
        for n in sps["per_agent"]}
    return summary


def _cfg(record: dict[str, Any], field: str, missing: Any = None) -> Any:
    """A ``MARLConfig`` field of a record, whether the config is the object or its stored dict
    (``missing`` where a file written before the field existed lacks it)."""
    c = record["config"]
    return c.get(field, missing) if isinstance(c, dict) else getattr(c, field)


def render_markdown(report_: dict[str, Any]) -> str:
    """Tables of the three parts (from the stored report)."""
    res, summary = report_["results"], report_["summary"]
    timing, quality, fast_mode = res.get("timing"), res.get("quality"), res.get("fast_mode")
    lines = [f"Device: {summary['device']}; mode {summary['mode']}.", ""]
    if timing:
        lines += [
            f"MADDPG with the trainer's defaults (the original's algorithm, "
            f"`{_cfg(timing[0], 'layout', 'per_agent')}` replay layout); the 60k-episode time is "
            "extrapolated from the episodes run (warm-up + measured). Paper: published RTX 3090 "
            "figures.",
            "",
            "| env | agents | warm-up eps | warm-up s | measured eps | measured s | "
            "extrapolated from eps | 60k eps s (extrapolated) | paper 60k s |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for r in timing:
            lines.append(
                f"| {r['env']} | {r['agents']} | {r['warmup_episodes']:,} | {r['warmup_s']:.1f} "
                f"| {r['measured_episodes']:,} | {r['measured_s']:.1f} | "
                f"{r['extrapolated_from_episodes']:,} | {r['extrapolated_60k_s']:.0f} | "
                f"{'' if r['paper_60k_s'] is None else r['paper_60k_s']} |")
        lines.append("")
    if timing and report_["config"].get("summary_schema", 1) >= 2:
        lines += [
            "Time on the full schedule (one seed each): `60k s` is MEASURED over all 60,000 "
            "episodes where the run covered them, else `-`; `s per 1k eps` is measured after "
            "the warm-up (updates included). Paper: Table I, published RTX 3090 figures "
            "(60k seconds / 60 per 1k episodes).", "",
            "| env | agents | capacity | episodes run | 60k s (measured) | s per 1k eps | "
            "paper s per 1k eps (published) |", "|---|---:|---:|---:|---:|---:|---:|"]
        for r in timing:
            cap = _cfg(r, "buffer_capacity")
            full = (f"{r['warmup_s'] + r['measured_s']:.0f}"
                    if r["extrapolated_from_episodes"] >= FULL_EPISODES else "-")
            paper = "" if r["paper_60k_s"] is None else f"{r['paper_60k_s'] / 60:.1f}"
            lines.append(
                f"| {r['env']} | {r['agents']} | {cap:,} | {r['extrapolated_from_episodes']:,} "
                f"| {full} | {1000 * r['measured_s'] / r['measured_episodes']:.1f} | {paper} |")
        lines.append("")
    tp = res.get("throughput")
    if tp:
        lines += [
            "End-to-end training throughput (env steps per second including the updates, "
            "after the update-free warm-up, compile excluded; the trainer's defaults but the "
            "layout and sampling mode, one seed; "
            "capacity = buffer rows used):", "",
            "| env | agents | mode | capacity | episodes | s | env steps/s | vs per_agent |",
            "|---|---:|---|---:|---:|---:|---:|---:|"]
        base = {(r["env"], r["agents"]): r["steps_per_s"] for r in tp if r["mode"] == "per_agent"}
        for r in tp:
            b = base.get((r["env"], r["agents"]))
            vs = "" if b is None else f"{r['steps_per_s'] / b:.2f}x"
            lines.append(
                f"| {r['env']} | {r['agents']} | {r['mode']} | {r['buffer_capacity']:,} | "
                f"{r['measured_episodes']:,} | {r['measured_s']:.1f} | {r['steps_per_s']:,.0f} "
                f"| {vs} |")
        lines.append("")
    if quality:
        lines += [
            f"Random policy return (same env, this run): {quality['random_return']:.2f} "
            f"(Gumbel zero-logits {quality['random_return_gumbel']:.2f}, one-hot "
            f"{quality['random_return_one_hot']:.2f}).",
            "",
            *([f"Seeds per sampler: {summary['quality_seeds']} (final return: mean over "
               "seeds).", ""] if summary.get("quality_seeds") else []),
            "| sampler | update rounds | final return | improvement vs random | gap vs uniform |",
            "|---|---:|---:|---:|---:|",
        ]
        for s, r in quality["runs"].items():
            gap = _gap(quality, s)
            lines.append(
                f"| {s} | {r['update_rounds']:,} | {r['final_return']:.2f} | "
                f"{_improvement(quality, s) * 100:.1f} % | "
                f"{'' if gap is None else f'{gap * 100:.1f} %'} |")
        lines.append("")
    if fast_mode:
        st = fast_mode_stats(fast_mode)
        n = st["fast"]["n"]
        lines += [
            f"Faithful vs fast sampling mode (uniform sampler, seeds 0-{n - 1} vmapped in one "
            f"call; final return = mean over the last "
            f"{fast_mode['fast']['final_window_episodes']} episodes; mean +- sample std over "
            "seeds; times for all seeds together):",
            "",
            "| mode | update rounds | final return | per seed | run s | compile s |",
            "|---|---:|---|---|---:|---:|",
        ]
        for m in ("faithful", "fast"):
            r, s = fast_mode[m], st[m]
            std = "" if s["std"] is None else f" +- {s['std']:.2f}"
            per = ", ".join(f"{x:.1f}" for x in r["final_return_per_seed"])
            lines.append(f"| {m} | {r['update_rounds']:,} | {s['mean']:.2f}{std} | {per} | "
                         f"{r['run_s']:.1f} | {r['compile_s']:.1f} |")
        se = st["return_delta_se"]
        lines += [
            "",
            f"Fast minus faithful, relative to the faithful return: "
            f"{st['return_delta'] * 100:+.1f} %"
            + ("" if se is None else f" (standard error {se * 100:.1f} %)")
            + f"; faithful run time / fast run time: "
            f"{st['time_ratio_faithful_over_fast']:.2f}x.",
        ]
    return "\n".join(lines) + "\n"


def _smooth(c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Moving average over ``len(c) // 30`` episodes: ``(x, y)``."""
    k = max(1, len(c) // 30)
    sm = np.convolve(c, np.ones(k) / k, mode="valid")
    return np.arange(len(sm)) + k - 1, sm


def plot_curves(quality: dict[str, Any], fast_mode: dict[str, Any], path: Path) -> None:
    """Learning curves vs the random policy: samplers (part 2) and sampling modes (part 3)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [p for p in (quality, fast_mode) if p]
    fig, axes = plt.subplots(1, len(panels), figsize=(6.5 * len(panels), 4), squeeze=False)
    axes = list(axes[0])
    if quality:
        ax = axes.pop(0)
        for s, r in quality["runs"].items():
            ax.plot(*_smooth(np.asarray(r["curve"])), label=s)
        ax.axhline(quality["random_return"], color="k", ls="--", label="random policy")
        ax.set_title("samplers (fast mode, seed 0)")
    if fast_mode:
        ax = axes.pop(0)
        for m in ("faithful", "fast"):
            r = fast_mode[m]
            x, mean = _smooth(np.asarray(r["curve_mean"]))
            _, std = _smooth(np.asarray(r["curve_std"]))
            ax.plot(x, mean, label=f"{m} (mean of {len(r['seeds'])} seeds)")
            ax.fill_between(x, mean - std, mean + std, alpha=0.2)
        if quality:
            ax.axhline(quality["random_return"], color="k", ls="--", label="random policy")
        ax.set_title("faithful vs fast sampling mode (uniform; band: +- std over seeds)")
    for ax in fig.axes:
        ax.set_xlabel("episode (per env)")
        ax.set_ylabel("mean per-agent episode return")
        ax.legend(fontsize=8)
    fig.suptitle("MADDPG, cooperative navigation, 3 agents", fontsize=10)
    fig.tight_layout()
    report.atomic_save(path, lambda tmp: fig.savefig(tmp, dpi=120))
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__)
    harness.add_parts(ap, PARTS, "timing and quality, part 3 being part 2's trainer vmapped "
                      "over seeds, whose compile alone takes most of a minute")
    ap.add_argument("--seeds", type=int, default=None,
                    help="seeds of part 3 (default CPU 6, --quick 4, GPU 8, --smoke 2)")
    ap.add_argument("--memory-fraction", type=float, default=0.5,
                    help="share of the memory the replay buffer may use; capacity is 1e6 "
                         "rows where that holds them (default 0.5)")
    args, run, mode = harness.start(ap, argv, __file__, cpu_workarounds=False)
    gpu = jax.default_backend() != "cpu"
    size = sizes(mode, gpu)
    seeds = args.seeds or size["seeds"]
    ap_parts = ["timing", "quality", "throughput"] if mode == "smoke" else list(PARTS)
    args.parts = args.parts or ap_parts
    out = harness.output_path(args, "marl_e2e")
    timer: dict[str, float] = {}
    results: dict[str, Any] = {}

    if "timing" in args.parts:
        t0 = time.perf_counter()
        rows = []
        for env in size["timing_envs"]:
            for n in size["timing_agents"]:
                over = dict(size["timing_overrides"])
                if not over:  # 1e6 rows where memory allows
                    over["buffer_capacity"] = fit_capacity(env, n, args.memory_fraction)
                episodes = size["measure_episodes"]
                if n in size.get("full_schedule_agents", []):  # the whole 60k schedule
                    warm = math.ceil(MARLConfig().learning_starts / MARLConfig().episode_length)
                    episodes = FULL_EPISODES - warm
                row = time_maddpg(env, n, episodes, over)
                print(f"[time] {env} N={n}: ~{row['extrapolated_60k_s']:.0f} s for 60k episodes "
                      f"(extrapolated from {row['extrapolated_from_episodes']:,}; paper "
                      f"{row['paper_60k_s']})", flush=True)
                rows.append(row)
        results["timing"] = rows
        timer["timing"] = time.perf_counter() - t0

    if "quality" in args.parts:
        t0 = time.perf_counter()
        cfg0 = quality_config("uniform", size["quality_episodes"],
                              overrides=size["quality_overrides"])
        key = jax.random.PRNGKey(123)
        rand_gumbel = float(random_policy_return(cfg0, key, size["random_episodes"])[0])
        rand_onehot = float(random_policy_return(cfg0, key, size["random_episodes"],
                                                 one_hot=True)[0])
        runs = {}
        for s in size["samplers"]:
            qcfg = quality_config(s, size["quality_episodes"],
                                  overrides=size["quality_overrides"])
            # smoke: one seed (a vmapped compile per sampler would dominate the test)
            runs[s] = (quality_run(qcfg, seed=0) if mode == "smoke"
                       else quality_run_seeds(qcfg, seeds))
            print(f"[quality] {s}: final return {runs[s]['final_return']:.2f} (random "
                  f"{max(rand_gumbel, rand_onehot):.2f})", flush=True)
        results["quality"] = {"random_return_gumbel": rand_gumbel,
                              "random_return_one_hot": rand_onehot,
                              "random_return": max(rand_gumbel, rand_onehot), "runs": runs}
        timer["quality"] = time.perf_counter() - t0

    if "fast_mode" in args.parts:
        t0 = time.perf_counter()
        fast_mode = {}
        for m in ("faithful", "fast"):
            cfg = quality_config("uniform", size["fast_mode_episodes"], sampling_mode=m,
                                 overrides=size["quality_overrides"])
            fast_mode[m] = r = mode_run(cfg, seeds)
            print(f"[fast-mode] {m}: final returns {np.round(r['final_return_per_seed'], 2)}; "
                  f"run {r['run_s']:.1f} s, compile {r['compile_s']:.1f} s", flush=True)
        results["fast_mode"] = fast_mode
        timer["fast_mode"] = time.perf_counter() - t0

    if "throughput" in args.parts:
        t0 = time.perf_counter()
        rows = []
        for n in size["throughput_agents"]:
            over = dict(size["timing_overrides"])
            if not over:
                over["buffer_capacity"] = fit_capacity("spread", n, args.memory_fraction)
            for m in E2E_MODES:
                r = throughput("spread", n, m, size["throughput_episodes"], over)
                print(f"[throughput] spread N={n} {m}: {r['steps_per_s']:,.0f} env steps/s "
                      f"(capacity {r['buffer_capacity']:,})", flush=True)
                rows.append(r)
        results["throughput"] = rows
        timer["throughput"] = time.perf_counter() - t0

    config = {"mode": mode, "parts": list(args.parts), "seeds": seeds, "sizes": size,
              "summary_schema": SUMMARY_SCHEMA, "memory_fraction": args.memory_fraction}
    harness.write(out, run=run, config=config, results=results, timing_s=timer,
                  summarize=summarize, markdown=render_markdown)
    if results.get("quality") or results.get("fast_mode"):
        plot_curves(results.get("quality", {}), results.get("fast_mode", {}),
                    out.with_suffix(".png"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
