"""`jaxrl-pim marl`: report schema, checkpoint + resume plumbing, one-line errors."""

from __future__ import annotations

import json

import numpy as np

from jaxrl_pim.cli import main

TINY = ["--env", "tag", "--agents", "3", "--num-envs", "2", "--batch-size", "8",
        "--capacity", "64", "--learning-starts", "16", "--update-every", "5", "--seed", "1",
        "--sampling-mode", "fast"]


def test_marl_command_report_checkpoint_and_resume(tmp_path, capsys):
    report, ck = tmp_path / "r.json", tmp_path / "ck.npz"
    assert main(["marl", *TINY, "--episodes", "2", "--json", str(report),
                 "--checkpoint", str(ck)]) == 0
    data = json.loads(report.read_text())
    assert set(data) >= {"system", "config", "results", "timing_s"}
    assert data["config"]["env"] == "tag" and data["config"]["num_agents"] == 3
    res = data["results"]
    assert res["teams"] == ["predators", "prey"]
    assert res["episodes_total"] == 2
    # 2 episodes x 25 steps; rounds after steps 10, 15, ..., 50 (16 rows stored by step 8).
    assert res["update_rounds"] == 9
    assert np.isfinite(list(res["final_return"].values())).all()
    assert {"compile", "train", "checkpoint"} <= set(data["timing_s"])
    assert "marl maddpg tag" in capsys.readouterr().out
    # Resume with the same total: nothing left to train, the checkpoint's counters come back.
    report2 = tmp_path / "r2.json"
    assert main(["marl", *TINY, "--episodes", "2", "--resume", str(ck),
                 "--json", str(report2)]) == 0
    res2 = json.loads(report2.read_text())["results"]
    assert res2["start_episode"] == 2 and res2["episodes_trained"] == 0
    assert res2["update_rounds"] == 9


def test_marl_command_errors_are_one_line(tmp_path, capsys):
    assert main(["marl", "--env", "tag", "--agents", "5", "--episodes", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "num_agents" in err[0]
    assert main(["marl", *TINY, "--episodes", "1", "--resume", str(tmp_path / "no.npz")]) == 2
    assert "does not exist" in capsys.readouterr().err
