"""Benchmark results files: what one holds, and whether its summary is the code's (contract 9).

A results file is a report (:func:`jaxrl_pim.report.make_report`) with a ``summary`` of the
headline numbers, written whole by :func:`write_results`: the ``summary`` is computed by the
script's ``summarize(report)`` function from the report exactly as it is stored (after the
JSON round trip), so :func:`summary_mismatches` can recompute it later from the file and
detect any hand edit. :func:`provenance_problems` lists what a results file lacks under the
contract (its ``system`` record: :mod:`jaxrl_pim.provenance`). ``benchmarks/make_docs.py
--check`` and the tests apply both.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jaxrl_pim.provenance import RunRecord
from jaxrl_pim.report import make_report, to_jsonable, write_json, write_text

#: A script's ``summarize(report) -> dict``: the headline numbers, from the report as stored.
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
