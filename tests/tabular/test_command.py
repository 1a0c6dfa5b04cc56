"""The ``jaxrl-pim tabular`` command: report contents, saved Q-table, one-line errors, help
with defaults, datasets of your own MDP, progress only on a terminal."""

from __future__ import annotations

import json

import numpy as np
import pytest

from jaxrl_pim.cli import build_parser, main

SMALL = ["tabular", "--transitions", "4000", "--cores", "8", "--episodes", "6",
         "--sync-period", "3", "--eval-episodes", "50", "--no-progress"]


@pytest.mark.slow
def test_report_and_saved_q(tmp_path, capsys):
    rc = main(SMALL + ["--env", "taxi", "--dtype", "fp32", "--json", str(tmp_path / "r.json"),
                       "--save-q", str(tmp_path / "q.npy")])
    assert rc == 0
    report = json.loads((tmp_path / "r.json").read_text())
    assert set(report) >= {"system", "config", "results", "timing_s"}
    res = report["results"]
    for k in ("mean_return", "success_rate", "updates_per_s", "optimal_mean_return"):
        assert isinstance(res[k], float)
    assert res["updates"] == 4000 * 6 and res["dropped_rows"] == 0
    assert res["optimal_mean_return"] > 5  # optimal Taxi policy is about +8
    for phase in ("transfer_in", "compute", "sync", "transfer_out", "total"):
        assert report["timing_s"][phase] >= 0
    q = np.load(tmp_path / "q.npy")
    assert q.shape == (500, 6) and q.dtype == np.float32 and np.abs(q).max() > 0
    assert "updates/s" in capsys.readouterr().out


@pytest.mark.slow
def test_dataset_file_and_agents_mode(tmp_path):
    import jax

    from jaxrl_pim import data, envs

    env, params = envs.make("frozenlake")
    d = data.collect(env, params, jax.random.key(0), 3000)
    data.write_text(tmp_path / "fl.txt", d)
    assert main(SMALL + ["--dataset", str(tmp_path / "fl.txt"),
                         "--json", str(tmp_path / "a.json")]) == 0
    assert json.loads((tmp_path / "a.json").read_text())["results"]["dataset_rows"] == 3000
    assert main(["tabular", "--agents", "4", "--transitions", "500", "--episodes", "3",
                 "--eval-episodes", "20", "--no-progress", "--save-q",
                 str(tmp_path / "k.npy")]) == 0
    assert np.load(tmp_path / "k.npy").shape == (4, 16, 4)


@pytest.mark.parametrize(
    "extra,match",
    [
        (["--cores", "0"], "--cores must be >= 1"),
        (["--sync-period", "-1"], "--sync-period must be >= 1"),
        (["--transitions", "0"], "--transitions must be >= 1"),
        (["--cores", "5000"], "exceeds the dataset size"),
        (["--dataset", "/nonexistent/d.npz"], "not found"),
        (["--devices", "3"], "devices must be <="),
    ],
)
def test_bad_options_end_in_one_line(capsys, extra, match):
    assert main(SMALL + extra) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("jaxrl-pim tabular: error:")
    assert match in err[0]


