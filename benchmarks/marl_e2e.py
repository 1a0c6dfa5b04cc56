"""End-to-end MADDPG: wall time (vs the paper's Table I) and learning quality.

Part 1 (time): MADDPG with the original defaults (1 env, faithful per-agent sampling, uniform,
per-agent layout, 1e6 buffer, batch 1,024, update every 100 steps after 25,600 transitions).
The run is timed in two pieces after compilation: the warm-up episodes before the first update
(``ceil(25,600 / 25) = 1,024`` episodes, env steps and buffer writes only), then
``measure_episodes`` further episodes with updates. The 60,000-episode time is EXTRAPOLATED
linearly: ``t_warm + (60,000 - 1,024) / measure_episodes * t_measure`` (compile excluded).
CPU: 3 agents (spread and tag); GPU: 3, 6, 12, 24 agents.

Part 2 (quality): MADDPG on cooperative navigation with 3 agents in a short-but-sufficient
setting (32 vmapped envs, an update round after every vectorised step, i.e. one round per 32
transitions instead of per 100), with uniform, neighbour and information-prioritised
sampling. The metric is the mean per-agent episode return over the last 10 % of episodes,
compared with a uniform-random policy in the same env (the better of: Gumbel-softmax of zero
logits, uniformly random one-hot actions): ``improvement = (R - R_rand) / |R_rand|``.

Part 3 (fast mode): the same quality setting (uniform sampler) in ``faithful`` mode (every
agent draws its own indices, target actions recomputed per drawing agent, as the original)
and in ``fast`` mode (one index set per round shared by all agents, target actions computed
once), each over several seeds vmapped in ONE jitted call (seed ``s`` uses
``PRNGKey(s)``, so both modes start from the same networks and envs). Reported: final
return mean and sample standard deviation over seeds, the relative difference
``fast_mode_return_delta = (mean_fast - mean_faithful) / |mean_faithful|`` (positive: fast
mode ends with a higher return), its standard error, and the compile and run time of each
mode (all seeds together).

    python benchmarks/marl_e2e.py            # full
    python benchmarks/marl_e2e.py --quick    # a few minutes on 2 CPU cores
    python benchmarks/marl_e2e.py --skip-timing --skip-quality --reuse   # part 3 only

``--reuse`` keeps the parts that are skipped from the existing ``marl_e2e.json`` (their
provenance -- device and date -- is recorded in ``results.provenance``), so one part can be
re-run without losing the others.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl_pim import report
from jaxrl_pim.marl.maddpg import (
    MARLConfig,
    make_init,
    make_train,
    make_train_from,
    random_policy_return,
)

# Paper Table I: 60k-episode MADDPG on RTX 3090 + Ryzen 3975WX, seconds.
PAPER_S = {
    "tag": {3: 3365.99, 6: 8504.99, 12: 23406.16, 24: 82768.15},
    "spread": {3: 2403.64, 6: 5888.64, 12: 15722.43, 24: 52421.81},
}
FULL_EPISODES = 60_000


def time_maddpg(env: str, agents: int, measure_episodes: int) -> dict:
    """Warm-up + measured piece of an original-defaults MADDPG run; extrapolated to 60k."""
    cfg = MARLConfig(env=env, num_agents=agents, num_episodes=FULL_EPISODES)
    warm = math.ceil(cfg.learning_starts / (cfg.episode_length * cfg.num_envs))
    state = jax.jit(make_init(cfg))(jax.random.PRNGKey(0))
    warm_fn = jax.jit(make_train_from(cfg, warm))
    meas_fn = jax.jit(make_train_from(cfg, measure_episodes))
    t0 = time.perf_counter()
    warm_c = warm_fn.lower(state).compile()
    meas_c = meas_fn.lower(state).compile()
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
    est = t_warm + (FULL_EPISODES - warm) / measure_episodes * t_meas
    return {
        "env": env,
        "agents": agents,
        "warmup_episodes": warm,
        "warmup_s": t_warm,
        "measured_episodes": measure_episodes,
        "measured_s": t_meas,
        "measured_update_rounds": int(state.num_updates) - updates0,
        "compile_s": compile_s,
        "estimated_60k_s": est,
        "extrapolated": True,
        "paper_60k_s": PAPER_S[env].get(agents),
        "speedup_vs_paper": PAPER_S[env][agents] / est if agents in PAPER_S[env] else None,
        "final_return": float(np.asarray(metrics["episode_return"])[-100:, 0].mean()),
    }


def quality_config(sampler: str, episodes: int, sampling_mode: str = "fast") -> MARLConfig:
    """The short-but-sufficient spread-3 setting of parts 2 and 3."""
    return MARLConfig(
        env="spread", num_agents=3, num_envs=32, num_episodes=episodes, update_every=1,
        sampling_mode=sampling_mode, sampler=sampler, buffer_capacity=100_000, batch_size=256,
        learning_starts=6400, num_refs=16,
    )


def quality_run(sampler: str, episodes: int, seed: int) -> dict:
    """Short MADDPG run on spread-3; returns the learning curve and the final return."""
    cfg = quality_config(sampler, episodes)
    t0 = time.perf_counter()
    state, metrics = jax.jit(make_train(cfg))(jax.random.PRNGKey(seed))
    returns = np.asarray(metrics["episode_return"])[:, 0]
    wall = time.perf_counter() - t0
    tail = max(1, episodes // 10)
    return {
        "config": cfg,
        "sampler": sampler,
        "seed": seed,
        "wall_s_incl_compile": wall,
        "update_rounds": int(state.num_updates),
        "final_return": float(returns[-tail:].mean()),
        "final_window_episodes": tail,
        "curve": returns.tolist(),
    }


def mode_run(mode: str, episodes: int, seeds: int) -> dict[str, Any]:
    """Part 3: one sampling mode (uniform sampler) over ``seeds`` seeds in one vmapped call.

    Returns per-seed final returns (mean per-agent return over the last 10 % of episodes),
    their mean and sample standard deviation (``ddof = 1``), the seed-mean learning curve
    ``[episodes]``, and ``compile_s`` / ``run_s`` (wall seconds for all seeds together).
    """
    cfg = quality_config("uniform", episodes, sampling_mode=mode)
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
    tail = max(1, episodes // 10)
    finals = returns[:, -tail:].mean(axis=1)
    return {
        "config": cfg,
        "sampling_mode": mode,
        "seeds": list(range(seeds)),
        "vmapped_over_seeds": True,
        "compile_s": compile_s,
        "run_s": run_s,
        "run_s_per_seed": run_s / seeds,
        "update_rounds": int(np.asarray(state.num_updates).reshape(-1)[0]),
        "final_window_episodes": tail,
        "final_return_per_seed": finals.tolist(),
        "final_return_mean": float(finals.mean()),
        "final_return_std": float(finals.std(ddof=1)) if seeds > 1 else None,
        "curve_mean": returns.mean(axis=0).tolist(),
        "curve_std": returns.std(axis=0).tolist(),
    }


def fast_mode_study(episodes: int, seeds: int) -> dict[str, Any]:
    """Part 3: faithful vs fast sampling mode, same settings and seeds."""
    runs = {}
    for mode in ("faithful", "fast"):
        runs[mode] = r = mode_run(mode, episodes, seeds)
        std = "n/a" if r["final_return_std"] is None else f"{r['final_return_std']:.2f}"
        print(f"[fast-mode] {mode}: final return {r['final_return_mean']:.2f} +- {std} "
              f"over {seeds} seeds; run {r['run_s']:.1f} s, compile {r['compile_s']:.1f} s",
              flush=True)
    fa, fs = runs["faithful"], runs["fast"]
    delta = (fs["final_return_mean"] - fa["final_return_mean"]) / abs(fa["final_return_mean"])
    diffs = np.asarray(fs["final_return_per_seed"]) - np.asarray(fa["final_return_per_seed"])
    se = None
    paired_std = None
    if seeds > 1:
        # Standard error of the difference of two independent means, relative to |faithful|.
        se = float(np.sqrt(fa["final_return_std"] ** 2 / seeds + fs["final_return_std"] ** 2
                           / seeds) / abs(fa["final_return_mean"]))
        paired_std = float(diffs.std(ddof=1))
    return {
        "runs": runs,
        "return_delta": delta,
        "return_delta_se": se,
        "return_diff_per_seed": diffs.tolist(),
        "return_diff_paired_std": paired_std,
        "time_ratio_faithful_over_fast": fa["run_s"] / fs["run_s"],
    }


def load_previous(path: Path) -> dict[str, Any] | None:
    """The existing report at ``path`` (``None`` when there is none or it does not parse)."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def sampler_speedup(out: Path) -> tuple[float | None, str | None]:
    """``sampler_speedup_vs_numpy_24`` from the sampling benchmark's report in ``out``."""
    rep = load_previous(out / "marl_sampling.json")
    if rep is None:
        return None, None
    summ = rep.get("summary", {})
    src = (f"marl_sampling.json ({summ.get('device')}, "
           f"{rep.get('system', {}).get('time_utc')})")
    return summ.get("sampler_speedup_vs_numpy_24"), src


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default="benchmarks/results")
    ap.add_argument("--skip-timing", action="store_true")
    ap.add_argument("--skip-quality", action="store_true")
    ap.add_argument("--skip-fast-mode", action="store_true")
    ap.add_argument("--seeds", type=int, default=None,
                    help="seeds of part 3 (default CPU 6, --quick 2, GPU 8)")
    ap.add_argument("--reuse", action="store_true",
                    help="keep skipped parts from the existing marl_e2e.json in --out")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    backend = jax.default_backend()
    gpu = backend != "cpu"
    timer: dict[str, float] = {}
    previous = load_previous(out / "marl_e2e.json") if args.reuse else None
    here = {"device": report.device_label(), "time_utc": report.system_info()["time_utc"],
            "load_average_1min_start": os.getloadavg()[0], "reused": False}
    provenance: dict[str, dict] = {}

    def reused(part: str, empty: Any) -> Any:
        """The part from the previous report (``empty`` without one)."""
        if previous is None or not previous.get("results", {}).get(part):
            return empty
        old = previous["results"].get("provenance", {}).get(part) or {
            "device": previous.get("summary", {}).get("device"),
            "time_utc": previous.get("system", {}).get("time_utc"),
        }
        provenance[part] = {**old, "reused": True}
        for k, v in previous.get("timing_s", {}).items():
            if k.startswith(part):
                timer[k] = v
        return previous["results"][part]

    timing_rows: list[dict] = []
    if not args.skip_timing:
        t0 = time.perf_counter()
        sizes = [3, 6, 12, 24] if gpu else [3]
        if args.quick:
            sizes = sizes[:2]
        measure = 2000 if gpu else (200 if args.quick else 1000)
        for env in ("spread", "tag"):
            for n in sizes:
                row = time_maddpg(env, n, measure)
                print(f"[time] {env} N={n}: ~{row['estimated_60k_s']:.0f} s for 60k episodes "
                      f"(paper {row['paper_60k_s']})", flush=True)
                timing_rows.append(row)
        timer["timing_runs"] = time.perf_counter() - t0
        provenance["timing"] = here
    else:
        timing_rows = reused("timing", [])

    quality: dict = {}
    if not args.skip_quality:
        t0 = time.perf_counter()
        episodes = 300 if args.quick else 400
        samplers = ["uniform", "neighbor", "info_prioritized"]
        cfg0 = MARLConfig(env="spread", num_agents=3, num_envs=32)
        key = jax.random.PRNGKey(123)
        rand_gumbel = float(random_policy_return(cfg0, key, 50)[0])
        rand_onehot = float(random_policy_return(cfg0, key, 50, one_hot=True)[0])
        rand = max(rand_gumbel, rand_onehot)
        runs = {}
        for s in samplers:
            runs[s] = quality_run(s, episodes, seed=0)
            print(f"[quality] {s}: final return {runs[s]['final_return']:.2f} "
                  f"(random {rand:.2f})", flush=True)
        base = runs["uniform"]["final_return"]
        quality = {
            "random_return_gumbel": rand_gumbel,
            "random_return_one_hot": rand_onehot,
            "random_return": rand,
            "runs": runs,
            "improvement_vs_random": {s: (r["final_return"] - rand) / abs(rand)
                                      for s, r in runs.items()},
            "relative_gap_vs_uniform": {s: abs(r["final_return"] - base) / abs(base)
                                        for s, r in runs.items()},
        }
        timer["quality_runs"] = time.perf_counter() - t0
        provenance["quality"] = here
    else:
        quality = reused("quality", {})

    fast_mode: dict = {}
    if not args.skip_fast_mode:
        t0 = time.perf_counter()
        seeds = args.seeds or (8 if gpu else (2 if args.quick else 6))
        fast_mode = fast_mode_study(150 if args.quick else 400, seeds)
        timer["fast_mode_runs"] = time.perf_counter() - t0
        provenance["fast_mode"] = here
    else:
        fast_mode = reused("fast_mode", {})

    speedup, speedup_src = sampler_speedup(out)
    summary = {
        "device": report.device_label(),
        "sampler_speedup_vs_numpy_24": speedup,
        "sampler_speedup_source": speedup_src,
        "maddpg_spread3_improvement_vs_random": (
            quality["improvement_vs_random"]["uniform"] if quality else None),
        "fast_mode_return_delta": fast_mode["return_delta"] if fast_mode else None,
        "fast_mode_return_delta_se": fast_mode["return_delta_se"] if fast_mode else None,
        "fast_mode_time_ratio_faithful_over_fast": (
            fast_mode["time_ratio_faithful_over_fast"] if fast_mode else None),
        "neighbor_gap_vs_uniform": (
            quality["relative_gap_vs_uniform"]["neighbor"] if quality else None),
        "info_prioritized_gap_vs_uniform": (
            quality["relative_gap_vs_uniform"]["info_prioritized"] if quality else None),
        "estimated_60k_s": {f"{r['env']}{r['agents']}": r["estimated_60k_s"]
                            for r in timing_rows},
        "gpu_note": None if gpu else (
            "no GPU in this run: GPU timings (3-24 agents) are null; rerun this script on a "
            "GPU host, sizes are chosen from jax.default_backend()"),
    }
    if not gpu:
        summary["gpu_estimated_60k_s"] = None
    config = {"quick": args.quick, "backend": backend, "reuse": args.reuse}
    results = {"timing": timing_rows, "quality": quality, "fast_mode": fast_mode,
               "provenance": provenance}
    rep = report.make_report(config, results, timer, summary)
    report.write_json(out / "marl_e2e.json", rep)
    md = markdown(timing_rows, quality, fast_mode, summary, provenance)
    report.atomic_save(out / "marl_e2e.md", lambda tmp: Path(tmp).write_text(md))
    if quality or fast_mode:
        plot_curves(quality, fast_mode, out / "marl_e2e.png")
    print(f"wrote {out / 'marl_e2e.json'}")


