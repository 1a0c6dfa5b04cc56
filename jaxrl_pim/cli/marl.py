"""``jaxrl-pim marl``: train MADDPG / MATD3 / MASAC on a particle world from the command line.

Example::

    jaxrl-pim marl --env spread --agents 3 --algo maddpg --episodes 2000 --num-envs 8 \
        --json run.json --checkpoint runs/spread3
    # killed (or finished)? the same command with --resume continues from the newest
    # checkpoint; a larger --episodes extends a finished run
    jaxrl-pim marl --env spread --agents 3 --algo maddpg --episodes 4000 --num-envs 8 \
        --json run.json --checkpoint runs/spread3 --resume
    jaxrl-pim marl --env tag --predators 6 --prey 2 --episodes 500 --num-envs 16
    # 16 seeds in one vmapped program over the local devices: every seed's returns, the
    # mean, standard error and 95 % interval; the largest buffers that fit in memory
    jaxrl-pim marl --agents 3 --episodes 500 --seeds 16 --capacity auto --json seeds.json \
        --plot seeds.png
    # a JaxMARL environment (jaxmarl extra), then the trained policies back
    jaxrl-pim marl --env jaxmarl:MPE_simple_spread_v3 --episodes 300 --num-envs 8 \
        --checkpoint runs/jm-spread
    jaxrl-pim marl evaluate --checkpoint runs/jm-spread --episodes 100 --render spread.gif

``--episodes`` is the run's total. With ``--checkpoint DIR`` the run is saved every
``--checkpoint-every`` episodes (about 10 % of the run by default) and at its end, in an orbax
folder that keeps the newest 3 (:mod:`jaxrl_pim.marl.checkpoint`); ``--resume`` continues from
the newest one, refusing a checkpoint of another configuration or seed, and ends with the state
an uninterrupted run ends with, bit for bit. Before training the command prints the plan
(transitions, update rounds, replay memory), a measured duration estimate for long runs, and a
warning when no update will run.

The module imports no jax at its top (nor JaxMARL): the options are parsed and their cheap
checks run (counts, names, combinations of flags, output paths) before jax is imported, so a
bad option is refused within a second; the rest is imported where it is used.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from typing import Any

from jaxrl_pim import run_record
from jaxrl_pim.checks import INT32_MAX
from jaxrl_pim.choices import (
    JAXMARL_PREFIX,
    JAXMARL_SUPPORTED,
    LAYOUTS,
    LONG_RUN_TRANSITIONS,
    MARL_ALGOS,
    MARL_ENVS,
    POLICIES,
    SAMPLERS,
    SAMPLING_MODES,
    TAG_PRESETS,
)
from jaxrl_pim.cli import _common as common
from jaxrl_pim.marl.config import MARLConfig  # no jax: the command reads its defaults

#: The defaults of the options that set MARLConfig fields: MARLConfig's own, read from the
#: class (jaxrl_pim.marl.config imports no jax, so the parser is still built without it).
_DEFAULT: dict[str, Any] = common.config_defaults(MARLConfig)

#: MARLConfig fields -> the flags that set them (errors name what the user typed; a
#: checkpoint's fingerprint difference too, its seed and number of seeds among them).
FLAGS = {"num_episodes": "--episodes", "num_envs": "--num-envs", "batch_size": "--batch-size",
         "buffer_capacity": "--capacity", "learning_starts": "--learning-starts",
         "update_every": "--update-every", "num_agents": "--agents", "num_prey": "--prey",
         "num_obstacles": "--obstacles", "sampling_mode": "--sampling-mode",
         "algo": "--algo", "sampler": "--sampler", "layout": "--layout",
         "num_seeds": "--seeds"}
#: The most episodes a run takes: its env steps (``episode_length`` each) are counted in an
#: int32 (``TrainState.step``).
MAX_EPISODES = INT32_MAX // _DEFAULT["episode_length"]
#: Greedy evaluation episodes per seed after a run of ``--seeds S > 1`` (``--eval-episodes``).
EVAL_EPISODES = 10


def _presets() -> str:
    return "; ".join(f"{k} = {a} predators + {g} prey + {o} obstacles"
                     for k, (a, g, o) in sorted(TAG_PRESETS.items()))


def register(subparsers: Any) -> None:
    """Add the ``marl`` sub-command."""
    d = argparse.Namespace(**_DEFAULT)
    p = common.add_command(
        subparsers, "marl", main, help_formatter=False,  # every help text states its default
        description="Train multi-agent actor-critics on the JAX particle worlds (jitted). "
                    "Defaults are the original MADDPG schedule (60,000 episodes, 1e6-row "
                    "buffers); use fewer episodes, more --num-envs and a smaller --capacity "
                    "for a run of minutes.",
        epilog=f"Predator-prey presets (--env tag --agents K): {_presets()}. Any other "
               "composition: --predators A --prey G [--obstacles L].",
    )
    _add_world(p, d)
    _add_algorithm(p, d)
    _add_schedule(p, d)
    _add_output(p)
    common.add_checkpoint_arguments(
        p, unit="EPISODES",
        folder="folder of the run's checkpoints (orbax, written atomically, the newest 3 "
        "kept; each holds the whole train state, replay buffers included) (default: none)",
        period="episodes between checkpoints (default: about 10%% of the run, "
        "ceil(episodes / 10))",
        resume="continue from the newest checkpoint in --checkpoint (same options and seed "
        "required, --episodes may grow; an empty folder starts from episode 0) (default: off)")
    from jaxrl_pim.cli import launch

    launch.add_arguments(p)  # --coordinator ...: the seeds of --seeds over several processes
    _register_evaluate(p)


def _add_world(p: argparse.ArgumentParser, d: argparse.Namespace) -> None:
    """The ``world`` options: the environment and its agents."""
    world = p.add_argument_group("world")
    world.add_argument("--env", default=d.env, metavar="ENV",
                       help="spread = cooperative navigation, tag = predator-prey, or a "
                            "JaxMARL environment jaxmarl:NAME, NAME one of "
                            f"{', '.join(JAXMARL_SUPPORTED)} (needs the jaxmarl extra) "
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


def _add_algorithm(p: argparse.ArgumentParser, d: argparse.Namespace) -> None:
    """The ``algorithm and replay`` options."""
    algo = p.add_argument_group("algorithm and replay")
    algo.add_argument("--algo", choices=MARL_ALGOS, default=d.algo,
                      help="learner (default: %(default)s)")
    algo.add_argument("--sampler", choices=SAMPLERS, default=d.sampler,
                      help="mini-batch index sampler (default: %(default)s)")
    algo.add_argument("--layout", choices=LAYOUTS, default=None,
                      help="replay memory layout (default: the backend's fastest by "
                           "measurement, per_agent on a GPU, interleaved elsewhere; compact "
                           "when that does not hold the rows and compact does)")
    algo.add_argument("--sampling-mode", choices=SAMPLING_MODES, default=d.sampling_mode,
                      help="faithful = own indices per agent, fast = one shared index set "
                           "(default: %(default)s)")


def _add_schedule(p: argparse.ArgumentParser, d: argparse.Namespace) -> None:
    """The ``schedule`` options: episodes, envs, batch, replay size, seeds."""
    sched = p.add_argument_group("schedule")
    sched.add_argument("--episodes", type=int, default=d.num_episodes,
                       help="total episodes per env, 25 steps each (default: %(default)s)")
    sched.add_argument("--num-envs", type=int, default=d.num_envs,
                       help="envs stepped in parallel (default: %(default)s)")
    sched.add_argument("--batch-size", type=int, default=d.batch_size,
                       help="transitions per agent per update round (default: %(default)s)")
    sched.add_argument("--capacity", type=_capacity, default=d.buffer_capacity,
                       help="replay rows (time steps) per team buffer, or auto: the largest "
                            f"up to {d.buffer_capacity:,} whose train state fits in memory "
                            "(recorded in the report); a run too large for memory stops "
                            "before anything is allocated (default: %(default)s)")
    sched.add_argument("--learning-starts", type=int, default=d.learning_starts,
                       help="stored transitions before the first update (default: "
                            "%(default)s)")
    sched.add_argument("--update-every", type=int, default=d.update_every,
                       help="env steps (of all envs together) between update rounds "
                            "(default: %(default)s)")
    sched.add_argument("--seed", type=int, default=0,
                       help="PRNG seed of the run (default: %(default)s)")
    sched.add_argument("--seeds", type=_seeds, default=1, metavar="S",
                       help="train S seeds (--seed .. --seed + S - 1) in one jitted, vmapped "
                            "program, split over the local devices; the report gives every "
                            "seed's returns, their mean, standard error and 95 %% interval; "
                            "auto: as many as the memory holds, at most 256 "
                            "(default: %(default)s)")
    sched.add_argument("--eval-episodes", type=int, default=None, metavar="N",
                       help="with --seeds S > 1: greedy-policy episodes per seed after "
                            "training (0: none; a single run is evaluated by marl evaluate) "
                            f"(default: {EVAL_EPISODES})")


def _add_output(p: argparse.ArgumentParser) -> None:
    """The ``output`` options: report, plot, progress bar, duration estimate."""
    out = p.add_argument_group("output")
    common.add_json_argument(out, "write the run report here (default: none)")
    out.add_argument("--plot", metavar="PATH.png", default=None,
                     help="with --seeds: the learning curves, mean over seeds with the 95 %% "
                          "band, as a PNG (default: none)")
    common.add_progress_argument(out, "progress bar (default: on when stdout is a terminal)")
    out.add_argument("--estimate", action=argparse.BooleanOptionalAction, default=None,
                     help="time one env step and one update round first and print the "
                          "expected duration (default: on for runs of at least "
                          f"{LONG_RUN_TRANSITIONS:,} transitions)")


def _register_evaluate(marl: argparse.ArgumentParser) -> None:
    """``jaxrl-pim marl evaluate``: a checkpoint's greedy policies over N episodes."""
    sub = marl.add_subparsers(
        dest="marl_command", metavar="evaluate",
        help="evaluate a run's checkpoint (without it, jaxrl-pim marl trains) (default: train)")
    e = sub.add_parser(
        "evaluate", help="evaluate the policies of a checkpoint folder",
        description="Load the newest checkpoint of a run (jaxrl-pim marl --checkpoint DIR), "
                    "run its policies over N episodes of one environment and print the mean "
                    "return per team with its standard error; optionally write a GIF of one "
                    "episode.")
    e.add_argument("--checkpoint", metavar="DIR", required=True,
                   help="the run's checkpoint folder (required; default: none)")
    e.add_argument("--episodes", type=int, default=100,
                   help="evaluation episodes (default: %(default)s)")
    e.add_argument("--policy", choices=POLICIES, default="greedy",
                   help="greedy = softmax of the logits, no noise (a discrete env takes its "
                        "argmax); sample = Gumbel-softmax as in training; random = "
                        "uniformly random actions on the checkpoint's world "
                        "(default: %(default)s)")
    e.add_argument("--seed", type=int, default=0,
                   help="PRNG seed of the episode starts (default: %(default)s)")
    e.add_argument("--render", metavar="OUT.gif", default=None,
                   help="also write a GIF of one episode, drawn to scale (default: none)")
    common.add_json_argument(e, "write the evaluation report here (default: none)")
    e.set_defaults(func=evaluate_checkpoint)


