"""The results files and the scripts that wrote them: the provenance check of ``make_docs.py``.

Where the results files are (:func:`results_files`), how a benchmark script is imported by
its path (:func:`load_script`), the check of one results file (:func:`check_results_file`:
its provenance fields, its device folder, its summary and ``.md`` recomputed by the script
that wrote it), the files under ``benchmarks/results/`` that no results file accounts for
(:func:`stray_files`) and the list of expected results files (:func:`expected_problems`).
"""

from __future__ import annotations

import ast
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from benchmarks import gpu_plan, harness
from jaxrl_pim import results_file

#: The repository root (results paths and scripts are relative to it).
ROOT = Path(__file__).resolve().parents[2]
#: The results folder, relative to the root.
RESULTS = Path("benchmarks") / "results"
#: The results files ``--check`` expects (see the file's header).
EXPECTED = Path("benchmarks") / "expected_results.txt"
#: The folder entry of :data:`EXPECTED` that stands for every accelerator folder.
ACCELERATOR_ENTRY = "gpu"


def results_files(root: Path = ROOT) -> list[Path]:
    """Every results file (``*.json``) under ``benchmarks/results/``, sorted."""
    folder = root / RESULTS
    return sorted(p for p in folder.rglob("*.json")) if folder.is_dir() else []


#: Scripts from outside this checkout (a test's fake repository) loaded by :func:`load_script`,
#: by path.
_MODULES: dict[Path, ModuleType] = {}


def load_script(path: Path) -> ModuleType:
    """Import a benchmark script without running it: one of this checkout's as the module
    ``benchmarks.<name>``; any other (a test's fake repository) from its path, once per
    process."""
    path = path.resolve()
    if path.parent == ROOT / "benchmarks":
        return importlib.import_module(f"benchmarks.{path.stem}")
    if path not in _MODULES:
        name = f"_benchmark_script_{path.stem}_{abs(hash(str(path)))}"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
        _MODULES[path] = module
    return _MODULES[path]


def script_title(script: Path) -> str:
    """First line of a script's module docstring (read without importing it)."""
    try:
        doc = ast.get_docstring(ast.parse(script.read_text()))
    except (OSError, SyntaxError):
        return ""
    return (doc or "").strip().splitlines()[0].strip() if doc else ""


def device_folder(backend: str, device_kind: str) -> str:
    """The results folder for a device (``harness.device_dir``)."""
    return harness.device_dir(backend, device_kind)


def rel_path(path: Path, root: Path) -> str:
    """``path`` relative to ``root`` as text (as it is when outside ``root``)."""
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def _summary_line(path: Path, key: str) -> int:
    """Line (1-based) of ``"key":`` inside the file's ``summary`` object (1 if not found)."""
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return 1
    start = next((i for i, s in enumerate(lines) if s.startswith('  "summary":')), None)
    if start is None:
        return 1
    head = key.split(".")[0].split(":")[0]
    for i in range(start, len(lines)):
        if lines[i].startswith(f'    "{head}":'):
            return i + 1
    return start + 1


def check_results_file(path: Path, root: Path = ROOT, *, committed: bool = True) -> list[str]:
    """Problems of one results file as ``path:line: message`` lines (empty when it passes).

    ``committed`` applies the rules for published files (device folder, committed clean code,
    no ``_smoke`` file); without it only the fields and the summary (and ``.md``) recompute
    are checked, as for a file just written by ``--smoke``.
    """
    where = rel_path(path, root)
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        return [f"{where}:1: not a readable JSON results file ({err})"]
    if not isinstance(data, dict):
        return [f"{where}:1: not a results report (a JSON object)"]
    out = [f"{where}:1: {p}" for p in results_file.provenance_problems(data, committed=committed)]
    system = data.get("system") if isinstance(data.get("system"), dict) else {}
    if committed:
        if path.stem.endswith("_smoke"):
            out.append(f"{where}:1: a --smoke file (test sizes) is never published")
        parts = Path(where).parts
        backend, kind = system.get("backend"), system.get("device_kind")
        if len(parts) != 4 or parts[:2] != RESULTS.parts:
            out.append(f"{where}:1: not in a device folder benchmarks/results/<device>/ "
                       "(publish with the script's --publish)")
        elif backend and kind and device_folder(backend, kind) != parts[2]:
            out.append(f"{where}:1: measured on {backend} ({kind}), which belongs in "
                       f"benchmarks/results/{device_folder(backend, kind)}/")
    script_name = system.get("script")
    if not script_name:
        return out + [f"{where}:1: summary not checked: no system.script names the writing "
                      "script"]
    script = root / script_name
    if not script.is_file():
        return out + [f"{where}:1: system.script {script_name} does not exist"]
    stem = path.stem.removesuffix(".partial")
    try:
        module = load_script(script)
    except Exception as err:  # noqa: BLE001 - report any import failure as a problem
        return out + [f"{where}:1: cannot import {script_name}: {type(err).__name__}: {err}"]
    # harness.add_file_tag: a script's second file, <script>_<tag>[_quick].json
    names = [script.stem] + [f"{script.stem}_{t}" for t in getattr(module, "FILE_TAGS", ())]
    if stem not in [n + s for n in names for s in ("", "_quick", "_smoke")]:
        out.append(f"{where}:1: name does not match its script {script_name} "
                   f"({script.stem}[_quick].json)")
    summarize = getattr(module, "summarize", None)
    if not callable(summarize):
        return out + [f"{where}:1: {script_name} defines no summarize(report)"]
    try:
        mismatches = results_file.summary_mismatches(data, summarize)
    except Exception as err:  # noqa: BLE001
        return out + [f"{where}:1: {script_name}.summarize() fails on this file: "
                      f"{type(err).__name__}: {err}"]
    for m in mismatches:
        key = m.split(":", 1)[0].removeprefix("summary.")
        out.append(f"{where}:{_summary_line(path, key)}: {m}")
    render = getattr(module, "render_markdown", None)
    md = path.with_suffix(".md")
    if not callable(render):
        out.append(f"{where}:1: {script_name} defines no render_markdown(report): its .md "
                   "table would not be checked against the records")
    else:
        try:
            want = render(json.loads(path.read_text()))
        except Exception as err:  # noqa: BLE001
            return out + [f"{where}:1: {script_name}.render_markdown() fails on this file: "
                          f"{type(err).__name__}: {err}"]
        if not md.is_file():
            out.append(f"{rel_path(md, root)}:1: missing (render_markdown() of {where} makes it)")
        else:
            have = md.read_text()
            if have != want:
                line = first_difference(have, want)
                out.append(f"{rel_path(md, root)}:{line}: differs from render_markdown() of "
                           f"{where} (edited by hand?)")
    return out


