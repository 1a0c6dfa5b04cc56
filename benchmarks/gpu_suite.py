"""Every accelerator number from one lease-sized call: the GPU parts of the benchmarks, by priority.

    python benchmarks/gpu_suite.py --archive DIR          # on one H100 / H200: at most 8 minutes
    python benchmarks/gpu_suite.py --plan                 # the plan and its estimates, any host
    python benchmarks/gpu_suite.py --smoke --archive DIR  # any host, test sizes (the rehearsal)
    python benchmarks/gpu_suite.py --unpack ARCHIVE       # on the development machine: file it

The call is made for a borrowed machine: a bare GPU host, one command of at most 10 minutes,
at most 8 files back. ``benchmarks/gpu_prepare.sh`` prints the one command that installs the
wheels the device lacks and runs this suite there (docs/guide/reproduce-a-benchmark.md).

Parts, each one benchmark script in its own subprocess, in priority order (what the call
reaches first is what matters most; the table and estimates live in
:mod:`benchmarks.gpu_plan`):

====  ==================  ==================================================================
tier  part                what it measures on the device (script)
====  ==================  ==================================================================
1     ``marl_fill``       MADDPG seeds per hour: S = 1, 64, 16, 256 vmapped seeds at N = 3
                          and 1, 16 at N = 24, pieces of 1,024 episodes on the paper's
                          schedule, us per env step without updates (``marl_seeds.py --fill``)
2     ``spread48``        spread-48 at the paper's 1e6 rows, ``compact`` layout, s per 1,000
                          episodes and the 60k schedule extrapolated (``marl_gpu.py``)
3     ``tabular``         FrozenLake 2,000 lanes, the 12 variants with ``rng`` jax and lcg,
                          2,000 independent agents (``tabular_gpu.py``)
4     ``e2e_rejax``       DQN and PPO end to end against rejax, each side in its own
                          process, learning checked (``e2e_gpu.py``)
5     ``quant``           actor inference device-side (K calls in one program) and dispatch
                          included, fp32 / bf16 / int8 / qwix (``quant_inference.py``)
5     ``marl_sampling``   the replay round per layout and flashbax at N = 24 against the
                          copy bandwidth (``marl_sampling.py``)
6     ``marl_trace``      one ``jax.profiler`` trace of a MADDPG piece at N = 3 and 48,
                          kernels per env step; the trace packed into the logs
6     ``marl_profile``    MADDPG phase shares at 48 agents inside the fused program
6     ``marl_e2e``        MADDPG s per 1,000 episodes at N = 3, 24, 48 (interleaved)
6     ``tabular_sweep``   lanes per program x prefetch depth (``tabular_gpu_sweep.json``)
6     ``marl_schedule``   the 60k-episode spread-3 schedule (``marl_gpu_schedule.json``)
====  ==================  ==================================================================

Tier 6 holds the extras: the plan's estimate fits tiers 1 to 5 into the deadline; an extra runs
when the parts before it finish ahead of their estimates, or in a call of its own
(``--parts marl_trace marl_profile``).

Nothing is measured twice: ``--freshness FILE`` (on the development machine, where git is;
``gpu_prepare.sh`` runs it) writes which parts are *fresh* on each accelerator folder (their
filed result covers the present code and options, :func:`benchmarks.gpu_plan.freshness`);
``--fresh-from FILE`` on the device skips those for the device's folder (recorded as
``fresh`` with the reason) and ``--force`` runs them all the same. The printed plan names
each part's reason.

One deadline governs the call (``--deadline-s``, 480 s at full sizes, compiles included). A
part starts only when its estimate fits the time left (otherwise it is recorded as skipped);
it runs with its script's ``--budget-s`` at a share of its time (at most twice its estimate,
and no more than leaves the later planned parts their estimates), so the script stops
starting new work and writes its file in time, and it is stopped at the deadline if it is
still running. Each part writes into a folder of its own; only a part that ended cleanly has its
files filed, so nothing half-written is ever filed.

Everything comes back: at the end, at the deadline and on SIGTERM the suite writes its own
file (``gpu_suite[_quick|_smoke].json``: device, plan, what each part did and took), packs
the filed results (``benchmarks/results/<device>/``) and the logs into one archive under
``--archive`` and prints a summary table to stdout. At most :data:`MAX_RETURNED_FILES` files
land in ``--archive`` (:func:`returned_file_problems`).

The estimates are estimates (``estimate_s``, seconds on one H100 / H200); where a filed GPU
call measured a part (``seconds_by_part``), its estimate is those seconds. The suite refuses
to file CPU numbers as accelerator numbers: ``--publish`` and ``--unpack`` take only
accelerator folders, and ``--smoke`` files are never filed. It uses only
``jax.default_backend``, ``jax.devices`` and ``Device.memory_stats`` (jax 0.10 and 0.11).
Provenance does not need ``git`` on the device: the commit and the changed paths are passed
in (``JAXRL_PIM_SOURCE_COMMIT``, ``JAXRL_PIM_SOURCE_DIRTY``;
:func:`jaxrl_pim.provenance.passed_in_source_state`).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as python benchmarks/<name>.py: the package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks import harness
from benchmarks.gpu_archive import (  # noqa: F401 - re-exported: the suite's whole interface
    MAX_RETURNED_DEPTH,
    MAX_RETURNED_FILES,
    RETURNED_NAME,
    pack,
    returned_file_problems,
    unpack,
)
from benchmarks.gpu_parts import Interrupted, run_part
from benchmarks.gpu_plan import (  # noqa: F401
    BY_NAME,
    DEADLINE_S,
    EXTRA_TIER,
    HEADLINE_KEYS,
    OVERHEAD_S,
    PARTS,
    Part,
    freshness_report,
    part_args,
    part_room,
    plan,
    plan_total_s,
    print_plan,
)

#: Seconds kept back from the deadline to write the suite's file and pack the archive.
RESERVE_S = 15.0
ACCELERATORS = harness.ACCELERATORS
MODE_SUFFIX = {"full": "", "quick": "_quick", "smoke": "_smoke"}
#: Where the opponents' wheels are installed on the device (``gpu_prepare.sh``'s second
#: ``--target`` folder); ``JAXRL_PIM_PEER_SITE`` overrides it.
PEER_SITE = "/tmp/jaxrl_pim_peer_site"

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
    (the suite's own process holds no device memory while the parts run)."""
    proc = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True,
                          text=True, timeout=timeout_s)
    if proc.returncode != 0:
        raise RuntimeError("device probe failed: " + proc.stderr.strip()[-500:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def part_files(folder: Path, stem: str) -> list[Path]:
    """A part's results files in ``folder``: ``<stem>.json``, its ``.md`` and plots (not the
    ``.partial`` file a run cut short leaves)."""
    return sorted(p for p in folder.iterdir()
                  if p.is_file() and ".partial" not in p.name
                  and (p.stem == stem or (p.suffix == ".png" and p.stem.startswith(stem + "_"))))


def headline(path: Path, part: str) -> dict[str, Any]:
    """The summary keys of the part's results file that :data:`HEADLINE_KEYS` names."""
    try:
        summary = json.loads(path.read_text()).get("summary", {})
    except (OSError, ValueError):
        return {}
    pattern = re.compile(HEADLINE_KEYS.get(part, "(?!)"))
    return {k: v for k, v in summary.items() if pattern.search(k)
            and isinstance(v, int | float | str | bool | type(None))}


def summarize(report: dict[str, Any]) -> dict[str, Any]:
    """What ran, how long each part took against its estimate, and whether the call kept its
    deadline; the tier-1 and other headline keys as the parts' files hold them."""
    res, cfg = report["results"], report["config"]
    rows = res["parts"]
    total = res["total_s"]
    out: dict[str, Any] = {
        "device": res["device"]["device_kind"],
        "backend": res["device"]["backend"],
        "mode": cfg["mode"],
        "total_s": total,
        "deadline_s": cfg["deadline_s"],
        "within_deadline": total <= cfg["deadline_s"],
        "plan_estimate_s": cfg["plan_estimate_s"],
        "seconds_by_part": {r["part"]: r.get("seconds") for r in rows},
        "parts_ok": [r["part"] for r in rows if r["status"] == "ok"],
        "parts_not_ok": {r["part"]: f"{r['status']}: {r.get('error') or ''}".rstrip(": ")
                         for r in rows if r["status"] not in ("ok", "fresh")},
        "interrupted": res["interrupted"],
    }
    fresh = [r["part"] for r in rows if r["status"] == "fresh"]
    if fresh:  # (files of earlier calls have none)
        out["parts_fresh"] = fresh
    for r in rows:
        out.update(r.get("headline") or {})
    return out


def render_markdown(report: dict[str, Any]) -> str:
    """The plan against what each part did, and the headline numbers."""
    res, cfg = report["results"], report["config"]
    dev = res["device"]
    lines = [f"Device: {dev['backend']}, {dev['device_count']} x {dev['device_kind']} (jax "
             f"{dev['jax']}); {cfg['mode']} sizes; whole call {res['total_s']:.0f} s "
             f"(deadline {cfg['deadline_s']:.0f} s; the plan's estimate "
             f"{cfg['plan_estimate_s']:.0f} s).", ""]
    rows = []
    for r in res["parts"]:
        status = r["status"] + (f": {r['error'][:100]}" if r.get("error") else "")
        files = ", ".join(f"`{f}`" for f in r.get("files", []) if f.endswith(".json"))
        rows.append([r["tier"], r["part"], f"`{r['script']}`", f"{r['estimate_s']:.0f}",
                     harness.fmt(r.get("seconds"), ".1f"), status, files])
    lines += harness.md_table(["tier", "part", "script", "estimated s", "took s", "status",
                               "results file"], rows)
    heads = [(r["part"], k, v) for r in res["parts"] for k, v in (r.get("headline") or {}).items()]
    if heads:
        lines += ["", *harness.md_table(["part", "summary key", "value"],
                                        [[p, f"`{k}`", harness.fmt(v)] for p, k, v in heads])]
    return "\n".join(lines) + "\n"


def _overrides(items: list[str], flag: str) -> dict[str, float]:
    out = {}
    for item in items:
        name, _, value = item.partition("=")
        try:
            seconds = float(value)
        except ValueError:
            seconds = -1.0
        if name not in BY_NAME or seconds <= 0:
            raise SystemExit(f"{flag} takes PART=SECONDS with PART one of "
                             f"{', '.join(BY_NAME)} and SECONDS > 0; got {item!r}")
        out[name] = seconds
    return out


def parser() -> argparse.ArgumentParser:
    """The suite's options."""
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    size = p.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true",
                      help="every part at --quick sizes (files *_quick.*; default: off)")
    size.add_argument("--smoke", action="store_true",
                      help="every part at --smoke sizes: seconds each, any host, numbers "
                           "meaningless, never filed (default: off)")
    p.add_argument("--out", type=Path, default=None, metavar="DIR",
                   help="working folder for every results file and log (default: a fresh "
                        "folder out/gpu_suite-<UTC time>/ that git ignores)")
    p.add_argument("--archive", type=Path, default=None, metavar="DIR",
                   help="also pack the filed results and logs into one archive here, with "
                        "the summary table beside it: two files (on the device: $OUT; "
                        "default: no archive)")
    p.add_argument("--publish", action="store_true",
                   help="also copy the filed results into benchmarks/results/<device>/ of "
                        "this checkout (refused on a host without a GPU / TPU; default: off)")
    p.add_argument("--parts", nargs="+", choices=list(BY_NAME), default=list(BY_NAME),
                   help="parts to run, in the suite's order (default: all)")
    p.add_argument("--deadline-s", type=float, default=None,
                   help="seconds the whole call may take, compiles included (default: 480; "
                        "--smoke 240)")
    p.add_argument("--estimate", action="append", default=[], metavar="PART=SECONDS",
                   help="the estimated time of one part (repeatable; default: the plan's)")
    p.add_argument("--budget", action="append", default=[], metavar="PART=SECONDS",
                   help="stop one part after SECONDS even when the deadline is further "
                        "(repeatable; default: only the deadline stops a part)")
    p.add_argument("--plan", action="store_true",
                   help="print the plan and exit (default: off)")
    p.add_argument("--freshness", type=Path, default=None, metavar="FILE",
                   help="write which parts are fresh on each accelerator folder (needs git: "
                        "the development machine) into FILE and exit (default: off)")
    p.add_argument("--fresh-from", type=Path, default=None, metavar="FILE",
                   help="skip the parts that FILE (from --freshness) marks fresh on this "
                        "device's folder (default: run every part)")
    p.add_argument("--force", action="store_true",
                   help="with --fresh-from: run fresh parts too (default: off)")
    p.add_argument("--unpack", type=Path, default=None, metavar="ARCHIVE",
                   help="file a returned archive into benchmarks/results/<device>/ unchanged "
                        "and exit")
    return p


class _Deadline:
    """Seconds left before the call's deadline, less the packing reserve."""

    def __init__(self, seconds: float) -> None:
        self.t0, self.seconds = time.perf_counter(), seconds

    def elapsed(self) -> float:
        return time.perf_counter() - self.t0

    def left(self) -> float:
        return self.seconds - RESERVE_S - self.elapsed()


def _on_sigterm(signum: int, frame: Any) -> None:
    raise Interrupted({})


def run_parts(rows: list[dict[str, Any]], mode: str, device: dict[str, Any], env: dict[str, str],
              out: Path, staged: Path, deadline: _Deadline,
              budgets: dict[str, float] | None = None) -> bool:
    """Run the planned parts in order under the deadline (and a part's own budget in
    ``budgets``, seconds), filling each row; True when SIGTERM interrupted the run."""
    budgets = budgets or {}
    size_flag = {"full": [], "quick": ["--quick"], "smoke": ["--smoke"]}[mode]
    here = Path(__file__).resolve().parent
    places = {"logs": str(out / "logs"),
              "peer_site": os.environ.get("JAXRL_PIM_PEER_SITE", PEER_SITE)}
    (out / "logs").mkdir(parents=True, exist_ok=True)
    for i, row in enumerate(rows):
        part = BY_NAME[row["part"]]
        left = deadline.left()
        row.update(files=[], headline={}, seconds=None)
        if "fresh" in row:
            row.update(status="fresh", error=row["fresh"])
            print(f"== {part.name}: not run, fresh ({row['fresh']})", flush=True)
            continue
        if row["estimate_s"] > left:
            row.update(status="skipped", error=f"estimated {row['estimate_s']:.0f} s, "
                       f"{max(left, 0):.0f} s left before the deadline")
            print(f"== {part.name}: skipped ({row['error']})", flush=True)
            continue
        work = out / "work" / part.name
        work.mkdir(parents=True, exist_ok=True)
        limit = min(left, budgets.get(part.name, left))
        room = part_room(rows, i, left, limit)
        cmd = [sys.executable, str(here / part.script), *size_flag, "--out", str(work),
               *part_args(part, mode, device, room, places)]
        row["command"] = " ".join(["python", f"benchmarks/{part.script}", *cmd[2:]])
        print(f"== {part.name} (tier {part.tier}, {left:.0f} s left): {row['command']}",
              flush=True)
        try:
            row.update(run_part(cmd, env, limit, out / "logs" / f"{part.name}.log",
                                   part.name))
            if row["status"] == "stopped at the deadline" and limit < left:
                row.update(status="stopped at its budget",
                           error=f"stopped after its --budget of {limit:.0f} s")
        except Interrupted as stop:
            row.update(stop.args[0] if stop.args and stop.args[0] else
                       {"status": "interrupted", "error": "SIGTERM"})
            for later in rows[i + 1:]:
                later.update(status="not started", error="the suite received SIGTERM",
                             files=[], headline={}, seconds=None)
            return True
        if row["status"] == "ok":
            for p in part_files(work, row["stem"]):
                shutil.copy2(p, staged / p.name)
                row["files"].append(p.name)
            row["headline"] = headline(staged / f"{row['stem']}.json", part.name)
            if not row["files"]:
                row.update(status="failed", error="ended without writing its results file")
        print(f"== {part.name}: {row['status']} in {row['seconds']:.0f} s "
              f"(estimated {row['estimate_s']:.0f} s)", flush=True)
    return False


def _unpack_main(archive: Path) -> int:
    """``--unpack``: file a returned archive, say what to do next."""
    try:
        written = unpack(archive)
    except (OSError, ValueError, tarfile.TarError) as err:
        print(f"gpu_suite --unpack: {err}", file=sys.stderr)
        return 2
    for p in written:
        print(f"filed {p.relative_to(harness.ROOT)}")
    print("now: python benchmarks/make_docs.py, then commit these files unchanged")
    return 0


def _freshness_main(path: Path, names: list[str], mode: str) -> int:
    """``--freshness``: which parts are fresh on each accelerator folder, into ``path``."""
    from jaxrl_pim import provenance

    data = {"commit": provenance.git_state(harness.ROOT)["commit"],
            **freshness_report(names, mode)}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1) + "\n")
    for folder, parts in data["folders"].items():
        fresh = [n for n, f in parts.items() if f["fresh"]]
        print(f"{folder}: fresh {', '.join(fresh) or 'none'}; the others run", flush=True)
    print(f"wrote {path}", flush=True)
    return 0


