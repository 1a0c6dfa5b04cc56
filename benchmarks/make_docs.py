"""Generate the benchmark docs from the results files, and check the provenance contract.

    python benchmarks/make_docs.py            # write docs/benchmarks.md, fill generated blocks
    python benchmarks/make_docs.py --check    # change nothing; list every problem, exit 1

``docs/benchmarks.md`` is generated whole: first the headline table (``headline.py``: one
row per side-by-side comparison, the library against an opponent by name and version, the
worst variant and the median), then one section per results file
``benchmarks/results/<device>/<name>[_quick].json`` (written by ``python
benchmarks/<name>.py [--quick] --publish``) with the command, commit, machine, package
versions and host load of its run, its summary, its Markdown table and its plots.

Other pages (``README.md``, ``docs/**/*.md``, ``benchmarks/*.md``) quote results only
through generated blocks and values, which this script fills (paths are relative to
``benchmarks/results/``)::

    <!-- generated: cpu/marl_e2e.md table=2 -->
    (the 2nd table of benchmarks/results/cpu/marl_e2e.md, then a line naming its source;
    without table=N the whole file)
    <!-- end generated -->

    <!-- generated: cpu/marl_e2e.json keys=fast_mode_return_delta,fast_mode_return_delta_se -->
    (those summary values as a list, then the source line; without keys= the whole summary)
    <!-- end generated -->

    <!-- generated: headline -->
    (the headline table, as at the top of docs/benchmarks.md)
    <!-- end generated -->

    MADDPG ends <!-- value: cpu/marl_e2e.json maddpg_spread3_improvement_vs_random .1% -->
    34.4%<!-- end value --> above random play.   (one line in a page: a summary value; the
    key may be a dotted path into the summary, the optional format is a Python format spec;
    a null value reads "not measured")

A table of published paper figures or of options and defaults is marked by the line
``<!-- table: paper -->`` or ``<!-- table: defaults -->`` right before it.

``--check`` reports, one line each as ``path:line: problem``:

* results files (every ``*.json`` under ``benchmarks/results/``): not in a device folder
  named for the device it ran on; a report key or a provenance field missing (see
  ``jaxrl_pim.report.provenance_problems``: command, script, commit, start and end time, load
  averages, machine, device kind and count, package versions); written from uncommitted code
  or by an uncommitted script; a ``_smoke`` file; a summary that the writing script's
  ``summarize(report)`` (the script named in ``system.script``, loaded from its path) does
  not reproduce exactly, key by key; a ``.md`` that the script's ``render_markdown(report)``
  does not reproduce, or a script without ``render_markdown``;
* any other file under ``benchmarks/results/`` that is not the ``.md`` or a ``.png`` of a
  results file in the same folder (hand-written notes, logs);
* a results file listed in ``benchmarks/expected_results.txt`` that is missing (its
  ``gpu/`` entries are expected in every accelerator folder that exists), a results file
  the list does not name, or no list at all;
* ``docs/benchmarks.md`` differing from what this script generates;
* a generated block or value that is stale, malformed, unclosed, or refers to a file or key
  that does not exist;
* a benchmark table outside a generated block: a Markdown table with a row of at least two
  numeric cells, one of which looks measured (a decimal fraction, an exponent, a thousands
  separator, a sign, a percentage or a time unit), not marked as paper figures or defaults;
* a number in prose that reads as a measurement (a time, a percentage or a factor such as
  ``1.09x``) outside a value marker and not marked as a figure of another kind,
  ``<!-- figure: paper|estimate|setting -->...<!-- end figure -->`` (pages in
  ``PROSE_UNCHECKED`` are not checked yet).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import importlib.util
import json
import os
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from jaxrl_pim import report as report_lib

if __package__ in (None, ""):  # run as python benchmarks/make_docs.py
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks import gpu_plan, harness, headline

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path("benchmarks") / "results"
PAGE = Path("docs") / "benchmarks.md"
#: The results files ``--check`` expects (see the file's header).
EXPECTED = Path("benchmarks") / "expected_results.txt"
#: The folder entry of :data:`EXPECTED` that stands for every accelerator folder.
ACCELERATOR_ENTRY = "gpu"
#: Scripts in ``benchmarks/`` that are not benchmarks (they write no results file).
NOT_BENCHMARKS = ("__init__.py", "harness.py", "headline.py", "make_docs.py",
                  "pim_published.py", "tabular_gpu_knobs.py", "tabular_gpu_model.py",
                  "freshness.py", "gpu_archive.py", "gpu_parts.py", "gpu_plan.py")

BLOCK_START = re.compile(r"^\s*<!--\s*generated:\s*(?P<spec>.*?)\s*-->\s*$")
BLOCK_END = re.compile(r"^\s*<!--\s*end generated\s*-->\s*$")
VALUE = re.compile(r"<!--\s*value:\s*(?P<spec>[^>]*?)\s*-->(?P<text>.*?)<!--\s*end value\s*-->")
TABLE_MARK = re.compile(r"^\s*<!--\s*table:\s*(paper|defaults)\s*-->\s*$")
SEPARATOR = re.compile(r"^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")


# ---------------------------------------------------------------------------------------------
# Loading results files and the scripts that wrote them.


def results_files(root: Path = ROOT) -> list[Path]:
    """Every results file (``*.json``) under ``benchmarks/results/``, sorted."""
    folder = root / RESULTS
    return sorted(p for p in folder.rglob("*.json")) if folder.is_dir() else []


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


def _rel(path: Path, root: Path) -> str:
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
    where = _rel(path, root)
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        return [f"{where}:1: not a readable JSON results file ({err})"]
    if not isinstance(data, dict):
        return [f"{where}:1: not a results report (a JSON object)"]
    out = [f"{where}:1: {p}" for p in report_lib.provenance_problems(data, committed=committed)]
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
        mismatches = report_lib.summary_mismatches(data, summarize)
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
            out.append(f"{_rel(md, root)}:1: missing (render_markdown() of {where} makes it)")
        else:
            have = md.read_text()
            if have != want:
                line = _first_difference(have, want)
                out.append(f"{_rel(md, root)}:{line}: differs from render_markdown() of "
                           f"{where} (edited by hand?)")
    return out


def _first_difference(a: str, b: str) -> int:
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
        out.append(f"{_rel(p, root)}:1: not written with a results file (only <name>.json, "
                   "its .md and its .png plots belong here)")
    return out


def expected_problems(root: Path = ROOT) -> list[str]:
    """Results files listed in :data:`EXPECTED` that are missing, and results files it does
    not list (``gpu/<name>.json`` is expected in every results folder but ``cpu``)."""
    listing = root / EXPECTED
    where = _rel(listing, root)
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
            out.append(f"{_rel(path, root)}:1: not in {where} (list every published results "
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


# ---------------------------------------------------------------------------------------------
# Rendering.


def fmt_value(value: Any, spec: str | None = None) -> str:
    """A summary value as text: ``format(value, spec)`` when a spec is given; otherwise
    integers with thousands separators, floats to 4 significant digits, ``null`` as "not
    measured", lists and objects as JSON."""
    if value is None:
        return "not measured"
    if spec:
        return format(value, spec)
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, str):
        return value
    return json.dumps(value)


