"""MADDPG on a JaxMARL environment: does it beat random play?

MADDPG (the library's trainer, unchanged) on JaxMARL's ``MPE_simple_spread_v3`` (3 agents,
3 landmarks, discrete actions, JaxMARL's rewards: ``0.5 * (-sum of landmark distances) +
0.5 * (-collisions)`` per agent) through the adapter ``envs.jaxmarl_adapter.from_jaxmarl``,
configured as ``jaxrl-pim marl --env jaxmarl:MPE_simple_spread_v3`` would be with the options
below. Several seeds train in ONE jitted call (``jax.vmap`` over ``PRNGKey(seed)``).

Each seed's final actors are then evaluated greedily (``softmax(logits)``, whose argmax the
discrete environment takes: the most likely action; no exploration noise) over
``eval_episodes`` episodes of 25 steps, and a uniform-random policy (Gumbel-softmax of zero
logits: uniformly random discrete actions) over the same episode starts
(``fold_in(PRNGKey(eval_seed), episode)``). The return is the episode's summed reward averaged
over the 3 agents (the trainer's ``episode_return``).

Summary: the greedy return's mean over seeds and its standard error (sample std over seeds
/ sqrt(seeds)), the random policy's mean and standard error (over episodes), the relative
improvement ``(R - R_rand) / |R_rand|`` and how many seeds beat random.

The run is sized for a shared 2-core CPU (a few minutes): 8 envs x 300 episodes per seed
(7,200 episodes, 180,000 env steps), 4 seeds, 200 evaluation episodes.

    python benchmarks/marl_jaxmarl.py [--publish]   # full (4 seeds, a few minutes)
    python benchmarks/marl_jaxmarl.py --quick       # 150 episodes per env
    python benchmarks/marl_jaxmarl.py --smoke       # test sizes (the numbers mean nothing)
"""

from __future__ import annotations

import dataclasses
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
from jaxrl_pim.marl import MARLConfig, evaluate, make_train

ENV = "jaxmarl:MPE_simple_spread_v3"


def sizes(mode: str) -> dict[str, Any]:
    """Seeds, training episodes per env and evaluation episodes of a mode."""
    if mode == "smoke":
        return {"seeds": 2, "episodes": 4, "eval_episodes": 4,
                "overrides": {"num_envs": 2, "buffer_capacity": 1_024, "batch_size": 32,
                              "learning_starts": 64, "update_every": 8}}
    return {"seeds": 4, "episodes": 150 if mode == "quick" else 300, "eval_episodes": 200,
            "overrides": {}}


def train_config(episodes: int, overrides: dict[str, Any]) -> MARLConfig:
    """The MADDPG run: 8 envs, 100k-row buffers, batch 256, an update round every 16
    vectorised steps (128 transitions) once 2,048 transitions are stored."""
    base = MARLConfig(algo="maddpg", env=ENV, num_envs=8, num_episodes=episodes,
                      buffer_capacity=100_000, batch_size=256, learning_starts=2_048,
                      update_every=16)
    return dataclasses.replace(base, **overrides)


def summarize(report_: dict[str, Any]) -> dict[str, Any]:
    """Headline numbers from the stored records (see the module docstring)."""
    res = report_["results"]
    greedy = np.asarray(res["greedy_return_per_seed"], np.float64)
    rand = np.asarray(res["random_return_per_episode"], np.float64)
    n = len(greedy)
    r_mean = float(rand.mean())
    g_mean = float(greedy.mean())
    return {
        "env": res["env"],
        "seeds": n,
        "episodes_per_env": report_["config"]["sizes"]["episodes"],
        "eval_episodes": len(rand),
        "maddpg_greedy_return_mean": g_mean,
        "maddpg_greedy_return_se": float(greedy.std(ddof=1) / np.sqrt(n)) if n > 1 else None,
        "random_return_mean": r_mean,
        "random_return_se": float(rand.std(ddof=1) / np.sqrt(len(rand))),
        "improvement_vs_random": (g_mean - r_mean) / abs(r_mean),
        "seeds_beating_random": int(np.sum(greedy > r_mean)),
        "train_s_all_seeds": res["train_s"],
    }


