"""Every accelerator number from one lease-sized call: the GPU parts of the benchmarks, by priority.

    python benchmarks/gpu_suite.py --archive DIR          # on one H100 / H200: at most 8 minutes
    python benchmarks/gpu_suite.py --plan                 # the plan and its estimates, any host
    python benchmarks/gpu_suite.py --smoke --archive DIR  # any host, test sizes (the rehearsal)
    python benchmarks/gpu_suite.py --unpack ARCHIVE       # on the development machine: file it

The call is made for a borrowed machine: a bare GPU host, one command of at most 10 minutes,
at most 8 files back. ``benchmarks/gpu_prepare.sh`` prints the one command that installs the
wheels the device lacks and runs this suite there (docs/guide/reproduce-a-benchmark.md).

Parts, each one benchmark script in its own subprocess, in priority order (what the call
reaches first is what matters most):

====  ==================  ==================================================================
tier  part                what it measures on the device (script and options)
====  ==================  ==================================================================
1     ``tabular``         FrozenLake 2,000 lanes, the 12 variants (worst and median), 2,000
                          independent agents, ns per dependent step against the floor
                          estimate (``tabular_gpu.py --sections frozenlake multiagent``)
2     ``marl_e2e``        MADDPG seconds per 1,000 episodes on the paper's schedule at N = 3,
                          24, 48 spread, default layout, faithful sampling, 1e6-row buffers
                          where memory allows (``marl_gpu.py --parts scaling``)
2     ``marl_profile``    MADDPG phase shares at 48 agents (``marl_profile.py --sizes 48``)
3     ``marl_sampling``   the sampler round at N = 24 against the device's measured copy
                          bandwidth (``marl_sampling.py --agents 24``)
4     ``marl_seeds``      MADDPG seeds per hour at N = 3: 64 seeds vmapped in one program
                          against the same 64 one after another (``marl_seeds.py --agents 3
                          --seeds 1 64``)
5     ``quant``           actor inference fp32 / bf16 / int8 at batch 1 and 1,024 at the
                          ActorQ sizes (``quant_inference.py``)
6     ``tabular_sweep``   lanes per program x prefetch depth (``tabular_gpu_sweep.json``)
6     ``marl_schedule``   the 60k-episode spread-3 schedule (``marl_gpu_schedule.json``)
====  ==================  ==================================================================

Tiers 5 and 6 are extras: the plan's estimate (the seconds each part took on an H200 where
one has run it) fits tiers 1 to 4 into the deadline; an extra runs when the parts before it
finish ahead of their estimates, or in a call of its own (``--parts quant tabular_sweep
marl_schedule``).

One deadline governs the call (``--deadline-s``, 480 s at full sizes, compiles included). A
part starts only when its estimate fits the time left (otherwise it is recorded as skipped);
it runs with its script's ``--budget-s`` at a share of its time, so the script stops starting
new work and writes its file in time, and it is stopped at the deadline if it is still
running. Each part writes into a folder of its own; only a part that ended cleanly has its
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
:func:`jaxrl_pim.report.passed_in_source_state`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import threading
import time
from pathlib import Path
from typing import Any, NamedTuple

if __package__ in (None, ""):  # run as python benchmarks/<name>.py: the package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks import harness

#: Seconds of one full call on one H100 / H200, compiles included (the lease's command limit
#: is 10 minutes; the rest is the install and the machine's own start).
DEADLINE_S = {"full": 480.0, "quick": 480.0, "smoke": 240.0}
#: Seconds kept back from the deadline to write the suite's file and pack the archive.
RESERVE_S = 15.0
#: The device tool returns at most this many files from ``--archive``, named in these
#: characters, at most this many folders down.
MAX_RETURNED_FILES = 8
RETURNED_NAME = re.compile(r"^[A-Za-z0-9._-]+$")
MAX_RETURNED_DEPTH = 2
ACCELERATORS = ("gpu", "cuda", "rocm", "tpu")
MODE_SUFFIX = {"full": "", "quick": "_quick", "smoke": "_smoke"}


class Part(NamedTuple):
    """One part: its tier, the script it runs with which options, and its time.

    ``estimate_s`` is the estimated wall time per mode (seconds, compile included);
    ``budget_share`` is the share of the part's time passed to the script as ``--budget-s``
    (None: the script takes none); ``args`` are options beyond ``--out`` and the size flag,
    per mode."""

    name: str
    tier: int
    script: str
    stem: str
    args: dict[str, list[str]]
    estimate_s: dict[str, float]
    budget_share: float | None
    doc: str


def _same(args: list[str]) -> dict[str, list[str]]:
    return {"full": args, "quick": args, "smoke": args}


PARTS: tuple[Part, ...] = (
    Part("tabular", 1, "tabular_gpu.py", "tabular_gpu",
         _same(["--sections", "frozenlake", "multiagent"]),
         {"full": 96, "quick": 60, "smoke": 20}, 0.8,
         "FrozenLake 2,000 lanes x 12 variants, 2,000 agents, ns per step vs floor"),
    Part("marl_e2e", 2, "marl_gpu.py", "marl_gpu",
         {"full": ["--parts", "scaling", "--agents", "3", "24", "48", "--layouts",
                   "interleaved", "--modes", "faithful"],
          "quick": ["--parts", "scaling", "--agents", "3", "24", "--layouts", "interleaved",
                    "--modes", "faithful"],
          "smoke": ["--parts", "scaling", "--agents", "3"]},
         {"full": 62, "quick": 60, "smoke": 20}, 0.8,
         "MADDPG s per 1,000 episodes, spread N = 3, 24, 48, default layout, faithful"),
    Part("marl_profile", 2, "marl_profile.py", "marl_profile",
         {"full": ["--sizes", "48"], "quick": ["--sizes", "24"], "smoke": []},
         # its --budget-s (0.4 x twice the estimate) stops new sizes; the one running ends
         {"full": 95, "quick": 40, "smoke": 20}, 0.4,
         "MADDPG phase shares at 48 agents, 1e6-row buffers where they fit"),
    Part("marl_sampling", 3, "marl_sampling.py", "marl_sampling",
         {"full": ["--agents", "24"], "quick": ["--agents", "24"], "smoke": []},
         # one size: --budget-s cannot cut it; filling the original's 1e6-row buffers of
         # Python objects is 44 s of the 156 s on an H200
         {"full": 157, "quick": 40, "smoke": 20}, 0.6,
         "the sampler round at N = 24 against the measured copy bandwidth"),
    Part("marl_seeds", 4, "marl_seeds.py", "marl_seeds",
         {"full": ["--agents", "3", "--seeds", "1", "64", "--episodes", "100", "--repeats",
                   "1"],
          "quick": ["--agents", "3", "--seeds", "1", "64", "--episodes", "100", "--repeats",
                    "1"],
          "smoke": []},
         {"full": 60, "quick": 60, "smoke": 20}, None,
         "MADDPG seeds per hour at N = 3: 64 seeds vmapped against one after another"),
    Part("quant", 5, "quant_inference.py", "quant_inference",
         {"full": ["--precisions", "fp32", "bf16", "int8", "--batches", "1", "1024"],
          "quick": ["--precisions", "fp32", "bf16", "int8", "--batches", "1", "1024"],
          "smoke": ["--precisions", "fp32", "int8"]},
         {"full": 41, "quick": 30, "smoke": 15}, None,
         "actor inference fp32 / bf16 / int8, batch 1 and 1,024"),
    Part("tabular_sweep", 6, "tabular_gpu.py", "tabular_gpu_sweep",
         _same(["--sections", "sweep", "--file-tag", "sweep"]),
         # an estimate: the full grid did not finish inside a 220-s call on an H200
         {"full": 260, "quick": 40, "smoke": 20}, 0.8,
         "lanes per program x prefetch depth (the device's best settings)"),
    Part("marl_schedule", 6, "marl_gpu.py", "marl_gpu_schedule",
         _same(["--parts", "schedule", "--schedule-envs", "spread", "--file-tag", "schedule"]),
         {"full": 60, "quick": 40, "smoke": 20}, 0.85,
         "MADDPG spread-3 over the 60,000-episode schedule"),
)
BY_NAME = {p.name: p for p in PARTS}
#: Seconds the suite itself needs around the parts (device probe, writing, packing): an
#: estimate, like the parts' (3 s beyond the parts on an H200).
OVERHEAD_S = 10

PROBE = """
import json, jax
d = jax.devices()[0]
stats = getattr(d, "memory_stats", lambda: None)() or {}
print(json.dumps({"backend": jax.default_backend(), "device_kind": d.device_kind,
                  "device_count": len(jax.devices()), "jax": jax.__version__,
                  "bytes_limit": stats.get("bytes_limit")}))
