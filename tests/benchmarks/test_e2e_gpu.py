"""``benchmarks/e2e_gpu.py`` and the ``--peer-site`` option of ``e2e_frameworks.py``: the
CPU smoke run (the library side only, rejax not measured with its reason), a side run with a
``--target`` folder first on ``PYTHONPATH``, and the learned gate of the ratio keys."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from benchmarks import e2e_frameworks as e2e
from benchmarks import e2e_gpu
from tests.support import bench

#: a side program that reports what it sees: the version of the distribution "rejax", its
#: interpreter and its PYTHONPATH (stands for rejax_run.py: no jax, milliseconds)
PROBE_SIDE = """
import json, os, sys
from importlib import metadata
print("E2E_RESULT " + json.dumps({"versions": {"rejax": metadata.version("rejax")},
      "python": sys.executable, "pythonpath": os.environ.get("PYTHONPATH"),
      "threads": os.environ.get("OMP_NUM_THREADS")}))
"""


def _site(folder: Path, name: str = "rejax", version: str = "9.9.1") -> Path:
    """A ``--target``-like folder holding one distribution's metadata."""
    info = folder / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    return folder


def e2e_parse(argv: list[str]) -> object:
    """e2e_frameworks' site options parsed alone."""
    import argparse

    ap = argparse.ArgumentParser()
    e2e.add_site_option(ap)
    return ap.parse_args(argv)


def test_a_peer_site_side_runs_this_interpreter_with_its_folder_first(tmp_path: Path) -> None:
    site = _site(tmp_path / "site")
    script = tmp_path / "probe_run.py"
    script.write_text(PROBE_SIDE)
    sides = e2e.opponent_sides(tmp_path / "no_venvs", e2e.peer_sites(
        e2e_parse(["--peer-site", f"rejax={site}"])))
    side = sides["rejax"]._replace(script=script)
    assert side.python == Path(sys.executable) and side.site == site.resolve()
    assert sides["sb3"].site is None  # the others keep their venvs
    res = e2e.run_side(side, {"algo": "ppo"}, threads=1, timeout_s=60)
    assert res["status"] == "measured", res
    rec = res["record"]
    assert rec["versions"] == {"rejax": "9.9.1"}  # read from the folder
    assert rec["python"] == sys.executable and rec["threads"] == "1"
    assert rec["pythonpath"].split(":") == [str(site.resolve()), str(e2e.harness.ROOT)]


def test_a_peer_site_without_rejax_is_not_measured(tmp_path: Path) -> None:
    missing = e2e.opponent_sides(tmp_path, {"rejax": tmp_path / "nowhere"})["rejax"]
    res = e2e.run_side(missing, {"algo": "dqn"}, 1, 60)
    assert res["status"] == "not measured"
    assert res["reason"].startswith(f"no folder {tmp_path / 'nowhere'}")
    other = _site(tmp_path / "other", name="gymnax")
    res = e2e.run_side(e2e.opponent_sides(tmp_path, {"rejax": other})["rejax"], {}, 1, 60)
    assert res["status"] == "not measured" and "rejax is not installed in" in res["reason"]
    with pytest.raises(SystemExit, match="NAME=DIR"):
        e2e.peer_sites(e2e_parse(["--peer-site", "rejax"]))
    with pytest.raises(SystemExit, match="NAME=DIR"):
        e2e.peer_sites(e2e_parse(["--peer-site", "nosuch=/tmp"]))


def _rec(steps_per_s: float, final: float | None, random: float = 20.0) -> dict:
    return {"steps_per_s": steps_per_s, "startup_s": 5.0, "compile_s": 7.0, "wall_s": 1.0,
            "final_return": final, "random_return": random, "versions": {"rejax": "0.1.3"}}


def _report(backend: str, recs: dict[tuple[str, str], dict | None]) -> dict:
    rows = []
    for (side, algo), rec in recs.items():
        row = {"side": side, "algo": algo, "task": "cartpole", "spec": {"algo": algo,
               "seeds": 1}, "status": "measured" if rec else "not measured"}
        rows.append({**row, "record": rec} if rec else {**row, "reason": "no rejax"})
    return {"system": {"backend": backend, "device_kind": "NVIDIA H200"},
            "config": {"mode": "full", "sizes": {"rl_algos": ["dqn", "ppo"],
                                                 "rl_envs": ["cartpole"]}},
            "results": {"runs": rows}}


