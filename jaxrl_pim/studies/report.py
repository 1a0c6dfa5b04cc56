"""Host-side reporting of the studies: Markdown tables, headline numbers and plots.

Nothing here trains or evaluates; every function reads the ``results`` dicts returned by
:func:`~jaxrl_pim.studies.run_ptq`, :func:`~jaxrl_pim.studies.run_qat` and
:func:`~jaxrl_pim.studies.run_gap_ablation` (or read back from their JSON reports, where NaN
is stored as null).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any


def is_number(x: Any) -> bool:
    """True for a finite number (JSON reports store NaN as null)."""
    return x is not None and not (isinstance(x, float) and math.isnan(x))


def fmt(x: Any, spec: str) -> str:
    """``format(x, spec)``, or ``n/a`` for NaN / None."""
    return format(x, spec) if is_number(x) else "n/a"


def _pm(f: dict[str, Any]) -> str:
    return f"{fmt(f['mean_return'], '.1f')} +- {fmt(f['std_return'], '.1f')}"


def int8_min_return_ratio(results: dict[str, Any]) -> float:
    """Worst int8 / fp32 oriented return ratio over the PTQ tasks (NaN if none defined)."""
    ratios = [r["formats"]["int8"]["return_ratio"] for r in results.values()]
    ratios = [x for x in ratios if is_number(x)]
    return min(ratios) if ratios else math.nan


def min_qat_ratio(results: dict[str, Any], bits: int) -> float:
    """Worst QAT return ratio at ``bits`` over the QAT tasks (NaN if not run)."""
    vals = [r["bits"][str(bits)]["qat"]["return_ratio"] for r in results.values()
            if str(bits) in r["bits"]]
    vals = [v for v in vals if is_number(v)]
    return min(vals) if vals else math.nan


def study_summary(report: dict[str, Any]) -> dict[str, Any]:
    """Headline numbers of a study report whose ``results`` hold parts ``ptq`` / ``qat`` /
    ``gap`` (the ``jaxrl-pim ptq`` / ``qat`` JSON): the worst int8 ratio, the worst QAT ratio
    per bit width and the gap ablation's int8 ratios."""
    results = report["results"]
    summary: dict[str, Any] = {}
    if results.get("ptq"):
        summary["int8_min_return_ratio"] = int8_min_return_ratio(results["ptq"])
    if results.get("qat"):
        bits = sorted({int(b) for r in results["qat"].values() for b in r["bits"]},
                      reverse=True)
        summary["qat_min_return_ratio_by_bits"] = {
            str(b): min_qat_ratio(results["qat"], b) for b in bits}
    if results.get("gap"):
        summary["gap_ablation_int8_ratio"] = {
            name: {v: r[v]["formats"]["int8"]["return_ratio"] for v in r}
            for name, r in results["gap"].items()
        }
    return summary


def _markdown_table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A Markdown table: ``header`` cells, a ``|---|`` separator, one line per row of
    already-formatted cells (each row as long as ``header``)."""
    lines = ["| " + " | ".join(header) + " |", "|---" * len(header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def ptq_table(results: dict[str, Any]) -> str:
    """Markdown table in the style of the paper's Table 2 (fp32 / fp16 / int8 per task)."""
    header = ["task", "policy", "fp32 return", "fp16 return", "int8 return", "fp16 ratio",
              "int8 ratio", "KL fp16", "KL int8", "int8 action agreement", "int8 action MSE"]
    rows = []
    for name, r in results.items():
        f = r["formats"]
        rows.append([
            name, r["policy_kind"], _pm(f["fp32"]), _pm(f["fp16"]), _pm(f["int8"]),
            fmt(f["fp16"]["return_ratio"], ".3f"), fmt(f["int8"]["return_ratio"], ".3f"),
            fmt(f["fp16"]["kl_mean"], ".2e"), fmt(f["int8"]["kl_mean"], ".2e"),
            fmt(f["int8"]["action_agreement"], ".3f"), fmt(f["int8"]["action_mse"], ".2e"),
        ])
    return _markdown_table(header, rows)


