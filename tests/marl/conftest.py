"""Fixtures of the MARL tests.

``jaxmarl_run``: one tiny ``jaxrl-pim marl`` run on JaxMARL's spread with ``--checkpoint``
(:data:`tests.support.marl.JAXMARL_TINY`), trained once per worker for the tests that read a
trained JaxMARL checkpoint back (``test_policies.py``, ``test_evaluate_command.py``). Those
tests are in the xdist group :data:`tests.support.marl.JAXMARL_GROUP`, so that one worker
runs them all and the run is trained once; the same worker then finds the command's compiled
segment programs in ``marl.checkpoint``'s program cache when a test repeats the run through
the Python API.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import NamedTuple

import pytest

from tests.support.marl import JAXMARL_TINY


class CommandRun(NamedTuple):
    """A finished ``jaxrl-pim marl`` run: exit status, stdout, checkpoint folder, report."""

    status: int
    out: str
    checkpoint: Path
    report: Path


@pytest.fixture(scope="session")
def jaxmarl_run(tmp_path_factory: pytest.TempPathFactory) -> CommandRun:
    """``jaxrl-pim marl`` with :data:`JAXMARL_TINY` (seed 0), ``--checkpoint`` and ``--json``."""
    pytest.importorskip("jaxmarl")
    from jaxrl_pim.cli import main

    folder = tmp_path_factory.mktemp("jaxmarl_run")
    ckpt, report = folder / "run", folder / "train.json"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main([*JAXMARL_TINY, "--checkpoint", str(ckpt), "--json", str(report)])
    return CommandRun(status, out.getvalue(), ckpt, report)
