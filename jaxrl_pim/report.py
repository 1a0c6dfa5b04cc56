"""Run reports: the JSON schema shared by every CLI run and benchmark (design contracts 8, 9).

A report is ``{"system", "config", "results", "timing_s"}`` plus, for benchmarks, a
``summary`` with the headline numbers. Files are written atomically (temporary name, then
rename) so an interrupted run never destroys an earlier result.

Provenance (contract 9): :class:`RunRecord` is started when a run begins and finished when
it ends; it records the command line, the git commit of the code that ran (and whether
tracked code differed from it, and whether the script itself is committed), start and end
times (UTC) and the host load average before and after. :func:`provenance_problems` lists
what a results file lacks under the contract. :func:`write_results` writes a benchmark results
file whole: the ``summary`` is computed by the script's ``summarize(report)`` function from
the report exactly as it is stored (after the JSON round trip), so
:func:`summary_mismatches` can recompute it later from the file and detect any hand edit.

Over 400 lines on purpose: the whole provenance contract (run record, report schema,
results writer, summary recompute, checks) stays in one module so it is read and changed in
one place.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import importlib.metadata
import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np

from jaxrl_pim.checks import check_replaceable

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
    ends; :func:`make_report` and :func:`write_results` call ``finish`` for you.

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
    devices = jax.devices()
    import jaxlib

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
    devices = jax.devices()
    return f"{jax.default_backend()}: {len(devices)} x {devices[0].device_kind}"


def to_jsonable(obj: Any) -> Any:
    """Convert dataclasses, NumPy/JAX arrays and scalars into plain JSON values."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray | jax.Array):
        arr = np.asarray(obj)
        return arr.item() if arr.ndim == 0 else arr.tolist()
    if isinstance(obj, float) and not np.isfinite(obj):
        return None
    if obj is None or isinstance(obj, str | int | float | bool):
        return obj
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    return repr(obj)


def make_report(
    config: Any,
    results: dict[str, Any],
    timing_s: dict[str, float],
    summary: dict[str, Any] | None = None,
    run: RunRecord | None = None,
) -> dict[str, Any]:
    """Assemble a report dict following the shared schema (``run`` finished here)."""
    report = {
        "system": system_info(run),
        "config": to_jsonable(config),
        "results": to_jsonable(results),
        "timing_s": to_jsonable(timing_s),
    }
    if summary is not None:
        report["summary"] = to_jsonable(summary)
    return report


Summarize = Callable[[dict[str, Any]], dict[str, Any]]


def _round_trip(obj: Any) -> Any:
    """``obj`` exactly as it reads back from the JSON file."""
    return json.loads(json.dumps(to_jsonable(obj)))


def compute_summary(report: dict[str, Any], summarize: Summarize) -> dict[str, Any]:
    """``summarize`` applied to ``report`` as stored (JSON values; any ``summary`` key
    removed), returned as JSON values."""
    stored = _round_trip({k: v for k, v in report.items() if k != "summary"})
    return _round_trip(summarize(stored))


def summary_mismatches(report: dict[str, Any], summarize: Summarize) -> list[str]:
    """Keys whose stored ``summary`` value differs from what ``summarize`` recomputes from
    the report's records (missing or extra keys included); empty when they agree."""
    want = compute_summary(report, summarize)
    have = report.get("summary")
    if not isinstance(have, dict):
        return ["summary: missing"]
    out = []
    for key in sorted(set(want) | set(have)):
        if key not in have:
            out.append(f"summary.{key}: missing from the file")
        elif key not in want:
            out.append(f"summary.{key}: not computed by summarize()")
        elif want[key] != have[key]:
            out.append(f"summary.{key}: file {have[key]!r} != recomputed {want[key]!r}")
    return out


#: ``system`` fields every benchmark results file holds (contract 9).
PROVENANCE_FIELDS: tuple[str, ...] = (
    "command", "script", "git_commit", "git_dirty", "script_committed", "start_utc",
    "end_utc", "load_average_start", "load_average_end", "hostname", "cpu", "cpu_count",
    "backend", "device_kind", "device_count", "jax", "jaxlib", "packages",
)
#: Of those, the ones that may be null (not available on every platform / outside git).
NULLABLE_FIELDS: tuple[str, ...] = (
    "git_commit", "git_dirty", "script_committed", "load_average_start", "load_average_end",
)
REPORT_KEYS: tuple[str, ...] = ("system", "config", "results", "timing_s", "summary")


