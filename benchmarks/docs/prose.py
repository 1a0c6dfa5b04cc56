"""What ``make_docs.py --check`` flags in a page: numbers in prose and benchmark tables that
come from no results file.

:func:`prose_numbers`: a time, percentage or factor in prose outside a value marker and not
marked as a figure of another kind (``<!-- figure: paper|estimate|setting -->``);
:func:`benchmark_tables`: a Markdown table that quotes measurements (:func:`is_benchmark_table`,
cell by cell :func:`cell_kind`) outside a generated block and not marked as paper figures or
defaults (``<!-- table: paper|defaults -->``).
"""

from __future__ import annotations

import re

from benchmarks.docs.blocks import BLOCK_END, BLOCK_START, SEPARATOR, VALUE, fenced_lines

#: The line that marks the next table as paper figures or as defaults.
TABLE_MARK = re.compile(r"^\s*<!--\s*table:\s*(paper|defaults)\s*-->\s*$")
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
    fenced = fenced_lines(lines)
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
    inside = fenced_lines(lines)
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