def evaluate_checkpoint(args: argparse.Namespace) -> int:
    """``jaxrl-pim marl evaluate``: load, evaluate, print, optionally render."""
    _check_evaluate_options(args)  # before jax, the checkpoint read and the episodes compiled
    import jax

    from jaxrl_pim.marl import plan
    from jaxrl_pim.marl.policies import evaluate, load_policies

    check_evaluate(args.checkpoint)  # the recorded memory plan, before any array is read
    try:
        pol = load_policies(args.checkpoint)
        common.check_fits_memory("--episodes", plan.evaluation_bytes(pol.config, len(pol.teams),
                                                              args.episodes, pol.num_seeds),
                          f"evaluating {args.episodes:,} episodes of {pol.num_seeds} seed(s)")
        key = jax.random.PRNGKey(args.seed)
        if pol.num_seeds > 1:  # a group of seeds (--seeds S): every seed's greedy return
            from jaxrl_pim.cli.marl_seeds import evaluate_group

            return evaluate_group(args, pol, key)
        returns = evaluate(pol.config, pol.params, key, args.episodes, policy=args.policy)
    except ImportError as err:
        raise ValueError(str(err)) from None
    _report_evaluation(args, pol, returns)
    if args.render is not None:
        _render_episode(args, pol, key)
    return 0


