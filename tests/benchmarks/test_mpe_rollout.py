"""``benchmarks/mpe_rollout.py --smoke --clock process`` (the throughput timer and its
command live in the benchmark, not in ``jaxrl_pim.envs.mpe``): the table it prints, the
results file, its summary and Markdown tables. The run is shared with the script's
provenance check (``tests.support.bench``)."""

from __future__ import annotations

import json

import pytest

from tests.support import bench


@pytest.mark.xdist_group(bench.group("mpe_rollout"))
def test_throughput_benchmark_prints_table_and_writes_report(smoke_run) -> None:
    proc = smoke_run("mpe_rollout")
    assert proc.returncode == 0, proc.stderr
    assert "| spread-3 | 3 |" in proc.stdout
    path = proc.out / "mpe_rollout_smoke.json"
    data = json.loads(path.read_text())
    assert {"system", "config", "results", "timing_s", "summary"} <= set(data)
    row = data["results"]["rows"][0]
    assert row["num_envs"] == 2 and row["num_steps"] == 3 and row["clock"] == "process"
    assert data["summary"]["spread-3_steps_per_s"] == pytest.approx(row["steps_per_s"])
    assert row["steps_per_s"] == pytest.approx(6 / row["seconds"])
    own, _, versus = path.with_suffix(".md").read_text().partition("Against JaxMARL")
    assert own.count("| spread-3 |") == 1  # one row per world in the library's own table
    assert versus.count("| spread-3 |") == 1  # and one in the side-by-side JaxMARL table
