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

    python benchmarks/marl_e2e.py            # full
    python benchmarks/marl_e2e.py --quick    # a few minutes on 2 CPU cores
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import jax
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


def quality_run(sampler: str, episodes: int, seed: int) -> dict:
    """Short MADDPG run on spread-3; returns the learning curve and the final return."""
    cfg = MARLConfig(
        env="spread", num_agents=3, num_envs=32, num_episodes=episodes, update_every=1,
        sampling_mode="fast", sampler=sampler, buffer_capacity=100_000, batch_size=256,
        learning_starts=6400, num_refs=16,
    )
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default="benchmarks/results")
    ap.add_argument("--skip-timing", action="store_true")
    ap.add_argument("--skip-quality", action="store_true")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    backend = jax.default_backend()
    gpu = backend != "cpu"
    timer: dict[str, float] = {}

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

    summary = {
        "device": report.device_label(),
        "maddpg_spread3_improvement_vs_random": (
            quality["improvement_vs_random"]["uniform"] if quality else None),
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
    config = {"quick": args.quick, "backend": backend}
    rep = report.make_report(config, {"timing": timing_rows, "quality": quality}, timer, summary)
    report.write_json(out / "marl_e2e.json", rep)
    (out / "marl_e2e.md").write_text(markdown(timing_rows, quality, summary))
    if quality:
        plot_curves(quality, out / "marl_e2e.png")
    print(f"wrote {out / 'marl_e2e.json'}")


def markdown(timing_rows: list[dict], quality: dict, summary: dict) -> str:
    """Tables for docs/marl.md."""
    lines = [f"Device: {summary['device']}", ""]
    if timing_rows:
        lines += [
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
    if summary.get("gpu_note"):
        lines += ["", summary["gpu_note"]]
    return "\n".join(lines) + "\n"


def plot_curves(quality: dict, path: Path) -> None:
    """Learning curves (moving average over 10 episodes) vs the random policy."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4))
    for s, r in quality["runs"].items():
        c = np.asarray(r["curve"])
        k = max(1, len(c) // 30)
        sm = np.convolve(c, np.ones(k) / k, mode="valid")
        ax.plot(np.arange(len(sm)) + k - 1, sm, label=s)
    ax.axhline(quality["random_return"], color="k", ls="--", label="random policy")
    ax.set_xlabel("episode (per env; 32 envs)")
    ax.set_ylabel("mean per-agent episode return")
    ax.set_title("MADDPG, cooperative navigation, 3 agents")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main()
