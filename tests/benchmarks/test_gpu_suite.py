"""The GPU suite (``benchmarks/gpu_suite.py``) and its device call (``gpu_prepare.sh``) on a
CPU host: the plan fits the lease, the rehearsal through the prepared command (wheels in a
``--target`` folder, the project on ``PYTHONPATH``) keeps its deadline and returns at most 8
files, SIGTERM still packs the archive, a failing part is recorded with its error, and CPU
numbers are never filed as accelerator numbers."""

from __future__ import annotations

import io
import json
import re
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from benchmarks import make_docs
from benchmarks import tabular_gpu_knobs as knobs
from tests.support import bench, script_env

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "benchmarks" / "gpu_suite.py"


def _suite():
    return make_docs.load_script(SUITE)


def test_plan_fits_the_lease_in_priority_order_and_names_real_scripts() -> None:
    suite = _suite()
    rows = suite.plan("full", list(suite.BY_NAME), {p.name: p.estimate_s["full"]
                                                    for p in suite.PARTS})
    # tiers 1 to 4 by the suite's own estimates; tier 5 too once one part is fresh (the
    # first H200 call filed spread48 and e2e_rejax)
    assert suite.plan_total_s([r for r in rows if r["tier"] < 5], extras=False) <= 480
    assert suite.DEADLINE_S["full"] == 480
    fresh = {n: {"fresh": True, "reason": "x"} for n in ("spread48", "e2e_rejax")}
    again = suite.plan("full", list(suite.BY_NAME), {p.name: p.estimate_s["full"]
                                                     for p in suite.PARTS}, fresh)
    assert suite.plan_total_s(again, extras=False) <= 480
    assert suite.plan_total_s(rows) > suite.plan_total_s(rows, extras=False)
    # issue: tier 1 is seeds per hour, then spread-48 at 1e6 rows, tabular, rejax, quant;
    # every part whose keys the issue names runs inside the deadline (none is an extra)
    assert [p.name for p in suite.PARTS if p.tier < suite.EXTRA_TIER] == [
        "marl_fill", "spread48", "tabular", "e2e_rejax", "quant"]
    assert suite.PARTS[0].name == "marl_fill" and suite.PARTS[0].tier == 1
    assert suite.PARTS[0].args["full"] == ["--fill"]
    assert [p.tier for p in suite.PARTS] == sorted(p.tier for p in suite.PARTS)
    assert suite.BY_NAME["spread48"].args["full"][:9] == [
        "--parts", "scaling", "--agents", "48", "--layouts", "compact", "--modes", "faithful",
        "--capacity"]
    for p in suite.PARTS:
        assert (ROOT / "benchmarks" / p.script).is_file(), p.script
        assert p.stem.startswith(Path(p.script).stem)
        for mode in ("full", "quick", "smoke"):
            assert 0 < p.estimate_s[mode] < suite.DEADLINE_S[mode], (p.name, mode)
    # a tagged second file of a script is a name make_docs accepts
    for p in suite.PARTS:
        if p.stem != Path(p.script).stem:
            tag = p.stem.removeprefix(Path(p.script).stem + "_")
            assert tag in make_docs.load_script(ROOT / "benchmarks" / p.script).FILE_TAGS
            assert (p.args["full"][-2:] == ["--file-tag", tag]
                    or p.args["full"] == [f"--{tag}"]), p.name


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True,
                          check=True).stdout.strip()


