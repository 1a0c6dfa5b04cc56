"""``jaxrl-pim tabular``: collect or load a dataset, train on lanes, evaluate, report.

The data come from a built-in environment (``--env``: collected with a uniform-random
policy, or read from ``--dataset``), or from a file of your own MDP (``--dataset FILE
--num-states S --num-actions A [--terminal-states LIST]``), which is trained on but not
evaluated (no environment is known; the report says so).

With ``--checkpoint DIR`` the run is saved every ``--checkpoint-every`` sync rounds (about
10 % of the rounds by default) and at its end; ``--resume`` continues from the newest
checkpoint, refusing one of another configuration, and ends with the table an uninterrupted
run gives, bit for bit (see :mod:`jaxrl_pim.tabular.runner`).

With ``--coordinator HOST:PORT --num-processes N --process-id I`` (or inside a SLURM / Open
MPI job of several tasks) the command is one process of a multi-process run: every process
collects only its own lanes' rows (or reads the dataset file and keeps its lanes' rows), the
lanes train on one mesh over all processes' devices, and process 0 alone evaluates and
writes the report and the Q-table (see :mod:`jaxrl_pim.distributed` and
:mod:`jaxrl_pim.cli.launch`); every process takes part in the checkpoint saves, which orbax
writes from process 0.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from jaxrl_pim import pim, run_record
from jaxrl_pim.checks import INT32_MAX
from jaxrl_pim.cli import _common as common
from jaxrl_pim.cli import launch
from jaxrl_pim.distributed import describe_lost_peer
from jaxrl_pim.tabular.config import ALGOS, FORMATS, RNGS, SAMPLINGS, TabularConfig

# The module imports no jax at its top (TabularConfig and the option names need none): the
# options are parsed and their cheap checks run (counts, combinations of flags, output paths)
# before jax is imported, so a bad option is refused within a second.
ENVS = ("frozenlake", "taxi", "cliffwalking")
PROG = "jaxrl-pim tabular"
DEFAULT_ENV = "frozenlake"
#: TabularConfig fields -> the flags that set them (errors name what the user typed).
FLAGS = {"num_cores": "--cores", "sync_period": "--sync-period", "num_episodes": "--episodes",
         "num_states": "--num-states", "num_actions": "--num-actions"}
#: The command's defaults that differ from TabularConfig's, and why: the command runs
#: SwiftRL's headline format, INT32 fixed point (the library's own default is fp32).
COMMAND_DEFAULTS: dict[str, Any] = {"dtype": "int32"}
_DEFAULT = common.config_defaults(TabularConfig, **COMMAND_DEFAULTS)


def register(subparsers: Any) -> None:
    """Add the ``tabular`` sub-command."""
    d = argparse.Namespace(**_DEFAULT)
    p = common.add_command(
        subparsers, "tabular", main,
        description="Collect (or load) an offline dataset, train one Q-table per lane with "
        "periodic averaging, evaluate the greedy policy and print the time breakdown. A "
        "dataset of your own MDP: --dataset FILE --num-states S --num-actions A.")
    _add_task(p, d)
    _add_lanes(p, d)
    _add_output(p)
    _add_own_mdp(p)
    common.add_checkpoint_arguments(
        p, unit="ROUNDS",
        folder="folder of the run's checkpoints (orbax, written atomically, the newest 3 "
        "kept) (default: none)",
        period="sync rounds between checkpoints (default: about 10%% of the rounds, "
        "ceil(rounds / 10))",
        resume="continue from the newest checkpoint in --checkpoint (same options required; "
        "an empty folder starts from round 0)")
    launch.add_arguments(p)


def _add_task(p: argparse.ArgumentParser, d: argparse.Namespace) -> None:
    """The ``environment and algorithm`` options: where the data come from, the update, the
    table's format."""
    task = p.add_argument_group("environment and algorithm")
    task.add_argument("--env", choices=ENVS, default=None,
                      help="environment that collects the dataset, sets S and A and evaluates "
                      f"the policy (default: {DEFAULT_ENV}; none with --num-states)")
    task.add_argument("--algo", choices=ALGOS, default=d.algo,
                      help="q: Q-learning (bootstrap max_a' Q[s', a']); sarsa: a' "
                      "epsilon-greedy (epsilon 0.1) on the current table at s'")
    task.add_argument("--sampling", choices=SAMPLINGS, default=d.sampling,
                      help="rows of a lane's chunk per episode: seq in order, ran uniform with "
                      "replacement, str with stride 4")
    task.add_argument("--dtype", choices=FORMATS, default=d.dtype,
                      help="Q-table format (int32: fixed point, values x 10,000)")


