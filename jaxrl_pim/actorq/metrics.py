"""Time-to-reward and speed-up bookkeeping (host-side NumPy).

The paper's headline metric is the wall-clock time until a run reaches 95 % of the fp32
run's final reward. Rewards can be negative (Acrobot, MountainCar, Pendulum), so "95 %" is
taken of the improvement over the start: ``target = start + 0.95 * (final - start)`` with
``start`` the fp32 curve's first value (an early, near-random return) and ``final`` its last
value (mean of the last ``return_window`` episodes). For a positive task that starts near 0
this is the paper's definition.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def reward_target(fp32_values: Any, fraction: float = 0.95) -> float:
    """``start + fraction * (final - start)`` of the fp32 reward curve (NaNs ignored)."""
    v = np.asarray(fp32_values, np.float64)
    v = v[np.isfinite(v)]
    if v.size == 0:
        raise ValueError("the fp32 reward curve has no finite value (no episode finished)")
    return float(v[0] + fraction * (v[-1] - v[0]))


def time_to_reward(times: Any, values: Any, target: float) -> float | None:
    """First time at which ``values >= target``; None when never reached."""
    t = np.asarray(times, np.float64)
    v = np.asarray(values, np.float64)
    if t.shape != v.shape:
        raise ValueError(f"times and values must have the same shape, got {t.shape}, {v.shape}")
    hit = np.flatnonzero(np.isfinite(v) & (v >= target))
    return float(t[hit[0]]) if hit.size else None


def speedups(curves: dict[str, tuple[Any, Any]], fraction: float = 0.95) -> dict[str, Any]:
    """Times to reward and speed-ups versus fp32 for ``{precision: (times, values)}``.

    Returns ``{"target": float, "improved": bool, "time_to_reward_s": {p: t or None},
    "speedup": {p: t_fp32 / t_p or None}}``. When the fp32 run did not improve on its start
    (``improved`` False) there is no meaningful target and every time and speed-up is None.
    """
    if "fp32" not in curves:
        raise ValueError("speed-ups need an fp32 curve as the reference")
    target = reward_target(curves["fp32"][1], fraction)
    v = np.asarray(curves["fp32"][1], np.float64)
    v = v[np.isfinite(v)]
    if not v[-1] > v[0]:
        none = dict.fromkeys(curves)
        return {"target": target, "improved": False, "time_to_reward_s": none, "speedup": none}
    ttr = {p: time_to_reward(t, v, target) for p, (t, v) in curves.items()}
    base = ttr["fp32"]
    sp = {
        p: (base / t if (base is not None and t is not None and t > 0) else None)
        for p, t in ttr.items()
    }
    return {"target": target, "improved": True, "time_to_reward_s": ttr, "speedup": sp}


def seed_stats(values: Any) -> dict[str, Any]:
    """Mean, sample standard deviation, standard error and count of per-seed values.

    ``None`` / NaN entries (a seed that never reached the reward) are counted in
    ``missing`` and left out of the statistics; with fewer than two values the spread is None.
    """
    vals = [float(v) for v in values if v is not None and np.isfinite(v)]
    n = len(vals)
    out: dict[str, Any] = {"n": n, "missing": len(list(values)) - n, "values": vals,
                           "mean": float(np.mean(vals)) if n else None,
                           "std": None, "se": None, "min": min(vals) if n else None,
                           "max": max(vals) if n else None}
    if n >= 2:
        std = float(np.std(vals, ddof=1))
        out.update(std=std, se=std / np.sqrt(n))
    return out


def ratio_within_noise(reference: dict[str, Any], other: dict[str, Any],
                       z: float = 2.0) -> dict[str, Any]:
    """``reference.mean / other.mean`` (e.g. fp32 time over int8 time: a speed-up) and whether
    the difference of the means is within ``z`` combined standard errors.

    Args:
      reference / other: :func:`seed_stats` results.
      z: how many standard errors of the difference count as noise (2: about a 95 %
        two-sided interval for normal errors).
    Returns:
      ``{"ratio", "difference", "difference_se", "within_noise"}``; ``within_noise`` is None
      (and the ratio may be None) when either side has fewer than two values or a seed that
      never got there (its time is unknown, so no spread can be given).
    """
    a, b = reference, other
    ratio = a["mean"] / b["mean"] if a["mean"] is not None and b["mean"] else None
    if a["se"] is None or b["se"] is None or a["missing"] or b["missing"]:
        return {"ratio": ratio, "difference": None, "difference_se": None,
                "within_noise": None}
    diff = a["mean"] - b["mean"]
    se = float(np.hypot(a["se"], b["se"]))
    return {"ratio": ratio, "difference": diff, "difference_se": se,
            "within_noise": bool(abs(diff) <= z * se)}
