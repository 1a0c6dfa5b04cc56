"""``jaxrl-pim actorq``: train ActorQ DQN / D4PG with fp32 / fp16 / int8 actors.

Example::

    jaxrl-pim actorq --algo dqn --env CartPole-v1 --precision fp32 int8 \\
        --mode single --actors 4 --actor-update-period 100 --steps 20000 --json out.json
    jaxrl-pim actorq --mode ray --actors 8 --ray-address auto ...   # on a Ray cluster

Several ``--precision`` values run one after the other with the same seed and add the time
to 95 % of the fp32 reward and the speed-ups to the output.

With ``--checkpoint DIR`` each precision's run is saved into ``DIR/<precision>`` every
``--checkpoint-every`` environment steps (about 10 % of the run by default) and at its end
(orbax, atomically, the last 3 kept); ``--resume`` continues from the newest checkpoints, and
in single-program mode ends with the state an uninterrupted run reaches, bit for bit.
"""

from __future__ import annotations

import argparse
import contextlib
import socket
from typing import Any

from jaxrl_pim import choices
from jaxrl_pim.actorq.config import ActorQD4PGConfig, ActorQDQNConfig, default_config  # no jax
from jaxrl_pim.checks import INT32_MAX
from jaxrl_pim.choices import ACTORQ_ALGOS, COMPUTES, MODES, PRECISIONS
from jaxrl_pim.cli import _common as common
from jaxrl_pim.envs.names import is_playground_name

# The module imports no jax at its top: the options are parsed and their cheap checks run
# (counts, names, combinations of flags, output paths) before jax is imported, so a bad
# option is refused within a second.

#: The defaults of the options that set config fields: ActorQDQNConfig's own (``algo``, and
#: the settings every ActorQ run shares), read from the class (jaxrl_pim.actorq.config imports
#: no jax, so the parser is still built without it); --env and --hidden default per algorithm.
_DEFAULT: dict[str, Any] = common.config_defaults(ActorQDQNConfig)
#: The command's defaults that differ from the ActorQ config's, and why: the command exists to
#: run quantized actors, so its actors are int8 (the config's own default is fp32).
COMMAND_DEFAULTS: dict[str, Any] = {"precision": ("int8",)}
#: ActorQ config fields -> the flags that set them (errors name what the user typed).
FLAGS = {"num_actors": "--actors", "envs_per_actor": "--envs-per-actor",
         "actor_update_period": "--actor-update-period", "total_timesteps": "--steps",
         "hidden": "--hidden", "env_name": "--env", "actor_compute": "--actor-compute"}


def _widths(sizes: tuple[int, ...]) -> str:
    return " ".join(map(str, sizes))


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``actorq`` sub-command."""
    d = argparse.Namespace(**_DEFAULT)
    p = common.add_command(
        subparsers, "actorq", main,
        description="Train ActorQ: full-precision learner, actors holding an fp32/fp16/int8 "
        "copy of the policy refreshed every --actor-update-period steps. Several "
        "--precision values run one after the other with the same seed and add times to "
        "95 % of the fp32 reward and speed-ups.")  # a description is not %-formatted
    _add_task(p, d)
    _add_actors(p, d)
    _add_training(p, d)
    _add_energy(p)
    common.add_checkpoint_arguments(
        p, unit="STEPS",
        folder="save each precision's run into DIR/<precision> as it goes (orbax, atomic, "
        "last 3 kept) (default: no checkpoints)",
        period="environment steps between checkpoints (default with --checkpoint: about "
        "10%% of --steps)",
        resume="continue from the newest checkpoints in --checkpoint (same options as the run "
        "that wrote them)")
    _add_output(p)


def _add_task(p: argparse.ArgumentParser, d: argparse.Namespace) -> None:
    """The ``task`` options: the algorithm, its environment, the actors' precisions."""
    task = p.add_argument_group("task")
    task.add_argument("--algo", choices=ACTORQ_ALGOS, default=d.algo,
                      help="dqn (discrete actions) or d4pg (continuous actions)")
    task.add_argument("--env", default=None,
                      help="gymnax task with flat observations (tuned: DQN CartPole-v1, "
                      "Acrobot-v1, MountainCar-v0; D4PG Pendulum-v1) or, for D4PG, a MuJoCo "
                      "Playground task playground/<EnvName>[@<max_steps>] (playground extra) "
                      f"(default: {ActorQDQNConfig.env_name} for dqn, "
                      f"{ActorQD4PGConfig.env_name} for d4pg)")
    task.add_argument("--precision", choices=PRECISIONS, nargs="+",
                      default=list(COMMAND_DEFAULTS["precision"]),
                      help="one or more actor precisions (policy held and broadcast as "
                      "fp32/fp16/int8); with fp32 among them, speed-ups too")


