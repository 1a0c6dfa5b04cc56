"""The PIM model's validation: PrIM's released profiles as value tests (each with its source
file), SwiftRL's released kernel costed by hand, the sensitivity study (what each unverified
cost moves, the calibration fitted again), the phase terms and the projection's notes, and
``benchmarks/pim_model.py``'s roles, history and counts."""

from __future__ import annotations

import dataclasses
import importlib
import json
import math
from pathlib import Path

import pytest

from jaxrl_pim import pim
from jaxrl_pim.pim import released, sensitivity
from jaxrl_pim.tabular.config import TabularConfig

PROFILES = released.PRIM_ADD_PROFILES["dpu_cycles"]
PUBLISHED = Path(__file__).resolve().parents[1] / "benchmarks/results/cpu/pim_model.json"


@pytest.mark.parametrize("dtype,tasklets", [(d, t) for d in PROFILES for t in PROFILES[d]],
                         ids=lambda x: str(x))
def test_prim_released_add_profile_matches_the_model(dtype: str, tasklets: int) -> None:
    # source: CMU-SAFARI/prim-benchmarks at PRIM_COMMIT, prim_profile_path(dtype, tasklets);
    # the model: (the add's cost + the loop's 5 instructions) x max(11 / T, 1) cycles
    path = released.prim_profile_path(dtype, tasklets)
    assert path == (f"Microbenchmarks/Arithmetic-Throughput/profile/ADD_{dtype}_tl{tasklets}"
                    ".txt")
    measured = released.prim_measured_cycles_per_element(dtype, tasklets)
    predicted = released.prim_cycles_per_element(pim.SWIFTRL, dtype, tasklets)
    assert predicted == pytest.approx(measured, rel=0.01), path


def test_prim_profiles_at_11_tasklets_are_the_issue_values() -> None:
    # ADD at 11 or more tasklets, cycles per element: INT32 6.02, FLOAT 71.3, DOUBLE 105.3
    # (ADD_INT32_tl11.txt: 6.31261e6 cycles; ADD_FLOAT_tl11.txt: 7.47428e7;
    # ADD_DOUBLE_tl11.txt: 1.10409e8; 1,048,576 elements each)
    for dtype, value in (("INT32", 6.02), ("FLOAT", 71.3), ("DOUBLE", 105.3)):
        for t in range(11, 25):
            assert released.prim_measured_cycles_per_element(dtype, t) == pytest.approx(
                value, rel=0.006), (dtype, t)
    # one tasklet issues every 11 cycles: 11 times the saturated value (the pipeline rule)
    for dtype in PROFILES:
        ratio = (released.prim_measured_cycles_per_element(dtype, 1)
                 / released.prim_measured_cycles_per_element(dtype, 11))
        assert ratio == pytest.approx(pim.SWIFTRL.pipeline_depth, rel=0.01)
    ops = pim.UPMEM_OPS
    assert (ops.int_add, ops.fp_add, ops.fp64_add) == (1, 66, 100)
    assert len(released.prim_profile_checks(pim.SWIFTRL)) == 72


