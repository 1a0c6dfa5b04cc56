"""The provenance contract: every benchmark script writes checked results files, and
``benchmarks/make_docs.py`` fills generated blocks and catches what breaks the contract.

The smoke tests check each script in ``benchmarks/`` (found automatically) run with ``--smoke
--out <tmp>``, once per session for every test of that command (the ``smoke_run`` fixture,
:mod:`tests.support.bench`: most scripts one after another in one interpreter, a few in an
interpreter of their own); the unit tests build a small fake
repository (a script, a results file, docs pages) in a temporary folder and break it one way
at a time.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import make_docs
from benchmarks.docs import blocks, prose
from benchmarks.docs import results as docs_results
from jaxrl_pim import provenance, report, results_file
from tests.support import bench, script_env

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(p for p in (ROOT / "benchmarks").glob("*.py")
                 if p.name not in make_docs.NOT_BENCHMARKS)
#: scripts whose smoke run starts a local Ray: on the xdist worker of the other Ray tests
STARTS_RAY = {"actorq_speedup"}
#: scripts that run other scripts (one results file each, plus their own): their smoke runs
#: are tested in their own module (test_gpu_suite.py), each section's script here
ORCHESTRATORS = {"gpu_suite"}


def _planted_edit(data: dict) -> tuple[dict, str]:
    """A copy of a report with one summary value changed by hand, and that key."""
    edited = copy.deepcopy(data)
    summary = edited["summary"]
    key = next((k for k, v in summary.items()
                if isinstance(v, int | float) and not isinstance(v, bool)), next(iter(summary)))
    value = summary[key]
    summary[key] = (value * 1.01 + 1) if isinstance(value, int | float) else f"{value}, edited"
    return edited, key


def test_scripts_are_discovered() -> None:
    names = {p.stem for p in SCRIPTS}
    assert {"tabular_quality", "marl_profile", "marl_e2e", "quant_ptq"} <= names
    assert not names & {"harness", "make_docs", "pim_published"}


#: Runs every script's ``--help`` in one interpreter (one jax import for all of them): each
#: exit status and the help text, as JSON on the last line.
HELP_CODE = """
import contextlib, io, json, runpy, sys
sys.path.insert(0, BENCHMARKS)
shown = {}
for script in SCRIPTS:
    sys.argv = [script, "--help"]
    buf = io.StringIO()
    code = None
    with contextlib.redirect_stdout(buf):
        try:
            runpy.run_path(script, run_name="__main__")
        except SystemExit as stop:
            code = stop.code
    shown[script] = [code, buf.getvalue()]