def _load_json(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text())
    if not isinstance(data, dict):
        raise ValueError(f"{path.name} is not a JSON object")
    return data


def summary_value(data: dict[str, Any], key: str) -> Any:
    """``summary[key]``, where ``key`` may be a dotted path (``estimated_60k_s.spread3``)."""
    value: Any = data.get("summary", {})
    for part in key.split("."):
        if not isinstance(value, dict) or part not in value:
            raise KeyError(f"summary has no {key!r}")
        value = value[part]
    return value


def source_line(json_path: Path, page: Path, root: Path) -> str:
    """One line naming a results file and the command, commit and time of its run."""
    link = os.path.relpath(json_path, page.parent)
    shown = _rel(json_path, root)
    try:
        system = _load_json(json_path).get("system", {})
    except (OSError, ValueError):
        return f"_Source: [{shown}]({link})._"
    if not system.get("command"):
        return f"_Source: [{shown}]({link}) (no provenance record)._"
    commit = (system.get("git_commit") or "?")[:10]
    return (f"_Source: [{shown}]({link}), written by `{system['command']}` at commit "
            f"`{commit}`, {system.get('end_utc') or system.get('time_utc')}._")


def markdown_tables(text: str) -> list[str]:
    """The Markdown tables in ``text`` (header, separator, rows), in order."""
    lines = text.splitlines()
    tables, i = [], 0
    while i < len(lines):
        if (lines[i].lstrip().startswith("|") and i + 1 < len(lines)
                and SEPARATOR.match(lines[i + 1])):
            j = i + 2
            while j < len(lines) and lines[j].lstrip().startswith("|"):
                j += 1
            tables.append("\n".join(lines[i:j]))
            i = j
        else:
            i += 1
    return tables


