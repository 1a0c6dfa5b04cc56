"""Run reports and atomic file writes: the JSON schema shared by every CLI run and benchmark
(design contracts 8, 9).

A report (:func:`make_report`) is ``{"system", "config", "results", "timing_s"}`` plus, for
benchmarks, a ``summary`` with the headline numbers (:mod:`jaxrl_pim.results_file`).
``system`` is the run's provenance record (:mod:`jaxrl_pim.provenance`). Files are written
atomically (:func:`atomic_save`: temporary name, then rename) so an interrupted run never
destroys an earlier result.
"""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import numpy as np

from jaxrl_pim.checks import check_replaceable
from jaxrl_pim.provenance import RunRecord, system_info


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
    """Assemble a report dict following the shared schema; ``system`` is
    :func:`jaxrl_pim.provenance.system_info` (``run`` finished here)."""
    report = {
        "system": system_info(run),
        "config": to_jsonable(config),
        "results": to_jsonable(results),
        "timing_s": to_jsonable(timing_s),
    }
    if summary is not None:
        report["summary"] = to_jsonable(summary)
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

