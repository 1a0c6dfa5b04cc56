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

* :data:`ALONE`: scripts whose smoke run needs an interpreter of its own; every other
  script's smoke run shares one interpreter with the others the session selected
  (:func:`run_batch`: each script's ``main(["--smoke", "--out", ...])`` in turn, in its own
  folder, its output captured apart). A fresh interpreter per script cost each one the
  interpreter's start and the imports of jax and the library again. Their tests share one
  xdist group (:data:`BATCH`), so the batch runs once.

Tests read a run's ``--out`` folder and never write into it: one that edits a file copies
the folder first (:meth:`SmokeRun.copy_out`).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterable
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
#: ``--target``, rejax's in a folder of their own, the project on ``PYTHONPATH``); every part
#: of tiers 1 to 5 and the trace and fused profile complete, ``marl_schedule`` is stopped
#: after a 1-second budget (its compile alone takes longer)
SUITE = "gpu_suite"
SUITE_PARTS = ("marl_fill", "spread48", "tabular", "e2e_rejax", "quant", "marl_trace",
               "marl_profile", "marl_schedule")
SUITE_ARGS = ("--smoke", "--parts", *SUITE_PARTS, "--budget", "marl_schedule=1",
              "--deadline-s", "400")
#: script -> the suite's part that runs its smoke command (the same options as its own)
IN_SUITE = {"quant_inference": "quant", "marl_profile": "marl_profile",
            "marl_trace": "marl_trace"}
#: scripts whose smoke run needs an interpreter of its own: the device count is set before
#: jax loads (tabular_scaling), a local Ray starts (actorq_speedup), the GPU suite's
#: rehearsal and its sections
ALONE = frozenset({"tabular_scaling", "actorq_speedup", SUITE, *IN_SUITE})
#: the ``xdist_group`` of every test of a batched smoke run (:func:`run_batch`)
BATCH = "smoke-batch"
BATCH_TIMEOUT_S = 1200


def group(stem: str) -> str | None:
    """The ``xdist_group`` of the tests that share ``stem``'s smoke run (None: one test of
    a script of :data:`ALONE`)."""
    if stem == SUITE or stem in IN_SUITE:
        return f"smoke-{SUITE}"
    if stem not in ALONE:
        return BATCH
    return f"smoke-{stem}" if stem in SMOKE_OPTIONS else None


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


def _argv(stem: str, out: Path) -> list[str]:
    """The options of ``stem``'s shared smoke run (its ``--out`` folder ``out``)."""
    return ["--smoke", "--out", str(out), *SMOKE_OPTIONS.get(stem, ())]


def _run(stem: str, folder: Path) -> SmokeRun:
    out = folder / "out"
    cmd = [sys.executable, str(BENCHMARKS / f"{stem}.py"), *_argv(stem, out)]
    folder.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(cmd, cwd=folder, env=script_env(), capture_output=True,
                          text=True, timeout=SMOKE_TIMEOUT_S)
    return SmokeRun(stem, cmd, proc.returncode, proc.stdout, proc.stderr, out)


#: The batch interpreter: each job's ``benchmarks.<stem>.main(argv)`` in its folder, with
#: ``sys.argv`` as the script's own command would set it, its stdout and stderr captured
#: apart, its exit status (a ``SystemExit``'s code, 1 for an exception, whose traceback goes
#: to its stderr) and output written to its result file.
BATCH_CODE = """
import contextlib, importlib, io, json, os, sys, traceback
sys.path.insert(0, ROOT)
for job in json.loads(open(JOBS).read()):
    os.chdir(job["folder"])
    sys.argv = [job["script"], *job["argv"]]  # as python <script> <argv> has it
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = importlib.import_module(PACKAGE + "." + job["stem"]).main(job["argv"])
        except SystemExit as stop:
            status = stop.code
        except BaseException:
            traceback.print_exc()
            status = 1
    if not isinstance(status, int):  # None: success; a message: its failure
        if status is not None:
            err.write(str(status) + "\\n")
        status = 0 if status is None else 1
    with open(job["result"], "w") as f:
        json.dump({"returncode": status, "stdout": out.getvalue(),
                   "stderr": err.getvalue()}, f)
"""


