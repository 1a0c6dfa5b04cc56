"""What ``benchmarks/tabular_gpu.py`` makes of its records: the summary and the tables.

:func:`summarize` (the headline keys of each rng's records, the ``lcg`` over ``jax`` ratios,
the sweep's best point, and a note where a key is not measured) and :func:`render_markdown`
(one table per section, then the summary), over the variants and sections the script runs
(:data:`VARIANTS`, :data:`SECTIONS`) and against its targets.
"""

from __future__ import annotations

import functools
import itertools
import statistics
from typing import Any

from benchmarks import harness
from benchmarks.tabular_gpu_knobs import sweep_summary, sweep_table
from benchmarks.tabular_gpu_model import draws_random

#: The 12 variants, ``algo-sampling-dtype``.
VARIANTS = [f"{a}-{s}-{d}" for a, s, d in itertools.product(("q", "sarsa"),
                                                             ("seq", "ran", "str"),
                                                             ("fp32", "int32"))]
#: The sections, in the order of the tables (the script's docstring describes each).
SECTIONS = ("frozenlake", "compare", "multiagent", "taxi", "scaling", "sweep")

#: Targets of the GPU run (issue 19): the worst of the 12 FrozenLake variants at 2,000 lanes
#: within 0.1 s (goal 0.03 s), 2,000 independent agents within 1 s.
FROZENLAKE_TARGET_S = 0.1
FROZENLAKE_GOAL_S = 0.03
MULTIAGENT_TARGET_S = 1.0


#: the tables' cells: the layer's number format, "n/a" for a value not measured
num = functools.partial(harness.fmt, missing="n/a")


def _worst(rows: list[dict], **match) -> tuple[float | None, float | None]:
    times = [r["run_s"] for r in rows
             if all(r.get(k) == v for k, v in match.items()) and r.get("run_s") is not None]
    if not times:
        return None, None
    return max(times), statistics.median(times)


#: Summary keys of the ``lcg`` records, in files whose config names ``rngs`` (the files
#: written before ``--rngs`` existed hold neither the keys nor ``lcg`` records).
LCG_KEYS = (*(f"{p}_{k}_lcg" for p in ("gpu", "tpu") for k in (
                "frozenlake_2000_lanes_s", "frozenlake_2000_lanes_s_median", "multiagent_2000_s")),
            *(f"gpu_frozenlake_{k}_lcg" for k in (
                "ns_per_dependent_step_worst", "floor_estimate_ns_worst_variant",
                "worst_over_floor_estimate")),
            *(f"{p}_frozenlake_lcg_over_jax_{k}" for p in ("gpu", "tpu")
              for k in ("worst", "worst_variant", "best")))


def _rng(record: dict) -> str:
    """A record's rng (records written before ``--rngs`` existed are ``jax`` ones)."""
    return record.get("rng", "jax")


