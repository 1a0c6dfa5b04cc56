"""benchmarks/tabular_gpu.py: its summary on a (synthetic) full GPU report and on a CPU report,
and the floor estimate's arithmetic. The script itself runs end to end in the benchmark
smoke tests (tests/benchmarks/test_provenance.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import make_docs

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "tabular_gpu.py"


@pytest.fixture(scope="module")
def bench():
    return make_docs.load_script(SCRIPT)


def fake_report(bench, backend: str, mode: str = "full", drop: int = 0) -> dict:
    fl = [{"kernel": "pallas_lane", "variant": v, "episodes": 2000, "run_s": 0.01 * (i + 1)}
          for i, v in enumerate(bench.VARIANTS)][drop:]
    ma = [{"kernel": "pallas_lane", "variant": "q-seq-fp32", "episodes": 2000, "run_s": 0.4},
          {"kernel": "pallas_lane", "variant": "q-seq-int32", "episodes": 2000, "run_s": 0.8},
          {"kernel": "scan", "variant": "q-seq-int32", "episodes": 50, "run_s": 9.0},
          {"kernel": "pallas_lane", "variant": "q-seq-int32", "episodes": 50, "run_s": 0.02}]
    return {
        "config": {"mode": mode, "variants": bench.VARIANTS, "episodes": 2000,
                   "pair_variants": ["q-seq-fp32", "q-seq-int32"]},
        "results": {"device": f"{backend}: 1 x device", "backend": backend,
                    "new_kernel": "pallas_lane", "sections": {"frozenlake": fl,
                                                              "multiagent": ma},
                    "pim_multiagent_2000_s": 88.0, "pim_source": "paper"},
    }


def test_summary_of_a_full_gpu_run(bench):
    s = bench.summarize(fake_report(bench, "gpu"))
    assert s["gpu_frozenlake_2000_lanes_s"] == pytest.approx(0.12)  # worst of the 12
    assert s["gpu_frozenlake_2000_lanes_s_median"] == pytest.approx(0.065)
    assert s["gpu_multiagent_2000_s"] == pytest.approx(0.8)  # worst of fp32 / int32
    assert s["gpu_vs_pim_multiagent_speedup"] == pytest.approx(110.0)
    assert s["tpu_frozenlake_2000_lanes_s"] is None and s["note"] is None


def test_summary_is_null_with_a_note_when_not_measured(bench):
    cpu = bench.summarize(fake_report(bench, "cpu"))
    assert cpu["gpu_frozenlake_2000_lanes_s"] is None and cpu["gpu_multiagent_2000_s"] is None
    assert "CPU host" in cpu["note"]
    partial = bench.summarize(fake_report(bench, "gpu", drop=1))  # a variant failed
    assert partial["gpu_frozenlake_2000_lanes_s"] is None
    assert partial["gpu_multiagent_2000_s"] == pytest.approx(0.8)
    assert "gpu_frozenlake_2000_lanes_s" in partial["note"]
    quick = bench.summarize(fake_report(bench, "gpu", mode="quick"))
    assert quick["gpu_frozenlake_2000_lanes_s"] is None and "quick" in quick["note"]
    tpu = bench.summarize(fake_report(bench, "tpu"))
    assert tpu["tpu_multiagent_2000_s"] == pytest.approx(0.8)
    assert tpu["gpu_multiagent_2000_s"] is None


def test_floor_estimate_arithmetic(bench):
    # Q-learning fp32, A = 4: forward select + 3 max + 3 TD ops = 7 dependent ops x 4 cycles
    assert bench.chain_ops("q", "fp32", 4) == 7
    # int32: + the specialised gamma (9) and alpha (3) products, terminal select, two adds
    assert bench.chain_ops("q", "int32", 4) == 20
    est = bench.floor_estimate_ns("q-seq-fp32", 4, lanes=2000, lanes_per_block=8)
    issued = bench.issued_ops("q", "seq", "fp32", "jax", 4)
    assert est["floor_estimate_chain_cycles"] == 28
    assert est["floor_estimate_issue_cycles"] == issued  # 250 warps: one per scheduler
    assert est["floor_estimate_ns_per_step"] == pytest.approx(max(28, issued) / 1.7)
    many = bench.floor_estimate_ns("q-seq-fp32", 4, lanes=65536, lanes_per_block=32)
    assert many["floor_estimate_issue_cycles"] == 4 * issued  # 2,048 warps on 528 schedulers
