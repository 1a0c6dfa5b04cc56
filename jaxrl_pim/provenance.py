"""The provenance of a run: who wrote a report, from which code, on which machine.

:class:`RunRecord` is started when a run begins and finished when it ends; it records the
command line, the git commit of the code that ran (and whether tracked code differed from
it, and whether the script itself is committed), start and end times (UTC) and the host load
average before and after. :func:`system_info` adds the machine (CPU, backend, devices) and
the installed versions (:func:`package_versions`): it is the ``system`` record of every
report (:func:`jaxrl_pim.report.make_report`). :func:`git_state` asks git for the source
state, or takes it as passed in where git cannot be asked (:func:`passed_in_source_state`).

What a benchmark results file must hold of this record is checked by
:func:`jaxrl_pim.results_file.provenance_problems` (contract 9). Importing this module loads
no jax: it is imported inside :func:`system_info` and :func:`device_label`.
"""

from __future__ import annotations

import datetime as _dt
import importlib.metadata
import os
import platform
import shlex
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# Distributions whose versions a report records when they are installed.
PACKAGES: tuple[str, ...] = (
    "jax", "jaxlib", "numpy", "flax", "optax", "chex", "gymnax", "orbax-checkpoint", "numba",
    "ray", "mpe2", "playground", "mujoco", "qwix", "codecarbon", "jaxrl-pim",
)


def package_versions(names: Sequence[str] = PACKAGES) -> dict[str, str]:
    """Installed versions of ``names`` (distributions that are not installed are left out)."""
    out = {}
    for name in names:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return out


def _utc_now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def _load_average() -> list[float] | None:
    try:
        return [round(x, 3) for x in os.getloadavg()]
    except OSError:  # pragma: no cover - not on every platform
        return None


def _git(args: Sequence[str], cwd: Path) -> str | None:
    try:
        out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                             timeout=30, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip()


#: Changes under these repository paths do not make a run "dirty": they are outputs
#: (results files, docs), not code that runs. Markdown files anywhere count as docs.
OUTPUT_PREFIXES: tuple[str, ...] = ("benchmarks/results/", "docs/")


def _is_output(path: str) -> bool:
    return path.endswith(".md") or path.startswith(OUTPUT_PREFIXES)


#: Environment variables that carry the source state of a copied working tree into a run on
#: a machine where ``git`` cannot be asked (the GPU suite's device run): the commit the copy
#: was taken at (40 hex digits) and the paths that differed from it, comma-separated (empty:
#: none). Set by ``benchmarks/gpu_prepare.sh`` on the development machine.
SOURCE_COMMIT_ENV = "JAXRL_PIM_SOURCE_COMMIT"
SOURCE_DIRTY_ENV = "JAXRL_PIM_SOURCE_DIRTY"


def passed_in_source_state(target: Path | None = None) -> dict[str, Any] | None:
    """The source state set in :data:`SOURCE_COMMIT_ENV` / :data:`SOURCE_DIRTY_ENV`, as
    :func:`git_state` returns it (plus ``source: "passed in"``), or None when unset.

    Raises ValueError for a commit that is not 40 hex digits, so a run never records a
    malformed commit."""
    commit = os.environ.get(SOURCE_COMMIT_ENV, "").strip()
    if not commit:
        return None
    if len(commit) != 40 or any(c not in "0123456789abcdef" for c in commit):
        raise ValueError(f"{SOURCE_COMMIT_ENV}={commit!r} is not a 40-hex-digit commit")
    listed = os.environ.get(SOURCE_DIRTY_ENV, "")
    changed = [p for p in listed.split(",") if p.strip() and not _is_output(p.strip())]
    committed = None
    if target is not None and target.is_file():
        committed = not any(target.as_posix().endswith("/" + p.strip()) for p in changed)
    return {"commit": commit, "dirty": bool(changed), "dirty_paths": changed[:50],
            "path_committed": committed, "source": "passed in"}


def project_root(start: Path) -> Path | None:
    """The nearest folder at or above ``start`` holding ``pyproject.toml`` (None if none)."""
    for folder in (start, *start.parents):
        if (folder / "pyproject.toml").is_file():
            return folder
    return None


