"""The README's and the docs' Python examples run as written.

Every fenced ```python block of ``README.md`` and ``docs/**/*.md`` runs, page by page: the
blocks of one page run in order in one namespace (like a notebook), in an empty temporary
folder of their own, with the XLA:CPU workaround flags, compiled at the run's effort
(:func:`tests.support.run_docs_example`; ``tests/conftest.py``). A block is skipped only
when the line before its fence is ``<!-- docs-test: skip -->`` (for fragments that cannot
run alone, e.g. a multi-host launch); such blocks should be rare and say why nearby.

All pages run one after another in one fresh interpreter (the ``docs_run`` fixture, once per
run; its tests share one xdist worker): a fresh interpreter per page cost each page the
interpreter's start and jax's and the library's imports again, about a fifth of the pages'
CPU time. Each page gets a namespace and a folder of its own; a page that fails does not stop
the pages after it, and its test fails with its traceback.

A *user journey* is a block whose previous line is ``<!-- test: run -->``: a complete example
that must run alone, in a fresh interpreter, and print what its page says. The interpreter
runs the journey before anything else (so it is alone in a fresh interpreter until it ends,
and defines nothing the other blocks see), then its page's other blocks, then the other
pages; :data:`JOURNEYS` checks what it printed. A second page with a journey would get an
interpreter of its own (:func:`page_groups`).
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


#: printed before each page's output in the shared interpreter (followed by the page's path)
PAGE_START = "===== docs-test page: "
#: printed after a page whose blocks all ran; a failed page prints PAGE_FAILED and its traceback
PAGE_OK = "----- docs-test: page ok -----"
PAGE_FAILED = "----- docs-test: page failed -----"


def _rel(page: Path) -> str:
    """A page's path as the tests name it (relative to the repository)."""
    return str(page.relative_to(ROOT)) if page.is_relative_to(ROOT) else str(page)


def page_groups(found: list[Path]) -> list[list[Path]]:
    """The pages of each interpreter: one for all pages, its journey page first; each further
    page with a journey in an interpreter of its own (a journey runs first in a fresh one)."""
    with_journey = [p for p in found if marked_blocks(p.read_text())]
    shared = with_journey[:1] + [p for p in found if p not in with_journey]
    return [shared] + [[p] for p in with_journey[1:]]


def group_script(group: list[Path], folders: dict[Path, Path]) -> str:
    """One interpreter's script: each page of ``group`` (:func:`page_script`) in its own
    namespace and folder (``folders``), between :data:`PAGE_START` and :data:`PAGE_OK` or
    :data:`PAGE_FAILED` and the page's traceback."""
    lines = ["import os, traceback"]
    for page in group:
        rel = _rel(page)
        lines += [f"print({PAGE_START + rel!r}, flush=True)",
                  f"os.chdir({str(folders[page])!r})",
                  "try:",
                  f"    exec(compile({page_script(page)!r}, {rel!r}, 'exec'), "
                  "{'__name__': '__main__'})",
                  f"    print({PAGE_OK!r}, flush=True)",
                  "except BaseException:",
                  f"    print({PAGE_FAILED!r}, flush=True)",
                  "    traceback.print_exc(file=__import__('sys').stdout)"]
    return "\n".join(lines)


def split_pages(stdout: str) -> dict[str, str]:
    """page path -> what the shared interpreter printed for it (from :func:`group_script`)."""
    out: dict[str, str] = {}
    for chunk in stdout.split(PAGE_START)[1:]:
        rel, _, text = chunk.partition("\n")
        out[rel] = text
    return out


@pytest.fixture(scope="module")
def docs_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, str]]:
    """page path -> (its output, how its interpreter ended), every page run once."""
    results: dict[str, tuple[str, str]] = {}
    for i, group in enumerate(page_groups(pages())):
        root = tmp_path_factory.mktemp(f"docs{i}")
        folders = {page: root / f"page{j}" for j, page in enumerate(group)}
        for folder in folders.values():
            folder.mkdir()
        proc = run_docs_example(group_script(group, folders), root, timeout_s=900)
        ended = f"exit status {proc.returncode}; stderr:\n{proc.stderr[-5000:]}"
        for rel, text in split_pages(proc.stdout).items():
            results[rel] = (text, ended)
    return results


def test_pages_run_apart_in_the_shared_interpreter(tmp_path: Path) -> None:
    pages_ = [tmp_path / "a.md", tmp_path / "b.md", tmp_path / "c.md"]
    pages_[0].write_text("```python\nx = 1\nopen('here', 'w').close()\nprint('a', x)\n```")
    pages_[1].write_text("```python\nprint('b', 'x' in globals())\nraise ValueError('bad')\n```")
    pages_[2].write_text("```python\nprint('c', 'x' in globals())\n```")
    folders = {p: tmp_path / p.stem for p in pages_}
    for folder in folders.values():
        folder.mkdir()
    proc = run_docs_example(group_script(pages_, folders), tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (folders[pages_[0]] / "here").exists() and not (folders[pages_[1]] / "here").exists()
    out = split_pages(proc.stdout)
    assert list(out) == [str(p) for p in pages_]
    assert out[str(pages_[0])].splitlines()[-2:] == ["a 1", PAGE_OK]
    assert PAGE_FAILED in out[str(pages_[1])] and "ValueError: bad" in out[str(pages_[1])]
    assert out[str(pages_[2])].splitlines()[-2:] == ["c False", PAGE_OK]  # nothing of a's


def test_journey_page_runs_first_and_a_second_one_alone(tmp_path: Path) -> None:
    plain, j1, j2 = (tmp_path / n for n in ("plain.md", "j1.md", "j2.md"))
    plain.write_text("```python\nx = 1\n```")
    for page in (j1, j2):
        page.write_text("\n".join(["## J", MARK, "```python", "y = 2", "```"]))
    assert page_groups([plain, j1, j2]) == [[j1, plain], [j2]]
    assert page_groups([plain]) == [[plain]]


@pytest.mark.slow
@pytest.mark.xdist_group("docs-pages")  # the docs_run fixture's process, once
@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_page_examples_run(page: Path, docs_run: dict[str, tuple[str, str]]) -> None:
    rel = _rel(page)
    if rel not in docs_run:
        ended = next(iter(docs_run.values()), ("", "no page ran"))[1]
        pytest.fail(f"the docs interpreter ended before {rel} ({ended})", pytrace=False)
    text, ended = docs_run[rel]
    assert PAGE_OK in text.splitlines(), f"{rel} examples failed:\n{text[-6000:]}\n{ended}"
    journeys_out = text.split(JOURNEYS_END + "\n")[0]
    journeys = marked_blocks(page.read_text())
    for heading, _, code in journeys:
        # one journey per page so far: what it printed is everything before JOURNEYS_END
        assert len(journeys) == 1
        JOURNEYS[(rel, heading)](code, journeys_out)
