"""Every accelerator number from one call: the GPU sections of the benchmarks in one run.

    python benchmarks/gpu_suite.py --out DIR              # on one H100 / H200: ~25 minutes
    python benchmarks/gpu_suite.py --out DIR --publish    # also into benchmarks/results/<device>/
    python benchmarks/gpu_suite.py --smoke --out DIR      # any host, test sizes (the test suite)

Sections, each one benchmark script in its own subprocess, in this order:

=================  ======================  ==================================================
section            script                  what it measures on the device
=================  ======================  ==================================================
``tabular``        ``tabular_gpu.py``      the lane kernels at full sizes (12 FrozenLake
                                           variants at 2,000 lanes, 2,000 independent agents,
                                           Taxi, strong scaling, ns per dependent step against
                                           the floor estimate) and the lanes-per-program x
                                           prefetch-depth sweep that picks the device's best
                                           settings
``marl_e2e``       ``marl_gpu.py``         MADDPG spread-3 / tag-3 over the 60,000-episode
                                           schedule (if it fits its budget), time per 1,000
                                           episodes at N = 6-48 per layout and sampling mode
``marl_profile``   ``marl_profile.py``     phase shares at 3-48 agents, 1e6-row buffers
``marl_sampling``  ``marl_sampling.py``    the samplers (faithful and fast, per layout) and
                                           their bytes against the measured copy bandwidth
``quant``          ``quant_inference.py``  actor inference fp32 / bf16 / fp16 / int8 at the
                                           ActorQ sizes, batch 1 / 64 / 1,024; the broadcast
=================  ======================  ==================================================

The plan (each section's estimated time and its time budget) is printed first. Each section
runs with ``--out DIR`` (``--quick`` / ``--smoke`` passed on) under its budget, and with the
script's ``--budget-s`` at a share of it, so the script stops starting new work and writes
its file in time (the headline parts run first); one that fails or still runs out of time
is stopped, recorded with its error, and the next one runs. Every
results file goes into ``DIR``, with the section logs under ``DIR/logs/``; the suite's own
file ``gpu_suite[_quick|_smoke].json`` records the device, the plan and what each section
did and took. With ``--publish`` the results files (``.json``, ``.md``, plots) of the
sections that completed, and the suite's file, are then copied into
``benchmarks/results/<device>/``; the suite refuses to publish from a host without a GPU or
TPU (numbers of a CPU are never filed as an accelerator's), and ``--smoke`` never publishes.

Budgets (seconds, full sizes) add up to 24 minutes so the call ends within 25 on one H100 /
H200; ``--budget SECTION=SECONDS`` changes one, ``--sections`` runs a subset. The suite itself
uses only ``jax.default_backend``, ``jax.devices`` and ``Device.memory_stats`` (present in jax
0.10 and 0.11) and passes no version-specific option to its scripts; it has been run on jax
0.10.2 (``--smoke``, CPU).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, NamedTuple

import harness

#: The whole call must end within this many seconds on one H100 / H200 (issue target).
TARGET_S = 25 * 60
ACCELERATORS = ("gpu", "cuda", "rocm", "tpu")


class Section(NamedTuple):
    """One section: the script it runs and its estimated time / budget per mode (seconds)."""

    name: str
    script: str
    stem: str
    estimate_s: dict[str, float]
    budget_s: dict[str, float]
    doc: str


SECTIONS: tuple[Section, ...] = (
    Section("tabular", "tabular_gpu.py", "tabular_gpu",
            {"full": 330, "quick": 120, "smoke": 40}, {"full": 400, "quick": 200, "smoke": 240},
            "lane kernels, ns per dependent step vs floor, lanes x prefetch sweep"),
    Section("marl_e2e", "marl_gpu.py", "marl_gpu",
            {"full": 360, "quick": 150, "smoke": 60}, {"full": 400, "quick": 200, "smoke": 240},
            "MADDPG 60k-episode schedule; s per 1,000 episodes at N = 6-48"),
    Section("marl_profile", "marl_profile.py", "marl_profile",
            {"full": 240, "quick": 90, "smoke": 40}, {"full": 280, "quick": 150, "smoke": 240},
            "MADDPG phase shares, 3-48 agents, 1e6-row buffers"),
    Section("marl_sampling", "marl_sampling.py", "marl_sampling",
            {"full": 200, "quick": 90, "smoke": 30}, {"full": 240, "quick": 150, "smoke": 240},
            "samplers per layout and mode, bytes vs copy bandwidth"),
    Section("quant", "quant_inference.py", "quant_inference",
            {"full": 60, "quick": 40, "smoke": 30}, {"full": 120, "quick": 90, "smoke": 240},
            "actor inference fp32 / bf16 / fp16 / int8, broadcast"),
)
BY_NAME = {s.name: s for s in SECTIONS}
#: Seconds the suite itself needs around the sections (device probe, writing, copying).
OVERHEAD_S = 60

PROBE = """
import json, jax
d = jax.devices()[0]
stats = getattr(d, "memory_stats", lambda: None)() or {}
print(json.dumps({"backend": jax.default_backend(), "device_kind": d.device_kind,
                  "device_count": len(jax.devices()), "jax": jax.__version__,
                  "bytes_limit": stats.get("bytes_limit")}))
