"""End to end against the frameworks users train with: whole training runs, side by side.

Each side trains the same task on the same schedule in its own process, one process at a
time: the library's own trainers (``benchmarks/peers/jaxrl_pim_run.py``, the project's
interpreter) and each opponent in its own virtual environment made by
``benchmarks/peers/setup.sh NAME`` (``.peers/NAME/``; never the project's install):

* **AgileRL** (PyTorch): MADDPG and MATD3 on mpe2's ``simple_spread_v3``, population of 1, no
  mutations, ``learn_step`` = the update period in env steps as AgileRL defines it;
* **BenchMARL** (TorchRL): MADDPG and MASAC on its PettingZoo ``simple_spread`` task on the CPU,
  frames per batch, optimiser steps, batch, memory size and initial random frames set to the
  schedule;
* **rejax** (JAX, gymnax) and **Stable-Baselines3** (PyTorch, gymnasium): DQN and PPO on
  CartPole and Acrobot, same network sizes, batch, update frequency and number of envs.

MARL schedule: the paper's (2x64 networks, batch 1,024, 1e6-row replay, learning after 25,600
transitions, an update round every 100 env steps, one env, 25-step episodes) at N = 3, 6, 12
agents; the warm-up before learning and ``measured_episodes`` after it are timed apart.
RL schedule: the library's DQN / PPO defaults (4 envs, 2x64 networks; DQN batch 64, train every
step, 10k replay, learning after 1,000 steps; PPO 128 steps per env per update, 4 epochs, 4
minibatches). Each opponent also runs once with its own defaults (a second row).

Every side's record (``benchmarks/peers/protocol.py``): versions, threads, start-up s (process
launch to ready, imports included), compile s (JAX; None for eager torch), warm-up and measured
env steps and seconds, steady-state env steps per second with learning on, wall s for the fixed
episodes, final return and a random policy's return in the side's own env, with its reward
convention named. Seeds per hour = ``seeds * 3600 / (startup_s + compile_s + wall_s)`` of the
run; the library runs its seeds vmapped in one call as well as one seed per call, opponents
one seed at a time.

Summary keys, per opponent, algorithm and N (or env): ``e2e_steps_per_s_ratio_vs_<opp>_<algo>_
<N>`` (library one seed / opponent, schedule-matched rows) and ``e2e_seeds_per_hour_ratio_vs_
<opp>_<algo>_<N>`` (library vmapped seeds / opponent; None where the vmapped run failed),
the same grouped for the headline table (``e2e_steps_per_s_ratio_vs_<opp>_<algo>_by_task``,
``e2e_seeds_per_hour_ratio_vs_<opp>_by_variant``); the worst of each family
(``e2e_steps_per_s_ratio_min``, ``e2e_seeds_per_hour_ratio_min``) and of both
(``e2e_ratio_vs_frameworks_min``, with the median). An opponent whose venv is missing is
recorded as not measured, with the command that makes it; its keys are None.

No venv (a bare GPU host): ``--peer-site NAME=DIR`` runs that side with this interpreter and
``PYTHONPATH=DIR:<repo root>``, DIR a ``pip install --target`` folder whose packages (and
versions, by ``importlib.metadata``) come first; a folder without NAME: not measured.

    bash benchmarks/peers/setup.sh agilerl   # (and benchmarl, rejax, sb3) once
    python benchmarks/e2e_frameworks.py [--publish]        # full: hours on 2 CPU cores
    python benchmarks/e2e_frameworks.py --quick            # N = 3 only, shorter runs
    python benchmarks/e2e_frameworks.py --smoke            # library side only, seconds
    python benchmarks/e2e_frameworks.py --opponents rejax sb3
    python benchmarks/e2e_frameworks.py --opponents rejax --peer-site rejax=/tmp/rejax_site
    python benchmarks/e2e_frameworks.py --list             # the planned runs; runs nothing
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, NamedTuple

if __package__ in (None, ""):  # run as python benchmarks/<name>.py: the package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import harness

PEERS_SCRIPTS = harness.ROOT / "benchmarks" / "peers"
#: the opponents' venvs (``setup.sh``'s default; ``JAXRL_PIM_PEERS`` or ``--peers`` elsewhere)
PEERS_DIR = harness.ROOT / ".peers"
LIBRARY = "jaxrl_pim"
#: opponent -> (kind, algorithms)
OPPONENTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "agilerl": ("marl", ("maddpg", "matd3")),
    "benchmarl": ("marl", ("maddpg", "masac")),
    "rejax": ("rl", ("dqn", "ppo")),
    "sb3": ("rl", ("dqn", "ppo")),
}
#: opponents that vmap seeds themselves (their seeds per hour: seeds vmapped in one call too)
VMAPS_SEEDS = ("rejax",)
RL_ENVS = {"cartpole": "CartPole-v1", "acrobot": "Acrobot-v1"}
#: the paper's MADDPG schedule (every MARL side is configured to it)
MARL_SCHEDULE = {"episode_length": 25, "num_envs": 1, "batch_size": 1024,
                 "buffer_capacity": 1_000_000, "learning_starts": 25_600, "update_every": 100,
                 "hidden": [64, 64], "lr": 0.01, "gamma": 0.95, "tau": 0.01}
#: the library's DQN / PPO defaults (every RL side is configured to them)
RL_SCHEDULE = {
    "dqn": {"num_envs": 4, "buffer_capacity": 10_000, "batch_size": 64, "learning_starts": 1_000,
            "train_frequency": 1, "target_update_interval": 250, "lr": 5e-4, "gamma": 0.99,
            "eps_start": 1.0, "eps_end": 0.05, "exploration_fraction": 0.3,
            "max_grad_norm": 10.0, "hidden": [64, 64]},
    "ppo": {"num_envs": 4, "num_steps": 128, "update_epochs": 4, "num_minibatches": 4,
            "lr": 2.5e-4, "gamma": 0.99, "gae_lambda": 0.95, "clip_eps": 0.2, "ent_coef": 0.01,
            "vf_coef": 0.5, "max_grad_norm": 0.5, "hidden": [64, 64]},
}


class Side(NamedTuple):
    """How to start one side: its interpreter and its program."""

    name: str
    python: Path
    script: Path
    #: why this side is not started (recorded as not measured), None to run it
    skip: str | None = None
    #: a ``--target`` folder put first on ``PYTHONPATH`` (``--peer-site``), None for a venv
    site: Path | None = None


def sizes(mode: str) -> dict[str, Any]:
    """Sizes for a mode (full, quick, smoke)."""
    if mode == "smoke":
        # one library process (MADDPG, N = 3, one seed): the RL sides' library runs are
        # left out (``library_kinds``), their opponents recorded as not measured
        return {"agents": [3], "measured_episodes": 4, "seeds": 1, "rl_envs": ["cartpole"],
                "marl_algos": ["maddpg"], "rl_algos": ["dqn"], "library_kinds": ["marl"],
                "marl_overrides": {"buffer_capacity": 4_096, "learning_starts": 100,
                                   "batch_size": 32, "update_every": 25},
                "rl_timesteps": {"dqn": 1_024, "ppo": 2_048},
                "rl_overrides": {"dqn": {"learning_starts": 256}, "ppo": {}},
                "random_episodes": 4, "timeout_s": 600}
    quick = mode == "quick"
    # full: 200 measured episodes (50 update rounds with learning on, enough for a steady
    # rate) and 4 vmapped seeds, so the 58 runs fit a working session on 2 cores; with 1,000
    # episodes and 8 seeds the opponents at 12 agents and the library's vmapped seeds took
    # it past 3 hours (an estimate from an interrupted run)
    return {"agents": [3] if quick else [3, 6, 12],
            "measured_episodes": 100 if quick else 200, "seeds": 4,
            "rl_envs": list(RL_ENVS), "marl_algos": None, "rl_algos": None,
            "library_kinds": ["marl", "rl"],
            "marl_overrides": {}, "rl_timesteps": {"dqn": 20_000 if quick else 50_000,
                                                   "ppo": 40_000 if quick else 100_000},
            "rl_overrides": {"dqn": {}, "ppo": {}}, "random_episodes": 20,
            "timeout_s": 1800 if quick else 7200}


def marl_spec(algo: str, agents: int, size: dict[str, Any], seeds: int = 1,
              defaults: bool = False) -> dict[str, Any]:
    """The spec of one MARL run (the schedule with the mode's overrides)."""
    return {"kind": "marl", "algo": algo, "agents": agents, "task": "simple_spread",
            **MARL_SCHEDULE, **size["marl_overrides"], "sampling_mode": "faithful",
            "measured_episodes": size["measured_episodes"], "seeds": seeds,
            "defaults": defaults, "random_episodes": size["random_episodes"]}


def rl_spec(algo: str, env: str, size: dict[str, Any], seeds: int = 1,
            defaults: bool = False) -> dict[str, Any]:
    """The spec of one DQN / PPO run (``env`` a key of :data:`RL_ENVS`)."""
    return {"kind": "rl", "algo": algo, "env": RL_ENVS[env], **RL_SCHEDULE[algo],
            **size["rl_overrides"][algo], "total_timesteps": size["rl_timesteps"][algo],
            "seeds": seeds, "defaults": defaults, "random_episodes": size["random_episodes"]}


def library_side() -> Side:
    """The library's own side: this interpreter and ``peers/jaxrl_pim_run.py``."""
    return Side(LIBRARY, Path(sys.executable), PEERS_SCRIPTS / "jaxrl_pim_run.py")


def opponent_side(name: str, peers: Path = PEERS_DIR) -> Side:
    """An opponent's side: its venv's interpreter and ``peers/<name>_run.py``."""
    return Side(name, peers / name / "bin" / "python", PEERS_SCRIPTS / f"{name}_run.py")


def add_site_option(ap: Any) -> None:
    """``--peer-site NAME=DIR`` (repeatable): an opponent run from a ``--target`` folder."""
    ap.add_argument("--peer-site", action="append", default=[], metavar="NAME=DIR",
                    help="run opponent NAME from a pip --target folder DIR instead of its "
                         "venv (repeatable; default: the venvs)")


def peer_sites(args: Any) -> dict[str, Path]:
    """``--peer-site`` as ``{name: folder}`` (``benchmarks/peers/sites.py``)."""
    from benchmarks.peers import sites

    try:
        return sites.parse_sites(getattr(args, "peer_site", None) or [], list(OPPONENTS))
    except ValueError as err:
        raise SystemExit(str(err)) from None


def opponent_sides(peers: Path, sites: dict[str, Path]) -> dict[str, Side]:
    """Every opponent's side: its venv under ``peers``, or where ``sites`` names a
    ``--peer-site`` folder, this interpreter with that folder first on ``PYTHONPATH``."""
    return {o: opponent_side(o, peers) if o not in sites else
            Side(o, Path(sys.executable), PEERS_SCRIPTS / f"{o}_run.py",
                 site=Path(sites[o]).resolve()) for o in OPPONENTS}


def setup_command(name: str) -> str:
    """The command that makes an opponent's venv."""
    return f"bash benchmarks/peers/setup.sh {name}"


def add_side_options(ap: Any) -> None:
    """``--threads`` and ``--peers``: the options of a script that starts the sides."""
    ap.add_argument("--threads", type=int, default=2,
                    help="BLAS / OpenMP / torch threads per side (default 2)")
    ap.add_argument("--peers", type=Path, default=None, metavar="DIR",
                    help="folder of the opponents' venvs (default: $JAXRL_PIM_PEERS or "
                         ".peers/ at the repository root)")


def peers_dir(args: Any) -> Path:
    """The opponents' venvs: ``--peers``, else ``$JAXRL_PIM_PEERS``, else ``.peers/``."""
    return args.peers or Path(os.environ.get("JAXRL_PIM_PEERS", PEERS_DIR))


def thread_env(threads: int) -> dict[str, str]:
    """The environment of a side's process: ``threads`` BLAS / OpenMP / torch threads."""
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[var] = str(threads)
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def run_side(side: Side, spec: dict[str, Any], threads: int,
             timeout_s: float) -> dict[str, Any]:
    """Run one side's program on ``spec`` in its own process and read its result line.

    Returns ``{"status": "measured", "record": {...}, "process_wall_s": s}``; ``status``
    ``"not measured"`` (with ``reason`` and ``setup_command``) where the side's interpreter
    is missing, ``"failed"`` (with the output's tail) where it ran without a result line.
    """
    from benchmarks.peers import protocol, sites

    env = thread_env(threads)
    if side.site is not None:  # a --target folder, first on the path, then the repository
        problem = side.skip or sites.site_problem(side.name, side.site)
        env["PYTHONPATH"] = os.pathsep.join([str(side.site), str(harness.ROOT)])
    else:
        problem = side.skip or (None if side.python.exists()
                                else f"no venv at {side.python.parents[1]}")
    if problem is not None:
        return {"status": "not measured", "reason": problem,
                "setup_command": setup_command(side.name)}
    launch = time.time()
    cmd = [str(side.python), str(side.script), "--spec", json.dumps(spec),
           "--launch-time", repr(launch)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s,
                              env=env, cwd=harness.ROOT)
    except subprocess.TimeoutExpired:
        return {"status": "failed", "reason": f"timed out after {timeout_s:.0f} s"}
    wall = time.time() - launch
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(protocol.MARKER)]
    if proc.returncode != 0 or not lines:
        tail = (proc.stdout[-1500:] + "\n" + proc.stderr[-2500:]).strip()
        return {"status": "failed", "reason": f"exit status {proc.returncode}",
                "output_tail": tail}
    record = json.loads(lines[-1][len(protocol.MARKER):])
    return {"status": "measured", "record": record, "process_wall_s": wall}


