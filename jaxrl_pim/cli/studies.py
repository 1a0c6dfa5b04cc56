"""``jaxrl-pim ptq`` and ``jaxrl-pim qat``: the quantization studies from the command line.

Examples::

    jaxrl-pim ptq --tasks ppo-cartpole ddpg-pendulum --seeds 3 --bits 16 8 6 4 2 \\
        --json ptq.json
    jaxrl-pim ptq --tasks dqn-cartpole --gap-ablation --json gap.json
    jaxrl-pim qat --tasks ddpg-pendulum --bits 4 3 --seeds 3 --json qat.json

Both print Markdown tables; ``--json`` writes a report (system and provenance, config,
results, timing_s, summary) whose ``results`` hold one entry per study part (``ptq``,
``gap``, ``qat``), as ``benchmarks/quant_ptq.py`` writes them.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from jaxrl_pim.choices import STUDY_TASKS
from jaxrl_pim.cli._common import add_command, add_json_argument, check_outputs, flag_names
from jaxrl_pim.studies.config import SCHEMES, PTQConfig, QATStudyConfig  # no jax

#: Study config fields -> the flags that set them (errors name what the user typed).
FLAGS = {"num_seeds": "--seeds", "eval_episodes": "--episodes",
         "timesteps_scale": "--timesteps-scale", "delay_fraction": "--delay",
         "include_biases": "--no-biases", "per_channel": "--per-channel", "bits": "--bits",
         "seed": "--seed"}


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _study(subparsers: argparse._SubParsersAction, name: str, description: str,
           defaults: Any, bits_help: str) -> argparse.ArgumentParser:
    """Add the study command ``name`` (``ptq`` or ``qat``) with the options both take;
    ``defaults`` is the study's default config, ``bits_help`` what its ``--bits`` mean."""
    p = add_command(subparsers, name, main, description=description)
    names = STUDY_TASKS
    p.add_argument("--tasks", nargs="+", choices=names, default=list(defaults.tasks),
                   metavar="TASK", help="study tasks (registry names): " + ", ".join(names))
    p.add_argument("--seeds", type=int, default=defaults.num_seeds,
                   help="policies trained per task and setting, vmapped (count, 1-1024)")
    p.add_argument("--episodes", type=int, default=defaults.eval_episodes,
                   help="greedy evaluation episodes per seed and format (count)")
    p.add_argument("--timesteps-scale", type=float, default=defaults.timesteps_scale,
                   help="multiplier on every task's training length in environment steps "
                   "(e.g. 0.1 for a quick look)")
    p.add_argument("--seed", type=int, default=defaults.seed,
                   help="root PRNG seed; each task's seed is derived from it and the task's "
                   "name, so a task trains the same policies in ptq, qat and --gap-ablation")
    add_json_argument(p, "write a JSON report to this file (default: none, print only)")
    p.add_argument("--bits", type=int, nargs="+", default=list(defaults.bits),
                   help=bits_help)
    return p


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``ptq`` and ``qat`` sub-commands (their defaults and choices read without
    jax: :mod:`jaxrl_pim.studies.config`)."""
    ptq_defaults, qat_defaults = PTQConfig(), QATStudyConfig()
    p = _study(
        subparsers, "ptq",
        "Train fp32 policies with the jitted learners, evaluate fake-quantized copies (fp16, "
        "int8, --bits sweep) from the same initial states and report return, KL and action "
        "agreement vs fp32. --gap-ablation adds plain-vs-advantage-learning DQN.",
        ptq_defaults, "bit widths of the sweep (bits, 2-16; paper scheme: 16 = float16 round "
        "trip)")
    p.add_argument("--scheme", choices=SCHEMES, default=ptq_defaults.scheme,
                   help="integer quantizer of int8 and the sweep")
    p.add_argument("--per-channel", action="store_true",
                   help="one scale per output channel (default: off, one scale per tensor)")
    p.add_argument("--no-biases", action="store_true",
                   help="keep biases (and other 1-D leaves) in fp32 (default: off, "
                   "quantize them too, as the paper does)")
    p.add_argument("--gap-ablation", action="store_true",
                   help="also run the action-gap ablation on the DQN tasks among --tasks "
                   "(trains each twice: plain and advantage-learning targets) (default: off)")

    q = _study(
        subparsers, "qat",
        "Train with fake quantization (straight-through gradient) after a delay and compare "
        "with post-training quantization of fp32 policies at the same bit widths (paper "
        "quantizer).", qat_defaults, "bit widths to train at (bits, 2-16)")
    q.add_argument("--delay", type=float, default=qat_defaults.delay_fraction,
                   help="fraction of training (0 <= f < 1) before fake quantization "
                   "switches on")


def _write(path: str, config: Any, results: dict[str, Any], timing: dict[str, Any],
           summarize: Any) -> None:
    from jaxrl_pim.provenance import RunRecord
    from jaxrl_pim.results_file import write_results

    write_results(path, run=RunRecord(), config=config, results=results, timing_s=timing,
                  summarize=summarize)
    _log(f"wrote {path}")


def main(args: argparse.Namespace) -> int:
    """Run ``jaxrl-pim ptq`` or ``jaxrl-pim qat`` (``args.command``) with the parsed options;
    returns the exit status."""
    return _qat(args) if args.command == "qat" else _ptq(args)


def _ptq(args: argparse.Namespace) -> int:
    check_outputs(args, files={"--json": "json"})  # before any work
    with flag_names(FLAGS):  # the config's checks, before jax and the learners are imported
        config = PTQConfig(
            tasks=tuple(args.tasks), num_seeds=args.seeds, eval_episodes=args.episodes,
            bits=tuple(args.bits), scheme=args.scheme, per_channel=args.per_channel,
            include_biases=not args.no_biases, timesteps_scale=args.timesteps_scale,
            seed=args.seed,
        )
    from jaxrl_pim.studies import report
    from jaxrl_pim.studies.gap import gap_ablation_tasks, run_gap_ablation
    from jaxrl_pim.studies.ptq import run_ptq

    if args.gap_ablation and not gap_ablation_tasks(config.tasks):  # before the PTQ study
        raise ValueError("--gap-ablation needs a DQN task among --tasks (e.g. dqn-cartpole)")
    results: dict[str, Any] = {}
    timing: dict[str, Any] = {}
    results["ptq"], timing["ptq"] = run_ptq(config, log=_log)
    print(report.ptq_table(results["ptq"]))
    if config.bits:
        print()
        print(report.bits_table(results["ptq"]))
    if args.gap_ablation:
        results["gap"], timing["gap"] = run_gap_ablation(config, log=_log)
        print()
        print(report.gap_table(results["gap"]))
    if args.json:
        _write(args.json, config, results, timing, report.study_summary)
    return 0


def _qat(args: argparse.Namespace) -> int:
    check_outputs(args, files={"--json": "json"})  # before any work
    with flag_names(FLAGS):  # the config's checks, before jax and the learners are imported
        config = QATStudyConfig(
            tasks=tuple(args.tasks), bits=tuple(args.bits), delay_fraction=args.delay,
            num_seeds=args.seeds, eval_episodes=args.episodes,
            timesteps_scale=args.timesteps_scale, seed=args.seed,
        )
    from jaxrl_pim.studies import report
    from jaxrl_pim.studies.qat import run_qat

    results: dict[str, Any] = {}
    timing: dict[str, Any] = {}
    results["qat"], timing["qat"] = run_qat(config, log=_log)
    print(report.qat_table(results["qat"]))
    if args.json:
        _write(args.json, config, results, timing, report.study_summary)
    return 0
