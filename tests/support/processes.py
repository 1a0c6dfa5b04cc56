"""Run a ``jaxrl-pim`` command and kill it mid-run (the tabular and MARL resume tests)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from jaxrl_pim.checkpoint import FILES


def checkpoint_steps(folder: Path) -> list[int]:
    """The complete steps in a checkpoint folder (named by their step, with the file list
    written last: a step killed before it is damaged), oldest first."""
    if not folder.exists():
        return []
    return sorted(int(p.name) for p in folder.iterdir()
                  if p.name.isdigit() and (p / FILES).is_file())


def kill_after_first_checkpoint(argv: list[str], folder: Path, log: Path,
                                env: dict[str, str], timeout_s: float) -> None:
    """Run ``python -m jaxrl_pim.cli *argv`` (output to ``log``) and SIGKILL it as soon as a
    checkpoint step appears in ``folder``; fails when the run ends first or takes longer
    than ``timeout_s`` seconds."""
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "jaxrl_pim.cli", *argv], env=env,
                                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + timeout_s
        while not checkpoint_steps(folder):
            assert proc.poll() is None, f"exited early ({proc.returncode}):\n" \
                                        f"{log.read_text()[-3000:]}"
            assert time.monotonic() < deadline, "no checkpoint appeared in time"
            time.sleep(0.02)
        assert proc.poll() is None, "the run ended before it could be killed mid-way"
        proc.kill()  # SIGKILL
        assert proc.wait(timeout=30) == -9
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
