"""Speed of the tabular lanes trainer: Numba baselines side by side, scaling, multi-agent,
memory traffic. Writes ``benchmarks/results/tabular_scaling[_quick].json`` (design schema,
with a ``summary``), a Markdown table and PNG plots.

    python benchmarks/tabular_scaling.py --quick     # a few minutes on a 2-core CPU
    python benchmarks/tabular_scaling.py             # CPU: reduced episodes, extrapolated
    python benchmarks/tabular_scaling.py             # GPU: the full 2,000-episode workloads

On CPU every JAX run spreads its lanes over all host CPU devices through the mesh (the
script sets ``--xla_force_host_platform_device_count`` to the core count before jax loads),
and Numba runs on all cores, so both use the same cores. Throughput (updates/s) does not
depend on the episode count, so CPU runs use few episodes and times for 2,000 episodes are
extrapolated (``compute`` and ``sync`` scale with episodes, transfers do not); each record
says whether it was measured in full or extrapolated.
"""

from __future__ import annotations

import os
import sys

if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_"
                               f"device_count={os.cpu_count() or 1}").strip()

import argparse  # noqa: E402
import itertools  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from jaxrl_pim import data as data_lib  # noqa: E402
from jaxrl_pim import envs  # noqa: E402
from jaxrl_pim.report import device_label, make_report, write_json  # noqa: E402
from jaxrl_pim.tabular import TabularConfig  # noqa: E402
from jaxrl_pim.tabular.lanes import index_dtype  # noqa: E402
from jaxrl_pim.tabular.runner import describe, run  # noqa: E402
from jaxrl_pim.timing import time_call  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
VARIANTS = list(itertools.product(("q", "sarsa"), ("seq", "ran", "str"), ("fp32", "int32")))
FULL_EPISODES = 2000
ENV_ROWS = {"frozenlake": 1_000_000, "taxi": 5_000_000}


def on_gpu() -> bool:
    return jax.default_backend() in ("gpu", "cuda", "rocm", "tpu")


def dataset(env_name: str, rows: int, cache: dict) -> tuple:
    if (env_name, rows) not in cache:
        env, params = envs.make(env_name)
        model = envs.tabular_model(env)
        cache[(env_name, rows)] = (data_lib.collect(env, params, jax.random.key(0), rows), model)
    return cache[(env_name, rows)]


def jax_run(model, transitions, algo, sampling, dtype, lanes, episodes, sync, **kw) -> dict:
    cfg = TabularConfig(model.num_states, model.num_actions, algo=algo, sampling=sampling,
                        dtype=dtype, num_cores=lanes, sync_period=sync, num_episodes=episodes,
                        **kw)
    res = run(cfg, transitions, jax.random.key(1))  # all devices that divide the lanes
    t = res.timing_s
    factor = FULL_EPISODES / episodes
    full = {
        "transfer_in": t["transfer_in"], "compute": t["compute"] * factor,
        "sync": t["sync"] * factor, "transfer_out": t["transfer_out"],
    }
    full["total"] = sum(full.values())
    return {
        **describe(cfg), "lanes": lanes, "episodes_measured": episodes, "devices": res.num_devices,
        "kernel": cfg.resolved_kernel(), "updates_per_s": res.updates_per_s,
        "timing_s": t, "timing_2000_episodes_s": full,
        "extrapolated": episodes != FULL_EPISODES,
    }


# ----------------------------------------------------------------------------- sections

