"""Memory decided before allocation: a run's train-state bytes against the device's memory,
the largest capacity / number of seeds that fits, ``--capacity auto``, and the 48-agent
default that stops within seconds with one line."""

from __future__ import annotations

import dataclasses
import math
import os
import subprocess
import sys

import jax
import pytest

from jaxrl_pim.cli import build_parser, main
from jaxrl_pim.cli import marl as command
from jaxrl_pim.marl import plan
from jaxrl_pim.marl.config import MARLConfig
from jaxrl_pim.marl.trainer import make_init

SMALL = MARLConfig(num_agents=2, buffer_capacity=1000, batch_size=16, learning_starts=32,
                   hidden=(8,))


def _allocated_bytes(config: MARLConfig) -> int:
    shapes = jax.eval_shape(make_init(config), jax.random.PRNGKey(0))
    return sum(math.prod(x.shape) * x.dtype.itemsize for x in jax.tree.leaves(shapes))


@pytest.mark.parametrize("sampler", ["uniform", "prioritized"])
def test_state_bytes_at_any_capacity_equal_the_state_arrays(sampler):
    cfg = dataclasses.replace(SMALL, sampler=sampler)
    for rows in (100, 1000, 1025, 4096):  # the prioritised tree's leaves jump at 1025
        want = _allocated_bytes(dataclasses.replace(cfg, buffer_capacity=rows))
        assert plan.state_bytes(cfg, rows) == want
    assert plan.state_bytes(cfg) == _allocated_bytes(cfg)


def test_largest_capacity_and_seeds_are_the_edges_of_what_fits():
    seed_bytes = _allocated_bytes(SMALL)
    avail = (int(3.5 * seed_bytes / plan.MEMORY_FRACTION) + 1, "given")
    mp = plan.memory_plan(SMALL, seeds=2, devices=1, available=avail)
    assert mp.fits and mp.needed_bytes == 2 * seed_bytes and mp.max_seeds == 3
    rows = mp.max_capacity

    def two_fit(r):
        return 2 * _allocated_bytes(dataclasses.replace(SMALL, buffer_capacity=r)) \
            <= mp.usable_bytes

    assert rows > SMALL.buffer_capacity and two_fit(rows) and not two_fit(rows + 1)
    # 4 seeds over 2 accelerators: 2 per device memory; on a CPU host all 4 share it.
    over_devices = plan.memory_plan(SMALL, seeds=4, devices=2, available=(avail[0], "gpu"))
    on_host = plan.memory_plan(SMALL, seeds=4, devices=2, available=(avail[0], "host x"))
    assert over_devices.seeds_per_device == 2
    if jax.local_devices()[0].platform == "cpu":  # this platform's devices share the host
        assert not over_devices.fits
    assert not on_host.fits and on_host.needed_bytes == 4 * seed_bytes


def test_check_memory_stops_with_one_line_naming_what_fits():
    seed_bytes = _allocated_bytes(SMALL)
    avail = (int(2.5 * seed_bytes / plan.MEMORY_FRACTION), "given")
    assert plan.check_memory(SMALL, seeds=2, available=avail).fits
    with pytest.raises(ValueError) as err:
        plan.check_memory(SMALL, seeds=4, available=avail, flag="--capacity")
    msg = str(err.value)
    assert "\n" not in msg and "4 seeds x" in msg and "at most 2 seeds fit at 1,000 rows" in msg
    rows = plan.memory_plan(SMALL, 4, available=avail).max_capacity
    assert f"the largest --capacity that fits is {rows:,} rows" in msg
    assert plan.auto_capacity(SMALL, 4, available=avail) == rows < SMALL.buffer_capacity
    assert plan.auto_capacity(SMALL, 1, available=avail) == SMALL.buffer_capacity  # the cap
    with pytest.raises(ValueError, match="no buffer_capacity of at least 32 rows"):
        plan.auto_capacity(SMALL, 1, available=(1000, "given"))


def test_available_memory_reads_the_limit_or_the_host(monkeypatch):
    monkeypatch.setenv(plan.MEMORY_LIMIT_ENV, "2.5e9")
    assert plan.available_memory() == (2_500_000_000, plan.MEMORY_LIMIT_ENV)
    monkeypatch.setenv(plan.MEMORY_LIMIT_ENV, "lots")
    with pytest.raises(ValueError, match="must be a number of bytes"):
        plan.available_memory()
    monkeypatch.delenv(plan.MEMORY_LIMIT_ENV)
    if jax.local_devices()[0].memory_stats() is None and os.path.exists("/proc/meminfo"):
        got, source = plan.available_memory()
        with open("/proc/meminfo") as f:
            kib = next(int(line.split()[1]) for line in f if line.startswith("MemAvailable"))
        assert source == "host MemAvailable" and abs(got - kib * 1024) < 0.2 * kib * 1024


