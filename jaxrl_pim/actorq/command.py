"""``jaxrl-pim actorq``: train ActorQ DQN / D4PG with fp32 / fp16 / int8 actors.

Example::

    jaxrl-pim actorq --algo dqn --env CartPole-v1 --precision fp32 int8 \\
        --mode single --actors 4 --actor-update-period 100 --steps 20000 --json out.json

Several ``--precision`` values run one after the other with the same seed and add the time
to 95 % of the fp32 reward and the speed-ups to the output.
"""

from __future__ import annotations

import argparse
import contextlib
from typing import Any

from jaxrl_pim.actorq.config import (
    ALGOS,
    D4PG_ENVS,
    DQN_ENVS,
    MODES,
    PRECISIONS,
    ActorQConfig,
    default_config,
)
from jaxrl_pim.actorq.energy import EnergyTracker
from jaxrl_pim.actorq.experiment import breakdown_table, compare_precisions, format_table
from jaxrl_pim.cli import HelpFormatter
from jaxrl_pim.progress import RichProgress


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``actorq`` sub-command."""
    d = ActorQConfig()
    p = subparsers.add_parser(
        "actorq",
        help="actor-learner DQN/D4PG with quantized (int8/fp16) actors",
        description="Train ActorQ: full-precision learner, actors holding an fp32/fp16/int8 "
        "copy of the policy refreshed every --actor-update-period steps. Several "
        "--precision values run one after the other with the same seed and add times to "
        "95 %% of the fp32 reward and speed-ups.",
        formatter_class=HelpFormatter,
    )
    p.add_argument("--algo", choices=ALGOS, default=d.algo,
                   help="dqn (discrete actions) or d4pg (continuous actions)")
    p.add_argument("--env", default=None,
                   help="gymnax task with flat observations (tuned: DQN CartPole-v1, "
                   "Acrobot-v1, MountainCar-v0; D4PG Pendulum-v1) or, for D4PG, a MuJoCo "
                   "Playground task playground/<EnvName>[@<max_steps>] (playground extra) "
                   f"(default: {DQN_ENVS[0]} for dqn, {D4PG_ENVS[0]} for d4pg)")
    p.add_argument("--precision", choices=PRECISIONS, nargs="+", default=["int8"],
                   help="one or more actor precisions (policy held and broadcast as "
                   "fp32/fp16/int8); with fp32 among them, speed-ups too")
    p.add_argument("--mode", choices=MODES, default="single",
                   help="single: actors vmapped in one jitted program; multiprocess: one OS "
                   "process per actor")
    p.add_argument("--actors", type=int, default=d.num_actors,
                   help="number of actors K (count)")
    p.add_argument("--envs-per-actor", type=int, default=d.envs_per_actor,
                   help="environments each actor steps in lock-step (count)")
    p.add_argument("--actor-update-period", type=int, default=d.actor_update_period,
                   help="steps of one actor between two policy refreshes (environment "
                   "steps)")
    p.add_argument("--steps", type=int, default=d.total_steps,
                   help="training length, summed over all actors and environments "
                   "(environment steps)")
    p.add_argument("--hidden", type=int, nargs="+", default=None,
                   help="policy MLP widths (units per layer) (default: 64 64 for DQN, "
                   "256 256 for D4PG)")
    p.add_argument("--seed", type=int, default=0,
                   help="PRNG seed (the same for every --precision)")
    p.add_argument("--energy", action="store_true",
                   help="track energy (kWh) and carbon (kg CO2eq) with codecarbon, an "
                   "optional extra (default: off)")
    p.add_argument("--country", default="USA",
                   help="3-letter ISO country code for codecarbon's carbon intensity")
    p.add_argument("--json", default=None, metavar="PATH",
                   help="write a JSON report to this file (default: none, print only)")
    p.add_argument("--no-progress", action="store_true",
                   help="hide the progress bar (default: shown when stderr is a terminal)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the command; returns the exit status."""
    from jaxrl_pim.report import make_report, write_json

    overrides: dict[str, Any] = dict(
        num_actors=args.actors,
        envs_per_actor=args.envs_per_actor,
        actor_update_period=args.actor_update_period,
        total_steps=args.steps,
    )
    if args.hidden:
        overrides["hidden_sizes"] = tuple(args.hidden)
    precisions = list(dict.fromkeys(args.precision))
    # the report's config carries the first precision; results hold one run per precision
    config = default_config(args.algo, args.env, precision=precisions[0], **overrides)
    energy = EnergyTracker(enabled=args.energy, country_iso_code=args.country)

    def progress(p: str):
        if args.no_progress:
            return contextlib.nullcontext(None)
        return RichProgress(f"actorq {config.algo} {config.env_name} {p} ({args.mode})")

    with energy:
        result = compare_precisions(config, precisions, args.mode, args.seed, progress)
    rows = breakdown_table(result)
    print(f"ActorQ {config.algo} on {config.env_name}, mode={args.mode}, "
          f"{config.num_actors} actors, update period {config.actor_update_period}, "
          f"{config.total_steps} steps")
    print(format_table(rows))
    ttr = result["time_to_reward"]
    if ttr is not None:
        print(f"target reward (95% of fp32 improvement): {ttr['target']:.4g}")
    e = energy.result()
    if args.energy:
        if e.get("available"):
            print(f"energy: {e['energy_kwh']:.3g} kWh, {e['emissions_kg']:.3g} kg CO2eq "
                  f"({e['note']})")
        else:
            print(f"energy: {e['note']}")
    if args.json:
        timing = {f"{p}_{k}": v for p, r in result["runs"].items()
                  for k, v in r["timing_s"].items()}
        results = dict(result, table=rows, energy=e, mode=args.mode, seed=args.seed,
                       precisions=precisions)
        path = write_json(args.json, make_report(config, results, timing))
        print(f"wrote {path}")
    return 0