"""

#: Summary keys shown in the closing table, per part (regular expressions over the part's
#: summary keys).
HEADLINE_KEYS: dict[str, str] = {
    "tabular": r"^gpu_(frozenlake_2000_lanes_s(_median)?|multiagent_2000_s"
               r"|frozenlake_ns_per_dependent_step_worst|frozenlake_worst_over_floor_estimate)$",
    "marl_e2e": r"^spread\d+_interleaved_faithful_s_per_1000_episodes$",
    "marl_profile": r"^estimated_sampling_share_",
    "marl_sampling": r"_fraction_of_copy_bw_24$",
    "quant": r"^(int8|bf16)_speedup_vs_fp32_paper_b\d+$",
    "tabular_sweep": r"^sweep_best_(lanes_per_block|prefetch)$",
    "marl_seeds": r"^marl_seeds_per_hour_(speedup_)?vmapped_\d+_3$",
    "marl_schedule": r"^spread3_(schedule_s|s_per_1000_episodes_full_schedule)$",
}


class Interrupted(Exception):
    """SIGTERM reached the suite: pack what finished and stop."""


def probe_device(env: dict[str, str], timeout_s: float = 300) -> dict[str, Any]:
    """Backend, device kind and count, jax version and the memory limit, from a subprocess
    (the suite's own process holds no device memory while the parts run)."""
    proc = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True,
                          text=True, timeout=timeout_s)
    if proc.returncode != 0:
        raise RuntimeError("device probe failed: " + proc.stderr.strip()[-500:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def part_args(part: Part, mode: str, device: dict[str, Any], budget_s: float) -> list[str]:
    """Options of a part's script beyond ``--out`` and the size flag; ``budget_s`` is the
    time the part may take (seconds)."""
    args = list(part.args[mode])
    if part.budget_share is not None:
        args += ["--budget-s", f"{max(1.0, part.budget_share * budget_s):.0f}"]
    if part.name == "marl_profile" and mode != "smoke" and device.get("bytes_limit"):
        # the profiler holds the state and a filled copy: a third of the device each
        args += ["--budget-gib", f"{0.3 * device['bytes_limit'] / 2**30:.1f}"]
    return args


def plan(mode: str, names: list[str], estimates: dict[str, float]) -> list[dict[str, Any]]:
    """The parts to run, in priority order, with their tier and estimated time (seconds)."""
    return [{"part": n, "tier": BY_NAME[n].tier, "script": f"benchmarks/{BY_NAME[n].script}",
             "stem": BY_NAME[n].stem + MODE_SUFFIX[mode], "estimate_s": estimates[n],
             "measures": BY_NAME[n].doc} for n in names]


#: Parts of this tier and above are extras: the plan's estimate need not fit them; they run
#: when the parts before them finish ahead of their estimates.
EXTRA_TIER = 5


def plan_total_s(rows: list[dict[str, Any]], *, extras: bool = True) -> float:
    """The plan's estimated seconds: every part (without the extras' unless ``extras``) and
    the suite's own overhead."""
    return sum(r["estimate_s"] for r in rows
               if extras or r["tier"] < EXTRA_TIER) + OVERHEAD_S


def print_plan(rows: list[dict[str, Any]], mode: str, device: dict[str, Any],
               deadline_s: float) -> None:
    """The plan, before anything runs."""
    print(f"GPU suite plan ({mode} sizes) on {device['backend']}: {device['device_count']} x "
          f"{device['device_kind']} (jax {device['jax']}); deadline {deadline_s:.0f} s",
          flush=True)
    for r in rows:
        print(f"  tier {r['tier']} {r['part']:<14} {r['script']:<30} "
              f"~{r['estimate_s']:4.0f} s (estimate): {r['measures']}", flush=True)
    print(f"  estimated {plan_total_s(rows, extras=False):.0f} s with {OVERHEAD_S} s of "
          f"overhead, {plan_total_s(rows):.0f} s with the extras (tier {EXTRA_TIER}) "
          f"(estimates, not measurements)", flush=True)


def _pump(stream: Any, log: Any, prefix: str) -> None:
    for line in stream:
        log.write(line)
        log.flush()
        sys.stdout.write(f"[{prefix}] {line}")
        sys.stdout.flush()


def _stop(proc: subprocess.Popen[str]) -> None:
    """SIGTERM to the process group, SIGKILL after 10 s."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def run_part(cmd: list[str], env: dict[str, str], budget_s: float, log_path: Path,
                name: str) -> dict[str, Any]:
    """Run one part's command for at most ``budget_s`` seconds; ``{status, returncode,
    seconds, error}`` with status ``ok``, ``failed``, ``stopped at the deadline`` or (when
    SIGTERM interrupts the suite: :class:`Interrupted` is re-raised after the part is
    stopped and its row filled into ``Interrupted.args[0]``) ``interrupted``.

    A part past its time has its process group (the process started here and its children)
    sent SIGTERM, then SIGKILL after 10 s."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    with log_path.open("w") as log:
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, start_new_session=True)
        pump = threading.Thread(target=_pump, args=(proc.stdout, log, name), daemon=True)
        pump.start()
        timed_out = False
        try:
            proc.wait(timeout=max(budget_s, 0.1))
        except subprocess.TimeoutExpired:
            timed_out = True
            _stop(proc)
        except Interrupted:
            _stop(proc)
            pump.join(timeout=10)
            raise Interrupted({"status": "interrupted", "returncode": proc.returncode,
                               "seconds": time.perf_counter() - t0,
                               "error": "the suite received SIGTERM while it ran"}) from None
        pump.join(timeout=10)
    seconds = time.perf_counter() - t0
    out: dict[str, Any] = {"returncode": proc.returncode, "seconds": seconds, "error": None}
    if timed_out:
        out.update(status="stopped at the deadline",
                   error=f"stopped after the {budget_s:.0f} s left to it")
    elif proc.returncode != 0:
        tail = [ln for ln in log_path.read_text().splitlines() if ln.strip()][-3:]
        out.update(status="failed", error=f"exit status {proc.returncode}: "
                   + " | ".join(tail)[-400:])
    else:
        out["status"] = "ok"
    return out


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
                         for r in rows if r["status"] != "ok"},
        "interrupted": res["interrupted"],
    }
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


