"""What ``benchmarks/marl_e2e.py`` makes of its records: the summary, the tables and the plot.

:func:`summarize` (headline numbers recomputed from a stored report: the improvement over
random play, the samplers' gaps, the fast mode's return change and time ratio, the 60k-episode
times against the paper, the throughput speed-ups per layout), :func:`render_markdown` (the
tables of every part) and :func:`plot_curves` (learning curves against random play).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.marl_e2e_runs import E2E_MODES, FULL_EPISODES
from jaxrl_pim import report

#: The faithful modes, one per replay layout: the default layout is the fastest of these.
FAITHFUL_LAYOUTS = ("per_agent", "interleaved", "packed")
#: Version of the summary's keys: 2 adds the full-schedule and throughput keys; files without
#: it keep the keys they were written with.
SUMMARY_SCHEMA = 2


def fast_mode_stats(fast_mode: dict[str, Any]) -> dict[str, Any]:
    """Mean, sample std (``ddof=1``; None for one seed) per mode, the relative difference
    of the means, its standard error (independent means, relative to |faithful|), the
    paired per-seed differences and the run-time ratio."""
    out: dict[str, Any] = {}
    for mode in ("faithful", "fast"):
        x = np.asarray(fast_mode[mode]["final_return_per_seed"], np.float64)
        out[mode] = {"mean": float(x.mean()),
                     "std": float(x.std(ddof=1)) if len(x) > 1 else None, "n": len(x)}
    fa, fs = out["faithful"], out["fast"]
    out["return_delta"] = (fs["mean"] - fa["mean"]) / abs(fa["mean"])
    out["return_delta_se"] = None
    if fa["std"] is not None and fs["std"] is not None:
        out["return_delta_se"] = float(np.sqrt(fa["std"] ** 2 / fa["n"] + fs["std"] ** 2
                                               / fs["n"]) / abs(fa["mean"]))
    out["return_diff_per_seed"] = (
        np.asarray(fast_mode["fast"]["final_return_per_seed"])
        - np.asarray(fast_mode["faithful"]["final_return_per_seed"])).tolist()
    out["time_ratio_faithful_over_fast"] = (fast_mode["faithful"]["run_s"]
                                            / fast_mode["fast"]["run_s"])
    return out


def _improvement(quality: dict[str, Any], sampler: str) -> float | None:
    run = quality["runs"].get(sampler)
    if run is None:
        return None
    rand = quality["random_return"]
    return (run["final_return"] - rand) / abs(rand)


def _gap(quality: dict[str, Any], sampler: str) -> float | None:
    run, base = quality["runs"].get(sampler), quality["runs"].get("uniform")
    if run is None or base is None:
        return None
    return abs(run["final_return"] - base["final_return"]) / abs(base["final_return"])


def summarize(report_: dict[str, Any]) -> dict[str, Any]:
    """Headline numbers from the stored records (see the module docstring)."""
    system, res = report_["system"], report_["results"]
    quality, fast_mode, timing = res.get("quality"), res.get("fast_mode"), res.get("timing")
    summary: dict[str, Any] = {
        "device": f"{system['backend']}: {system['device_count']} x {system['device_kind']}",
        "mode": report_["config"]["mode"],
        "maddpg_spread3_improvement_vs_random": (
            _improvement(quality, "uniform") if quality else None),
        "neighbor_gap_vs_uniform": _gap(quality, "neighbor") if quality else None,
        "info_prioritized_gap_vs_uniform": (
            _gap(quality, "info_prioritized") if quality else None),
    }
    if fast_mode:
        st = fast_mode_stats(fast_mode)
        summary.update(
            fast_mode_seeds=st["fast"]["n"],
            faithful_final_return_mean=st["faithful"]["mean"],
            fast_final_return_mean=st["fast"]["mean"],
            fast_mode_return_delta=st["return_delta"],
            fast_mode_return_delta_se=st["return_delta_se"],
            fast_mode_time_ratio_faithful_over_fast=st["time_ratio_faithful_over_fast"],
        )
    else:
        summary.update(fast_mode_seeds=None, fast_mode_return_delta=None,
                       fast_mode_return_delta_se=None)
    rows = timing or []
    summary["extrapolated_60k_s"] = {f"{r['env']}{r['agents']}": r["extrapolated_60k_s"]
                                     for r in rows}
    summary["extrapolated_speedup_vs_paper"] = {
        f"{r['env']}{r['agents']}": r["paper_60k_s"] / r["extrapolated_60k_s"]
        for r in rows if r["paper_60k_s"]}
    if report_["config"].get("summary_schema", 1) < 2:
        return summary
    full = {f"{r['env']}{r['agents']}": r for r in rows
            if r["extrapolated_from_episodes"] >= FULL_EPISODES}
    for env in ("spread", "tag"):
        r = full.get(f"{env}3")
        summary[f"maddpg_{env}3_60k_s"] = None if r is None else r["warmup_s"] + r["measured_s"]
        summary[f"maddpg_{env}3_60k_seeds"] = None if r is None else 1
    summary["maddpg_s_per_1k_episodes"] = {
        f"{r['env']}{r['agents']}": 1000 * r["measured_s"] / r["measured_episodes"]
        for r in rows}
    summary["paper_s_per_1k_episodes_published"] = {
        f"{r['env']}{r['agents']}": r["paper_60k_s"] / 60 for r in rows if r["paper_60k_s"]}
    summary["maddpg_buffer_capacity"] = {f"{r['env']}{r['agents']}": _cfg(r, "buffer_capacity")
                                         for r in rows}
    summary["quality_seeds"] = None if not quality else min(
        len(r.get("seeds") or [r["seed"]]) for r in quality["runs"].values())
    tp = res.get("throughput") or []
    sps = {m: {str(r["agents"]): r["steps_per_s"] for r in tp if r["mode"] == m}
           for m in E2E_MODES}
    summary["marl_e2e_steps_per_s"] = sps
    for m in ("interleaved", "packed", "fast"):
        by_n = {n: v / sps["per_agent"][n] for n, v in sps[m].items() if n in sps["per_agent"]}
        summary[f"marl_e2e_speedup_{m}_vs_per_agent_by_agents"] = by_n
        summary[f"marl_e2e_speedup_{m}_vs_per_agent_24"] = by_n.get("24")
    summary["marl_e2e_speedup_packed_vs_interleaved_by_agents"] = {
        n: v / sps["interleaved"][n] for n, v in sps["packed"].items() if n in sps["interleaved"]}
    summary["marl_e2e_fastest_faithful_layout_by_agents"] = {
        n: max((m for m in FAITHFUL_LAYOUTS if n in sps[m]), key=lambda m, n=n: sps[m][n])
        for n in sps["per_agent"]}
    return summary


def _cfg(record: dict[str, Any], field: str, missing: Any = None) -> Any:
    """A ``MARLConfig`` field of a record, whether the config is the object or its stored dict
    (``missing`` where a file written before the field existed lacks it)."""
    c = record["config"]
    return c.get(field, missing) if isinstance(c, dict) else getattr(c, field)


def render_markdown(report_: dict[str, Any]) -> str:
    """Tables of the three parts (from the stored report)."""
    res, summary = report_["results"], report_["summary"]
    timing, quality, fast_mode = res.get("timing"), res.get("quality"), res.get("fast_mode")
    lines = [f"Device: {summary['device']}; mode {summary['mode']}.", ""]
    if timing:
        lines += [
            f"MADDPG with the trainer's defaults (the original's algorithm, "
            f"`{_cfg(timing[0], 'layout', 'per_agent')}` replay layout); the 60k-episode time is "
            "extrapolated from the episodes run (warm-up + measured). Paper: published RTX 3090 "
            "figures.",
            "",
            "| env | agents | warm-up eps | warm-up s | measured eps | measured s | "
            "extrapolated from eps | 60k eps s (extrapolated) | paper 60k s |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for r in timing:
            lines.append(
                f"| {r['env']} | {r['agents']} | {r['warmup_episodes']:,} | {r['warmup_s']:.1f} "
                f"| {r['measured_episodes']:,} | {r['measured_s']:.1f} | "
                f"{r['extrapolated_from_episodes']:,} | {r['extrapolated_60k_s']:.0f} | "
                f"{'' if r['paper_60k_s'] is None else r['paper_60k_s']} |")
        lines.append("")
    if timing and report_["config"].get("summary_schema", 1) >= 2:
        lines += [
            "Time on the full schedule (one seed each): `60k s` is MEASURED over all 60,000 "
            "episodes where the run covered them, else `-`; `s per 1k eps` is measured after "
            "the warm-up (updates included). Paper: Table I, published RTX 3090 figures "
            "(60k seconds / 60 per 1k episodes).", "",
            "| env | agents | capacity | episodes run | 60k s (measured) | s per 1k eps | "
            "paper s per 1k eps (published) |", "|---|---:|---:|---:|---:|---:|---:|"]
        for r in timing:
            cap = _cfg(r, "buffer_capacity")
            full = (f"{r['warmup_s'] + r['measured_s']:.0f}"
                    if r["extrapolated_from_episodes"] >= FULL_EPISODES else "-")
            paper = "" if r["paper_60k_s"] is None else f"{r['paper_60k_s'] / 60:.1f}"
            lines.append(
                f"| {r['env']} | {r['agents']} | {cap:,} | {r['extrapolated_from_episodes']:,} "
                f"| {full} | {1000 * r['measured_s'] / r['measured_episodes']:.1f} | {paper} |")
        lines.append("")
    tp = res.get("throughput")
    if tp:
        lines += [
            "End-to-end training throughput (env steps per second including the updates, "
            "after the update-free warm-up, compile excluded; the trainer's defaults but the "
            "layout and sampling mode, one seed; "
            "capacity = buffer rows used):", "",
            "| env | agents | mode | capacity | episodes | s | env steps/s | vs per_agent |",
            "|---|---:|---|---:|---:|---:|---:|---:|"]
        base = {(r["env"], r["agents"]): r["steps_per_s"] for r in tp if r["mode"] == "per_agent"}
        for r in tp:
            b = base.get((r["env"], r["agents"]))
            vs = "" if b is None else f"{r['steps_per_s'] / b:.2f}x"
            lines.append(
                f"| {r['env']} | {r['agents']} | {r['mode']} | {r['buffer_capacity']:,} | "
                f"{r['measured_episodes']:,} | {r['measured_s']:.1f} | {r['steps_per_s']:,.0f} "
                f"| {vs} |")
        lines.append("")
    if quality:
        lines += [
            f"Random policy return (same env, this run): {quality['random_return']:.2f} "
            f"(Gumbel zero-logits {quality['random_return_gumbel']:.2f}, one-hot "
            f"{quality['random_return_one_hot']:.2f}).",
            "",
            *([f"Seeds per sampler: {summary['quality_seeds']} (final return: mean over "
               "seeds).", ""] if summary.get("quality_seeds") else []),
            "| sampler | update rounds | final return | improvement vs random | gap vs uniform |",
            "|---|---:|---:|---:|---:|",
        ]
        for s, r in quality["runs"].items():
            gap = _gap(quality, s)
            lines.append(
                f"| {s} | {r['update_rounds']:,} | {r['final_return']:.2f} | "
                f"{_improvement(quality, s) * 100:.1f} % | "
                f"{'' if gap is None else f'{gap * 100:.1f} %'} |")
        lines.append("")
    if fast_mode:
        st = fast_mode_stats(fast_mode)
        n = st["fast"]["n"]
        lines += [
            f"Faithful vs fast sampling mode (uniform sampler, seeds 0-{n - 1} vmapped in one "
            f"call; final return = mean over the last "
            f"{fast_mode['fast']['final_window_episodes']} episodes; mean +- sample std over "
            "seeds; times for all seeds together):",
            "",
            "| mode | update rounds | final return | per seed | run s | compile s |",
            "|---|---:|---|---|---:|---:|",
        ]
        for m in ("faithful", "fast"):
            r, s = fast_mode[m], st[m]
            std = "" if s["std"] is None else f" +- {s['std']:.2f}"
            per = ", ".join(f"{x:.1f}" for x in r["final_return_per_seed"])
            lines.append(f"| {m} | {r['update_rounds']:,} | {s['mean']:.2f}{std} | {per} | "
                         f"{r['run_s']:.1f} | {r['compile_s']:.1f} |")
        se = st["return_delta_se"]
        lines += [
            "",
            f"Fast minus faithful, relative to the faithful return: "
            f"{st['return_delta'] * 100:+.1f} %"
            + ("" if se is None else f" (standard error {se * 100:.1f} %)")
            + f"; faithful run time / fast run time: "
            f"{st['time_ratio_faithful_over_fast']:.2f}x.",
        ]
    return "\n".join(lines) + "\n"


def _smooth(c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Moving average over ``len(c) // 30`` episodes: ``(x, y)``."""
    k = max(1, len(c) // 30)
    sm = np.convolve(c, np.ones(k) / k, mode="valid")
    return np.arange(len(sm)) + k - 1, sm


def plot_curves(quality: dict[str, Any], fast_mode: dict[str, Any], path: Path) -> None:
    """Learning curves vs the random policy: samplers (part 2) and sampling modes (part 3)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [p for p in (quality, fast_mode) if p]
    fig, axes = plt.subplots(1, len(panels), figsize=(6.5 * len(panels), 4), squeeze=False)
    axes = list(axes[0])
    if quality:
        ax = axes.pop(0)
        for s, r in quality["runs"].items():
            ax.plot(*_smooth(np.asarray(r["curve"])), label=s)
        ax.axhline(quality["random_return"], color="k", ls="--", label="random policy")
        ax.set_title("samplers (fast mode, seed 0)")
    if fast_mode:
        ax = axes.pop(0)
        for m in ("faithful", "fast"):
            r = fast_mode[m]
            x, mean = _smooth(np.asarray(r["curve_mean"]))
            _, std = _smooth(np.asarray(r["curve_std"]))
            ax.plot(x, mean, label=f"{m} (mean of {len(r['seeds'])} seeds)")
            ax.fill_between(x, mean - std, mean + std, alpha=0.2)
        if quality:
            ax.axhline(quality["random_return"], color="k", ls="--", label="random policy")
        ax.set_title("faithful vs fast sampling mode (uniform; band: +- std over seeds)")
    for ax in fig.axes:
        ax.set_xlabel("episode (per env)")
        ax.set_ylabel("mean per-agent episode return")
        ax.legend(fontsize=8)
    fig.suptitle("MADDPG, cooperative navigation, 3 agents", fontsize=10)
    fig.tight_layout()
    report.atomic_save(path, lambda tmp: fig.savefig(tmp, dpi=120))
    plt.close(fig)