def _add_lanes(p: argparse.ArgumentParser, d: argparse.Namespace) -> None:
    """The ``lanes and schedule`` options: lanes, sync rounds, episodes, data size, seed,
    agents, random numbers, devices."""
    lanes = p.add_argument_group("lanes and schedule")
    lanes.add_argument("--cores", type=int, default=d.num_cores,
                       help="lanes (PIM cores); the dataset is split into this many "
                       "contiguous chunks")
    lanes.add_argument("--sync-period", type=int, default=d.sync_period,
                       help="episodes between lane averages (one sync round)")
    lanes.add_argument("--episodes", type=int, default=d.num_episodes,
                       help="episodes; one episode is one pass of every lane over its chunk")
    lanes.add_argument("--transitions", type=int, default=1_000_000,
                       help="dataset rows to collect (per agent with --agents)")
    lanes.add_argument("--seed", type=int, default=0,
                       help="seed of the dataset collection, the training key and the "
                       "evaluation episodes")
    lanes.add_argument("--agents", type=int, default=None, metavar="K",
                       help="independent multi-agent mode: K agents, one lane and one "
                       "collected dataset each, never averaged (default: off)")
    lanes.add_argument("--rng", choices=RNGS, default=d.rng,
                       help="random numbers of ran sampling and SARSA: jax (threefry, per lane "
                       "and episode) or lcg (the PIM generator, seed 42 per lane)")
    lanes.add_argument("--devices", type=int, default=None,
                       help="devices to use (default: the most visible devices that divide "
                       "--cores)")


def _add_output(p: argparse.ArgumentParser) -> None:
    """The ``evaluation and output`` options: greedy episodes, Q-table, PIM projection,
    report, progress bar."""
    out = p.add_argument_group("evaluation and output")
    out.add_argument("--eval-episodes", type=int, default=1000,
                     help="greedy evaluation episodes (with an environment)")
    out.add_argument("--save-q", type=Path, default=None, metavar="PATH",
                     help="write the final float32 Q-table as .npy (default: not written)")
    out.add_argument("--pim-estimate", choices=pim.SYSTEM_NAMES, default=None,
                     help="also print the run's time breakdown projected onto a PIM system "
                     "(jaxrl_pim.pim cost model) next to the measured one; --json stores it "
                     "under results.pim_estimate (default: not projected)")
    common.add_json_argument(out, "write the JSON report here (default: not written)",
                             path=True)
    common.add_progress_argument(out, "progress bar per sync round on stderr (default: on "
                                 "when stdout and stderr are terminals)")


def _add_own_mdp(p: argparse.ArgumentParser) -> None:
    """The ``a dataset of your own MDP`` options: the file and its MDP's sizes."""
    own = p.add_argument_group(
        "a dataset of your own MDP",
        "train on a file for an MDP that is not built in; without an environment the policy "
        "is not evaluated (the report says so); evaluate the --save-q table yourself")
    own.add_argument("--dataset", type=Path, default=None, metavar="FILE",
                     help=".npz (data.save_npz) or text, one transition per line "
                     "\"s a r s' [terminated]\" (default: collect from --env)")
    own.add_argument("--num-states", type=int, default=None, metavar="S",
                     help="states of the dataset's MDP, 0 .. S-1 (default: from --env)")
    own.add_argument("--num-actions", type=int, default=None, metavar="A",
                     help="actions of the dataset's MDP, 0 .. A-1, at most 255 (default: "
                     "from --env)")
    own.add_argument("--terminal-states", default=None, metavar="LIST",
                     help="comma-separated states that end an episode, for a four-column text "
                     "file: rows whose s' is one of them do not bootstrap (default: none, or "
                     "--env's)")


