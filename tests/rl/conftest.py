"""The learning runs of ``tests/rl`` (``tests.support.rl.CHECKS``) in one fresh process per
test session.

A test that uses ``learning_checks`` calls it with its check's name and fails with that
check's error. The fixture runs, once, the checks of every collected test that uses it (a
test is parametrized by its check's name, or is the one unparametrized
``progress_callback`` test), so a single selected test runs only its own check. Those tests
share the xdist group ``rl-learning``: one worker runs the process and all of them.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.support import default_compilation, subprocess_env
from tests.support.rl import CHECKS, RESULT

TIMEOUT_S = 900


def _check_of(item: pytest.Item) -> str:
    callspec = getattr(item, "callspec", None)
    return next(iter(callspec.params.values())) if callspec else "progress_callback"


@pytest.fixture(scope="session")
def learning_checks(request):
    names = [n for n in CHECKS if any(
        "learning_checks" in getattr(item, "fixturenames", ()) and _check_of(item) == n
        for item in request.session.items)]
    code = f"from tests.support.rl import run_checks\nrun_checks({names!r})\n"
    with default_compilation():  # execution-bound runs: the default optimisation level
        env = subprocess_env(1)
    try:
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              env=env, timeout=TIMEOUT_S)
        out, err, how = proc.stdout, proc.stderr, f"exit status {proc.returncode}"
    except subprocess.TimeoutExpired as exc:  # what it printed until then still counts
        text = lambda x: x.decode() if isinstance(x, bytes) else (x or "")  # noqa: E731
        out, err, how = text(exc.stdout), text(exc.stderr), f"timed out after {TIMEOUT_S} s"
    results = {}
    for line in out.splitlines():
        if line.startswith(RESULT):
            rec = json.loads(line[len(RESULT):])
            results[rec["name"]] = rec["error"]

    def result(name: str) -> None:
        assert name in names, f"{name} was not collected as a learning check"
        if name not in results:
            pytest.fail(f"the learning process ended ({how}) before check {name}:\n"
                        f"{out[-2000:]}\n{err[-4000:]}", pytrace=False)
        if results[name] is not None:
            pytest.fail(f"check {name} failed in the learning process:\n{results[name]}",
                        pytrace=False)

    return result