def returned_file_problems(folder: Path) -> list[str]:
    """What the device tool would not bring back from ``folder``: more than
    :data:`MAX_RETURNED_FILES` files, a name outside letters, digits, ``.``, ``_`` and ``-``,
    a file more than :data:`MAX_RETURNED_DEPTH` folders down, or anything but a plain file
    or folder."""
    out, files = [], []
    for p in sorted(folder.rglob("*")):
        rel = p.relative_to(folder)
        if any(not RETURNED_NAME.match(part) for part in rel.parts):
            out.append(f"{rel}: a name outside [A-Za-z0-9._-]")
        if p.is_symlink() or not (p.is_file() or p.is_dir()):
            out.append(f"{rel}: not a plain file or folder")
        elif p.is_file():
            files.append(rel)
            if len(rel.parts) - 1 > MAX_RETURNED_DEPTH:
                out.append(f"{rel}: more than {MAX_RETURNED_DEPTH} folders down")
    if len(files) > MAX_RETURNED_FILES:
        out.append(f"{len(files)} files, more than {MAX_RETURNED_FILES}")
    return out


def pack(out: Path, archive_dir: Path, device_folder: str, stem: str, table: str) -> Path:
    """One archive ``<stem>-<device>.tar.gz`` in ``archive_dir`` holding the filed results
    (``benchmarks/results/<device>/``) and the logs under ``out``, and the summary table
    beside it (``<stem>-<device>.md``): two files."""
    archive_dir.mkdir(parents=True, exist_ok=True)
    path = archive_dir / f"{stem}-{device_folder}.tar.gz"
    tmp = path.with_name(path.name + ".tmp")
    with tarfile.open(tmp, "w:gz") as tar:
        for sub in ("benchmarks", "logs"):
            if (out / sub).exists():
                tar.add(out / sub, arcname=sub)
    os.replace(tmp, path)
    path.with_name(f"{stem}-{device_folder}.md").write_text(table)
    return path