def _toy_repo(tmp_path: Path) -> Path:
    """A git repository with a benchmark script importing a library module (one import
    inside a function, one under TYPE_CHECKING that must not count) and a filed result."""
    root = tmp_path / "repo"
    files = {
        "benchmarks/__init__.py": "",
        "benchmarks/harness.py": "X = 1\n",
        "benchmarks/toy.py": "from benchmarks import harness\n\ndef main():\n"
                             "    from jaxrl_pim.core import f\n    return f()\n",
        "jaxrl_pim/__init__.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                 "    from jaxrl_pim import unused  # noqa\n",
        "jaxrl_pim/core.py": "from .deep import g\n\ndef f():\n    return g()\n",
        "jaxrl_pim/deep.py": "def g():\n    return 1\n",
        "jaxrl_pim/unused.py": "",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    _git(root, "init", "-q")
    _git(root, "-c", "user.email=t@t", "-c", "user.name=t", "add", ".")
    _git(root, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "toy")
    commit = _git(root, "rev-parse", "HEAD")
    filed = root / "benchmarks" / "results" / "h200" / "toy.json"
    filed.parent.mkdir(parents=True)
    filed.write_text(json.dumps({"system": {
        "git_commit": commit, "git_dirty": False, "git_dirty_paths": [],
        "command": "python benchmarks/toy.py --out /tmp/x --size 3 --budget-s 10"}}))
    return root


def test_static_sources_follow_imports_transitively_but_not_typing_only_ones(
        tmp_path: Path) -> None:
    from benchmarks import freshness

    root = _toy_repo(tmp_path)
    assert freshness.static_sources(root / "benchmarks" / "toy.py", root) == [
        "benchmarks/__init__.py", "benchmarks/harness.py", "benchmarks/toy.py",
        "jaxrl_pim/__init__.py", "jaxrl_pim/core.py", "jaxrl_pim/deep.py"]


def test_a_part_is_fresh_until_a_source_or_its_options_change(tmp_path: Path) -> None:
    from benchmarks import gpu_plan

    root = _toy_repo(tmp_path)
    part = gpu_plan.Part("toy", 1, "toy.py", "toy", {"full": ["--size", "3"]},
                         {"full": 1.0}, 0.5, "a toy")
    fresh = gpu_plan.part_freshness(part, "h200", root=root)
    assert fresh["fresh"] is True and "6 sources" in fresh["reason"], fresh
    # the same part on a device folder with no filed result runs
    assert gpu_plan.part_freshness(part, "h100", root=root) == {
        "fresh": False, "reason": "never filed on h100", "commit": None}
    # other measured options: stale (--out and --budget-s do not count)
    other = part._replace(args={"full": ["--size", "4"]})
    assert "other options" in gpu_plan.part_freshness(other, "h200", root=root)["reason"]
    # a library module two imports away changes (uncommitted): stale, naming it
    (root / "jaxrl_pim" / "deep.py").write_text("def g():\n    return 2\n")
    stale = gpu_plan.part_freshness(part, "h200", root=root)
    assert stale["fresh"] is False and "jaxrl_pim/deep.py" in stale["reason"], stale
    # a file the script does not import changes nothing
    _git(root, "checkout", "-q", "--", "jaxrl_pim/deep.py")
    (root / "jaxrl_pim" / "unused.py").write_text("Y = 2\n")
    assert gpu_plan.part_freshness(part, "h200", root=root)["fresh"] is True
    # a result that names what it did not measure is incomplete: run again
    filed = root / "benchmarks" / "results" / "h200" / "toy.json"
    data = json.loads(filed.read_text())
    filed.write_text(json.dumps({**data, "summary": {"not_measured": ["24:16: --budget-s"]}}))
    assert "incomplete (24:16: --budget-s)" in gpu_plan.part_freshness(part, "h200",
                                                                       root=root)["reason"]
    filed.write_text(json.dumps({**data, "summary": {"not_measured": []}}))
    assert gpu_plan.part_freshness(part, "h200", root=root)["fresh"] is True
    # a result run from uncommitted code is never fresh
    filed = root / "benchmarks" / "results" / "h200" / "toy.json"
    data = json.loads(filed.read_text())
    data["system"].update(git_dirty=True, git_dirty_paths=["jaxrl_pim/core.py"])
    filed.write_text(json.dumps(data))
    assert "uncommitted" in gpu_plan.part_freshness(part, "h200", root=root)["reason"]


def test_fresh_parts_are_not_run_unless_forced(tmp_path: Path) -> None:
    suite = _suite()
    fresh_file = tmp_path / "fresh.json"
    fresh_file.write_text(json.dumps({"commit": "0" * 40, "mode": "smoke", "folders": {
        "cpu": {"quant": {"fresh": True, "reason": "its result covers the present code",
                          "commit": "0" * 40}},
        "h200": {"quant": {"fresh": False, "reason": "never filed on h200", "commit": None}}}}))
    assert suite._fresh_parts(fresh_file, "h100") == {}
    rows = suite.plan("smoke", ["quant"], {"quant": 15.0}, suite._fresh_parts(fresh_file, "cpu"))
    assert rows[0]["fresh"] == "its result covers the present code"
    assert suite.plan_total_s(rows) == suite.OVERHEAD_S  # a fresh part costs nothing
    out = tmp_path / "out"
    staged = out / "staged"
    staged.mkdir(parents=True)
    interrupted = suite.run_parts(rows, "smoke", {"backend": "cpu"}, script_env(), out, staged,
                                  suite._Deadline(60))
    assert interrupted is False and rows[0]["status"] == "fresh"
    assert not (out / "work").exists()  # nothing was started
    record = {"results": {"parts": rows, "device": {"device_kind": "cpu", "backend": "cpu"},
                          "total_s": 1.0, "interrupted": False},
              "config": {"mode": "smoke", "deadline_s": 60, "plan_estimate_s": 10}}
    summary = suite.summarize(record)
    assert summary["parts_fresh"] == ["quant"] and summary["parts_not_ok"] == {}
    # the plan printed on the development machine names the reason per folder
    proc = subprocess.run([sys.executable, str(SUITE), "--smoke", "--plan", "--parts", "quant",
                           "--fresh-from", str(fresh_file)], cwd=tmp_path, env=script_env(),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "for cpu/" in proc.stdout and "skipped, fresh: its result covers" in proc.stdout
    assert "for h200/" in proc.stdout and "[never filed on h200]" in proc.stdout
    forced = subprocess.run([sys.executable, str(SUITE), "--smoke", "--plan", "--parts",
                             "quant", "--fresh-from", str(fresh_file), "--force"],
                            cwd=tmp_path, env=script_env(), capture_output=True, text=True,
                            timeout=300)
    assert "skipped, fresh" not in forced.stdout and "~  15 s" in forced.stdout


def test_an_early_part_leaves_the_later_planned_parts_their_time() -> None:
    suite = _suite()
    rows = [{"estimate_s": 100, "tier": 1}, {"estimate_s": 50, "tier": 2},
            {"estimate_s": 40, "tier": 3, "fresh": "x"}, {"estimate_s": 60, "tier": 6}]
    assert suite.part_room(rows, 0, 400, 400) == 200  # twice its estimate
    assert suite.part_room(rows, 0, 170, 170) == 120  # 50 kept for tier 2 (fresh, extra: 0)
    assert suite.part_room(rows, 0, 120, 120) == 100  # never under its own estimate
    assert suite.part_room(rows, 0, 400, 90) == 90  # nor over its --budget
    assert suite.part_room(rows, 3, 400, 400) == 120


def test_a_failing_part_is_recorded_with_its_error(tmp_path: Path) -> None:
    suite = _suite()
    cmd = [sys.executable, "-c", "import sys; print('compile failed: boom'); sys.exit(3)"]
    row = suite.run_part(cmd, script_env(), 60, tmp_path / "logs" / "x.log", "x")
    assert row["status"] == "failed" and row["returncode"] == 3
    assert "exit status 3" in row["error"] and "boom" in row["error"]
    assert "boom" in (tmp_path / "logs" / "x.log").read_text()
    slow = suite.run_part([sys.executable, "-c", "import time; time.sleep(30)"],
                             script_env(), 0.5, tmp_path / "logs" / "y.log", "y")
    assert slow["status"] == "stopped at the deadline" and slow["seconds"] < 15


def test_part_files_leave_out_partial_files_and_other_stems(tmp_path: Path) -> None:
    suite = _suite()
    for name in ("marl_profile.json", "marl_profile.md", "marl_profile.png",
                 "marl_profile.partial.json", "marl_profile_quick.json", "marl_gpu.json",
                 "tabular_gpu_roofline.png"):
        (tmp_path / name).write_text("{}")
    assert [p.name for p in suite.part_files(tmp_path, "marl_profile")] == [
        "marl_profile.json", "marl_profile.md", "marl_profile.png"]


def test_returned_file_problems_name_every_limit(tmp_path: Path) -> None:
    suite = _suite()
    ok = tmp_path / "ok"
    (ok / "a" / "b").mkdir(parents=True)
    (ok / "a" / "b" / "deep_enough.json").write_text("{}")
    (ok / "gpu_suite-h200.tar.gz").write_text("x")
    assert suite.returned_file_problems(ok) == []
    bad = tmp_path / "bad"
    (bad / "a" / "b" / "c").mkdir(parents=True)
    (bad / "a" / "b" / "c" / "too_deep.json").write_text("{}")
    (bad / "with space.md").write_text("x")
    for i in range(8):
        (bad / f"f{i}.json").write_text("{}")
    problems = suite.returned_file_problems(bad)
    assert any("more than 2 folders down" in p for p in problems)
    assert any("with space.md" in p and "[A-Za-z0-9._-]" in p for p in problems)
    assert any("10 files, more than 8" in p for p in problems)


@pytest.mark.xdist_group(bench.group("gpu_suite"))  # its quant part is quant_inference's
def test_rehearsal_through_the_prepared_command(smoke_run) -> None:
    run = smoke_run("gpu_suite")
    assert run.prepared, run.stderr[-3000:]
    # the prepared command and wheels fit the device call
    assert len(run.prepared) < 2000
    assert "--no-index --no-deps" in run.prepared and "--target" in run.prepared
    # the checkout's commit at preparation (HEAD, or an ancestor of it if one was made since)
    head = re.search(r"JAXRL_PIM_SOURCE_COMMIT=([0-9a-f]{40}) ", run.prepared).group(1)
    assert subprocess.run(["git", "merge-base", "--is-ancestor", head, "HEAD"], cwd=ROOT,
                          capture_output=True).returncode == 0
    wheels = sorted(p.name.split("-")[0] for p in run.wheels.glob("*.whl"))
    assert wheels == ["farama_notifications", "flashbax", "gymnasium", "gymnax", "qwix"]
    peer = sorted(p.name.split("-")[0] for p in (run.wheels / "peer").glob("*.whl"))
    assert peer == ["decorator", "distrax", "dm_tree", "farama_notifications", "gymnasium",
                    "gymnax", "rejax", "tfp_nightly", "wrapt"]
    assert sum(p.stat().st_size for p in run.wheels.rglob("*") if p.is_file()) < 64 * 2**20
    # the freshness file the device reads, and the plan printed before the call
    assert "--fresh-from" in run.prepared and (run.wheels / "fresh.json").is_file()
    assert "GPU suite plan" in run.stderr and "tier 1 marl_fill" in run.stderr
    # the installed wheels are what the suite's processes import (PYTHONPATH first)
    where = subprocess.run([sys.executable, "-c", "import gymnax, flashbax; "
                            "print(gymnax.__file__); print(flashbax.__file__)"],
                           env={**script_env(), "PYTHONPATH": str(run.site)},
                           capture_output=True, text=True, timeout=120)
    assert all(line.startswith(str(run.site)) for line in where.stdout.split()), where
    # rejax's side imports its own gymnax (below 1.0) from its folder, not the project's
    rejax = subprocess.run([sys.executable, "-c", "import gymnax, rejax; print(gymnax.__file__)"],
                           env={**script_env(), "PYTHONPATH": str(run.peer)},
                           capture_output=True, text=True, timeout=120)
    assert rejax.stdout.startswith(str(run.peer)), rejax
    # every part but marl_schedule finished: exit status 1, and everything came back
    assert run.returncode == 1, run.stdout[-3000:] + run.stderr[-3000:]
    suite = _suite()
    assert suite.returned_file_problems(run.returned) == []
    assert sorted(p.name for p in run.returned.iterdir()) == [
        "gpu_suite_smoke-cpu.md", "gpu_suite_smoke-cpu.tar.gz"]
    with tarfile.open(run.returned / "gpu_suite_smoke-cpu.tar.gz") as tar:
        names = set(tar.getnames())
        record = json.load(tar.extractfile("benchmarks/results/cpu/gpu_suite_smoke.json"))
    assert {"benchmarks/results/cpu/gpu_suite_smoke.json",
            "benchmarks/results/cpu/gpu_suite_smoke.md",
            "benchmarks/results/cpu/quant_inference_smoke.json",
            "benchmarks/results/cpu/quant_inference_smoke.md",
            "benchmarks/results/cpu/marl_seeds_fill_smoke.json",
            "benchmarks/results/cpu/marl_gpu_spread48_smoke.json",
            "benchmarks/results/cpu/tabular_gpu_smoke.json",
            "benchmarks/results/cpu/e2e_gpu_smoke.json",
            "benchmarks/results/cpu/marl_trace_smoke.json",
            "benchmarks/results/cpu/marl_profile_smoke.json",
            "logs/quant.log", "logs/marl_trace.tar.gz"} <= names
    # the part stopped early files nothing, its log is kept
    assert not any(n.startswith("benchmarks/results/cpu/marl_gpu_schedule") for n in names)
    assert "logs/marl_schedule.log" in names
    rows = {r["part"]: r for r in record["results"]["parts"]}
    assert rows["marl_schedule"]["status"] == "stopped at its budget"
    assert 1 <= rows["marl_schedule"]["seconds"] < 20
    assert record["summary"]["parts_ok"] == list(bench.SUITE_PARTS[:-1])
    assert record["summary"]["within_deadline"] is True
    # the {logs} and {peer_site} places were filled in; rejax's side ran from its folder
    assert f"--trace-archive {run.out / 'logs'}/marl_trace.tar.gz" in rows["marl_trace"]["command"]
    assert f"--peer-site rejax={run.peer}" in rows["e2e_rejax"]["command"]
    system = record["system"]
    assert system["git_state_source"] == "passed in" and system["git_commit"] == head
    assert system["script"] == "benchmarks/gpu_suite.py"
    # the summary table printed to stdout names every part
    assert "| 1 | marl_fill |" in run.stdout and "| 6 | marl_schedule |" in run.stdout
    staged = run.out / "benchmarks" / "results" / "cpu"
    for path in staged.glob("*.json"):
        assert make_docs.check_results_file(path, ROOT, committed=False) == [], path.name
    # the step back refuses CPU numbers
    back = subprocess.run(["bash", str(ROOT / "benchmarks" / "gpu_prepare.sh"), "unpack",
                           str(run.returned / "gpu_suite_smoke-cpu.tar.gz")],
                          cwd=ROOT, env=script_env(), capture_output=True, text=True,
                          timeout=120)
    assert back.returncode == 2 and "holds CPU results" in back.stderr, back.stderr


def test_sigterm_still_packs_the_archive(tmp_path: Path) -> None:
    returned = tmp_path / "returned"
    proc = subprocess.Popen(
        [sys.executable, str(SUITE), "--smoke", "--parts", "tabular", "--out",
         str(tmp_path / "out"), "--archive", str(returned)],
        cwd=tmp_path, env=script_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True)
    try:
        lines = []
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("== tabular (tier 3"):
                break
        time.sleep(1.0)
        proc.send_signal(signal.SIGTERM)
        rest, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1, "".join(lines) + rest
    with tarfile.open(returned / "gpu_suite_smoke-cpu.tar.gz") as tar:
        record = json.load(tar.extractfile("benchmarks/results/cpu/gpu_suite_smoke.json"))
        assert "logs/tabular.log" in tar.getnames()
    assert record["results"]["interrupted"] is True
    assert record["results"]["parts"][0]["status"] == "interrupted"
    assert "interrupted" in (returned / "gpu_suite_smoke-cpu.md").read_text()


def test_a_deadline_of_a_few_seconds_still_returns_the_archive(tmp_path: Path) -> None:
    # 16 s less the 15 s kept for packing: no part fits, each is recorded as skipped
    returned = tmp_path / "returned"
    proc = subprocess.run([sys.executable, str(SUITE), "--smoke", "--parts", "quant",
                           "--deadline-s", "16", "--out", str(tmp_path / "out"),
                           "--archive", str(returned)], cwd=tmp_path, env=script_env(),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    with tarfile.open(returned / "gpu_suite_smoke-cpu.tar.gz") as tar:
        record = json.load(tar.extractfile("benchmarks/results/cpu/gpu_suite_smoke.json"))
    (row,) = record["results"]["parts"]
    assert row["status"] == "skipped" and "left before the deadline" in row["error"]
    assert record["summary"]["within_deadline"] is True and record["results"]["total_s"] <= 16


def _archive(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_unpack_files_accelerator_results_unchanged_and_refuses_the_rest(
        tmp_path: Path) -> None:
    suite = _suite()
    data = b'{"summary": {"x": 1.2345678901234567}}\n'
    good = _archive(tmp_path / "good.tar.gz", {
        "benchmarks/results/h200/tabular_gpu.json": data,
        "benchmarks/results/h200/tabular_gpu.md": b"| a |\n",
        "logs/tabular.log": b"log\n"})
    written = suite.unpack(good, tmp_path / "repo")
    assert sorted(p.name for p in written) == ["tabular_gpu.json", "tabular_gpu.md"]
    assert (tmp_path / "repo/benchmarks/results/h200/tabular_gpu.json").read_bytes() == data
    assert not (tmp_path / "repo" / "logs").exists()
    for name, message in (("benchmarks/results/cpu/x.json", "CPU results"),
                          ("benchmarks/results/h200/x_smoke.json", "--smoke file"),
                          ("benchmarks/results/../../x.json", "not a results file"),
                          ("elsewhere/x.json", "not a results file")):
        bad = _archive(tmp_path / "bad.tar.gz", {name: b"{}"})
        with pytest.raises(ValueError, match=message.replace("-", r"\-")):
            suite.unpack(bad, tmp_path / "repo2")
        assert not (tmp_path / "repo2").exists()


def test_parts_the_call_did_not_reach_are_not_expected(tmp_path: Path) -> None:
    (tmp_path / "benchmarks" / "results" / "h200").mkdir(parents=True)
    (tmp_path / "benchmarks" / "expected_results.txt").write_text(
        "gpu/gpu_suite.json\ngpu/tabular_gpu_sweep.json\n")
    record = {"results": {"parts": [{"part": "tabular_sweep", "stem": "tabular_gpu_sweep",
                                     "status": "skipped"}]}}
    suite_file = tmp_path / "benchmarks" / "results" / "h200" / "gpu_suite.json"
    suite_file.write_text(json.dumps(record))
    assert make_docs.expected_problems(tmp_path) == []
    record["results"]["parts"][0]["status"] = "ok"
    suite_file.write_text(json.dumps(record))
    assert [p for p in make_docs.expected_problems(tmp_path) if "tabular_gpu_sweep" in p]


def test_cpu_numbers_are_never_published(tmp_path: Path) -> None:
    results = ROOT / "benchmarks" / "results"
    before = sorted(p.relative_to(results) for p in results.rglob("*"))
    out = tmp_path / "out"
    for extra, message in ((["--publish"], "refusing to publish"),
                           (["--smoke", "--publish"], "never published"),
                           ([], "only on a GPU / TPU")):
        proc = subprocess.run([sys.executable, str(SUITE), "--out", str(out), *extra],
                              cwd=tmp_path, env=script_env(), capture_output=True, text=True,
                              timeout=300)
        assert proc.returncode == 2, (extra, proc.stdout, proc.stderr)
        assert message in proc.stderr, (extra, proc.stderr)
        assert not out.exists()
    proc = subprocess.run([sys.executable, str(SUITE), "--plan", "--out", str(out)],
                          cwd=tmp_path, env=script_env(), capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0 and not out.exists()
    assert "plan (full sizes)" in proc.stdout and "deadline 480 s" in proc.stdout
    assert "(estimates, not measurements)" in proc.stdout
    assert sorted(p.relative_to(results) for p in results.rglob("*")) == before


def test_tabular_gpu_summary_of_a_full_gpu_run() -> None:
    # the GPU branch of tabular_gpu.summarize, which a CPU host never reaches by running it
    tab = make_docs.load_script(ROOT / "benchmarks" / "tabular_gpu.py")
    fl = [{"section": "frozenlake", "variant": v, "kernel": "pallas_lane", "episodes": 2000,
           "run_s": 0.05 + i / 1000, "ns_per_dependent_step": 50.0 + i,
           "floor_estimate_ns_per_step": 20.0, "over_floor_estimate": (50.0 + i) / 20}
          for i, v in enumerate(tab.VARIANTS)]
    ma = [{"section": "multiagent", "variant": v, "kernel": "pallas_lane", "episodes": 2000,
           "run_s": 1.5} for v in ("q-seq-fp32", "q-seq-int32")]
    sweep = [{"lanes_per_block": b, "prefetch": p, "is_default": (b, p) == (8, 8),
              "run_s": None if (b, p) == (16, 8) else 0.01 * b / p}
             for b in (8, 16) for p in (4, 8)]
    rep = {"results": {"backend": "gpu", "device": "gpu: 1 x H200", "new_kernel": "pallas_lane",
                       "sections": {"frozenlake": fl, "multiagent": ma, "sweep": sweep},
                       "pim_multiagent_2000_s": 88.7, "pim_source": "paper"},
           "config": {"mode": "full", "variants": tab.VARIANTS, "episodes": 2000,
                      "pair_variants": ["q-seq-fp32", "q-seq-int32"]}}
    s = tab.summarize(rep)
    assert s["gpu_frozenlake_2000_lanes_s"] == max(r["run_s"] for r in fl)
    assert s["gpu_frozenlake_2000_lanes_target_met"] is True
    assert s["gpu_multiagent_2000_s"] == 1.5 and s["gpu_multiagent_2000_target_met"] is False
    assert s["gpu_frozenlake_ns_per_dependent_step_worst"] == 61.0
    assert s["gpu_frozenlake_worst_over_floor_estimate"] == 61.0 / 20
    # the failed point (16, 8) is out; (8, 8) is the defaults' point and the fastest left
    assert (s["sweep_best_lanes_per_block"], s["sweep_best_prefetch"]) == (8, 8)
    assert (s["sweep_default_lanes_per_block"], s["sweep_default_prefetch"]) == (8, 8)
    assert s["sweep_default_run_s_sum"] == s["sweep_best_run_s_sum"] == 0.01
    assert s["note"] is None
    rep["results"]["backend"] = "cpu"
    assert tab.summarize(rep)["gpu_frozenlake_2000_lanes_s"] is None  # never a CPU number


def test_tabular_sweep_stops_between_whole_points_defaults_first(monkeypatch) -> None:
    # a GPU run of the full sweep outran its --budget-s (the check sat between sections
    # only); now the budget is asked before each point, and what ran is whole points
    import numpy as np

    from jaxrl_pim.tabular.pallas_gpu import DEFAULT_PREFETCH, lane_block

    tab = make_docs.load_script(ROOT / "benchmarks" / "tabular_gpu.py")
    ran = []

    def fake_measure(section, env, variant, kernel, kw, chunks, repeats):
        ran.append((kw["lanes_per_block"], variant))
        return {"variant": variant, "run_s": 0.001 * kw["lanes_per_block"]}, None

    monkeypatch.setattr(tab, "measure", fake_measure)
    monkeypatch.setattr(tab, "lowers_for_cuda", lambda *a: True)
    default = (lane_block(0, 16 * 4, 64), DEFAULT_PREFETCH)
    m = {"sweep_lanes_per_block": sorted({1, 2, default[0]}), "sweep_prefetch":
         sorted({1, default[1]}), "sweep_variants": ["q-seq-fp32", "sarsa-ran-int32"],
         "sync": 10}
    asked = []

    def stop(done: int, total: int) -> bool:
        asked.append((done, total))
        return done == 2

    rows = tab.sweep(m, np.zeros((64, 3)), 5, 1, stop=stop)
    points = len(m["sweep_lanes_per_block"]) * len(m["sweep_prefetch"])
    assert asked == [(1, points), (2, points)]
    assert len(rows) == 4 and [r["variant"] for r in rows] == m["sweep_variants"] * 2
    assert (rows[0]["lanes_per_block"], rows[0]["prefetch"]) == default
    assert rows[0]["is_default"] and rows[1]["is_default"] and not rows[2]["is_default"]
    # a point that only some variants reached is out of the best-point choice
    cut = rows + [{"lanes_per_block": 99, "prefetch": 1, "run_s": 1e-9, "variant": "x"}]
    s = knobs.sweep_summary(cut)
    assert s["sweep_best_lanes_per_block"] != 99
    assert s["sweep_default_run_s_sum"] == rows[0]["run_s"] + rows[1]["run_s"]

