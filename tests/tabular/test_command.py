"""The ``jaxrl-pim tabular`` command: report contents, saved Q-table, one-line errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from jaxrl_pim.cli import main

SMALL = ["tabular", "--transitions", "4000", "--cores", "8", "--episodes", "6",
         "--sync-period", "3", "--eval-episodes", "50", "--no-progress"]


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
        (["--cores", "0"], "num_cores must be >= 1"),
        (["--sync-period", "-1"], "sync_period must be >= 1"),
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