print(json.dumps(shown))
"""


def test_every_script_prints_help_and_writes_nothing(tmp_path: Path) -> None:
    code = (HELP_CODE.replace("BENCHMARKS", repr(str(ROOT / "benchmarks")))
            .replace("SCRIPTS", repr([str(p) for p in SCRIPTS])))
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=script_env(),
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    shown = json.loads(proc.stdout.strip().splitlines()[-1])
    assert sorted(shown) == sorted(str(p) for p in SCRIPTS)
    for script, (status, text) in shown.items():
        name = Path(script).name
        assert status in (0, None), f"{name} --help exited with {status}"
        for option in ("--smoke", "--quick", "--out", "--publish"):
            assert option in text, f"{name} --help does not show {option}"
    assert not any(tmp_path.iterdir()), "--help wrote files"


def _smoke_marks(stem: str) -> list[pytest.MarkDecorator]:
    """The Ray scripts on the Ray tests' worker; a smoke run shared with other tests on the
    worker of those tests (:func:`tests.support.bench.group`); the batched runs early (the
    first of their tests runs the batch)."""
    shared = bench.group(stem)
    if stem in STARTS_RAY:
        return [pytest.mark.xdist_group("ray")]
    if shared == bench.BATCH:
        return [pytest.mark.xdist_group(shared), pytest.mark.slow]
    return [pytest.mark.xdist_group(shared)] if shared else []


@pytest.mark.parametrize("script", [pytest.param(p, marks=_smoke_marks(p.stem))
                                    for p in SCRIPTS if p.stem not in ORCHESTRATORS],
                         ids=lambda p: p.stem)
def test_script_smoke_run_writes_a_checked_results_file(script: Path, tmp_path: Path,
                                                         smoke_run) -> None:
    run = smoke_run(script.stem)
    assert run.returncode == 0, f"{script.name} --smoke failed:\n{run.stdout[-3000:]}\n" \
                                f"{run.stderr[-5000:]}"
    out = run.copy_out(tmp_path / "out")  # the planted edits below change the files
    files = sorted(out.glob("*.json"))
    assert files, f"{script.name} --smoke wrote no results file in {run.out}"
    for path in files:
        assert path.name == f"{script.stem}_smoke.json", f"unexpected results file {path.name}"
        data = json.loads(path.read_text())
        assert data["system"]["script"] == f"benchmarks/{script.name}"
        assert make_docs.check_results_file(path, ROOT, committed=False) == []
        edited, key = _planted_edit(data)
        path.write_text(json.dumps(edited))
        problems = make_docs.check_results_file(path, ROOT, committed=False)
        assert any(f"summary.{key}:" in p for p in problems), problems
    # published-file rules: a smoke file from a working tree is never publishable
    assert any("--smoke file" in p
               for p in make_docs.check_results_file(files[0], ROOT, committed=True))


def test_committed_tree_passes_check() -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "make_docs.py"),
                           "--check"], cwd=ROOT, env=script_env(), capture_output=True,
                          text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]


# ---------------------------------------------------------------------------------------------
# A fake repository: one script, one results file, docs pages.

FAKE_SCRIPT = '''"""Fake benchmark: sums its values."""


def summarize(report):
    values = report["results"]["values"]
    return {"device": report["system"]["backend"], "total": sum(values),
            "mean": sum(values) / len(values)}


def render_markdown(report):
    rows = [f"| {i} | {v:.2f} |" for i, v in enumerate(report["results"]["values"])]
    return "\\n".join(["| step | value |", "|---:|---:|", *rows]) + "\\n"
'''


def _system(**changes: object) -> dict:
    system = {
        "command": "python benchmarks/fake.py --publish", "script": "benchmarks/fake.py",
        "git_commit": "0123456789abcdef0123456789abcdef01234567", "git_dirty": False,
        "git_dirty_paths": [], "script_committed": True,
        "start_utc": "2026-01-01T00:00:00+00:00", "end_utc": "2026-01-01T00:01:00+00:00",
        "load_average_start": [0.1, 0.2, 0.3], "load_average_end": [0.2, 0.2, 0.3],
        "hostname": "host", "cpu": "test cpu", "cpu_count": 2, "backend": "cpu",
        "device_kind": "cpu", "device_count": 1, "jax": "0.0", "jaxlib": "0.0",
        "python": "3.11", "packages": {"jax": "0.0"}, "time_utc": "2026-01-01T00:01:00+00:00",
    }
    system.update(changes)
    return system


def _write_results(root: Path, values: list[float], name: str = "fake", folder: str = "cpu",
                   **system: object) -> Path:
    module = make_docs.load_script(root / "benchmarks" / "fake.py")
    data = {"system": _system(**system), "config": {"mode": "full"},
            "results": {"values": values}, "timing_s": {"total": 1.0}}
    data["summary"] = results_file.compute_summary(data, module.summarize)
    path = root / "benchmarks" / "results" / folder / f"{name}.json"
    report.write_json(path, data)
    path.with_suffix(".md").write_text(module.render_markdown(json.loads(path.read_text())))
    return path


PAGE = """# Results

The total is <!-- value: cpu/fake.json total .1f -->?<!-- end value --> over
<!-- value: cpu/fake.json device -->?<!-- end value -->.

<!-- generated: cpu/fake.md table=1 -->
<!-- end generated -->

<!-- generated: cpu/fake.json keys=total,mean -->
<!-- end generated -->

<!-- table: defaults -->
| option | default | range |
|---|---|---|
| alpha | 0.1 | 0.0-1.0 |

