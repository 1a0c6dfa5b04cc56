"""``benchmarks/tabular_gpu.py``'s smoke run: the frozenlake section measured with each rng
(the summary's split of the records is tested in tests/tabular/test_pallas_benchmark.py)."""

from __future__ import annotations

import json

import pytest

from tests.support import bench


@pytest.mark.xdist_group(bench.group("tabular_gpu"))  # the provenance test's smoke run
def test_smoke_run_holds_both_rngs(smoke_run):
    run = smoke_run("tabular_gpu")  # python benchmarks/tabular_gpu.py --smoke --out <folder>
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    rep = json.loads((run.out / "tabular_gpu_smoke.json").read_text())
    assert rep["config"]["rngs"] == ["jax", "lcg"]
    sections = rep["results"]["sections"]
    fl = [(r["variant"], r["rng"]) for r in sections["frozenlake"]]
    assert fl == [("q-ran-int32", "jax"), ("q-ran-int32", "lcg")]
    assert all("error" not in r for r in sections["frozenlake"])
    # the other sections run at the default rng, and every record names it
    assert {r["rng"] for name, rows in sections.items() if name != "frozenlake"
            for r in rows} == {"jax"}
    md = (run.out / "tabular_gpu_smoke.md").read_text()
    assert "| frozenlake | frozenlake | q-ran-int32 | lcg | pallas_lane |" in md
    assert set(rep["summary"]) >= {"gpu_frozenlake_2000_lanes_s_lcg",
                                   "gpu_frozenlake_lcg_over_jax_worst"}
