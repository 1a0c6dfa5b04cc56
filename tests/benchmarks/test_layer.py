"""The benchmarks' measurement layer (``benchmarks/harness.py``): its pieces against hand
computations, and a check that no benchmark script (nor any other module of the benchmarks,
such as a script's parts) writes its own mode switch, ``--budget-s`` clock, best-of timer,
copy-bandwidth probe or number formatter."""

from __future__ import annotations

import argparse
import ast
import time
from pathlib import Path

import numpy as np
import pytest

from benchmarks import harness, make_docs

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(p for p in (ROOT / "benchmarks").glob("*.py")
                 if p.name not in make_docs.NOT_BENCHMARKS)
#: every other module of the benchmarks (the scripts' parts beside them and in their packages,
#: the docs tool) but the layer itself and the opponents' runners (``peers/``: they run in the
#: opponents' own environments, without it)
MODULES = sorted(p for p in (ROOT / "benchmarks").rglob("*.py")
                 if p not in SCRIPTS and p.name != "harness.py"
                 and "peers" not in p.relative_to(ROOT / "benchmarks").parts)
#: names of what the layer provides; a script defining one writes its own
LAYER_NAMES = {"Budget", "best_of", "best_seconds", "_timed", "seconds", "copy_bandwidth",
               "_f", "_fmt", "fmt", "_ms", "_num", "mode_of", "md_table"}


def _own_pieces(tree: ast.AST) -> list[str]:
    """What a script's syntax tree writes itself that the layer provides."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if node.name in LAYER_NAMES:
                out.append(f"line {node.lineno}: defines {node.name}")
        if isinstance(node, ast.IfExp):  # "smoke" if args.smoke else ...
            src = ast.unparse(node.test)
            if src in ("args.smoke", "args.quick"):
                out.append(f"line {node.lineno}: a mode switch on {src}")
        if (isinstance(node, ast.Call) and ast.unparse(node.func) == "min"
                and "perf_counter" in ast.unparse(node)):
            out.append(f"line {node.lineno}: a best-of timer (min over perf_counter)")
        if isinstance(node, ast.Call) and ast.unparse(node.func).endswith("copyto"):
            out.append(f"line {node.lineno}: a copy probe (np.copyto)")
        if isinstance(node, ast.Compare) and "args.budget_s" in ast.unparse(node):
            out.append(f"line {node.lineno}: a --budget-s clock of its own")
    return out


@pytest.mark.parametrize("script", SCRIPTS + MODULES, ids=lambda p: p.relative_to(
    ROOT / "benchmarks").with_suffix("").as_posix())
def test_scripts_use_the_layer(script: Path) -> None:
    assert _own_pieces(ast.parse(script.read_text())) == []


def test_the_check_finds_what_it_looks_for() -> None:
    src = '''
mode = "smoke" if args.smoke else "full"
def _ms(x):
    return "-" if x is None else f"{x:.2f}"
best = float("inf")
for k in keys:
    t0 = time.perf_counter()
    call(k)
    best = min(best, time.perf_counter() - t0)
np.copyto(dst, src)
over = time.perf_counter() - t0 >= args.budget_s
'''
    found = _own_pieces(ast.parse(src))
    assert sorted(f.split(": ", 1)[1] for f in found) == [
        "a --budget-s clock of its own", "a best-of timer (min over perf_counter)",
        "a copy probe (np.copyto)", "a mode switch on args.smoke", "defines _ms"]


def test_mode_budget_and_format() -> None:
    ns = argparse.Namespace
    assert [harness.mode_of(ns(smoke=True, quick=False)), harness.mode_of(ns(quick=True)),
            harness.mode_of(ns())] == ["smoke", "quick", "full"]
    assert harness.Budget(None).left() == float("inf") and not harness.Budget(None).spent()
    assert harness.Budget(0.0).spent() and 0 < harness.Budget(60).left() <= 60
    assert [harness.fmt(None), harness.fmt(None, missing="-"), harness.fmt(True),
            harness.fmt(0.012345), harness.fmt(2.5e-3, ".2f", scale=1e3), harness.fmt("x")
            ] == ["", "-", "yes", "0.0123", "2.50", "x"]
    assert harness.md_table(["a", "b"], [[1, "2.0"]], align=["", ":"]) == [
        "| a | b |", "|---|---:|", "| 1 | 2.0 |"]


def test_timers_take_the_best_after_the_warm_up() -> None:
    calls = []

    def call(x: float) -> None:
        calls.append(x)
        time.sleep(x)

    best = harness.best_seconds(call, [0.05, 0.05, 0.03, 0.01, 0.02])
    assert calls == [0.05, 0.05, 0.03, 0.01, 0.02]  # two warm-ups, then each input once
    assert 0.01 <= best < 0.03
    assert 0.02 <= harness.seconds(lambda: time.sleep(0.02)) < 0.5
    with pytest.raises(ValueError, match="more than 2 inputs"):
        harness.best_seconds(call, [1, 2])


def test_copy_bandwidth_reports_bytes_moved_per_second() -> None:
    res = harness.copy_bandwidth(4 << 20, repeats=2)
    assert res["bytes"] == 4 << 20
    assert res["best_B_per_s"] == max(res["numpy_copyto_B_per_s"], res["xla_copy_B_per_s"])
    # read + write of 4 MiB in under a second on any machine this runs on
    assert res["numpy_copyto_B_per_s"] > 8 * (4 << 20) and np.isfinite(res["xla_copy_B_per_s"])


def test_a_publish_waits_for_an_idle_machine_and_gives_up_on_a_busy_one(monkeypatch) -> None:
    monkeypatch.delenv(harness.IDLE_LOAD_ENV, raising=False)
    assert harness.idle_load(2) == 0.5 and harness.idle_load(16) == 4.0
    loads, slept = iter([1.3, 0.9, 0.4]), []
    assert harness.wait_until_idle(0.5, 60, lambda: next(loads), slept.append, 5) == 0.4
    assert slept == [5, 5]  # polled until the load fell below the bound
    with pytest.raises(SystemExit, match="not published: the 1-minute load stayed"):
        harness.wait_until_idle(0.5, 10, lambda: 0.8, slept.append, 5)
    monkeypatch.setenv(harness.IDLE_LOAD_ENV, "off")  # the bound turned off: no wait
    assert harness.wait_until_idle(load=lambda: 9.0, sleep=slept.append) == 9.0
    monkeypatch.setenv(harness.IDLE_LOAD_ENV, "10")
    assert harness.wait_until_idle(load=lambda: 9.0, sleep=slept.append) == 9.0
    assert slept == [5, 5, 5, 5]
    # only a publishing run waits: --out records the load as it is
    busy = argparse.Namespace(publish=False)
    monkeypatch.setenv(harness.IDLE_LOAD_ENV, "0")
    assert harness.record(busy).load_average_start is not None
