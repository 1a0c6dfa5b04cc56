"""``jaxrl-pim actorq``: report schema of a tiny run; one-line errors with exit status 2."""

from __future__ import annotations

import json

from jaxrl_pim.cli import main


def test_actorq_command_writes_report(tmp_path, capsys):
    path = tmp_path / "aq.json"
    rc = main(["actorq", "--algo", "dqn", "--env", "CartPole-v1", "--precision", "int8",
               "--mode", "single", "--actors", "2", "--actor-update-period", "10",
               "--steps", "200", "--hidden", "8", "--seed", "1", "--json", str(path),
               "--no-progress"])
    assert rc == 0
    rep = json.loads(path.read_text())
    assert set(rep) >= {"system", "config", "results", "timing_s"}
    assert rep["config"]["precision"] == "int8" and rep["config"]["num_actors"] == 2
    run = rep["results"]["runs"]["int8"]
    assert run["env_steps"] == 200
    assert run["broadcasts"] == 1 + 100 // 10
    sizes = rep["results"]["broadcast_bytes"]
    assert sizes["fp32"] > 3 * sizes["int8"]
    assert rep["results"]["time_to_reward"] is None  # no fp32 run to compare with
    assert "int8" in capsys.readouterr().out


def test_actorq_command_rejects_bad_input(capsys):
    assert main(["actorq", "--algo", "d4pg", "--env", "CartPole-v1"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("jaxrl-pim actorq: error:") and "--env" in err  # the flag's name
    assert len(err.splitlines()) == 1
    assert main(["actorq", "--actors", "0", "--steps", "10"]) == 2
    err = capsys.readouterr().err
    assert "--actors" in err and "num_actors" not in err
