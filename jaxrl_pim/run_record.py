"""Which run a checkpoint folder holds, read as plain JSON: no jax, no orbax, no numpy.

A checkpoint step of :class:`jaxrl_pim.checkpoint.Checkpoints` is the folder ``<dir>/<step>/``
(``<step>`` a plain integer: orbax writes a step under a temporary name and renames it when
complete, and a damaged step set aside is ``damaged-<step>``); its record ``{"fingerprint":
..., "meta": {...}}`` is the JSON file ``<dir>/<step>/meta/metadata``. The fingerprint's
``config`` fields tell the kind of run (:func:`run_kind`).

The commands call :func:`check_folder` on a folder they are told to resume or evaluate before
they import jax, JaxMARL or orbax (seconds), so a folder of another run is refused within a
second, naming the flag that gave it. orbax stays the authority: this reads the newest step
whose record is a readable record (checked against its file list) and refuses only where
that record already says the folder is another run's; the full check
(:meth:`~jaxrl_pim.checkpoint.Checkpoints.check_record`) still runs when the folder is
opened. Imports nothing but the standard library.
"""

from __future__ import annotations

import json
import os
import zlib
from pathlib import Path
from typing import Any

#: A config field that only one kind of run's fingerprint holds -> that kind's name.
KIND_MARKERS: tuple[tuple[str, str], ...] = (
    ("num_states", "tabular"), ("sampling_mode", "MARL"), ("actor_update_period", "ActorQ"))

#: Where a step's record lies, relative to the step's folder.
RECORD = "meta/metadata"
#: The step's file list (:data:`jaxrl_pim.checkpoint.FILES`: ``{"files": {name: [size,
#: crc32]}}``, written when the step is complete).
FILES = "files.json"


def run_kind(fingerprint: Any) -> str | None:
    """The kind of run a fingerprint belongs to (``"tabular"``, ``"MARL"``, ``"ActorQ"``), read
    from its ``config`` fields; None when it is not one of the package's runs."""
    fields = fingerprint.get("config") if isinstance(fingerprint, dict) else None
    if isinstance(fields, dict):
        for field, kind in KIND_MARKERS:
            if field in fields:
                return kind
    return None


def a_kind(kind: str) -> str:
    """``kind`` with its indefinite article (``a tabular``, ``an ActorQ``)."""
    return f"{'an' if kind[:1] in 'AEIOU' else 'a'} {kind}"


def complete_steps(folder: str | os.PathLike[str]) -> list[int]:
    """The steps of ``folder``'s complete checkpoints (its sub-folders named by an integer),
    oldest first; empty when there is none or ``folder`` is not a readable folder."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return []
    return sorted(int(e.name) for e in entries
                  if e.name.isascii() and e.name.isdigit() and _is_dir(e))


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def _read_listed(step_dir: Path, name: str) -> bytes | None:
    """File ``name`` of a step when it is as its file list says (size and CRC-32), else None
    (no list, not listed, changed since, unreadable)."""
    try:
        listed = json.loads((step_dir / FILES).read_text())["files"][name]
        data = (step_dir / name).read_bytes()
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return data if listed == [len(data), zlib.crc32(data)] else None


def newest_record(folder: str | os.PathLike[str]) -> tuple[int, dict[str, Any]] | None:
    """``(step, record)`` of the newest step of ``folder`` whose record is as its file list says
    and reads as ``{"fingerprint": ..., "meta": {...}}``; None when no step's does (a step
    whose record is missing, changed, not JSON or of another shape is passed over, as a
    restore passes over a damaged step)."""
    for step in reversed(complete_steps(folder)):
        data = _read_listed(Path(folder) / str(step), RECORD)
        try:
            record = None if data is None else json.loads(data)
        except ValueError:  # not text, not JSON
            continue
        if record_problem(record) is None:
            return step, record
    return None


def record_problem(record: Any) -> str | None:
    """None when ``record`` is a checkpoint record ``{"fingerprint": ..., "meta": {...}}``,
    else a few words on what it is instead (``a list``, ``keys ['x']``, ``meta a str``)."""
    if not isinstance(record, dict):
        return f"a {type(record).__name__}"
    if set(record) != {"fingerprint", "meta"}:
        return f"keys {short(repr(sorted(map(str, record))), 40)}"
    if not isinstance(record["meta"], dict):
        return f"meta a {type(record['meta']).__name__}"
    return None


def short(text: str, limit: int = 80) -> str:
    """``text``'s first line, cut to ``limit`` characters (``...`` marks a cut): what a
    one-line message quotes of an error or a value, never a dump of it."""
    lines = text.strip().splitlines()
    line = lines[0] if lines else ""
    return line if len(line) <= limit else line[: limit - 3] + "..."


def first_difference(saved: Any, known: dict[str, Any], path: str = "") -> str | None:
    """The first of ``known``'s entries (keys in sorted order, nested dicts entered) whose value
    differs from ``saved``'s, as ``config.batch_size: saved 8, this run 1024`` (a key
    ``saved`` lacks reads as None); None when every known entry matches. ``known`` holds what
    a command knows of its run's fingerprint before jax is imported: a part of it."""
    here = saved if isinstance(saved, dict) else {}
    for key in sorted(known):
        sub = f"{path}.{key}" if path else str(key)
        want, have = known[key], here.get(key)
        if isinstance(want, dict):
            diff = first_difference(have, want, sub)
            if diff:
                return diff
        elif have != want:
            return f"{sub}: saved {short(repr(have), 40)}, this run {short(repr(want), 40)}"
    return None


def check_folder(folder: str | os.PathLike[str], flag: str, kind: str,
                 known: dict[str, Any] | None = None) -> None:
    """Refuse (ValueError naming ``flag``) a checkpoint folder whose newest readable record
    belongs to another kind of run than ``kind`` (``"tabular"``, ``"MARL"``, ``"ActorQ"``),
    or differs from ``known`` (a part of this run's fingerprint, :func:`first_difference`).
    Nothing when the folder holds no readable record: the full check decides then."""
    found = newest_record(folder)
    if found is None:
        return
    step, record = found
    saved = record["fingerprint"]
    saved_kind = run_kind(saved)
    if saved_kind is not None and saved_kind != kind:
        raise ValueError(f"{flag} {folder} holds {a_kind(saved_kind)} run's checkpoints, not "
                         f"{a_kind(kind)} run's: choose another folder")
    diff = None if known is None else first_difference(saved, known)
    if diff is not None:
        raise ValueError(f"{flag} {folder}: its checkpoint {step} belongs to another run "
                         f"configuration ({diff}): resume with the same options, or choose "
                         "another folder")


__all__ = ["FILES", "KIND_MARKERS", "RECORD", "a_kind", "check_folder", "complete_steps",
           "first_difference", "newest_record", "record_problem", "run_kind", "short"]
