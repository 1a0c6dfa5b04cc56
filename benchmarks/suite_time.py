"""Wall time of the project's own test suite, the command CI runs (``.ci/run``: ``pytest -q``).

Runs the suite once in a child process (``python -m pytest -q``, the ``pyproject.toml``
options: its xdist workers) with a JUnit XML report, and records its wall time, the CPU time
of the children, the test counts, each test's duration and the sum per test file. Time it on
an idle machine: the run record holds the load average at the start.

    python benchmarks/suite_time.py [--publish]   # the whole suite (about 13 minutes on 2 cores)
    python benchmarks/suite_time.py --quick       # the top-level tests/test_*.py files
    python benchmarks/suite_time.py --smoke       # two small test files in one process

Summary: ``suite_wall_s`` (wall seconds of the run), ``suite_tests``, ``suite_failed``
(failures + errors), ``within_10_min`` (wall time <= 600 s), ``within_8_min`` (wall time
<= 480 s, the project's limit for the suite), ``slowest_30_s`` (sum of the 30
longest test durations, worker-seconds), ``test_seconds`` (sum of all test durations).
"""

from __future__ import annotations

import resource
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as python benchmarks/<name>.py: the package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks import harness

ROOT = Path(__file__).resolve().parents[1]
TARGET_S = 480.0  # the project's limit for the whole suite (seconds)
BUDGET_S = 600.0
#: pytest arguments of each mode (the full mode is the README's test command)
ARGS = {
    "full": [],
    "quick": sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests").glob("test_*.py")),
    "smoke": ["-n", "0", "tests/test_layout.py", "tests/test_timing.py"],
}


def junit_tests(path: Path) -> list[dict[str, Any]]:
    """One row per test case of a JUnit XML report: id, file, seconds, outcome."""
    rows = []
    for case in ET.parse(path).getroot().iter("testcase"):
        outcome = "passed"
        for tag in ("failure", "error", "skipped"):
            if case.find(tag) is not None:
                outcome = {"failure": "failed", "error": "error", "skipped": "skipped"}[tag]
        file = case.get("file") or case.get("classname", "").replace(".", "/") + ".py"
        rows.append({"id": f"{case.get('classname')}::{case.get('name')}", "file": file,
                     "seconds": float(case.get("time", 0.0)), "outcome": outcome})
    return rows


def summarize(report: dict[str, Any]) -> dict[str, Any]:
    """Headline numbers from the stored records (see the module docstring)."""
    res = report["results"]
    tests = res["tests"]
    seconds = sorted((t["seconds"] for t in tests), reverse=True)
    return {
        "mode": report["config"]["mode"],
        "suite_wall_s": res["wall_s"],
        "suite_tests": len(tests),
        "suite_failed": sum(t["outcome"] in ("failed", "error") for t in tests),
        "within_10_min": res["wall_s"] <= BUDGET_S,
        "within_8_min": res["wall_s"] <= TARGET_S,
        "slowest_30_s": sum(seconds[:30]),
        "test_seconds": sum(seconds),
    }


def render_markdown(report: dict[str, Any]) -> str:
    """The run's figures, the slowest 30 tests and the seconds per test file."""
    s, res = report["summary"], report["results"]
    lines = [
        "`" + " ".join(["python -m pytest -q", *report["config"]["pytest_args"]]) + "`",
        f"exit status {res['returncode']}: {s['suite_tests']} tests, {s['suite_failed']} "
        f"failed, {s['suite_wall_s']:.0f} s wall (budget {BUDGET_S:.0f} s), children's CPU "
        f"{res['children_cpu_s']:.0f} s; test durations sum to {s['test_seconds']:.0f} "
        f"worker-seconds, the slowest 30 to {s['slowest_30_s']:.0f}.",
        "",
        "| slowest tests | s |",
        "|---|---:|",
    ]
    for t in sorted(res["tests"], key=lambda t: -t["seconds"])[:30]:
        lines.append(f"| `{t['id']}` | {t['seconds']:.1f} |")
    per_file: dict[str, float] = defaultdict(float)
    for t in res["tests"]:
        per_file[t["file"]] += t["seconds"]
    lines += ["", "| test file | s |", "|---|---:|"]
    for file, sec in sorted(per_file.items(), key=lambda kv: -kv[1])[:20]:
        lines.append(f"| `{file}` | {sec:.1f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = harness.parser(__doc__).parse_args(argv)
    run_record = harness.record(args)
    mode = harness.mode_of(args)
    out = harness.output_path(args, "suite_time")
    with tempfile.TemporaryDirectory(prefix="suite_time_") as tmp:
        xml = Path(tmp) / "junit.xml"
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
               f"--junitxml={xml}", *ARGS[mode]]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, cwd=ROOT)
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if not xml.exists():
            print(f"pytest wrote no report (exit status {proc.returncode})", file=sys.stderr)
            return 1
        tests = junit_tests(xml)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    print(f"{len(tests)} tests in {wall:.0f} s (exit status {proc.returncode})", flush=True)
    harness.write(out, run=run_record, config={"mode": mode, "pytest_args": ARGS[mode]},
                  results={"returncode": proc.returncode, "wall_s": wall,
                           "children_cpu_s": cpu, "tests": tests},
                  timing_s={"total": wall}, summarize=summarize, markdown=render_markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