def first_difference(a: str, b: str) -> int:
    """The first line (1-based) where ``a`` and ``b`` differ."""
    la, lb = a.splitlines(), b.splitlines()
    for i, (x, y) in enumerate(zip(la, lb, strict=False)):
        if x != y:
            return i + 1
    return min(len(la), len(lb)) + 1


def stray_files(root: Path = ROOT) -> list[str]:
    """Files under ``benchmarks/results/`` that no results file accounts for."""
    folder = root / RESULTS
    if not folder.is_dir():
        return []
    out = []
    stems: dict[Path, list[str]] = {}
    for js in results_files(root):
        stems.setdefault(js.parent, []).append(js.stem)
    for p in sorted(folder.rglob("*")):
        if not p.is_file() or p.suffix == ".json" or p.name.startswith("."):
            continue
        own = stems.get(p.parent, [])
        if p.suffix == ".md" and p.stem in own:
            continue
        if p.suffix == ".png" and owner_of_plot(p.stem, own) is not None:
            continue
        out.append(f"{rel_path(p, root)}:1: not written with a results file (only <name>.json, "
                   "its .md and its .png plots belong here)")
    return out


def expected_problems(root: Path = ROOT) -> list[str]:
    """Results files listed in :data:`EXPECTED` that are missing, and results files it does
    not list (``gpu/<name>.json`` is expected in every results folder but ``cpu``)."""
    listing = root / EXPECTED
    where = rel_path(listing, root)
    if not listing.is_file():
        return [f"{where}:1: missing: the list of expected results files (without it a "
                "missing results file would pass unnoticed)"]
    accelerators = harness.accelerator_folders(root / RESULTS)
    out, listed = [], set()
    not_run = {f: gpu_suite_not_run(root / RESULTS / f) for f in accelerators}
    for n, line in enumerate(listing.read_text().split("\n"), start=1):
        entry = line.split("#", 1)[0].strip()
        if not entry:
            continue
        folder, _, name = entry.partition("/")
        if not name.endswith(".json") or "/" in name:
            out.append(f"{where}:{n}: {entry!r} is not <folder>/<name>.json")
            continue
        for f in accelerators if folder == ACCELERATOR_ENTRY else [folder]:
            rel = RESULTS / f / name
            listed.add(rel)
            if folder == ACCELERATOR_ENTRY and Path(name).stem in not_run[f]:
                continue  # the suite's call recorded this part as not finished
            if not (root / rel).is_file():
                stem = Path(name).stem
                quick = " --quick" if stem.endswith("_quick") else ""
                out.append(f"{where}:{n}: {rel.as_posix()} is missing (write it with python "
                           f"benchmarks/{stem.removesuffix('_quick')}.py{quick} --publish)")
    for path in results_files(root):
        if path.relative_to(root) not in listed:
            out.append(f"{rel_path(path, root)}:1: not in {where} (list every published results "
                       "file there)")
    return out


def gpu_suite_not_run(folder: Path) -> set[str]:
    """Results stems that the GPU suite's file in ``folder`` (``gpu_suite.json``) does not
    record as filed: parts that did not finish (skipped for time, stopped at the deadline,
    failed) and parts the call did not include (``--parts``); a lease-sized call files what
    it reached, and the rest is not expected here (a part recorded ``fresh`` was filed by an
    earlier call and is expected)."""
    path = folder / "gpu_suite.json"
    try:
        parts = json.loads(path.read_text())["results"]["parts"]
    except (OSError, ValueError, KeyError, TypeError):
        return set()
    rows = [p for p in parts if isinstance(p, dict) and isinstance(p.get("stem"), str)]
    filed = {p["stem"] for p in rows if p.get("status") in ("ok", "fresh")}
    return ({p["stem"] for p in rows} | {p.stem for p in gpu_plan.PARTS}) - filed


def owner_of_plot(plot_stem: str, stems: list[str]) -> str | None:
    """The results stem a plot belongs to: the longest stem equal to it or prefixing
    ``<stem>_``, e.g. ``quant_ptq_quick_bits`` -> ``quant_ptq_quick``."""
    best = None
    for s in stems:
        if (plot_stem == s or plot_stem.startswith(f"{s}_")) and (best is None
                                                                  or len(s) > len(best)):
            best = s
    return best


def load_json(path: Path) -> dict[str, Any]:
    """A results file's report (ValueError when it is not a JSON object)."""
    data = json.loads(path.read_text())
    if not isinstance(data, dict):
        raise ValueError(f"{path.name} is not a JSON object")
    return data
