"""``jaxrl-pim ptq`` and ``jaxrl-pim qat``: the quantization studies from the command line.

Examples::

    jaxrl-pim ptq --tasks ppo-cartpole ddpg-pendulum --seeds 3 --bits 16 8 6 4 2 \\
        --json ptq.json
    jaxrl-pim qat --tasks ddpg-pendulum --bits 4 3 --seeds 3 --json qat.json

Both print Markdown tables; ``--json`` writes a report (system, config, results, timing_s).
"""

from __future__ import annotations

import argparse
import sys

from jaxrl_pim.actorq.ptq import DEFAULT_BITS, QUICK_TASKS, SCHEMES, TASKS


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``ptq`` and ``qat`` sub-commands."""
    p = subparsers.add_parser(
        "ptq",
        help="post-training quantization study (fp32/fp16/int8 and a bit sweep)",
        description="Train fp32 policies with the jitted learners, evaluate fake-quantized "
        "copies (fp16, int8, --bits sweep) and report return and KL vs fp32.",
    )
    p.add_argument("--tasks", nargs="+", choices=tuple(TASKS), default=list(QUICK_TASKS),
                   metavar="TASK", help="study tasks: " + ", ".join(TASKS))
    p.add_argument("--seeds", type=int, default=3, help="policies trained per task")
    p.add_argument("--episodes", type=int, default=16, help="evaluation episodes per seed")
    p.add_argument("--bits", type=int, nargs="+", default=list(DEFAULT_BITS),
                   help="bit sweep, 2-16 (paper scheme: 16 = float16 round trip)")
    p.add_argument("--scheme", choices=SCHEMES, default="paper")
    p.add_argument("--per-channel", action="store_true", help="one scale per output channel")
    p.add_argument("--no-biases", action="store_true", help="keep biases in fp32")
    p.add_argument("--timesteps-scale", type=float, default=1.0,
                   help="multiply every task's training length")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", default=None, metavar="PATH", help="write a JSON report here")
    p.set_defaults(func=run_ptq_command)

    q = subparsers.add_parser(
        "qat",
        help="quantization-aware training study (QAT vs PTQ at the same bits)",
        description="Train with fake quantization (STE) after a delay and compare with "
        "post-training quantization of fp32 policies at the same bit widths.",
    )
    q.add_argument("--tasks", nargs="+", choices=tuple(TASKS), default=["ddpg-pendulum"],
                   metavar="TASK", help="study tasks: " + ", ".join(TASKS))
    q.add_argument("--bits", type=int, nargs="+", default=[6, 5, 4, 3, 2])
    q.add_argument("--delay", type=float, default=0.5,
                   help="fraction of training before quantization switches on")
    q.add_argument("--seeds", type=int, default=3)
    q.add_argument("--episodes", type=int, default=16)
    q.add_argument("--timesteps-scale", type=float, default=1.0)
    q.add_argument("--seed", type=int, default=0)
    q.add_argument("--json", default=None, metavar="PATH", help="write a JSON report here")
    q.set_defaults(func=run_qat_command)


def run_ptq_command(args: argparse.Namespace) -> int:
    """Run ``jaxrl-pim ptq``; returns the exit status."""
    from jaxrl_pim.actorq.ptq import (
        PTQConfig,
        bits_table,
        int8_min_return_ratio,
        ptq_table,
        run_ptq,
    )
    from jaxrl_pim.report import make_report, write_json

    config = PTQConfig(
        tasks=tuple(args.tasks), num_seeds=args.seeds, eval_episodes=args.episodes,
        bits=tuple(args.bits), scheme=args.scheme, per_channel=args.per_channel,
        include_biases=not args.no_biases, timesteps_scale=args.timesteps_scale,
        seed=args.seed,
    )
    results, timing = run_ptq(config, log=_log)
    print(ptq_table(results))
    print()
    print(bits_table(results))
    if args.json:
        summary = {"int8_min_return_ratio": int8_min_return_ratio(results)}
        write_json(args.json, make_report(config, results, timing, summary))
        _log(f"wrote {args.json}")
    return 0


def run_qat_command(args: argparse.Namespace) -> int:
    """Run ``jaxrl-pim qat``; returns the exit status."""
    from jaxrl_pim.actorq.qat import QATStudyConfig, qat_table, run_qat
    from jaxrl_pim.report import make_report, write_json

    config = QATStudyConfig(
        tasks=tuple(args.tasks), bits=tuple(args.bits), delay_fraction=args.delay,
        num_seeds=args.seeds, eval_episodes=args.episodes,
        timesteps_scale=args.timesteps_scale, seed=args.seed,
    )
    results, timing = run_qat(config, log=_log)
    print(qat_table(results))
    if args.json:
        write_json(args.json, make_report(config, results, timing))
        _log(f"wrote {args.json}")
    return 0
