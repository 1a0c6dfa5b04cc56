"""`jaxrl-pim marl`: report schema, checkpoint + resume plumbing, the plan printed before a
run, predator-prey sizes, help lines, one-line errors."""

from __future__ import annotations

import argparse
import io
import json

import numpy as np

from jaxrl_pim.cli import main
from jaxrl_pim.marl import command
from jaxrl_pim.marl.command import progress_enabled

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
    assert res["update_rounds"] == 9 == res["plan"]["update_rounds"]
    assert np.isfinite(list(res["final_return"].values())).all()
    assert {"compile", "train", "checkpoint"} <= set(data["timing_s"])
    assert res["duration_estimate"] is None  # a short run: no estimate unless asked
    out, err = capsys.readouterr()
    assert "marl maddpg tag predators=3 prey=1 obstacles=2" in out
    assert "100 transitions, 9 update rounds" in out and "estimated duration" not in out
    assert err == ""  # stdout is not a terminal: no progress bar, and no warning
    # Resume with the same total, the world given by its sizes instead of the preset: nothing
    # left to train, the checkpoint's counters come back.
    report2 = tmp_path / "r2.json"
    resume = [a if a != "--agents" else "--predators" for a in TINY] + ["--prey", "1"]
    assert main(["marl", *resume, "--episodes", "2", "--resume", str(ck),
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
    for bad, msg in [(["--env", "spread", "--prey", "2"], "apply to --env tag"),
                     (["--env", "tag", "--predators", "4"], "go together"),
                     (["--env", "tag", "--agents", "3", "--predators", "3", "--prey", "1"],
                      "not both"),
                     (["--env", "tag", "--obstacles", "3"], "needs --predators")]:
        assert main(["marl", *bad, "--episodes", "1"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and msg in err[0], err


def _marl_parser() -> argparse.ArgumentParser:
    sub = argparse.ArgumentParser().add_subparsers()
    command.register(sub)
    return sub.choices["marl"]


def test_every_option_has_help_with_its_default():
    parser = _marl_parser()
    for action in parser._actions:
        if action.dest == "help":
            continue
        assert action.help and "default" in action.help, action.option_strings
    text = " ".join(parser.format_help().split())
    assert "12 = 12 predators + 4 prey + 4 obstacles" in text
    assert "--predators A" in text and "--no-progress" in text


class _Stream(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self._tty = tty

    def isatty(self) -> bool:
        return self._tty


def test_progress_is_on_for_a_terminal_unless_overridden():
    assert progress_enabled(None, _Stream(True)) is True
    assert progress_enabled(None, _Stream(False)) is False
    assert progress_enabled(True, _Stream(False)) is True
    assert progress_enabled(False, _Stream(True)) is False