def _relink(text: str, folder: Path, page: Path) -> str:
    """Point relative image/file links of a results ``.md`` (relative to its folder) at the
    same files from ``page``."""

    def sub(m: re.Match[str]) -> str:
        target = m.group(2)
        if re.match(r"^[a-z]+:", target) or target.startswith(("/", "#")):
            return m.group(0)
        return f"{m.group(1)}({os.path.relpath(folder / target, page.parent)})"

    return re.sub(r"(!?\[[^\]]*\])\(([^)\s]+)\)", sub, text)


def _demote(text: str, levels: int) -> str:
    """Headings one to ``6 - levels`` deep become ``levels`` deeper (outside code fences)."""
    out, fence = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fence = not fence
        if not fence and re.match(r"^#{1,6} ", line):
            line = "#" * levels + line
        out.append(line)
    return "\n".join(out)


def parse_spec(spec: str) -> tuple[str, dict[str, str]]:
    """``"cpu/x.md table=2"`` -> ``("cpu/x.md", {"table": "2"})``."""
    parts = spec.split()
    if not parts:
        raise ValueError("empty generated marker (expected a results path)")
    options = {}
    for p in parts[1:]:
        if "=" not in p:
            raise ValueError(f"option {p!r} is not name=value")
        k, v = p.split("=", 1)
        options[k] = v
    return parts[0], options


def render_block(spec: str, page: Path, root: Path = ROOT) -> str:
    """The body of a generated block (between its markers; starts and ends with a blank
    line). Raises ValueError / KeyError / OSError when the spec cannot be rendered."""
    ref, options = parse_spec(spec)
    if ref == "headline":  # the headline table (benchmarks/headline.py)
        if options:
            raise ValueError("the headline block takes no options")
        return "\n" + headline.headline_table(root, page) + "\n"
    path = root / RESULTS / ref
    if not path.is_file():
        raise ValueError(f"{_rel(path, root)} does not exist")
    if path.suffix == ".md":
        unknown = set(options) - {"table"}
        if unknown:
            raise ValueError(f"unknown option(s) {sorted(unknown)} for a .md block (table=N)")
        text = path.read_text().strip()
        if "table" in options:
            tables = markdown_tables(text)
            n = int(options["table"])
            if not 1 <= n <= len(tables):
                raise ValueError(f"{ref} has {len(tables)} table(s), not a table {n}")
            text = tables[n - 1]
        else:
            text = _demote(_relink(text, path.parent, page), 2)
        body = [text, "", source_line(path.with_suffix(".json"), page, root)]
    elif path.suffix == ".json":
        unknown = set(options) - {"keys"}
        if unknown:
            raise ValueError(f"unknown option(s) {sorted(unknown)} for a .json block (keys=)")
        data = _load_json(path)
        keys = options["keys"].split(",") if "keys" in options else list(
            data.get("summary", {}))
        body = [f"* `{k}`: {fmt_value(summary_value(data, k))}" for k in keys]
        body += ["", source_line(path, page, root)]
    else:
        raise ValueError(f"{ref}: a generated block quotes a .md table or a .json summary")
    return "\n" + "\n".join(body) + "\n\n"


def render_value(spec: str, root: Path = ROOT) -> str:
    """The text of an inline value marker ``FILE KEY [FORMAT]``."""
    parts = spec.split()
    if len(parts) not in (2, 3):
        raise ValueError("a value marker is <!-- value: FILE KEY [FORMAT] -->")
    path = root / RESULTS / parts[0]
    if path.suffix != ".json" or not path.is_file():
        raise ValueError(f"{_rel(path, root)} is not a results file")
    value = summary_value(_load_json(path), parts[1])
    return fmt_value(value, parts[2] if len(parts) == 3 else None)


