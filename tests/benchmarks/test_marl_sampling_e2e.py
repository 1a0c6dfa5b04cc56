"""``benchmarks/marl_sampling.py`` reads the fast mode's effect on return from the end-to-end
results file that ``benchmarks/marl_e2e.py`` writes (its real schema, from a published file)."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

from benchmarks.sampling import summary

ROOT = Path(__file__).resolve().parents[2]
E2E = ROOT / "benchmarks" / "results" / "cpu" / "marl_e2e.json"


@pytest.mark.skipif(not E2E.exists(), reason="no published marl_e2e.json")
def test_fast_mode_return_is_read_from_the_e2e_results_file(monkeypatch) -> None:
    script = vars(importlib.import_module("benchmarks.marl_sampling"))
    e2e = script["read_e2e"](E2E)
    assert "note" not in e2e, e2e.get("note")
    got = summary._fast_mode_return(e2e, "fast_mode_return_delta_se_paired")
    published = json.loads(E2E.read_text())["summary"]
    # the same paired statistic computed by the other script from the same records
    assert got["fast_mode_return_seeds"] == published["fast_mode_seeds"] >= 4
    assert got["fast_mode_return_delta"] == pytest.approx(published["fast_mode_return_delta"],
                                                          rel=1e-9)
    assert got["fast_mode_return_source"] == "benchmarks/results/cpu/marl_e2e.json"


def test_a_file_without_a_fast_mode_section_says_so(tmp_path: Path, monkeypatch) -> None:
    script = vars(importlib.import_module("benchmarks.marl_sampling"))
    path = tmp_path / "e2e.json"
    path.write_text(json.dumps({"results": {"timing": {}}}))
    out = summary._fast_mode_return(script["read_e2e"](path), "se")
    assert out["fast_mode_return_delta"] is None
    assert "no fast-mode section" in out["fast_mode_return_note"]


SAMPLING = ROOT / "benchmarks" / "results" / "cpu" / "marl_sampling.json"


@pytest.mark.skipif(not (E2E.exists() and SAMPLING.exists()), reason="no published files")
def test_the_paired_standard_error_has_its_own_key(monkeypatch) -> None:
    # marl_e2e's fast_mode_return_delta_se is unpaired; the paired one computed here from the
    # same records is another statistic, so new files name it fast_mode_return_delta_se_paired
    script = vars(importlib.import_module("benchmarks.marl_sampling"))
    data = json.loads(SAMPLING.read_text())
    data["config"]["summary_schema"] = script["SUMMARY_SCHEMA"]
    new = script["summarize"](data)
    unpaired = json.loads(E2E.read_text())["summary"]["fast_mode_return_delta_se"]
    assert "fast_mode_return_delta_se" not in new
    assert new["fast_mode_return_delta_se_paired"] != pytest.approx(unpaired, rel=0.05)
    # a file written before the rename keeps reproducing its stored summary
    data["config"].pop("summary_schema")
    assert "fast_mode_return_delta_se" in script["summarize"](data)
