"""``jaxrl-pim marl``: train MADDPG / MATD3 / MASAC on a particle world from the command line.

Example::

    jaxrl-pim marl --env spread --agents 3 --algo maddpg --episodes 2000 --num-envs 8 \
        --json run.json --checkpoint run.npz
    jaxrl-pim marl --env spread --agents 3 --algo maddpg --episodes 4000 --num-envs 8 \
        --resume run.npz --checkpoint run.npz        # continues to 4,000 episodes

``--episodes`` is the run's total; with ``--resume`` training continues from the checkpoint's
episode count up to it.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import jax
import numpy as np

from jaxrl_pim import report
from jaxrl_pim.marl import checkpoint
from jaxrl_pim.marl.maddpg import (
    ALGOS,
    ENVS,
    LAYOUTS,
    SAMPLERS,
    SAMPLING_MODES,
    MARLConfig,
    make_init,
    make_train_from,
)
from jaxrl_pim.progress import RichProgress


def register(subparsers: Any) -> None:
    """Add the ``marl`` sub-command."""
    p = subparsers.add_parser(
        "marl",
        help="train MADDPG / MATD3 / MASAC on cooperative navigation or predator-prey",
        description="Train multi-agent actor-critics on the JAX particle worlds (jitted).",
    )
    p.add_argument("--env", choices=ENVS, default="spread")
    p.add_argument("--agents", type=int, default=3,
                   help="spread: agents (= landmarks); tag: preset (3, 6, 12, 24, 48 predators)")
    p.add_argument("--algo", choices=ALGOS, default="maddpg")
    p.add_argument("--sampler", choices=SAMPLERS, default="uniform")
    p.add_argument("--layout", choices=LAYOUTS, default="per_agent")
    p.add_argument("--sampling-mode", choices=SAMPLING_MODES, default="faithful")
    p.add_argument("--episodes", type=int, default=60_000, help="total episodes per env")
    p.add_argument("--num-envs", type=int, default=1, help="envs stepped in parallel")
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--capacity", type=int, default=1_000_000, help="replay rows per team")
    p.add_argument("--learning-starts", type=int, default=25_600)
    p.add_argument("--update-every", type=int, default=100)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", metavar="PATH", help="write the run report here")
    p.add_argument("--checkpoint", metavar="PATH", help="save the final train state here")
    p.add_argument("--resume", metavar="PATH", help="continue from this checkpoint")
    p.add_argument("--progress", action="store_true", help="show a progress bar")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Train, print a one-line summary, optionally write the report and checkpoint."""
    config = MARLConfig(
        algo=args.algo, env=args.env, num_agents=args.agents, num_envs=args.num_envs,
        num_episodes=args.episodes, sampling_mode=args.sampling_mode, sampler=args.sampler,
        layout=args.layout, buffer_capacity=args.capacity, batch_size=args.batch_size,
        learning_starts=args.learning_starts, update_every=args.update_every,
    )
    timing: dict[str, float] = {}
    t0 = time.perf_counter()
    if args.resume:
        state = checkpoint.load(args.resume, config)
    else:
        state = jax.jit(make_init(config))(jax.random.PRNGKey(args.seed))
    start = int(state.episode)
    remaining = config.num_episodes - start
    if remaining < 0:
        raise ValueError(
            f"--episodes ({config.num_episodes}) is below the checkpoint's episode count "
            f"({start}); pass a larger total"
        )
    timing["init"] = time.perf_counter() - t0

    with RichProgress(f"marl {args.algo} {args.env}", enabled=bool(args.progress)) as cb:
        train_from = make_train_from(config, remaining,
                                     callback=cb if (args.progress and remaining) else None)
        t0 = time.perf_counter()
        compiled = jax.jit(train_from).lower(state).compile()
        timing["compile"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        state, metrics = compiled(state)
        jax.block_until_ready(metrics)
        timing["train"] = time.perf_counter() - t0

    if args.checkpoint:
        t0 = time.perf_counter()
        checkpoint.save(args.checkpoint, state, config)
        timing["checkpoint"] = time.perf_counter() - t0

    returns = np.asarray(metrics["episode_return"])  # [remaining, teams]
    tail = max(1, remaining // 10)
    team_names = [t.name for t in _teams(config)]
    final = returns[-tail:].mean(axis=0) if remaining else np.full(len(team_names), np.nan)
    results = {
        "teams": team_names,
        "start_episode": start,
        "episodes_trained": remaining,
        "episodes_total": int(state.episode),
        "update_rounds": int(state.num_updates),
        "final_return": {n: float(v) for n, v in zip(team_names, final, strict=True)},
        "final_return_window": tail,
        "episode_return_every_1pct": returns[:: max(1, remaining // 100)].tolist(),
        "last_critic_loss": np.asarray(state.losses[:, 0]).tolist(),
        "last_actor_loss": np.asarray(state.losses[:, 1]).tolist(),
        "resumed_from": args.resume,
        "seed": args.seed,
    }
    if args.json:
        report.write_json(args.json, report.make_report(config, results, timing))
    summary = ", ".join(f"{n} {v:.2f}" for n, v in results["final_return"].items())
    print(
        f"marl {args.algo} {args.env} agents={args.agents}: episodes {start}->{int(state.episode)}"
        f", updates {results['update_rounds']}, mean return (last {tail} eps) {summary}; "
        f"train {timing['train']:.1f} s (compile {timing['compile']:.1f} s)"
    )
    return 0


def _teams(config: MARLConfig):
    from jaxrl_pim.marl.maddpg import make_env

    return make_env(config)[0].teams