def _add_actors(p: argparse.ArgumentParser, d: argparse.Namespace) -> None:
    """The ``actors`` options: where they run, their arithmetic, how many, their refreshes."""
    actors = p.add_argument_group("actors")
    actors.add_argument("--mode", choices=MODES, default="single",
                        help="single: actors vmapped in one jitted program; ray: one Ray actor "
                        "per actor (a local Ray instance, or the cluster of --ray-address); "
                        "processes: one local OS process per actor (shared memory + queue)")
    actors.add_argument("--ray-address", default=None, metavar="ADDRESS",
                        help="Ray cluster to join with --mode ray ('auto', HOST:6379 or "
                        "ray://HOST:10001) (default: start a local Ray instance)")
    actors.add_argument("--actor-compute", choices=COMPUTES, default=d.actor_compute,
                        help="native: int8 actors run int8 matmuls, fp16 actors float16 "
                        "matmuls; emulated: int8 actors multiply their int8 codes as float32 "
                        "(the same outputs); float32: actors dequantize and compute in float32; "
                        "auto: the fastest that computes the quantized policy here")
    actors.add_argument("--actors", type=int, default=d.num_actors,
                        help="number of actors K (count)")
    actors.add_argument("--envs-per-actor", type=int, default=d.envs_per_actor,
                        help="environments each actor steps in lock-step (count)")
    actors.add_argument("--actor-update-period", type=int, default=d.actor_update_period,
                        help="steps of one actor between two policy refreshes (environment "
                        "steps)")


def _add_training(p: argparse.ArgumentParser, d: argparse.Namespace) -> None:
    """The ``training`` options: its length, the policy's widths, the seed."""
    train = p.add_argument_group("training")
    train.add_argument("--steps", type=int, default=d.total_timesteps,
                       help="training length, summed over all actors and environments "
                       "(environment steps)")
    train.add_argument("--hidden", type=int, nargs="+", default=None,
                       help="policy MLP widths (units per layer) (default: "
                       f"{_widths(ActorQDQNConfig.hidden)} for DQN, "
                       f"{_widths(ActorQD4PGConfig.hidden)} for D4PG)")
    train.add_argument("--seed", type=int, default=0,
                       help="PRNG seed (the same for every --precision)")


def _add_energy(p: argparse.ArgumentParser) -> None:
    """The ``energy`` options: codecarbon's tracking."""
    energy = p.add_argument_group("energy")
    energy.add_argument("--energy", action="store_true",
                        help="track energy (kWh) and carbon (kg CO2eq) with codecarbon, an "
                        "optional extra (default: off)")
    energy.add_argument("--country", default="USA",
                        help="3-letter ISO country code for codecarbon's carbon intensity")


def _add_output(p: argparse.ArgumentParser) -> None:
    """The ``output`` options: the report and the progress bar."""
    out = p.add_argument_group("output")
    common.add_json_argument(out, "write a JSON report to this file (default: none, print only)")
    common.add_progress_argument(out, "progress bar on stderr (default: on when stderr is a "
                                 "terminal)")


#: Seconds ``--ray-address HOST:PORT`` has to accept a TCP connection before the run starts.
RAY_CONNECT_TIMEOUT_S = 3.0


def check_ray_address(address: str, timeout_s: float = RAY_CONNECT_TIMEOUT_S) -> None:
    """ValueError unless ``address`` (``HOST:PORT`` or ``ray://HOST:PORT``) accepts a TCP
    connection within ``timeout_s`` seconds: ``ray.init`` would otherwise retry for minutes
    against an address where no cluster runs. ``auto`` is left to Ray."""
    if address == "auto":
        return
    where = address.removeprefix("ray://")
    host, sep, port = where.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise ValueError(f"--ray-address must be 'auto', HOST:PORT or ray://HOST:PORT; "
                         f"got {address!r}")
    try:
        socket.create_connection((host, int(port)), timeout=timeout_s).close()
    except OSError as err:
        reason = err.strerror or type(err).__name__
        raise ValueError(f"--ray-address {address}: no Ray cluster answers there ({reason}, "
                         f"waited up to {timeout_s:g} s)") from None


