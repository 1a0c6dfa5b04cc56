"""Fixtures of the benchmark tests: each script's smoke run, once per session
(:mod:`tests.support.bench`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.bench import SmokeRun, run_smoke


def selected_scripts(items: list[pytest.Item]) -> set[str]:
    """The scripts whose smoke run a selected test checks: the ``script`` parameter of the
    provenance tests (every script, in a whole run)."""
    out = set()
    for item in items:
        script = getattr(item, "callspec", None) and item.callspec.params.get("script")
        if "smoke_run" in getattr(item, "fixturenames", ()) and isinstance(script, Path):
            out.add(script.stem)
    return out


@pytest.fixture(scope="session")
def smoke_run(request: pytest.FixtureRequest,
              tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], SmokeRun]:
    """``smoke_run(stem)``: the shared smoke run of ``benchmarks/<stem>.py`` (run on first
    use in this worker, in one batch with the other selected scripts' where it can be;
    tests that share it carry :func:`tests.support.bench.group`'s ``xdist_group``). Its
    ``--out`` folder is read-only for the tests."""
    root = tmp_path_factory.mktemp("smoke_runs")
    runs: dict[str, SmokeRun] = {}
    selected = selected_scripts(request.session.items)
    return lambda stem: run_smoke(stem, root / stem, runs, selected)
