"""How long the commands take to refuse bad input: cheap checks before jax is imported.

For each case -- a command line a user could mistype (a count of 0, an unknown environment
name, a checkpoint folder of another run: a tiny spread run's, made once by the script) --
``python -m jaxrl_pim.cli ...`` runs in a fresh process, as a user's shell starts it,
``--repeats`` times; the wall seconds of each run (process start to exit, interpreter start-up
included) are recorded with its exit status and the last line it printed to stderr, which must
name the flag. For scale, the same interpreter's start-up alone (``python -c pass``) and with
``import jax`` are timed the same way.

    python benchmarks/cli_refusal.py [--quick | --smoke] [--publish]

Summary: ``cli_refusal_s_median_<case>`` (the median over repeats, seconds),
``cli_refusal_s_worst_median`` (the slowest case's median), ``cli_refusal_within_1s`` (every
case's median under a second), ``cli_refusal_all_one_line`` (every case exits with status 2
and one error line naming its flag), and ``python_startup_s_median`` / ``import_jax_s_median``.
"""

from __future__ import annotations

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

#: case name -> (command line after ``python -m jaxrl_pim.cli``, the flag its error names)
CASES: dict[str, tuple[list[str], str]] = {
    "marl_episodes_0": (["marl", "--episodes", "0"], "--episodes"),
    "marl_evaluate_episodes_0": (["marl", "evaluate", "--checkpoint", ".", "--episodes", "0"],
                                 "--episodes"),
    "marl_unknown_jaxmarl_world": (["marl", "--env", "jaxmarl:MPE_no_such_world_v3"], "--env"),
    "tabular_episodes_0": (["tabular", "--episodes", "0"], "--episodes"),
    "actorq_actors_0": (["actorq", "--actors", "0"], "--actors"),
    "actorq_unknown_env": (["actorq", "--env", "NoSuchEnv-v9"], "--env"),
    "ptq_seeds_0": (["ptq", "--seeds", "0"], "--seeds"),
    "qat_delay_2": (["qat", "--delay", "2"], "--delay"),
    # {marl}: a spread run's checkpoint folder, made once by the script (MARL_RUN)
    "tabular_resume_marl_folder": (["tabular", "--checkpoint", "{marl}", "--resume"],
                                   "--checkpoint"),
    "marl_jaxmarl_resume_spread_folder": (["marl", "--env", "jaxmarl:MPE_simple_spread_v3",
                                           "--checkpoint", "{marl}", "--resume"],
                                          "--checkpoint"),
}
#: the run whose checkpoint folder the {marl} cases name (a tiny spread run, one episode)
MARL_RUN = ["marl", "--agents", "2", "--num-envs", "1", "--capacity", "32", "--batch-size", "8",
            "--learning-starts", "16", "--episodes", "1", "--no-progress", "--no-estimate"]
#: reference processes timed the same way
REFERENCES = {"python_startup": ["-c", "pass"], "import_jax": ["-c", "import jax"]}


def sizes(mode: str) -> dict[str, Any]:
    """Cases and repeats of a mode."""
    if mode == "smoke":
        return {"cases": ["marl_episodes_0"], "repeats": 1}
    return {"cases": list(CASES), "repeats": 3 if mode == "quick" else 7}


def run_once(args: list[str]) -> dict[str, Any]:
    """One fresh process: its wall seconds, exit status and stderr lines."""
    out: dict[str, Any] = {}

    def call() -> None:
        proc = subprocess.run([sys.executable, *args], capture_output=True, text=True,
                              timeout=300)
        out.update(returncode=proc.returncode,
                   stderr=[line for line in proc.stderr.splitlines() if line.strip()])

    out["seconds"] = harness.seconds(call)
    return out


def measure(name: str, args: list[str], repeats: int, flag: str | None) -> dict[str, Any]:
    """``repeats`` runs of one case (or reference when ``flag`` is None)."""
    runs = [run_once(args) for _ in range(repeats)]
    last = runs[-1]
    error = last["stderr"][-1] if last["stderr"] else ""
    row = {"case": name, "command": " ".join(["python", *args]),
           "seconds": [r["seconds"] for r in runs],
           "median_s": statistics.median(r["seconds"] for r in runs),
           "returncode": last["returncode"], "error": error}
    if flag is not None:
        errors = [line for line in last["stderr"] if "error" in line]
        row["one_line"] = (last["returncode"] == 2 and len(errors) == 1 and flag in errors[0])
    return row


def summarize(report_: dict[str, Any]) -> dict[str, Any]:
    """Headline numbers from the stored rows (see the module docstring)."""
    res = report_["results"]
    summary: dict[str, Any] = {"mode": report_["config"]["mode"]}
    for r in res["cases"]:
        summary[f"cli_refusal_s_median_{r['case']}"] = r["median_s"]
    worst = max(res["cases"], key=lambda r: r["median_s"])
    summary["cli_refusal_s_worst_median"] = worst["median_s"]
    summary["cli_refusal_worst_case"] = worst["case"]
    summary["cli_refusal_within_1s"] = all(r["median_s"] < 1.0 for r in res["cases"])
    summary["cli_refusal_all_one_line"] = all(r["one_line"] for r in res["cases"])
    for r in res["references"]:
        summary[f"{r['case']}_s_median"] = r["median_s"]
    return summary


def render_markdown(report_: dict[str, Any]) -> str:
    """One table: every case and reference, median and worst seconds, the error line."""
    res = report_["results"]
    rows = [(f"`{r['command']}`", harness.fmt(r["median_s"]), harness.fmt(max(r["seconds"])),
             r["returncode"], {True: "yes", False: "NO", None: "-"}[r.get("one_line")],
             r["error"][:90]) for r in [*res["cases"], *res["references"]]]
    return "\n".join([
        f"Wall seconds of a fresh process, {report_['config']['repeats']} runs each (median and "
        "worst), on this machine; the last two rows are the interpreter alone and with jax.",
        "",
        *harness.md_table(["command", "median s", "worst s", "exit", "one line naming the flag",
                           "last stderr line"], rows),
        "",
    ])


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__)
    args, run, mode = harness.start(ap, argv, __file__)
    size = sizes(mode)
    out = harness.output_path(args, "cli_refusal")
    t0 = time.perf_counter()
    cases = []
    scratch = tempfile.TemporaryDirectory(prefix="cli_refusal_")
    marl = str(Path(scratch.name) / "marl")
    if any("{marl}" in CASES[name][0] for name in size["cases"]):
        subprocess.run([sys.executable, "-m", "jaxrl_pim.cli", *MARL_RUN, "--checkpoint", marl],
                       cwd=harness.ROOT, check=True, capture_output=True, timeout=600)
    for name in size["cases"]:
        argv_, flag = CASES[name]
        argv_ = [a.replace("{marl}", marl) for a in argv_]
        row = measure(name, ["-m", "jaxrl_pim.cli", *argv_], size["repeats"], flag)
        print(f"{name}: median {row['median_s']:.2f} s, exit {row['returncode']}: "
              f"{row['error'][:80]}", flush=True)
        cases.append(row)
    scratch.cleanup()
    refs = [measure(name, a, size["repeats"], None) for name, a in REFERENCES.items()]
    config = {"mode": mode, "repeats": size["repeats"], "cases": size["cases"],
              "python": sys.version.split()[0]}
    harness.write(out, run=run, config=config, results={"cases": cases, "references": refs},
                  timing_s={"total": time.perf_counter() - t0}, summarize=summarize,
                  markdown=render_markdown, show=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