def _check_evaluate_options(args: argparse.Namespace) -> None:
    """``marl evaluate``'s cheap checks and output paths, and another kind of run's folder
    refused, before jax is imported."""
    if args.episodes < 1:
        raise ValueError(f"--episodes must be >= 1, got {args.episodes} (evaluation episodes)")
    common.check_ranges({"--episodes": (args.episodes, 1, INT32_MAX)})  # int32 episode indices
    common.check_seed(args.seed)
    if args.render is not None and not args.render.lower().endswith(".gif"):
        raise ValueError(f"--render writes a GIF: {args.render!r} does not end in .gif")
    common.check_outputs(args, files={"--json": "json", "--render": "render"})  # not the same file
    if not os.path.isdir(args.checkpoint):
        raise ValueError(f"--checkpoint {args.checkpoint!r} is not a folder (expected a MARL "
                         "run's --checkpoint folder)")
    run_record.check_folder(args.checkpoint, "--checkpoint", "MARL")  # another kind of run's


def _report_evaluation(args: argparse.Namespace, pol: Any, returns: Any) -> None:
    """Print the mean return per team (with its standard error over the episodes) and write
    ``--json``; ``returns``: ``[episodes, teams]``."""
    import numpy as np

    from jaxrl_pim import report

    n = returns.shape[0]
    mean = returns.mean(axis=0)
    se = returns.std(axis=0, ddof=1) / np.sqrt(n) if n > 1 else np.full_like(mean, np.nan)
    names = [t.name for t in pol.teams]
    if n > 1:
        per_team = ", ".join(f"{t} {m:.2f} +- {s:.2f}" for t, m, s in zip(names, mean, se,
                                                                         strict=True))
        what = f"{n} episodes, mean return per team (+- standard error)"
    else:  # one episode has no spread
        per_team = ", ".join(f"{t} {m:.2f}" for t, m in zip(names, mean, strict=True))
        what = "1 episode, return per team"
    print(f"marl evaluate {pol.config.algo} {pol.config.env} (checkpoint after "
          f"{pol.episodes_done:,} episodes): {args.policy} policy, {what}: {per_team}")
    if args.json:
        results = {"checkpoint": str(pol.checkpoint), "episodes_done": pol.episodes_done,
                   "policy": args.policy, "seed": args.seed, "teams": names,
                   "mean_return": mean.tolist(), "standard_error": se.tolist(),
                   "returns": returns.tolist()}
        report.write_json(args.json, report.make_report(pol.config, results, {}))


