"""What ``benchmarks/tabular_scaling.py`` makes of its sections: the summary, tables and plots.

:func:`summarize` (the JAX-over-Numba ratio per variant with its minimum, median, target and
goal, the lane-step forms, the 2,000-lane and 2,000-agent times, the copy bandwidth),
:func:`render_markdown` (a table per section, :func:`markdown`) and :func:`plots` (strong
scaling's time breakdown, the roofline), all from the stored sections.
"""

from __future__ import annotations

import math
import re
import statistics
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import harness, pim_published
from jaxrl_pim import report

#: ``cpu_ratio_vs_best_numba_min``: the target and the goal (JAX updates/s over the best
#: Numba baseline's, worst variant).
CPU_RATIO_TARGET, CPU_RATIO_GOAL = 0.7, 1.0


def summarize(rep: dict[str, Any]) -> dict[str, Any]:
    """Headline numbers, computed from the stored sections (see the module docstring)."""
    sections = rep["results"]["sections"]
    out: dict[str, Any] = {
        "device": rep["results"]["device"],
        "devices_used": rep["results"]["devices_used"],
        "mode": rep["config"]["mode"],
        "cpu_ratio_vs_best_numba_min": None,
        "cpu_ratio_vs_best_numba_min_variant": None,
        "cpu_ratio_vs_best_numba_median": None,
        "cpu_ratio_target": CPU_RATIO_TARGET,
        "cpu_ratio_goal": CPU_RATIO_GOAL,
        "cpu_ratio_target_met": None,
        "cpu_ratio_by_variant": None,
        "numba_tables_identical_int32": None,
        "numba_shortest_run_s": None,
        "numba_tables_max_abs_diff_fp32": None,
        "frozenlake_2000_lanes_q_seq_fp32_s": None,
        "frozenlake_2000_lanes_q_seq_fp32_s_extrapolated": None,
        "multiagent_2000_agents_s": None,
        "multiagent_2000_agents_s_extrapolated": None,
        "copy_bandwidth_GB_per_s": None,
        "forms_updates_per_s": None,
        "forms_ratio_vs_best_numba": None,
        "forms_fastest": None,
        "forms_fastest_ratio_vs_library": None,
        "forms_fastest_ratio_vs_best_numba": None,
        "forms_ops_per_step": None,
        "forms_instructions_per_step": None,
    }
    rows = sections.get("numba", {}).get("rows", [])
    if rows:
        table = {r["variant"]: {"jax_updates_per_s": r["jax_updates_per_s"],
                                "best_numba": r["best_numba"],
                                "best_numba_updates_per_s": r["numba_updates_per_s"][
                                    r["best_numba"]],
                                "ratio": r["ratio_vs_best_numba"]} for r in rows}
        ratios = {k: v["ratio"] for k, v in table.items()}
        worst = min(ratios, key=ratios.get)
        out.update(cpu_ratio_vs_best_numba_min=ratios[worst],
                   cpu_ratio_vs_best_numba_min_variant=worst,
                   cpu_ratio_vs_best_numba_median=statistics.median(ratios.values()),
                   cpu_ratio_by_variant=table,
                   cpu_ratio_target_met=ratios[worst] >= CPU_RATIO_TARGET)
        ints = [r["tables_identical"] for r in rows if r["variant"].endswith("INT32")]
        floats = [r["max_abs_q_diff"] for r in rows if r["variant"].endswith("FP32")]
        out["numba_tables_identical_int32"] = all(ints) if ints else None
        out["numba_tables_max_abs_diff_fp32"] = max(floats) if floats else None
        out["numba_shortest_run_s"] = min(r["shortest_run_s"] for r in rows)
    for r in sections.get("strong", {}).get("rows", []):
        if r["env"] == "frozenlake" and r["lanes"] == 2000 and r["variant"] == "Q-SEQ-FP32":
            key = "frozenlake_2000_lanes_q_seq_fp32_s"
            out[key + ("_extrapolated" if r["extrapolated_from_episodes"] else "")] = (
                r["timing_2000_episodes_s"]["total"])
    for r in sections.get("multiagent", {}).get("rows", []):
        if r["agents"] == 2000:
            key = "multiagent_2000_agents_s"
            out[key + ("_extrapolated" if r["extrapolated_from_episodes"] else "")] = (
                r["timing_2000_episodes_s"]["total"])
    forms = [r for r in sections.get("forms", {}).get("rows", []) if r["kind"] == "jax"]
    if forms:
        fastest = max(forms, key=lambda r: r["updates_per_s"])
        out.update(
            forms_updates_per_s={r["form"]: r["updates_per_s"] for r in forms},
            forms_ratio_vs_best_numba={r["form"]: r["ratio_vs_best_numba"] for r in forms},
            forms_fastest=fastest["form"],
            forms_fastest_ratio_vs_library=fastest["ratio_vs_library"],
            forms_fastest_ratio_vs_best_numba=fastest["ratio_vs_best_numba"],
            forms_ops_per_step={r["form"]: r["ops_per_step"] for r in forms},
            forms_instructions_per_step={r["form"]: r["instructions_per_step"]
                                         for r in forms})
    roof = sections.get("roofline")
    if roof:
        out["copy_bandwidth_GB_per_s"] = roof["copy_bandwidth_B_per_s"] / 1e9
    return out