def test_capacity_auto_resolves_before_the_run(monkeypatch, capsys):
    monkeypatch.setenv(plan.MEMORY_LIMIT_ENV, str(_allocated_bytes(SMALL) * 3))
    args = build_parser().parse_args(
        ["marl", "--agents", "2", "--episodes", "1", "--capacity", "auto", "--batch-size", "16",
         "--learning-starts", "32"])
    config = command.config_from_args(args)
    assert config.buffer_capacity == command._auto_rows(args) == 1_000_000
    config, memory = command.fit_memory(args, config)
    assert memory["capacity_auto"] and memory["buffer_capacity"] == config.buffer_capacity
    assert config.buffer_capacity == plan.memory_plan(config).max_capacity
    assert plan.memory_plan(config).fits
    with pytest.raises(SystemExit) as stop:
        main(["marl", "--capacity", "lots"])
    assert stop.value.code == 2
    assert "a number of rows or auto" in capsys.readouterr().err


def test_the_48_agent_default_stops_within_seconds_with_one_line():
    """The default capacity at 48 agents (about 105 GiB of state): one line, exit 2, before any
    allocation. A machine with that much memory is given a 24 GB limit instead."""
    big = MARLConfig(num_agents=48)
    env = dict(os.environ)
    if plan.available_memory()[0] * plan.MEMORY_FRACTION >= plan.state_bytes(big):
        env[plan.MEMORY_LIMIT_ENV] = "24e9"
    proc = subprocess.run(
        [sys.executable, "-m", "jaxrl_pim.cli", "marl", "--agents", "48", "--episodes", "1"],
        capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and proc.stdout == ""
    assert "the run's train state needs 104.9 GiB (1,000,000 replay rows per team)" in lines[0]
    assert "the largest --capacity that fits is" in lines[0]


def test_seeds_auto_takes_the_most_seeds_that_fit(monkeypatch, capsys):
    """``--seeds auto``: the most seeds whose states fit (a memory limit of 5.5 states: 5),
    composed with ``--num-envs``; refused with ``--capacity auto`` and with a checkpoint."""
    cfg = dataclasses.replace(SMALL, num_envs=2, layout="interleaved")
    monkeypatch.setenv(plan.MEMORY_LIMIT_ENV,
                       str(int(_allocated_bytes(cfg) * 5.5 / plan.MEMORY_FRACTION)))
    assert plan.auto_seeds(cfg) == 5
    assert plan.auto_seeds(cfg, cap=3) == 3
    monkeypatch.setenv(plan.MEMORY_LIMIT_ENV, "1000")
    with pytest.raises(ValueError, match="not one seed's train state"):
        plan.auto_seeds(cfg)
    for extra, match in ((["--capacity", "auto"], "both size to the memory"),
                         (["--checkpoint", "ck"], "needs a fixed --seeds S")):
        assert main(["marl", "--seeds", "auto", "--episodes", "1", *extra]) == 2
        assert match in capsys.readouterr().err


def test_seeds_auto_runs_the_seeds_that_fit_with_several_envs(monkeypatch, tmp_path, capsys):
    args = ["marl", "--agents", "2", "--episodes", "2", "--capacity", "1000", "--batch-size",
            "16", "--learning-starts", "32", "--update-every", "25", "--num-envs", "2",
            "--layout", "interleaved", "--eval-episodes", "1"]
    config = command.config_from_args(build_parser().parse_args(args))
    one = plan.state_bytes(config)
    monkeypatch.setenv(plan.MEMORY_LIMIT_ENV, str(int(one * 3.5 / plan.MEMORY_FRACTION)))
    assert main([*args, "--seeds", "auto", "--json", str(tmp_path / "r.json")]) == 0
    assert "--seeds auto: 3 seeds fit" in capsys.readouterr().out
    import json

    report = json.loads((tmp_path / "r.json").read_text())
    assert len(report["results"]["seeds"]) == 3 == len(report["results"]["update_rounds"])
    assert report["results"]["memory"]["layout"] == "interleaved"


def test_the_layout_a_run_asks_for_none_of(monkeypatch):
    """No ``--layout``: the backend's measured fastest (``per_agent`` on a GPU, ``interleaved``
    on CPU), and ``compact`` where that layout's states do not fit but compact's do."""
    assert plan.default_layout("gpu") == "per_agent"
    assert plan.default_layout("cpu") == "interleaved" == plan.default_layout("tpu")
    args = build_parser().parse_args(
        ["marl", "--agents", "2", "--episodes", "1", "--capacity", "20000", "--batch-size",
         "16", "--learning-starts", "32"])
    config = command.config_from_args(args)
    assert config.layout == plan.default_layout()
    full = plan.state_bytes(config)
    compact = plan.state_bytes(dataclasses.replace(config, layout="compact"))
    assert compact < 0.7 * full
    monkeypatch.setenv(plan.MEMORY_LIMIT_ENV,
                       str(int((compact + full) / 2 / plan.MEMORY_FRACTION)))
    fitted, memory = command.fit_memory(args, config)
    assert fitted.layout == "compact" and memory["layout_reason"].startswith("the ")
    asked = build_parser().parse_args(
        ["marl", "--agents", "2", "--episodes", "1", "--capacity", "20000", "--batch-size",
         "16", "--learning-starts", "32", "--layout", "interleaved"])
    with pytest.raises(ValueError, match="the largest --capacity that fits"):
        command.fit_memory(asked, command.config_from_args(asked))