def seeds_per_hour(record: dict[str, Any]) -> float:
    """Seeds per hour of a run: ``seeds * 3600 / (startup_s + compile_s + wall_s)``."""
    total = record["startup_s"] + (record.get("compile_s") or 0.0) + record["wall_s"]
    return record["seeds"] * 3600.0 / total


def task_name(spec: dict[str, Any]) -> str:
    """The task part of a key: the number of agents (MARL) or the env's short name (RL)."""
    if spec["kind"] == "marl":
        return str(spec["agents"])
    return next(k for k, v in RL_ENVS.items() if v == spec["env"])


def plan(opponents: list[str], size: dict[str, Any]) -> list[dict[str, Any]]:
    """Every run, in order: per opponent, algorithm and task, the opponent's
    schedule-matched run, then (once per algorithm) its own defaults; the library's runs of
    the same specs (one seed, and vmapped seeds) are listed once each, before the first
    opponent run that needs them."""
    runs: list[dict[str, Any]] = []
    seen: set[str] = set()
    for opp in opponents:
        kind, algos = OPPONENTS[opp]
        algos = [a for a in algos if a in (size[f"{kind}_algos"] or algos)]
        for algo in algos:
            tasks = size["agents"] if kind == "marl" else size["rl_envs"]
            for i, task in enumerate(tasks):
                make = marl_spec if kind == "marl" else rl_spec
                for seeds in sorted({1, size["seeds"]}):
                    if kind not in size["library_kinds"]:
                        break
                    spec = make(algo, task, size, seeds=seeds)
                    key = json.dumps(spec, sort_keys=True)
                    if key not in seen:
                        seen.add(key)
                        runs.append({"side": LIBRARY, "spec": spec})
                runs.append({"side": opp, "spec": make(algo, task, size)})
                if opp in VMAPS_SEEDS and size["seeds"] > 1:
                    runs.append({"side": opp, "spec": make(algo, task, size,
                                                           seeds=size["seeds"])})
                if i == 0:
                    runs.append({"side": opp, "spec": make(algo, task, size, defaults=True)})
    return runs


