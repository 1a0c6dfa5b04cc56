"""Generated blocks and values: what ``make_docs.py`` fills into the pages from results files.

The marker syntax (``<!-- generated: ... -->`` ... ``<!-- end generated -->`` blocks and
``<!-- value: FILE KEY [FORMAT] -->`` ... ``<!-- end value -->`` values; ``make_docs.py``'s
docstring describes them), a summary value as text (:func:`fmt_value`), a block's body
(:func:`render_block`: a results ``.md``, one of its tables, or summary keys, then the line
naming its source), a value's text (:func:`render_value`) and a page with every block and
value filled (:func:`fill`).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from benchmarks import headline
from benchmarks.docs.results import RESULTS, ROOT, load_json, rel_path

#: The lines that open and close a generated block, and an inline value marker.
BLOCK_START = re.compile(r"^\s*<!--\s*generated:\s*(?P<spec>.*?)\s*-->\s*$")
BLOCK_END = re.compile(r"^\s*<!--\s*end generated\s*-->\s*$")
VALUE = re.compile(r"<!--\s*value:\s*(?P<spec>[^>]*?)\s*-->(?P<text>.*?)<!--\s*end value\s*-->")
#: The separator line under a Markdown table's header.
SEPARATOR = re.compile(r"^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")


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
    shown = rel_path(json_path, root)
    try:
        system = load_json(json_path).get("system", {})
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


def relink(text: str, folder: Path, page: Path) -> str:
    """Point relative image/file links of a results ``.md`` (relative to its folder) at the
    same files from ``page``."""

    def sub(m: re.Match[str]) -> str:
        target = m.group(2)
        if re.match(r"^[a-z]+:", target) or target.startswith(("/", "#")):
            return m.group(0)
        return f"{m.group(1)}({os.path.relpath(folder / target, page.parent)})"

    return re.sub(r"(!?\[[^\]]*\])\(([^)\s]+)\)", sub, text)


def demote(text: str, levels: int) -> str:
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
        raise ValueError(f"{rel_path(path, root)} does not exist")
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
            text = demote(relink(text, path.parent, page), 2)
        body = [text, "", source_line(path.with_suffix(".json"), page, root)]
    elif path.suffix == ".json":
        unknown = set(options) - {"keys"}
        if unknown:
            raise ValueError(f"unknown option(s) {sorted(unknown)} for a .json block (keys=)")
        data = load_json(path)
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
        raise ValueError(f"{rel_path(path, root)} is not a results file")
    value = summary_value(load_json(path), parts[1])
    return fmt_value(value, parts[2] if len(parts) == 3 else None)


def fill(text: str, page: Path, root: Path = ROOT) -> tuple[str, list[tuple[int, str]]]:
    """``text`` with every generated block and value filled, and the problems found as
    ``(line, message)``: malformed or unclosed markers, unknown files or keys (left as they
    are). Stale content is not a problem here; compare the result with ``text``."""
    lines = text.split("\n")
    out: list[str] = []
    problems: list[tuple[int, str]] = []
    i = 0
    fenced = fenced_lines(lines)
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


def fenced_lines(lines: list[str]) -> list[bool]:
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
