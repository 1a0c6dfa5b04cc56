"""SIGTERM and Ctrl-C (SIGINT) stop a command at any stage: while it imports and builds,
and while XLA runs a long training program (where Python's handlers cannot run until it
returns; the watchdog of ``cli._common.stop_on_signals`` ends the process then), with
exit status 128 + the signal number and one line."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jaxrl_pim.cli._common import STOP_GRACE_S, Stopped, stop_on_signals

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 240  # time for a command to reach training on a busy 2-core machine
STOP_BOUND_S = STOP_GRACE_S + 12  # the grace plus interpreter shutdown on a busy machine

LONG_TABULAR = ["tabular", "--env", "taxi", "--cores", "8", "--transitions", "4000",
                "--episodes", "1000000", "--sync-period", "10", "--eval-episodes", "10",
                "--no-progress"]
LONG_MARL = ["marl", "--episodes", "100000", "--num-envs", "2", "--capacity", "1000",
             "--batch-size", "8", "--learning-starts", "100", "--no-progress",
             "--no-estimate"]


def _start(argv: list[str], log: Path) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT), JAX_PLATFORMS="cpu", PYTHONUNBUFFERED="1")
    with open(log, "wb") as out:
        return subprocess.Popen([sys.executable, "-m", "jaxrl_pim.cli", *argv], env=env,
                                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)


def _wait_for(proc: subprocess.Popen, log: Path, text: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while text not in log.read_text(errors="replace"):
        assert proc.poll() is None, f"exited early ({proc.returncode}):\n{log.read_text()}"
        assert time.monotonic() < deadline, f"{text!r} did not appear:\n{log.read_text()}"
        time.sleep(0.1)


def _stop(proc: subprocess.Popen, signum: int, log: Path) -> tuple[int, float, str]:
    """Send ``signum``; returns (exit status, seconds to exit, the log)."""
    t0 = time.monotonic()
    proc.send_signal(signum)
    try:
        status = proc.wait(timeout=STOP_BOUND_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"still running {STOP_BOUND_S} s after {signal.Signals(signum).name}:\n"
                    f"{log.read_text()}")
    return status, time.monotonic() - t0, log.read_text(errors="replace")


@pytest.mark.parametrize(("argv", "ready", "signum"), [
    (LONG_TABULAR, "sync rounds", signal.SIGTERM),  # the size line, printed before training
    (LONG_MARL, "plan:", signal.SIGINT),
    (LONG_MARL, "plan:", signal.SIGTERM),
], ids=["tabular-SIGTERM-training", "marl-SIGINT-training", "marl-SIGTERM-training"])
def test_a_training_command_stops_on_a_signal(argv, ready, signum, tmp_path):
    log = tmp_path / "log"
    proc = _start(argv, log)
    try:
        _wait_for(proc, log, ready)
        time.sleep(1.0)  # into compilation or the training program
        status, elapsed, text = _stop(proc, signum, log)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    assert status == 128 + signum, text
    assert elapsed < STOP_BOUND_S
    assert text.rstrip().splitlines()[-1] == (
        f"jaxrl-pim {argv[0]}: stopped by {signal.Signals(signum).name}"), text


@pytest.mark.parametrize("after_s", [0.5, 3.0])  # importing; building the data or compiling
def test_a_command_stops_on_sigterm_while_it_starts(tmp_path, after_s):
    log = tmp_path / "log"
    proc = _start(LONG_TABULAR, log)
    try:
        time.sleep(after_s)
        status, _, text = _stop(proc, signal.SIGTERM, log)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    # before the handlers are installed Python's default action ends it (status -15),
    # after that the command's own stop (143 and one line); never an abort or a traceback
    assert status in (-signal.SIGTERM, 128 + signal.SIGTERM), (status, text)
    assert "Traceback" not in text


def test_stop_handlers_raise_and_are_restored():
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(Stopped) as stopped, stop_on_signals("prog", grace_s=30,
                                                            raise_stop=True):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # the handler raises in the main thread before this ends
    assert stopped.value.signum == signal.SIGTERM and stopped.value.status == 143
    assert signal.getsignal(signal.SIGTERM) is before


def test_the_launcher_stops_its_processes_on_sigterm(tmp_path):
    """SIGTERM to ``jaxrl-pim launch``: it stops both processes of the run (which take SIGTERM
    back from ``jax.distributed``'s preemption notifier, so each ends with its own line rather
    than the launcher's SIGKILL) and exits with 143."""
    argv = ["launch", "--processes", "2", "--devices-per-process", "2", "--", *LONG_TABULAR]
    log = tmp_path / "log"
    proc = _start(argv, log)
    try:
        _wait_for(proc, log, "[0] process 0 of 2: lanes")
        time.sleep(2.0)
        status, _, text = _stop(proc, signal.SIGTERM, log)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    assert status == 128 + signal.SIGTERM, text
    lines = text.splitlines()
    stopped = [f"[{i}] jaxrl-pim tabular: stopped by SIGTERM" in lines for i in range(2)]
    # both get SIGTERM; the second may see the first leave before its own handler runs, and
    # then stops with the one-line lost-peer error instead (seen once in a full-suite run)
    assert any(stopped), text
    for i in range(2):
        own = [line for line in lines if line.startswith(f"[{i}] jaxrl-pim tabular: ")]
        assert stopped[i] or any("another process of the run died" in line for line in own), text
    assert lines[-1] == "jaxrl-pim launch: interrupted; stopped all processes", text