def _headline(res: dict, cfg: dict, prefix: str, rng: str) -> dict[str, Any]:
    """The headline keys of ``rng``'s records (``jax``: the keys without a suffix; else
    suffixed ``_<rng>``); a key whose records are incomplete is left out."""
    sfx = "" if rng == "jax" else f"_{rng}"
    out: dict[str, Any] = {}
    sections = res["sections"]
    fl = [r for r in sections.get("frozenlake", []) if _rng(r) == rng]
    worst, median = _worst(fl, kernel=res["new_kernel"])
    n_ok = sum(1 for r in fl if r.get("run_s") is not None)
    if worst is not None and n_ok == len(VARIANTS) and sorted(cfg["variants"]) == sorted(VARIANTS):
        out[f"{prefix}_frozenlake_2000_lanes_s{sfx}"] = worst
        out[f"{prefix}_frozenlake_2000_lanes_s_median{sfx}"] = median
    ma_all = [r for r in sections.get("multiagent", []) if r["episodes"] == cfg["episodes"]]
    ma = [r for r in ma_all if _rng(r) == rng]
    if rng != "jax":  # a variant that draws nothing ran once, with jax: the same program
        ma += [r for r in ma_all if _rng(r) == "jax" and not draws_random(r["variant"])
               and r["variant"] not in {x["variant"] for x in ma}]
    worst_ma, _ = _worst(ma, kernel=res["new_kernel"])
    n_ma = len([r for r in ma if r.get("run_s") is not None])
    if worst_ma is not None and n_ma == len(cfg["pair_variants"]):
        out[f"{prefix}_multiagent_2000_s{sfx}"] = worst_ma
    steps = [r for r in fl if r.get("ns_per_dependent_step") is not None]
    if steps and prefix == "gpu":
        worst_step = max(steps, key=lambda r: r["ns_per_dependent_step"])
        out[f"gpu_frozenlake_ns_per_dependent_step_worst{sfx}"] = worst_step[
            "ns_per_dependent_step"]
        out[f"gpu_frozenlake_floor_estimate_ns_worst_variant{sfx}"] = worst_step[
            "floor_estimate_ns_per_step"]
        out[f"gpu_frozenlake_worst_over_floor_estimate{sfx}"] = max(
            r["over_floor_estimate"] for r in steps)
    return out


def _lcg_over_jax(res: dict, prefix: str) -> dict[str, Any]:
    """Per variant, its frozenlake ``lcg`` time over its ``jax`` time: the largest (and its
    variant) and the smallest ratio."""
    times = {(_rng(r), r["variant"]): r["run_s"] for r in res["sections"].get("frozenlake", [])
             if r.get("kernel") == res["new_kernel"] and r.get("run_s") is not None}
    ratios = {v: times[("lcg", v)] / times[("jax", v)] for v in VARIANTS
              if ("lcg", v) in times and ("jax", v) in times}
    if len(ratios) != len(VARIANTS):
        return {}
    worst = max(ratios, key=ratios.get)
    return {f"{prefix}_frozenlake_lcg_over_jax_worst": ratios[worst],
            f"{prefix}_frozenlake_lcg_over_jax_worst_variant": worst,
            f"{prefix}_frozenlake_lcg_over_jax_best": min(ratios.values())}


