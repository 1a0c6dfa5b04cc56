"""How much jax's persistent compilation cache saves the commands: the same command twice.

Each repeat starts with an empty cache folder of its own (``JAX_COMPILATION_CACHE_DIR``, the
command's default threshold of what is worth an entry) and runs, each in a fresh process as a
user's shell starts it: a short ``jaxrl-pim marl`` training run (spread, 3 agents, a few
episodes, with ``--checkpoint``), the same run again (into another folder), then ``jaxrl-pim
marl evaluate`` of the first run's checkpoint twice. Recorded per run: the wall seconds
(process start to exit), the programs read back from the cache and those compiled (jax's
``JAX_LOG_COMPILES`` lines: a cache hit is logged before its program's "Finished XLA
compilation" line) with their compile seconds.

    python benchmarks/cli_warm_start.py [--quick | --smoke] [--repeats N] [--out DIR]

Summary, per command (``train``, ``evaluate``): ``<cmd>_first_s_median`` /
``<cmd>_second_s_median`` (seconds), ``<cmd>_speedup_median`` and ``<cmd>_speedup_worst``
(first / second wall seconds: the median and the smallest over repeats),
``<cmd>_second_compile_s_worst`` (the most XLA compile seconds a second run spent),
``<cmd>_second_cache_hits_median`` and ``<cmd>_second_within_half`` (every repeat's second
run took at most half its first).
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as python benchmarks/<name>.py: the package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import harness

#: The training run (spread, 3 agents): a few episodes with update rounds, and its smoke size.
TRAIN = ["marl", "--env", "spread", "--agents", "3", "--episodes", "4", "--num-envs", "4",
         "--capacity", "4096", "--batch-size", "64", "--learning-starts", "200",
         "--no-progress", "--no-estimate"]
TRAIN_SMOKE = ["marl", "--env", "spread", "--agents", "3", "--episodes", "1", "--num-envs",
               "1", "--capacity", "64", "--batch-size", "8", "--learning-starts", "16",
               "--no-progress", "--no-estimate"]
EVALUATE = ["marl", "evaluate", "--episodes", "10"]
HIT = re.compile(r"Persistent compilation cache hit for '([^']+)'")
DONE = re.compile(r"Finished XLA compilation of (\S+) in ([\d.e+-]+) sec")


def sizes(mode: str) -> dict[str, Any]:
    """The commands timed and the repeats of a mode (``--smoke``: the training pair only)."""
    if mode == "smoke":
        return {"train": TRAIN_SMOKE, "commands": ["train"], "repeats": 1}
    return {"train": TRAIN, "commands": ["train", "evaluate"],
            "repeats": 2 if mode == "quick" else 5}


def compiles(log: str) -> dict[str, Any]:
    """The programs of one run's ``JAX_LOG_COMPILES`` output: read back from the cache
    (``hits``) and compiled (``compiled``: ``[name, seconds]``, longest first)."""
    hits, compiled, pending = 0, [], False
    for line in log.splitlines():
        if HIT.search(line):
            hits, pending = hits + 1, True
        elif m := DONE.search(line):
            if not pending:
                compiled.append([m.group(1), float(m.group(2))])
            pending = False
    compiled.sort(key=lambda c: -c[1])
    return {"hits": hits, "compiled": compiled,
            "compile_s": sum(s for _, s in compiled)}


def run_once(argv: list[str], cache: Path) -> dict[str, Any]:
    """One fresh ``python -m jaxrl_pim.cli`` process using ``cache``: wall seconds, exit
    status, its compiles (:func:`compiles`)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "JAXRL_PIM_COMPILE_CACHE")}
    env.update(JAX_COMPILATION_CACHE_DIR=str(cache), JAX_LOG_COMPILES="1")
    out: dict[str, Any] = {}

    def call() -> None:
        proc = subprocess.run([sys.executable, "-m", "jaxrl_pim.cli", *argv], env=env,
                              cwd=harness.ROOT, capture_output=True, text=True, timeout=900)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} exited with {proc.returncode}: "
                               f"{proc.stderr.strip().splitlines()[-1:]}")
        out.update(compiles(proc.stderr))

    out["seconds"] = harness.seconds(call)
    return out


