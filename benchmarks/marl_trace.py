"""MADDPG's device kernels per env step and per update round, from one profiler trace each.

Spread with N = 3 and 48 agents (``--quick`` 3, 12; ``--smoke`` 3 at test sizes), MADDPG
(faithful, batch 1,024), a buffer of twice the batch, also ``learning_starts`` (the kernels
are the point, not the buffer). One program of 4 episodes (100 env steps, one ``update_every``)
runs to warm up, under ``jax.profiler.trace(dir, create_perfetto_trace=True)`` before learning
starts (piece ``no_updates``), untraced until the first update round, then traced again (piece
``updates``, one round). The ``.xplane.pb`` (``jax.profiler.ProfileData``; else the trace's
``.json.gz``) gives (plane, line, name, duration) events. GPU kernels: the events on the
``/device:GPU`` planes' ``Stream`` lines less the copies (``Memcpy*`` / ``Memset*`` and the
driver's ``memcpy*`` kernels, counted apart); a piece records their count, the device time
(kernels and copies) and the top 15 kernels by total time. A CPU trace has no device plane
(the kernel count needs an accelerator): it keeps events per line, the top 15 host events.

    python benchmarks/marl_trace.py [--quick | --smoke] [--trace-archive PATH.tar.gz]

``--trace-archive``: the raw traces in one ``.tar.gz`` of at most 8 MB (less the
``.xplane.pb`` files if need be). Summary per N: ``gpu_marl_trace_kernels_per_env_step_<N>``
(``no_updates``), ``gpu_marl_trace_kernels_per_update_round_<N>`` (``updates`` less
``no_updates`` kernels per round: one program, as many steps) and
``gpu_marl_trace_device_busy_fraction_<N>`` (``updates``: device time over wall time).
"""

from __future__ import annotations

import collections
import contextlib
import gzip
import inspect
import json
import re
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as python benchmarks/<name>.py: the package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks import harness

SIZES: dict[str, dict[str, Any]] = {
    "full": {"agents": [3, 48], "batch_size": 1024, "piece_episodes": 4},
    "quick": {"agents": [3, 12], "batch_size": 1024, "piece_episodes": 4},
    "smoke": {"agents": [3], "batch_size": 128, "piece_episodes": 4},
}
TOP = 15
MAX_ARCHIVE_BYTES = 8_000_000
COPY = re.compile(r"^mem(cpy|set)", re.IGNORECASE)

Event = tuple[str, str, str, float]  # plane, line, name, duration in ns


def load_events(folder: Path) -> tuple[list[Event], str]:
    """Every complete event of the trace under ``folder`` and the file it came from."""
    import jax

    pb = sorted(folder.rglob("*.xplane.pb"))
    data_cls = getattr(jax.profiler, "ProfileData", None)
    if pb and data_cls is not None:
        data = data_cls.from_file(str(pb[-1]))
        return [(p.name, ln.name, e.name, float(e.duration_ns)) for p in data.planes
                for ln in p.lines for e in ln.events], pb[-1].name
    js = [*folder.rglob("perfetto_trace.json.gz"), *folder.rglob("*.trace.json.gz")]
    if not js:
        raise FileNotFoundError(f"no .xplane.pb or trace .json.gz under {folder}")
    with gzip.open(js[0], "rt") as f:
        trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    names = {(e["pid"], e.get("tid") if e["name"] == "thread_name" else None):
             e.get("args", {}).get("name", "") for e in events  # plane and line names
             if e.get("ph") == "M" and e.get("name") in ("process_name", "thread_name")}
    return [(names.get((e["pid"], None), str(e["pid"])), names.get((e["pid"], e.get("tid")), ""),
             e.get("name", ""), float(e.get("dur", 0.0)) * 1e3)
            for e in events if e.get("ph") == "X"], js[0].name


