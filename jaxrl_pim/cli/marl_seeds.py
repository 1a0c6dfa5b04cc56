"""``jaxrl-pim marl --seeds S``: S seeds of one run in one jitted, vmapped program.

The seed axis is split over the local devices (:mod:`jaxrl_pim.marl.seeds`); seed ``i`` uses
``--seed`` + ``i``. Checkpoints (``--checkpoint``) hold every seed and ``--resume`` continues
them all. The report gives every seed's final return (mean of the last 10 % of episodes) and
greedy-evaluation return (``--eval-episodes``), their mean over seeds, standard error and
95 % interval (Student's t); ``--plot`` draws the learning curves with the seed band.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

import jax

from jaxrl_pim import report
from jaxrl_pim.marl import plan, seeds
from jaxrl_pim.marl.config import MARLConfig


def _stats_line(name: str, stats: dict[str, Any], teams: list[str]) -> str:
    return f"{name} " + ", ".join(
        f"{t} {m:.2f} +- {se:.2f} (95 % CI {lo:.2f} .. {hi:.2f})"
        for t, m, se, lo, hi in zip(teams, stats["mean"], stats["standard_error"],
                                    stats["ci95_low"], stats["ci95_high"], strict=True))


def run_seeds(args: argparse.Namespace, config: MARLConfig, memory: dict[str, Any],
              main: bool = True) -> int:
    """Train ``args.seeds`` seeds, print the plan and a summary over seeds, write the report
    (``--json``) and the learning-curve plot (``--plot``). In a run of several processes
    every process trains its devices' seeds and only the ``main`` one (process 0) prints and
    writes."""
    out = sys.stdout if main else open(os.devnull, "w")  # noqa: SIM115 (closed below)
    try:
        return _run_seeds(args, config, memory, main, out)
    finally:
        if not main:
            out.close()


def _run_seeds(args: argparse.Namespace, config: MARLConfig, memory: dict[str, Any],
               main: bool, out: Any) -> int:
    """Train the seeds (plan printed first), then report and print the summary."""
    from jaxrl_pim.checkpoint import Checkpoints
    from jaxrl_pim.runner import default_every

    mesh = seeds.seed_mesh(args.seeds)
    checkpoints = None
    if args.checkpoint is not None:
        checkpoints = Checkpoints(args.checkpoint, keep=3,
                                  fingerprint=seeds.fingerprint(config, args.seed, args.seeds))
    try:
        every = None
        if checkpoints is not None:
            every = args.checkpoint_every or default_every(config.num_episodes)
        the_plan = plan.plan_run(config)
        _say_plan(args, config, the_plan, mesh, memory, main, out)
        result = seeds.run_seeds(config, args.seed, args.seeds, checkpoints, every=every,
                                 resume=args.resume, mesh=mesh, memory=memory)
    finally:
        if checkpoints is not None:
            checkpoints.close()
    timing = dict(result.timing_s)
    results = _results(args, config, result, every, the_plan, memory, timing)
    if args.json and main:
        report.write_json(args.json, report.make_report(config, results, timing))
    if args.plot and main:
        seeds.plot_curves(result.curve, results["teams"], args.plot,
                          title=f"{config.algo} {config.env}, {args.seeds} seeds")
    _print_summary(args, config, result, results, timing, out)
    return 0


def _say_plan(args: argparse.Namespace, config: MARLConfig, the_plan: Any, mesh: Any,
              memory: dict[str, Any], main: bool, out: Any) -> None:
    """Print the run's plan: the seeds, their devices and memory, the schedule."""
    lines = plan.describe(config, the_plan)
    lines.insert(1, f"seeds: {args.seeds} ({args.seed}..{args.seed + args.seeds - 1}) in one "
                    f"vmapped program over {mesh.devices.size} device(s)"
                    + (f" of {jax.process_count()} processes" if jax.process_count() > 1
                       else "") + "; train state "
                    f"{plan.human_bytes(memory['seed_bytes'])} per seed")
    if memory["capacity_auto"]:
        lines.append(plan.auto_line(memory))
    for line in lines:
        print(line, file=sys.stderr if line.startswith("warning") and main else out,
              flush=True)


