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


def lcg_factor(bench, i: int) -> float:
    """The synthetic lcg / jax time of variant ``i``: 0.5 where it draws random numbers, else
    ``1 + i / 100`` (the largest, 1.05, is q-str-int32's)."""
    return 0.5 if bench.draws_random(bench.VARIANTS[i]) else 1 + i / 100


def rng_report(bench, rngs=("jax", "lcg"), pairs=("q-seq-fp32", "q-seq-int32")) -> dict:
    """A full GPU report of both rngs: frozenlake's jax times ``0.01 (i + 1)``, its lcg times
    those x :func:`lcg_factor`; multiagent's lcg records only for the pair variants that
    draw (x 3)."""
    fl, ma = [], []
    for i, v in enumerate(bench.VARIANTS):
        for rng in rngs:
            run_s = 0.01 * (i + 1) * (lcg_factor(bench, i) if rng == "lcg" else 1.0)
            floor = 10.0 + (rng == "lcg")
            fl.append({"kernel": "pallas_lane", "variant": v, "rng": rng, "episodes": 2000,
                       "run_s": run_s, "ns_per_dependent_step": run_s * 1e3,
                       "floor_estimate_ns_per_step": floor,
                       "over_floor_estimate": run_s * 1e3 / floor})
    for j, v in enumerate(pairs):
        for rng in rngs:
            if rng == "jax" or bench.draws_random(v):
                ma.append({"kernel": "pallas_lane", "variant": v, "rng": rng,
                           "episodes": 2000, "run_s": 0.4 * (j + 1) * (3 if rng == "lcg" else 1)})
        ma.append({"kernel": "scan", "variant": v, "rng": rngs[0], "episodes": 50, "run_s": 9.0})
    rep = fake_report(bench, "gpu")
    rep["config"].update(rngs=list(rngs), pair_variants=list(pairs))
    rep["results"]["sections"] = {"frozenlake": fl, "multiagent": ma}
    return rep


def test_summary_splits_jax_and_lcg_records(bench):
    s = bench.summarize(rng_report(bench))
    # the existing keys: the jax records only, as a file of jax records alone gives them
    jax_only = rng_report(bench, rngs=("jax",))
    del jax_only["config"]["rngs"]
    for sec in jax_only["results"]["sections"].values():
        for r in sec:
            del r["rng"]  # the files written before --rngs: no rng field
    old = bench.summarize(jax_only)
    assert not set(old) & set(bench.LCG_KEYS)  # those files hold no _lcg keys
    assert {k: s[k] for k in old} == old
    assert s["gpu_frozenlake_2000_lanes_s"] == pytest.approx(0.12)
    assert s["gpu_frozenlake_ns_per_dependent_step_worst"] == pytest.approx(120.0)
    assert s["gpu_multiagent_2000_s"] == pytest.approx(0.8)
    # lcg: its own records (q-str-int32 the slowest, 0.06 x 1.05)
    lcg_times = sorted(0.01 * (i + 1) * lcg_factor(bench, i) for i in range(12))
    assert s["gpu_frozenlake_2000_lanes_s_lcg"] == pytest.approx(0.063)
    assert s["gpu_frozenlake_2000_lanes_s_median_lcg"] == pytest.approx(
        (lcg_times[5] + lcg_times[6]) / 2)
    assert s["gpu_frozenlake_ns_per_dependent_step_worst_lcg"] == pytest.approx(63.0)
    assert s["gpu_frozenlake_floor_estimate_ns_worst_variant_lcg"] == 11.0
    assert s["gpu_frozenlake_worst_over_floor_estimate_lcg"] == pytest.approx(63.0 / 11)
    assert s["gpu_frozenlake_lcg_over_jax_worst"] == pytest.approx(1.05)
    assert s["gpu_frozenlake_lcg_over_jax_worst_variant"] == "q-str-int32"
    assert s["gpu_frozenlake_lcg_over_jax_best"] == pytest.approx(0.5)
    # Q-SEQ draws nothing: its jax record stands for lcg (the same program)
    assert s["gpu_multiagent_2000_s_lcg"] == pytest.approx(0.8)
    assert s["tpu_frozenlake_2000_lanes_s_lcg"] is None and s["note"] is None
    # a pair variant that draws has its own lcg record (x 3)
    drawn = bench.summarize(rng_report(bench, pairs=("q-seq-fp32", "q-ran-int32")))
    assert drawn["gpu_multiagent_2000_s"] == pytest.approx(0.8)
    assert drawn["gpu_multiagent_2000_s_lcg"] == pytest.approx(2.4)
    # an lcg pass cut short (--budget-s): the lcg keys are null and named, the jax ones stay
    cut = rng_report(bench)
    cut["results"]["sections"]["frozenlake"] = [
        r for r in cut["results"]["sections"]["frozenlake"]
        if r["rng"] == "jax" or r["variant"] != "sarsa-str-int32"]
    c = bench.summarize(cut)
    assert c["gpu_frozenlake_2000_lanes_s"] == pytest.approx(0.12)
    assert c["gpu_frozenlake_2000_lanes_s_lcg"] is None
    assert c["gpu_frozenlake_lcg_over_jax_worst"] is None
    assert c["note"].endswith(": gpu_frozenlake_2000_lanes_s_lcg")