def main(args: argparse.Namespace) -> int:
    """Run ``jaxrl-pim actorq`` with the parsed options; returns the exit status."""
    _check_options(args)  # before jax is imported
    from jaxrl_pim.actorq.energy import EnergyTracker
    from jaxrl_pim.actorq.experiment import breakdown_table, compare_precisions
    from jaxrl_pim.progress import RichProgress

    overrides: dict[str, Any] = dict(
        actor_compute=args.actor_compute,
        num_actors=args.actors,
        envs_per_actor=args.envs_per_actor,
        actor_update_period=args.actor_update_period,
        total_timesteps=args.steps,
    )
    if args.hidden:
        overrides["hidden"] = tuple(args.hidden)
    precisions = list(dict.fromkeys(args.precision))
    # the report's config carries the first precision; results hold one run per precision
    with common.flag_names(FLAGS):
        config = default_config(args.algo, args.env, precision=precisions[0], **overrides)
    energy = EnergyTracker(enabled=args.energy, country_iso_code=args.country)

    def progress(p: str):
        if not common.show_progress(args.progress):
            return contextlib.nullcontext(None)
        return RichProgress(f"actorq {config.algo} {config.env_name} {p} ({args.mode})")

    with energy, common.flag_names(FLAGS):
        result = compare_precisions(config, precisions, args.seed, progress, mode=args.mode,
                                    ray_address=args.ray_address,
                                    checkpoint_dir=args.checkpoint,
                                    checkpoint_every=args.checkpoint_every,
                                    resume=args.resume)
    rows = breakdown_table(result)
    _print_result(args, config, result, rows, energy.result())
    if args.json:
        _write_json(args, config, result, rows, energy.result(), precisions)
    return 0


def _check_options(args: argparse.Namespace) -> None:
    """The cheap checks and every output path, before jax is imported."""
    common.check_checkpoint_arguments(args)
    for flag, count in (("--actors", args.actors), ("--envs-per-actor", args.envs_per_actor),
                        ("--actor-update-period", args.actor_update_period),
                        ("--steps", args.steps), *(("--hidden", h) for h in args.hidden or ())):
        if count < 1:
            raise ValueError(f"{flag} must be >= 1, got {count}")
    # int32 step counters; every output path, not inside the checkpoint folder
    common.check_ranges({flag: (value, 1, INT32_MAX) for flag, value in (
        ("--actors", args.actors), ("--envs-per-actor", args.envs_per_actor),
        ("--actor-update-period", args.actor_update_period), ("--steps", args.steps),
        ("--checkpoint-every", args.checkpoint_every))})
    common.check_seed(args.seed)
    common.check_outputs(args, files={"--json": "json"}, folders={"--checkpoint": "checkpoint"})
    if not (args.env is None or is_playground_name(args.env)
            or args.env in choices.GYMNAX_ENVS):
        raise ValueError(f"--env must be an environment registered with gymnax (e.g. "
                         f"{', '.join(choices.DQN_ENVS + choices.D4PG_ENVS)}) or "
                         f"playground/<task>; got {args.env!r}")
    if args.ray_address is not None and args.mode != "ray":
        raise ValueError("--ray-address needs --mode ray")
    if args.ray_address is not None:
        check_ray_address(args.ray_address)


def _print_result(args: argparse.Namespace, config: Any, result: dict[str, Any],
                  rows: list, energy: dict[str, Any]) -> None:
    """The breakdown table, each run's transfer counts, the target and the energy."""
    from jaxrl_pim.actorq.experiment import format_table

    print(f"ActorQ {config.algo} on {config.env_name}, mode={args.mode}, "
          f"{config.num_actors} actors, update period {config.actor_update_period}, "
          f"{config.total_timesteps} steps")
    print(format_table(rows))
    for p, r in result["runs"].items():
        if "transitions_requested" in r:
            print(f"{p}: transitions requested {r['transitions_requested']}, received "
                  f"{r['transitions_received']}, lost {r['transitions_lost']} (batches in "
                  f"flight on {r['actor_failures']} failed actor(s)), unused at the end "
                  f"{r['transitions_unused']}")
        if r.get("resumed_from") is not None:
            print(f"{p}: resumed from {r['resumed_from']} (iterations or environment steps)")
    ttr = result["time_to_reward"]
    if ttr is not None:
        print(f"target reward (95% of fp32 improvement): {ttr['target']:.4g}")
    if args.energy:
        if energy.get("available"):
            print(f"energy: {energy['energy_kwh']:.3g} kWh, {energy['emissions_kg']:.3g} kg "
                  f"CO2eq ({energy['note']})")
        else:
            print(f"energy: {energy['note']}")


def _write_json(args: argparse.Namespace, config: Any, result: dict[str, Any], rows: list,
                energy: dict[str, Any], precisions: list[str]) -> None:
    """``--json``: the report, one timing entry per precision and phase."""
    from jaxrl_pim.report import make_report, write_json

    timing = {f"{p}_{k}": v for p, r in result["runs"].items()
              for k, v in r["timing_s"].items()}
    results = dict(result, table=rows, energy=energy, mode=args.mode, seed=args.seed,
                   precisions=precisions, checkpoint=args.checkpoint, resumed=args.resume)
    path = write_json(args.json, make_report(config, results, timing))
    print(f"wrote {path}")