def _render_episode(args: argparse.Namespace, pol: Any, key: Any) -> None:
    """``--render``: one episode of the policies as a GIF, its returns in the title."""
    import jax

    from jaxrl_pim.marl.policies import rollout_positions
    from jaxrl_pim.marl.render import render_gif

    names = [t.name for t in pol.teams]
    ep = rollout_positions(pol.config, pol.params, jax.random.fold_in(key, 0),
                           policy=args.policy)
    ret = ", ".join(f"{t} {r:.1f}" for t, r in zip(names, ep["returns"], strict=True))
    render_gif([ep], args.render, titles=[f"{pol.config.env}\n{args.policy}: {ret}"])
    print(f"wrote {args.render} (one episode of {pol.config.episode_length} steps)")


def check_evaluate(folder: str) -> None:
    """Refuse (one line) a ``marl evaluate`` whose reading of the actors (the run's recorded
    memory plan, ``meta["memory"]["evaluate_bytes"]`` per seed; computed from the
    configuration for a checkpoint without one) does not fit the available memory, before
    any array is read. A folder without a readable MARL record is left to the loader."""
    from jaxrl_pim.marl import plan
    from jaxrl_pim.marl.checkpoint import recorded_run
    from jaxrl_pim.marl.policies import config_from_fingerprint

    record = recorded_run(folder)
    fingerprint = _field(record, "fingerprint")
    if not fingerprint:
        return
    one = _field(record, "meta", "memory").get("evaluate_bytes")
    if not isinstance(one, int):
        try:
            one = plan.evaluate_bytes(config_from_fingerprint(fingerprint))
        except (ValueError, TypeError):
            return  # not a MARL run's checkpoint: load_policies says so
    needed = int(fingerprint.get("num_seeds") or 1) * int(one)
    common.check_fits_memory("--checkpoint", needed,
                      f"reading the actors of {folder} (its recorded memory plan)")


def _number_or_auto(noun: str) -> Callable[[str], int | str]:
    """An argparse type: an integer, or ``auto``; the error names ``noun``."""

    def parse(text: str) -> int | str:
        if text == "auto":
            return text
        try:
            return int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"invalid value {text!r}: a number of {noun} or auto") from None

    return parse


_capacity = _number_or_auto("rows")  # --capacity
_seeds = _number_or_auto("seeds")  # --seeds


def _auto_rows(args: argparse.Namespace) -> int:
    """``--capacity auto``'s upper bound: the default capacity, or the rows that
    ``--batch-size`` / ``--learning-starts`` / ``--num-envs`` need when more."""
    return max(_DEFAULT["buffer_capacity"], args.batch_size, args.learning_starts, args.num_envs)


def check_args(args: argparse.Namespace) -> tuple[int | None, int | None, int | None]:
    """The cheap checks of the training options, without importing jax or JaxMARL: counts,
    the ``--env`` name, the world options that go together, the replay sizes against
    ``--capacity`` (``auto``: :func:`_auto_rows`' bound). Returns the world's ``(agents,
    prey, obstacles)`` (None: the config's default); a ValueError names the flag."""
    if args.capacity == "auto":
        args = argparse.Namespace(**{**vars(args), "capacity": _auto_rows(args)})
    _check_sizes(args)
    _check_env_name(args.env)
    return _world(args)


def _check_sizes(args: argparse.Namespace) -> None:
    """``--episodes``, ``--update-every``, ``--checkpoint-every`` and the seeds within their
    ranges, the replay sizes within ``--capacity`` (a number here)."""
    if args.episodes < 1:
        raise ValueError(f"--episodes must be >= 1, got {args.episodes} (the run's total)")
    common.check_ranges({"--episodes": (args.episodes, 1, MAX_EPISODES),
                  "--update-every": (args.update_every, 1, INT32_MAX),
                  "--checkpoint-every": (args.checkpoint_every, 1, INT32_MAX)})
    common.check_seed(args.seed, 1 if args.seeds == "auto" else args.seeds)
    if 1 <= args.capacity < args.batch_size:
        raise ValueError(f"--batch-size ({args.batch_size}) must be <= --capacity "
                         f"({args.capacity}), the replay rows it draws from")
    if 1 <= args.capacity < args.learning_starts:
        raise ValueError(f"--learning-starts ({args.learning_starts}) must be <= --capacity "
                         f"({args.capacity})")