def _check_mdp_flags(args: argparse.Namespace) -> None:
    """The flags that describe the MDP go together (checked before any import)."""
    own = args.num_states is not None or args.num_actions is not None
    if own:
        if args.num_states is None or args.num_actions is None:
            raise ValueError("give both --num-states and --num-actions")
        if args.dataset is None:
            raise ValueError("--num-states/--num-actions describe a --dataset file; without "
                             "one the data are collected from --env")
    if args.terminal_states is not None and (args.env is not None or not own):
        raise ValueError("--terminal-states goes with --num-states/--num-actions (a dataset "
                         "of your own MDP); an environment gives its own terminal states")
    if args.terminal_states is not None:
        _terminal_mask(args.terminal_states, args.num_states)
    if args.dataset is not None and args.dataset.is_dir():  # (a missing file: when read)
        raise ValueError(f"--dataset {args.dataset}: is a folder; give a dataset file (.npz or "
                         "text)")


def _mdp(args: argparse.Namespace):
    """``(env name or None, env, env_params, model or None, S, A, terminal mask or None)``."""
    _check_mdp_flags(args)
    own = args.num_states is not None or args.num_actions is not None
    name = args.env if args.env is not None or own else DEFAULT_ENV
    if name is None:
        s, a = args.num_states, args.num_actions
        return None, None, None, None, s, a, _terminal_mask(args.terminal_states, s)
    from jaxrl_pim import envs  # gymnax's import runs jax code: only after joining the run

    env, env_params = envs.make(name)
    model = envs.tabular_model(env)
    if own and (args.num_states, args.num_actions) != (model.num_states, model.num_actions):
        raise ValueError(f"--env {name} has {model.num_states} states and {model.num_actions} "
                         f"actions, not --num-states {args.num_states} --num-actions "
                         f"{args.num_actions}")
    return (name, env, env_params, model, model.num_states, model.num_actions,
            model.terminal_states)


def _terminal_mask(text: str | None, num_states: int) -> np.ndarray | None:
    if text is None:
        return None
    try:
        states = [int(x) for x in text.replace(" ", "").split(",") if x]
    except ValueError:
        raise ValueError(f"--terminal-states must be comma-separated integers, got {text!r}"
                         ) from None
    bad = [x for x in states if not 0 <= x < num_states]
    if bad:
        raise ValueError(f"--terminal-states {bad[0]} is not a state 0 .. {num_states - 1}")
    mask = np.zeros(num_states, bool)
    mask[states] = True
    return mask


