"""The summary of ``benchmarks/marl_sampling.py``: headline numbers from the stored records.

:func:`summarize` recomputes every summary key from a results file (files of summary schema
<= 2, written before the opponents, keep their keys: :func:`summarize_v2`): speed-ups of the
trainer's path over the original sampler and each opponent (:func:`opponent_keys`), achieved
GB/s against the copy bandwidth, and the fast mode's effect on return, read from the MADDPG
end-to-end results file when the script runs (:func:`read_e2e`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import harness
from benchmarks.sampling.rounds import TRAINER_MODE

#: The MADDPG end-to-end results file (``benchmarks/marl_e2e.py``'s) the fast mode's effect
#: on return is read from, in the device's results folder.
E2E_NAME = "marl_e2e.json"
#: Fewest seeds of both modes for a return change to be reported.
MIN_RETURN_SEEDS = 4


def read_e2e(path: Path) -> dict[str, Any]:
    """The fast-vs-faithful records of the MADDPG end-to-end results file at ``path``: per
    seed final returns of both modes and their run times, with the file's provenance."""
    rel = str(path.relative_to(harness.ROOT)) if path.is_relative_to(harness.ROOT) else str(path)
    out: dict[str, Any] = {"source": rel}
    if not path.exists():
        out["note"] = f"{rel} not found: the fast mode's effect on return is not available"
        return out
    rep = json.loads(path.read_text())
    runs = rep.get("results", {}).get("fast_mode") or {}  # marl_e2e: {"faithful", "fast"}
    if not {"faithful", "fast"} <= set(runs):
        out["note"] = f"{rel} holds no fast-mode section (results.fast_mode)"
        return out
    system = rep.get("system", {})
    out.update(
        source_start_utc=system.get("start_utc") or system.get("time_utc"),
        source_git_commit=system.get("git_commit"), source_device=system.get("device_kind"),
        seeds={m: runs[m].get("seeds") for m in ("faithful", "fast")},
        final_return_per_seed={m: runs[m].get("final_return_per_seed")
                               for m in ("faithful", "fast")},
        run_s={m: runs[m].get("run_s") for m in ("faithful", "fast")},
        setting={k: runs["faithful"].get("config", {}).get(k) for k in
                 ("env", "num_agents", "num_episodes", "sampler", "layout", "batch_size")},
    )
    return out


#: Version of the summary's key names. 2: the paired standard error of the fast mode's
#: return change is ``fast_mode_return_delta_se_paired`` (``marl_e2e``'s
#: ``fast_mode_return_delta_se`` is the unpaired one: one key, one meaning across files);
#: files written before carry no version and keep the old name until they are republished.
#: 3: the opponents (vectorised NumPy, flashbax uniform and prioritised, each also on one
#: thread) and the original sampler's speed-up renamed ``sampler_speedup_vs_original_24``.
SUMMARY_SCHEMA = 3


def _fast_mode_return(e2e: dict[str, Any], se_key: str) -> dict[str, Any]:
    """Mean and standard error of the fast mode's return change, recomputed from the per-seed
    records (paired by seed: both modes start from the same keys); the standard error under
    ``se_key``."""
    out: dict[str, Any] = {"fast_mode_return_delta": None, se_key: None,
                           "fast_mode_return_seeds": None,
                           "fast_mode_return_source": e2e.get("source"),
                           "fast_mode_e2e_time_ratio_faithful_over_fast": None}
    rets = e2e.get("final_return_per_seed")
    if not rets:
        out["fast_mode_return_note"] = e2e.get("note", "no fast-mode records")
        return out
    fa, fs = (np.asarray(rets[m], np.float64) for m in ("faithful", "fast"))
    seeds = e2e.get("seeds", {})
    if seeds.get("faithful") != seeds.get("fast") or fa.shape != fs.shape:
        out["fast_mode_return_note"] = "the two modes were not run on the same seeds"
        return out
    if fa.size < MIN_RETURN_SEEDS:
        out["fast_mode_return_note"] = (f"only {fa.size} seeds in {e2e.get('source')}; at least "
                                        f"{MIN_RETURN_SEEDS} are needed")
        return out
    diff = fs - fa
    scale = abs(float(fa.mean()))
    out.update(
        fast_mode_return_delta=float(diff.mean()) / scale,
        **{se_key: float(diff.std(ddof=1) / np.sqrt(diff.size)) / scale},
        fast_mode_return_seeds=int(diff.size),
        fast_mode_return_note=("relative change of the final return, (fast - faithful) / "
                               "|faithful mean|, paired by seed; standard error over seeds"),
    )
    run_s = e2e.get("run_s") or {}
    if run_s.get("faithful") and run_s.get("fast"):
        out["fast_mode_e2e_time_ratio_faithful_over_fast"] = run_s["faithful"] / run_s["fast"]
    return out