def test_the_ratio_needs_both_sides_to_have_learned() -> None:
    recs = {("jaxrl_pim", "dqn"): _rec(50_000.0, 190.0), ("rejax", "dqn"): _rec(25_000.0, 340.0),
            # PPO: rejax's final return 29 is above random (20) but not by half of it
            ("jaxrl_pim", "ppo"): _rec(80_000.0, 250.0), ("rejax", "ppo"): _rec(90_000.0, 29.0)}
    s = e2e_gpu.summarize(_report("gpu", recs))
    assert s["gpu_e2e_steps_per_s_ratio_vs_rejax_dqn"] == pytest.approx(2.0)
    assert s["gpu_e2e_learned_dqn"] == {"jaxrl_pim": True, "rejax": True}
    assert s["gpu_e2e_steps_per_s_ratio_vs_rejax_ppo"] is None
    assert s["gpu_e2e_learned_ppo"] == {"jaxrl_pim": True, "rejax": False}
    assert s["gpu_e2e_steps_per_s_rejax_ppo"] == 90_000.0
    assert s["gpu_e2e_seconds_per_run_rejax_ppo"] == pytest.approx(13.0)
    assert not any(k.startswith("e2e_steps_per_s_ratio") for k in s)
    # the CPU: the same keys unprefixed; a side not measured: None, its flag None
    recs[("rejax", "dqn")] = None
    s = e2e_gpu.summarize(_report("cpu", recs))
    assert s["e2e_steps_per_s_ratio_vs_rejax_dqn"] is None
    assert s["e2e_learned_dqn"] == {"jaxrl_pim": True, "rejax": None}
    assert not any(k.startswith("gpu_") for k in s)
    assert e2e_gpu.learned(_rec(1.0, -240.0, random=-500.0)) is True  # Acrobot: -250 is
    assert e2e_gpu.learned(_rec(1.0, -260.0, random=-500.0)) is False  # the line
    assert e2e_gpu.learned(_rec(1.0, None)) is False


def test_plan_alternates_the_sides_on_the_cpu_rows_schedule() -> None:
    size = e2e_gpu.sizes("full")
    runs = e2e_gpu.plan(size)
    assert [(r["side"], r["spec"]["algo"]) for r in runs] == [
        ("jaxrl_pim", "dqn"), ("rejax", "dqn"), ("jaxrl_pim", "ppo"), ("rejax", "ppo")]
    full = e2e.sizes("full")
    for r in runs:
        assert r["spec"] == e2e.rl_spec(r["spec"]["algo"], "cartpole", full)
    assert e2e_gpu.sizes("smoke")["rl_algos"] == ["ppo"]


@pytest.mark.xdist_group(bench.group("e2e_gpu"))  # the provenance test's smoke run
def test_smoke_run_measures_the_library_and_names_why_rejax_was_not(smoke_run) -> None:
    run = smoke_run("e2e_gpu")  # python benchmarks/e2e_gpu.py --smoke --out <folder>
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    data = json.loads((run.out / "e2e_gpu_smoke.json").read_text())
    s = data["summary"]
    for algo in ("dqn", "ppo"):  # the CPU: unprefixed keys, None without rejax
        assert s[f"e2e_steps_per_s_ratio_vs_rejax_{algo}"] is None
    assert s["e2e_steps_per_s_jaxrl_pim_ppo"] > 0
    rows = {(r["side"], r["algo"]): r for r in data["results"]["runs"]}
    assert rows[("jaxrl_pim", "ppo")]["status"] == "measured"
    if rows[("rejax", "ppo")]["status"] == "not measured":  # no .peers/rejax on this host
        assert rows[("rejax", "ppo")]["reason"]
        assert s["e2e_not_measured"]
        assert s["e2e_learned_ppo"]["rejax"] is None
    else:  # rejax's venv is there: its side ran and was judged
        assert isinstance(s["e2e_learned_ppo"]["rejax"], bool)
