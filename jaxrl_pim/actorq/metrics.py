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