def test_released_kernel_by_hand() -> None:
    k = released.RELEASED_KERNEL
    assert (k["nr_tasklets"], k["column_bytes"], k["iterations"], k["rows_per_dpu"]) == (
        1, 1, 1000, 10_000)
    assert set(k["double_routines"]) == {"__muldf3", "__adddf3", "__subdf3", "__floatunsidf",
                                         "__fixunsdfsi"}
    s = pim.SWIFTRL
    ops = s.ops
    # 2 double multiplies, 3 double adds (one a subtract), 4 conversions (3 in, 1 out),
    # 15 integer adds, 9 loads, a store, 5 compares; 4 one-byte MRAM reads of 8 bytes each
    instr = 2 * ops.fp64_mul + 3 * ops.fp64_add + 4 * ops.cvt_int_fp + 15 + 9 + 1 + 5
    work = released.released_kernel(s)
    assert work["instructions"] == instr == 1720
    assert work["dma_cycles"] == 4 * (77 + 0.5 * 8)
    assert work["cycles"] == 11 * instr + 324
    assert released.released_kernel_seconds(s, 1000) == pytest.approx(
        1000 * 10_000 * (11 * 1720 + 324) / 425e6)
    # every double routine 1 / f as costly: the kernel then takes the published 88.7 s
    seconds = 1943.78 / 21.92
    for its in (1000, 2000):
        f = released.double_cost_factor_needed(s, seconds, its)
        cheap = released.with_double_costs_scaled(s, 1 / f)
        assert released.released_kernel_seconds(cheap, its) == pytest.approx(seconds)
        r = released.if_released_kernel_took(s, seconds, its)
        assert r["double_add"] == pytest.approx(100 / f)
        assert r["double_add"] < 0.2 * (released.prim_measured_cycles_per_element("DOUBLE", 11)
                                        - released.PRIM_LOOP_INSTRUCTIONS)
        assert r["q_int32_over_fp32"] < 0.5 * 8.16  # and the Q INT32 / FP32 ratio fails
    assert released.double_cost_factor_needed(s, 1.0, 2000) == math.inf


def test_scaled_moves_exactly_its_parameter() -> None:
    s = pim.SWIFTRL
    assert sensitivity.scaled(s, "ops.fp64_mul", 2).ops.fp64_mul == 1310
    d = sensitivity.scaled(s, "dma_latency_cycles", 0.5)
    assert (d.dma_latency_cycles, d.dma_write_latency_cycles) == (38.5, 30.5)
    ser = sensitivity.scaled(s, "serial_bytes_per_s", 2)
    assert ser.transfer_in.bytes_per_s == 0.66e9 and ser.transfer_out == s.transfer_out
    par = sensitivity.scaled(s, "parallel_bytes_per_s", 2)
    assert (par.transfer_out.bytes_per_s, par.sync_gather.bytes_per_s) == (9.48e9, 9.48e9)
    assert par.transfer_in == s.transfer_in and par.sync_broadcast == s.sync_broadcast
    lat = sensitivity.scaled(s, "host_latency_s", 3)
    assert {getattr(lat, p).latency_s for p in pim.TRANSFER_PHASES} == {
        3 * s.transfer_in.latency_s}
    with pytest.raises(ValueError, match="unknown parameter"):
        sensitivity.scaled(s, "frequency_hz", 2)
    names = {u.name for u in sensitivity.UNCERTAIN}
    assert {"ops.fp64_mul", "ops.fp_mul", "host_latency_s", "dma_latency_cycles",
            "serial_bytes_per_s", "parallel_bytes_per_s"} <= names
    # a checked cost is never varied
    assert not names & {"ops.int_add", "ops.fp_add", "ops.fp64_add"}
    for u in sensitivity.UNCERTAIN:
        assert u.low < 1 < u.high and u.reason


def test_presets_at_each_end_are_refitted() -> None:
    t = pim.CALIBRATION_TARGETS
    for u in sensitivity.UNCERTAIN:
        for f in (u.low, u.high):
            s = sensitivity.presets_at(u.name, f)["swiftrl"]
            agents = pim.estimate(t["multi_agent_workload"], t["multi_agent_rows"], s)
            assert agents.kernel == pytest.approx(t["multi_agent_2000_agents_s"], rel=1e-9)
            taxi = pim.estimate(t["taxi_workload"], t["taxi_rows"], s)
            assert taxi.share("sync") == pytest.approx(0.2079, rel=1e-9)
            fl = pim.estimate(t["frozenlake_workload"], t["frozenlake_rows"], s)
            if u.name == "host_latency_s":  # held, not fitted: the share moves
                assert s.transfer_in.latency_s == pytest.approx(
                    f * pim.CALIBRATED["host_latency_s"])
                assert (fl.share("transfer_in") > 0.2961) == (f > 1)
            else:
                assert fl.share("transfer_in") == pytest.approx(0.2961, rel=1e-9)
    # the unmoved presets are the module's
    assert sensitivity.presets_at("ops.fp_mul", 1.0)["swiftrl"] == pim.SWIFTRL
    assert sensitivity.presets_at("ops.fp_mul", 2.0)["hbm-pim"] == pim.HBM_PIM