def fill(text: str, page: Path, root: Path = ROOT) -> tuple[str, list[tuple[int, str]]]:
    """``text`` with every generated block and value filled, and the problems found as
    ``(line, message)``: malformed or unclosed markers, unknown files or keys (left as they
    are). Stale content is not a problem here; compare the result with ``text``."""
    lines = text.split("\n")
    out: list[str] = []
    problems: list[tuple[int, str]] = []
    i = 0
    fenced = _fenced(lines)
    while i < len(lines):
        line = lines[i]
        if fenced[i]:
            out.append(line)
            i += 1
            continue
        start = BLOCK_START.match(line)
        if BLOCK_END.match(line):
            problems.append((i + 1, "'end generated' without a block start"))
            out.append(line)
            i += 1
            continue
        if not start:
            out.append(_fill_values(line, i + 1, root, problems))
            i += 1
            continue
        j = i + 1
        while j < len(lines) and not BLOCK_END.match(lines[j]) and not BLOCK_START.match(
                lines[j]):
            j += 1
        if j == len(lines) or BLOCK_START.match(lines[j]):
            problems.append((i + 1, f"generated block '{start['spec']}' has no "
                                    "'<!-- end generated -->'"))
            out.append(line)
            i += 1
            continue
        try:
            body = render_block(start["spec"], page, root)
        except (ValueError, KeyError, OSError) as err:
            problems.append((i + 1, f"generated block '{start['spec']}': {_msg(err)}"))
            out.extend(lines[i:j + 1])
        else:
            out.append(line)
            out.extend(body.split("\n")[:-1])
            out.append(lines[j])
        i = j + 1
    return "\n".join(out), problems


def _fenced(lines: list[str]) -> list[bool]:
    """Which lines are inside (or are) a code fence: markers and tables there are examples."""
    out, fence = [], False
    for line in lines:
        opener = line.lstrip().startswith(("```", "~~~"))
        out.append(fence or opener)
        if opener:
            fence = not fence
    return out


def _msg(err: BaseException) -> str:
    return err.args[0] if isinstance(err, KeyError) and err.args else str(err)


def _fill_values(line: str, number: int, root: Path, problems: list[tuple[int, str]]) -> str:
    def sub(m: re.Match[str]) -> str:
        try:
            text = render_value(m["spec"], root)
        except (ValueError, KeyError, OSError) as err:
            problems.append((number, f"value '{m['spec']}': {_msg(err)}"))
            return m.group(0)
        return m.group(0).replace(f"-->{m['text']}<!--", f"-->{text}<!--", 1)

    # values quoted in inline code are examples, not markers
    parts = re.split(r"(`[^`]*`)", line)
    return "".join(p if k % 2 else VALUE.sub(sub, p) for k, p in enumerate(parts))


# ---------------------------------------------------------------------------------------------
# Numbers in prose.

#: An inline span of figures that come from no results file, with what they are:
#: ``<!-- figure: paper -->996.5 s<!-- end figure -->`` (published figures of a paper),
#: ``estimate`` (arithmetic from stated constants, not a measurement) or ``setting`` (an
#: option, default, threshold or target the project sets).
FIGURE = re.compile(r"<!--\s*figure:\s*(?P<kind>[\w-]*)\s*-->(?P<text>.*?)<!--\s*end figure\s*-->")
FIGURE_KINDS = ("paper", "estimate", "setting")
#: A number that reads as a measurement in prose: a time, a percentage or a factor
#: (``6.55 ms``, ``28.9 %``, ``1.09x``; not ``3 x 2048``, a shape).
PROSE_NUMBER = re.compile(
    r"(?<![\w.])[-+\u2212]?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?\s*"
    r"(?:%|(?:s|ms|us|\u00b5s|ns|min)(?![\w/])|[x\u00d7](?![\w])(?!\s*\d))")
#: Pages whose prose numbers are not checked yet (each to be converted to values and figure
#: markers, then removed from here); every other page is checked.
PROSE_UNCHECKED = (
    "benchmarks/NOTES.md",  # the optimisation log: numbers of runs before the contract
)