def parse(events: list[Event]) -> dict[str, Any]:
    """Kernel count, copies, device time (sums of event durations) and the top kernels (the
    top host events on a CPU) by total time."""
    lines = collections.Counter(f"{p} / {ln}" for p, ln, _, _ in events)
    out: dict[str, Any] = {"events": len(events), "lines": dict(lines.most_common(30))}
    device = [e for e in events if e[0].startswith("/device:GPU") and e[1].startswith("Stream")]
    kernels = [e for e in device if not COPY.match(e[2].replace(" ", ""))]
    if device:
        out.update(kernels=len(kernels), copies=len(device) - len(kernels),
                   kernel_time_s=sum(e[3] for e in kernels) / 1e9,
                   device_time_s=sum(e[3] for e in device) / 1e9, top_of="device kernels")
    else:
        kernels = [e for e in events if e[0].startswith("/host")]
        out.update(kernels=None, copies=None, device_time_s=None, top_of="host events (no "
                   "device plane: the kernel count needs an accelerator)")
    count, total = collections.Counter(e[2] for e in kernels), collections.Counter[str]()
    for _, _, name, ns in kernels:
        total[name] += ns
    out["top"] = [{"name": n[:160], "count": count[n], "total_us": t / 1e3}
                  for n, t in total.most_common(TOP)]
    return out


def _trace(fn: Any, state: Any, folder: Path) -> tuple[Any, dict[str, Any]]:
    """One run of ``fn`` under ``jax.profiler.trace`` (no Python tracer, no HLO protos;
    whichever of these options the installed jax has), parsed."""
    import jax

    params = inspect.signature(jax.profiler.trace).parameters
    kw: dict[str, Any] = {k: True for k in ("create_perfetto_trace",) if k in params}
    if "profiler_options" in params and hasattr(jax.profiler, "ProfileOptions"):
        kw["profiler_options"] = opts = jax.profiler.ProfileOptions()
        with contextlib.suppress(AttributeError):
            opts.python_tracer_level, opts.enable_hlo_proto = 0, False
    rounds = int(state.num_updates)
    with jax.profiler.trace(str(folder), **kw):
        t0 = time.perf_counter()
        state, _ = fn(state)
        jax.block_until_ready(state)
        wall = time.perf_counter() - t0
    events, source = load_events(folder)
    return state, {"wall_s": wall, "update_rounds": int(state.num_updates) - rounds,
                   "source": source, **parse(events)}


def trace_run(agents: int, size: dict[str, Any], root: Path) -> dict[str, Any]:
    """Both traced pieces of one agent count (see the module docstring)."""
    import jax

    from jaxrl_pim.marl import MARLConfig, make_init, piece_program

    b, piece = size["batch_size"], size["piece_episodes"]
    cfg = MARLConfig(env="spread", num_agents=agents, batch_size=b, buffer_capacity=2 * b,
                     learning_starts=2 * b, num_episodes=piece)
    steps = piece * cfg.episode_length
    if cfg.first_update_step <= 2 * steps or steps < cfg.update_every:
        raise ValueError("pieces must hold one round, the first two none")
    state = jax.jit(make_init(cfg))(jax.random.PRNGKey(0))
    def fn(s: Any) -> Any:  # the piece's program for s's place in the run (static schedule)
        return piece_program(cfg, piece, s)(s)

    t0 = time.perf_counter()
    piece_program(cfg, piece, state)
    rec: dict[str, Any] = {"agents": agents, "config": cfg, "env_steps": steps,
                           "compile_s": time.perf_counter() - t0}
    state = jax.block_until_ready(fn(state)[0])  # warm-up
    piece_program(cfg, piece, state)  # compiled before the trace (the same plan: kept)
    state, rec["no_updates"] = _trace(fn, state, root / f"n{agents}_no_updates")
    while int(state.num_updates) == 0:
        state = jax.block_until_ready(fn(state)[0])
    t0 = time.perf_counter()
    piece_program(cfg, piece, state)  # the pieces with a round: compiled before the trace
    rec["compile_s"] += time.perf_counter() - t0
    state, rec["updates"] = _trace(fn, state, root / f"n{agents}_updates")
    print(f"[trace] spread-{agents}: kernels {rec['updates']['kernels']}", flush=True)
    return rec


def pack(root: Path, path: Path) -> dict[str, Any]:
    """The trace folders in one ``.tar.gz`` of at most :data:`MAX_ARCHIVE_BYTES`."""
    files = sorted(p for p in root.rglob("*") if p.is_file())
    path.parent.mkdir(parents=True, exist_ok=True)
    for what, chosen in (("whole", files), ("without .xplane.pb", [
            p for p in files if not p.name.endswith(".xplane.pb")])):
        with tarfile.open(path, "w:gz") as tar:
            for p in chosen:
                tar.add(p, arcname=str(Path("marl_trace") / p.relative_to(root)))
        if path.stat().st_size <= MAX_ARCHIVE_BYTES:
            return {"path": str(path), "packed": what, "bytes": path.stat().st_size}
    path.unlink()
    return {"path": None, "packed": f"nothing: over {MAX_ARCHIVE_BYTES:,} bytes"}


