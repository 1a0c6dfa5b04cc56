"""``benchmarks/e2e_frameworks.py`` without any opponent installed: the subprocess protocol
driven with the library's own trainer standing in for an opponent, a missing or broken side,
the run plan, and ``summarize()`` against ratios computed by hand."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def e2e():
    return importlib.import_module("benchmarks.e2e_frameworks")


def _rec(steps_per_s: float, startup: float, compile_s: float | None, wall: float,
         seeds: int = 1, ret: float = -10.0) -> dict:
    return {"steps_per_s": steps_per_s, "startup_s": startup, "compile_s": compile_s,
            "wall_s": wall, "seeds": seeds, "final_return": ret, "random_return": -20.0,
            "versions": {"agilerl": "9.9"}, "return_convention": "test"}


def _row(side: str, algo: str, task: str, rec: dict | None, seeds: int = 1,
         defaults: bool = False) -> dict:
    spec = {"algo": algo, "seeds": seeds, "defaults": defaults}
    if rec is None:
        return {"side": side, "algo": algo, "task": task, "spec": spec,
                "status": "not measured", "reason": "no venv",
                "setup_command": f"bash benchmarks/peers/setup.sh {side}"}
    return {"side": side, "algo": algo, "task": task, "spec": spec, "status": "measured",
            "record": rec}


def _report(rows: list[dict], opponents: list[str], seeds: int = 4) -> dict:
    return {"system": {"device_kind": "cpu"},
            "config": {"mode": "full", "threads": 2, "opponents": opponents,
                       "sizes": {"seeds": seeds}},
            "results": {"runs": rows}}


def test_summarize_matches_hand_computed_ratios(e2e) -> None:
    rows = [
        # library, MADDPG N=3: one seed 1,000 steps/s; 4 vmapped seeds in 2 + 10 + 48 s
        _row("jaxrl_pim", "maddpg", "3", _rec(1000.0, 2.0, 8.0, 50.0)),
        _row("jaxrl_pim", "maddpg", "3", _rec(2500.0, 2.0, 10.0, 48.0, seeds=4), seeds=4),
        # AgileRL: 50 steps/s, one seed in 5 + 115 s (no compile) -> 30 seeds/h
        _row("agilerl", "maddpg", "3", _rec(50.0, 5.0, None, 115.0)),
        _row("agilerl", "maddpg", "3", _rec(400.0, 5.0, None, 10.0), defaults=True),
        # rejax DQN cartpole: vmaps its seeds too
        _row("jaxrl_pim", "dqn", "cartpole", _rec(8000.0, 3.0, 12.0, 5.0)),
        _row("jaxrl_pim", "dqn", "cartpole", _rec(20000.0, 3.0, 15.0, 6.0, seeds=4), seeds=4),
        _row("rejax", "dqn", "cartpole", _rec(10000.0, 3.0, 14.0, 3.0)),
        _row("rejax", "dqn", "cartpole", _rec(30000.0, 3.0, 17.0, 4.0, seeds=4), seeds=4),
        _row("sb3", "dqn", "cartpole", None),
        {**_row("rejax", "dqn", "cartpole", None, defaults=True), "status": "failed",
         "reason": "timed out after 600 s"},
    ]
    s = e2e.summarize(_report(rows, ["agilerl", "rejax", "sb3"]))
    assert s["e2e_steps_per_s_ratio_vs_agilerl_maddpg_3"] == pytest.approx(1000 / 50)
    # seeds/h: library 4 * 3600 / 60 = 240, AgileRL 3600 / 120 = 30
    assert s["e2e_seeds_per_hour_ratio_vs_agilerl_maddpg_3"] == pytest.approx(240 / 30)
    # one seed per call: 3600 / 60 = 60 against 30
    assert s["e2e_seeds_per_hour_ratio_one_seed_per_call"]["vs_agilerl_maddpg_3"] == \
        pytest.approx(60 / 30)
    assert s["e2e_steps_per_s_ratio_vs_rejax_dqn_cartpole"] == pytest.approx(0.8)
    # rejax vmapped against the library vmapped: 4*3600/24 = 600 over 4*3600/24 = 600
    assert s["e2e_seeds_per_hour_ratio_vs_rejax_dqn_cartpole"] == pytest.approx(1.0)
    assert s["e2e_steps_per_s_ratio_vs_sb3_dqn_cartpole"] is None
    assert s["e2e_steps_per_s_ratio_vs_agilerl_maddpg_by_task"] == {"3": pytest.approx(20.0)}
    assert s["e2e_seeds_per_hour_ratio_vs_rejax_by_variant"] == {
        "dqn cartpole": pytest.approx(1.0)}
    assert s["e2e_seeds_per_hour_ratio_vs_sb3_dqn_cartpole"] is None
    assert s["e2e_steps_per_s_ratio_min"] == pytest.approx(0.8)
    assert s["e2e_seeds_per_hour_ratio_min"] == pytest.approx(1.0)
    assert s["e2e_ratio_vs_frameworks_min"] == pytest.approx(0.8)
    assert s["e2e_ratio_vs_frameworks_median"] == pytest.approx((1.0 + 8.0) / 2)
    assert s["e2e_not_measured"] == ["sb3"]
    assert s["e2e_failed"] == ["rejax dqn cartpole (own defaults)"]
    assert "e2e_steps_per_s_ratio_vs_agilerl_maddpg_3_defaults" not in s  # defaults: a row
    md = e2e.render_markdown({**_report(rows, ["agilerl", "rejax", "sb3"]), "summary": s})
    assert "| agilerl 9.9 | maddpg | 3 | matched | 50 | 1,000 | 20.0x | 30 | 240 (60) | 8.0x |" \
        in md
    assert "own defaults" in md
    assert "`bash benchmarks/peers/setup.sh sb3`" in md
    assert "Failed: rejax dqn cartpole (own defaults)" in md


def test_harness_drives_the_library_as_an_opponent(e2e) -> None:
    """The library's program through the opponent path (an opponent's name, a given
    interpreter): one result line, its fields consistent, and the ratio of a side to itself
    exactly one."""
    from benchmarks.peers import protocol

    side = e2e.Side("agilerl", Path(sys.executable), e2e.PEERS_SCRIPTS / "jaxrl_pim_run.py")
    # the smoke sizes: 4 measured episodes, as many as the warm-up's, so the measured call is
    # the warm-up's program (read back from the compilation cache, not compiled twice)
    spec = e2e.marl_spec("maddpg", 3, e2e.sizes("smoke"))
    assert spec["measured_episodes"] == 4
    res = e2e.run_side(side, spec, threads=1, timeout_s=300)
    assert res["status"] == "measured", res
    rec = res["record"]
    assert set(protocol.FIELDS) <= set(rec)
    assert rec["threads"] == 1 and rec["seeds"] == 1 and rec["vmapped_seeds"] is False
    # 100 warm-up transitions = 4 episodes of 25 steps, then 4 measured episodes
    assert rec["warmup_env_steps"] == 100 and rec["measured_env_steps"] == 100
    assert rec["episodes"] == 8
    assert rec["steps_per_s"] == pytest.approx(100 / rec["measured_s"])
    assert rec["wall_s"] == pytest.approx(rec["warmup_s"] + rec["measured_s"])
    assert 0 < rec["startup_s"] < res["process_wall_s"]
    assert rec["startup_s"] + rec["compile_s"] + rec["wall_s"] <= res["process_wall_s"]
    assert rec["final_return"] < 0 and rec["random_return"] < 0  # spread: distances
    rows = [_row("jaxrl_pim", "maddpg", "3", rec), _row("agilerl", "maddpg", "3", rec)]
    s = e2e.summarize(_report(rows, ["agilerl"], seeds=1))
    assert s["e2e_steps_per_s_ratio_vs_agilerl_maddpg_3"] == 1.0
    assert s["e2e_seeds_per_hour_ratio_vs_agilerl_maddpg_3"] == 1.0


def test_missing_venv_is_not_measured_and_a_broken_side_fails(e2e, tmp_path: Path) -> None:
    res = e2e.run_side(e2e.opponent_side("benchmarl", tmp_path), {"algo": "maddpg"}, 2, 5)
    assert res == {"status": "not measured", "reason": f"no venv at {tmp_path / 'benchmarl'}",
                   "setup_command": "bash benchmarks/peers/setup.sh benchmarl"}
    bad = tmp_path / "bad_run.py"
    bad.write_text("print('E2E_RESULT is not the marker at the start')\nraise SystemExit(3)\n")
    res = e2e.run_side(e2e.Side("sb3", Path(sys.executable), bad), {}, 2, 60)
    assert res["status"] == "failed" and res["reason"] == "exit status 3"
    assert "not the marker" in res["output_tail"]


def test_plan_lists_each_library_run_once_before_its_first_use(e2e) -> None:
    size = e2e.sizes("quick")
    runs = e2e.plan(["agilerl", "benchmarl", "rejax"], size)
    lib = [r for r in runs if r["side"] == "jaxrl_pim"]
    keys = [(r["spec"]["algo"], r["spec"].get("agents", r["spec"].get("env")),
             r["spec"]["seeds"]) for r in lib]
    assert len(keys) == len(set(keys))
    # MADDPG N=3 (shared by AgileRL and BenchMARL), MATD3, MASAC; DQN and PPO on 2 envs;
    # each one seed and vmapped seeds
    assert len(lib) == 2 * (3 + 4)
    for i, r in enumerate(runs):
        if r["side"] != "jaxrl_pim" and not r["spec"]["defaults"] and r["spec"]["seeds"] == 1:
            before = [x["spec"] for x in runs[:i] if x["side"] == "jaxrl_pim"]
            assert any(b["algo"] == r["spec"]["algo"] and b["seeds"] == size["seeds"]
                       for b in before)
    defaults = [(r["side"], r["spec"]["algo"]) for r in runs if r["spec"]["defaults"]]
    assert sorted(defaults) == sorted([("agilerl", "maddpg"), ("agilerl", "matd3"),
                                       ("benchmarl", "maddpg"), ("benchmarl", "masac"),
                                       ("rejax", "dqn"), ("rejax", "ppo")])
    vmapped_opp = [r for r in runs if r["side"] != "jaxrl_pim" and r["spec"]["seeds"] > 1]
    assert {r["side"] for r in vmapped_opp} == {"rejax"} and len(vmapped_opp) == 4
    matched = [r["spec"] for r in runs if r["side"] == "agilerl" and not r["spec"]["defaults"]]
    assert all(s["batch_size"] == 1024 and s["learning_starts"] == 25_600
               and s["update_every"] == 100 and s["buffer_capacity"] == 1_000_000
               for s in matched)


def test_list_prints_the_plan_and_runs_nothing(e2e, capsys, monkeypatch) -> None:
    started = []
    monkeypatch.setattr(e2e, "run_side", lambda *a, **k: started.append(a))
    monkeypatch.setattr(e2e.harness, "write", lambda *a, **k: started.append("write"))
    assert e2e.main(["--list", "--quick", "--opponents", "agilerl", "rejax"]) == 0
    lines = capsys.readouterr().out.splitlines()
    planned = e2e.plan(["agilerl", "rejax"], e2e.sizes("quick"))
    assert lines[-1] == f"{len(planned)} runs, one process at a time (mode quick)"
    assert lines[:-1] == [f"{i + 1:3d}. {e2e.describe(r)}" for i, r in enumerate(planned)]
    assert "  1. [jaxrl_pim] maddpg 3 seeds=1" in lines
    assert any(line.endswith("[agilerl] maddpg 3 seeds=1 (own defaults)") for line in lines)
    assert started == []


def test_a_failed_vmapped_library_run_leaves_its_seeds_per_hour_unmeasured(e2e) -> None:
    """A vmapped library run that failed (the host's OOM killer) is not replaced by the one
    seed per call in the vmapped key: that key is None, the one-seed key still holds."""
    rows = [
        _row("jaxrl_pim", "matd3", "12", _rec(700.0, 2.0, 8.0, 50.0)),
        {**_row("jaxrl_pim", "matd3", "12", None, seeds=4), "status": "failed",
         "reason": "exit status -9"},
        _row("agilerl", "matd3", "12", _rec(100.0, 5.0, None, 115.0)),
    ]
    s = e2e.summarize(_report(rows, ["agilerl"]))
    assert s["e2e_steps_per_s_ratio_vs_agilerl_matd3_12"] == pytest.approx(7.0)
    assert s["e2e_seeds_per_hour_ratio_vs_agilerl_matd3_12"] is None
    assert s["e2e_seeds_per_hour_ratio_one_seed_per_call"]["vs_agilerl_matd3_12"] == \
        pytest.approx(2.0)