def prose_numbers(text: str) -> list[tuple[int, str]]:
    """``(line, number)`` of every time, percentage or factor in prose that neither a value
    marker nor a figure marker covers (code fences and spans, generated blocks, tables and
    HTML comments are not prose; tables have their own check). A figure marker of an
    unknown kind is reported too."""
    lines = text.split("\n")
    fenced = _fenced(lines)
    out: list[tuple[int, str]] = []
    block = comment = indented = False
    for n, line in enumerate(lines, start=1):
        # an indented code block: 4+ spaces after a blank line (or more of the same block)
        indented = bool(line.strip()) and len(line) - len(line.lstrip()) >= 4 and (
            indented or n == 1 or not lines[n - 2].strip())
        if fenced[n - 1] or indented:
            continue
        if BLOCK_START.match(line):
            block = True
            continue
        if BLOCK_END.match(line):
            block = False
            continue
        if block or line.lstrip().startswith("|"):
            continue
        for m in FIGURE.finditer(line):
            if m["kind"] not in FIGURE_KINDS:
                out.append((n, f"figure marker of unknown kind {m['kind']!r} (one of "
                               f"{', '.join(FIGURE_KINDS)})"))
        prose = FIGURE.sub(" ", VALUE.sub(" ", re.sub(r"`[^`]*`", " ", line)))
        if comment:
            if "-->" not in prose:
                continue
            prose, comment = prose.split("-->", 1)[1], False
        prose = re.sub(r"<!--.*?-->", " ", prose)
        if "<!--" in prose:
            prose, comment = prose.split("<!--", 1)[0], True
        out += [(n, m.group(0).strip()) for m in PROSE_NUMBER.finditer(prose)]
    return out


# ---------------------------------------------------------------------------------------------
# The table detector.

NUMBER = re.compile(r"(?:(?<![\w.])[-+\u2212])?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?")
UNITS = {"s", "ms", "us", "\u00b5s", "ns", "min", "h", "x", "k", "m", "g", "b", "kb", "mb",
         "gb", "tb", "kib", "mib", "gib", "e", "nan", "inf", "n", "a", "na"}
TIME_UNIT = re.compile(r"\d\s*(?:s|ms|us|\u00b5s|ns|min|x|%)(?![A-Za-z0-9])")


def _cell_text(cell: str) -> str:
    cell = VALUE.sub(" ", cell)  # generated values are fine anywhere
    cell = re.sub(r"`[^`]*`", " ", cell)  # code: names, options, formulas
    cell = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", cell)
    return cell.replace("**", " ").replace("__", " ")


def cell_kind(cell: str) -> str:
    """``"measured"`` for a cell of numbers that look measured (a decimal fraction, an
    exponent, a thousands separator, a sign, a percentage or a unit of time / ratio),
    ``"number"`` for other numeric cells (counts, sizes), ``"text"`` otherwise."""
    text = _cell_text(cell)
    numbers = NUMBER.findall(text)
    if not numbers:
        return "text"
    rest = NUMBER.sub(" ", text)
    words = re.findall(r"[A-Za-z\u00b5]+", rest)
    if any(w.lower() not in UNITS for w in words):
        return "text"
    for n in numbers:
        if re.search(r"\d\.\d|\d[eE][-+]?\d|\d,\d{3}", n) or n[0] in "-+\u2212":
            return "measured"
    if TIME_UNIT.search(text):
        return "measured"
    return "number"


def _cells(row: str) -> list[str]:
    row = row.strip()
    row = row[1:] if row.startswith("|") else row
    row = row[:-1] if row.endswith("|") and not row.endswith("\\|") else row
    return [c.strip() for c in re.split(r"(?<!\\)\|", row)]


def is_benchmark_table(table: str) -> bool:
    """Whether a Markdown table quotes measurements: some row has at least two numeric
    cells, one of which looks measured (see :func:`cell_kind`)."""
    for row in table.splitlines()[2:]:
        kinds = [cell_kind(c) for c in _cells(row)]
        numeric = [k for k in kinds if k != "text"]
        if len(numeric) >= 2 and "measured" in numeric:
            return True
    return False


def benchmark_tables(text: str) -> list[int]:
    """Lines (1-based) where a benchmark table starts outside generated blocks, unless the
    line before it (ignoring blank lines) is ``<!-- table: paper -->`` or
    ``<!-- table: defaults -->``."""
    lines = text.split("\n")
    inside = _fenced(lines)
    open_at = None
    for i, line in enumerate(lines):
        if inside[i]:
            continue
        if BLOCK_START.match(line):
            open_at = i
        elif BLOCK_END.match(line) and open_at is not None:
            for k in range(open_at, i + 1):
                inside[k] = True
            open_at = None
    out, i = [], 0
    while i < len(lines):
        if (not inside[i] and lines[i].lstrip().startswith("|") and i + 1 < len(lines)
                and SEPARATOR.match(lines[i + 1])):
            j = i + 2
            while j < len(lines) and lines[j].lstrip().startswith("|"):
                j += 1
            before = next((lines[k] for k in range(i - 1, -1, -1) if lines[k].strip()), "")
            if not TABLE_MARK.match(before) and is_benchmark_table("\n".join(lines[i:j])):
                out.append(i + 1)
            i = j
        else:
            i += 1
    return out


