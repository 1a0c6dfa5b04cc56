"""The batch interpreter of the benchmarks' smoke runs (:func:`tests.support.bench.run_batch`):
each script's ``main`` in its own folder, its output and exit status apart, a failing script
stopping none of the others."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import bench

SCRIPTS = {
    "ok": """
import os, sys
def main(argv):
    print("ok", argv[:2], os.path.basename(os.getcwd()), os.path.basename(sys.argv[0]))
    print("ok-err", file=sys.stderr)
    open("here", "w").close()
    return 0
""",
    "boom": """
def main(argv):
    print("before")
    raise ValueError("bad input")
""",
    "refuses": """
import sys
def main(argv):
    sys.exit("refused: one line")
""",
    "status": """
def main(argv):
    return 3
""",
    # runs last (the batch runs in name order), after the failures
    "zlast": """
def main(argv):
    print("zlast ran", "ok" in globals())
""",
}


def test_each_script_runs_apart_and_a_failure_stops_none(tmp_path: Path) -> None:
    pkg = tmp_path / "fakebench"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for stem, code in SCRIPTS.items():
        (pkg / f"{stem}.py").write_text(code)
    runs = bench.run_batch(SCRIPTS, tmp_path / "batch", root=tmp_path, package="fakebench")
    assert sorted(runs) == sorted(SCRIPTS)
    ok = runs["ok"]
    assert ok.returncode == 0
    assert ok.stdout == "ok ['--smoke', '--out'] ok ok.py\n" and ok.stderr == "ok-err\n"
    assert (tmp_path / "batch" / "ok" / "here").exists()  # its own folder
    assert ok.out == tmp_path / "batch" / "ok" / "out"
    assert ok.command[1:4] == [str(pkg / "ok.py"), "--smoke", "--out"]
    boom = runs["boom"]
    assert boom.returncode == 1 and boom.stdout == "before\n"
    assert "ValueError: bad input" in boom.stderr and "Traceback" in boom.stderr
    assert (runs["refuses"].returncode, runs["refuses"].stderr) == (1, "refused: one line\n")
    assert runs["status"].returncode == 3
    assert (runs["zlast"].returncode, runs["zlast"].stdout) == (0, "zlast ran False\n")


def test_a_crashed_interpreter_fails_the_scripts_it_did_not_reach(tmp_path: Path) -> None:
    pkg = tmp_path / "fakebench"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def main(argv):\n    print('a')\n")
    (pkg / "b.py").write_text("import os\ndef main(argv):\n    os._exit(7)\n")
    (pkg / "c.py").write_text("def main(argv):\n    print('c')\n")
    runs = bench.run_batch(["a", "b", "c"], tmp_path / "batch", root=tmp_path,
                           package="fakebench")
    assert (runs["a"].returncode, runs["a"].stdout) == (0, "a\n")
    assert runs["b"].returncode == runs["c"].returncode == 7


def test_scripts_that_need_their_own_interpreter_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="tabular_scaling"):
        bench.run_batch(["tabular_scaling", "pim_model"], tmp_path)
    assert bench.group("tabular_scaling") is None and bench.group("pim_model") == bench.BATCH
    assert bench.group("quant_inference") == bench.group("gpu_suite") == "smoke-gpu_suite"