def run_batch(stems: Iterable[str], folder: Path, root: Path = ROOT,
              package: str = "benchmarks") -> dict[str, SmokeRun]:
    """The smoke runs of ``stems`` (none of :data:`ALONE`) one after another in one fresh
    interpreter, each in ``folder/<stem>`` with its ``--out`` folder there, as
    ``python benchmarks/<stem>.py --smoke --out ...`` would run (the command each
    :class:`SmokeRun` names; ``package`` below ``root`` holds the scripts). A script the
    interpreter did not reach (it crashed or timed out) gets that interpreter's exit status
    and output."""
    stems = sorted(set(stems))
    if ALONE & set(stems):
        raise ValueError(f"{sorted(ALONE & set(stems))} need an interpreter of their own")
    folder.mkdir(parents=True, exist_ok=True)
    jobs = []
    for stem in stems:
        (folder / stem).mkdir()
        jobs.append({"stem": stem, "folder": str(folder / stem),
                     "script": str(root / package / f"{stem}.py"),
                     "argv": _argv(stem, folder / stem / "out"),
                     "result": str(folder / stem / "result.json")})
    (folder / "jobs.json").write_text(json.dumps(jobs))
    code = (BATCH_CODE.replace("ROOT", repr(str(root))).replace("PACKAGE", repr(package))
            .replace("JOBS", repr(str(folder / "jobs.json"))))
    try:
        proc = subprocess.run([sys.executable, "-c", code], cwd=folder, env=script_env(),
                              capture_output=True, text=True, timeout=BATCH_TIMEOUT_S)
        ended = (proc.returncode or 1, proc.stdout, proc.stderr)
    except subprocess.TimeoutExpired as err:
        ended = (1, "", f"the batch interpreter timed out after {err.timeout:.0f} s")
    runs = {}
    for job in jobs:
        result = Path(job["result"])
        status, stdout, stderr = ended
        if result.exists():
            done = json.loads(result.read_text())
            status, stdout, stderr = done["returncode"], done["stdout"], done["stderr"]
        cmd = [sys.executable, job["script"], *job["argv"]]
        runs[job["stem"]] = SmokeRun(job["stem"], cmd, status, stdout, stderr,
                                     Path(job["folder"]) / "out")
    return runs


def run_smoke(stem: str, folder: Path, runs: dict[str, SmokeRun],
              selected: Iterable[str] = ()) -> SmokeRun:
    """``stem``'s smoke run in ``folder`` (fresh), recorded in ``runs``; a script of
    :data:`IN_SUITE` is read from the suite's run (run first when ``runs`` lacks it). A
    script not of :data:`ALONE` runs in one batch (:func:`run_batch`, in
    ``folder.parent/batch<n>``) with every other script of ``selected`` (the session's) not
    yet run."""
    if stem in runs:
        return runs[stem]
    if stem not in ALONE:
        batch = {stem} | {s for s in selected if s not in ALONE and s not in runs}
        n = sum(1 for _ in folder.parent.glob("batch*"))
        runs.update(run_batch(batch, folder.parent / f"batch{n}"))
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
        run = _run(stem, folder)
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
    peer: Path = Path()


def rehearse(folder: Path) -> Rehearsal:
    """Run ``benchmarks/gpu_prepare.sh`` (wheels into ``folder/whl``) and then the command it
    prints, as the device would (from the repository root, ``$OUT`` = ``folder/returned``),
    with the suite at :data:`SUITE_ARGS` and its working folder ``folder/out``."""
    folder.mkdir(parents=True, exist_ok=True)
    wheels, site, peer, returned, out = (folder / n for n in ("whl", "site", "peer", "returned",
                                                               "out"))
    returned.mkdir()
    args = " ".join([*SUITE_ARGS, "--out", str(out)])
    here = f"{sys.version_info.major}.{sys.version_info.minor}"  # rejax's compiled wheels
    prep = subprocess.run(["bash", str(BENCHMARKS / "gpu_prepare.sh"), "--dest", str(wheels),
                           "--site", str(site), "--peer-site", str(peer), "--python-version",
                           here, "--timeout-s", "420", "--suite-args", args],
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
                     prep.stderr + proc.stderr, out, command, wheels, site, returned, peer)
