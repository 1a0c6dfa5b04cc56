"""The README's and the docs' Python examples run as written.

Every fenced ```python block of ``README.md`` and ``docs/**/*.md`` runs, page by page: the
blocks of one page run in order in one fresh interpreter (one namespace, like a notebook),
in an empty temporary folder, with the XLA:CPU workaround flags and LLVM optimisation level 1
(:data:`FAST_COMPILE`). A block is skipped only
when the line before its fence is ``<!-- docs-test: skip -->`` (for fragments that cannot
run alone, e.g. a multi-host launch); such blocks should be rare and say why nearby.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from jaxrl_pim.xla_env import CPU_WORKAROUND_FLAGS, with_flags

ROOT = Path(__file__).resolve().parents[1]
SKIP = "<!-- docs-test: skip -->"
FENCE = re.compile(r"^```python\s*$")
# The examples run small workloads, so their time is almost all XLA:CPU compilation (a
# training program takes 5-10 s to compile and well under 1 s to run). Level 1 of XLA's
# backend (LLVM) optimisation about halves compile time; the programs are the same, only
# their machine code is less optimised (float results may differ in the last bits, which
# the examples neither print as measured numbers nor assert on). An XLA_FLAGS that already
# sets the level keeps it.
FAST_COMPILE = "--xla_backend_optimization_level=1"


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
    env = dict(os.environ)
    env["XLA_FLAGS"] = with_flags(env.get("XLA_FLAGS", ""), *CPU_WORKAROUND_FLAGS,
                                  FAST_COMPILE)
    env["JAX_PLATFORMS"] = "cpu"
    env["MPLBACKEND"] = "Agg"
    proc = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"{page.name} examples failed:\n{proc.stdout[-3000:]}\n" \
                                 f"{proc.stderr[-5000:]}"