```markdown
| a | b |
|---|---|
| 1.5 | 2.5 |
<!-- generated: cpu/missing.md -->
```
"""


EXPECTED_LIST = "# expected results files\ncpu/fake.json\ngpu/fake.json  # accelerators\n"


@pytest.fixture
def fake_root(tmp_path: Path) -> Path:
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "fake.py").write_text(FAKE_SCRIPT)
    (tmp_path / "benchmarks" / "expected_results.txt").write_text(EXPECTED_LIST)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "page.md").write_text(PAGE)
    (tmp_path / "README.md").write_text("# Fake\n\nSee `benchmarks/results/cpu/fake.json`.\n")
    _write_results(tmp_path, [1.0, 2.0, 4.5])
    texts, problems = make_docs.generate(tmp_path)
    assert problems == []
    for path, text in texts.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def test_fake_tree_is_filled_and_passes(fake_root: Path) -> None:
    page = (fake_root / "docs" / "page.md").read_text()
    assert "The total is <!-- value: cpu/fake.json total .1f -->7.5<!-- end value -->" in page
    assert "cpu<!-- end value -->" in page
    assert "| 2 | 4.50 |" in page
    assert "* `total`: 7.5\n* `mean`: 2.5\n" in page
    assert "_Source: [benchmarks/results/cpu/fake.json](../benchmarks/results/cpu/fake.json)" \
           ", written by `python benchmarks/fake.py --publish` at commit `0123456789`" in page
    assert "<!-- generated: cpu/missing.md -->\n```" in page  # examples in fences untouched
    generated = (fake_root / "docs" / "benchmarks.md").read_text()
    assert "### `fake`: Fake benchmark: sums its values." in generated
    assert "* Command: `python benchmarks/fake.py --publish`" in generated
    assert "0.10 / 0.20 / 0.30 at the start" in generated
    assert make_docs.check(fake_root) == []
    # filling is idempotent
    texts, _ = make_docs.generate(fake_root)
    assert all(p.read_text() == t for p, t in texts.items())


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def _break(root: Path, how: str) -> None:
    results = root / "benchmarks" / "results" / "cpu"
    page = root / "docs" / "page.md"
    if how == "stale value":
        _edit(page, "-->7.5<!--", "-->7.6<!--")
    elif how == "stale block":
        _edit(page, "| 2 | 4.50 |", "| 2 | 4.40 |")
    elif how == "stale page":
        _edit(root / "docs" / "benchmarks.md", "* `total`: 7.5", "* `total`: 7.6")
    elif how == "hand-edited summary":
        _edit(results / "fake.json", '"total": 7.5', '"total": 8.5')
    elif how == "hand-edited table":
        _edit(results / "fake.md", "| 1 | 2.00 |", "| 1 | 2.10 |")
    elif how == "no provenance":
        data = json.loads((results / "fake.json").read_text())
        del data["system"]["command"], data["system"]["load_average_end"]
        (results / "fake.json").write_text(json.dumps(data, indent=2))
    elif how == "dirty code":
        _write_results(root, [1.0, 2.0, 4.5], git_dirty=True, git_dirty_paths=["a.py"])
    elif how == "uncommitted script":
        _write_results(root, [1.0, 2.0, 4.5], script_committed=False)
    elif how == "wrong device folder":
        _write_results(root, [1.0, 2.0, 4.5], backend="gpu",
                       device_kind="NVIDIA H100 80GB HBM3")
    elif how == "smoke file":
        _write_results(root, [1.0], name="fake_smoke")
    elif how == "stray file":
        (results / "notes.log").write_text("best 0.43 s\n")
    elif how == "unmarked table":
        _edit(page, "<!-- table: defaults -->\n", "")
    elif how == "typed table":
        page.write_text(page.read_text() + "\n| run | s | x |\n|---|---:|---:|\n"
                        "| a | 1.08 | 0.43 |\n")
    elif how == "unknown key":
        _edit(page, "cpu/fake.json total .1f", "cpu/fake.json totl .1f")
    elif how == "unclosed block":
        _edit(page, "<!-- end generated -->\n\n<!-- generated: cpu/fake.json", "\n<!-- "
              "generated: cpu/fake.json")
    elif how == "unmarked prose number":
        page.write_text(page.read_text() + "\nThe run took 1.5 s, 3.2x faster.\n")
    elif how == "unknown figure kind":
        page.write_text(page.read_text() + "\nIt took <!-- figure: guess -->2 s<!-- end "
                        "figure -->.\n")
    elif how == "no render_markdown":
        script = root / "benchmarks" / "fake.py"
        script.write_text(FAKE_SCRIPT.split("\n\ndef render_markdown")[0] + "\n")
        docs_results._MODULES.pop(script.resolve(), None)
    elif how == "missing results file":
        (results / "fake.json").unlink()
        (results / "fake.md").unlink()
    elif how == "missing accelerator file":
        _write_results(root, [1.0, 2.0], name="fake_quick", folder="h100", backend="gpu",
                       device_kind="NVIDIA H100 80GB HBM3")
    elif how == "unlisted results file":
        _write_results(root, [1.0, 2.0], name="fake_quick")
    elif how == "missing reference":
        _edit(root / "README.md", "cpu/fake.json", "cpu/gone.json")
    else:  # pragma: no cover
        raise AssertionError(how)


BREAKS = {
    "stale value": "docs/page.md:3: generated content is stale",
    "stale block": "docs/page.md:6: generated content is stale",
    "stale page": "docs/benchmarks.md:",
    "hand-edited summary": "benchmarks/results/cpu/fake.json:",
    "hand-edited table": "benchmarks/results/cpu/fake.md:4: differs from render_markdown()",
    "no provenance": "benchmarks/results/cpu/fake.json:1: system.command: missing",
    "dirty code": "system.git_dirty: tracked code had uncommitted changes when it ran (a.py)",
    "uncommitted script": "system.script_committed",
    "wrong device folder": "which belongs in benchmarks/results/h100/",
    "smoke file": "fake_smoke.json:1: a --smoke file",
    "stray file": "benchmarks/results/cpu/notes.log:1: not written with a results file",
    "unmarked table": "docs/page.md:27: benchmark table outside a generated block",
    "typed table": "benchmark table outside a generated block",
    "unknown key": "docs/page.md:3: value 'cpu/fake.json totl .1f': summary has no 'totl'",
    "unclosed block": "has no '<!-- end generated -->'",
    "missing reference": "README.md:3: refers to benchmarks/results/cpu/gone.json",
    "unmarked prose number": "docs/page.md:39: number in prose '1.5 s' from no results file",
    "unknown figure kind": "docs/page.md:39: figure marker of unknown kind 'guess'",
    "no render_markdown": "benchmarks/results/cpu/fake.json:1: benchmarks/fake.py defines no "
                          "render_markdown(report)",
    "missing results file": "benchmarks/expected_results.txt:2: benchmarks/results/cpu/"
                            "fake.json is missing (write it with python benchmarks/fake.py "
                            "--publish)",
    "missing accelerator file": "benchmarks/expected_results.txt:3: benchmarks/results/h100/"
                                "fake.json is missing",
    "unlisted results file": "benchmarks/results/cpu/fake_quick.json:1: not in "
                             "benchmarks/expected_results.txt",
}


def test_check_needs_the_expected_list(fake_root: Path) -> None:
    assert make_docs.check(fake_root) == []  # gpu/ entries: no accelerator folder, none due
    (fake_root / "benchmarks" / "expected_results.txt").unlink()
    assert "benchmarks/expected_results.txt:1: missing: the list of expected results files" \
        in "\n".join(make_docs.check(fake_root))


@pytest.mark.parametrize("how", list(BREAKS))
def test_check_catches(fake_root: Path, how: str) -> None:
    _break(fake_root, how)
    problems = make_docs.check(fake_root)
    assert any(BREAKS[how] in p for p in problems), "\n".join(problems)
    for p in problems:  # every problem is path:line: message
        path, line, _ = p.split(":", 2)
        assert (fake_root / path).exists() and int(line) >= 1, p


def test_hand_edited_summary_names_the_key_and_its_line(fake_root: Path) -> None:
    _break(fake_root, "hand-edited summary")
    path = fake_root / "benchmarks" / "results" / "cpu" / "fake.json"
    problems = make_docs.check_results_file(path, fake_root)
    lines = path.read_text().splitlines()
    start = lines.index('  "summary": {')
    line = next(i for i in range(start, len(lines)) if '"total"' in lines[i]) + 1
    assert problems == [f"benchmarks/results/cpu/fake.json:{line}: summary.total: file 8.5 != "
                        "recomputed 7.5"]


def test_fill_regenerates_stale_content(fake_root: Path) -> None:
    _break(fake_root, "stale block")
    _break(fake_root, "stale value")
    page = fake_root / "docs" / "page.md"
    new, problems = blocks.fill(page.read_text(), page, fake_root)
    assert problems == [] and "| 2 | 4.50 |" in new and "-->7.5<!--" in new


# ---------------------------------------------------------------------------------------------
# Numbers in prose.


def test_prose_numbers_flags_measurements_only_outside_markers() -> None:
    text = "\n".join([
        "The run took 6.55 ms per round, 28.9 % above random, 1.09x faster.",       # 1: three
        "A 3 x 2048 actor, 2,000 lanes, batch 1,024, version 0.10.2, `--steps 10s`.",  # none
        "Quoted: <!-- value: cpu/x.json k -->0.5 s<!-- end value -->; published "
        "<!-- figure: paper -->996.5 s<!-- end figure -->; <!-- figure: setting -->10 %"
        "<!-- end figure --> of the run.",                                            # 3: none
        "", "    python run.py  # 12.5 s in an indented code block", "",
        "```", "took 4.2 s", "```",
        "<!-- generated: cpu/x.md -->", "| a | 1.5 s |", "took 9.9 s", "<!-- end generated -->",
        "<!-- a comment: 7.7 s -->", "Another 2 s here.",                           # 15
    ])
    assert prose.prose_numbers(text) == [(1, "6.55 ms"), (1, "28.9 %"), (1, "1.09x"),
                                         (15, "2 s")]


def test_prose_unchecked_pages_exist() -> None:
    # the pages left unchecked are real pages (a renamed page must not silently escape)
    for page in prose.PROSE_UNCHECKED:
        assert (ROOT / page).is_file(), page


# ---------------------------------------------------------------------------------------------
# The table detector.


@pytest.mark.parametrize("cell,kind", [
    ("0.702", "measured"), ("-13", "measured"), ("1.3e-06", "measured"), ("34.4 %", "measured"),
    ("503,847", "measured"), ("24.8 s", "measured"), ("4.00x", "measured"), ("**0.43 s**",
                                                                             "measured"),
    ("0.0834 ms (29%)", "measured"), ("-151.19 +- 6.19", "measured"), ("3", "number"),
    ("(3, 1, 2)", "number"), ("2-15", "number"), ("2048x2048", "number"), ("~300k", "number"),
    ("`0.1`", "text"), ("learning rate, 0.1", "text"), ("2.6e-02 (Gaussian, s = 0.2)", "text"),
    ("", "text"), ("n/a", "text"),
    ("<!-- value: cpu/x.json k -->0.5<!-- end value -->", "text"),
])
def test_cell_kind(cell: str, kind: str) -> None:
    assert prose.cell_kind(cell) == kind


@pytest.mark.parametrize("table,flagged", [
    ("| env | return |\n|---|---|\n| frozenlake | 0.702 |", False),  # one numeric cell
    ("| env | return | optimal |\n|---|---|---|\n| frozenlake | 0.702 | 0.702 |", True),
    ("| lanes | programs | time |\n|---:|---:|---:|\n| 8 | 250 | **0.43 s** |", True),
    ("| preset | agents | obs |\n|---|---|---|\n| 3 | 3 | 18 |\n| 24 | 24 | 144 |", False),
    ("| field | default | meaning |\n|---|---|---|\n| `alpha`, `gamma` | 0.1, 0.95 | rates |",
     False),
    ("| a | b |\n|---|---|\n| x | y |", False),
])
def test_is_benchmark_table(table: str, flagged: bool) -> None:
    assert prose.is_benchmark_table(table) is flagged


def test_benchmark_tables_respects_markers_blocks_and_fences() -> None:
    measured = "| run | s | x |\n|---|---:|---:|\n| a | 1.08 | 2.5 |"
    text = "\n".join([
        "# Page", "", measured, "",                                   # line 3: flagged
        "<!-- table: paper -->", "", measured, "",                    # marked
        "<!-- generated: cpu/x.md -->", measured, "<!-- end generated -->", "",
        "```", measured, "```", "",                                   # an example
        "  " + measured.replace("\n", "\n  "),                        # line 25: indented
    ])
    assert prose.benchmark_tables(text) == [3, 25]


def test_markdown_tables_and_selection() -> None:
    text = "intro\n\n| a |\n|---|\n| 1 |\n\ntext\n\n| b | c |\n|:--|--:|\n| 2 | 3 |\n"
    assert blocks.markdown_tables(text) == ["| a |\n|---|\n| 1 |",
                                            "| b | c |\n|:--|--:|\n| 2 | 3 |"]


def test_plot_owner() -> None:
    stems = ["quant_ptq", "quant_ptq_quick"]
    assert docs_results.owner_of_plot("quant_ptq_bits", stems) == "quant_ptq"
    assert docs_results.owner_of_plot("quant_ptq_quick_bits", stems) == "quant_ptq_quick"
    assert docs_results.owner_of_plot("marl_e2e", stems) is None


def test_fmt_value() -> None:
    assert blocks.fmt_value(None) == "not measured"
    assert blocks.fmt_value(1234567) == "1,234,567"
    assert blocks.fmt_value(0.123456) == "0.1235"
    assert blocks.fmt_value(0.1234, ".1%") == "12.3%"
    assert blocks.fmt_value({"a": 1}) == '{"a": 1}'


def test_make_docs_help_prints_help_and_writes_nothing(capsys: pytest.CaptureFixture) -> None:
    page = ROOT / "docs" / "benchmarks.md"
    before = page.stat().st_mtime_ns
    with pytest.raises(SystemExit) as exit_:
        make_docs.main(["--help"])
    assert exit_.value.code == 0
    assert "--check" in capsys.readouterr().out
    assert page.stat().st_mtime_ns == before


# ---------------------------------------------------------------------------------------------
# jaxrl_pim.results_file and jaxrl_pim.provenance: the provenance fields, the source state.


def test_provenance_problems() -> None:
    good = {"system": _system(), "config": {}, "results": {}, "timing_s": {},
            "summary": {"x": 1}}
    assert results_file.provenance_problems(good) == []
    bad = copy.deepcopy(good)
    del bad["system"]["packages"]
    bad["system"]["git_commit"] = None
    bad["summary"] = {}
    assert results_file.provenance_problems(bad, committed=False) == [
        "system.packages: missing (no provenance record)",
        "summary: empty (summarize() must give the headline numbers)"]
    assert "system.git_commit: None is not a commit (run from a git checkout)" in \
        results_file.provenance_problems(bad)


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def test_git_state_counts_code_not_results_or_docs(tmp_path: Path) -> None:
    _git(tmp_path, "init", "-q")
    for name in ("a.py", "docs/x.md", "benchmarks/results/cpu/r.json", "README.md"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("1\n")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    for name in ("docs/x.md", "benchmarks/results/cpu/r.json", "README.md"):
        (tmp_path / name).write_text("2\n")
    state = provenance.git_state(tmp_path / "a.py")
    assert len(state["commit"]) == 40 and state["dirty"] is False
    assert state["path_committed"] is True
    (tmp_path / "a.py").write_text("2\n")
    state = provenance.git_state(tmp_path / "a.py")
    assert state["dirty"] is True and state["dirty_paths"] == ["a.py"]
    assert state["path_committed"] is False


def test_source_state_passed_in_where_git_is_not_asked(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    # a copied working tree without .git (the GPU suite's device run): the commit and the
    # changed paths come from the environment, and the script is named from the project root
    (tmp_path / "pyproject.toml").write_text("")
    script = tmp_path / "benchmarks" / "b.py"
    script.parent.mkdir()
    script.write_text("1\n")
    commit = "0123456789abcdef0123456789abcdef01234567"
    monkeypatch.setenv(provenance.SOURCE_COMMIT_ENV, commit)
    monkeypatch.setenv(provenance.SOURCE_DIRTY_ENV, "docs/x.md,benchmarks/results/cpu/r.json")
    run = provenance.RunRecord([str(script), "--smoke"]).as_dict()
    assert (run["git_commit"], run["git_dirty"], run["script_committed"]) == (commit, False, True)
    assert run["git_state_source"] == "passed in"
    assert run["script"] == "benchmarks/b.py" and run["command"] == "python benchmarks/b.py --smoke"
    monkeypatch.setenv(provenance.SOURCE_DIRTY_ENV, "benchmarks/b.py")
    state = provenance.git_state(script)
    assert state["dirty"] is True and state["dirty_paths"] == ["benchmarks/b.py"]
    assert state["path_committed"] is False
    monkeypatch.setenv(provenance.SOURCE_COMMIT_ENV, "HEAD")
    with pytest.raises(ValueError, match="not a 40-hex-digit commit"):
        provenance.git_state(script)
