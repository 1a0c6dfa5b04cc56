"""Statistics over seeds for the time-to-reward comparison (mean, spread, within-noise flag)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from jaxrl_pim.actorq.metrics import ratio_within_noise, seed_stats


def test_seed_stats_against_hand_computation():
    s = seed_stats([10.0, 12.0, None, 14.0, float("nan")])
    assert s["n"] == 3 and s["missing"] == 2 and s["values"] == [10.0, 12.0, 14.0]
    assert s["mean"] == 12.0 and s["std"] == pytest.approx(2.0)  # sample std (n - 1)
    assert s["se"] == pytest.approx(2.0 / math.sqrt(3))
    assert (s["min"], s["max"]) == (10.0, 14.0)
    one = seed_stats([5.0])
    assert one["mean"] == 5.0 and one["std"] is None and one["se"] is None
    assert seed_stats([None])["mean"] is None


def test_ratio_within_noise_flags_by_combined_standard_error():
    rng = np.random.default_rng(0)
    base = seed_stats([100.0, 104.0, 96.0])  # mean 100, se 2.31
    close = seed_stats([98.0, 101.0, 95.0])  # mean 98
    far = seed_stats([50.0, 52.0, 48.0])  # mean 50
    r = ratio_within_noise(base, close)
    assert r["ratio"] == pytest.approx(100 / 98)
    se = math.hypot(base["se"], close["se"])
    assert r["difference_se"] == pytest.approx(se) and r["within_noise"] is True
    f = ratio_within_noise(base, far)
    assert f["ratio"] == pytest.approx(2.0) and f["within_noise"] is False
    # z decides the threshold: the same pair is "noise" at a wide enough interval
    assert ratio_within_noise(base, far, z=100.0)["within_noise"] is True
    # a seed that never got there, or a single seed: no spread, no verdict
    assert ratio_within_noise(base, seed_stats([50.0, None, 52.0]))["within_noise"] is None
    assert ratio_within_noise(base, seed_stats([50.0]))["within_noise"] is None
    # draws from one distribution are mostly flagged as noise
    flags = [ratio_within_noise(seed_stats(rng.normal(10, 1, 3)),
                                seed_stats(rng.normal(10, 1, 3)))["within_noise"]
             for _ in range(200)]
    assert np.mean(flags) > 0.8