def measure(runs: list[dict[str, Any]], sides: dict[str, Side], threads: int,
            timeout_s: float) -> list[dict[str, Any]]:
    """Run every planned run, one process at a time; each row gets the side's result. Each
    run's line says which of the plan it was and the minutes since the first started."""
    out = []
    t0 = time.perf_counter()
    for i, r in enumerate(runs):
        side = sides[r["side"]]
        load = os.getloadavg()[0]
        res = run_side(side, r["spec"], threads, timeout_s)
        row = {**r, "algo": r["spec"]["algo"], "task": task_name(r["spec"]),
               "load_avg_1m_before": load, **res}
        rec = res.get("record")
        msg = (f"{rec['steps_per_s']:,.0f} env steps/s" if rec else
               f"{res['status']}: {res.get('reason')}")
        print(f"[{i + 1}/{len(runs)}, {(time.perf_counter() - t0) / 60:.1f} min] "
              f"{describe(r)}: {msg}", flush=True)
        out.append(row)
    return out


def describe(run: dict[str, Any]) -> str:
    """One planned run in words: ``[side] algo task seeds=S`` and ``(own defaults)``."""
    spec = run["spec"]
    return (f"[{run['side']}] {spec['algo']} {task_name(spec)} seeds={spec['seeds']}"
            + (" (own defaults)" if spec.get("defaults") else ""))


