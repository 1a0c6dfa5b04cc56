"""``benchmarks/quant_inference.py``: the device-side timer's compiled loop holds its K forward
passes (a while loop of trip count K whose body holds the network's dots, a time that grows
with K), and ``summarize`` / ``render_markdown`` emit the device-side keys and columns from
records that hold device-side times and only from those."""

from __future__ import annotations

import re

import jax
import pytest

from benchmarks import harness, make_docs
from jaxrl_pim.testing.hlo import computations, reached_from, while_bodies
from tests.support import ROOT

SCRIPT = ROOT / "benchmarks" / "quant_inference.py"


@pytest.fixture(scope="module")
def qi():
    return make_docs.load_script(SCRIPT)


@pytest.fixture(scope="module")
def net(qi):
    module, params, obs_dim = qi.build("dqn", (256, 256))
    obs = jax.random.normal(jax.random.PRNGKey(1), (64, obs_dim))
    return qi.policy_fn(module, params, "fp32", obs)


def test_the_loop_is_a_while_of_k_calls_whose_body_holds_the_dots(qi, net) -> None:
    fn, held, x = net
    hlo = harness.looped(fn, 37).lower(held, x).compile().as_text()
    assert re.search(r'known_trip_count"?:\{"n":"37"\}', hlo), "no while loop of 37 trips"
    comps, _ = computations(hlo)
    reached = reached_from(comps, while_bodies(hlo)[0])  # the body and all it calls
    assert sum(ln.count(" dot(") for c in reached for ln in comps[c]) >= 3  # 3 layers a trip


def test_the_loop_time_grows_with_k(qi, net) -> None:
    from jaxrl_pim.timing import time_call

    fn, held, x = net
    times = {}
    for k in (2, 200):
        prog = harness.looped(fn, k)
        times[k] = time_call(lambda prog=prog: prog(held, x), repeats=3, warmup=1)
    assert times[200] > 10 * times[2], times  # 100x the passes: far more than 10x the time


def test_device_timer_record(qi, net) -> None:
    fn, held, x = net
    rec = harness.device_time_per_call(fn, held, x, repeats=1, loop_s=0.02, upper_s=1e-3)
    assert rec["device_calls"] >= 4 * rec["device_calls_short"] >= 4
    assert rec["device_program_s"] > rec["device_short_program_s"]
    assert 0 < rec["device_seconds_per_call"] < rec["device_program_s"]


def test_a_hiccup_in_the_short_timing_does_not_size_a_huge_loop(qi, net, monkeypatch) -> None:
    # the first T(K0) timing 10 s (the process descheduled): T(K) - T(K0) < 0 at first, and
    # the loop once grew straight to K_MAX (a million calls, minutes on this CPU)
    from jaxrl_pim import timing

    real, calls = timing.time_call, []

    def hiccup(fn, **kw):
        calls.append(kw)
        return 10.0 if len(calls) == 1 else real(fn, **kw)

    monkeypatch.setattr(timing, "time_call", hiccup)
    fn, held, x = net
    rec = harness.device_time_per_call(fn, held, x, repeats=1, loop_s=0.02, upper_s=1e-3)
    assert rec["device_short_program_s"] < 1.0  # retimed beside T(K)
    assert rec["device_calls"] <= harness.K_MAX // harness.K_GROWTH
    assert 0 < rec["device_seconds_per_call"] < rec["device_program_s"]


def _report(device: bool) -> dict:
    nets = ["dqn-64x64", "dqn-2048x2048x2048"]
    rows = []
    for net in nets:
        for batch in (1, 1024):
            for i, p in enumerate(("fp32", "bf16", "int8", "int8_qwix")):
                if p == "int8_qwix" and net == nets[0]:
                    rows.append({"network": net, "batch": batch, "precision": p,
                                 "error": "ValueError: no"})
                    continue
                r = {"network": net, "batch": batch, "precision": p,
                     "seconds_per_call": 50e-6, "ms_per_call": 0.05, "us_per_row": 50 / batch}
                if device:
                    r.update(device_seconds_per_call=(8 + 8 * batch) * 1e-6 / (1 + i),
                             device_calls=1000)
                rows.append(r)
    return {"config": {"mode": "full", "precisions": ["fp32", "bf16", "int8", "int8_qwix"],
                       "batches": [1, 1024], "sizes": {"repeats": 7, "broadcast_repeats": 7}},
            "results": {"device": "gpu: 1 x X", "inference": rows, "broadcast": [],
                        "copy": {"bytes_per_s": 1e9, "bytes": 10}}}


def test_summarize_emits_the_device_keys_only_from_device_records(qi) -> None:
    old, new = qi.summarize(_report(False)), qi.summarize(_report(True))
    assert not any(re.search(r"_device_(speedup|paper)", k) for k in old)
    assert {k: v for k, v in new.items() if k in old} == old  # the old keys, unchanged
    assert old["int8_speedup_vs_fp32_paper_b1024"] == 1.0  # dispatch-included, as before
    assert new["int8_device_speedup_vs_fp32_paper_b1024"] == pytest.approx(3.0)
    assert new["bf16_device_speedup_vs_fp32_paper_b1"] == pytest.approx(2.0)
    assert new["int8_qwix_device_speedup_vs_fp32_paper_b1"] == pytest.approx(4.0)
    assert new["fastest_precision_device_paper_b1024"] == "int8_qwix"
    assert new["int8_device_speedup_vs_fp32_dqn-64x64_b1"] == pytest.approx(3.0)
    assert new["int8_qwix_device_speedup_vs_fp32_dqn-64x64_b1024"] is None  # its error row
    assert "int8_device_speedup_vs_fp32_dqn-2048x2048x2048_b1" not in new  # the paper keys
    assert new["failed_runs"] == ["dqn-64x64/b1/int8_qwix", "dqn-64x64/b1024/int8_qwix"]


def test_markdown_shows_device_and_dispatch_times(qi) -> None:
    md = qi.render_markdown(_report(True))
    assert "| device-side us per call | dispatch-included us per call |" in md
    assert "| dqn-2048x2048x2048 | 1024 | int8 | 2733 | 50 | 2.669 | 3.00x | 1,000 |" in md
    assert "| dqn-64x64 | 1 | int8_qwix | failed: ValueError: no |" in md
    assert "| ms per call | us per row | vs fp32 |" in qi.render_markdown(_report(False))


def test_the_committed_h200_file_still_recomputes() -> None:
    path = ROOT / "benchmarks" / "results" / "h200" / "quant_inference.json"
    assert make_docs.check_results_file(path, ROOT) == []
