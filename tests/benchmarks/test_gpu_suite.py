"""The GPU suite (``benchmarks/gpu_suite.py``) on a CPU host: its plan fits 25 minutes, a
smoke run writes every file into one folder and survives a section that runs out of time,
a failing section is recorded with its error, and CPU numbers are never published."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import make_docs
from tests.support import bench, script_env

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "benchmarks" / "gpu_suite.py"


def _suite():
    return make_docs.load_script(SUITE)


def test_full_plan_fits_25_minutes_and_names_real_scripts() -> None:
    suite = _suite()
    full = sum(s.budget_s["full"] for s in suite.SECTIONS) + suite.OVERHEAD_S
    assert full <= suite.TARGET_S == 25 * 60
    for s in suite.SECTIONS:
        assert (ROOT / "benchmarks" / s.script).is_file(), s.script
        for mode in ("full", "quick", "smoke"):
            assert 0 < s.estimate_s[mode] <= s.budget_s[mode], (s.name, mode)
    # every benchmark with a GPU section is in the suite
    assert {s.script for s in suite.SECTIONS} == {
        "tabular_gpu.py", "marl_gpu.py", "marl_profile.py", "marl_sampling.py",
        "quant_inference.py"}


def test_a_failing_section_is_recorded_with_its_error(tmp_path: Path) -> None:
    suite = _suite()
    cmd = [sys.executable, "-c", "import sys; print('compile failed: boom'); sys.exit(3)"]
    row = suite.run_section(cmd, script_env(), 60, tmp_path / "logs" / "x.log", "x")
    assert row["status"] == "failed" and row["returncode"] == 3
    assert "exit status 3" in row["error"] and "boom" in row["error"]
    assert "boom" in (tmp_path / "logs" / "x.log").read_text()
    ok = suite.run_section([sys.executable, "-c", "print('fine')"], script_env(), 60,
                           tmp_path / "logs" / "y.log", "y")
    assert ok["status"] == "ok" and ok["error"] is None and ok["seconds"] > 0


def test_section_files_leave_out_partial_files_and_other_stems(tmp_path: Path) -> None:
    suite = _suite()
    for name in ("marl_profile.json", "marl_profile.md", "marl_profile.png",
                 "marl_profile.partial.json", "marl_profile_quick.json", "marl_gpu.json",
                 "tabular_gpu_roofline.png"):
        (tmp_path / name).write_text("{}")
    assert [p.name for p in suite.section_files(tmp_path, "marl_profile")] == [
        "marl_profile.json", "marl_profile.md", "marl_profile.png"]


@pytest.mark.xdist_group(bench.group("gpu_suite"))  # its quant section is quant_inference's
def test_smoke_run_writes_every_file_in_one_folder_and_survives_a_timeout(smoke_run) -> None:
    # python benchmarks/gpu_suite.py --smoke --out DIR --sections marl_e2e quant
    #     --budget marl_e2e=2 (tests.support.bench.SUITE_OPTIONS)
    proc = smoke_run("gpu_suite")
    out = proc.out
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    first_run = next(i for i, ln in enumerate(lines) if ln.startswith("== "))
    head = "\n".join(lines[:first_run])
    assert head.startswith("GPU suite plan (smoke sizes)")
    assert "marl_gpu.py" in head and "quant_inference.py" in head and "budget" in head
    assert sorted(p.name for p in out.glob("*.json")) == ["gpu_suite_smoke.json",
                                                           "quant_inference_smoke.json"]
    for path in out.glob("*.json"):
        assert make_docs.check_results_file(path, ROOT, committed=False) == [], path.name
    data = json.loads((out / "gpu_suite_smoke.json").read_text())
    rows = {r["section"]: r for r in data["results"]["sections"]}
    assert rows["marl_e2e"]["status"] == "timed out"
    assert 2 <= rows["marl_e2e"]["seconds"] < 30
    assert rows["quant"]["status"] == "ok" and rows["quant"]["seconds"] > 0
    assert rows["quant"]["files"] == ["quant_inference_smoke.json", "quant_inference_smoke.md"]
    assert data["summary"]["sections_ok"] == ["quant"]
    assert "budget of 2 s" in data["summary"]["sections_not_ok"]["marl_e2e"]
    assert (out / "logs" / "quant.log").read_text().strip()


def test_cpu_numbers_are_never_published(tmp_path: Path) -> None:
    results = ROOT / "benchmarks" / "results"
    before = sorted(p.relative_to(results) for p in results.rglob("*"))
    out = tmp_path / "out"
    for extra, message in ((["--publish"], "refusing to publish"),
                           (["--smoke", "--publish"], "never published"),
                           ([], "only on a GPU / TPU")):
        proc = subprocess.run([sys.executable, str(SUITE), "--out", str(out), *extra],
                              cwd=tmp_path, env=script_env(), capture_output=True, text=True,
                              timeout=300)
        assert proc.returncode == 2, (extra, proc.stdout, proc.stderr)
        assert message in proc.stderr, (extra, proc.stderr)
        assert not out.exists()
    proc = subprocess.run([sys.executable, str(SUITE), "--plan", "--out", str(out)],
                          cwd=tmp_path, env=script_env(), capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0 and not out.exists()
    assert "plan (full sizes)" in proc.stdout and "at most 25.0 min" in proc.stdout
    assert sorted(p.relative_to(results) for p in results.rglob("*")) == before


def test_tabular_gpu_summary_of_a_full_gpu_run() -> None:
    # the GPU branch of tabular_gpu.summarize, which a CPU host never reaches by running it
    tab = make_docs.load_script(ROOT / "benchmarks" / "tabular_gpu.py")
    fl = [{"section": "frozenlake", "variant": v, "kernel": "pallas_lane", "episodes": 2000,
           "run_s": 0.05 + i / 1000, "ns_per_dependent_step": 50.0 + i,
           "floor_estimate_ns_per_step": 20.0, "over_floor_estimate": (50.0 + i) / 20}
          for i, v in enumerate(tab.VARIANTS)]
    ma = [{"section": "multiagent", "variant": v, "kernel": "pallas_lane", "episodes": 2000,
           "run_s": 1.5} for v in ("q-seq-fp32", "q-seq-int32")]
    sweep = [{"lanes_per_block": b, "prefetch": p, "is_default": (b, p) == (8, 8),
              "run_s": None if (b, p) == (16, 8) else 0.01 * b / p}
             for b in (8, 16) for p in (4, 8)]
    rep = {"results": {"backend": "gpu", "device": "gpu: 1 x H200", "new_kernel": "pallas_lane",
                       "sections": {"frozenlake": fl, "multiagent": ma, "sweep": sweep},
                       "pim_multiagent_2000_s": 88.7, "pim_source": "paper"},
           "config": {"mode": "full", "variants": tab.VARIANTS, "episodes": 2000,
                      "pair_variants": ["q-seq-fp32", "q-seq-int32"]}}
    s = tab.summarize(rep)
    assert s["gpu_frozenlake_2000_lanes_s"] == max(r["run_s"] for r in fl)
    assert s["gpu_frozenlake_2000_lanes_target_met"] is True
    assert s["gpu_multiagent_2000_s"] == 1.5 and s["gpu_multiagent_2000_target_met"] is False
    assert s["gpu_frozenlake_ns_per_dependent_step_worst"] == 61.0
    assert s["gpu_frozenlake_worst_over_floor_estimate"] == 61.0 / 20
    # the failed point (16, 8) is out; (8, 8) is the defaults' point and the fastest left
    assert (s["sweep_best_lanes_per_block"], s["sweep_best_prefetch"]) == (8, 8)
    assert (s["sweep_default_lanes_per_block"], s["sweep_default_prefetch"]) == (8, 8)
    assert s["sweep_default_run_s_sum"] == s["sweep_best_run_s_sum"] == 0.01
    assert s["note"] is None
    rep["results"]["backend"] = "cpu"
    assert tab.summarize(rep)["gpu_frozenlake_2000_lanes_s"] is None  # never a CPU number
