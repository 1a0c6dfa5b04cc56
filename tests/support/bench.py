"""One ``--smoke`` run per benchmark command, shared by every test that checks it.

A benchmark script's smoke run costs seconds of compilation; several tests check the same
command (the provenance check of every script, a script's own keys and table). The session
fixture ``smoke_run`` (``tests/benchmarks/conftest.py``) runs each command once per xdist
worker through :func:`run_smoke`; the tests that share a command carry the same
``xdist_group`` (:func:`group`) so they run on one worker, and so does the command run once.

* :data:`SMOKE_OPTIONS`: options added to a script's shared smoke run so it covers what
  every test of it checks (a superset of the plain ``--smoke`` run).
* :data:`IN_SUITE`: scripts whose smoke run is a section of ``gpu_suite.py``'s smoke run,
  the very command the suite runs (``<script> --smoke --out <suite folder>``): the section's
  log and exit status stand for the script's own run.

Tests read a run's ``--out`` folder and never write into it: one that edits a file copies
the folder first (:meth:`SmokeRun.copy_out`).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.support import ROOT, script_env

BENCHMARKS = ROOT / "benchmarks"
SMOKE_TIMEOUT_S = 600

#: extra options of a script's shared smoke run, and the tests that need them
SMOKE_OPTIONS: dict[str, tuple[str, ...]] = {
    # tests/benchmarks/test_mpe_rollout.py checks the process-clock records
    "mpe_rollout": ("--clock", "process"),
    # tests/benchmarks/test_sampling_opponents.py checks the one-thread pass's keys
    "marl_sampling": ("--one-thread",),
    # tests/benchmarks/test_marl_seeds.py and test_replay_bytes.py read the plain run's files
    "marl_seeds": (),
    "replay_bytes": (),
}
#: the GPU suite's smoke run of tests/benchmarks/test_gpu_suite.py, the rehearsal of the
#: device call: through ``benchmarks/gpu_prepare.sh``'s printed command (wheels installed with
#: ``--target``, the project on ``PYTHONPATH``); ``quant`` completes, ``marl_schedule`` is
#: stopped after a 1-second budget (its compile alone takes longer)
SUITE = "gpu_suite"
SUITE_ARGS = ("--smoke", "--parts", "quant", "marl_schedule", "--budget", "marl_schedule=1",
              "--deadline-s", "200")
#: script -> the suite's part that runs its smoke command
IN_SUITE = {"quant_inference": "quant"}


def group(stem: str) -> str | None:
    """The ``xdist_group`` of the tests that share ``stem``'s smoke run (None: one test)."""
    if stem in SMOKE_OPTIONS:
        return f"smoke-{stem}"
    if stem == SUITE or stem in IN_SUITE:
        return f"smoke-{SUITE}"
    return None


@dataclass(frozen=True)
class SmokeRun:
    """What one smoke command did: its exit status, output and ``--out`` folder."""

    stem: str
    command: list[str]
    returncode: int
    stdout: str
    stderr: str
    out: Path

    def copy_out(self, dest: Path) -> Path:
        """A private copy of the ``--out`` folder (for a test that edits its files)."""
        shutil.copytree(self.out, dest)
        return dest


def _run(stem: str, options: tuple[str, ...], folder: Path) -> SmokeRun:
    out = folder / "out"
    cmd = [sys.executable, str(BENCHMARKS / f"{stem}.py"), "--smoke", "--out", str(out),
           *options]
    folder.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(cmd, cwd=folder, env=script_env(), capture_output=True,
                          text=True, timeout=SMOKE_TIMEOUT_S)
    return SmokeRun(stem, cmd, proc.returncode, proc.stdout, proc.stderr, out)


def run_smoke(stem: str, folder: Path, runs: dict[str, SmokeRun]) -> SmokeRun:
    """``stem``'s smoke run in ``folder`` (fresh), recorded in ``runs``; a script of
    :data:`IN_SUITE` is read from the suite's run (run first when ``runs`` lacks it)."""
    if stem in runs:
        return runs[stem]
    if stem in IN_SUITE:
        suite = run_smoke(SUITE, folder.parent / SUITE, runs)
        part = IN_SUITE[stem]
        own = folder / "out"  # the part's own files (the suite's folder holds them all)
        own.mkdir(parents=True)
        staged = suite.out / "benchmarks" / "results" / "cpu"
        record = staged / f"{SUITE}_smoke.json"
        if not record.exists():  # the suite itself failed: its output says why
            run = SmokeRun(stem, suite.command, suite.returncode or 1, suite.stdout,
                           suite.stderr, own)
        else:
            rows = json.loads(record.read_text())["results"]["parts"]
            row = next(r for r in rows if r["part"] == part)
            for name in row["files"]:
                shutil.copy2(staged / name, own / name)
            log = suite.out / "logs" / f"{part}.log"
            run = SmokeRun(stem, row["command"].split(), row["returncode"],
                           log.read_text() if log.exists() else "", row["error"] or "", own)
    elif stem == SUITE:
        run = rehearse(folder)
    else:
        run = _run(stem, SMOKE_OPTIONS.get(stem, ()), folder)
    runs[stem] = run
    return run


@dataclass(frozen=True)
class Rehearsal(SmokeRun):
    """The GPU suite's smoke run through the prepared device command: also the command
    ``gpu_prepare.sh`` printed, its wheel folder and the folder standing for ``$OUT``."""

    prepared: str = ""
    wheels: Path = Path()
    site: Path = Path()
    returned: Path = Path()


def rehearse(folder: Path) -> Rehearsal:
    """Run ``benchmarks/gpu_prepare.sh`` (wheels into ``folder/whl``) and then the command it
    prints, as the device would (from the repository root, ``$OUT`` = ``folder/returned``),
    with the suite at :data:`SUITE_ARGS` and its working folder ``folder/out``."""
    folder.mkdir(parents=True, exist_ok=True)
    wheels, site, returned, out = (folder / n for n in ("whl", "site", "returned", "out"))
    returned.mkdir()
    args = " ".join([*SUITE_ARGS, "--out", str(out)])
    prep = subprocess.run(["bash", str(BENCHMARKS / "gpu_prepare.sh"), "--dest", str(wheels),
                           "--site", str(site), "--timeout-s", "120", "--suite-args", args],
                          cwd=folder, env=script_env(), capture_output=True, text=True,
                          timeout=300)
    if prep.returncode != 0:
        return Rehearsal(SUITE, ["bash", "gpu_prepare.sh"], prep.returncode, prep.stdout,
                         prep.stderr, out)
    command = prep.stdout.strip().splitlines()[-1]
    env = {**script_env(), "OUT": str(returned)}
    proc = subprocess.run(["bash", "-c", command], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=SMOKE_TIMEOUT_S)
    return Rehearsal(SUITE, ["bash", "-c", command], proc.returncode, proc.stdout,
                     prep.stderr + proc.stderr, out, command, wheels, site, returned)
