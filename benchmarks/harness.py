"""What every benchmark script shares: the output convention and the results-file writer.

Each script in ``benchmarks/`` is run as ``python benchmarks/<name>.py [--quick] [--out DIR
| --publish]`` and follows one convention:

* ``--out DIR`` (default: a fresh folder ``out/<name>-<UTC time>/`` at the repository root,
  which git ignores) receives ``<name>[_quick].json`` and its ``.md`` table / ``.png`` plots;
  an existing results file there is never overwritten.
* ``--publish`` writes into the committed place instead, ``benchmarks/results/<device>/``
  (``cpu``, ``h100``, ``h200``, ``tpu-v5-lite``, ... from :func:`device_dir`), replacing the
  committed files of that name: the only way a committed result changes.
* ``--quick`` runs reduced sizes (minutes) and names its files ``*_quick.*``.
* ``--smoke`` runs test sizes (seconds; the numbers mean nothing) and names its files
  ``*_smoke.*``: what the test suite runs to check that every script works end to end and
  writes a results file that passes the provenance checks. Never published.

A script defines ``summarize(report) -> dict`` at module level (no side effects on import)
so ``benchmarks/make_docs.py --check`` can recompute every committed summary, and writes its
file with :func:`write` (``jaxrl_pim.report.write_results`` under the hood). When its
Markdown table is a function of the stored report, it defines ``render_markdown(report) ->
str`` too and passes it as ``markdown=``: ``--check`` then also regenerates the ``.md`` from
the JSON file. Scripts import this module as ``harness`` (the script's folder is first on
``sys.path`` when it runs).

Every value a script derives from another run (another results file) is recomputed from that
file's records and the file is named in the results; nothing is copied from an earlier run
of the script itself. A time extrapolated from fewer episodes than the quoted workload is
marked in its record (``extrapolated_from_episodes``), and a summary key holding an
extrapolated or estimated value says so in its name.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jaxrl_pim import report

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
SCRATCH = ROOT / "out"


def device_dir(backend: str | None = None, device_kind: str | None = None) -> str:
    """Folder name for a device: ``cpu``; ``h100`` / ``h200`` / ``a100`` for NVIDIA parts;
    a lower-case slug of the device kind otherwise (``tpu-v5-lite``). Defaults to jax's
    first device."""
    if backend is None or device_kind is None:
        import jax

        backend = backend or jax.default_backend()
        device_kind = device_kind or jax.devices()[0].device_kind
    if backend == "cpu":
        return "cpu"
    match = re.search(r"\b([A-Z]{1,3}\d{2,4}[A-Z]?)\b", device_kind)
    if "NVIDIA" in device_kind.upper() and match:
        return match.group(1).lower()
    return re.sub(r"[^a-z0-9]+", "-", device_kind.lower()).strip("-") or backend


def parser(doc: str | None) -> argparse.ArgumentParser:
    """An argument parser with the shared options (``--quick``, ``--out``, ``--publish``);
    the script's module docstring is its description."""
    p = argparse.ArgumentParser(
        description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    size = p.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true",
                      help="reduced sizes (minutes); files are named *_quick.* "
                           "(default: off, the full study)")
    size.add_argument("--smoke", action="store_true",
                      help="test sizes (seconds, numbers meaningless); files are named "
                           "*_smoke.* and cannot be published (default: off)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--out", type=Path, default=None, metavar="DIR",
                       help="folder for the results files (default: a fresh folder "
                            "out/<name>-<UTC time>/ that git ignores)")
    where.add_argument("--publish", action="store_true",
                       help="write into benchmarks/results/<device>/, replacing the "
                            "committed files of this name (default: off)")
    return p


def add_file_tag(p: argparse.ArgumentParser, tags: tuple[str, ...]) -> None:
    """``--file-tag TAG``: name the results file ``<name>_<TAG>[_quick].json``, for a second
    invocation of one script with other parts selected (the GPU suite runs a script's
    headline parts and, if time is left, its optional parts as separate files). The script
    lists its tags in a module-level ``FILE_TAGS`` so ``make_docs.py --check`` accepts the
    name."""
    p.add_argument("--file-tag", choices=tags, default=None,
                   help="write <name>_<TAG>.json instead of <name>.json (default: none)")


def output_path(args: argparse.Namespace, name: str) -> Path:
    """Where ``<name>[_<file tag>][_quick].json`` goes under the convention above; refuses
    (ValueError) to overwrite an existing file unless ``--publish`` was given."""
    if getattr(args, "file_tag", None):
        name = f"{name}_{args.file_tag}"
    stem = name
    if getattr(args, "quick", False):
        stem = f"{name}_quick"
    if getattr(args, "smoke", False):
        stem = f"{name}_smoke"
        if getattr(args, "publish", False):
            raise ValueError("--smoke results are never published; use --out DIR")
    if getattr(args, "publish", False):
        folder = RESULTS / device_dir()
        state = report.git_state(ROOT / "benchmarks")
        if state["dirty"] or state["commit"] is None:
            print("warning: publishing from "
                  + ("outside a git checkout" if state["commit"] is None else
                     "uncommitted code (" + ", ".join(state["dirty_paths"][:5]) + ")")
                  + ": make_docs.py --check will reject this results file; commit first",
                  file=sys.stderr, flush=True)
    elif args.out is not None:
        folder = Path(args.out)
    else:
        stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%d-%H%M%S")
        folder = SCRATCH / f"{name}-{stamp}"
    path = folder / f"{stem}.json"
    if path.exists() and not getattr(args, "publish", False):
        raise ValueError(f"{path} exists; choose another --out folder (or --publish to "
                         "replace the committed results)")
    folder.mkdir(parents=True, exist_ok=True)
    return path


def write(
    path: Path,
    *,
    run: report.RunRecord,
    config: Any,
    results: dict[str, Any],
    timing_s: dict[str, Any],
    summarize: report.Summarize,
    markdown: str | Callable[[dict[str, Any]], str] | None = None,
) -> dict[str, Any]:
    """Write the results file whole (``jaxrl_pim.report.write_results``) and say where.

    ``markdown`` is the ``.md`` table's text, or a function of the stored report (the
    script's ``render_markdown``) that makes it."""
    out = report.write_results(path, run=run, config=config, results=results,
                               timing_s=timing_s, summarize=summarize, markdown=markdown)
    print(f"wrote {path}" + (" and its .md table" if markdown is not None else ""))
    return out


def require_baseline(module: str) -> Any:
    """Import ``module`` (an opponent of a speed benchmark: ``flashbax``, ``jaxmarl``), or stop
    with an error naming the ``bench`` extra that installs it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise SystemExit(
            f"{module} is needed for this benchmark's baseline ({err}); install the "
            f"'bench' extra: python3 -m pip install -e \".[bench]\"") from err