def plots(path: Path, sections: dict, device: str) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    files = []
    strong = sections.get("strong", {}).get("rows", [])
    if strong:
        groups = sorted({(r["env"], r["variant"]) for r in strong})
        cols = min(4, len(groups))
        nrows = math.ceil(len(groups) / cols)
        fig, axes = plt.subplots(nrows, cols, figsize=(4 * cols, 3 * nrows), squeeze=False)
        phases = ("transfer_in", "compute", "sync", "transfer_out")
        for ax, (env_name, variant) in zip(axes.flat, groups, strict=False):
            rs = [r for r in strong if r["env"] == env_name and r["variant"] == variant]
            x = np.arange(len(rs))
            bottom = np.zeros(len(rs))
            for ph in phases:
                vals = np.array([r["timing_2000_episodes_s"][ph] for r in rs])
                ax.bar(x, vals, bottom=bottom, label=ph)
                bottom += vals
            ax.set_xticks(x, [str(r["lanes"]) for r in rs], fontsize=7)
            ax.set_title(f"{env_name} {variant}", fontsize=8)
            ext = " (extrapolated)" if rs and rs[0]["extrapolated_from_episodes"] else ""
            ax.set_ylabel(f"s (2,000 episodes{ext})", fontsize=7)
        for ax in list(axes.flat)[len(groups):]:
            ax.axis("off")
        axes.flat[0].legend(fontsize=6)
        fig.suptitle(f"Strong scaling, time breakdown ({device})", fontsize=9)
        fig.tight_layout()
        out = path.with_name(path.stem + "_strong.png")
        report.atomic_save(out, lambda p: fig.savefig(p, dpi=110))
        plt.close(fig)
        files.append(out.name)
    roof = sections.get("roofline")
    if roof and roof["rows"]:
        fig, ax = plt.subplots(figsize=(7, 3.5))
        names = [r["variant"] for r in roof["rows"]]
        ax.bar(names, [r["streamed_B_per_s"] / 1e9 for r in roof["rows"]],
               label="streamed (dataset rows)")
        ax.bar(names, [r["table_B_per_s"] / 1e9 for r in roof["rows"]],
               bottom=[r["streamed_B_per_s"] / 1e9 for r in roof["rows"]], alpha=0.5,
               label="table accesses (cache)")
        ax.axhline(roof["copy_bandwidth_B_per_s"] / 1e9, color="r", label="measured copy BW")
        ax.set_ylabel("GB/s")
        ax.tick_params(axis="x", rotation=60, labelsize=7)
        ax.legend(fontsize=7)
        ax.set_title("Memory traffic of the lanes trainer (FrozenLake)", fontsize=9)
        fig.tight_layout()
        out = path.with_name(path.stem + "_roofline.png")
        report.atomic_save(out, lambda p: fig.savefig(p, dpi=110))
        plt.close(fig)
        files.append(out.name)
    return files


