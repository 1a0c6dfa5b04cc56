"""Run ActorQ for one or several broadcast precisions and summarise (host-side driver).

``run_one`` trains one configuration in single-program mode or with distributed actors (Ray
or local processes) and returns a JSON-ready dict; ``compare_precisions`` runs fp32 / fp16 /
int8 one after the other in the same process (same seed, same machine) and adds times to
95 % of the fp32 reward, speed-ups and the broadcast sizes. Used by ``jaxrl-pim actorq`` and
``benchmarks/actorq_speedup.py``.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np

from jaxrl_pim.actorq.algorithms import make_agent
from jaxrl_pim.actorq.broadcast import broadcast_sizes
from jaxrl_pim.actorq.config import MODES, PRECISIONS, ActorQConfig
from jaxrl_pim.actorq.metrics import speedups, time_to_reward
from jaxrl_pim.checks import check_choice
from jaxrl_pim.envs.factory import make_with_info


def policy_broadcast_sizes(config: ActorQConfig, seed: int = 0) -> dict[str, int]:
    """Bytes per broadcast of ``config``'s policy network for fp32 / fp16 / int8."""
    _, _, info = make_with_info(config.env_name)
    agent = make_agent(config, info)
    return broadcast_sizes(agent.policy_params(agent.init(jax.random.PRNGKey(seed))))


def run_one(
    config: ActorQConfig,
    mode: str = "single",
    seed: int = 0,
    callback: Callable[..., None] | None = None,
    num_chunks: int = 20,
    *,
    ray_address: str | None = None,
    checkpoint_dir: str | os.PathLike[str] | None = None,
    checkpoint_every: int | None = None,
    resume: bool = False,
) -> dict[str, Any]:
    """Train once; returns curve, returns, counts, timings (JSON-ready, no device arrays).

    ``mode``: ``"single"`` (:func:`jaxrl_pim.actorq.single.run_timed`), ``"ray"`` or
    ``"processes"`` (:func:`jaxrl_pim.actorq.distributed.run_distributed` with that
    transport). With ``checkpoint_dir`` the run checkpoints into that folder
    (:class:`jaxrl_pim.checkpoint.Checkpoints`, keeping the last 3), fingerprinted by its
    config, seed, chunking and mode; ``checkpoint_every`` (environment steps) and ``resume``
    (continue from the newest checkpoint there) are passed on (see those functions).
    """
    check_choice("mode", mode, MODES)
    if mode == "single" and ray_address is not None:
        raise ValueError("ray_address needs mode='ray'")
    with _checkpoint_folder(config, mode, seed, num_chunks, checkpoint_dir) as checkpoints:
        if mode == "single":
            from jaxrl_pim.actorq.single import run_timed

            outcome = run_timed(config, jax.random.PRNGKey(seed), num_chunks=num_chunks,
                                callback=callback, checkpoints=checkpoints,
                                checkpoint_every=checkpoint_every, resume=resume)
            state, curve = outcome.state, outcome.curve
            out = {**outcome.report, "timing_s": outcome.timing_s,
                   "learner_updates": int(state.learner.step),
                   "env_steps": int(curve.env_steps[-1]) if curve.env_steps.size else 0,
                   "broadcasts": 1 + int(state.iteration) // config.actor_update_period,
                   "replay_size": int(state.replay.size)}
        else:
            from jaxrl_pim.actorq.distributed import DistributedRun, run_distributed

            spec = DistributedRun(seed, transport=mode, ray_address=ray_address,
                                  checkpoint_every=checkpoint_every, resume=resume)
            outcome = run_distributed(config, spec, checkpoints=checkpoints, callback=callback)
            curve = outcome.curve
            out = {**outcome.report, "timing_s": outcome.timing_s}
    out["curve"] = {
        "time_s": curve.time_s.tolist(),
        "env_steps": curve.env_steps.tolist(),
        "avg_return": [None if not np.isfinite(v) else float(v) for v in curve.avg_return],
    }
    finite = curve.avg_return[np.isfinite(curve.avg_return)]
    out["final_train_return"] = float(finite[-1]) if finite.size else None
    out["num_episodes"] = int(len(out["episode_returns"]))
    out["episode_returns"] = np.asarray(out["episode_returns"]).tolist()
    return out