def summarize_v2(rep: dict[str, Any]) -> dict[str, Any]:
    """Headline numbers of a file of summary schema <= 2 (before the opponents), computed
    from the stored records."""
    res = rep["results"]
    rows = res["per_agents"]
    by_n = {r["num_agents"]: r for r in rows}
    r24 = by_n.get(24)
    copy_bw = res["copy_bandwidth"]["best_B_per_s"]

    def speed(r, mode, sampler="uniform"):
        t = r["seconds"][sampler][mode]
        return None if t is None else r["numpy_seconds"] / t

    out: dict[str, Any] = {
        "device": res["device"],
        "sampler_speedup_vs_numpy_24": None,
        "sampler_speedup_semantics": "faithful vs faithful: every agent draws its own uniform "
                                     "indices on both sides, same capacity, batch 1,024",
        "target_speedup_24": 10.0,
        "target_met": None,
        "faithful_agent_major_fresh_speedup_vs_numpy_24": None,
        "per_agent_speedup_vs_numpy_24": None,
        "fast_mode_sampler_speedup_24": None,
        "capacity_24": None,
        "bytes_per_round_24": None,
        "min_traffic_bytes_per_round_24": None,
        "numpy_GB_per_s_24": None,
        "jax_faithful_GB_per_s_24": None,
        "copy_bandwidth_GB_per_s": copy_bw / 1e9,
        "jax_faithful_fraction_of_copy_bw_24": None,
        "speedup_bound_at_copy_bw_24": None,
        "speedup_by_agents": {str(r["num_agents"]): speed(r, "interleaved_faithful")
                              for r in rows},
        "capacity_by_agents": {str(r["num_agents"]): r["capacity"] for r in rows},
        "layout_speedup_faithful_by_agents": {
            str(r["num_agents"]): r["seconds"]["uniform"]["per_agent"]
            / r["seconds"]["uniform"]["interleaved_faithful"] for r in rows},
        "paper_layout_speedup_by_agents": {"3": 1.36, "6": 2.26, "12": 4.41, "24": 9.55},
        "neighbor_vs_uniform_time_change_24_per_agent": None,
        "paper_neighbor_sampling_time_change_24": -0.372,
    }
    if r24:
        rb = r24["round_bytes"]
        t_jax = r24["seconds"]["uniform"]["interleaved_faithful"]
        s = speed(r24, "interleaved_faithful")
        out.update(
            sampler_speedup_vs_numpy_24=s, target_met=s >= 10.0,
            faithful_agent_major_fresh_speedup_vs_numpy_24=speed(
                r24, "interleaved_faithful_agent_major"),
            per_agent_speedup_vs_numpy_24=speed(r24, "per_agent"),
            fast_mode_sampler_speedup_24=speed(r24, "interleaved"),
            capacity_24=r24["capacity"], bytes_per_round_24=rb["output"],
            min_traffic_bytes_per_round_24=rb["min_traffic"],
            numpy_GB_per_s_24=rb["min_traffic"] / r24["numpy_seconds"] / 1e9,
            jax_faithful_GB_per_s_24=rb["min_traffic"] / t_jax / 1e9,
            jax_faithful_fraction_of_copy_bw_24=rb["min_traffic"] / t_jax / copy_bw,
            speedup_bound_at_copy_bw_24=r24["numpy_seconds"] / (rb["min_traffic"] / copy_bw),
        )
        if r24["seconds"]["neighbor"]["per_agent"] is not None:
            out["neighbor_vs_uniform_time_change_24_per_agent"] = (
                r24["seconds"]["neighbor"]["per_agent"] / r24["seconds"]["uniform"]["per_agent"]
                - 1.0)
    paired = rep["config"].get("summary_schema", 1) >= 2
    out.update(_fast_mode_return(res["fast_mode_return"], "fast_mode_return_delta_se_paired"
                                 if paired else "fast_mode_return_delta_se"))
    return out


