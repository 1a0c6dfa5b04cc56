"""The GPU suite (``benchmarks/gpu_suite.py``) on a CPU host: its plan fits 25 minutes, a
smoke run writes every file into one folder and survives a section that runs out of time,
a failing section is recorded with its error, and CPU numbers are never published."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from benchmarks import make_docs
from tests.benchmarks.test_provenance import _env

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
    row = suite.run_section(cmd, _env(), 60, tmp_path / "logs" / "x.log", "x")
    assert row["status"] == "failed" and row["returncode"] == 3
    assert "exit status 3" in row["error"] and "boom" in row["error"]
    assert "boom" in (tmp_path / "logs" / "x.log").read_text()
    ok = suite.run_section([sys.executable, "-c", "print('fine')"], _env(), 60,
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


def test_smoke_run_writes_every_file_in_one_folder_and_survives_a_timeout(
        tmp_path: Path) -> None:
    out = tmp_path / "suite"
    proc = subprocess.run(
        [sys.executable, str(SUITE), "--smoke", "--out", str(out), "--sections", "marl_e2e",
         "quant", "--budget", "marl_e2e=2"],
        cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=600)
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
                              cwd=tmp_path, env=_env(), capture_output=True, text=True,
                              timeout=300)
        assert proc.returncode == 2, (extra, proc.stdout, proc.stderr)
        assert message in proc.stderr, (extra, proc.stderr)
        assert not out.exists()
    proc = subprocess.run([sys.executable, str(SUITE), "--smoke", "--plan", "--out", str(out)],
                          cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and "tabular_gpu.py" in proc.stdout and not out.exists()
    assert sorted(p.relative_to(results) for p in results.rglob("*")) == before
