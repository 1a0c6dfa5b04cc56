"""``benchmarks/marl_trace.py``: its smoke run's file (a CPU trace: no kernel count), and the
parser, summary and table on a synthetic GPU trace in the form jax writes (a Perfetto JSON
with a ``/device:GPU:0`` plane and its ``Stream`` line)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from benchmarks import make_docs, marl_trace
from tests.support import bench

ROOT = Path(__file__).resolve().parents[2]
STREAM = "Stream #14(MemcpyD2D,Compute,MemcpyD2H)"


@pytest.mark.xdist_group(bench.group("marl_trace"))  # the provenance test's smoke run
def test_smoke_run_writes_the_cpu_record(smoke_run) -> None:
    # the GPU suite's part: python benchmarks/marl_trace.py --smoke --trace-archive <logs>/...
    run = smoke_run("marl_trace")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    path = run.out / "marl_trace_smoke.json"
    rep = json.loads(path.read_text())
    assert make_docs.check_results_file(path, ROOT, committed=False) == []
    (r,) = rep["results"]["runs"]
    assert r["agents"] == 3 and r["env_steps"] == 100
    assert (r["no_updates"]["update_rounds"], r["updates"]["update_rounds"]) == (0, 1)
    for piece in (r["no_updates"], r["updates"]):  # no device plane on a CPU
        assert piece["kernels"] is None and piece["top"] and piece["events"] > 0
        assert "needs an accelerator" in piece["top_of"]
    assert rep["summary"]["gpu_marl_trace_kernels_per_env_step_3"] is None
    packed = rep["results"]["trace_archive"]  # the suite asks for the raw traces
    assert packed["packed"] == "whole" and packed["path"].endswith("marl_trace.tar.gz")


def _events(kernels: int, launches: dict[str, float]) -> list[dict]:
    """Trace events: GPU ``kernels`` x each kernel of ``launches`` (name -> us), one D2H copy
    and one driver copy kernel per kernel round, and host events that are not counted."""
    out = [{"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "/device:GPU:0"}},
           {"ph": "M", "pid": 1, "tid": 14, "name": "thread_name", "args": {"name": STREAM}},
           {"ph": "M", "pid": 7, "name": "process_name", "args": {"name": "/host:CPU"}},
           {"ph": "M", "pid": 7, "tid": 2, "name": "thread_name", "args": {"name": "python3"}}]
    for i in range(kernels):
        for name, us in launches.items():
            out.append({"ph": "X", "pid": 1, "tid": 14, "ts": i, "dur": us, "name": name})
        out.append({"ph": "X", "pid": 1, "tid": 14, "ts": i, "dur": 1.0, "name": "MemcpyD2H"})
        out.append({"ph": "X", "pid": 1, "tid": 14, "ts": i, "dur": 1.0,
                    "name": "memcpy32_post"})
        out.append({"ph": "X", "pid": 7, "tid": 2, "ts": i, "dur": 50.0,
                    "name": "cuLaunchKernel"})
    return out


def _trace_folder(root: Path, events: list[dict]) -> Path:
    folder = root / "plugins" / "profile" / "run"
    folder.mkdir(parents=True)
    with gzip.open(folder / "perfetto_trace.json.gz", "wt") as f:
        json.dump({"displayTimeUnit": "ns", "traceEvents": events}, f)
    return root


def test_a_synthetic_gpu_trace_gives_kernels_summary_and_table(tmp_path: Path) -> None:
    quiet_dir = _trace_folder(tmp_path / "quiet", _events(100, {"loop_fusion": 2.0,
                                                                "input_reduce_fusion": 1.0}))
    events, source = marl_trace.load_events(quiet_dir)
    assert source == "perfetto_trace.json.gz"
    quiet = marl_trace.parse(events)
    assert (quiet["kernels"], quiet["copies"]) == (200, 200)
    assert quiet["kernel_time_s"] == pytest.approx(300e-6)
    assert quiet["device_time_s"] == pytest.approx(500e-6)
    assert quiet["top_of"] == "device kernels"
    assert [(k["name"], k["count"]) for k in quiet["top"]] == [
        ("loop_fusion", 100), ("input_reduce_fusion", 100)]
    assert quiet["lines"] == {f"/device:GPU:0 / {STREAM}": 400, "/host:CPU / python3": 100}
    # the updates piece: the same 100 steps plus one round of 20 gemms
    busy = marl_trace.parse(events + [
        ("/device:GPU:0", STREAM, "gemm_fusion_dot", 40e3) for _ in range(20)])
    assert busy["kernels"] == 220 and busy["top"][0] == {
        "name": "gemm_fusion_dot", "count": 20, "total_us": pytest.approx(800.0)}
    run = {"agents": 48, "env_steps": 100, "config": {}, "compile_s": 1.0,
           "no_updates": {**quiet, "wall_s": 0.01, "update_rounds": 0, "source": source},
           "updates": {**busy, "wall_s": 0.002, "update_rounds": 1, "source": source}}
    rep = {"config": {"mode": "full"},
           "results": {"device": "gpu: 1 x NVIDIA H200", "trace_archive": None,
                       "runs": [run, {"agents": 3, "skipped": "--budget-s spent"}]}}
    s = marl_trace.summarize(rep)
    assert s["gpu_marl_trace_kernels_per_env_step_48"] == 2.0
    assert s["gpu_marl_trace_kernels_per_update_round_48"] == 20.0
    assert s["gpu_marl_trace_device_busy_fraction_48"] == pytest.approx(
        busy["device_time_s"] / 0.002)
    assert s["gpu_marl_trace_kernels_per_env_step_3"] is None
    assert s["not_measured"] == ["spread3: --budget-s spent"]
    md = marl_trace.render_markdown(rep)
    assert "| 48 | updates | 100 | 1 | 0.0020 | 220 | 2.2 | 200 |" in md
    assert "`gemm_fusion_dot` | 20 | 800.0 |" in md


def test_the_archive_drops_the_xplane_files_to_fit(tmp_path: Path, monkeypatch) -> None:
    root = tmp_path / "traces"
    (root / "n3_updates").mkdir(parents=True)
    (root / "n3_updates" / "perfetto_trace.json.gz").write_bytes(b"x" * 100)
    (root / "n3_updates" / "vm.xplane.pb").write_bytes(bytes(range(256)) * 400)
    whole = marl_trace.pack(root, tmp_path / "a" / "whole.tar.gz")
    assert whole["packed"] == "whole" and Path(whole["path"]).is_file()
    monkeypatch.setattr(marl_trace, "MAX_ARCHIVE_BYTES", whole["bytes"] - 1)
    small = marl_trace.pack(root, tmp_path / "small.tar.gz")
    assert small["packed"] == "without .xplane.pb" and small["bytes"] < whole["bytes"]
    monkeypatch.setattr(marl_trace, "MAX_ARCHIVE_BYTES", 10)
    none = marl_trace.pack(root, tmp_path / "none.tar.gz")
    assert none["path"] is None and not (tmp_path / "none.tar.gz").exists()