def _results(args: argparse.Namespace, config: MARLConfig, result: Any, every: int | None,
             the_plan: Any, memory: dict[str, Any], timing: dict[str, float],
             ) -> dict[str, Any]:
    """The report's results: every seed's final return (mean of the last tenth of the
    episodes) and greedy return (``--eval-episodes``; its seconds go into ``timing``), their
    statistics over seeds, the mean learning curve at every 1 %, checkpoints, plan."""
    returns = result.curve  # episode_return [S, episodes, teams]
    total = returns.shape[1]
    tail = max(1, total // 10)
    final = returns[:, -tail:].mean(axis=1)  # [S, teams]
    evaluation = _greedy_returns(args, config, result, timing)
    return {
        "teams": [t.name for t in config.teams],
        "seeds": list(range(args.seed, args.seed + args.seeds)),
        "devices": result.devices,
        "start_episode": result.start,
        "episodes_total": total,
        "update_rounds": seeds._to_host(result.state.num_updates).tolist(),
        "final_return_window": tail,
        "final_return_per_seed": final.tolist(),
        "final_return": seeds.seed_stats(final),
        "eval_episodes": args.eval_episodes,
        "greedy_return_per_seed": None if evaluation is None else evaluation.tolist(),
        "greedy_return": None if evaluation is None else seeds.seed_stats(evaluation),
        "episode_return_mean_every_1pct": returns.mean(axis=0)[:: max(1, total // 100)].tolist(),
        "checkpoint_dir": args.checkpoint,
        "checkpoint_every": every,
        "checkpoints_written": result.checkpoints_written,
        "resumed_from_episode": result.start if args.resume else None,
        "plan": the_plan._asdict(),
        "memory": memory,
        "processes": jax.process_count(),
    }


def _greedy_returns(args: argparse.Namespace, config: MARLConfig, result: Any,
                    timing: dict[str, float]) -> Any:
    """Every seed's mean greedy return over ``--eval-episodes`` episodes (``[S, teams]``;
    None for 0), its seconds in ``timing["evaluate"]``."""
    import time

    if not args.eval_episodes:
        return None
    t0 = time.perf_counter()
    actors = tuple(t.actor for t in result.state.teams)
    evaluation = seeds.evaluate_seeds(config, actors, jax.random.PRNGKey(args.seed),
                                      args.eval_episodes).mean(axis=1)  # [S, teams]
    timing["evaluate"] = time.perf_counter() - t0
    return evaluation


def _print_summary(args: argparse.Namespace, config: MARLConfig, result: Any,
                   results: dict[str, Any], timing: dict[str, float], out: Any) -> None:
    """The run's summary lines: episodes and seconds, final and greedy returns over seeds."""
    print(f"marl {config.algo} {config.env}, {args.seeds} seeds on {result.devices} device(s): "
          f"episodes {result.start}->{results['episodes_total']}; train "
          f"{timing['train']:.1f} s (compile {timing['compile']:.1f} s)", file=out)
    print(_stats_line(f"final return (last {results['final_return_window']} eps, mean over "
                      "seeds +- standard error):", results["final_return"], results["teams"]),
          file=out)
    if results["greedy_return"] is not None:
        print(_stats_line(f"greedy return ({args.eval_episodes} eps per seed):",
                          results["greedy_return"], results["teams"]), file=out)


def evaluate_group(args: argparse.Namespace, pol: Any, key: jax.Array) -> int:
    """``jaxrl-pim marl evaluate`` of a group's checkpoint: every seed's greedy policies over
    ``--episodes`` episodes (the same starting worlds for every seed), the mean over seeds with
    its standard error and 95 % interval; ``--render`` draws seed 0's episode."""
    if args.policy != "greedy":
        raise ValueError(f"{str(pol.checkpoint)!r} holds {pol.num_seeds} seeds: they are "
                         f"evaluated with --policy greedy, not {args.policy}")
    returns = seeds.evaluate_seeds(pol.config, pol.seed_params, key, args.episodes)
    per_seed = returns.mean(axis=1)  # [S, teams]
    stats = seeds.seed_stats(per_seed)
    names = [t.name for t in pol.teams]
    print(f"marl evaluate {pol.config.algo} {pol.config.env} (checkpoint after "
          f"{pol.episodes_done:,} episodes): {pol.num_seeds} seeds, greedy policy, "
          f"{args.episodes} episodes each")
    print(_stats_line("mean return per team over seeds (+- standard error):", stats, names))
    if args.json:
        results = {"checkpoint": str(pol.checkpoint), "episodes_done": pol.episodes_done,
                   "policy": "greedy", "seed": args.seed, "teams": names,
                   "num_seeds": pol.num_seeds, "mean_return_per_seed": per_seed.tolist(),
                   "mean_return": stats, "returns": returns.tolist()}
        report.write_json(args.json, report.make_report(pol.config, results, {}))
    if args.render is not None:
        from jaxrl_pim.marl.policies import rollout_positions
        from jaxrl_pim.marl.render import render_gif

        ep = rollout_positions(pol.config, pol.params, jax.random.fold_in(key, 0))
        ret = ", ".join(f"{t} {r:.1f}" for t, r in zip(names, ep["returns"], strict=True))
        render_gif([ep], args.render, titles=[f"{pol.config.env} seed 0\ngreedy: {ret}"])
        print(f"wrote {args.render} (one episode of seed 0, {pol.config.episode_length} "
              "steps)")
    return 0