def _check_env_name(env: str) -> None:
    """``--env`` is a particle world or a supported JaxMARL environment."""
    if env not in MARL_ENVS and not env.startswith(JAXMARL_PREFIX):
        raise ValueError(f"--env must be one of {', '.join(MARL_ENVS)} or "
                         f"{JAXMARL_PREFIX}NAME (a JaxMARL environment), got {env!r}")
    if env.startswith(JAXMARL_PREFIX) and env.removeprefix(JAXMARL_PREFIX) not in \
            JAXMARL_SUPPORTED:
        raise ValueError(f"--env {env} is not supported; JaxMARL environments: "
                         + ", ".join(JAXMARL_PREFIX + n for n in JAXMARL_SUPPORTED))


def _world(args: argparse.Namespace) -> tuple[int | None, int | None, int | None]:
    """The world's ``(agents, prey, obstacles)`` from ``--agents`` or ``--predators`` /
    ``--prey`` / ``--obstacles``, refusing the options that do not go together."""
    if args.env != "tag":
        if args.env != "spread" and args.agents is not None:
            raise ValueError(f"--agents does not apply to {args.env} (its size is the JaxMARL "
                             "environment's own)")
        if args.predators is not None or args.prey is not None or args.obstacles is not None:
            raise ValueError("--predators/--prey/--obstacles apply to --env tag; use --agents "
                             "for spread")
        return args.agents, None, None
    if args.predators is not None or args.prey is not None:
        if args.agents is not None:
            raise ValueError("give --agents (a preset) or --predators/--prey, not both")
        if args.predators is None or args.prey is None:
            raise ValueError("--predators and --prey go together")
        return args.predators, args.prey, args.obstacles
    if args.obstacles is not None:
        raise ValueError("--obstacles needs --predators and --prey")
    return args.agents, None, None


def _known_fingerprint(args: argparse.Namespace, agents: int | None) -> dict[str, Any]:
    """The part of the run's checkpoint fingerprint (:func:`jaxrl_pim.marl.checkpoint.
    fingerprint`, with the number of seeds of a group) the options give without jax: the
    config fields taken as typed (not the layout or ``--capacity auto``, which the backend
    and the memory decide, nor a predator-prey or JaxMARL world's sizes), and the seeds."""
    config = {"algo": args.algo, "env": args.env, "num_envs": args.num_envs,
              "sampling_mode": args.sampling_mode, "sampler": args.sampler,
              "batch_size": args.batch_size, "learning_starts": args.learning_starts,
              "update_every": args.update_every}
    if args.layout is not None:
        config["layout"] = args.layout
    if args.capacity != "auto":
        config["buffer_capacity"] = args.capacity
    if args.env == "spread":
        config["num_agents"] = _DEFAULT["num_agents"] if agents is None else agents
    return {"config": config, "seed": args.seed,
            "num_seeds": args.seeds if args.seeds != 1 else None}


def config_from_args(args: argparse.Namespace) -> MARLConfig:
    """The run's config from the parsed options (checked by :func:`check_args` first, the
    world options resolved; ``--capacity auto`` gives :func:`_auto_rows`' bound, which
    :func:`fit_memory` lowers)."""
    agents, prey, obstacles = check_args(args)
    if args.capacity == "auto":
        args = argparse.Namespace(**{**vars(args), "capacity": _auto_rows(args)})
    if args.env.startswith(JAXMARL_PREFIX):
        from jaxrl_pim.envs.jaxmarl_adapter import require_jaxmarl

        try:
            require_jaxmarl()
        except ImportError as err:  # one line, naming the extra
            raise ValueError(str(err)) from None
    # the predators of --predators A --prey G are the config's num_agents too
    flags = FLAGS if args.predators is None else {"num_agents (predators)": "--predators",
                                                  "num_agents": "--predators", **FLAGS}
    with common.flag_names(flags):
        return _config(args, agents, prey, obstacles)


def _config(args: argparse.Namespace, agents: int | None, prey: int | None,
            obstacles: int | None) -> MARLConfig:
    from jaxrl_pim.marl import plan

    return MARLConfig(
        algo=args.algo, env=args.env,
        num_agents=_DEFAULT["num_agents"] if agents is None else agents, num_prey=prey,
        num_obstacles=obstacles, num_envs=args.num_envs, num_episodes=args.episodes,
        sampling_mode=args.sampling_mode, sampler=args.sampler,
        layout=plan.default_layout() if args.layout is None else args.layout,
        buffer_capacity=args.capacity, batch_size=args.batch_size,
        learning_starts=args.learning_starts, update_every=args.update_every,
    )