def render_markdown(report_: dict[str, Any]) -> str:
    """Per-seed table and the headline line (from the stored report)."""
    res, s = report_["results"], report_["summary"]
    lines = [
        f"MADDPG on `{s['env']}` ({s['seeds']} seeds vmapped in one call, "
        f"{s['episodes_per_env']} episodes x {res['config']['num_envs']} envs each); "
        f"evaluation: {s['eval_episodes']} episodes per seed, greedy actors vs a "
        "uniform-random policy on the same episode starts.",
        "",
        "| seed | training return (last 10 %) | greedy return | random return | "
        "greedy - random |",
        "|---:|---:|---:|---:|---:|",
    ]
    for i, seed in enumerate(res["seeds"]):
        g = res["greedy_return_per_seed"][i]
        lines.append(f"| {seed} | {res['final_train_return_per_seed'][i]:.2f} | {g:.2f} | "
                     f"{s['random_return_mean']:.2f} | {g - s['random_return_mean']:+.2f} |")
    se = s["maddpg_greedy_return_se"]
    lines += [
        "",
        f"Greedy MADDPG {s['maddpg_greedy_return_mean']:.2f}"
        + ("" if se is None else f" +- {se:.2f} (standard error over seeds)")
        + f" vs random {s['random_return_mean']:.2f} +- {s['random_return_se']:.2f} "
        f"(standard error over episodes): {s['improvement_vs_random'] * 100:+.1f} %; "
        f"{s['seeds_beating_random']} of {s['seeds']} seeds beat random.",
    ]
    return "\n".join(lines) + "\n"


def plot_curves(results: dict[str, Any], path: Path) -> None:
    """Learning curves per seed (moving average) against the random policy's return."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    curves = np.asarray(results["curves"])
    k = max(1, curves.shape[1] // 30)
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for seed, c in zip(results["seeds"], curves, strict=True):
        sm = np.convolve(c, np.ones(k) / k, mode="valid")
        ax.plot(np.arange(len(sm)) + k - 1, sm, label=f"seed {seed} (training)")
    rand = float(np.mean(results["random_return_per_episode"]))
    ax.axhline(rand, color="k", ls="--", label="random policy")
    ax.axhline(float(np.mean(results["greedy_return_per_seed"])), color="C3", ls=":",
               label="greedy evaluation (mean of seeds)")
    ax.set_xlabel("episode (per env)")
    ax.set_ylabel("mean per-agent episode return")
    ax.set_title(f"MADDPG on {results['env']}", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    report.atomic_save(path, lambda tmp: fig.savefig(tmp, dpi=120))
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__)
    args, run, mode = harness.start(ap, argv, __file__, cpu_workarounds=False)
    size = sizes(mode)
    out = harness.output_path(args, "marl_jaxmarl")
    cfg = train_config(size["episodes"], size["overrides"])
    seeds = list(range(size["seeds"]))
    timer: dict[str, float] = {}

    keys = jnp.stack([jax.random.PRNGKey(s) for s in seeds])
    t0 = time.perf_counter()
    compiled = jax.jit(jax.vmap(make_train(cfg))).lower(keys).compile()
    timer["compile"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    state, metrics = compiled(keys)
    returns = np.asarray(metrics["episode_return"])[:, :, 0]  # [seeds, episodes]
    timer["train"] = time.perf_counter() - t0
    tail = max(1, cfg.num_episodes // 10)
    print(f"[train] {len(seeds)} seeds x {cfg.num_episodes} episodes x {cfg.num_envs} envs: "
          f"{timer['train']:.1f} s (compile {timer['compile']:.1f} s)", flush=True)

    t0 = time.perf_counter()
    eval_key = jax.random.PRNGKey(1_000)
    greedy = []
    for i in range(len(seeds)):
        params = tuple(jax.tree.map(lambda x, i=i: x[i], t.actor) for t in state.teams)
        greedy.append(float(evaluate(cfg, params, eval_key, size["eval_episodes"])[:, 0]
                            .mean()))
    rand = evaluate(cfg, None, eval_key, size["eval_episodes"], policy="random")[:, 0]
    timer["evaluate"] = time.perf_counter() - t0
    print(f"[evaluate] greedy per seed {np.round(greedy, 2)}; random {rand.mean():.2f}",
          flush=True)

    results = {
        "env": ENV,
        "config": cfg,
        "seeds": seeds,
        "vmapped_over_seeds": True,
        "train_s": timer["train"],
        "update_rounds": int(np.asarray(state.num_updates).reshape(-1)[0]),
        "final_window_episodes": tail,
        "final_train_return_per_seed": returns[:, -tail:].mean(axis=1).tolist(),
        "greedy_return_per_seed": greedy,
        "random_return_per_episode": rand.tolist(),
        "eval_seed": 1_000,
        "curves": returns.tolist(),
    }
    config = {"mode": mode, "sizes": size}
    harness.write(out, run=run, config=config, results=results, timing_s=timer,
                  summarize=summarize, markdown=render_markdown)
    plot_curves(results, out.with_suffix(".png"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
