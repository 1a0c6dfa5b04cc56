"""The tables and the plot of ``benchmarks/marl_sampling.py``, from a stored report.

:func:`render_markdown` (what ``make_docs.py --check`` regenerates): the opponents' table on
all cores and on one thread (:func:`opponents_markdown`), the faithful and all-mode round
times (:func:`_render_markdown_v2`, the whole table of a schema <= 2 file), and the buffer
capacities against the memory (:func:`memory_markdown`); :func:`plot` draws the round times.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from benchmarks import harness
from benchmarks.sampling.memory import GIB
from benchmarks.sampling.rounds import MODES, TRAINER_MODE
from benchmarks.sampling.summary import opponent_seconds, ratio, summarize, summarize_v2
from jaxrl_pim import report
from jaxrl_pim.replay import SAMPLERS


def opponents_markdown(rows: list[dict[str, Any]], copy_bw: float, title: str) -> list[str]:
    """One table: round ms of the trainer's path and of each opponent, speed-ups, GB/s."""
    lines = [title, "",
             "| N | capacity | original ms | NumPy fields / rows ms | flashbax uniform ms | JAX "
             "uniform ms | vs best NumPy | vs flashbax | JAX rows ms | flashbax prioritised "
             "ms | JAX prioritised ms | vs flashbax prio | JAX GB/s (of copy BW) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        t = opponent_seconds(r)
        traffic = r["round_bytes"]["min_traffic"]
        x = (lambda a, b: "-" if ratio(a, b) is None else f"{a / b:.2f}x")
        ms = (lambda v: "-" if v is None else f"{v * 1e3:.2f}")
        lib = t["library_uniform"]
        lines.append(
            f"| {r['num_agents']} | {r['capacity']:,} | {ms(t['numpy_original'])} | "
            f"{ms(t['numpy_vectorized_fields'])} / {ms(t['numpy_vectorized_packed'])} | "
            f"{ms(t['flashbax_uniform'])} | {ms(lib)} | "
            f"{x(t['numpy_vectorized'], lib)} | {x(t['flashbax_uniform'], lib)} | "
            f"{ms(t['library_packed_rows'])} | "
            f"{ms(t['flashbax_prioritized'])} | {ms(t['library_prioritized'])} | "
            f"{x(t['flashbax_prioritized'], t['library_prioritized'])} | "
            f"{traffic / lib / 1e9:.2f} ({traffic / lib / copy_bw:.2f}) |")
    return lines


def render_markdown(rep: dict[str, Any]) -> str:
    """Markdown tables of a stored report (the opponents, round times, speed-ups, bytes,
    memory); what ``make_docs.py --check`` regenerates (schema <= 2 files:
    :func:`_render_markdown_v2`)."""
    if rep["config"].get("summary_schema", 1) < 3:
        return _render_markdown_v2(rep)
    res = rep["results"]
    mode = res["per_agents"][0].get("trainer_mode", TRAINER_MODE)
    head = (f"Opponents, faithful semantics on every side (N independent index sets per round, "
            f"batch {rep['config']['batch']:,}, same capacity, same data): the original "
            "pure-Python sampler; vectorised NumPy (Generator draws, `np.take` into "
            "preallocated arrays) over the field arrays and over packed rows (every field of "
            "a time step in one `[C, R]` row), 'vs best NumPy' against the faster of the two; "
            "flashbax 0.1.3's item buffer (one buffer of joint "
            "transitions, N index sets per round in one jit); flashbax's prioritised item "
            f"buffer against the library's `prioritized` (sample, importance weights and "
            f"priority update on both sides). JAX = the trainer's default path (`{mode}`); "
            "JAX rows = the library's `packed` layout's uniform faithful round (one whole-row "
            "gather, `replay.gather_rows`; not the trainer's path, whose default layout keeps "
            "one array per field). "
            "GB/s = the least traffic of a round (2 x batch bytes) over its time.")
    lines = opponents_markdown(res["per_agents"], res["copy_bandwidth"]["best_B_per_s"],
                               "All cores. " + head)
    one = res.get("one_thread")
    if one:
        lines += ["", *opponents_markdown(
            one["per_agents"], one["copy_bandwidth"]["best_B_per_s"],
            f"One thread on both sides ({one['how']}); copy bandwidth on one thread "
            f"{one['copy_bandwidth']['best_B_per_s'] / 1e9:.1f} GB/s.")]
    summ = summarize(rep)
    if summ["fast_mode_bytes_per_round_24"] is not None:
        delta, seeds = summ["fast_mode_return_delta"], summ["fast_mode_return_seeds"]
        ret = ("its effect on return is not available" if delta is None else
               f"its measured return change is {delta * 100:+.1f} % ({seeds} seeds, "
               f"{summ['fast_mode_return_source']})")
        lines += ["", "At the copy floor only fewer bytes help: the fast mode moves "
                  f"{summ['fast_mode_bytes_per_round_24'] / 1e6:.0f} MB per round at N = 24 "
                  f"({summ['fast_mode_bytes_saved_fraction_24'] * 100:.0f} % fewer than a "
                  f"faithful round); {ret}. The neighbour sampler moves the same bytes in "
                  "contiguous runs (its time change is "
                  + ("not measured" if summ["neighbor_vs_uniform_time_change_24_per_agent"]
                     is None else
                     f"{summ['neighbor_vs_uniform_time_change_24_per_agent'] * 100:+.0f} %")
                  + " at N = 24, per-agent layout)."]
    return "\n".join(lines) + "\n\n" + _render_markdown_v2(rep, summ)




#: milliseconds in the tables: the layer's number format of seconds x 1e3, "-" if not measured
_ms = functools.partial(harness.fmt, spec=".2f", missing="-", scale=1e3)


def _render_markdown_v2(rep: dict[str, Any], summ: dict[str, Any] | None = None) -> str:
    """Markdown tables of a stored report of summary schema <= 2 (before the opponents); the
    summary list shows ``summ`` (default: :func:`summarize_v2`)."""
    cfg, res = rep["config"], rep["results"]
    summ = summ if summ is not None else summarize_v2(rep)
    copy = res["copy_bandwidth"]
    load = rep["system"].get("load_average_start")
    lines = [
        f"# Multi-agent replay sampling (one update round, batch {cfg['batch']:,})", "",
        f"Device: {summ['device']}; mode {cfg['mode']}; 1/5/15-min load average at start "
        f"{load} (a load above the core count means other jobs shared the machine). Copy "
        f"bandwidth measured in this run: {copy['best_B_per_s'] / 1e9:.1f} GB/s (read + "
        f"write; NumPy copyto {copy['numpy_copyto_B_per_s'] / 1e9:.1f}, XLA "
        f"{copy['xla_copy_B_per_s'] / 1e9:.1f}).", "",
        "Faithful vs faithful (every agent its own uniform indices; same capacity on both "
        "sides; `numpy` = the original list-of-tuples sampler, `JAX` = interleaved layout, "
        "time-major batch written into the previous round's donated memory). Traffic = the "
        "least bytes a round moves (read the rows, write the batch: 2 x batch bytes).", "",
        "| N | capacity | batch MB | numpy ms | JAX ms | speed-up | numpy GB/s | JAX GB/s | "
        "JAX / copy BW |", "|---|---|---|---|---|---|---|---|---|",
    ]
    bw = copy["best_B_per_s"]
    for r in res["per_agents"]:
        rb, t = r["round_bytes"], r["seconds"]["uniform"]["interleaved_faithful"]
        lines.append(
            f"| {r['num_agents']} | {r['capacity']:,} | {rb['output'] / 1e6:.1f} | "
            f"{r['numpy_seconds'] * 1e3:.1f} | {t * 1e3:.2f} | {r['numpy_seconds'] / t:.1f}x | "
            f"{rb['min_traffic'] / r['numpy_seconds'] / 1e9:.2f} | "
            f"{rb['min_traffic'] / t / 1e9:.2f} | {rb['min_traffic'] / t / bw:.2f} |")
    lines += [
        "", "All JAX modes (best-of wall ms per round; `-` = not timed). `interleaved_faithful"
        "_agent_major` = the same faithful gather in agent-major order "
        + ("into a fresh output; " if cfg.get("summary_schema", 1) < 3
           else "(the trainer's), donated; "
           if res["per_agents"][0].get("trainer_mode") == "interleaved_faithful_agent_major"
           else "(the learner's order before its batches became time-major), donated; ") +
        "`per_agent` = per-agent layout, faithful (N^2 gathers); `interleaved` = the fast "
        "mode (one index set shared by all agents, 1 gather). Speed-ups are over the NumPy "
        "faithful uniform round.", "",
        "| N | sampler | numpy ms | " + " | ".join(f"{m} ms" for m in MODES)
        + " | faithful speed-up | fast-mode speed-up |",
        "|---|---|---|" + "---|" * len(MODES) + "---|---|",
    ]
    for r in res["per_agents"]:
        for s in SAMPLERS:
            t = r["seconds"][s]
            if all(v is None for v in t.values()):
                continue
            fa, fm = t["interleaved_faithful"], t["interleaved"]
            np_s = r["numpy_seconds"]
            fa_x = "-" if fa is None else f"{np_s / fa:.1f}x"
            fm_x = "-" if fm is None else f"{np_s / fm:.0f}x"
            lines.append(f"| {r['num_agents']} | {s} | {np_s * 1e3:.1f} | "
                         + " | ".join(_ms(t[m]) for m in MODES) + f" | {fa_x} | {fm_x} |")
    lines += ["", "Summary:", ""]
    for k, v in summ.items():
        if isinstance(v, float):
            lines.append(f"* `{k}`: {v:.3g}")
        elif not isinstance(v, dict | list):
            lines.append(f"* `{k}`: {v}")
    lines += ["", *memory_markdown(rep)]
    return "\n".join(lines) + "\n"


def memory_markdown(rep: dict[str, Any]) -> list[str]:
    """Lines explaining the buffer capacities: this run's rule and the memory model."""
    cfg = rep["config"]
    mem = rep["results"].get("memory_model")
    dm = cfg["device_memory"]
    lines = [
        f"Capacity of this run (both sides): device memory {dm['bytes'] / GIB:.1f} GiB "
        f"({dm['source']}); " + ", ".join(
            f"N = {r['num_agents']}: {r['capacity']:,} rows ({r['capacity_rule']}; "
            f"{r['capacity_limited_by']}; NumPy objects {r['python_bytes_per_agent_row']:.0f} "
            "B per agent and row)" for r in rep["results"]["per_agents"]) + ".", ""]
    if not mem:
        return lines
    names = list(next(iter(mem.values()))["targets"])
    lines += [
        "Buffer size vs memory (float32; `4 N (2 O + 7)` B per row in every layout). Largest "
        "capacity in rows: memory / row bytes (buffer alone), and with this benchmark's "
        "working set, priority trees and (CPU) the NumPy baseline's objects.", "",
        "| N | obs | bytes/row | 1e6 rows GB | " + " | ".join(
            f"{n} (buffer only / benchmark)" for n in names) + " |",
        "|---|---|---|---|" + "---|" * len(names),
    ]
    for n, m in mem.items():
        cells = []
        for name in names:
            t = m["targets"][name]
            ok = " (1e6 fits)" if t["fits_requested"] else ""
            cells.append(f"{t['rows_buffer_only']:,} / {t['rows_benchmark']:,}{ok}")
        lines.append(f"| {n} | {m['obs_dim']} | {m['row_bytes']['total']:,} | "
                     f"{m['requested_bytes'] / 1e9:.1f} | " + " | ".join(cells) + " |")
    return lines


def plot(rep: dict[str, Any], path: Path) -> None:
    """Round times against N: NumPy and every JAX mode (uniform), and each sampler in the fast
    mode and the per-agent layout; saved to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = rep["results"]["per_agents"]
    ns = [r["num_agents"] for r in rows]
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.4))
    ax = axes[0]
    ax.plot(ns, [r["numpy_seconds"] * 1e3 for r in rows], "k-o", label="numpy (original)")
    for m, style in zip(MODES, ("-s", "-^", "-v", "-d"), strict=True):
        ax.plot(ns, [r["seconds"]["uniform"][m] * 1e3 for r in rows], style, label=f"JAX {m}")
    ax.set(xscale="log", yscale="log", xlabel="agents N", ylabel="round time (ms)",
           title="uniform sampling: NumPy vs JAX modes")
    ax.set_xticks(ns, [str(n) for n in ns])
    ax.minorticks_off()
    ax.legend(fontsize=7)
    ax = axes[1]
    for s in SAMPLERS:
        if any(r["seconds"][s]["interleaved"] is None for r in rows):
            continue
        ax.plot(ns, [r["seconds"][s]["interleaved"] * 1e3 for r in rows], "-o",
                label=f"{s} (fast mode)")
        ax.plot(ns, [r["seconds"][s]["per_agent"] * 1e3 for r in rows], "--x",
                label=f"{s} (per_agent)")
    ax.set(xscale="log", yscale="log", xlabel="agents N", ylabel="round time (ms)",
           title="samplers")
    ax.set_xticks(ns, [str(n) for n in ns])
    ax.minorticks_off()
    ax.legend(fontsize=7, ncol=1, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.suptitle(f"MADDPG replay sampling, batch {rep['config']['batch']} -- "
                 f"{rep['summary']['device']}", fontsize=10)
    fig.tight_layout()
    report.atomic_save(path, lambda tmp: fig.savefig(tmp, dpi=110))
    plt.close(fig)