# ---------------------------------------------------------------------------------------------
# docs/benchmarks.md


INTRO = """# Benchmark results

<!-- This page is generated by `python benchmarks/make_docs.py` from benchmarks/results/;
do not edit it by hand (the test suite runs `make_docs.py --check`). -->

Every number on this page comes from a results file under `benchmarks/results/<device>/`,
written whole by one run of a committed benchmark script (`python benchmarks/<name>.py
--publish`; `--quick` runs write `<name>_quick.*`). Each section names the command, the
commit, the machine, the package versions and the host's load average at the start and end
of the run, then the summary (recomputed from the file's records by the script's
`summarize()` whenever `make_docs.py --check` runs), the script's table and plots. Timings
depend on the machine and on how loaded it was: read them with the load average next to
them, and prefer ratios measured side by side in one run. A time extrapolated from fewer
episodes than the quoted workload is marked as such in its table. How results files are
written and checked: [design.md, Provenance](design.md#provenance).
"""


GPU_NOT_MEASURED = """## GPU

Not measured: `benchmarks/results/` has no folder for a GPU yet. One lease-sized call on one
H100 or H200 (at most 8 minutes, compiles included) produces the accelerator sections in
priority order: the tabular lane kernels on 2,000 lanes and 2,000 independent agents, MADDPG
per 1,000 episodes at 3, 24 and 48 agents and its phase shares at 48, the sampler round
against the copy bandwidth, quantized actor inference, and, if time is left, the kernel's
lanes-per-program / prefetch sweep and the 60,000-episode schedule:

    bash benchmarks/gpu_prepare.sh            # wheels into .whl/, prints the device command
    bash benchmarks/gpu_prepare.sh unpack gpu_suite-h200.tar.gz
    python benchmarks/make_docs.py

The results then appear here under `benchmarks/results/<device>/` (`h100`, `h200`, ...);
[Reproduce a benchmark table](guide/reproduce-a-benchmark.md#the-gpu-suite) says how the call
is made.
"""


def _device_heading(folder: str, files: list[Path]) -> str:
    kinds = set()
    for p in files:
        with contextlib.suppress(OSError, ValueError):
            system = _load_json(p).get("system", {})
            kinds.add(f"{system.get('device_count', '?')} x {system.get('device_kind', '?')}")
    return f"## `{folder}`: {', '.join(sorted(kinds))}"


#: The opponents each speed benchmark measures side by side in the same run (named in its
#: docs section; a file written before a comparison holds only the columns it measured).
OPPONENTS: dict[str, str] = {
    "marl_sampling": "the original code's pure-Python sampler, a vectorised NumPy sampler, "
                     "flashbax 0.1.3's item buffer and its prioritised item buffer",
    "mpe_rollout": "JaxMARL 0.2's particle worlds (spread and tag)",
}


