"""``benchmarks/mpe_rollout.py``'s opponent: JaxMARL's particle worlds step like the library's
matched worlds (same state, same actions, agent and action order mapped), and the mapping is
what makes them agree."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from tests.support.marl import JAXMARL_MARKS

ROOT = Path(__file__).resolve().parents[2]

pytestmark = JAXMARL_MARKS


@pytest.fixture(scope="module")
def script() -> dict:
    return vars(importlib.import_module("benchmarks.mpe_rollout"))


@pytest.mark.parametrize(("scenario", "preset"), [("spread", 3), ("tag", 3)])
def test_jaxmarl_steps_equal_the_library_for_25_steps(script: dict, scenario: str,
                                                      preset: int) -> None:
    env, params, jenv = script["matched_worlds"](scenario, preset)
    par = script["parity"](env, params, jenv)
    assert par["steps"] == 25
    assert par["ok"], par
    assert par["max_abs_pos"] <= 1e-5 and par["max_abs_vel"] <= 1e-5
    if scenario == "tag":  # predators first, then prey: JaxMARL's adversary_*, agent_*
        assert [jenv.agents[i] for i in range(4)] == ["adversary_0", "adversary_1",
                                                      "adversary_2", "agent_0"]


def test_without_the_action_mapping_the_worlds_diverge(script: dict, monkeypatch) -> None:
    env, params, jenv = script["matched_worlds"]("tag", 3)
    # parity's globals are the script's namespace: replace the mapping there
    monkeypatch.setitem(script["parity"].__globals__, "JAXMARL_ACTION_COLUMNS",
                        (0, 1, 2, 3, 4))
    par = script["parity"](env, params, jenv)
    # position moves before velocity (mpe2), so a wrong action shows in the velocity
    assert not par["ok"] and par["max_abs_vel"] > 1e-2, par


def test_summary_names_the_smallest_speedup(script: dict) -> None:
    rows = [{"env": e, "ours": {"steps_per_s": a}, "jaxmarl": {"steps_per_s": b},
             "parity": {"ok": True}} for e, a, b in (("spread-3", 30.0, 10.0),
                                                     ("tag-3-1-2", 15.0, 10.0))]
    summ = script["summarize"]({"results": {"rows": [], "jaxmarl": rows},
                                "system": {"device_kind": "cpu"}})
    assert summ["mpe_speedup_vs_jaxmarl_min"] == pytest.approx(1.5)
    assert summ["mpe_target_vs_jaxmarl_met"] is False
    assert summ["mpe_speedup_vs_jaxmarl_by_env"]["spread-3"] == pytest.approx(3.0)