#: Targets for the trainer's path against each opponent, at every N (issue 16).
TARGET_VS_NUMPY, TARGET_VS_FLASHBAX = 1.5, 1.0
OPPONENTS = ("numpy_original", "numpy_vectorized", "flashbax_uniform", "flashbax_prioritized")


def opponent_seconds(r: dict[str, Any]) -> dict[str, float | None]:
    """Round seconds of each opponent (``OPPONENTS``) and of the library's trainer path
    (``library_uniform``: faithful uniform; ``library_prioritized``: with the priority update)
    and its headline layout (``library_interleaved_faithful``) at one agent count."""
    fb = r.get("flashbax_seconds", {})
    fields, packed = r.get("numpy_vectorized_seconds"), r.get("numpy_vectorized_packed_seconds")
    return {"numpy_original": r["numpy_seconds"],
            # the best vectorised NumPy: the faster of its two layouts (field arrays, rows)
            "numpy_vectorized": min((t for t in (fields, packed) if t is not None),
                                    default=None),
            "numpy_vectorized_fields": fields,
            "numpy_vectorized_packed": packed,
            "library_packed_rows": r.get("library_packed_rows_seconds"),
            "flashbax_uniform": fb.get("flashbax_uniform"),
            "flashbax_prioritized": fb.get("flashbax_prioritized"),
            "library_uniform": r["seconds"]["uniform"][r.get("trainer_mode", TRAINER_MODE)],
            "library_interleaved_faithful": r["seconds"]["uniform"]["interleaved_faithful"],
            "library_prioritized": r.get("library_prioritized_update_seconds")}


def ratio(a: float | None, b: float | None) -> float | None:
    """``a / b``, or None when either is missing."""
    return None if a is None or b is None else a / b