def _fresh_parts(path: Path | None, folder: str | None) -> dict[str, dict[str, Any]]:
    """The freshness of each part on ``folder`` from a ``--freshness`` file ({} without)."""
    if path is None or folder is None:
        return {}
    try:
        return json.loads(path.read_text())["folders"].get(folder, {})
    except (OSError, ValueError, KeyError, AttributeError) as err:
        raise SystemExit(f"--fresh-from {path}: not a --freshness file ({err})") from err


def main(argv: list[str] | None = None) -> int:
    """Probe the device, print the plan, run the parts, write, pack and (maybe) publish."""
    args = parser().parse_args(argv)
    if args.unpack is not None:
        return _unpack_main(args.unpack)
    mode = harness.mode_of(args)
    names = [p.name for p in PARTS if p.name in args.parts]
    if args.freshness is not None:
        return _freshness_main(args.freshness, names, mode)
    from jaxrl_pim import provenance

    run = provenance.RunRecord(None if argv is None else [__file__, *argv])
    if args.smoke and args.publish:
        print("--smoke results are never published", file=sys.stderr)
        return 2
    deadline_s = args.deadline_s or DEADLINE_S[mode]
    if deadline_s <= RESERVE_S:
        print(f"--deadline-s must exceed the {RESERVE_S:.0f} s kept to pack the results",
              file=sys.stderr)
        return 2
    deadline = _Deadline(deadline_s)
    signal.signal(signal.SIGTERM, _on_sigterm)
    env = dict(os.environ)
    env.setdefault("MPLBACKEND", "Agg")
    device = probe_device(env)
    accelerator = device["backend"] in ACCELERATORS
    if args.publish and not accelerator:
        print(f"refusing to publish: this host's backend is {device['backend']!r}, not a GPU "
              "or TPU (CPU numbers are never filed as accelerator numbers)", file=sys.stderr)
        return 2
    estimates = {p.name: p.estimate_s[mode] for p in PARTS}
    estimates.update(_overrides(args.estimate, "--estimate"))
    budgets = _overrides(args.budget, "--budget")  # checked before anything runs
    folder = harness.device_dir(device["backend"], device["device_kind"])
    if args.plan and args.fresh_from is not None and not accelerator:  # the development host
        for f in json.loads(args.fresh_from.read_text())["folders"]:
            rows = plan(mode, names, estimates, {} if args.force else
                        _fresh_parts(args.fresh_from, f))
            print_plan(rows, mode, device, deadline_s, folder=f)
        print("  (on any other device every part runs)", flush=True)
        return 0
    rows = plan(mode, names, estimates,
                {} if args.force else _fresh_parts(args.fresh_from, folder))
    print_plan(rows, mode, device, deadline_s, folder=folder)
    if args.plan:
        return 0
    if not accelerator and mode != "smoke":
        print("the GPU suite runs at full or --quick sizes only on a GPU / TPU; on this host "
              "use --smoke", file=sys.stderr)
        return 2
    stem = "gpu_suite" + MODE_SUFFIX[mode]
    out = args.out or harness.SCRATCH / f"gpu_suite-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}"
    out = Path(out).resolve()
    staged = out / "benchmarks" / "results" / folder
    path = staged / f"{stem}.json"
    if path.exists():
        print(f"{path} exists; choose another --out folder", file=sys.stderr)
        return 2
    staged.mkdir(parents=True, exist_ok=True)
    interrupted = False
    try:
        interrupted = run_parts(rows, mode, device, env, out, staged, deadline,
                                budgets)
    except Interrupted:  # between parts
        interrupted = True
        for r in rows:
            r.setdefault("status", "not started")
            r.setdefault("error", "the suite received SIGTERM")
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # writing and packing finish
    total = deadline.elapsed()
    config = {"mode": mode, "parts": names, "estimates_s": estimates,
              "budgets_s": budgets, "force": args.force,
              "plan_estimate_s": plan_total_s(rows), "deadline_s": deadline_s,
              "reserve_s": RESERVE_S, "publish": args.publish}
    results = {"device": device, "parts": rows, "total_s": total, "interrupted": interrupted}
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # the record's jax
    stored = harness.write(path, run=run, config=config, results=results,
                           timing_s={"total": total}, summarize=summarize,
                           markdown=render_markdown)
    _deliver(stored, out, staged, folder, stem, args)
    return 0 if all(r["status"] in ("ok", "fresh") for r in rows) else 1


def _deliver(stored: dict[str, Any], out: Path, staged: Path, folder: str, stem: str,
             args: argparse.Namespace) -> None:
    """Print the table, pack the archive (``--archive``) and publish (``--publish``)."""
    table = render_markdown(stored)
    print(table, flush=True)
    if args.archive is not None:
        archive = pack(out, args.archive.resolve(), folder, stem, table)
        problems = returned_file_problems(args.archive.resolve())
        print(f"packed {archive}" + ("" if not problems else
                                     "; the device tool would not return: " + "; ".join(problems)),
              flush=True)
    if args.publish:
        dest = harness.RESULTS / folder
        dest.mkdir(parents=True, exist_ok=True)
        for p in sorted(staged.iterdir()):
            shutil.copy2(p, dest / p.name)
        print(f"published {len(list(staged.iterdir()))} files into {dest}; run python "
              "benchmarks/make_docs.py and commit them", flush=True)


if __name__ == "__main__":
    sys.exit(main())
