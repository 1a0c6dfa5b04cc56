"""mkdocs hook: repository files that the pages link to go into the site.

The pages are read on GitHub-style viewers too, so they link to repository files by their
relative path (``../benchmarks/results/cpu/marl_e2e.png`` from ``docs/benchmarks.md``). Those
files lie outside ``docs/``, where mkdocs cannot see them, and ``mkdocs build --strict`` would
stop on every such link. This hook copies each linked repository file that exists into the
site under ``_repo/<path in the repository>`` and points the link there, so plots render and
results files can be downloaded. A link to a file that does not exist is left as it is, and
the strict build still fails on it.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

#: Folder of the site that holds the copied repository files.
PREFIX = "_repo"
#: The target of a Markdown link or image: ``](target`` up to a space, ``)`` or ``#``.
LINK = re.compile(r"(\]\()([^)\s#]+)")


def _outside_target(page_src: Path, target: str, docs: Path, root: Path) -> str | None:
    """The repository path (POSIX) of a link target that leaves ``docs/`` and names an
    existing file of the repository, else None."""
    if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith(("/", "#")):
        return None
    path = (page_src.parent / target).resolve()
    if path.is_relative_to(docs) or not path.is_relative_to(root) or not path.is_file():
        return None
    return path.relative_to(root).as_posix()


def _lines_outside_fences(text: str) -> list[tuple[int, str, bool]]:
    """``(index, line, inside a code fence)`` for every line."""
    out, fence = [], False
    for i, line in enumerate(text.split("\n")):
        opener = line.lstrip().startswith(("```", "~~~"))
        out.append((i, line, fence or opener))
        if opener:
            fence = not fence
    return out


def on_files(files: Files, config: Any) -> Files:
    docs = Path(config["docs_dir"]).resolve()
    root = docs.parent
    wanted: set[str] = set()
    for f in list(files.documentation_pages()):
        src = Path(f.abs_src_path).resolve()
        for _, line, fenced in _lines_outside_fences(src.read_text(encoding="utf-8")):
            if fenced:
                continue
            for m in LINK.finditer(line):
                rel = _outside_target(src, m.group(2), docs, root)
                if rel is not None:
                    wanted.add(rel)
    for rel in sorted(wanted):
        uri = f"{PREFIX}/{rel}"
        if files.get_file_from_path(uri) is None:
            files.append(File.generated(config, uri, abs_src_path=str(root / rel)))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    docs = Path(config["docs_dir"]).resolve()
    root = docs.parent
    src = Path(page.file.abs_src_path).resolve()
    here = posixpath.dirname(page.file.src_uri)

    def sub(m: re.Match[str]) -> str:
        rel = _outside_target(src, m.group(2), docs, root)
        if rel is None:
            return m.group(0)
        return m.group(1) + posixpath.relpath(f"{PREFIX}/{rel}", here or ".")

    lines = markdown.split("\n")
    for i, line, fenced in _lines_outside_fences(markdown):
        if not fenced:
            lines[i] = LINK.sub(sub, line)
    return "\n".join(lines)
