"""How the GPU suite runs one part: a process group under a time limit, its output logged.

:func:`run_part` starts a part's command in a new process session, copies its output to a log
and to standard output (prefixed with the part's name), and stops the whole group (SIGTERM,
SIGKILL 10 s later) when its time is up or when the suite itself receives SIGTERM
(:class:`Interrupted`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any


class Interrupted(Exception):
    """SIGTERM reached the suite: pack what finished and stop."""


def _pump(stream: Any, log: Any, prefix: str) -> None:
    for line in stream:
        log.write(line)
        log.flush()
        sys.stdout.write(f"[{prefix}] {line}")
        sys.stdout.flush()


def _stop(proc: subprocess.Popen[str]) -> None:
    """SIGTERM to the process group, SIGKILL after 10 s."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def run_part(cmd: list[str], env: dict[str, str], budget_s: float, log_path: Path,
                name: str) -> dict[str, Any]:
    """Run one part's command for at most ``budget_s`` seconds; ``{status, returncode,
    seconds, error}`` with status ``ok``, ``failed``, ``stopped at the deadline`` or (when
    SIGTERM interrupts the suite: :class:`Interrupted` is re-raised after the part is
    stopped and its row filled into ``Interrupted.args[0]``) ``interrupted``.

    A part past its time has its process group (the process started here and its children)
    sent SIGTERM, then SIGKILL after 10 s."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    with log_path.open("w") as log:
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, start_new_session=True)
        pump = threading.Thread(target=_pump, args=(proc.stdout, log, name), daemon=True)
        pump.start()
        timed_out = False
        try:
            proc.wait(timeout=max(budget_s, 0.1))
        except subprocess.TimeoutExpired:
            timed_out = True
            _stop(proc)
        except Interrupted:
            _stop(proc)
            pump.join(timeout=10)
            raise Interrupted({"status": "interrupted", "returncode": proc.returncode,
                               "seconds": time.perf_counter() - t0,
                               "error": "the suite received SIGTERM while it ran"}) from None
        pump.join(timeout=10)
    seconds = time.perf_counter() - t0
    out: dict[str, Any] = {"returncode": proc.returncode, "seconds": seconds, "error": None}
    if timed_out:
        out.update(status="stopped at the deadline",
                   error=f"stopped after the {budget_s:.0f} s left to it")
    elif proc.returncode != 0:
        tail = [ln for ln in log_path.read_text().splitlines() if ln.strip()][-3:]
        out.update(status="failed", error=f"exit status {proc.returncode}: "
                   + " | ".join(tail)[-400:])
    else:
        out["status"] = "ok"
    return out
