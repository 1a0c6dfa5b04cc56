"""EnergyTracker: a clear no-op without codecarbon; honest 'estimated' flag with it."""

from __future__ import annotations

import sys

import pytest

from jaxrl_pim.actorq.energy import EnergyTracker


def test_noop_without_codecarbon(monkeypatch):
    monkeypatch.setitem(sys.modules, "codecarbon", None)  # import now raises ImportError
    with EnergyTracker(country_iso_code="FRA") as et:
        pass
    res = et.result()
    assert res["available"] is False and "codecarbon is not installed" in res["note"]


def test_disabled_and_bad_country():
    with EnergyTracker(enabled=False) as et:
        pass
    assert et.result() == {"available": False, "note": "energy tracking disabled"}
    with pytest.raises(ValueError, match="country_iso_code"):
        EnergyTracker(country_iso_code="France")


def test_with_codecarbon_reports_whether_estimated():
    pytest.importorskip("codecarbon")
    with EnergyTracker(country_iso_code="USA") as et:
        sum(i * i for i in range(200_000))
    res = et.result()
    assert res["available"] is True and res["country_iso_code"] == "USA"
    assert res["energy_kwh"] >= 0.0 and res["emissions_kg"] >= 0.0
    assert isinstance(res["estimated"], bool)
    assert ("ESTIMATED" in res["note"]) == res["estimated"]