def fit_memory(args: argparse.Namespace, config: MARLConfig, seeds: int = 1,
               devices: int | None = None) -> tuple[MARLConfig, dict[str, Any]]:
    """Decide memory once, before anything is allocated: the run's memory plan
    (:func:`jaxrl_pim.marl.plan.memory_plan`; with ``--checkpoint`` sized for a resume's
    peak), recorded in the report and in every checkpoint. ``--capacity auto`` takes the
    largest capacity whose ``seeds`` peaks fit in :func:`~jaxrl_pim.marl.plan.total_memory`
    and checks it against the same figure (it never refuses its own choice); a given capacity
    is checked against :func:`~jaxrl_pim.marl.plan.available_memory` (one-line ``ValueError``
    naming the largest capacity, or number of seeds, that fits). A ``--resume`` reads the
    capacity ``auto`` chose and the layout the run took from the newest checkpoint's record
    (never sized again) and checks the recorded plan before any array is read
    (:func:`check_resume`). ``devices`` the seeds are split over (default: every local
    device). Returns the config and the memory record."""
    import jax

    from jaxrl_pim.marl import plan
    from jaxrl_pim.marl.checkpoint import recorded_run

    devices = jax.local_device_count() if devices is None else devices
    auto = args.capacity == "auto"
    resumable = getattr(args, "checkpoint", None) is not None
    record = recorded_run(args.checkpoint) if resumable and args.resume else None
    # one figure for the choice and the check: auto sizes for the total memory
    available = plan.total_memory() if auto else plan.available_memory()
    asked = getattr(args, "layout", None)
    if record is not None:  # a resumed run: what it decided when it started
        config, why = _as_recorded(record, config, auto, asked)
        mp = check_resume(args.checkpoint, record, config, seeds, devices, available)
    else:
        config, why = _fit_new_run(config, seeds, devices, available, auto, asked, resumable)
        mp = plan.check_memory(config, seeds, devices, available, flag="--capacity",
                               resumable=resumable)
    return config, {**mp._asdict(), "capacity_auto": auto, "recorded": record is not None,
                    "buffer_capacity": config.buffer_capacity, "layout": config.layout,
                    "layout_asked": asked, "layout_reason": why}


def _as_recorded(record: Any, config: MARLConfig, auto: bool,
                 asked: str | None) -> tuple[MARLConfig, str | None]:
    """A resumed run's config with the capacity ``auto`` chose and the layout it took (when
    not asked for now), as its newest checkpoint recorded them; and the layout's reason."""
    import dataclasses

    why = None
    saved = _field(record, "fingerprint", "config")
    if auto and isinstance(saved.get("buffer_capacity"), int):
        config = dataclasses.replace(config, buffer_capacity=saved["buffer_capacity"])
    if asked is None and isinstance(saved.get("layout"), str):
        config = dataclasses.replace(config, layout=saved["layout"])
        why = _field(record, "meta", "memory").get("layout_reason")
    return config, why


def _fit_new_run(config: MARLConfig, seeds: int, devices: int, available: tuple[int, str],
                 auto: bool, asked: str | None,
                 resumable: bool) -> tuple[MARLConfig, str | None]:
    """A new run's config with ``--capacity auto``'s rows and, when ``--layout`` was not
    asked for, the compact layout if needed (said on stdout); and the layout's reason."""
    import dataclasses

    from jaxrl_pim.marl import plan

    why = None
    if auto:
        rows = plan.auto_capacity(config, seeds, devices, available, flag="--capacity",
                                  resumable=resumable)
        config = dataclasses.replace(config, buffer_capacity=rows)
    if asked is None:  # the layout was not asked for: compact if needed
        config, why = plan.fit_layout(config, seeds, devices, available, resumable)
        if why is not None:
            print(f"layout: compact ({why})", flush=True)
    return config, why


def _field(record: Any, *keys: str) -> dict[str, Any]:
    """``record[k1][k2]...`` of a checkpoint's JSON record when it is a dict, else ``{}``."""
    for key in keys:
        record = record.get(key) if isinstance(record, dict) else None
    return record if isinstance(record, dict) else {}


def check_resume(folder: str, record: dict[str, Any], config: MARLConfig, seeds: int,
                 devices: int, available: tuple[int, str]) -> Any:
    """Refuse (one line) a ``--resume`` whose recorded memory plan (the newest checkpoint's
    ``meta["memory"]``; computed from ``config`` for a checkpoint without one) does not fit
    ``available`` ``(bytes, source)``, before any array is read. Returns the
    :class:`~jaxrl_pim.marl.plan.MemoryPlan` of the resumed run."""
    from jaxrl_pim.marl import plan

    mp = plan.memory_plan(config, seeds, devices, available, resumable=True)
    one = _field(record, "meta", "memory").get("resume_bytes")  # one seed's, as recorded
    one = one if isinstance(one, int) and one > 0 else mp.resume_bytes
    needed = mp.needed_bytes // mp.resume_bytes * one  # the seeds sharing one memory
    if needed > mp.usable_bytes:
        raise ValueError(
            f"--resume: resuming {str(folder)!r} needs {plan.human_bytes(needed)} (its recorded "
            f"memory plan: {plan.PEAK_STATES['resume']:g} x the train state of "
            f"{config.buffer_capacity:,} replay rows per team, read and trained) but "
            f"{plan.human_bytes(mp.usable_bytes)} ({int(plan.MEMORY_FRACTION * 100)} % of "
            f"{plan.human_bytes(mp.available_bytes)}, {mp.source}) is available: free memory "
            f"or resume on a machine with more (a resumed run keeps its --capacity)")
    return mp._replace(needed_bytes=needed, fits=True)


