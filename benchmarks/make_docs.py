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
  ``jaxrl_pim.results_file.provenance_problems``: command, script, commit, start and end time,
  load averages, machine, device kind and count, package versions); written from uncommitted
  code or by an uncommitted script; a ``_smoke`` file; a summary that the writing script's
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
import re
import sys
from pathlib import Path

from jaxrl_pim import report as report_lib

if __package__ in (None, ""):  # run as python benchmarks/make_docs.py
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
# the parts (benchmarks/docs/): results files and their check, generated blocks and values,
# numbers in prose and benchmark tables, and docs/benchmarks.md
from benchmarks.docs.blocks import BLOCK_END, BLOCK_START, fill
from benchmarks.docs.page import PAGE, benchmarks_page
from benchmarks.docs.prose import PROSE_UNCHECKED, benchmark_tables, prose_numbers
from benchmarks.docs.results import (
    ROOT,
    check_results_file,
    expected_problems,
    first_difference,
    load_script,
    rel_path,
    results_files,
    stray_files,
)

#: The interface beside the command, for tests and other scripts: the check and the
#: generation, the checks of one results file and of the expected list, and how a benchmark
#: script is imported by its path.
__all__ = ["NOT_BENCHMARKS", "check", "check_results_file", "expected_problems", "generate",
           "load_script", "main"]

#: Scripts in ``benchmarks/`` that are not benchmarks (they write no results file), and the
#: parts of a benchmark script beside it (``<script>_<part>.py``; a script of more parts has a
#: package of them, such as ``sampling/`` of ``marl_sampling.py``).
NOT_BENCHMARKS = ("__init__.py", "harness.py", "headline.py", "make_docs.py",
                  "pim_published.py", "tabular_gpu_knobs.py", "tabular_gpu_model.py",
                  "freshness.py", "gpu_archive.py", "gpu_parts.py", "gpu_plan.py",
                  "actorq_speedup_report.py", "marl_e2e_report.py", "marl_e2e_runs.py",
                  "tabular_gpu_report.py", "tabular_scaling_report.py",
                  "tabular_scaling_runs.py")


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
        problems += [f"{rel_path(page, root)}:{n}: {m}" for n, m in found]
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
        where = rel_path(page, root)
        if old is None:
            problems.append(f"{where}:1: missing (run python benchmarks/make_docs.py)")
        elif page == root / PAGE:
            if old != new:
                problems.append(f"{where}:{first_difference(old, new)}: stale (run python "
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
            print(f"wrote {rel_path(page, ROOT)}")
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
