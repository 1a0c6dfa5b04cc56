"""``jaxrl-pim tabular``: collect or load a dataset, train on lanes, evaluate, report.

With ``--coordinator HOST:PORT --num-processes N --process-id I`` (or inside a SLURM / Open
MPI job of several tasks) the command is one process of a multi-process run: every process
collects only its own lanes' rows (or reads the dataset file and keeps its lanes' rows), the
lanes train on one mesh over all processes' devices, and process 0 alone evaluates and
writes the report and the Q-table (see :mod:`jaxrl_pim.distributed`).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import jax
import numpy as np
from rich.console import Console
from rich.table import Table

from jaxrl_pim import data as data_lib
from jaxrl_pim import distributed
from jaxrl_pim.progress import RichProgress
from jaxrl_pim.report import atomic_save, make_report, write_json
from jaxrl_pim.tabular.evaluate import evaluate, optimal_value, value_iteration
from jaxrl_pim.tabular.formats import FORMATS
from jaxrl_pim.tabular.runner import describe, process_lanes, process_rows, run, run_mesh
from jaxrl_pim.tabular.sampling import SAMPLINGS
from jaxrl_pim.tabular.trainer import ALGOS, TabularConfig

ENVS = ("frozenlake", "taxi", "cliffwalking")
PROG = "jaxrl-pim tabular"


def register(subparsers: Any) -> None:
    """Add the ``tabular`` sub-command."""
    p = subparsers.add_parser(
        "tabular",
        help="offline tabular Q-learning / SARSA on vmapped lanes (SwiftRL)",
        description="Collect (or load) an offline dataset, train one Q-table per lane with "
        "periodic averaging, evaluate the greedy policy and print the time breakdown.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--env", choices=ENVS, default="frozenlake")
    p.add_argument("--algo", choices=ALGOS, default="q")
    p.add_argument("--sampling", choices=SAMPLINGS, default="seq")
    p.add_argument("--dtype", choices=FORMATS, default="int32")
    p.add_argument("--cores", type=int, default=2000, help="lanes (PIM cores)")
    p.add_argument("--sync-period", type=int, default=50, help="episodes between averages")
    p.add_argument("--episodes", type=int, default=2000)
    p.add_argument("--transitions", type=int, default=1_000_000,
                   help="dataset rows to collect (per agent with --agents)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--agents", type=int, default=None,
                   help="independent multi-agent mode: K agents, one lane and dataset each")
    p.add_argument("--dataset", type=Path, default=None,
                   help=".npz or four-column text file 's a r s'' to train on")
    p.add_argument("--rng", choices=("jax", "lcg"), default="jax")
    p.add_argument("--devices", type=int, default=None, help="devices to use (default all)")
    p.add_argument("--eval-episodes", type=int, default=1000)
    p.add_argument("--save-q", type=Path, default=None, help="write the final Q-table (.npy)")
    p.add_argument("--json", type=Path, default=None, help="write the JSON report here")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    distributed.add_arguments(p)
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    """Run the command; returns the exit status."""
    procs = distributed.initialize_from_args(args, PROG)  # before any jax work
    from jaxrl_pim import envs  # gymnax's import runs jax code, so only after that

    console = Console(stderr=True)
    env, env_params = envs.make(args.env)
    model = envs.tabular_model(env)
    independent = args.agents is not None
    config = TabularConfig(
        num_states=model.num_states, num_actions=model.num_actions, algo=args.algo,
        sampling=args.sampling, dtype=args.dtype,
        num_cores=args.agents if independent else args.cores,
        sync_period=args.sync_period, num_episodes=args.episodes, rng=args.rng,
        independent=independent,
    )
    if args.eval_episodes < 1:
        raise ValueError(f"--eval-episodes must be >= 1, got {args.eval_episodes}")
    key = jax.random.key(args.seed)
    k_data, k_train, k_eval = jax.random.split(key, 3)
    t0 = time.perf_counter()
    lanes = process_lanes(config, run_mesh(config, args.devices))
    num_rows = None  # set when this process collects only its own lanes' rows
    if args.dataset is not None:
        if independent:
            raise ValueError("--dataset holds one dataset; --agents collects one per agent")
        transitions = data_lib.load(args.dataset, model.num_states, model.num_actions,
                                    terminal_states=model.terminal_states)
        source = str(args.dataset)
        dataset_rows = transitions.num_rows
    elif independent:
        n = _positive("--transitions", args.transitions)
        transitions = data_lib.collect_per_agent(env, env_params, k_data, config.num_cores, n,
                                                 agents=lanes)
        num_rows = config.num_cores
        source = f"collected, uniform random, {config.num_cores} x {args.transitions} rows"
        dataset_rows = config.num_cores * n
    else:
        m = _positive("--transitions", args.transitions)
        num_rows = m
        transitions = data_lib.collect(env, env_params, k_data, m,
                                       rows=process_rows(config, m, lanes))
        source = f"collected, uniform random, {args.transitions} rows"
        dataset_rows = m
    collect_s = time.perf_counter() - t0

    if procs.count > 1:
        print(f"process {procs.index} of {procs.count}: lanes {lanes[0]}..{lanes[1] - 1} of "
              f"{config.num_cores}; training", file=sys.stderr, flush=True)
    show = not args.no_progress
    with RichProgress("sync rounds", enabled=None if show and procs.is_main else False) as progress:
        # every process runs the same program: the others pass a callback that does nothing
        callback = (progress if procs.is_main else _ignore) if show else None
        try:
            result = run(config, transitions, k_train, args.devices, callback=callback,
                         num_rows=num_rows)
        except jax.errors.JaxRuntimeError as err:
            if procs.count == 1:
                raise
            distributed.fail(PROG, distributed.describe_lost_peer(err))
    if not procs.is_main:
        print(f"process {procs.index} of {procs.count}: done; process 0 evaluates and writes "
              "the results", file=sys.stderr, flush=True)
        return 0

    q_eval = result.q_table.mean(axis=0) if independent else result.q_table
    ev = evaluate(env, env_params, q_eval, k_eval, args.eval_episodes)
    q_star = value_iteration(model, config.gamma)
    opt = evaluate(env, env_params, q_star, k_eval, args.eval_episodes)
    results = {
        **describe(config),
        "env": args.env,
        "dataset": source,
        "dataset_rows": dataset_rows,
        "dropped_rows": result.dropped_rows,
        "devices": result.num_devices,
        "processes": result.num_processes,
        "mean_return": ev.mean_return,
        "std_return": ev.std_return,
        "success_rate": ev.success_rate,
        "optimal_mean_return": opt.mean_return,
        "optimal_success_rate": opt.success_rate,
        "optimal_value_discounted": optimal_value(model, q_star),
        "updates": result.updates,
        "updates_per_s": result.updates_per_s,
        "q_delta_last": float(result.metrics["q_delta"][-1]),
    }
    if independent:
        results["evaluated"] = "mean of the agents' Q-tables"
    timing = {"collect": collect_s, **result.timing_s}
    _print_table(config, results, timing)
    if args.save_q is not None:
        atomic_save(args.save_q, lambda tmp: np.save(tmp, result.q_table.astype(np.float32)))
    if args.json is not None:
        write_json(args.json, make_report(config, results, timing))
        console.print(f"report written to {args.json}")
    return 0


def _ignore(*args: Any) -> None:
    """The progress callback of processes other than 0."""


def _positive(name: str, value: int) -> int:
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {value}")
    return value


def _print_table(config: TabularConfig, results: dict, timing: dict) -> None:
    table = Table(title=f"{results['variant']} on {results['env']}, {config.num_cores} lanes, "
                  f"sync every {config.sync_period}, {config.num_episodes} episodes")
    table.add_column("quantity")
    table.add_column("value", justify="right")
    table.add_row("mean return (greedy)", f"{results['mean_return']:.4f}")
    table.add_row("success rate", f"{results['success_rate']:.3f}")
    table.add_row("optimal policy return", f"{results['optimal_mean_return']:.4f}")
    table.add_row("updates/s", f"{results['updates_per_s']:.3e}")
    for phase, sec in timing.items():
        table.add_row(f"time: {phase} (s)", f"{sec:.3f}")
    Console().print(table)
