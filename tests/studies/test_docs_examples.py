"""The user journey "PTQ of your own flax policy" in docs/quantization.md runs as written.

The page's example is the ```python block right after the line ``<!-- test: run -->`` under
that heading; it runs alone in a fresh interpreter (an empty folder, the XLA:CPU workaround
flags, LLVM optimisation level 1 like the other docs tests) and must print one line per
format. (``tests/test_docs_examples.py`` also runs every block of the page together.)
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import run_docs_example

PAGE = Path(__file__).resolve().parents[2] / "docs" / "quantization.md"
MARK = "<!-- test: run -->"


def marked_blocks(text: str) -> list[tuple[str, str]]:
    """``(heading, code)`` of every ```python block whose previous line is the mark."""
    lines = text.splitlines()
    out, heading = [], ""
    for i, line in enumerate(lines):
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
        if line.strip() == MARK and i + 1 < len(lines) and lines[i + 1].strip() == "```python":
            end = next(j for j in range(i + 2, len(lines)) if lines[j].strip() == "```")
            out.append((heading, "\n".join(lines[i + 2:end])))
    return out


def test_mark_extraction() -> None:
    text = "\n".join(["## A", MARK, "```python", "x = 1", "```", "## B", "```python", "y", "```"])
    assert marked_blocks(text) == [("A", "x = 1")]


@pytest.mark.slow
def test_ptq_of_your_own_flax_policy_runs(tmp_path: Path) -> None:
    blocks = marked_blocks(PAGE.read_text())
    journeys = [code for heading, code in blocks if heading == "PTQ of your own flax policy"]
    assert len(journeys) == 1
    code = journeys[0]
    assert "evaluate_quantized" in code and "nn.Module" in code
    proc = run_docs_example(code, tmp_path)
    assert proc.returncode == 0, proc.stderr[-4000:]
    rows = [line.split()[0] for line in proc.stdout.splitlines() if " return " in line]
    assert rows == ["fp32", "fp16", "int8", "bits=4"], proc.stdout
    assert "change   +0.0" in proc.stdout.splitlines()[0]
