"""Seeds over 2 processes (``jax.distributed``, 4 CPU devices each) against the same seeds on
one process's 8 devices: the same partitioned per-device program, so ``jaxrl-pim launch --
marl --seeds`` reports, bit for bit, what one process of 8 devices reports (every seed's
final return from the curves gathered to process 0, and the greedy return of its trained
actors)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.support import subprocess_env

TIMEOUT_S = 300

FLAGS = ["marl", "--agents", "2", "--episodes", "4", "--capacity", "64", "--batch-size", "8",
         "--learning-starts", "8", "--update-every", "30", "--seeds", "8",
         "--eval-episodes", "2"]


@pytest.mark.slow
def test_the_command_over_two_processes_reports_the_seeds_of_one(tmp_path):
    """``jaxrl-pim launch --processes 2 -- marl --seeds 8`` against ``jaxrl-pim marl --seeds
    8`` on one process's 8 devices: the same final and greedy returns, bit for bit; process 0
    alone prints and writes the report."""
    runs = {"two": [sys.executable, "-m", "jaxrl_pim.cli", "launch", "--processes", "2",
                    "--devices-per-process", "4", "--", *FLAGS, "--json", "two.json"],
            "one": [sys.executable, "-m", "jaxrl_pim.cli", *FLAGS, "--json", "one.json"]}
    env = {"two": subprocess_env(), "one": subprocess_env(8)}
    for name, argv in runs.items():
        proc = subprocess.run(argv, cwd=tmp_path, env=env[name], capture_output=True,
                              text=True, timeout=TIMEOUT_S)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        if name == "two":
            lines = proc.stdout.splitlines()
            assert any(x.startswith("[0] seeds: 8 (0..7) in one vmapped program over 8 "
                                    "device(s) of 2 processes") for x in lines), lines
            assert not any(x.startswith("[1] final return") for x in lines)
    one = json.loads((tmp_path / "one.json").read_text())["results"]
    two = json.loads((tmp_path / "two.json").read_text())["results"]
    assert (one["processes"], two["processes"]) == (1, 2) and one["devices"] == 8
    for key in ("final_return_per_seed", "greedy_return_per_seed", "update_rounds"):
        assert one[key] == two[key], key