def unpack(archive: Path, root: Path = harness.ROOT) -> list[Path]:
    """File a returned archive's results into ``root/benchmarks/results/<device>/`` exactly as
    the device wrote them (bytes unchanged; files of the same name are replaced). Refuses
    (ValueError) members outside ``benchmarks/results/<device>/``, a ``cpu`` folder and
    ``_smoke`` files: only an accelerator's full or quick results are filed."""
    written = []
    with tarfile.open(archive, "r:gz") as tar:
        members = [m for m in tar.getmembers() if m.isfile()]
        chosen = []
        for m in members:
            parts = Path(m.name).parts
            if parts[:1] == ("logs",):
                continue
            if (len(parts) != 4 or parts[:2] != ("benchmarks", "results") or ".." in parts
                    or not RETURNED_NAME.match(parts[2]) or not RETURNED_NAME.match(parts[3])):
                raise ValueError(f"{archive}: member {m.name!r} is not a results file under "
                                 "benchmarks/results/<device>/")
            if parts[2] == "cpu":
                raise ValueError(f"{archive}: holds CPU results ({m.name}); the GPU suite "
                                 "files only accelerator numbers")
            if "_smoke" in parts[3]:
                raise ValueError(f"{archive}: holds a --smoke file ({m.name}); test sizes "
                                 "are never filed")
            chosen.append((m, root.joinpath(*parts)))
        if not chosen:
            raise ValueError(f"{archive}: no results files under benchmarks/results/<device>/")
        for m, dest in chosen:
            dest.parent.mkdir(parents=True, exist_ok=True)
            data = tar.extractfile(m)
            assert data is not None
            tmp = dest.with_name(dest.name + ".tmp")
            tmp.write_bytes(data.read())
            os.replace(tmp, dest)
            written.append(dest)
    return written


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
    for i, row in enumerate(rows):
        part = BY_NAME[row["part"]]
        left = deadline.left()
        row.update(files=[], headline={}, seconds=None)
        if row["estimate_s"] > left:
            row.update(status="skipped", error=f"estimated {row['estimate_s']:.0f} s, "
                       f"{max(left, 0):.0f} s left before the deadline")
            print(f"== {part.name}: skipped ({row['error']})", flush=True)
            continue
        work = out / "work" / part.name
        work.mkdir(parents=True, exist_ok=True)
        limit = min(left, budgets.get(part.name, left))
        cmd = [sys.executable, str(here / part.script), *size_flag, "--out", str(work),
               *part_args(part, mode, device, min(limit, 2 * row["estimate_s"]))]
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