def summarize(report: dict[str, Any]) -> dict[str, Any]:
    """Headline numbers from the stored records (see the module docstring)."""
    res = report["results"]
    out: dict[str, Any] = {"device": res["device"], "mode": report["config"]["mode"]}
    for r in res["runs"]:
        quiet, busy = r.get("no_updates") or {}, r.get("updates") or {}
        have = quiet.get("kernels") is not None and busy.get("kernels") is not None
        key = "gpu_marl_trace_{}_" + str(r["agents"])
        out[key.format("kernels_per_env_step")] = (quiet["kernels"] / r["env_steps"]
                                                   if have else None)
        out[key.format("kernels_per_update_round")] = (
            (busy["kernels"] - quiet["kernels"]) / busy["update_rounds"]
            if have and busy["update_rounds"] else None)
        out[key.format("device_busy_fraction")] = (busy["device_time_s"] / busy["wall_s"]
                                                   if have else None)
    out["not_measured"] = [f"spread{r['agents']}: {r.get('error') or r.get('skipped')}"
                           for r in res["runs"] if r.get("error") or r.get("skipped")]
    return out


def render_markdown(report: dict[str, Any]) -> str:
    """One row per traced piece, then the top kernels (host events on a CPU) per piece."""
    res = report["results"]
    rows, tops = [], []
    for r in res["runs"]:
        if r.get("error") or r.get("skipped"):
            rows.append([r["agents"], "", "", "", "",
                         (r.get("error") or r.get("skipped"))[:80].replace("|", "/"), "", "", ""])
            continue
        for piece in ("no_updates", "updates"):
            t = r[piece]
            per = None if t["kernels"] is None else t["kernels"] / r["env_steps"]
            rows.append([r["agents"], piece, r["env_steps"], t["update_rounds"],
                         harness.fmt(t["wall_s"], ".4f"),
                         harness.fmt(t["kernels"], ",", "needs an accelerator"),
                         harness.fmt(per, ".1f"), harness.fmt(t.get("copies"), ","),
                         harness.fmt(t["device_time_s"], ".4f")])
            tops += ["", f"Top {TOP} {t['top_of']}, N = {r['agents']}, {piece} piece:", ""]
            tops += harness.md_table(["name", "count", "total us"], [
                [f"`{k['name'][:90]}`", k["count"], harness.fmt(k["total_us"], ".1f")]
                for k in t["top"]])
    head = ["agents", "piece", "env steps", "update rounds", "wall s", "kernels",
            "kernels per env step", "copies", "device s"]
    return "\n".join([f"Device: {res['device']} ({report['config']['mode']} sizes); spread "
                      "MADDPG traced before and after learning starts.", "",
                      *harness.md_table(head, rows), *tops]) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Trace both pieces per agent count, write the results file, print the tables."""
    p = harness.parser(__doc__)
    harness.add_budget(p, "agent count")
    p.add_argument("--agents", type=int, nargs="+", default=None,
                   help="agent counts (default 3 48; --quick 3 12; --smoke 3)")
    p.add_argument("--trace-archive", type=Path, default=None, metavar="PATH",
                   help="pack the raw trace folders into this .tar.gz (default: none)")
    args, run, mode = harness.start(p, argv, __file__)
    from jaxrl_pim import provenance

    size = SIZES[mode]
    path = harness.output_path(args, "marl_trace")
    budget = harness.Budget(args.budget_s)
    runs: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="marl_trace-") as tmp:  # the raw traces
        for n in args.agents or size["agents"]:
            if budget.spent():
                runs.append({"agents": n, "skipped": "--budget-s spent"})
                continue
            try:
                runs.append(trace_run(n, size, Path(tmp)))
            except Exception as err:  # noqa: BLE001 - a failed run is recorded, the rest runs
                runs.append({"agents": n, "error": f"{type(err).__name__}: {err}"[:300]})
        archive = pack(Path(tmp), args.trace_archive) if args.trace_archive else None
    config = {"mode": mode, "sizes": size, "agents": args.agents or size["agents"],
              "budget_s": args.budget_s}
    results = {"device": provenance.device_label(), "runs": runs, "trace_archive": archive}
    harness.write(path, run=run, config=config, results=results,
                  timing_s={"total": time.perf_counter() - t0}, summarize=summarize,
                  markdown=render_markdown, show=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