"""


def probe_device(env: dict[str, str], timeout_s: float = 300) -> dict[str, Any]:
    """Backend, device kind and count, jax version and the memory limit, from a subprocess
    (the suite's own process holds no device memory while the sections run)."""
    proc = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True,
                          text=True, timeout=timeout_s)
    if proc.returncode != 0:
        raise RuntimeError("device probe failed: " + proc.stderr.strip()[-500:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def section_args(section: Section, mode: str, device: dict[str, Any], budget_s: float
                 ) -> list[str]:
    """Command-line options of a section's script beyond ``--out`` and the size flag."""
    # No new piece of work starts after this share of the budget, so each script writes its
    # file before the suite stops it (the pieces are whole sections, configurations or agent
    # counts, so the headroom is larger where one piece is long).
    share = {"tabular": 0.75, "marl_e2e": 0.85, "marl_profile": 0.8, "marl_sampling": 0.6,
             "quant": None}[section.name]
    args = [] if share is None else ["--budget-s", f"{share * budget_s:.0f}"]
    if section.name == "marl_profile" and mode != "smoke":
        args += ["--sizes", "3", "6", "12", "24", "48"] if mode == "full" else []
        if device.get("bytes_limit"):
            # the profiler holds the state and a filled copy: a third of the device each
            args += ["--budget-gib", f"{0.3 * device['bytes_limit'] / 2**30:.1f}"]
    return args


def plan(mode: str, names: list[str], budgets: dict[str, float]) -> list[dict[str, Any]]:
    """The sections to run with their estimated time and budget (seconds)."""
    return [{"section": n, "script": f"benchmarks/{BY_NAME[n].script}",
             "estimate_s": BY_NAME[n].estimate_s[mode], "budget_s": budgets[n],
             "measures": BY_NAME[n].doc} for n in names]


def print_plan(rows: list[dict[str, Any]], mode: str, device: dict[str, Any]) -> None:
    """The plan, before anything runs."""
    print(f"GPU suite plan ({mode} sizes) on {device['backend']}: {device['device_count']} x "
          f"{device['device_kind']} (jax {device['jax']})", flush=True)
    for r in rows:
        print(f"  {r['section']:<14} {r['script']:<32} ~{r['estimate_s'] / 60:4.1f} min "
              f"(budget {r['budget_s'] / 60:4.1f} min): {r['measures']}", flush=True)
    total = sum(r["estimate_s"] for r in rows)
    limit = sum(r["budget_s"] for r in rows) + OVERHEAD_S
    print(f"  estimated {total / 60:.1f} min, at most {limit / 60:.1f} min", flush=True)


def _pump(stream: Any, log: Any, prefix: str) -> None:
    for line in stream:
        log.write(line)
        log.flush()
        sys.stdout.write(f"[{prefix}] {line}")
        sys.stdout.flush()


def run_section(cmd: list[str], env: dict[str, str], budget_s: float, log_path: Path,
                name: str) -> dict[str, Any]:
    """Run one section's command under its budget; ``{status, returncode, seconds, error}``.

    Past the budget the section's process group (the process this function started and its
    children) is sent SIGTERM, then SIGKILL after 10 s."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    with log_path.open("w") as log:
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, start_new_session=True)
        pump = threading.Thread(target=_pump, args=(proc.stdout, log, name), daemon=True)
        pump.start()
        timed_out = False
        try:
            proc.wait(timeout=budget_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        pump.join(timeout=10)
    seconds = time.perf_counter() - t0
    out: dict[str, Any] = {"returncode": proc.returncode, "seconds": seconds, "error": None}
    if timed_out:
        out.update(status="timed out", error=f"stopped after its budget of {budget_s:.0f} s")
    elif proc.returncode != 0:
        tail = [ln for ln in log_path.read_text().splitlines() if ln.strip()][-3:]
        out.update(status="failed", error=f"exit status {proc.returncode}: "
                   + " | ".join(tail)[-400:])
    else:
        out["status"] = "ok"
    return out


def section_files(folder: Path, stem: str) -> list[Path]:
    """A section's results files in ``folder``: ``<stem>.json``, its ``.md`` and plots
    (not the ``.partial`` file a run cut short leaves)."""
    return sorted(p for p in folder.iterdir()
                  if p.is_file() and ".partial" not in p.name
                  and (p.stem == stem or (p.suffix == ".png" and p.stem.startswith(stem + "_"))))


def summarize(report: dict[str, Any]) -> dict[str, Any]:
    """What ran, how long each section took and whether the call fit 25 minutes."""
    res, cfg = report["results"], report["config"]
    rows = res["sections"]
    total = res["total_s"]
    return {
        "device": res["device"]["device_kind"],
        "backend": res["device"]["backend"],
        "mode": cfg["mode"],
        "total_s": total,
        "within_25_min": total <= TARGET_S,
        "seconds_by_section": {r["section"]: r["seconds"] for r in rows},
        "sections_ok": [r["section"] for r in rows if r["status"] == "ok"],
        "sections_not_ok": {r["section"]: r["error"] for r in rows if r["status"] != "ok"},
    }


def render_markdown(report: dict[str, Any]) -> str:
    """The plan against what each section did."""
    res, cfg = report["results"], report["config"]
    dev = res["device"]
    lines = [f"Device: {dev['backend']}, {dev['device_count']} x {dev['device_kind']} (jax "
             f"{dev['jax']}); {cfg['mode']} sizes; whole call {res['total_s']:.0f} s "
             f"(target {TARGET_S} s).", "",
             "| section | script | estimated s | budget s | took s | status | results file |",
             "|---|---|---|---|---|---|---|"]
    for r in res["sections"]:
        status = r["status"] + (f": {r['error'][:100]}" if r.get("error") else "")
        files = ", ".join(f"`{f}`" for f in r["files"] if f.endswith(".json"))
        lines.append(f"| {r['section']} | `{r['script']}` | {r['estimate_s']:.0f} | "
                     f"{r['budget_s']:.0f} | {r['seconds']:.1f} | {status} | {files} |")
    return "\n".join(lines) + "\n"


def _budget_overrides(items: list[str]) -> dict[str, float]:
    out = {}
    for item in items:
        name, _, value = item.partition("=")
        if name not in BY_NAME or not value:
            raise SystemExit(f"--budget takes SECTION=SECONDS with SECTION one of "
                             f"{', '.join(BY_NAME)}; got {item!r}")
        out[name] = float(value)
        if out[name] <= 0:
            raise SystemExit(f"--budget {item}: seconds must be > 0")
    return out


def parser() -> argparse.ArgumentParser:
    """The suite's options (``--out`` and ``--publish`` go together here)."""
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    size = p.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true",
                      help="every section at --quick sizes (files *_quick.*; default: off)")
    size.add_argument("--smoke", action="store_true",
                      help="every section at --smoke sizes: seconds each, any host, numbers "
                           "meaningless, never published (default: off)")
    p.add_argument("--out", type=Path, default=None, metavar="DIR",
                   help="folder for every results file and log (default: a fresh folder "
                        "out/gpu_suite-<UTC time>/ that git ignores)")
    p.add_argument("--publish", action="store_true",
                   help="also copy the results files into benchmarks/results/<device>/ "
                        "(refused on a host without a GPU / TPU; default: off)")
    p.add_argument("--sections", nargs="+", choices=list(BY_NAME), default=list(BY_NAME),
                   help="sections to run, in the suite's order (default: all)")
    p.add_argument("--budget", action="append", default=[], metavar="SECTION=SECONDS",
                   help="time budget of one section (repeatable; default: the plan's)")
    p.add_argument("--plan", action="store_true",
                   help="print the plan and exit (default: off)")
    return p


def main(argv: list[str] | None = None) -> int:
    """Probe the device, print the plan, run the sections, write and (maybe) publish."""
    args = parser().parse_args(argv)
    from jaxrl_pim import report

    run = report.RunRecord(None if argv is None else [__file__, *argv])
    mode = "smoke" if args.smoke else "quick" if args.quick else "full"
    if args.smoke and args.publish:
        print("--smoke results are never published", file=sys.stderr)
        return 2
    env = dict(os.environ)
    env.setdefault("MPLBACKEND", "Agg")
    device = probe_device(env)
    accelerator = device["backend"] in ACCELERATORS
    if args.publish and not accelerator:
        print(f"refusing to publish: this host's backend is {device['backend']!r}, not a GPU "
              "or TPU (CPU numbers are never filed as accelerator numbers)", file=sys.stderr)
        return 2
    if args.publish:
        state = report.git_state(harness.ROOT / "benchmarks")
        if state["dirty"] or state["commit"] is None:
            print("warning: publishing from uncommitted code or outside a git checkout: "
                  "make_docs.py --check will reject these results files; commit first",
                  file=sys.stderr, flush=True)
    names = [s.name for s in SECTIONS if s.name in args.sections]
    budgets = {s.name: s.budget_s[mode] for s in SECTIONS}
    budgets.update(_budget_overrides(args.budget))
    rows = plan(mode, names, budgets)
    print_plan(rows, mode, device)
    if args.plan:
        return 0
    if not accelerator and mode != "smoke":
        print("the GPU suite runs at full or --quick sizes only on a GPU / TPU; on this host "
              "use --smoke", file=sys.stderr)
        return 2
    stem = {"full": "gpu_suite", "quick": "gpu_suite_quick", "smoke": "gpu_suite_smoke"}[mode]
    out = args.out or harness.SCRATCH / f"gpu_suite-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}"
    out = Path(out).resolve()
    path = out / f"{stem}.json"
    if path.exists():
        print(f"{path} exists; choose another --out folder", file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    size_flag = {"full": [], "quick": ["--quick"], "smoke": ["--smoke"]}[mode]
    here = Path(__file__).resolve().parent
    t_all = time.perf_counter()
    for row in rows:
        section = BY_NAME[row["section"]]
        cmd = [sys.executable, str(here / section.script), *size_flag, "--out", str(out),
               *section_args(section, mode, device, row["budget_s"])]
        row["command"] = " ".join(["python", f"benchmarks/{section.script}", *cmd[2:]])
        print(f"== {section.name}: {row['command']}", flush=True)
        row.update(run_section(cmd, env, row["budget_s"], out / "logs" / f"{section.name}.log",
                               section.name))
        stem_s = section.stem + {"full": "", "quick": "_quick", "smoke": "_smoke"}[mode]
        row["files"] = [p.name for p in section_files(out, stem_s)]
        print(f"== {section.name}: {row['status']} in {row['seconds']:.0f} s "
              f"(estimated {row['estimate_s']:.0f} s)", flush=True)
    total = time.perf_counter() - t_all
    config = {"mode": mode, "sections": names, "budgets_s": budgets, "target_s": TARGET_S,
              "publish": args.publish}
    results = {"device": device, "sections": rows, "total_s": total}
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # the record's jax
    stored = harness.write(path, run=run, config=config, results=results,
                           timing_s={"total": total}, summarize=summarize,
                           markdown=render_markdown)
    print(render_markdown(stored))
    if args.publish:
        dest = harness.RESULTS / harness.device_dir(device["backend"], device["device_kind"])
        dest.mkdir(parents=True, exist_ok=True)
        copied = [p for r in rows if r["status"] == "ok" for p in map(out.joinpath, r["files"])]
        copied += [path, path.with_suffix(".md")]
        for p in copied:
            shutil.copy2(p, dest / p.name)
        print(f"published {len(copied)} files into {dest}; run python benchmarks/make_docs.py "
              "and commit them", flush=True)
    return 0 if all(r["status"] == "ok" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