def main(argv: list[str] | None = None) -> int:
    """Probe the device, print the plan, run the parts, write, pack and (maybe) publish."""
    args = parser().parse_args(argv)
    if args.unpack is not None:
        try:
            written = unpack(args.unpack)
        except (OSError, ValueError, tarfile.TarError) as err:
            print(f"gpu_suite --unpack: {err}", file=sys.stderr)
            return 2
        for p in written:
            print(f"filed {p.relative_to(harness.ROOT)}")
        print("now: python benchmarks/make_docs.py, then commit these files unchanged")
        return 0
    from jaxrl_pim import report

    run = report.RunRecord(None if argv is None else [__file__, *argv])
    mode = harness.mode_of(args)
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
    names = [p.name for p in PARTS if p.name in args.parts]
    estimates = {p.name: p.estimate_s[mode] for p in PARTS}
    estimates.update(_overrides(args.estimate, "--estimate"))
    budgets = _overrides(args.budget, "--budget")  # checked before anything runs
    rows = plan(mode, names, estimates)
    print_plan(rows, mode, device, deadline_s)
    if args.plan:
        return 0
    if not accelerator and mode != "smoke":
        print("the GPU suite runs at full or --quick sizes only on a GPU / TPU; on this host "
              "use --smoke", file=sys.stderr)
        return 2
    stem = "gpu_suite" + MODE_SUFFIX[mode]
    out = args.out or harness.SCRATCH / f"gpu_suite-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}"
    out = Path(out).resolve()
    folder = harness.device_dir(device["backend"], device["device_kind"])
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
              "budgets_s": budgets,
              "plan_estimate_s": plan_total_s(rows), "deadline_s": deadline_s,
              "reserve_s": RESERVE_S, "publish": args.publish}
    results = {"device": device, "parts": rows, "total_s": total, "interrupted": interrupted}
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # the record's jax
    stored = harness.write(path, run=run, config=config, results=results,
                           timing_s={"total": total}, summarize=summarize,
                           markdown=render_markdown)
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
    return 0 if all(r["status"] == "ok" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