def repeat(size: dict[str, Any], scratch: Path, i: int) -> dict[str, Any]:
    """One repeat: an empty cache folder, the training run twice, its checkpoint evaluated
    twice. Returns ``{command: [first run, second run]}``."""
    cache = scratch / f"cache-{i}"
    row: dict[str, Any] = {}
    runs = [scratch / f"run-{i}-{n}" for n in (1, 2)]
    row["train"] = [run_once([*size["train"], "--checkpoint", str(d)], cache) for d in runs]
    if "evaluate" in size["commands"]:
        row["evaluate"] = [run_once([*EVALUATE, "--checkpoint", str(runs[0])], cache)
                           for _ in (1, 2)]
    return row


def summarize(report_: dict[str, Any]) -> dict[str, Any]:
    """Headline numbers from the stored runs (see the module docstring)."""
    reps = report_["results"]["repeats"]
    summary: dict[str, Any] = {"mode": report_["config"]["mode"]}
    for cmd in report_["config"]["commands"]:
        pairs = [r[cmd] for r in reps]
        first = [p[0]["seconds"] for p in pairs]
        second = [p[1]["seconds"] for p in pairs]
        speedup = [a / b for a, b in zip(first, second, strict=True)]
        summary[f"{cmd}_first_s_median"] = statistics.median(first)
        summary[f"{cmd}_second_s_median"] = statistics.median(second)
        summary[f"{cmd}_speedup_median"] = statistics.median(speedup)
        summary[f"{cmd}_speedup_worst"] = min(speedup)
        summary[f"{cmd}_second_compile_s_worst"] = max(p[1]["compile_s"] for p in pairs)
        summary[f"{cmd}_second_cache_hits_median"] = statistics.median(
            p[1]["hits"] for p in pairs)
        summary[f"{cmd}_second_within_half"] = all(s <= 0.5 * f for f, s in
                                                   zip(first, second, strict=True))
    return summary


def render_markdown(report_: dict[str, Any]) -> str:
    """One row per command: first and second run (median, worst), speedup, compiles."""
    s, rows = report_["summary"], []
    for cmd in report_["config"]["commands"]:
        pairs = [r[cmd] for r in report_["results"]["repeats"]]
        slowest = max(pairs, key=lambda p: p[1]["compile_s"])[1]["compiled"][:2]
        rows.append((cmd, harness.fmt(s[f"{cmd}_first_s_median"]),
                     harness.fmt(max(p[0]["seconds"] for p in pairs)),
                     harness.fmt(s[f"{cmd}_second_s_median"]),
                     harness.fmt(max(p[1]["seconds"] for p in pairs)),
                     harness.fmt(s[f"{cmd}_speedup_median"]),
                     harness.fmt(s[f"{cmd}_speedup_worst"]),
                     harness.fmt(s[f"{cmd}_second_cache_hits_median"]),
                     harness.fmt(s[f"{cmd}_second_compile_s_worst"]),
                     ", ".join(f"{n} {t:.2f} s" for n, t in slowest) or "-"))
    return "\n".join([
        f"Wall seconds of fresh processes sharing an empty compilation cache, "
        f"{report_['config']['repeats']} repeats (median and worst); speedup = first / second "
        "(median and smallest); the second run's cache hits and compile seconds (worst), and "
        "its longest compiles.",
        "",
        *harness.md_table(["command", "first s", "first worst s", "second s",
                           "second worst s", "speedup", "speedup worst", "hits",
                           "compile s (2nd)", "longest compiles (2nd)"], rows),
        "",
    ])


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__)
    ap.add_argument("--repeats", type=int, default=None,
                    help="repeats, each with its own empty cache (default: 5; --quick 2; "
                         "--smoke 1)")
    args, run, mode = harness.start(ap, argv, __file__)
    size = sizes(mode)
    if args.repeats is not None:
        size["repeats"] = max(1, args.repeats)
    out = harness.output_path(args, "cli_warm_start")
    t0 = time.perf_counter()
    reps = []
    with tempfile.TemporaryDirectory(prefix="cli_warm_start_") as scratch:
        for i in range(size["repeats"]):
            row = repeat(size, Path(scratch), i)
            for cmd, (a, b) in row.items():
                print(f"repeat {i}: {cmd} first {a['seconds']:.2f} s, second "
                      f"{b['seconds']:.2f} s ({b['hits']} cache hits, {b['compile_s']:.2f} s "
                      "compiling)", flush=True)
            reps.append(row)
    config = {"mode": mode, "repeats": size["repeats"], "commands": size["commands"],
              "train": size["train"], "evaluate": EVALUATE, "python": sys.version.split()[0]}
    harness.write(out, run=run, config=config, results={"repeats": reps},
                  timing_s={"total": time.perf_counter() - t0}, summarize=summarize,
                  markdown=render_markdown, show=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
