"""`jaxrl-pim marl`: help lines with defaults, one-line errors, progress only on a terminal.

The report, the plan printed before a run, predator-prey sizes and checkpoint / resume through
the command are tested in ``test_checkpoint.py`` (one set of runs for all of them)."""

from __future__ import annotations

import argparse
import io
import json

from jaxrl_pim.cli import main
from jaxrl_pim.cli import marl as command
from jaxrl_pim.cli._common import show_progress


def test_marl_command_two_team_report(tmp_path, capsys):
    """Predator-prey given by its sizes: the world line, the plan and a report with one entry
    per team (one episode, stored before learning starts: no update round)."""
    path = tmp_path / "r.json"
    assert main(["marl", "--env", "tag", "--predators", "3", "--prey", "1",
                 "--num-envs", "2", "--episodes", "1", "--capacity", "100",
                 "--batch-size", "8", "--learning-starts", "100", "--json", str(path)]) == 0
    out = capsys.readouterr().out
    assert "plan: 1 episodes x 25 steps x 2 env(s) = 50 transitions, 0 update rounds" in out
    assert "marl maddpg tag predators=3 prey=1 obstacles=2: episodes 0->1" in out
    rep = json.loads(path.read_text())
    assert set(rep) >= {"system", "config", "results", "timing_s"}
    assert (rep["config"]["num_agents"], rep["config"]["num_prey"]) == (3, 1)
    res = rep["results"]
    assert res["teams"] == ["predators", "prey"] and list(res["final_return"]) == res["teams"]
    assert res["episodes_total"] == 1
    assert res["update_rounds"] == res["checkpoints_written"] == 0
    assert res["checkpoint_dir"] is None and res["resumed_from_episode"] is None


def test_marl_command_errors_are_one_line(capsys):
    assert main(["marl", "--env", "tag", "--agents", "5", "--episodes", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--agents" in err[0] and "num_agents" not in err[0]  # the flag
    assert main(["marl", "--episodes", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["jaxrl-pim marl: error: --episodes must be >= 1, got 0 (the run's total)"]
    for bad, msg in [(["--env", "spread", "--prey", "2"], "apply to --env tag"),
                     (["--num-envs", "0"], "--num-envs"),
                     (["--batch-size", "-1"], "--batch-size"),
                     (["--capacity", "0"], "--capacity"),
                     (["--update-every", "0"], "--update-every"),
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
    # the process flags are launch.add_arguments' (shared with tabular; no default to state)
    shared = {"coordinator", "num_processes", "process_id", "heartbeat_timeout"}
    for action in parser._actions:
        if action.dest == "help" or action.dest in shared:
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
    assert show_progress(None, _Stream(True)) is True
    assert show_progress(None, _Stream(False)) is False
    assert show_progress(True, _Stream(False)) is True
    assert show_progress(False, _Stream(True)) is False