def _at_24(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The record of N = 24 among ``rows`` (None when it was not run)."""
    return next((r for r in rows if r["num_agents"] == 24), None)


def _original_speedup_24(rows: list[dict[str, Any]], mode: str) -> float | None:
    """The original sampler's round time over ``mode``'s uniform round at N = 24."""
    r24 = _at_24(rows)
    return None if r24 is None else r24["numpy_seconds"] / r24["seconds"]["uniform"][mode]


def opponent_keys(rows: list[dict[str, Any]], copy_bw: float, suffix: str = "") -> dict:
    """Speed-ups of the trainer's path over each opponent (uniform against uniform,
    prioritised against prioritised with the priority update on both sides), per agent count
    and at N = 3 and 24, GB/s at N = 24, and whether the targets hold at every N."""
    sec = {r["num_agents"]: opponent_seconds(r) for r in rows}
    out: dict[str, Any] = {}
    pairs = {"vectorized_numpy": ("numpy_vectorized", "library_uniform"),
             "flashbax_uniform": ("flashbax_uniform", "library_uniform"),
             "flashbax_prioritized": ("flashbax_prioritized", "library_prioritized")}
    for name, (opp, lib) in pairs.items():
        by_n = {str(n): ratio(t[opp], t[lib]) for n, t in sec.items()}
        out[f"sampler_speedup_vs_{name}_by_agents{suffix}"] = by_n
        for n in (3, 24):
            out[f"sampler_speedup_vs_{name}_{n}{suffix}"] = by_n.get(str(n))
    out[f"interleaved_faithful_speedup_vs_vectorized_numpy_by_agents{suffix}"] = {
        str(n): ratio(t["numpy_vectorized"], t["library_interleaved_faithful"])
        for n, t in sec.items()}
    out[f"vectorized_numpy_best_layout_by_agents{suffix}"] = {
        str(n): None if t["numpy_vectorized_packed"] is None else (
            "packed" if t["numpy_vectorized_packed"] < t["numpy_vectorized_fields"] else "fields")
        for n, t in sec.items()}
    out[f"packed_rows_round_speedup_vs_trainer_by_agents{suffix}"] = {
        str(n): ratio(t["library_uniform"], t["library_packed_rows"]) for n, t in sec.items()}
    # the packed layout's standalone round (whole rows, ``replay.gather_rows``) against the
    # uniform opponents: what that layout gives a host-driven round; not the trainer's path
    for name, opp in (("vectorized_numpy", "numpy_vectorized"),
                      ("flashbax_uniform", "flashbax_uniform")):
        out[f"packed_layout_round_speedup_vs_{name}_by_agents{suffix}"] = {
            str(n): ratio(t[opp], t["library_packed_rows"]) for n, t in sec.items()}
    vals = [(v, TARGET_VS_NUMPY if "numpy" in k else TARGET_VS_FLASHBAX)
            for k, d in out.items() if k.endswith(f"_by_agents{suffix}")
            and k.startswith("sampler_speedup") for v in d.values()]
    out[f"opponent_targets_met_every_n{suffix}"] = (
        None if not vals or any(v is None for v, _ in vals) else all(v >= t for v, t in vals))
    r24 = _at_24(rows)
    if r24 is not None:
        traffic = r24["round_bytes"]["min_traffic"]
        for side, t in sec[24].items():
            out[f"{side}_GB_per_s_24{suffix}"] = None if t is None else traffic / t / 1e9
            out[f"{side}_fraction_of_copy_bw_24{suffix}"] = (
                None if t is None else traffic / t / copy_bw)
    return out


def summarize(rep: dict[str, Any]) -> dict[str, Any]:
    """Headline numbers, computed from the stored records (files of summary schema <= 2 keep
    their old keys: :func:`summarize_v2`)."""
    if rep["config"].get("summary_schema", 1) < 3:
        return summarize_v2(rep)
    res = rep["results"]
    out = summarize_v2(rep)
    trainer = res["per_agents"][0].get("trainer_mode", TRAINER_MODE)
    out["trainer_mode"] = trainer
    # v2's headline (time-major interleaved gather) keeps its value under a name that says
    # which round it is; the original-sampler headline is the trainer's path
    out["time_major_speedup_vs_original_24"] = out.pop("sampler_speedup_vs_numpy_24")
    out.pop("faithful_agent_major_fresh_speedup_vs_numpy_24", None)
    out["sampler_speedup_vs_original_24"] = _original_speedup_24(res["per_agents"], trainer)
    out["target_met"] = (None if out["sampler_speedup_vs_original_24"] is None
                         else out["sampler_speedup_vs_original_24"] >= out["target_speedup_24"])
    out["targets_vs_opponents"] = {"vectorized_numpy": TARGET_VS_NUMPY,
                                   "flashbax": TARGET_VS_FLASHBAX}
    out.update(opponent_keys(res["per_agents"], res["copy_bandwidth"]["best_B_per_s"]))
    one = res.get("one_thread")
    if one:
        out.update(opponent_keys(one["per_agents"], one["copy_bandwidth"]["best_B_per_s"],
                                 "_one_thread"))
        out["sampler_speedup_vs_original_24_one_thread"] = _original_speedup_24(
            one["per_agents"], trainer)
    r24 = _at_24(res["per_agents"])
    out["fast_mode_bytes_per_round_24"] = (None if r24 is None
                                           else r24["round_bytes"]["fast_mode_min_traffic"])
    out["fast_mode_bytes_saved_fraction_24"] = (None if r24 is None else 1.0 - r24[
        "round_bytes"]["fast_mode_min_traffic"] / r24["round_bytes"]["min_traffic"])
    return out
