"""The README's and the docs' Python examples run as written.

Every fenced ```python block of ``README.md`` and ``docs/**/*.md`` runs, page by page: the
blocks of one page run in order in one fresh interpreter (one namespace, like a notebook),
in an empty temporary folder, with the XLA:CPU workaround flags, compiled at the run's
effort (:func:`tests.support.run_docs_example`; ``tests/conftest.py``). A block is skipped only
when the line before its fence is ``<!-- docs-test: skip -->`` (for fragments that cannot
run alone, e.g. a multi-host launch); such blocks should be rare and say why nearby.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support import run_docs_example

ROOT = Path(__file__).resolve().parents[1]
SKIP = "<!-- docs-test: skip -->"
FENCE = re.compile(r"^```python\s*$")


def python_blocks(text: str) -> list[tuple[int, str]]:
    """``(first line number, code)`` of every runnable ```python block in ``text``."""
    lines = text.splitlines()
    blocks, i = [], 0
    while i < len(lines):
        if FENCE.match(lines[i].strip()):
            start = i + 1
            j = start
            while j < len(lines) and lines[j].strip() != "```":
                j += 1
            previous = next((lines[k].strip() for k in range(i - 1, -1, -1)
                             if lines[k].strip()), "")
            if previous != SKIP:
                blocks.append((start + 1, "\n".join(lines[start:j])))
            i = j + 1
        else:
            i += 1
    return blocks


def pages() -> list[Path]:
    found = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    return [p for p in found if python_blocks(p.read_text())]


def test_block_extraction() -> None:
    text = "\n".join(["x", "```python", "a = 1", "```", SKIP, "", "```python", "b = 2", "```",
                      "```bash", "c", "```", "```python", "d = 3", "```"])
    assert python_blocks(text) == [(3, "a = 1"), (14, "d = 3")]


@pytest.mark.slow
@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_page_examples_run(page: Path, tmp_path: Path) -> None:
    blocks = python_blocks(page.read_text())
    # Each block is compiled with its page and line, so a failure points at the docs.
    script = "\n".join(
        f"exec(compile({code!r}, {f'{page.name}:{line}'!r}, 'exec'))" for line, code in blocks)
    proc = run_docs_example(script, tmp_path)
    assert proc.returncode == 0, f"{page.name} examples failed:\n{proc.stdout[-3000:]}\n" \
                                 f"{proc.stderr[-5000:]}"