def summarize(report: dict[str, Any]) -> dict[str, Any]:
    """Headline numbers from the stored records (see the module docstring)."""
    res, cfg = report["results"], report["config"]
    backend = res["backend"]
    lcg = "lcg" in cfg.get("rngs", ())
    out: dict[str, Any] = {
        "device": res["device"], "mode": cfg["mode"], "new_kernel": res["new_kernel"],
        "gpu_frozenlake_2000_lanes_s": None, "gpu_frozenlake_2000_lanes_s_median": None,
        "gpu_multiagent_2000_s": None, "gpu_vs_pim_multiagent_speedup": None,
        "tpu_frozenlake_2000_lanes_s": None, "tpu_frozenlake_2000_lanes_s_median": None,
        "tpu_multiagent_2000_s": None, "tpu_vs_pim_multiagent_speedup": None,
        "gpu_frozenlake_ns_per_dependent_step_worst": None,
        "gpu_frozenlake_floor_estimate_ns_worst_variant": None,
        "gpu_frozenlake_worst_over_floor_estimate": None,
        "gpu_frozenlake_2000_lanes_target_s": FROZENLAKE_TARGET_S,
        "gpu_frozenlake_2000_lanes_goal_s": FROZENLAKE_GOAL_S,
        "gpu_frozenlake_2000_lanes_target_met": None,
        "gpu_multiagent_2000_target_s": MULTIAGENT_TARGET_S,
        "gpu_multiagent_2000_target_met": None,
        **({k: None for k in LCG_KEYS} if "rngs" in cfg else {}),
        **{k: None for k in sweep_summary([])},
        "pim_multiagent_2000_s": res["pim_multiagent_2000_s"], "pim_source": res["pim_source"],
        "note": None,
    }
    if backend not in harness.ACCELERATORS:
        out["note"] = ("measured on a CPU host (kernels in Pallas interpret mode): the GPU and "
                       "TPU figures are not measured")
        return out
    if cfg["mode"] != "full":
        out["note"] = f"{cfg['mode']} sizes: the headline keys need the full sizes"
        return out
    prefix = "tpu" if backend == "tpu" else "gpu"
    out.update(_headline(res, cfg, prefix, "jax"))
    worst_ma = out[f"{prefix}_multiagent_2000_s"]
    if worst_ma is not None:
        out[f"{prefix}_vs_pim_multiagent_speedup"] = res["pim_multiagent_2000_s"] / worst_ma
    if prefix == "gpu" and out["gpu_frozenlake_2000_lanes_s"] is not None:
        out["gpu_frozenlake_2000_lanes_target_met"] = (out["gpu_frozenlake_2000_lanes_s"]
                                                       <= FROZENLAKE_TARGET_S)
    if prefix == "gpu" and out["gpu_multiagent_2000_s"] is not None:
        out["gpu_multiagent_2000_target_met"] = out["gpu_multiagent_2000_s"] <= MULTIAGENT_TARGET_S
    headline = [f"{prefix}_frozenlake_2000_lanes_s", f"{prefix}_multiagent_2000_s"]
    if lcg:
        out.update(_headline(res, cfg, prefix, "lcg"))
        if None not in (out[f"{prefix}_frozenlake_2000_lanes_s{s}"] for s in ("", "_lcg")):
            out.update(_lcg_over_jax(res, prefix))
        headline += [f"{k}_lcg" for k in headline]
    out.update(sweep_summary(res["sections"].get("sweep", [])))
    missing = [k for k in headline if out[k] is None]
    if missing:
        out["note"] = f"not measured (section not run or a run failed): {', '.join(missing)}"
    return out


def render_markdown(report: dict[str, Any]) -> str:
    """Tables of a stored report: one per section, then the summary."""
    res, cfg = report["results"], report["config"]
    summary = summarize(report)
    lines = [f"Device: {res['device']} ({cfg['mode']} sizes); new kernel "
             f"`{res['new_kernel']}`. Run time is the median of the timed calls after the "
             "compiling call; ns/step = run time / (rows per lane x episodes); the floor is an "
             "estimate (see the script's docstring).", ""]
    rng_col = "rngs" in cfg  # files written before --rngs existed: jax only, no column
    head = ("| section | env | variant | " + ("rng | " if rng_col else "") + "kernel | lanes | "
            "rows/lane | episodes | compile s | run s | ns/step | floor ns (est.) | vs scan |")
    for name in SECTIONS:
        rows = res["sections"].get(name)
        if not rows:
            continue
        if name == "sweep":
            lines += sweep_table(rows)
            continue
        lines += [f"### {name}", "", head, "|" + "---|" * (12 + rng_col)]
        for r in rows:
            cells = (f"| {name} | {r['env']} | {r['variant']} | "
                     + (f"{_rng(r)} | " if rng_col else "")
                     + f"{r['kernel']} | {r['lanes']} | {r['rows_per_lane']} | {r['episodes']} | ")
            if r.get("error"):
                lines.append(cells + f"failed: {r['error'][:80]} | | | | |")
                continue
            diff = r.get("max_abs_diff_vs_scan")
            vs = "" if diff is None else ("identical" if diff == 0 else f"{diff:.1e}")
            lines.append(
                cells + f"{r['compile_s']:.1f} | {r['run_s']:.4g} | "
                f"{r['ns_per_dependent_step']:.1f} | "
                f"{num(r['floor_estimate_ns_per_step'], '.1f')} | {vs} |")
        lines.append("")
    for name, why in res.get("skipped_sections", {}).items():
        lines += [f"Section `{name}` not run in full: {why}.", ""]
    lines += ["### summary", "", "| key | value |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in summary.items()]
    return "\n".join(lines) + "\n"
