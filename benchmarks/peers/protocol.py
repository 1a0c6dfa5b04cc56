"""The protocol every side of ``benchmarks/e2e_frameworks.py`` speaks (standard library only).

A side is a program ``benchmarks/peers/<name>_run.py`` run by its own interpreter (the
opponent's venv, or the project's for ``jaxrl_pim_run.py``) as::

    <python> benchmarks/peers/<name>_run.py --spec '<JSON>' --launch-time <unix s>

``--spec`` is the run's task and schedule (see ``benchmarks/e2e_frameworks.py``: ``kind``
``marl`` or ``rl``, ``algo``, sizes); ``--launch-time`` is the parent's ``time.time()`` just
before it started the process, so ``startup_s`` includes the interpreter's and the imports'
start-up. The side prints, as its last line starting with :data:`MARKER`, one JSON object with
the fields of :data:`FIELDS` (times in seconds, returns in the side's own env's reward
convention, named in ``return_convention``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from importlib import metadata
from typing import Any

MARKER = "E2E_RESULT "
#: fields every side's record holds (None where a side has no such thing, e.g. compile_s
#: for an eager torch program)
FIELDS = (
    "framework", "versions", "threads", "seeds", "vmapped_seeds", "defaults",
    "startup_s", "compile_s", "warmup_env_steps", "warmup_s", "measured_env_steps",
    "measured_s", "steps_per_s", "episodes", "wall_s", "update_rounds", "final_return",
    "random_return", "return_convention", "load_avg_1m", "notes",
)


def parse(argv: list[str] | None = None) -> tuple[dict[str, Any], float]:
    """``(spec, launch_time)`` from the command line."""
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--spec", required=True, help="the run's task and schedule, JSON")
    p.add_argument("--launch-time", type=float, default=None,
                   help="parent's time.time() at launch (default: this process's start)")
    a = p.parse_args(argv)
    return json.loads(a.spec), (a.launch_time if a.launch_time is not None else time.time())


def versions(*packages: str) -> dict[str, str | None]:
    """Installed versions of ``packages`` (None where one is absent), plus Python's."""
    out: dict[str, str | None] = {"python": sys.version.split()[0]}
    for name in packages:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def threads() -> int | None:
    """The thread count the parent asked for (``OMP_NUM_THREADS``), None if unset."""
    v = os.environ.get("OMP_NUM_THREADS")
    return int(v) if v else None


def emit(record: dict[str, Any]) -> None:
    """Print the record as the side's result line (missing fields as None)."""
    out = {k: record.get(k) for k in FIELDS}
    out.update({k: v for k, v in record.items() if k not in out})
    out["load_avg_1m"] = os.getloadavg()[0]
    if out.get("steps_per_s") is None and out.get("measured_s"):
        out["steps_per_s"] = out["measured_env_steps"] / out["measured_s"]
    if out.get("wall_s") is None and out.get("measured_s") is not None:
        out["wall_s"] = (out.get("warmup_s") or 0.0) + out["measured_s"]
    print(MARKER + json.dumps(out, default=repr), flush=True)


def tail_mean(values: list[float], fraction: float = 0.1) -> float | None:
    """Mean of the last ``fraction`` of ``values`` (at least one), skipping NaN; None if
    nothing is left."""
    vals = [float(v) for v in values if v == v]
    if not vals:
        return None
    k = max(1, int(len(vals) * fraction))
    return sum(vals[-k:]) / k


def compile_and_run(train: Any, keys: Any, seeds: int) -> tuple[Any, float, float]:
    """A JAX side's timed run: ``train`` vmapped over the ``[seeds, ...]`` keys when there is
    more than one seed (one seed: called on ``keys[0]``), compiled, then run once with its
    result blocked. Returns ``(output, compile_s, run_s)``. Imports jax (a JAX side's venv
    has it)."""
    import jax

    if seeds > 1:
        train = jax.vmap(train)
    else:
        keys = keys[0]
    t0 = time.perf_counter()
    compiled = jax.jit(train).lower(keys).compile()
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    out = jax.block_until_ready(compiled(keys))
    return out, compile_s, time.perf_counter() - t0


def rollout_phase(rollout: Any, state: Any, run_s: float, updates: int,
                  repeats: int = 50) -> dict[str, float]:
    """The phases of one on-policy update, for ``spec["profile"]``: ``rollout(state)`` (the
    side's own rollout function, jitted; called on the trained state, which it does not
    change) timed alone, best of ``repeats`` after a compiling call; the rest of an update
    (advantages and the minibatch epochs) is the run's ``run_s / updates`` less that.
    Returns ``{"updates", "per_update_s", "rollout_s", "rest_s"}``. Imports jax. (Its own
    best-of loop: an opponent's interpreter has no ``jaxrl_pim.timing``.)"""
    import jax

    jax.block_until_ready(rollout(state))
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(rollout(state))
        best = min(best, time.perf_counter() - t0)
    per_update = run_s / updates
    return {"updates": updates, "per_update_s": per_update, "rollout_s": best,
            "rest_s": per_update - best}