def _find(rows: list[dict[str, Any]], side: str, algo: str, task: str, seeds: int = 1,
          defaults: bool = False) -> dict[str, Any] | None:
    """The measured record of a side's run (None if absent or not measured)."""
    for r in rows:
        s = r["spec"]
        if (r["side"] == side and r["algo"] == algo and r["task"] == task
                and s["seeds"] == seeds and bool(s.get("defaults")) == defaults
                and r["status"] == "measured"):
            return r["record"]
    return None


def summarize(report_: dict[str, Any]) -> dict[str, Any]:
    """Ratios of the library over each opponent, from the stored records (see the module
    docstring for the keys); None where a side was not measured."""
    res, cfg = report_["results"], report_["config"]
    rows = res["runs"]
    seeds = cfg["sizes"]["seeds"]
    summary: dict[str, Any] = {"device": report_["system"].get("device_kind"),
                               "mode": cfg["mode"], "threads": cfg["threads"],
                               "library_vmapped_seeds": seeds}
    steps, sph, sph_one = {}, {}, {}
    for opp in cfg["opponents"]:
        algos = sorted({r["algo"] for r in rows if r["side"] == opp})
        for algo in algos:
            tasks = [r["task"] for r in rows if r["side"] == opp and r["algo"] == algo
                     and not r["spec"].get("defaults") and r["spec"]["seeds"] == 1]
            for task in tasks:
                key = f"vs_{opp}_{algo}_{task}"
                o = _find(rows, opp, algo, task)
                ov = _find(rows, opp, algo, task, seeds=seeds) or o
                lib1 = _find(rows, LIBRARY, algo, task)
                # the vmapped run, or none (a failed one is not one seed per call)
                libv = _find(rows, LIBRARY, algo, task, seeds=seeds) if seeds > 1 else lib1
                steps[key] = (lib1["steps_per_s"] / o["steps_per_s"]
                              if o and lib1 else None)
                sph[key] = seeds_per_hour(libv) / seeds_per_hour(ov) if ov and libv else None
                sph_one[key] = (seeds_per_hour(lib1) / seeds_per_hour(o)
                                if o and lib1 else None)
                summary[f"e2e_steps_per_s_ratio_{key}"] = steps[key]
                summary[f"e2e_seeds_per_hour_ratio_{key}"] = sph[key]
                by = summary.setdefault(f"e2e_steps_per_s_ratio_vs_{opp}_{algo}_by_task", {})
                by[task] = steps[key]
                by = summary.setdefault(f"e2e_seeds_per_hour_ratio_vs_{opp}_by_variant", {})
                by[f"{algo} {task}"] = sph[key]
    summary["e2e_seeds_per_hour_ratio_one_seed_per_call"] = sph_one

    def worst(values: list[float | None]) -> float | None:
        vals = [v for v in values if v is not None]
        return min(vals) if vals else None

    both = [v for v in (*steps.values(), *sph.values()) if v is not None]
    summary["e2e_steps_per_s_ratio_min"] = worst(list(steps.values()))
    summary["e2e_seeds_per_hour_ratio_min"] = worst(list(sph.values()))
    summary["e2e_ratio_vs_frameworks_min"] = min(both) if both else None
    summary["e2e_ratio_vs_frameworks_median"] = statistics.median(both) if both else None
    summary["e2e_not_measured"] = sorted(
        {r["side"] for r in rows if r["status"] == "not measured"})
    summary["e2e_failed"] = sorted(
        f"{r['side']} {r['algo']} {r['task']}"
        + (" (own defaults)" if r["spec"].get("defaults") else "")
        + (f" ({r['spec']['seeds']} seeds)" if r["spec"]["seeds"] > 1 else "")
        for r in rows if r["status"] == "failed")
    summary["e2e_opponent_versions"] = {
        opp: next((r["record"]["versions"] for r in rows
                   if r["side"] == opp and r["status"] == "measured"), None)
        for opp in cfg["opponents"]}
    return summary


