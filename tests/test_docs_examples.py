"""The README's and the docs' Python examples run as written.

Every fenced ```python block of ``README.md`` and ``docs/**/*.md`` runs, page by page: the
blocks of one page run in order in one fresh interpreter (one namespace, like a notebook),
in an empty temporary folder, with the XLA:CPU workaround flags, compiled at the run's
effort (:func:`tests.support.run_docs_example`; ``tests/conftest.py``). A block is skipped only
when the line before its fence is ``<!-- docs-test: skip -->`` (for fragments that cannot
run alone, e.g. a multi-host launch); such blocks should be rare and say why nearby.

A *user journey* is a block whose previous line is ``<!-- test: run -->``: a complete example
that must run alone, in a fresh interpreter, and print what its page says. Its page's
interpreter runs it first, in a namespace of its own (so it is alone in a fresh interpreter
until it ends, and defines nothing the page's other blocks see), then the page's other blocks
in order; :data:`JOURNEYS` checks what it printed (one interpreter per page instead of a
second one for the journey).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support import run_docs_example

ROOT = Path(__file__).resolve().parents[1]
SKIP = "<!-- docs-test: skip -->"
MARK = "<!-- test: run -->"
FENCE = re.compile(r"^```python\s*$")
#: printed by the page's script after its journeys, before the page's other blocks
JOURNEYS_END = "----- docs-test: journeys end -----"


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


def marked_blocks(text: str) -> list[tuple[str, int, str]]:
    """``(heading, first line number, code)`` of every ```python block whose previous line is
    :data:`MARK` (the line numbers of :func:`python_blocks`)."""
    lines = text.splitlines()
    out, heading = [], ""
    for i, line in enumerate(lines):
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
        if line.strip() == MARK and i + 1 < len(lines) and FENCE.match(lines[i + 1].strip()):
            end = next(j for j in range(i + 2, len(lines)) if lines[j].strip() == "```")
            out.append((heading, i + 3, "\n".join(lines[i + 2:end])))
    return out


def check_ptq_journey(code: str, stdout: str) -> None:
    """docs/quantization.md, "PTQ of your own flax policy": a flax module of the user's through
    ``evaluate_quantized``; one line per format, fp32 first and unchanged against itself."""
    assert "evaluate_quantized" in code and "nn.Module" in code
    rows = [line.split()[0] for line in stdout.splitlines() if " return " in line]
    assert rows == ["fp32", "fp16", "int8", "bits=4"], stdout
    assert "change   +0.0" in stdout.splitlines()[0], stdout


#: ``(page, heading) -> check(code, stdout)`` for every journey of the docs
JOURNEYS = {("docs/quantization.md", "PTQ of your own flax policy"): check_ptq_journey}


def page_script(page: Path) -> str:
    """The page's blocks as one script: its journeys first, each in a namespace of its own,
    then :data:`JOURNEYS_END`, then its other blocks in order in one namespace. Each block is
    compiled with its page and line, so a failure points at the docs."""
    text = page.read_text()
    journeys = {line for _, line, _ in marked_blocks(text)}
    blocks = python_blocks(text)
    first = [(line, code) for line, code in blocks if line in journeys]
    rest = [(line, code) for line, code in blocks if line not in journeys]
    run = [f"exec(compile({code!r}, {f'{page.name}:{line}'!r}, 'exec'), "
           f"{{'__name__': '__main__'}})" for line, code in first]
    run.append(f"print({JOURNEYS_END!r}, flush=True)")
    run += [f"exec(compile({code!r}, {f'{page.name}:{line}'!r}, 'exec'))" for line, code in rest]
    return "\n".join(run)


def pages() -> list[Path]:
    found = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    return [p for p in found if python_blocks(p.read_text())]


def test_block_extraction() -> None:
    text = "\n".join(["x", "```python", "a = 1", "```", SKIP, "", "```python", "b = 2", "```",
                      "```bash", "c", "```", "```python", "d = 3", "```"])
    assert python_blocks(text) == [(3, "a = 1"), (14, "d = 3")]


def test_mark_extraction() -> None:
    text = "\n".join(["## A", MARK, "```python", "x = 1", "```", "## B", "```python", "y", "```"])
    assert marked_blocks(text) == [("A", 4, "x = 1")]
    assert python_blocks(text)[0] == (4, "x = 1")


def test_every_journey_is_checked() -> None:
    found = {(str(p.relative_to(ROOT)), heading)
             for p in pages() for heading, _, _ in marked_blocks(p.read_text())}
    assert found == set(JOURNEYS)


def test_journey_runs_first_in_its_own_namespace(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("\n".join([
        "```python", "x = 1", "print('a', x)", "```", "## J", MARK, "```python",
        "print('journey', 'x' in globals())", "y = 2", "```",
        "```python", "print('b', x, 'y' in globals())", "```"]))
    proc = run_docs_example(page_script(page), tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["journey False", JOURNEYS_END, "a 1", "b 1 False"]


@pytest.mark.slow
@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_page_examples_run(page: Path, tmp_path: Path) -> None:
    proc = run_docs_example(page_script(page), tmp_path)
    assert proc.returncode == 0, f"{page.name} examples failed:\n{proc.stdout[-3000:]}\n" \
                                 f"{proc.stderr[-5000:]}"
    journeys_out = proc.stdout.split(JOURNEYS_END + "\n")[0]
    journeys = marked_blocks(page.read_text())
    for heading, _, code in journeys:
        # one journey per page so far: what it printed is everything before JOURNEYS_END
        assert len(journeys) == 1
        JOURNEYS[(str(page.relative_to(ROOT)), heading)](code, journeys_out)