def _fingerprint(config: TabularConfig, args: argparse.Namespace, env_name: str | None,
                 ) -> dict[str, Any]:
    """What a checkpoint must match: the trainer's config, the data and the training seed."""
    if args.dataset is not None:
        digest = hashlib.sha256()
        with open(args.dataset, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
        source: dict[str, Any] = {"dataset_sha256": digest.hexdigest(),
                                  "terminal_states": args.terminal_states}
    else:
        source = {"transitions": args.transitions, "agents": args.agents}
    from jaxrl_pim.checkpoint import fingerprint

    return fingerprint(config, env=env_name, seed=args.seed, **source)


def _known_fingerprint(args: argparse.Namespace) -> dict[str, Any]:
    """The part of :func:`_fingerprint` the options give before the MDP is built (no jax):
    the config fields taken as typed, the seed and the collected dataset's size."""
    independent = args.agents is not None
    config = {"algo": args.algo, "sampling": args.sampling, "dtype": args.dtype,
              "rng": args.rng, "sync_period": args.sync_period, "num_episodes": args.episodes,
              "num_cores": args.agents if independent else args.cores,
              "independent": independent}
    source = {} if args.dataset is not None else {"transitions": args.transitions,
                                                  "agents": args.agents}
    return {"config": config, "seed": args.seed, **source}


class _Data(NamedTuple):
    """The training rows and what the report says of them."""

    transitions: Any  # data.Transitions (or one per agent with --agents)
    num_rows: int | None  # rows of the whole dataset when this process holds only its own
    source: str  # where the rows came from, for the report
    dataset_rows: int  # rows of the whole dataset
    collect_s: float  # seconds spent collecting or reading them


def main(args: argparse.Namespace) -> int:
    """Run the command; returns the exit status."""
    flags = _check_options(args)  # before jax: a bad option never costs the imports
    import jax

    from jaxrl_pim.tabular.runner import process_lanes, run_mesh

    procs = launch.initialize_from_args(args, PROG)  # before any jax work
    env_name, env, env_params, model, num_states, num_actions, terminal = _mdp(args)
    config = _config(args, num_states, num_actions, flags)
    _check_memory(config, args, flags["num_cores"], jax.local_device_count())
    run_fp = _resumed_fingerprint(config, args, env_name, flags)
    k_data, k_train, k_eval = jax.random.split(jax.random.key(args.seed), 3)
    t0 = time.perf_counter()
    common.check_ranges({"--devices": (args.devices, 1, len(jax.devices()))})
    with common.flag_names(flags):
        lanes = process_lanes(config, run_mesh(config, args.devices))
    data = _collect(args, config, env, env_params, terminal, k_data, lanes, t0)
    checkpoints = _open_checkpoints(args, config, env_name, run_fp)
    # the step a resume will use, read by every process (orbax's reads wait for all of them)
    resume_from = _newest_intact(checkpoints) if checkpoints is not None and args.resume \
        else None
    if procs.is_main:
        _print_size(config, data.dataset_rows, checkpoints, args, resume_from)
    if procs.count > 1:
        print(f"process {procs.index} of {procs.count}: lanes {lanes[0]}..{lanes[1] - 1} of "
              f"{config.num_cores}; training", file=sys.stderr, flush=True)
    result = _train(args, config, data, k_train, checkpoints, procs, flags)
    if not procs.is_main:
        print(f"process {procs.index} of {procs.count}: done; process 0 evaluates and writes "
              "the results", file=sys.stderr, flush=True)
        return 0
    results, timing = _results(args, config, env_name, env, env_params, model, data, result,
                               k_eval)
    _write_outputs(args, config, data, result, results, timing)
    return 0


def _check_options(args: argparse.Namespace) -> dict[str, str]:
    """The cheap checks and every output path, before jax is imported; returns the flag
    names of the config's fields (:data:`FLAGS`, ``num_cores`` as ``--agents`` with it)."""
    if args.eval_episodes < 1:
        raise ValueError(f"--eval-episodes must be >= 1, got {args.eval_episodes}")
    for flag, count in (("--transitions", args.transitions), ("--cores", args.cores),
                        ("--sync-period", args.sync_period), ("--episodes", args.episodes),
                        ("--agents", args.agents), ("--devices", args.devices),
                        ("--num-states", args.num_states),
                        ("--num-actions", args.num_actions)):
        if count is not None:
            _positive(flag, count)
    # int32 episode, round and row indices in the trainer; the rest fails later (or never)
    common.check_ranges({flag: (value, 1, INT32_MAX) for flag, value in (
        ("--episodes", args.episodes), ("--sync-period", args.sync_period),
        ("--transitions", args.transitions), ("--cores", args.cores),
        ("--agents", args.agents), ("--devices", args.devices),
        ("--eval-episodes", args.eval_episodes), ("--checkpoint-every", args.checkpoint_every))})
    common.check_seed(args.seed)
    if args.agents is None and args.dataset is None and args.cores > args.transitions:
        raise ValueError(f"--cores {args.cores} exceeds the dataset size (--transitions "
                         f"{args.transitions}): every lane needs at least one transition")
    _check_mdp_flags(args)
    common.check_checkpoint_arguments(args)
    common.check_outputs(args, files={"--json": "json", "--save-q": "save_q"},
                  folders={"--checkpoint": "checkpoint"})
    flags = dict(FLAGS, num_cores="--agents" if args.agents is not None else "--cores")
    if args.checkpoint is not None and args.resume:  # another run's folder, before jax
        with common.flag_names(flags):
            run_record.check_folder(args.checkpoint, "--checkpoint", "tabular",
                                    known=_known_fingerprint(args))
    return flags


def _config(args: argparse.Namespace, num_states: int, num_actions: int,
            flags: dict[str, str]) -> TabularConfig:
    """The trainer's config from the options (errors name the flags)."""
    independent = args.agents is not None
    with common.flag_names(flags):
        return TabularConfig(
            num_states=num_states, num_actions=num_actions, algo=args.algo,
            sampling=args.sampling, dtype=args.dtype,
            num_cores=args.agents if independent else args.cores,
            sync_period=args.sync_period, num_episodes=args.episodes, rng=args.rng,
            independent=independent,
        )


def _resumed_fingerprint(config: TabularConfig, args: argparse.Namespace,
                         env_name: str | None, flags: dict[str, str]) -> dict[str, Any] | None:
    """With ``--resume`` into an existing folder: the run's fingerprint, checked against the
    folder's before the data are collected (a difference named by its flag); else None (the
    fingerprint hashes a dataset file, so it is read only when needed)."""
    if args.checkpoint is None or not args.resume or not Path(args.checkpoint).is_dir():
        return None
    from jaxrl_pim.checkpoint import Checkpoints

    run_fp = _fingerprint(config, args, env_name)
    with common.flag_names(flags), Checkpoints(args.checkpoint, fingerprint=run_fp) as folder:
        folder.check_record()
    return run_fp


def _open_checkpoints(args: argparse.Namespace, config: TabularConfig, env_name: str | None,
                      run_fp: dict[str, Any] | None) -> Any:
    """The run's checkpoint folder (None without ``--checkpoint``), with the fingerprint
    :func:`_resumed_fingerprint` checked (else the run's, made now)."""
    if args.checkpoint is None:
        return None
    from jaxrl_pim.checkpoint import Checkpoints

    return Checkpoints(args.checkpoint, keep=3, fingerprint=run_fp if run_fp
                       is not None else _fingerprint(config, args, env_name))


def _collect(args: argparse.Namespace, config: TabularConfig, env: Any, env_params: Any,
             terminal: np.ndarray | None, k_data: Any, lanes: tuple[int, int],
             t0: float) -> _Data:
    """The training rows: ``--dataset`` read, or collected by a uniform-random policy (one
    dataset per agent with ``--agents``); this process's lanes' rows only."""
    from jaxrl_pim import data as data_lib
    from jaxrl_pim.tabular.runner import process_rows

    if args.dataset is not None:
        if config.independent:
            raise ValueError("--dataset holds one dataset; --agents collects one per agent")
        transitions = data_lib.load(args.dataset, config.num_states, config.num_actions,
                                    terminal_states=terminal)
        return _Data(transitions, None, str(args.dataset), transitions.num_rows,
                     time.perf_counter() - t0)
    if config.independent:
        n = _positive("--transitions", args.transitions)
        transitions = data_lib.collect_per_agent(env, env_params, k_data, config.num_cores, n,
                                                 agents=lanes)
        return _Data(transitions, config.num_cores,
                     f"collected, uniform random, {config.num_cores} x {args.transitions} rows",
                     config.num_cores * n, time.perf_counter() - t0)
    m = _positive("--transitions", args.transitions)
    transitions = data_lib.collect(env, env_params, k_data, m,
                                   rows=process_rows(config, m, lanes))
    return _Data(transitions, m, f"collected, uniform random, {args.transitions} rows", m,
                 time.perf_counter() - t0)


def _train(args: argparse.Namespace, config: TabularConfig, data: _Data, k_train: Any,
           checkpoints: Any, procs: Any, flags: dict[str, str]) -> Any:
    """The lanes trained (:func:`jaxrl_pim.tabular.runner.run`), with the progress bar on
    process 0; a lost peer of a multi-process run ends the command with one line."""
    import jax

    from jaxrl_pim.progress import RichProgress
    from jaxrl_pim.tabular.runner import run

    show = common.show_progress(args.progress, sys.stdout, sys.stderr)
    with RichProgress("sync rounds", enabled=show and procs.is_main) as progress, \
            common.flag_names(flags):
        # every process runs the same program: the others pass a callback that does nothing
        callback = (progress if procs.is_main else _ignore) if show else None
        try:
            return run(config, data.transitions, k_train, args.devices, callback=callback,
                       num_rows=data.num_rows, checkpoints=checkpoints,
                       checkpoint_every=args.checkpoint_every, resume=args.resume)
        except jax.errors.JaxRuntimeError as err:
            if procs.count == 1:
                raise
            launch.fail(PROG, describe_lost_peer(err))
        finally:
            if checkpoints is not None:
                checkpoints.close()


def _results(args: argparse.Namespace, config: TabularConfig, env_name: str | None,
             env: Any, env_params: Any, model: Any, data: _Data, result: Any, k_eval: Any,
             ) -> tuple[dict[str, Any], dict[str, float]]:
    """The report's results and timings (s): the run's, and the greedy policy's evaluation
    next to the optimal policy's where an environment is known."""
    from jaxrl_pim.tabular.runner import describe

    results: dict[str, Any] = {
        **describe(config),
        "env": env_name,
        "dataset": data.source,
        "dataset_rows": data.dataset_rows,
        "dropped_rows": result.dropped_rows,
        "devices": result.num_devices,
        "processes": result.num_processes,
    }
    timing = {"collect": data.collect_s, **result.timing_s}
    if env is not None:
        t_eval = time.perf_counter()
        results.update(_evaluation(args, config, env, env_params, model, result, k_eval))
        timing["evaluate"] = time.perf_counter() - t_eval
    else:
        results["evaluation"] = ("skipped: no environment or model is known for a dataset "
                                 "given with --num-states/--num-actions (evaluate the --save-q "
                                 "table against your own model)")
    results.update({
        "updates": result.updates,
        "updates_per_s": result.updates_per_s,
        "q_delta_last": float(result.curve[-1]),
    })
    if args.checkpoint is not None:
        results.update({"checkpoint_dir": str(args.checkpoint),
                        "resumed_from_round": result.start,
                        "checkpoints_written": result.checkpoints_written})
    return results, timing


def _evaluation(args: argparse.Namespace, config: TabularConfig, env: Any, env_params: Any,
                model: Any, result: Any, k_eval: Any) -> dict[str, Any]:
    """The greedy policy's ``--eval-episodes`` (of the agents' mean table with ``--agents``)
    next to the optimal policy's (value iteration on ``model``)."""
    from jaxrl_pim.tabular.evaluate import evaluate, optimal_value, value_iteration

    q_eval = result.q_table.mean(axis=0) if config.independent else result.q_table
    ev = evaluate(env, env_params, q_eval, k_eval, args.eval_episodes)
    q_star = value_iteration(model, config.gamma)
    opt = evaluate(env, env_params, q_star, k_eval, args.eval_episodes)
    out = {
        "mean_return": ev.mean_return,
        "std_return": ev.std_return,
        "success_rate": ev.success_rate,
        "optimal_mean_return": opt.mean_return,
        "optimal_success_rate": opt.success_rate,
        "optimal_value_discounted": optimal_value(model, q_star),
    }
    if config.independent:
        out["evaluated"] = "mean of the agents' Q-tables"
    return out


def _write_outputs(args: argparse.Namespace, config: TabularConfig, data: _Data, result: Any,
                   results: dict[str, Any], timing: dict[str, float]) -> None:
    """The table, the ``--pim-estimate`` projection, ``--save-q`` and ``--json``."""
    import jax
    from rich.console import Console

    from jaxrl_pim.report import atomic_save, make_report, write_json

    _print_table(config, results, timing)
    if args.pim_estimate is not None:
        measured_on = (f"JAX on {jax.default_backend()} ({jax.devices()[0].device_kind}, "
                       f"{result.num_devices} device(s))")
        results["pim_estimate"] = _pim_estimate(config, data.dataset_rows, args.pim_estimate,
                                                timing, measured_on)
    if args.save_q is not None:
        def save_q(tmp: str) -> None:  # to the open file: np.save would add .npy to a name
            with open(tmp, "wb") as fh:
                np.save(fh, result.q_table.astype(np.float32))

        atomic_save(args.save_q, save_q)
    if args.json is not None:
        write_json(args.json, make_report(config, results, timing))
        Console(stderr=True).print(f"report written to {args.json}")


def _pim_estimate(config: TabularConfig, num_rows: int, name: str,
                  measured: dict[str, float], measured_on: str) -> dict[str, Any]:
    """``--pim-estimate NAME``: print the run's phases projected on that system next to the
    measured ``timing`` (seconds, run on ``measured_on``), then the projection's basis
    (:func:`jaxrl_pim.pim.sensitivity.projection_notes`: the device of the measured column,
    DPUs used of the system's, instructions and cycles per update, the largest phase and the
    parameter it depends on), and return what the report stores under
    ``results.pim_estimate`` (the system's name and parameters, the projected phases in
    seconds, their counted work, the notes and the largest phase)."""
    system = pim.get_system(name)
    est = pim.estimate(config, num_rows, system)
    notes = pim.sensitivity.projection_notes(config, num_rows, system, measured_on)
    print(f"Projected on {name} (jaxrl_pim.pim: a cost model, not a measurement; "
          "docs/pim.md):")
    print(pim.side_by_side(measured, est))
    print("\n".join(notes))
    return {"system": name, "parameters": system.as_dict(), **est.as_dict(),
            "measured_on": measured_on, "notes": notes,
            "largest_phase": pim.largest_phase(config, num_rows, system)}


def _print_size(config: TabularConfig, dataset_rows: int, checkpoints: Any,
                args: argparse.Namespace, newest: int | None = None) -> None:
    """One line on stderr before training: the run's size in updates and sync rounds."""
    rows = dataset_rows // config.num_cores  # per lane (per agent in independent mode)
    updates = config.num_cores * rows * config.num_episodes
    line = (f"{PROG}: {config.num_cores:,} lanes x {rows:,} rows x {config.num_episodes:,} "
            f"episodes = {updates:.3g} updates in {config.num_rounds:,} sync rounds")
    if checkpoints is not None:
        from jaxrl_pim.runner import default_every

        every = args.checkpoint_every or default_every(config.num_rounds)
        line += f"; a checkpoint every {every} rounds in {args.checkpoint}"
        if args.resume:
            line += (f", resuming after round {newest}" if newest is not None
                     else ", no checkpoint yet: starting at round 0")
    print(line, file=sys.stderr, flush=True)


def _newest_intact(checkpoints: Any) -> int | None:
    """The step a resume will restore: the newest whose files verify and whose record reads
    (a damaged newer one is named when the run restores)."""
    from jaxrl_pim.checkpoint import Damaged

    for step in reversed(checkpoints.steps()):
        try:
            checkpoints.verify(step)
            checkpoints.record(step)
        except Damaged:
            continue
        return step
    return None


def _ignore(*args: Any) -> None:
    """The progress callback of processes other than 0."""


#: Bytes of one collected transition on the device, at least: state and next state (int32),
#: reward (float32), action and terminal flag (one byte each).
_ROW_BYTES = 14


def _check_memory(config: TabularConfig, args: argparse.Namespace, lanes_flag: str,
                  devices: int) -> None:
    """Refuses a run whose Q-tables (one per lane: ``num_cores x S x A`` in the table's format),
    per-round records and collected rows do not fit in memory, before anything is allocated
    (:func:`~jaxrl_pim.cli._common.check_fits_memory`). A sync round keeps a float32
    ``q_delta`` on each of the ``devices``, in the scan's output and on the host, and its
    int32 index: ``4 x (3 + devices)`` bytes."""
    table = config.num_states * config.num_actions * np.dtype(config.format.storage).itemsize
    rows = 0 if args.dataset is not None else args.transitions * (args.agents or 1)
    per_round = 4 * (3 + devices) * config.num_rounds
    needed = config.num_cores * table + per_round + _ROW_BYTES * rows
    flag = lanes_flag
    if per_round > config.num_cores * table:
        flag = "--episodes"  # the per-round records dominate
    elif _ROW_BYTES * rows > config.num_cores * table:
        flag = "--transitions"
    common.check_fits_memory(flag, needed, f"the run ({config.num_cores:,} Q-tables of "
                      f"{config.num_states:,} x {config.num_actions} and "
                      f"{config.num_rounds:,} sync rounds)")


def _positive(name: str, value: int) -> int:
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {value}")
    return value


def _print_table(config: TabularConfig, results: dict, timing: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    where = results["env"] or f"your MDP ({config.num_states} x {config.num_actions})"
    table = Table(title=f"{results['variant']} on {where}, {config.num_cores} lanes, "
                  f"sync every {config.sync_period}, {config.num_episodes} episodes")
    table.add_column("quantity")
    table.add_column("value", justify="right")
    if "mean_return" in results:
        table.add_row("mean return (greedy)", f"{results['mean_return']:.4f}")
        table.add_row("success rate", f"{results['success_rate']:.3f}")
        table.add_row("optimal policy return", f"{results['optimal_mean_return']:.4f}")
    else:
        table.add_row("evaluation", "skipped (no environment)")
    table.add_row("updates/s", f"{results['updates_per_s']:.3e}")
    for phase, sec in timing.items():
        table.add_row(f"time: {phase} (s)", f"{sec:.3f}")
    Console().print(table)