def _ext(r: dict) -> str:
    e = r.get("extrapolated_from_episodes")
    return f" (extrapolated from {e} ep.)" if e else ""


def _ops(row: dict[str, Any]) -> str:
    return f"{row['ops_per_step']} ({row['instructions_per_step']})"


def _without_operands(hlo_line: str) -> str:
    """``%x = f32[8] fusion(%a, %b), kind=kLoop`` -> ``%x = f32[8] fusion(...), kind=kLoop``."""
    m = re.match(r"^(%\S+ = .*? [\w\-]+)\(", hlo_line)
    if not m:
        return hlo_line
    depth, i = 0, m.end() - 1
    for i in range(m.end() - 1, len(hlo_line)):
        depth += {"(": 1, ")": -1}.get(hlo_line[i], 0)
        if depth == 0:
            break
    return f"{m.group(1)}(...){hlo_line[i + 1:]}"


def render_markdown(report_: dict[str, Any]) -> str:
    """The ``.md`` tables of a stored report (what ``make_docs.py --check`` regenerates)."""
    return markdown(report_["results"]["sections"], summarize(report_))


def markdown(sections: dict, summary: dict) -> str:
    lines = [f"Device: {summary['device']} ({summary['devices_used']} device(s) used by every "
             f"JAX run); mode {summary['mode']}.", ""]
    if "numba" in sections:
        s = sections["numba"]
        lines += [f"### JAX lanes vs Numba lanes baselines (FrozenLake {s['rows_per_dataset']:,}"
                  f" rows, {s['setup']}; PIM LCG on both sides; best of {s['rounds']} "
                  "alternating rounds)", "",
                  "| variant | episodes | shortest run s | JAX updates/s | best Numba | "
                  "Numba updates/s | ratio | max abs dQ |",
                  "|---|---:|---:|---:|---|---:|---:|---:|"]
        for r in s["rows"]:
            b = r["best_numba"]
            lines.append(f"| {r['variant']} | {r['episodes']} | {r['shortest_run_s']:.2f} | "
                         f"{r['jax_updates_per_s']:.3e} | "
                         f"{b} | {r['numba_updates_per_s'][b]:.3e} | "
                         f"{r['ratio_vs_best_numba']:.2f} | {r['max_abs_q_diff']:.1e} |")
        if summary["cpu_ratio_vs_best_numba_min"] is not None:
            lines += ["", "Ratio over the variants: min "
                      f"{summary['cpu_ratio_vs_best_numba_min']:.2f}"
                      f" ({summary['cpu_ratio_vs_best_numba_min_variant']}), median "
                      f"{summary['cpu_ratio_vs_best_numba_median']:.2f} (target >= "
                      f"{summary['cpu_ratio_target']}, goal {summary['cpu_ratio_goal']})."]
        lines.append("")
    if "forms" in sections:
        s = sections["forms"]
        lines += [f"### Forms of the lane step ({s['variant']}, FrozenLake "
                  f"{s['rows_per_dataset']:,} rows, {s['lanes']} lanes on {s['devices']} XLA "
                  f"device(s) / {s['numba_threads']} Numba thread(s), {s['episodes']} episodes "
                  f"without sync on every side, best of {s['rounds']} alternating rounds)", "",
                  "| form | what | XLA ops (instructions) per scan step | updates/s | vs library "
                  "| vs best Numba | max abs dQ |", "|---|---|---:|---:|---:|---:|---:|"]
        for r in s["rows"]:
            jax_row = r["kind"] == "jax"
            diff = r["max_abs_q_diff_vs_library"] if jax_row else r[
                "max_abs_q_diff_vs_library_lane_mean"]
            lines.append(
                f"| {r['form']} | {r.get('description', 'Numba baseline')} | "
                f"{_ops(r) if jax_row else '-'} | {r['updates_per_s']:.3e} | "
                f"{r['ratio_vs_library']:.2f} | {r['ratio_vs_best_numba']:.2f} | "
                f"{diff:.1e}{'' if jax_row else ' (vs the lanes mean)'} |")
        lib = next(r for r in s["rows"] if r["form"] == "library")
        lines += ["", "Instructions per scan step by opcode (the fused computations expanded):",
                  "", "| form | opcodes |", "|---|---|"]
        lines += [f"| {r['form']} | " + ", ".join(f"{k} {v}" for k, v in r["loop_opcodes"].items())
                  + " |" for r in s["rows"] if r["kind"] == "jax"]
        lines += ["", "What XLA runs for one scan step of `library` (the innermost loop body "
                  "of the compiled program, parameters, tuples, constants and bitcasts left "
                  "out; operands elided):", "", "```text",
                  *(_without_operands(line) for line in lib["loop_body"]), "```"]
        lines.append("")
    if "strong" in sections:
        s = sections["strong"]
        lines += [f"### Strong scaling ({s['devices']} device(s), {s['episodes']} episodes "
                  "measured; time for 2,000 episodes, s)", ""]

        def strong_row(r: dict[str, Any]) -> list[Any]:
            t = r["timing_2000_episodes_s"]
            return [r["env"], r["variant"], r["lanes"], f"{t['transfer_in']:.3f}",
                    f"{t['compute']:.2f}", f"{t['sync']:.3f}", f"{t['transfer_out']:.4f}",
                    f"{t['total']:.2f}{_ext(r)}", f"{r['updates_per_s']:.3e}"]

        lines += harness.md_table(
            ["env", "variant", "lanes", "transfer_in", "compute", "sync", "transfer_out",
             "total", "updates/s"], map(strong_row, s["rows"]), ["", ""] + [":"] * 7)
        lines.append("")
    if "weak" in sections:
        s = sections["weak"]
        lines += [f"### Cost vs dataset size (Q-SEQ-FP32, {s['lanes']} lanes, {s['devices']} "
                  f"device(s), {s['episodes']} episodes)", ""]
        lines += harness.md_table(
            ["rows", "updates/s"],
            ([f"{r['rows']:,}", f"{r['updates_per_s']:.3e}"] for r in s["rows"]), [":", ":"])
        lines.append("")
    if "multiagent" in sections:
        s = sections["multiagent"]
        lines += [f"### Independent multi-agent (Q-SEQ-INT32, {s['devices']} device(s); time "
                  "for 2,000 episodes)", ""]
        ma = pim_published.MULTI_AGENT

        paper = {1000: (ma["xeon_seconds_1000_agents"],
                        ma["xeon_seconds_1000_agents"] / ma["pim_speedup_1000_agents"]),
                 2000: (ma["xeon_seconds_2000_agents"],
                        ma["xeon_seconds_2000_agents"] / ma["pim_speedup_2000_agents"])}

        def agents_row(r: dict[str, Any]) -> list[Any]:
            x, p = paper.get(r["agents"], ("-", "-"))
            return [r["agents"], f"{r['rows_per_agent']:,}", f"{r['updates_per_s']:.3e}",
                    f"{r['timing_2000_episodes_s']['total']:.2f}{_ext(r)}", x,
                    p if isinstance(p, str) else f"{p:.1f}"]

        lines += harness.md_table(
            ["agents", "rows/agent", "updates/s", "time (s)", "paper Xeon (s)", "paper PIM (s)"],
            map(agents_row, s["rows"]), [":"] * 6)
        lines.append("")
    if "roofline" in sections:
        roof = sections["roofline"]
        lines += [f"### Memory traffic (copy bandwidth {roof['copy_bandwidth_B_per_s'] / 1e9:.1f}"
                  f" GB/s measured in this run; bound: {roof['bound']})", ""]
        lines += harness.md_table(
            ["variant", "streamed B/update", "table B/update", "streamed GB/s",
             "fraction of copy BW"],
            ([r["variant"], r["streamed_bytes_per_update"], r["table_bytes_per_update"],
              f"{r['streamed_B_per_s'] / 1e9:.2f}", f"{r['fraction_of_copy_bw']:.3f}"]
             for r in roof["rows"]),
            [""] + [":"] * 4)
    return "\n".join(lines) + "\n"