def gap_table(results: dict[str, Any]) -> str:
    """Markdown table of the gap ablation's results (one row per task and variant)."""
    header = ["task", "target", "alpha", "mean action gap", "fp32 return", "int8 return",
              "int8 ratio", "int8 action agreement"]
    rows = []
    for name, variants in results.items():
        for variant, r in variants.items():
            f = r["formats"]
            rows.append([
                name, variant.replace("_", " "), f"{r['alpha']:g}",
                fmt(r["mean_action_gap"], ".3g"), _pm(f["fp32"]), _pm(f["int8"]),
                fmt(f["int8"]["return_ratio"], ".3f"), fmt(f["int8"]["action_agreement"], ".3f"),
            ])
    return _markdown_table(header, rows)


def bits_table(results: dict[str, Any]) -> str:
    """Markdown table: mean return (ratio) per task and bit width of the PTQ sweep."""
    names = list(results)
    labels = [k for k in next(iter(results.values()))["formats"] if k.startswith("bits=")]
    rows = []
    for label in labels:
        cells = [label[5:]]
        for n in names:
            f = results[n]["formats"][label]
            cells.append(f"{fmt(f['mean_return'], '.1f')} ({fmt(f['return_ratio'], '.2f')})")
        rows.append(cells)
    return _markdown_table(["bits", *names], rows)


def qat_table(results: dict[str, Any]) -> str:
    """Markdown table: fp32, PTQ and QAT returns (mean +- std over seeds) per task and bits."""
    header = ["task", "bits", "fp32 return", "PTQ return", "QAT return", "PTQ ratio",
              "QAT ratio"]
    rows = []
    for name, r in results.items():
        fp = r["fp32"]
        for b, e in r["bits"].items():
            p, q = e["ptq"], e["qat"]
            rows.append([name, b, _pm(fp), _pm(p), _pm(q), fmt(p["return_ratio"], ".3f"),
                         fmt(q["return_ratio"], ".3f")])
    return _markdown_table(header, rows)


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_bits(results: dict[str, Any], path: str) -> None:
    """Return-vs-bits (left) and KL-vs-bits (right) curves per task, saved as PNG at ``path``."""
    from jaxrl_pim.report import atomic_save

    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for name, r in results.items():
        f = r["formats"]
        labels = [k for k in f if k.startswith("bits=")]
        bits = [int(k[5:]) for k in labels]
        ratio = [f[k]["return_ratio"] for k in labels]
        kl = [max(f[k]["kl_mean"], 1e-12) for k in labels]
        axes[0].plot(bits, ratio, marker="o", label=name)
        axes[1].plot(bits, kl, marker="o", label=name)
    axes[0].axhline(1.0, color="k", lw=0.8)
    axes[0].axhline(0.95, color="k", lw=0.8, ls="--")
    axes[0].set(xlabel="bits (paper quantizer; 16 = fp16)", ylabel="return / fp32 return",
                title="PTQ: return vs bits")
    axes[1].set(xlabel="bits", ylabel="KL(fp32 || quantized) [nats]", yscale="log",
                title="PTQ: policy divergence vs bits")
    for ax in axes:
        ax.invert_xaxis()
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    atomic_save(path, lambda tmp: fig.savefig(tmp, dpi=110))
    plt.close(fig)


def plot_qat(results: dict[str, Any], path: str) -> None:
    """PTQ vs QAT return ratio against bits, one panel per task, saved as PNG at ``path``."""
    from jaxrl_pim.report import atomic_save

    plt = _pyplot()
    n = len(results)
    fig, axes = plt.subplots(1, n, figsize=(5 * n, 4), squeeze=False)
    for ax, (name, r) in zip(axes[0], results.items(), strict=True):
        bits = [int(b) for b in r["bits"]]
        ax.plot(bits, [e["ptq"]["return_ratio"] for e in r["bits"].values()], marker="o",
                label="PTQ")
        ax.plot(bits, [e["qat"]["return_ratio"] for e in r["bits"].values()], marker="s",
                label="QAT")
        ax.axhline(1.0, color="k", lw=0.8)
        ax.axhline(0.95, color="k", lw=0.8, ls="--")
        ax.set_xticks(bits)
        ax.invert_xaxis()
        ax.set(title=name, xlabel="bits (paper quantizer)", ylabel="return / fp32 return")
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    atomic_save(path, lambda tmp: fig.savefig(tmp, dpi=110))
    plt.close(fig)


__all__ = [
    "bits_table",
    "fmt",
    "gap_table",
    "int8_min_return_ratio",
    "is_number",
    "min_qat_ratio",
    "plot_bits",
    "plot_qat",
    "ptq_table",
    "qat_table",
    "study_summary",
]