def test_band_of_the_q_ratio_spans_the_double_multiply_and_the_latency() -> None:
    w = TabularConfig(16, 4, dtype="fp32", num_cores=2000)
    wi = dataclasses.replace(w, dtype="int32")
    b = sensitivity.band(lambda s: (pim.estimate(w, 1_000_000, s["swiftrl"]).total
                                    / pim.estimate(wi, 1_000_000, s["swiftrl"]).total))
    assert b["low"] <= b["value"] <= b["high"]
    assert b["widest"] == "ops.fp64_mul"
    lo, hi = b["by_parameter"]["ops.fp64_mul"]
    assert lo < b["value"] < hi  # a dearer double multiply, a slower FP32 run
    lat_lo, lat_hi = b["by_parameter"]["host_latency_s"]
    assert lat_lo > b["value"] > lat_hi  # a dearer host call dilutes the ratio
    none = sensitivity.bands(lambda s: {"x": None, "c": 1.0})
    assert none["x"] is None and none["c"]["widest"] is None


@pytest.mark.parametrize("system", pim.SYSTEM_NAMES)
def test_phase_terms_sum_to_the_phases(system: str) -> None:
    base = pim.get_system(system)
    cases = [(TabularConfig(16, 4, "q", "str", "int32", num_cores=2000), 1_000_000),
             (TabularConfig(500, 6, "sarsa", "ran", "fp32", num_cores=2000), 5_000_000),
             (TabularConfig(5000, 4, dtype="int32", independent=True), 1_000_000)]
    for tasklets in sorted({1, min(16, base.max_tasklets)}):
        s = dataclasses.replace(base, tasklets=tasklets)
        for w, rows in cases:
            e = pim.estimate(w, rows, s)
            for phase, terms in pim.phase_terms(w, rows, s).items():
                assert sum(terms.values()) == pytest.approx(getattr(e, phase), rel=1e-9,
                                                            abs=1e-15), (phase, tasklets)


def test_largest_phase_and_the_projection_notes() -> None:
    s = pim.SWIFTRL
    fp = TabularConfig(16, 4, dtype="fp32", num_cores=2000)
    big = pim.largest_phase(fp, 1_000_000, s)
    assert big["phase"] == "kernel" and big["parameter"] == "ops.fp64_mul"
    ops = s.ops  # 2 double multiplies of the update's 1,943 instructions
    assert big["parameter_share"] == pytest.approx(
        2 * ops.fp64_mul * 11 / pim.estimate(fp, 1_000_000, s).work["cycles_per_update"])
    # a run on few rows per lane: the serial copies' host calls dominate
    tiny = TabularConfig(16, 4, dtype="int32", num_cores=2000, num_episodes=10)
    big = pim.largest_phase(tiny, 200_000, s)
    assert (big["phase"], big["parameter"]) == ("transfer_in", "host_latency_s")
    notes = sensitivity.projection_notes(tiny, 200_000, s, "JAX on cpu")
    assert notes[0].startswith("measured: this run, JAX on cpu")
    assert notes[1] == "DPUs used: 2,000 of 2,524 (1 lane(s) per DPU)"
    assert notes[2].startswith("per update: 170.5 instructions, 1,884.4 cycles (1,875.8 compute")
    assert "from host_latency_s (calibrated" in notes[3]
    assert "assumption" in sensitivity.projection_notes(tiny, 200_000, pim.HBM_PIM, "x")[3]
    assert sensitivity.parameter_status("ops.fp64_add").startswith("checked")


def _model():
    return importlib.import_module("benchmarks.pim_model")