def render_markdown(report_: dict[str, Any]) -> str:
    """The comparison table (one line per opponent run, the library's beside it), then the
    not-measured sides with the command that makes them."""
    res, cfg, summary = report_["results"], report_["config"], report_["summary"]
    rows, seeds = res["runs"], cfg["sizes"]["seeds"]
    lines = [f"Device: {summary['device']}; mode {summary['mode']}; {cfg['threads']} threads "
             f"per side; one process at a time. Library seeds per hour: {seeds} seeds vmapped "
             "in one call, fewer where the memory holds fewer (one seed per call in "
             "brackets); opponents one seed at a time, but "
             f"{', '.join(VMAPS_SEEDS)} (which vmaps seeds: {seeds} in one call).", "",
             "| opponent (version) | algo | N / env | schedule | opponent steps/s | library "
             "steps/s | ratio | opponent seeds/h | library seeds/h | ratio | opponent return "
             "(random) | library return (random) |",
             "|---|---|---|---|---:|---:|---:|---:|---:|---:|---|---|"]
    def count(x: float | None) -> str:
        return harness.fmt(x, ",.0f", missing="-")

    def one(x: float | None, unit: str = "") -> str:
        return harness.fmt(x, ".1f", missing="-") + (unit if x is not None else "")

    def ret(rec: dict[str, Any] | None) -> str:
        return "-" if rec is None else (f"{one(rec['final_return'])} "
                                        f"({one(rec['random_return'])})")

    for r in rows:
        if r["side"] == LIBRARY or r["spec"]["seeds"] > 1:  # vmapped opponent: its seeds/h
            continue
        d = bool(r["spec"].get("defaults"))
        o = r.get("record")
        lib1 = None if d else _find(rows, LIBRARY, r["algo"], r["task"])
        libv = None if d else _find(rows, LIBRARY, r["algo"], r["task"], seeds=seeds)
        pkg = {"sb3": "stable_baselines3"}.get(r["side"], r["side"])
        ver = (o or {}).get("versions", {}).get(pkg)
        name = f"{r['side']} {ver}" if ver else r["side"]
        ov = None if d else _find(rows, r["side"], r["algo"], r["task"], seeds=seeds)
        osph = seeds_per_hour(ov or o) if o else None
        lsph = seeds_per_hour(libv or lib1) if lib1 else None
        l1sph = seeds_per_hour(lib1) if lib1 else None
        sr = lib1["steps_per_s"] / o["steps_per_s"] if o and lib1 else None
        rr = lsph / osph if osph and lsph else None
        cells = [name, r["algo"], r["task"], "own defaults" if d else "matched",
                 count(o["steps_per_s"]) if o else r["status"],
                 count(lib1["steps_per_s"]) if lib1 else "-", one(sr, "x"), count(osph),
                 f"{count(lsph)} ({count(l1sph)})", one(rr, "x"), ret(o), ret(lib1)]
        lines.append("| " + " | ".join(cells) + " |")
    conv = {}
    for r in rows:
        if r.get("record"):
            conv.setdefault(r["side"], r["record"].get("return_convention"))
    lines += ["", "Returns are each side's own env's reward convention:", ""]
    lines += [f"* {side}: {c}" for side, c in conv.items()]
    missing = {r["side"]: r["reason"] for r in rows if r["status"] == "not measured"}
    failed = summary.get("e2e_failed") or []
    if missing:
        lines += ["", "Not measured: " + "; ".join(
            f"{s} ({why}; its venv: `{setup_command(s)}`)"
            for s, why in sorted(missing.items())) + "."]
    if failed:
        lines += ["", "Failed: " + "; ".join(failed) + " (the reason and the output's tail "
                  "are in the results file)."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__)
    ap.add_argument("--opponents", nargs="*", choices=list(OPPONENTS), default=None,
                    help="opponents to run (default: all; --smoke: none, the library side "
                         "only, each opponent recorded as not measured)")
    add_side_options(ap)
    add_site_option(ap)
    ap.add_argument("--list", action="store_true",
                    help="print the planned runs, one line each, and stop: nothing runs and "
                         "nothing is written (default: off)")
    # nothing compiles in this process (each side runs in its own)
    args, run, mode = harness.start(ap, argv, __file__, cpu_workarounds=False)
    size = sizes(mode)
    opponents = list(OPPONENTS) if args.opponents is None else list(args.opponents)
    if args.list:
        planned = plan(opponents or list(OPPONENTS), size)
        for i, r in enumerate(planned):
            print(f"{i + 1:3d}. {describe(r)}")
        print(f"{len(planned)} runs, one process at a time (mode {mode})")
        return 0
    peers = peers_dir(args)
    out = harness.output_path(args, "e2e_frameworks")
    sides = {LIBRARY: library_side(), **opponent_sides(peers, peer_sites(args))}
    if args.smoke and args.opponents is None:  # smoke: no opponent started
        sides.update({o: s._replace(skip="--smoke starts no opponent (--opponents NAME does)")
                      for o, s in sides.items() if o != LIBRARY})
    t0 = time.perf_counter()
    runs = measure(plan(opponents or list(OPPONENTS), size), sides, args.threads,
                   size["timeout_s"])
    timer = {"runs": time.perf_counter() - t0}
    config = {"mode": mode, "opponents": opponents or list(OPPONENTS), "threads": args.threads,
              "sizes": size, "marl_schedule": MARL_SCHEDULE, "rl_schedule": RL_SCHEDULE}
    harness.write(out, run=run, config=config, results={"runs": runs}, timing_s=timer,
                  summarize=summarize, markdown=render_markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
