"""The ActorQ benchmark's summary carries the PTQ study's headline ratio, with its source."""

from __future__ import annotations

import json

from benchmarks.actorq_speedup import link_ptq_summary


def test_link_ptq_summary_copies_ratio_and_source(tmp_path):
    path = tmp_path / "quant_ptq.json"
    path.write_text(json.dumps({"system": {"time_utc": "2026-01-01T00:00:00"},
                                "summary": {"int8_min_return_ratio": 0.97, "mode": "full"}}))
    base = {"device": "cpu", "broadcast_bytes_ratio": 4.0}
    out = link_ptq_summary(base, path)
    assert out["int8_min_return_ratio"] == 0.97
    assert out["int8_min_return_ratio_source"] == "quant_ptq.json (full mode, 2026-01-01T00:00:00)"
    assert out["broadcast_bytes_ratio"] == 4.0 and "int8_min_return_ratio" not in base
    missing = link_ptq_summary(base, tmp_path / "absent.json")
    assert missing["int8_min_return_ratio"] is None
    assert "not found" in missing["int8_min_return_ratio_source"]