def test_every_figure_has_one_role_by_the_rule() -> None:
    mod = _model()
    recs = mod.figures(mod.history())
    names = [r["figure"] for r in recs]
    assert len(names) == len(set(names))  # each figure listed once
    assert {r["role"] for r in recs} <= set(mod.ROLE_RULE)
    for r in recs:
        assert r["counted"] == (r["role"] == "independent") and r["reason"]
        assert (r["predicted"] is None) == (r["role"] == "not comparable")
        if r["band"] is not None:
            assert r["band"]["low"] <= r["predicted"] <= r["band"]["high"]
    by = {r["figure"]: r for r in recs}
    # figures that shaped the model are not counted; the calibration figures stay pinned
    assert by["q_int32_over_fp32_speedup"]["role"] == "development"
    assert by["multi_agent_2000_agents_s"]["band"]["widest"] is None
    # structural checks give the same verdict over every range
    for r in recs:
        if r["role"] == "structural" and r["band"] is not None:
            assert mod.verdict_fixed(r, mod.TARGET), r["figure"]
    # the earlier models' predictions, from their results files in git
    assert by["q_int32_over_fp32_speedup"]["history"]["model 1"] == pytest.approx(5.380, 1e-3)
    assert by["frozenlake_q_str_int32_transfer_in_share_percent"]["history"][
        "model 1"] == pytest.approx(0.0529, rel=1e-2)
    assert by["taxi_q_ran_int32_sync_share_percent"]["history"]["model 2"] == pytest.approx(
        by["taxi_q_ran_int32_sync_share_percent"]["predicted"], rel=1e-9)


def test_model_summary_counts_only_independent_figures(tmp_path) -> None:
    mod = _model()
    assert mod.main(["--smoke", "--out", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "pim_model_smoke.json").read_text())
    check_model_file(data)


def check_model_file(data: dict) -> None:
    """What a pim_model results file must hold (shared with the published-file test)."""
    mod = _model()
    s = data["summary"]
    assert mod.summarize(data) == s
    recs = data["results"]["figures"]
    counted = [r for r in recs if r["counted"]]
    assert s["pim_model_independent_heldout_count"] == len(counted) >= 1
    assert all(r["role"] == "independent" for r in counted)
    assert s["pim_model_max_independent_error"] == max(abs(s["error_" + r["figure"]])
                                                       for r in counted)
    assert s["pim_model_roles"] == {r["figure"]: r["role"] for r in recs}
    assert sum(r["role"] == "calibration" for r in recs) == 3
    for r in recs:
        if r["predicted"] is not None:
            assert s["band_" + r["figure"]] == {"low": r["band"]["low"],
                                                "high": r["band"]["high"]}
    assert s["pim_model_prim_profile_max_error"] < 0.01
    assert s["released_kernel_s_2000_episodes"] > 5 * s["released_kernel_published_s"]
    assert s["pim_model_calibrated_parameters"] == pim.CALIBRATED


@pytest.mark.skipif(not PUBLISHED.exists(), reason="not published yet")
def test_published_model_file_matches_the_model_and_its_summary() -> None:
    data = json.loads(PUBLISHED.read_text())
    check_model_file(data)
    now = {r["figure"]: r["predicted"] for r in _model().figures()}
    for r in data["results"]["figures"]:
        if r["predicted"] is not None:
            assert r["predicted"] == pytest.approx(now[r["figure"]], rel=1e-12)


def test_whatif_records_carry_their_ranges(tmp_path) -> None:
    mod = importlib.import_module("benchmarks.pim_whatif")
    assert mod.main(["--smoke", "--out", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "pim_whatif_smoke.json").read_text())
    assert mod.summarize(data) == data["summary"]
    points = data["results"]["points"]
    assert len(points) == 2 * len(sensitivity.UNCERTAIN)
    for r in data["results"]["records"]:
        lo, hi = r["total_band"]
        assert len(r["total_by_point"]) == len(points) and lo <= r["total"] <= hi
        if r["system"] in ("hbm-pim", "ideal"):  # bounds: not varied
            assert lo == hi == r["total"] and r["band_widest"] is None
    s = data["summary"]
    for key in ("speedup_over_cpu_median_swiftrl", "dpus_speedup_2524_to_10240",
                "sync_equals_kernel_at_period"):
        assert s[key + "_band"]["low"] <= s[key] <= s[key + "_band"]["high"], key
    assert (tmp_path / "pim_whatif_smoke_speedup.png").is_file()