def test_markdown_has_the_rng_column_in_files_that_name_rngs(bench):
    rep = rng_report(bench)
    rep["results"].update(device="gpu: 1 x H200", skipped_sections={})
    for sec in rep["results"]["sections"].values():
        for r in sec:
            r.update(env="frozenlake", lanes=2000, rows_per_lane=500, compile_s=1.0)
            r.setdefault("ns_per_dependent_step", 1.0)
            r.setdefault("floor_estimate_ns_per_step", 1.0)
    md = bench.render_markdown(rep)
    assert "| section | env | variant | rng | kernel |" in md
    assert "| frozenlake | frozenlake | q-seq-fp32 | lcg | pallas_lane |" in md
    del rep["config"]["rngs"]  # a file written before --rngs: the table as it was
    assert "| section | env | variant | kernel |" in bench.render_markdown(rep)


def test_rng_passes_run_after_the_headline_and_the_budget_cuts_between_variants(
        bench, monkeypatch):
    import argparse

    ran = []

    def fake_measure(section, env, variant, kernel, kw, chunks, repeats, reference=None):
        ran.append((section, variant, kw.get("rng", "jax"), kw["num_episodes"]))
        return {"variant": variant, "rng": kw.get("rng", "jax"), "run_s": 1e-3}, None

    class Budget:  # spent once the jax passes and three lcg variants have run
        def __init__(self, seconds):
            pass

        def spent(self):
            return sum(r[2] == "lcg" for r in ran) >= 3

    monkeypatch.setattr(bench, "measure", fake_measure)
    monkeypatch.setattr(bench.harness, "Budget", Budget)
    assert bench.run_order(["multiagent", "frozenlake", "taxi"], ["jax", "lcg"]) == [
        ("frozenlake", "jax"), ("multiagent", "jax"), ("frozenlake", "lcg"),
        ("multiagent", "lcg"), ("taxi", None)]
    m = {**bench.MODES["smoke"], "pair_variants": ["q-seq-int32", "sarsa-seq-fp32"]}
    args = argparse.Namespace(sections=["frozenlake", "multiagent", "taxi"],
                              rngs=["jax", "lcg"], variants=bench.VARIANTS,
                              compare_episodes=2, repeats=1, budget_s=99.0, smoke=True,
                              quick=False)
    sections, skipped = bench.run_sections(args, m, "pallas_lane", ["scan", "pallas_lane"])
    fl = [(r["variant"], r["rng"]) for r in sections["frozenlake"]]
    assert fl == [(v, "jax") for v in bench.VARIANTS] + [(v, "lcg") for v in bench.VARIANTS[:3]]
    assert skipped["frozenlake"].endswith("at rng=lcg after 3 of 12 variants")
    # multiagent's jax pass whole (side by side included); its lcg pass and taxi not started
    assert [(r["variant"], r["rng"]) for r in sections["multiagent"]] == [
        (v, "jax") for v in ("q-seq-int32",) * 3 + ("sarsa-seq-fp32",) * 3]
    assert skipped["multiagent"].endswith("at rng=lcg after 0 of 1 variants")
    assert "taxi" not in sections and "taxi" in skipped