def section(path: Path, page: Path, root: Path = ROOT) -> str:
    """The docs section of one results file."""
    try:
        data = _load_json(path)
    except (OSError, ValueError):
        return f"### `{path.stem}`\n\nUnreadable results file `{_rel(path, root)}`.\n"
    system = data.get("system", {}) if isinstance(data.get("system"), dict) else {}
    script = system.get("script") or f"benchmarks/{path.stem.removesuffix('_quick')}.py"
    title = script_title(root / script) if (root / script).is_file() else ""
    lines = [f"### `{path.stem}`" + (f": {title}" if title else ""), ""]
    stem = script.removeprefix("benchmarks/").removesuffix(".py")
    if stem in OPPONENTS:
        lines += [f"Opponents, side by side in the same run: {OPPONENTS[stem]}.", ""]
    rel = os.path.relpath(path, page.parent)
    lines.append(f"File: [{_rel(path, root)}]({rel})")
    lines.append("")
    if not system.get("command"):
        lines += ["**No provenance record**: this file was written before the provenance "
                  "contract (no command, commit or load average); its numbers are not "
                  "reproducible from a committed command and are to be regenerated.", ""]
    else:
        commit = system.get("git_commit") or "unknown"
        state = ("clean" if system.get("git_dirty") is False else
                 "with uncommitted changes to " + ", ".join(system.get("git_dirty_paths") or
                                                            ["tracked code"]))
        load0 = system.get("load_average_start")
        load1 = system.get("load_average_end")
        packages = system.get("packages") or {}
        versions = ", ".join([f"python {system.get('python', '?')}"]
                             + [f"{k} {v}" for k, v in packages.items()])
        lines += [
            f"* Command: `{system['command']}`",
            f"* Code: commit `{commit}` ({state})",
            f"* Run: {system.get('start_utc')} to {system.get('end_utc')}; host load average "
            f"(1, 5, 15 min) {_load(load0)} at the start, {_load(load1)} at the end",
            f"* Machine: {system.get('cpu', '?')} ({system.get('cpu_count', '?')} cores), "
            f"backend `{system.get('backend', '?')}`, {system.get('device_count', '?')} x "
            f"{system.get('device_kind', '?')}",
            f"* Versions: {versions}",
            "",
        ]
    summary = data.get("summary")
    if isinstance(summary, dict) and summary:
        lines += ["Summary (computed from the results by the script's `summarize()`):", ""]
        lines += [f"* `{k}`: {fmt_value(v)}" for k, v in summary.items()]
        lines.append("")
    md = path.with_suffix(".md")
    if md.is_file():
        lines += [_demote(_relink(md.read_text().strip(), md.parent, page), 3), ""]
    stems = [p.stem for p in path.parent.glob("*.json")]
    md_text = md.read_text() if md.is_file() else ""
    for plot in sorted(path.parent.glob("*.png")):
        if owner_of_plot(plot.stem, stems) == path.stem and plot.name not in md_text:
            lines += [f"![{plot.stem}]({os.path.relpath(plot, page.parent)})", ""]
    return "\n".join(lines)


def _load(values: Any) -> str:
    if not isinstance(values, list) or not values:
        return "unknown"
    return " / ".join(f"{v:.2f}" for v in values)


def benchmarks_page(root: Path = ROOT) -> str:
    """The whole text of ``docs/benchmarks.md``."""
    page = root / PAGE
    files = results_files(root)
    by_folder: dict[str, list[Path]] = {}
    legacy = []
    for p in files:
        parts = p.relative_to(root / RESULTS).parts
        if len(parts) == 2:
            by_folder.setdefault(parts[0], []).append(p)
        else:
            legacy.append(p)
    out = [INTRO, "## Headline: the library against the opponents users would pick\n",
           headline.headline_table(root, page)]
    listed = ", ".join(f"`{f}` ({len(v)} results files)" for f, v in sorted(by_folder.items()))
    devices = f"Devices with results: {listed or 'none yet'}."
    if not any(f != "cpu" for f in by_folder):
        devices += " GPU and TPU: not measured (no results folder for an accelerator)."
    out.append(devices + "\n")
    if not any(f != "cpu" for f in by_folder):
        out.append(GPU_NOT_MEASURED)
    for folder, paths in sorted(by_folder.items(), key=lambda kv: (kv[0] != "cpu", kv[0])):
        out.append(_device_heading(folder, paths) + "\n")
        out += [section(p, page, root) for p in paths]
    if legacy:
        out.append("## Files outside a device folder (written before the provenance contract)"
                   "\n")
        out += [section(p, page, root) for p in legacy]
    return "\n".join(out).rstrip() + "\n"


# ---------------------------------------------------------------------------------------------
# Pages, generation, check.


def doc_pages(root: Path = ROOT) -> list[Path]:
    """Pages whose generated blocks are filled and whose tables are checked: ``README.md``,
    ``docs/**/*.md`` (except the generated ``docs/benchmarks.md``) and ``benchmarks/*.md``."""
    pages = [root / "README.md"] if (root / "README.md").is_file() else []
    pages += sorted((root / "docs").rglob("*.md")) if (root / "docs").is_dir() else []
    pages += sorted((root / "benchmarks").glob("*.md")) if (root / "benchmarks").is_dir() else []
    return [p for p in pages if p != root / PAGE]


RESULTS_REF = re.compile(r"benchmarks/results/[\w./{},<>*-]*")


