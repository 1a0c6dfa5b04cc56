"""``benchmarks/e2e_ppo_phases.py``: the phase timer of the sides' protocol, the library's
profiled run (its smoke run) and ``summarize()`` against medians and ratios computed by
hand."""

from __future__ import annotations

import json

import pytest

from benchmarks import e2e_ppo_phases as phases
from benchmarks.peers import protocol
from tests.support import bench


def test_rollout_phase_times_the_call_and_splits_the_update() -> None:
    calls = []

    def rollout(state):
        calls.append(state)
        return state

    got = protocol.rollout_phase(rollout, 7, run_s=2.0, updates=8, repeats=5)
    assert calls == [7] * 6  # one compiling call, then the repeats
    assert got["updates"] == 8 and got["per_update_s"] == 0.25
    assert 0 < got["rollout_s"] < 0.25
    assert got["rest_s"] == pytest.approx(0.25 - got["rollout_s"])


def _row(variant: str, env: str, rollout: float, per_update: float) -> dict:
    side = "rejax" if variant == "rejax" else "jaxrl_pim"
    return {"variant": variant, "side": side, "env": env, "status": "measured",
            "record": {"versions": {"rejax": "0.1.3"},
                       "phases": {"rollout_s": rollout, "per_update_s": per_update,
                                  "rest_s": per_update - rollout, "updates": 10}}}


def test_summary_takes_medians_and_library_over_rejax_ratios() -> None:
    rows = [_row("jaxrl_pim", "cartpole", r, u) for r, u in [(1.0, 4.0), (3.0, 5.0),
                                                             (2.0, 9.0)]]
    rows += [_row("constant_lr", "cartpole", 1.5, 3.0), _row("constant_lr", "cartpole", 2.5,
                                                              4.0)]
    rows += [_row("rejax", "cartpole", 1.0, 2.0), _row("rejax", "cartpole", 2.0, 6.0)]
    rows.append({"variant": "rejax", "side": "rejax", "env": "cartpole", "status": "failed"})
    report = {"system": {"device_kind": "cpu"}, "results": {"runs": rows},
              "config": {"mode": "full", "threads": 2,
                         "sizes": {"rl_envs": ["cartpole"], "rounds": 3,
                                   "rl_timesteps": {"ppo": 100_000}}}}
    s = phases.summarize(report)
    # medians: library rollout 2, update 5, rest median(3, 2, 7) = 3; constant lr 2, 3.5,
    # 1.5; rejax 1.5, 4, 2.5
    assert s["ppo_rollout_s_jaxrl_pim_cartpole"] == 2.0
    assert s["ppo_update_s_jaxrl_pim_cartpole"] == 5.0
    assert s["ppo_rest_s_jaxrl_pim_cartpole"] == 3.0
    assert s["ppo_update_s_constant_lr_cartpole"] == 3.5
    assert s["ppo_rest_s_rejax_cartpole"] == 2.5
    assert s["ppo_rollout_ratio_cartpole"] == pytest.approx(2.0 / 1.5)
    assert s["ppo_update_ratio_cartpole"] == pytest.approx(5.0 / 4.0)
    assert s["ppo_update_ratio_constant_lr_cartpole"] == pytest.approx(3.5 / 4.0)
    assert s["ppo_rest_ratio_cartpole"] == pytest.approx(3.0 / 2.5)
    assert s["ppo_update_ratio_max"] == pytest.approx(1.25)
    assert s["ppo_not_measured"] == ["rejax"] and s["rejax_version"] == "0.1.3"
    table = phases.render_markdown({**report, "summary": s})
    assert "| cartpole | update | 5e+03 | 3.5e+03 | 4e+03 | 1.25 | 0.875 |" in table


@pytest.mark.xdist_group(bench.group("e2e_ppo_phases"))  # the provenance test's smoke run
def test_smoke_run_profiles_the_library_side(smoke_run) -> None:
    run = smoke_run("e2e_ppo_phases")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    data = json.loads((run.out / "e2e_ppo_phases_smoke.json").read_text())
    lib, opp = data["results"]["runs"]
    assert (lib["variant"], opp["variant"]) == ("jaxrl_pim", "rejax")
    assert opp["status"] == "not measured"
    rec = lib["record"]
    ph = rec["phases"]
    assert ph["updates"] == 2_048 // 512  # total_timesteps // (num_envs * num_steps)
    assert ph["per_update_s"] == pytest.approx(rec["measured_s"] / ph["updates"])
    assert 0 < ph["rollout_s"] and ph["rest_s"] == pytest.approx(ph["per_update_s"]
                                                                 - ph["rollout_s"])
    assert data["summary"]["ppo_update_ratio_max"] is None  # rejax not measured