def section_numba(args, cache) -> dict:
    """JAX lanes vs the Numba baselines on FrozenLake 1M, 2,000 lanes, every variant."""
    import baselines_numba as nb

    transitions, model = dataset("frozenlake", ENV_ROWS["frozenlake"] // args.scale, cache)
    episodes = args.episodes
    nb.warm_up()
    rows = []
    variants = VARIANTS if not args.quick else [v for v in VARIANTS if v[1] != "str"]
    for algo, sampling, dtype in variants:
        rec = jax_run(model, transitions, algo, sampling, dtype, 2000, episodes,
                      min(50, episodes))
        cfg = nb.BaselineConfig(
            num_states=16, num_actions=4, algorithm="q_learning" if algo == "q" else "sarsa",
            sampling=sampling, fmt=dtype, num_episodes=episodes, sync_period=min(50, episodes))
        updates = (transitions.num_rows // 2000) * 2000 * episodes
        numba = {}
        for name in ("lanes_numba", "cpu_v2", "cpu_v1", "sequential"):
            _, secs = nb.run_baseline(name, transitions, cfg, num_lanes=2000)
            n_upd = transitions.num_rows * episodes if name != "lanes_numba" else updates
            numba[name] = n_upd / secs
        best = max(numba, key=numba.get)
        rows.append({**rec, "numba_updates_per_s": numba, "best_numba": best,
                     "ratio_vs_best_numba": rec["updates_per_s"] / numba[best]})
        print(f"[numba] {rec['variant']:16s} jax {rec['updates_per_s']:.3e}/s  best numba "
              f"({best}) {numba[best]:.3e}/s  ratio {rows[-1]['ratio_vs_best_numba']:.2f}",
              flush=True)
    return {"rows": rows, "episodes": episodes, "threads": os.cpu_count()}


def section_kernels(args, cache) -> dict:
    """The fused Pallas lane kernel against the ``lax.scan`` path, every variant, same inputs.

    FrozenLake 1M, 2,000 lanes. Each variant runs with ``kernel="scan"`` and ``kernel="pallas"``
    on the same dataset and key; the record gives both throughputs and the largest absolute
    difference between the two final Q-tables (int32 variants must agree exactly). A variant
    whose Pallas lowering fails on this backend is recorded with its error, not skipped.
    """
    transitions, model = dataset("frozenlake", ENV_ROWS["frozenlake"] // args.scale, cache)
    episodes = args.kernel_episodes
    rows = []
    for algo, sampling, dtype in selected_variants(args):
        rec: dict = {"variant": f"{algo.upper()}-{sampling.upper()}-{dtype.upper()}",
                     "episodes_measured": episodes}
        tables = {}
        for kernel in ("scan", "pallas"):
            cfg = TabularConfig(model.num_states, model.num_actions, algo=algo,
                                sampling=sampling, dtype=dtype, num_cores=2000,
                                sync_period=min(50, episodes), num_episodes=episodes,
                                kernel=kernel)
            try:
                res = run(cfg, transitions, jax.random.key(1))
            except Exception as err:  # a lowering this backend lacks: record it, go on
                rec[f"{kernel}_error"] = f"{type(err).__name__}: {str(err)[:300]}"
                continue
            tables[kernel] = res.q_table
            rec[f"{kernel}_updates_per_s"] = res.updates_per_s
            rec[f"{kernel}_timing_s"] = res.timing_s
        if len(tables) == 2:
            rec["max_abs_diff"] = float(np.max(np.abs(tables["scan"] - tables["pallas"])))
            rec["pallas_over_scan"] = rec["pallas_updates_per_s"] / rec["scan_updates_per_s"]
        rows.append(rec)
        print(f"[kernels] {rec['variant']:16s} scan {rec.get('scan_updates_per_s', 0):.3e}/s "
              f"pallas {rec.get('pallas_updates_per_s', 0):.3e}/s "
              f"max|dQ| {rec.get('max_abs_diff', float('nan')):.2e} "
              f"{rec.get('pallas_error', '')}", flush=True)
    return {"rows": rows, "episodes": episodes, "backend": jax.default_backend()}


def selected_variants(args) -> list[tuple[str, str, str]]:
    """``VARIANTS`` filtered by ``--variants`` (names like ``q-seq-fp32``)."""
    if not args.variants:
        return VARIANTS
    wanted = {v.lower() for v in args.variants}
    unknown = wanted - {"-".join(v) for v in VARIANTS}
    if unknown:
        raise SystemExit(f"unknown variants {sorted(unknown)}; choose from "
                         f"{['-'.join(v) for v in VARIANTS]}")
    return [v for v in VARIANTS if "-".join(v) in wanted]


def section_strong(args, cache) -> dict:
    """Strong scaling over lanes on FrozenLake 1M and Taxi 5M, sync period 50."""
    lanes = [125, 250, 500, 1000, 2000]
    if on_gpu():
        lanes += [4096, 8192, 16384, 32768, 65536]
    else:  # a 2-core CPU cannot afford 120 compilations in one sitting
        lanes = [125, 500, 2000]
    if args.lanes:
        lanes = args.lanes
    variants = selected_variants(args)
    envs_ = tuple(args.envs)
    if args.quick:
        lanes, variants, envs_ = [125, 500, 2000], [("q", "seq", "fp32"), ("q", "str", "int32")], \
            ("frozenlake",)
    rows = []
    # throughput does not depend on the episode count: on CPU measure fewer episodes per run
    episodes = args.episodes if on_gpu() else max(2, args.episodes // 5)
    for env_name in envs_:
        transitions, model = dataset(env_name, ENV_ROWS[env_name] // args.scale, cache)
        for (algo, sampling, dtype), n in itertools.product(variants, lanes):
            rec = jax_run(model, transitions, algo, sampling, dtype, n, episodes,
                          min(50, episodes))
            rows.append({"env": env_name, **rec})
            print(f"[strong] {env_name:10s} {rec['variant']:16s} lanes {n:6d} "
                  f"{rec['updates_per_s']:.3e}/s  2000-episode total "
                  f"{rec['timing_2000_episodes_s']['total']:.2f} s", flush=True)
    return {"rows": rows, "lanes": lanes}


def section_weak(args, cache) -> dict:
    """Time per update vs dataset size (Q-SEQ-FP32, 2,000 lanes)."""
    sizes = [1, 4, 16, 64] if on_gpu() else ([1, 2] if args.quick else [1, 4, 16])
    sizes = args.sizes or sizes
    rows = []
    for millions in sizes:
        transitions, model = dataset("frozenlake", millions * 1_000_000 // args.scale, {})
        rec = jax_run(model, transitions, "q", "seq", "fp32", 2000, max(2, args.episodes // 4),
                      50)
        rows.append({"rows": transitions.num_rows, **rec})
        print(f"[weak] {transitions.num_rows:>10,d} rows  {rec['updates_per_s']:.3e}/s", flush=True)
    return {"rows": rows}


def section_multiagent(args, cache) -> dict:
    """Independent agents x 10,000 transitions x 2,000 episodes (paper: 1,000 and 2,000)."""
    env, params = envs.make("frozenlake")
    rows = []
    agents = [1000, 2000] if not args.quick else [1000]
    episodes = FULL_EPISODES if on_gpu() else max(2, args.episodes // 2)
    for k in agents:
        per_agent = data_lib.collect_per_agent(env, params, jax.random.key(3), k, 10_000)
        rec = jax_run(envs.tabular_model(env), per_agent, "q", "seq", "int32", k, episodes,
                      50, independent=True)
        rows.append({"agents": k, **rec})
        print(f"[multiagent] {k} agents  {rec['updates_per_s']:.3e}/s  2000-episode total "
              f"{rec['timing_2000_episodes_s']['total']:.2f} s", flush=True)
    return {"rows": rows}


def bytes_per_update(num_states: int, num_actions: int, sampling: str, algo: str
                     ) -> tuple[int, int]:
    """Bytes the scan path touches per update: ``(streamed, table)``.

    Streamed bytes (the row ``sa``, ``s'``, reward and flag, plus random draws) come from the
    dataset in main memory once per update; table bytes (``Q[s, a]`` read and write, the
    ``A``-entry bootstrap row) hit the lanes' tables, which stay cache-resident while they fit
    (2,000 FrozenLake tables: 512 KB).
    """
    sa = np.dtype(index_dtype(num_states * num_actions)).itemsize
    s2 = np.dtype(index_dtype(num_states)).itemsize
    streamed = sa + s2 + 4 + 1 + (4 if sampling == "ran" else 0) + (4 if algo == "sarsa" else 0)
    table = 4 + 4 * num_actions + 4
    return streamed, table


def section_roofline(args, numba_rows) -> dict:
    """Streamed bandwidth of each JAX run against the measured copy bandwidth."""
    x = jnp.ones((64 * 1024 * 1024,), jnp.float32)
    copy = jax.jit(lambda v: v * 1.0001)
    secs = time_call(lambda: copy(x), repeats=10)
    copy_bw = 2 * x.nbytes / secs
    rows = []
    for r in numba_rows:
        algo, sampling = r["variant"].split("-")[0].lower(), r["variant"].split("-")[1].lower()
        streamed, table = bytes_per_update(16, 4, sampling, "q" if algo == "q" else "sarsa")
        bw = streamed * r["updates_per_s"]
        rows.append({"variant": r["variant"], "streamed_bytes_per_update": streamed,
                     "table_bytes_per_update": table, "streamed_B_per_s": bw,
                     "table_B_per_s": table * r["updates_per_s"],
                     "fraction_of_copy_bw": bw / copy_bw})
    worst = max((r["fraction_of_copy_bw"] for r in rows), default=0.0)
    bound = ("memory bandwidth (streamed data)" if worst > 0.5 else
             "per-update latency of the gather/scatter loop: streamed traffic is a small "
             "fraction of the copy bandwidth and the tables are cache-resident")
    return {"copy_bandwidth_B_per_s": copy_bw, "rows": rows, "bound": bound}


# ----------------------------------------------------------------------------- output

def plots(out: Path, sections: dict) -> list[str]:
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
            ax.set_ylabel("s (2,000 episodes)", fontsize=7)
        for ax in list(axes.flat)[len(groups):]:
            ax.axis("off")
        axes.flat[0].legend(fontsize=6)
        fig.suptitle(f"Strong scaling, time breakdown ({device_label()})", fontsize=9)
        fig.tight_layout()
        path = out.with_name(out.stem + "_strong.png")
        fig.savefig(path, dpi=110)
        plt.close(fig)
        files.append(path.name)
    roof = sections.get("roofline")
    if roof and roof["rows"]:
        fig, ax = plt.subplots(figsize=(7, 3.5))
        names = [r["variant"] for r in roof["rows"]]
        ax.bar(names, [r["streamed_B_per_s"] / 1e9 for r in roof["rows"]],
               label="streamed (dataset rows, draws)")
        ax.bar(names, [r["table_B_per_s"] / 1e9 for r in roof["rows"]],
               bottom=[r["streamed_B_per_s"] / 1e9 for r in roof["rows"]], alpha=0.5,
               label="table accesses (cache)")
        ax.axhline(roof["copy_bandwidth_B_per_s"] / 1e9, color="r", label="measured copy BW")
        ax.set_ylabel("GB/s")
        ax.tick_params(axis="x", rotation=60, labelsize=7)
        ax.legend(fontsize=7)
        ax.set_title("Memory traffic of the lanes trainer (FrozenLake, 2,000 lanes)", fontsize=9)
        fig.tight_layout()
        path = out.with_name(out.stem + "_roofline.png")
        fig.savefig(path, dpi=110)
        plt.close(fig)
        files.append(path.name)
    return files


def markdown(sections: dict, summary: dict) -> str:
    lines = [f"Device: {summary['device']}. Times for 2,000 episodes; CPU figures are "
             "extrapolated from fewer episodes (see JSON).", ""]
    if "numba" in sections:
        lines += ["### JAX lanes vs Numba baselines (FrozenLake 1M, 2,000 lanes, all cores)", "",
                  "| variant | JAX updates/s | best Numba | Numba updates/s | ratio |",
                  "|---|---:|---|---:|---:|"]
        for r in sections["numba"]["rows"]:
            b = r["best_numba"]
            lines.append(f"| {r['variant']} | {r['updates_per_s']:.3e} | {b} | "
                         f"{r['numba_updates_per_s'][b]:.3e} | {r['ratio_vs_best_numba']:.2f} |")
        lines.append("")
    if "kernels" in sections:
        k = sections["kernels"]
        lines += [f"### Pallas lane kernel vs scan path (FrozenLake 1M, 2,000 lanes, "
                  f"{k['episodes']} episodes, backend {k['backend']})", "",
                  "| variant | scan updates/s | Pallas updates/s | Pallas / scan | max abs dQ |",
                  "|---|---:|---:|---:|---:|"]
        for r in k["rows"]:
            if "max_abs_diff" in r:
                lines.append(f"| {r['variant']} | {r['scan_updates_per_s']:.3e} | "
                             f"{r['pallas_updates_per_s']:.3e} | {r['pallas_over_scan']:.2f} | "
                             f"{r['max_abs_diff']:.2e} |")
            else:
                err = r.get("pallas_error") or r.get("scan_error", "")
                lines.append(f"| {r['variant']} | {r.get('scan_updates_per_s', 0):.3e} | "
                             f"failed: {err[:80]} | | |")
        lines.append("")
    if "strong" in sections:
        lines += ["### Strong scaling (time for 2,000 episodes, s)", "",
                  "| env | variant | lanes | transfer_in | compute | sync | transfer_out | "
                  "total | updates/s |", "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
        for r in sections["strong"]["rows"]:
            t = r["timing_2000_episodes_s"]
            lines.append(f"| {r['env']} | {r['variant']} | {r['lanes']} | {t['transfer_in']:.3f} "
                         f"| {t['compute']:.2f} | {t['sync']:.3f} | {t['transfer_out']:.4f} | "
                         f"{t['total']:.2f} | {r['updates_per_s']:.3e} |")
        lines.append("")
    if "weak" in sections:
        lines += ["### Cost vs dataset size (Q-SEQ-FP32, 2,000 lanes)", "",
                  "| rows | updates/s |", "|---:|---:|"]
        lines += [f"| {r['rows']:,} | {r['updates_per_s']:.3e} |" for r in sections["weak"]["rows"]]
        lines.append("")
    if "multiagent" in sections:
        lines += ["### Independent multi-agent (10,000 transitions each, 2,000 episodes)", "",
                  "| agents | updates/s | time (s) | paper Xeon (s) | paper PIM (s) |",
                  "|---:|---:|---:|---:|---:|"]
        paper = {1000: (996.52, 996.52 / 11.23), 2000: (1943.78, 1943.78 / 21.92)}
        for r in sections["multiagent"]["rows"]:
            x, p = paper[r["agents"]]
            lines.append(f"| {r['agents']} | {r['updates_per_s']:.3e} | "
                         f"{r['timing_2000_episodes_s']['total']:.2f} | {x} | {p:.1f} |")
        lines.append("")
    if "roofline" in sections:
        roof = sections["roofline"]
        lines += [f"### Memory traffic (copy bandwidth {roof['copy_bandwidth_B_per_s'] / 1e9:.1f}"
                  f" GB/s; bound: {roof['bound']})", "",
                  "| variant | streamed B/update | table B/update | streamed GB/s | "
                  "fraction of copy BW |", "|---|---:|---:|---:|---:|"]
        lines += [f"| {r['variant']} | {r['streamed_bytes_per_update']} | "
                  f"{r['table_bytes_per_update']} | {r['streamed_B_per_s'] / 1e9:.2f} | "
                  f"{r['fraction_of_copy_bw']:.3f} |" for r in roof["rows"]]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few minutes on a 2-core CPU")
    parser.add_argument("--episodes", type=int, default=None,
                        help="episodes measured per run (default: 2,000 on GPU, 50 on CPU)")
    parser.add_argument("--sections", default="numba,strong,weak,multiagent,roofline")
    parser.add_argument("--lanes", type=int, nargs="+", default=None,
                        help="strong-scaling lane counts (default: 125-2,000 on CPU at 3 points, "
                        "125-65,536 on GPU)")
    parser.add_argument("--sizes", type=int, nargs="+", default=None,
                        help="weak-scaling dataset sizes in millions of rows (default: 1 4 16 on "
                        "CPU, 1 4 16 64 on GPU)")
    parser.add_argument("--variants", nargs="+", default=None,
                        help="strong-scaling and kernel variants, e.g. q-seq-fp32 sarsa-str-int32 "
                        "(default: all 12)")
    parser.add_argument("--envs", nargs="+", default=["frozenlake", "taxi"],
                        choices=sorted(ENV_ROWS), help="strong-scaling datasets")
    parser.add_argument("--kernel-episodes", type=int, default=None,
                        help="episodes per run in the kernels section (default: 200 on GPU, 4 "
                        "on CPU, where Pallas runs in interpret mode)")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--reuse", type=Path, default=None,
                        help="take the sections not re-run from this earlier results file")
    args = parser.parse_args(argv)
    args.scale = 10 if args.quick else 1
    if args.episodes is None:
        args.episodes = FULL_EPISODES if on_gpu() else (10 if args.quick else 50)
    if args.kernel_episodes is None:
        args.kernel_episodes = 200 if on_gpu() else 4
    out = args.out or RESULTS / f"tabular_scaling{'_quick' if args.quick else ''}.json"
    wanted = args.sections.split(",")
    cache: dict = {}
    sections: dict = {}
    if args.reuse is not None:
        import json

        old = json.loads(args.reuse.read_text())["results"]["sections"]
        sections.update({k: v for k, v in old.items() if k not in wanted})
    t0 = time.perf_counter()
    if "numba" in wanted and not on_gpu():
        sections["numba"] = section_numba(args, cache)
    if "kernels" in wanted:
        sections["kernels"] = section_kernels(args, cache)
    if "strong" in wanted:
        sections["strong"] = section_strong(args, cache)
    if "weak" in wanted:
        sections["weak"] = section_weak(args, cache)
    if "multiagent" in wanted:
        sections["multiagent"] = section_multiagent(args, cache)
    if "roofline" in wanted and "numba" in sections:
        sections["roofline"] = section_roofline(args, sections["numba"]["rows"])
    summary = {"device": device_label(), "quick": args.quick, "cpu_ratio_vs_best_numba": None,
               "gpu_multiagent_2000_s": None, "gpu_frozenlake_2000_lanes_s": None}
    for r in sections.get("numba", {}).get("rows", []):
        if r["variant"] == "Q-SEQ-FP32":
            summary["cpu_ratio_vs_best_numba"] = r["ratio_vs_best_numba"]
    if on_gpu():
        for r in sections.get("multiagent", {}).get("rows", []):
            if r["agents"] == 2000:
                summary["gpu_multiagent_2000_s"] = r["timing_2000_episodes_s"]["total"]
        for r in sections.get("strong", {}).get("rows", []):
            if r["env"] == "frozenlake" and r["lanes"] == 2000 and r["variant"] == "Q-SEQ-FP32":
                summary["gpu_frozenlake_2000_lanes_s"] = r["timing_2000_episodes_s"]["total"]
    else:
        summary["gpu_note"] = "no GPU was used for this file: GPU fields are null"
    from pim_published import PUBLISHED

    report = make_report(vars(args) | {"out": str(out)}, {"sections": sections,
                         "published": PUBLISHED}, {"benchmark": time.perf_counter() - t0},
                         summary)
    report["plots"] = plots(out, sections)
    write_json(out, report)
    out.with_suffix(".md").write_text(markdown(sections, summary))
    print(f"wrote {out} ({time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