def missing_references(text: str, root: Path = ROOT) -> list[tuple[int, str]]:
    """``(line, path)`` of every ``benchmarks/results/...`` path a page names that does not
    exist (placeholders with ``<`` or ``*`` are skipped; ``x.{json,md}`` needs ``x.``)."""
    out = []
    for n, line in enumerate(text.split("\n"), start=1):
        for ref in RESULTS_REF.findall(line):
            ref = ref.rstrip(".,")
            if "<" in ref or "*" in ref:
                continue
            if "{" in ref:
                prefix = ref.split("{", 1)[0]
                folder = (root / prefix).parent if not prefix.endswith("/") else root / prefix
                name = "" if prefix.endswith("/") else Path(prefix).name
                if folder.is_dir() and any(p.name.startswith(name) for p in folder.iterdir()):
                    continue
            elif (root / ref).exists():
                continue
            out.append((n, ref))
    return out


def generate(root: Path = ROOT) -> tuple[dict[Path, str], list[str]]:
    """New texts of the generated page and of every page with generated blocks, and the
    marker problems found (``path:line: message``)."""
    texts = {root / PAGE: benchmarks_page(root)}
    problems = []
    for page in doc_pages(root):
        text = page.read_text()
        new, found = fill(text, page, root)
        problems += [f"{_rel(page, root)}:{n}: {m}" for n, m in found]
        texts[page] = new
    return texts, problems


def check(root: Path = ROOT) -> list[str]:
    """Every violation of the provenance contract, one ``path:line: message`` each."""
    problems: list[str] = []
    for path in results_files(root):
        problems += check_results_file(path, root, committed=True)
    problems += stray_files(root)
    problems += expected_problems(root)
    texts, found = generate(root)
    problems += found
    for page, new in texts.items():
        old = page.read_text() if page.is_file() else None
        where = _rel(page, root)
        if old is None:
            problems.append(f"{where}:1: missing (run python benchmarks/make_docs.py)")
        elif page == root / PAGE:
            if old != new:
                problems.append(f"{where}:{_first_difference(old, new)}: stale (run python "
                                "benchmarks/make_docs.py)")
        else:
            problems += [f"{where}:{n}: generated content is stale (run python "
                         "benchmarks/make_docs.py)" for n in _stale_lines(old, new)]
            problems += [f"{where}:{n}: benchmark table outside a generated block (quote "
                         "a results table with <!-- generated: ... -->; mark paper figures "
                         "or defaults with <!-- table: paper|defaults -->)"
                         for n in benchmark_tables(old)]
            problems += [f"{where}:{n}: refers to {ref}, which does not exist"
                         for n, ref in missing_references(old, root)]
            if where not in PROSE_UNCHECKED:
                problems += [f"{where}:{n}: number in prose {num!r} from no results file "
                             "(quote it with <!-- value: ... -->, or mark it <!-- figure: "
                             "paper|estimate|setting -->...<!-- end figure -->)"
                             if not num.startswith("figure marker") else f"{where}:{n}: {num}"
                             for n, num in prose_numbers(old)]
    return problems


def _stale_lines(old: str, new: str) -> list[int]:
    """Start lines of the blocks / value lines whose filled text differs."""
    a, b = old.split("\n"), new.split("\n")
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        start = BLOCK_START.match(a[i])
        if start:
            ei = next((k for k in range(i + 1, len(a)) if BLOCK_END.match(a[k])), len(a) - 1)
            ej = next((k for k in range(j + 1, len(b)) if BLOCK_END.match(b[k])), len(b) - 1)
            if a[i:ei + 1] != b[j:ej + 1]:
                out.append(i + 1)
            i, j = ei + 1, ej + 1
            continue
        if a[i] != b[j]:
            out.append(i + 1)
        i += 1
        j += 1
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true",
                        help="change nothing; print each problem as path:line: message and "
                             "exit 1 if there is any (default: off, regenerate)")
    args = parser.parse_args(argv)
    if args.check:
        problems = check(ROOT)
        for p in problems:
            print(p)
        print(f"{len(problems)} problem(s)" if problems else "provenance check passed",
              file=sys.stderr)
        return 1 if problems else 0
    texts, problems = generate(ROOT)
    for page, text in texts.items():
        if not page.is_file() or page.read_text() != text:
            report_lib.write_text(page, text)
            print(f"wrote {_rel(page, ROOT)}")
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
