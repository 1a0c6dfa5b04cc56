"""Seeds over 2 processes (``jax.distributed``, 4 CPU devices each) against the same seeds on
one process's 8 devices: the same partitioned per-device program, so the curves and states
agree bit for bit; every process gets the whole curves; ``jaxrl-pim launch -- marl --seeds``
reports what one process reports."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from jaxrl_pim.cli import launch
from tests.support import subprocess_env

TIMEOUT_S = 300

DRIVER = """
import sys
import jax, numpy as np
from jaxrl_pim import distributed
mode, port, pid, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
if mode == "multi":
    assert distributed.initialize(f"127.0.0.1:{port}", 2, pid, heartbeat_timeout_s=20) \\
        == (pid, 2)
assert len(jax.devices()) == 8
from jax.experimental import multihost_utils
from jaxrl_pim.marl import MARLConfig, seeds
cfg = MARLConfig(env="spread", num_agents=2, num_episodes=4, episode_length=5,
                 buffer_capacity=64, batch_size=8, learning_starts=8, update_every=3,
                 hidden=(8,))
run = seeds.run_seeds(cfg, seed=3, num_seeds=16)
assert run.devices == 8 and run.episode_return.shape == (16, 4, 1)
kernel = run.state.teams[0].critic["params"]["Dense_0"]["kernel"]
kernel = np.asarray(multihost_utils.process_allgather(kernel, tiled=True)
                    if mode == "multi" else kernel)
updates = np.asarray(multihost_utils.process_allgather(run.state.num_updates, tiled=True)
                     if mode == "multi" else run.state.num_updates)
np.savez(out, curves=run.episode_return, kernel=kernel, updates=updates)
print("DONE", pid)
"""


def _start(argv: list[str], devices: int, log: str, tmp_path) -> subprocess.Popen:
    env = dict(subprocess_env(devices), PYTHONUNBUFFERED="1")
    with open(tmp_path / f"{log}.log", "wb") as f:
        return subprocess.Popen([sys.executable, "-c", textwrap.dedent(DRIVER), *argv],
                                cwd=tmp_path, env=env, stdin=subprocess.DEVNULL, stdout=f,
                                stderr=subprocess.STDOUT)


@pytest.mark.slow
def test_two_processes_train_the_seeds_of_one(tmp_path):
    port = str(launch.free_port())
    procs = []
    try:
        procs.append(_start(["single", port, "0", str(tmp_path / "one.npz")], 8, "single",
                            tmp_path))
        procs += [_start(["multi", port, str(i), str(tmp_path / f"two{i}.npz")], 4,
                         f"multi{i}", tmp_path) for i in range(2)]
        for p, log in zip(procs, ("single", "multi0", "multi1"), strict=True):
            rc = p.wait(timeout=TIMEOUT_S)
            assert rc == 0, (tmp_path / f"{log}.log").read_text()[-3000:]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait(timeout=30)
    one = np.load(tmp_path / "one.npz")
    for i in range(2):
        two = np.load(tmp_path / f"two{i}.npz")
        for name in ("curves", "kernel", "updates"):
            np.testing.assert_array_equal(two[name], one[name], err_msg=name)
    assert (one["updates"] == 4).all()


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