def _checkpoint_folder(config: ActorQConfig, mode: str, seed: int, num_chunks: int,
                       checkpoint_dir: str | os.PathLike[str] | None) -> Any:
    """The run's open checkpoint folder as a context manager (keeping the last 3,
    fingerprinted by config, seed, chunking and mode), or ``nullcontext(None)`` without
    ``checkpoint_dir``."""
    if checkpoint_dir is None:
        return contextlib.nullcontext(None)
    from jaxrl_pim.actorq.single import checkpoint_fingerprint
    from jaxrl_pim.checkpoint import Checkpoints

    return Checkpoints(Path(checkpoint_dir), keep=3, fingerprint=checkpoint_fingerprint(
        config, seed, num_chunks, mode))


def compare_precisions(
    config: ActorQConfig,
    precisions: Sequence[str] = PRECISIONS,
    seed: int = 0,
    callback_factory: Callable[[str], Any] | None = None,
    **run_options: Any,
) -> dict[str, Any]:
    """Run each precision with otherwise identical settings; add speed-ups when fp32 ran.

    Returns ``{"runs": {precision: run_one(...)}, "broadcast_bytes": {...},
    "time_to_reward": speedups(...) or None}``. ``callback_factory(precision)`` may return a
    context manager yielding a progress callback (e.g. ``RichProgress``). ``run_options`` are
    :func:`run_one`'s other keyword arguments (``mode``, ``num_chunks``, ``ray_address``,
    ``checkpoint_dir``, ``checkpoint_every``, ``resume``), the same for every precision,
    except that with ``checkpoint_dir`` each precision checkpoints into
    ``<checkpoint_dir>/<precision>``.
    """
    for p in precisions:
        check_choice("precision", p, PRECISIONS)
    folder = run_options.pop("checkpoint_dir", None)
    runs: dict[str, Any] = {}
    for p in precisions:
        cfg = config.replace(precision=p)
        options = dict(run_options, checkpoint_dir=None if folder is None else Path(folder) / p)
        if callback_factory is None:
            runs[p] = run_one(cfg, seed=seed, **options)
        else:
            with callback_factory(p) as cb:
                runs[p] = run_one(cfg, seed=seed, callback=cb, **options)
    ttr = None
    if "fp32" in runs and runs["fp32"]["final_train_return"] is not None:
        curves = {
            p: (r["curve"]["time_s"],
                [np.nan if v is None else v for v in r["curve"]["avg_return"]])
            for p, r in runs.items()
        }
        ttr = speedups(curves)
        # the same target on the environment-step axis: separates sample efficiency from
        # wall-clock throughput (time ratio = steps ratio x throughput ratio)
        ttr["steps_to_reward"] = {
            p: time_to_reward(r["curve"]["env_steps"],
                              [np.nan if v is None else v for v in r["curve"]["avg_return"]],
                              ttr["target"]) if ttr["improved"] else None
            for p, r in runs.items()
        }
    return {
        "runs": runs,
        "broadcast_bytes": policy_broadcast_sizes(config, seed),
        "time_to_reward": ttr,
    }


def breakdown_table(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Rows of a Table-4-like summary: per precision, bytes, times and actor phases (ms)."""
    rows = []
    sizes = result["broadcast_bytes"]
    ttr = result.get("time_to_reward") or {}
    for p, r in result["runs"].items():
        bd = r.get("actor_breakdown_ms") or {}
        rows.append({
            "precision": p,
            "broadcast_bytes": sizes.get(p),
            "final_train_return": r["final_train_return"],
            "final_eval_return": r["final_eval_return"],
            "train_s": r["timing_s"].get("train"),
            "env_steps_per_s": (r["env_steps"] / r["timing_s"]["train"]
                                if r["timing_s"].get("train") else None),
            "steps_to_reward": (ttr.get("steps_to_reward") or {}).get(p),
            "time_to_reward_s": (ttr.get("time_to_reward_s") or {}).get(p),
            "speedup_vs_fp32": (ttr.get("speedup") or {}).get(p),
            "inference_ms": bd.get("inference"),
            "pull_ms": bd.get("pull"),
            "deserialize_ms": bd.get("deserialize"),
            "load_ms": bd.get("load"),
            "transitions_lost": r.get("transitions_lost"),
        })
    return rows


def format_table(rows: list[dict[str, Any]]) -> str:
    """Markdown table of :func:`breakdown_table` rows."""
    cols = list(rows[0]) if rows else []
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        lines.append("| " + " | ".join(_fmt(r[c]) for c in cols) + " |")
    return "\n".join(lines)


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)
