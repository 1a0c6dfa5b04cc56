"""Fixtures of the benchmark tests: each script's smoke run, once per session
(:mod:`tests.support.bench`)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.support.bench import SmokeRun, run_smoke


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], SmokeRun]:
    """``smoke_run(stem)``: the shared smoke run of ``benchmarks/<stem>.py`` (run on first
    use in this worker; tests that share it carry :func:`tests.support.bench.group`'s
    ``xdist_group``). Its ``--out`` folder is read-only for the tests."""
    root = tmp_path_factory.mktemp("smoke_runs")
    runs: dict[str, SmokeRun] = {}
    return lambda stem: run_smoke(stem, root / stem, runs)