def provenance_problems(report: dict[str, Any], *, committed: bool = True) -> list[str]:
    """What a results file lacks under the provenance contract; empty when nothing.

    Always: the keys :data:`REPORT_KEYS`, the ``system`` fields :data:`PROVENANCE_FIELDS`
    (non-null except :data:`NULLABLE_FIELDS`) and a non-empty ``summary`` object. With
    ``committed`` (a file that is published): a 40-hex ``git_commit``, ``git_dirty`` false
    (no uncommitted change to tracked code when it ran) and ``script_committed`` true. The
    summary's values are checked separately (:func:`summary_mismatches`).
    """
    out = [f"{key}: missing" for key in REPORT_KEYS if key not in report]
    system = report.get("system")
    if not isinstance(system, dict):
        return out + (["system: not an object"] if "system" in report else [])
    for key in PROVENANCE_FIELDS:
        if key not in system:
            out.append(f"system.{key}: missing (no provenance record)")
        elif system[key] is None and key not in NULLABLE_FIELDS:
            out.append(f"system.{key}: null")
    if "packages" in system and not (isinstance(system["packages"], dict)
                                     and system["packages"]):
        out.append("system.packages: no package versions")
    if "summary" in report and not (isinstance(report["summary"], dict) and report["summary"]):
        out.append("summary: empty (summarize() must give the headline numbers)")
    if committed and "git_commit" in system:
        commit = system.get("git_commit")
        if not (isinstance(commit, str) and len(commit) == 40
                and all(c in "0123456789abcdef" for c in commit)):
            out.append(f"system.git_commit: {commit!r} is not a commit (run from a git "
                       "checkout)")
        if system.get("git_dirty") is not False:
            paths = system.get("git_dirty_paths") or []
            out.append("system.git_dirty: tracked code had uncommitted changes when it ran"
                       + (f" ({', '.join(paths[:5])})" if paths else ""))
        if system.get("script_committed") is not True:
            out.append("system.script_committed: the script that wrote it was not committed")
    return out


def write_results(
    path: str | os.PathLike[str],
    *,
    run: RunRecord,
    config: Any,
    results: dict[str, Any],
    timing_s: dict[str, Any],
    summarize: Summarize,
    markdown: str | Callable[[dict[str, Any]], str] | None = None,
) -> dict[str, Any]:
    """Write a benchmark results file whole (contract 9) and return the report.

    ``summary`` is ``summarize(report)`` over the report as stored (see
    :func:`compute_summary`), never passed in. ``markdown``, when given, is written next to
    the JSON file with the suffix ``.md`` (also atomically); it may be a function of the
    report as stored (summary included), so the table can be regenerated from the file.
    """
    report = make_report(config, results, timing_s, run=run)
    report["summary"] = compute_summary(report, summarize)
    path = Path(path)
    write_json(path, report)
    if callable(markdown):
        markdown = markdown(_round_trip(report))
    if markdown is not None:
        write_text(path.with_suffix(".md"), markdown)
    return report


def write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` atomically (:func:`atomic_save`); returns the path."""

    def writer(tmp: str) -> None:
        Path(tmp).write_text(text)

    return atomic_save(path, writer)


def write_json(path: str | os.PathLike[str], data: Any) -> Path:
    """Write ``data`` as indented JSON atomically (:func:`atomic_save`); returns the path."""
    text = json.dumps(to_jsonable(data), indent=2) + "\n"  # before the file is touched
    return write_text(path, text)


def _umask() -> int:
    """The process's umask, read without changing it where Linux tells it (``/proc``)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    old = os.umask(0o022)  # elsewhere: read by setting it back at once
    os.umask(old)
    return old


def _fsync_dir(folder: Path) -> None:
    """Make a rename in ``folder`` durable (best effort: some file systems refuse it)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_save(path: str | os.PathLike[str], writer: Callable[[str], Any]) -> Path:
    """Call ``writer(tmp_path)`` and rename the result onto ``path``: the one way the library
    writes a file (reports, tables, datasets, figures, animations).

    The temporary file lies in ``path``'s folder (so the rename is atomic) and keeps
    ``path``'s suffix (writers such as ``np.save`` or a GIF writer go by it); it is flushed
    to disk (fsync) before the rename and the folder after it. The file gets the permissions
    of the file it replaces, or for a new file those the umask gives (``0o666 & ~umask``, as
    ``open`` would), not the ``0o600`` of a temporary file. An error or an interrupt in
    ``writer`` (or anywhere before the rename) removes the temporary file and leaves
    ``path`` as it was; so does a stop of the command by SIGTERM or Ctrl-C
    (:data:`IN_FLIGHT`). Returns ``path``.

    Only a regular file or a missing path is replaced: a folder raises IsADirectoryError,
    anything else (a symbolic link, which is not followed, a FIFO, a device such as
    ``/dev/null``, a socket) ValueError, so a write never turns one into a regular file. The
    temporary name is short whatever the length of ``path``'s name (at most 64 bytes of its
    stem, its suffix when at most 16 bytes), so a name the file system takes can be written.
    """
    path = Path(path)
    check_replaceable(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    stem = os.fsdecode(os.fsencode(path.stem)[:64])
    suffix = path.suffix if len(os.fsencode(path.suffix)) <= 16 else ""
    fd, tmp = tempfile.mkstemp(prefix=f".{stem}.", suffix=suffix, dir=path.parent)
    os.close(fd)
    IN_FLIGHT.add(tmp)
    try:
        writer(tmp)
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    finally:
        IN_FLIGHT.discard(tmp)
    _fsync_dir(path.parent)
    return path


IN_FLIGHT: set[str] = set()
"""Temporary files :func:`atomic_save` is writing now; a process that ends at once on a
signal (``os._exit``, where no ``except`` runs) removes them (:func:`remove_in_flight`)."""


def remove_in_flight() -> None:
    """Remove the temporary files of writes still in progress (their targets stay as they
    were); for a process about to end without unwinding."""
    for tmp in list(IN_FLIGHT):
        try:
            os.unlink(tmp)
        except OSError:
            pass
        IN_FLIGHT.discard(tmp)


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()