def test_bad_dataset_file_is_one_line_error(tmp_path, capsys):
    bad = tmp_path / "bad.txt"
    bad.write_text("0 1 0 99\n")
    assert main(SMALL + ["--dataset", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "next_state must lie in [0, 15]" in err[0]


def _tabular_parser():
    parser = build_parser("tabular", full=False)
    return next(a for a in parser._actions if a.dest == "command").choices["tabular"]


def test_every_option_has_help_with_its_default():
    parser = _tabular_parser()
    text = " ".join(parser.format_help().split())
    for action in parser._actions:
        if action.dest == "help":
            continue
        assert action.help, f"{action.option_strings} has no help line"
        assert "(default" in parser.formatter_class(prog="x")._get_help_string(action), \
            f"{action.option_strings} shows no default"
    assert "(default: frozenlake; none with --num-states)" in text
    assert "s a r s' [terminated]" in text


def test_progress_only_on_a_terminal(monkeypatch):
    import sys

    from jaxrl_pim.cli._common import show_progress

    for out, err, want in [(True, True, True), (False, True, False), (True, False, False)]:
        monkeypatch.setattr("sys.stdout.isatty", lambda out=out: out)
        monkeypatch.setattr("sys.stderr.isatty", lambda err=err: err)
        assert show_progress(None, sys.stdout, sys.stderr) is want  # what tabular asks
        assert show_progress(None) is err  # stderr alone by default
        assert show_progress(True, sys.stdout) is True
        assert show_progress(False, sys.stdout) is False
    args = _tabular_parser().parse_args(["--no-progress"])
    assert args.progress is False and _tabular_parser().parse_args([]).progress is None


def test_own_mdp_dataset_trains_like_the_python_api(tmp_path, capsys):
    import jax

    from jaxrl_pim import data
    from jaxrl_pim.tabular import TabularConfig, chunk, make_train

    rng = np.random.default_rng(0)
    n, s, a = 3000, 11, 3
    d = data.Dataset(rng.integers(0, s - 1, n), rng.integers(0, a, n), rng.integers(-2, 3, n),
                     rng.integers(0, s, n), np.zeros(n, bool))
    path = tmp_path / "mine.txt"
    data.write_text(path, d, terminated=False)  # four columns; state 10 ends an episode
    argv = ["tabular", "--dataset", str(path), "--num-states", str(s), "--num-actions", str(a),
            "--terminal-states", "10", "--cores", "6", "--episodes", "5", "--sync-period", "2",
            "--dtype", "fp32", "--algo", "sarsa", "--no-progress", "--seed", "4",
            "--save-q", str(tmp_path / "q.npy"), "--json", str(tmp_path / "r.json")]
    assert main(argv) == 0
    out = capsys.readouterr()
    assert "6 lanes x 500 rows x 5 episodes = 1.5e+04 updates in 3 sync rounds" in out.err
    assert "skipped (no environment)" in out.out
    res = json.loads((tmp_path / "r.json").read_text())["results"]
    assert res["env"] is None and res["evaluation"].startswith("skipped: no environment")
    assert "mean_return" not in res and res["updates"] == 6 * 500 * 5
    # the same table as data.load -> chunk -> make_train with the command's training key
    mask = np.arange(s) == 10
    cfg = TabularConfig(s, a, algo="sarsa", num_cores=6, sync_period=2, num_episodes=5)
    loaded = data.load(path, s, a, terminal_states=mask)
    assert loaded.terminated.sum() == (d.next_state == 10).sum() > 0
    k_train = jax.random.split(jax.random.key(4), 3)[1]
    q, _ = jax.jit(make_train(cfg))(k_train, chunk(cfg, loaded))
    np.testing.assert_allclose(np.load(tmp_path / "q.npy"), np.asarray(q), rtol=1e-6,
                               atol=1e-7)


@pytest.mark.parametrize(
    "extra,match",
    [
        (["--num-states", "16"], "give both --num-states and --num-actions"),
        (["--num-states", "16", "--num-actions", "4"], "describe a --dataset file"),
        (["--terminal-states", "3"], "--terminal-states goes with --num-states"),
        (["--env", "taxi", "--dataset", "x.txt", "--num-states", "16", "--num-actions", "4"],
         "--env taxi has 500 states and 6 actions"),
        (["--dataset", "x.txt", "--num-states", "4", "--num-actions", "2",
          "--terminal-states", "1,7"], "--terminal-states 7 is not a state 0 .. 3"),
        (["--eval-episodes", "0"], "--eval-episodes must be >= 1"),
        (["--checkpoint", "c", "--checkpoint-every", "0"], "--checkpoint-every must be >= 1"),
    ],
)
def test_bad_mdp_options_end_in_one_line(capsys, extra, match):
    assert main(SMALL + extra) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("jaxrl-pim tabular: error:")
    assert match in err[0]