def git_state(path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """The git commit of the checkout holding ``path`` (a file or folder; default the
    current folder), whether tracked code differs from that commit (``dirty``; changed
    paths in ``dirty_paths``, at most 50; results files under ``benchmarks/results/`` and
    Markdown docs do not count, so publishing one result after another keeps the tree
    clean) and, when ``path`` is a file, whether that file is tracked and unchanged
    (``path_committed``). Every value is None outside a git checkout.

    When :data:`SOURCE_COMMIT_ENV` is set (a copy of a checkout run where git is not
    asked), the state passed in is returned instead (:func:`passed_in_source_state`)."""
    target = Path(path or ".").resolve()
    passed = passed_in_source_state(target)
    if passed is not None:
        return passed
    folder = target if target.is_dir() else target.parent
    commit = _git(["rev-parse", "HEAD"], folder)
    if commit is None:
        return {"commit": None, "dirty": None, "dirty_paths": None, "path_committed": None}
    # staged or not, relative to HEAD; paths relative to the repository root
    diff = _git(["-c", "core.quotePath=false", "diff", "--name-only", "HEAD"], folder)
    changed = [name for name in (diff or "").splitlines() if name and not _is_output(name)]
    state: dict[str, Any] = {"commit": commit, "dirty": bool(changed),
                             "dirty_paths": changed[:50]}
    if target.is_file():
        tracked = _git(["ls-files", "--error-unmatch", target.name], folder) is not None
        changed = _git(["status", "--porcelain", "--", target.name], folder)
        state["path_committed"] = tracked and not changed
    else:
        state["path_committed"] = None
    return state


class RunRecord:
    """Provenance of one run: what ran, from which commit, when, and how loaded the host was.

    Create it when the run starts (before any measurement) and call :meth:`finish` when it
    ends; :func:`jaxrl_pim.report.make_report` and
    :func:`jaxrl_pim.results_file.write_results` call ``finish`` for you.

    Example::

        run = RunRecord()              # command line, commit, start time, load average
        ...                            # measure
        write_results(path, run=run, config=cfg, results=res, timing_s=t, summarize=summarize)
    """

    def __init__(self, argv: Sequence[str] | None = None) -> None:
        argv = list(sys.argv if argv is None else argv)
        script = Path(argv[0]) if argv and argv[0] else None
        if script is not None and script.suffix == ".py" and script.exists():
            git = git_state(script)
            root = _git(["rev-parse", "--show-toplevel"], script.resolve().parent)
            if git.get("source") == "passed in":
                root = str(project_root(script.resolve().parent) or "") or None
            shown = script.resolve()
            if root:
                shown = shown.relative_to(Path(root).resolve())
            self.script: str | None = str(shown)
            command = ["python", str(shown), *argv[1:]]
        else:
            git = git_state(None)
            self.script = None
            command = [Path(argv[0]).name if argv else "python", *argv[1:]]
        self.command = " ".join(shlex.quote(a) for a in command)
        self.git = git
        self.start_utc = _utc_now()
        self.load_average_start = _load_average()
        self.end_utc: str | None = None
        self.load_average_end: list[float] | None = None

    def finish(self) -> RunRecord:
        """Record the end time and load average (only the first call counts)."""
        if self.end_utc is None:
            self.end_utc = _utc_now()
            self.load_average_end = _load_average()
        return self

    def as_dict(self) -> dict[str, Any]:
        """The record as JSON values (``command``, ``script``, ``git_commit``, ``git_dirty``
        and ``git_dirty_paths``, ``script_committed``, ``git_state_source`` (``git``, or
        ``passed in`` through :data:`SOURCE_COMMIT_ENV`), ``start_utc``, ``end_utc``,
        ``load_average_start`` / ``_end`` as the 1, 5 and 15 minute averages)."""
        return {
            "command": self.command,
            "script": self.script,
            "git_commit": self.git["commit"],
            "git_dirty": self.git["dirty"],
            "git_dirty_paths": self.git.get("dirty_paths"),
            "script_committed": self.git["path_committed"],
            "git_state_source": self.git.get("source", "git"),
            "start_utc": self.start_utc,
            "end_utc": self.end_utc,
            "load_average_start": self.load_average_start,
            "load_average_end": self.load_average_end,
        }


def system_info(run: RunRecord | None = None) -> dict[str, Any]:
    """Hardware and software facts for a report: CPU, device kind/count, package versions,
    and the run's provenance (:class:`RunRecord`; one describing the current process is
    made when none is given)."""
    import jax
    import jaxlib
    import numpy as np

    devices = jax.devices()
    run = (run or RunRecord()).finish()
    return {
        "hostname": platform.node(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpu": _cpu_name(),
        "cpu_count": os.cpu_count(),
        "backend": jax.default_backend(),
        "device_kind": devices[0].device_kind,
        "device_count": len(devices),
        "process_count": jax.process_count(),
        "jax": jax.__version__,
        "jaxlib": jaxlib.__version__,
        "numpy": np.__version__,
        "packages": package_versions(),
        "time_utc": _utc_now(),
        **run.as_dict(),
    }


def device_label() -> str:
    """Short device description, e.g. ``'cpu: 2 x cpu'`` or ``'gpu: 1 x NVIDIA H100 ...'``."""
    import jax

    devices = jax.devices()
    return f"{jax.default_backend()}: {len(devices)} x {devices[0].device_kind}"


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()
