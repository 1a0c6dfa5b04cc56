"""``jaxrl-pim marl``: train MADDPG / MATD3 / MASAC on a particle world from the command line.

Example::

    jaxrl-pim marl --env spread --agents 3 --algo maddpg --episodes 2000 --num-envs 8 \
        --json run.json --checkpoint run.npz
    jaxrl-pim marl --env spread --agents 3 --algo maddpg --episodes 4000 --num-envs 8 \
        --resume run.npz --checkpoint run.npz        # continues to 4,000 episodes
    jaxrl-pim marl --env tag --predators 6 --prey 2 --episodes 500 --num-envs 16

``--episodes`` is the run's total; with ``--resume`` training continues from the checkpoint's
episode count up to it. Before training the command prints the plan (transitions, update
rounds, replay memory), a measured duration estimate for long runs, and a warning when no
update will run.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

import jax
import numpy as np

from jaxrl_pim import report
from jaxrl_pim.envs.mpe import TAG_PRESETS
from jaxrl_pim.marl import checkpoint, plan
from jaxrl_pim.marl.config import ALGOS, ENVS, LAYOUTS, SAMPLERS, SAMPLING_MODES, MARLConfig
from jaxrl_pim.marl.trainer import make_env, make_init, make_train_from
from jaxrl_pim.progress import RichProgress

_DEFAULTS = MARLConfig()


def _presets() -> str:
    return "; ".join(f"{k} = {a} predators + {g} prey + {o} obstacles"
                     for k, (a, g, o) in sorted(TAG_PRESETS.items()))


def register(subparsers: Any) -> None:
    """Add the ``marl`` sub-command."""
    d = _DEFAULTS
    p = subparsers.add_parser(
        "marl",
        help="train MADDPG / MATD3 / MASAC on cooperative navigation or predator-prey",
        description="Train multi-agent actor-critics on the JAX particle worlds (jitted). "
                    "Defaults are the original MADDPG schedule (60,000 episodes, 1e6-row "
                    "buffers); use fewer episodes, more --num-envs and a smaller --capacity "
                    "for a run of minutes.",
        epilog=f"Predator-prey presets (--env tag --agents K): {_presets()}. Any other "
               "composition: --predators A --prey G [--obstacles L].",
    )
    world = p.add_argument_group("world")
    world.add_argument("--env", choices=ENVS, default=d.env,
                       help="spread = cooperative navigation, tag = predator-prey "
                            "(default: %(default)s)")
    world.add_argument("--agents", type=int, default=None, metavar="N",
                       help="spread: agents (= landmarks); tag: a preset by its number of "
                            f"predators, {sorted(TAG_PRESETS)} (see below) (default: "
                            f"{d.num_agents})")
    world.add_argument("--predators", type=int, default=None, metavar="A",
                       help="tag: predators (with --prey; default: from the preset)")
    world.add_argument("--prey", type=int, default=None, metavar="G",
                       help="tag: prey (with --predators; default: from the preset)")
    world.add_argument("--obstacles", type=int, default=None, metavar="L",
                       help="tag: obstacles (default: max(2, prey))")
    algo = p.add_argument_group("algorithm and replay")
    algo.add_argument("--algo", choices=ALGOS, default=d.algo,
                      help="learner (default: %(default)s)")
    algo.add_argument("--sampler", choices=SAMPLERS, default=d.sampler,
                      help="mini-batch index sampler (default: %(default)s)")
    algo.add_argument("--layout", choices=LAYOUTS, default=d.layout,
                      help="replay memory layout (default: %(default)s)")
    algo.add_argument("--sampling-mode", choices=SAMPLING_MODES, default=d.sampling_mode,
                      help="faithful = own indices per agent, fast = one shared index set "
                           "(default: %(default)s)")
    sched = p.add_argument_group("schedule")
    sched.add_argument("--episodes", type=int, default=d.num_episodes,
                       help="total episodes per env, 25 steps each (default: %(default)s)")
    sched.add_argument("--num-envs", type=int, default=d.num_envs,
                       help="envs stepped in parallel (default: %(default)s)")
    sched.add_argument("--batch-size", type=int, default=d.batch_size,
                       help="transitions per agent per update round (default: %(default)s)")
    sched.add_argument("--capacity", type=int, default=d.buffer_capacity,
                       help="replay rows (time steps) per team buffer (default: %(default)s)")
    sched.add_argument("--learning-starts", type=int, default=d.learning_starts,
                       help="stored transitions before the first update (default: "
                            "%(default)s)")
    sched.add_argument("--update-every", type=int, default=d.update_every,
                       help="env steps (of all envs together) between update rounds "
                            "(default: %(default)s)")
    sched.add_argument("--seed", type=int, default=0,
                       help="PRNG seed of the run (default: %(default)s)")
    out = p.add_argument_group("output")
    out.add_argument("--json", metavar="PATH", default=None,
                     help="write the run report here (default: none)")
    out.add_argument("--checkpoint", metavar="PATH", default=None,
                     help="save the final train state here (default: none)")
    out.add_argument("--resume", metavar="PATH", default=None,
                     help="continue from this checkpoint (default: start fresh)")
    out.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                     help="progress bar (default: on when stdout is a terminal)")
    out.add_argument("--estimate", action=argparse.BooleanOptionalAction, default=None,
                     help="time one env step and one update round first and print the "
                          "expected duration (default: on for runs of at least "
                          f"{plan.LONG_RUN_TRANSITIONS:,} transitions)")
    p.set_defaults(func=run)


def config_from_args(args: argparse.Namespace) -> MARLConfig:
    """The run's config from the parsed options (the world options resolved)."""
    if args.env == "spread":
        if args.predators is not None or args.prey is not None or args.obstacles is not None:
            raise ValueError("--predators/--prey/--obstacles apply to --env tag; use --agents "
                             "for spread")
        agents, prey, obstacles = args.agents, None, None
    elif args.predators is not None or args.prey is not None:
        if args.agents is not None:
            raise ValueError("give --agents (a preset) or --predators/--prey, not both")
        if args.predators is None or args.prey is None:
            raise ValueError("--predators and --prey go together")
        agents, prey, obstacles = args.predators, args.prey, args.obstacles
    else:
        if args.obstacles is not None:
            raise ValueError("--obstacles needs --predators and --prey")
        agents, prey, obstacles = args.agents, None, None
    return MARLConfig(
        algo=args.algo, env=args.env,
        num_agents=_DEFAULTS.num_agents if agents is None else agents, num_prey=prey,
        num_obstacles=obstacles, num_envs=args.num_envs, num_episodes=args.episodes,
        sampling_mode=args.sampling_mode, sampler=args.sampler, layout=args.layout,
        buffer_capacity=args.capacity, batch_size=args.batch_size,
        learning_starts=args.learning_starts, update_every=args.update_every,
    )