def markdown(timing_rows: list[dict], quality: dict, fast_mode: dict, summary: dict,
             provenance: dict) -> str:
    """Tables for docs/marl.md (each part names the device and date it was measured on)."""

    def measured(part: str) -> str:
        p = provenance.get(part, {})
        load = p.get("load_average_1min_start")
        return (f"Measured on {p.get('device', '?')}, {p.get('time_utc', '?')}"
                + ("" if load is None else f", 1-min load average {load:.1f} at start")
                + (" (kept from an earlier run with --reuse)" if p.get("reused") else "") + ".")

    lines = [f"Device of this file: {summary['device']}", ""]
    if timing_rows:
        lines += [
            measured("timing"),
            "",
            "| env | agents | warm-up (1,024 eps) s | measured eps | measured s | "
            "est. 60k eps s (extrapolated) | paper 60k s (RTX 3090) |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in timing_rows:
            lines.append(
                f"| {r['env']} | {r['agents']} | {r['warmup_s']:.1f} | {r['measured_episodes']} "
                f"| {r['measured_s']:.1f} | {r['estimated_60k_s']:.0f} | {r['paper_60k_s']} |")
        lines.append("")
    if quality:
        lines += [
            measured("quality"),
            "",
            f"Random policy return: {quality['random_return']:.2f} (Gumbel zero-logits "
            f"{quality['random_return_gumbel']:.2f}, one-hot "
            f"{quality['random_return_one_hot']:.2f})",
            "",
            "| sampler | update rounds | final return | improvement vs random | gap vs uniform |",
            "|---|---|---|---|---|",
        ]
        for s, r in quality["runs"].items():
            lines.append(
                f"| {s} | {r['update_rounds']} | {r['final_return']:.2f} | "
                f"{quality['improvement_vs_random'][s] * 100:.1f} % | "
                f"{quality['relative_gap_vs_uniform'][s] * 100:.1f} % |")
        lines.append("")
    if fast_mode:
        runs = fast_mode["runs"]
        n_seeds = len(runs["faithful"]["seeds"])
        lines += [
            measured("fast_mode"),
            "",
            f"Faithful vs fast sampling mode (uniform sampler, same setting as above, seeds "
            f"0-{n_seeds - 1} vmapped in one call; final return = mean over the last "
            f"{runs['fast']['final_window_episodes']} episodes; mean +- sample std over seeds; "
            "times for all seeds together):",
            "",
            "| mode | update rounds | final return | per seed | run s | compile s |",
            "|---|---|---|---|---|---|",
        ]
        for m, r in runs.items():
            std = "" if r["final_return_std"] is None else f" +- {r['final_return_std']:.2f}"
            per = ", ".join(f"{x:.1f}" for x in r["final_return_per_seed"])
            lines.append(f"| {m} | {r['update_rounds']} | {r['final_return_mean']:.2f}{std} | "
                         f"{per} | {r['run_s']:.1f} | {r['compile_s']:.1f} |")
        se = fast_mode["return_delta_se"]
        lines += [
            "",
            f"Fast minus faithful, relative to the faithful return: "
            f"{fast_mode['return_delta'] * 100:+.1f} %"
            + ("" if se is None else f" (standard error {se * 100:.1f} %)")
            + f"; faithful run time / fast run time: "
            f"{fast_mode['time_ratio_faithful_over_fast']:.2f}x.",
        ]
    if summary.get("gpu_note"):
        lines += ["", summary["gpu_note"]]
    return "\n".join(lines) + "\n"


def _smooth(c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Moving average over ``len(c) // 30`` episodes: ``(x, y)``."""
    k = max(1, len(c) // 30)
    sm = np.convolve(c, np.ones(k) / k, mode="valid")
    return np.arange(len(sm)) + k - 1, sm


def plot_curves(quality: dict, fast_mode: dict, path: Path) -> None:
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
        for m, r in fast_mode["runs"].items():
            x, mean = _smooth(np.asarray(r["curve_mean"]))
            _, std = _smooth(np.asarray(r["curve_std"]))
            ax.plot(x, mean, label=f"{m} (mean of {len(r['seeds'])} seeds)")
            ax.fill_between(x, mean - std, mean + std, alpha=0.2)
        if quality:
            ax.axhline(quality["random_return"], color="k", ls="--", label="random policy")
        ax.set_title("faithful vs fast sampling mode (uniform; band: +- std over seeds)")
    for ax in fig.axes:
        ax.set_xlabel("episode (per env; 32 envs)")
        ax.set_ylabel("mean per-agent episode return")
        ax.legend(fontsize=8)
    fig.suptitle("MADDPG, cooperative navigation, 3 agents", fontsize=10)
    fig.tight_layout()
    report.atomic_save(path, lambda tmp: fig.savefig(tmp, dpi=120))
    plt.close(fig)


if __name__ == "__main__":
    main()