def _open_checkpoints(args: argparse.Namespace, config: MARLConfig) -> Any:
    """The run's checkpoint folder (None without ``--checkpoint``), options checked first."""
    common.check_checkpoint_arguments(args)
    if args.checkpoint is None:
        return None
    from jaxrl_pim.checkpoint import Checkpoints
    from jaxrl_pim.marl import checkpoint

    return Checkpoints(args.checkpoint, keep=3,
                       fingerprint=checkpoint.fingerprint(config, seed=args.seed))


def main(args: argparse.Namespace) -> int:
    """Run ``jaxrl-pim marl`` with the parsed options: plan, train (in checkpointed segments
    with ``--checkpoint``, through :mod:`jaxrl_pim.runner`), print a one-line summary,
    optionally write the report; returns the exit status."""
    _check_run_options(args)  # every cheap check before jax (and JaxMARL) is imported
    from jaxrl_pim.cli import launch

    procs = launch.initialize_from_args(args, "jaxrl-pim marl")  # before any jax work
    config = config_from_args(args)
    if args.seeds == "auto":  # as many seeds as this process's memory holds, on its devices
        import jax

        from jaxrl_pim.marl import plan

        local = plan.auto_seeds(config, jax.local_device_count())
        args.seeds = local * procs.count
        print(f"--seeds auto: {args.seeds} seeds fit ({local} per process)", flush=True)
    if procs.count > 1 and (args.seeds < 2 or args.checkpoint is not None):
        raise ValueError("several processes train the seeds of --seeds S > 1 (split over "
                         "every process's devices), without --checkpoint for now")
    if args.seeds > 1:
        from jaxrl_pim.cli.marl_seeds import run_seeds
        from jaxrl_pim.marl.seeds import seed_mesh

        # each process holds its own devices' seeds: the memory check is per process
        config, memory = fit_memory(args, config, -(-args.seeds // procs.count),
                                    max(1, seed_mesh(args.seeds).devices.size // procs.count))
        with common.flag_names(FLAGS):
            return run_seeds(args, config, memory, procs.index == 0)
    config, memory = fit_memory(args, config)
    checkpoints = _open_checkpoints(args, config)
    try:
        with common.flag_names(FLAGS):
            return _run(args, config, checkpoints, memory)
    finally:
        if checkpoints is not None:
            checkpoints.close()


def _check_run_options(args: argparse.Namespace) -> None:
    """The training run's cheap checks and every output path, before jax is imported (and
    another run's checkpoint folder refused); ``--eval-episodes`` gets its default."""
    common.check_checkpoint_arguments(args)
    auto_seeds = args.seeds == "auto"
    if auto_seeds and args.capacity == "auto":
        raise ValueError("--seeds auto and --capacity auto both size to the memory: give one "
                         "of them a number")
    if not auto_seeds and args.seeds < 1:
        raise ValueError(f"--seeds must be >= 1, got {args.seeds}")
    if args.eval_episodes is not None:  # a group's greedy evaluation; a single run has none
        if args.seeds == 1:
            raise ValueError("--eval-episodes evaluates the seeds of --seeds S > 1; evaluate a "
                             "single run with jaxrl-pim marl evaluate --checkpoint DIR "
                             "--episodes N")
        common.check_ranges({"--eval-episodes": (args.eval_episodes, 0, INT32_MAX)})
    if args.plot is not None:
        if args.seeds == 1:
            raise ValueError("--plot draws the curves of --seeds S > 1")
        if not args.plot.lower().endswith(".png"):
            raise ValueError(f"--plot writes a PNG: {args.plot!r} does not end in .png")
    # every output path, and no two the same or inside the checkpoint folder, before any work
    common.check_outputs(args, files={"--json": "json", "--plot": "plot"},
                  folders={"--checkpoint": "checkpoint"})
    if args.eval_episodes is None:
        args.eval_episodes = EVAL_EPISODES
    if auto_seeds and args.checkpoint is not None:
        raise ValueError("--seeds auto picks the seeds from the memory; a checkpointed group "
                         "needs a fixed --seeds S")
    agents = check_args(args)[0]
    if args.checkpoint is not None and args.resume:  # another run's folder, before JaxMARL
        with common.flag_names(FLAGS):
            run_record.check_folder(args.checkpoint, "--checkpoint", "MARL",
                                    known=_known_fingerprint(args, agents))


def _run(args: argparse.Namespace, config: MARLConfig, checkpoints: Any,
         memory: dict[str, Any]) -> int:
    """One seed's run: start or resume, say the plan, train, report."""
    import jax

    from jaxrl_pim import report
    from jaxrl_pim.marl import checkpoint, plan
    from jaxrl_pim.progress import RichProgress

    timing: dict[str, float] = {}
    t0 = time.perf_counter()
    state, curve = checkpoint.starting_state(config, jax.random.PRNGKey(args.seed),
                                             checkpoints, resume=args.resume)
    start = int(state.episode)
    timing["init"] = time.perf_counter() - t0
    the_plan = plan.plan_run(config, start)
    every, estimate = _say_plan(args, config, the_plan, start, checkpoints, memory, timing)
    progress = common.show_progress(args.progress, sys.stdout)
    with RichProgress(f"marl {args.algo} {args.env}", enabled=progress) as cb:
        result = checkpoint.train_segments(
            config, state, curve, checkpoints, every=every, memory=memory,
            progress=cb if (progress and the_plan.episodes) else None)
    timing.update(result.timing_s)
    if checkpoints is None:
        timing.pop("checkpoint")
    results = _results(args, config, result, start, every, the_plan, estimate, memory)
    if args.json:
        report.write_json(args.json, report.make_report(config, results, timing))
    _print_summary(args, config, results, timing)
    return 0


def _say_plan(args: argparse.Namespace, config: MARLConfig, the_plan: Any, start: int,
              checkpoints: Any, memory: dict[str, Any], timing: dict[str, float],
              ) -> tuple[int | None, dict[str, Any] | None]:
    """Print the run's plan (its duration estimate when asked or long, the memory line, the
    checkpoint period); returns the period (episodes; None without checkpoints) and the
    estimate (None when not made). The estimate's compile seconds go into ``timing``."""
    import jax

    from jaxrl_pim import runner
    from jaxrl_pim.marl import plan

    estimate_on = args.estimate
    if estimate_on is None:
        estimate_on = the_plan.transitions >= plan.LONG_RUN_TRANSITIONS
    estimate = None
    if estimate_on and the_plan.episodes:
        estimate = plan.estimate_seconds(config, the_plan, jax.random.PRNGKey(args.seed))
        timing["estimate"] = estimate["compile_s"]
    lines = plan.describe(config, the_plan, estimate)
    if memory["capacity_auto"]:
        lines.append(plan.auto_line(memory))
    every = None
    if checkpoints is not None:
        every = args.checkpoint_every or runner.default_every(config.num_episodes)
        lines.append(
            f"checkpoints: every {every:,} episode{'' if every == 1 else 's'} and at the end in "
            f"{args.checkpoint} "
            f"(newest 3 kept, {plan.human_bytes(plan.state_bytes(config))} each)"
            + (f"; resuming after episode {start:,}" if start else
               ("; no checkpoint yet: starting at episode 0" if args.resume else "")))
    for line in lines:
        print(line, file=sys.stderr if line.startswith("warning") else sys.stdout, flush=True)
    return every, estimate


def _results(args: argparse.Namespace, config: MARLConfig, result: Any, start: int,
             every: int | None, the_plan: Any, estimate: dict[str, Any] | None,
             memory: dict[str, Any]) -> dict[str, Any]:
    """The report's results: final returns per team (mean of the last tenth of the
    episodes), the learning curve at every 1 %, the last losses, the checkpoints, the plan."""
    import numpy as np

    state = result.state
    returns = result.curve  # episode_return [episodes, teams]: the whole run, also before a resume
    total = returns.shape[0]
    tail = max(1, total // 10)
    team_names = [t.name for t in config.teams]
    final = returns[-tail:].mean(axis=0) if total else np.full(len(team_names), np.nan)
    return {
        "teams": team_names,
        "start_episode": start,
        "episodes_trained": total - start,
        "episodes_total": int(state.episode),
        "update_rounds": int(state.num_updates),
        "final_return": {n: float(v) for n, v in zip(team_names, final, strict=True)},
        "final_return_window": tail,
        "episode_return_every_1pct": returns[:: max(1, total // 100)].tolist(),
        "last_critic_loss": np.asarray(state.losses[:, 0]).tolist(),
        "last_actor_loss": np.asarray(state.losses[:, 1]).tolist(),
        "checkpoint_dir": args.checkpoint,
        "checkpoint_every": every,
        "checkpoints_written": result.checkpoints_written,
        "resumed_from_episode": start if args.resume else None,
        "seed": args.seed,
        "plan": the_plan._asdict(),
        "duration_estimate": estimate,
        "memory": memory,
    }


def _print_summary(args: argparse.Namespace, config: MARLConfig, results: dict[str, Any],
                   timing: dict[str, float]) -> None:
    """The run's one-line summary: episodes, update rounds, final returns, train seconds."""
    summary = ", ".join(f"{n} {v:.2f}" for n, v in results["final_return"].items())
    world = (f"agents={config.num_agents}" if config.env == "spread" else
             f"agents={config.total_agents}" if config.is_jaxmarl else
             "predators={} prey={} obstacles={}".format(*config.tag_sizes))
    print(
        f"marl {args.algo} {args.env} {world}: episodes {results['start_episode']}->"
        f"{results['episodes_total']}, updates {results['update_rounds']}, mean return "
        f"(last {results['final_return_window']} eps) {summary}; "
        f"train {timing['train']:.1f} s (compile {timing['compile']:.1f} s)"
    )