def progress_enabled(flag: bool | None, stream: Any) -> bool:
    """``--progress`` / ``--no-progress`` when given, otherwise whether ``stream`` (stdout)
    is a terminal."""
    return bool(stream.isatty()) if flag is None else bool(flag)


def run(args: argparse.Namespace) -> int:
    """Plan, train, print a one-line summary, optionally write the report and checkpoint."""
    config = config_from_args(args)
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

    the_plan = plan.plan_run(config, start)
    estimate_on = args.estimate
    if estimate_on is None:
        estimate_on = the_plan.transitions >= plan.LONG_RUN_TRANSITIONS
    estimate = None
    if estimate_on and remaining:
        estimate = plan.estimate_seconds(config, the_plan, jax.random.PRNGKey(args.seed))
        timing["estimate"] = estimate["compile_s"]
    lines = plan.describe(config, the_plan, estimate)
    for line in lines:
        print(line, file=sys.stderr if line.startswith("warning") else sys.stdout, flush=True)

    progress = progress_enabled(args.progress, sys.stdout)
    name = f"marl {args.algo} {args.env}"
    with RichProgress(name, enabled=progress) as cb:
        train_from = make_train_from(config, remaining,
                                     callback=cb if (progress and remaining) else None)
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
    team_names = [t.name for t in make_env(config)[0].teams]
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
        "plan": the_plan._asdict(),
        "duration_estimate": estimate,
    }
    if args.json:
        report.write_json(args.json, report.make_report(config, results, timing))
    summary = ", ".join(f"{n} {v:.2f}" for n, v in results["final_return"].items())
    world = (f"agents={config.num_agents}" if config.env == "spread" else
             "predators={} prey={} obstacles={}".format(*config.tag_sizes))
    print(
        f"{name} {world}: episodes {start}->{int(state.episode)}"
        f", updates {results['update_rounds']}, mean return (last {tail} eps) {summary}; "
        f"train {timing['train']:.1f} s (compile {timing['compile']:.1f} s)"
    )
    return 0
