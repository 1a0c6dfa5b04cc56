"""Shared pytest fixtures; the helpers they wrap live in :mod:`tests.support`.

One persistent XLA compilation cache per run: ``pytest_configure`` of the first process (the
xdist controller, or the only process with ``-n 0``) makes a temporary folder and exports it
as ``JAX_COMPILATION_CACHE_DIR`` before any jax import, so the xdist workers and every
subprocess they start (``jaxrl-pim`` commands, :func:`tests.support.run_with_devices`)
share the compiled programs; the same program compiled again (a resumed run, the same
command in another test) is read back instead. The folder is removed at the end of the
run. A ``JAX_COMPILATION_CACHE_DIR`` already set is used as it is and kept.

The run compiles at XLA's lowest optimisation effort (``tests.support.LOW_EFFORT``, set here
for the workers and their subprocesses unless already set) with XLA:CPU's legacy fusion
emitters (``tests.support.LEGACY_EMITTERS``, added with it) and one codegen module per program
(``tests.support.ONE_CODEGEN_MODULE``), and Numba at its lowest
optimisation level (``NUMBA_OPT=0``); tests marked ``default_compilation`` compile at the
default level, and tests marked ``default_emitters`` (bit-for-bit comparisons of differently
structured programs) run in a fresh pytest process with the default emitters.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from jaxrl_pim.xla_env import apply_cpu_workarounds, with_flags, without_flag
from tests.support import (
    LEGACY_EMITTERS,
    LOW_EFFORT,
    ONE_CODEGEN_MODULE,
    ROOT,
    default_compilation,
    run_with_devices,
    uses_legacy_emitters,
)

# before any test module imports jax (jaxlib 0.10.2 XLA:CPU fusion bug, see xla_env)
apply_cpu_workarounds()

CACHE_DIR = "JAX_COMPILATION_CACHE_DIR"
# programs that took this long to compile are cached (jax's default is 1 s)
CACHE_MIN_COMPILE_S = "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"
#: the run's threshold (seconds): every compile written to the cache cost about 5 % more CPU
#: time on a sample of test files (1,394 entries, most of them small jits compiled in
#: milliseconds that no other process reuses); above this, the programs a subprocess or a
#: resumed run compiles again
CACHE_MIN_COMPILE = "0.2"
_made_cache: list[str] = []


#: the fresh process of the ``default_emitters`` tests gets this long
DEFAULT_EMITTERS_TIMEOUT_S = 900
EMITTERS_GROUP = "default-emitters"


def pytest_configure(config: pytest.Config) -> None:
    if LOW_EFFORT not in os.environ:  # else set by the user, or inherited with XLA_FLAGS
        os.environ[LOW_EFFORT] = "1"
        os.environ["XLA_FLAGS"] = with_flags(os.environ.get("XLA_FLAGS", ""), LEGACY_EMITTERS,
                                             ONE_CODEGEN_MODULE)
        # the Numba baselines' kernels too, without LLVM's optimisation (tiny data in tests)
        os.environ.setdefault("NUMBA_OPT", "0")
    if not os.environ.get(CACHE_DIR):  # else set by the user, or inherited from the controller
        folder = tempfile.mkdtemp(prefix="jaxrl_pim_xla_cache_")
        _made_cache.append(folder)
        os.environ[CACHE_DIR] = folder
        os.environ.setdefault(CACHE_MIN_COMPILE_S, CACHE_MIN_COMPILE)
    config.pluginmanager.register(_GroupsInEffect(), "jaxrl-pim-groups-in-effect")
    if "jax" in sys.modules:  # imported by a plugin before the environment was read
        import jax

        jax.config.update("jax_disable_most_optimizations", os.environ[LOW_EFFORT] == "1")
        jax.config.update("jax_compilation_cache_dir", os.environ[CACHE_DIR])
        if CACHE_MIN_COMPILE_S in os.environ:
            jax.config.update("jax_persistent_cache_min_compile_time_secs",
                              float(os.environ[CACHE_MIN_COMPILE_S]))


class _GroupsInEffect:
    """Fails the grouped tests of a worker whose ``--dist loadgroup`` ignores their
    ``xdist_group`` marks: the groups keep each shared run (a smoke batch, the docs' pages,
    one local Ray) on one worker, and without them every worker repeats it. pytest-xdist 3.8
    marks a group by rewriting the node id (``<id>@<group>``), which pytest 9.2 no longer
    lets it do (its structured node ids), and the run grows longer silently."""

    def __init__(self) -> None:
        self.lost: set[str] = set()

    @pytest.hookimpl(trylast=True)  # after the worker's own hook added the groups
    def pytest_collection_modifyitems(self, config: pytest.Config,
                                      items: list[pytest.Item]) -> None:
        if getattr(config.option, "loadgroup", False):
            self.lost = {i.nodeid for i in items if "@" not in i.nodeid
                         and i.get_closest_marker("xdist_group") is not None}

    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        if item.nodeid in self.lost:
            pytest.fail(f"--dist loadgroup is not grouping: pytest {pytest.__version__} with "
                        "this pytest-xdist dropped the xdist_group of this test and "
                        f"{len(self.lost) - 1} others; install the versions pyproject.toml "
                        "bounds (pip install -e '.[dev]')", pytrace=False)


def pytest_unconfigure(config: pytest.Config) -> None:
    while _made_cache:
        shutil.rmtree(_made_cache.pop(), ignore_errors=True)


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The tests marked ``slow`` run first (otherwise in collection order): xdist hands tests
    out in this order, so a long test never starts last while the other worker idles. The
    tests marked ``default_emitters`` share one xdist group."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
    legacy = uses_legacy_emitters()
    for item in items:  # one worker runs them, from one fresh process
        if item.get_closest_marker("default_emitters") is not None:
            item.add_marker(pytest.mark.xdist_group(EMITTERS_GROUP))
            if legacy and isinstance(item, pytest.Function):
                # its outcome comes from the fresh process (pytest_pyfunc_call), which sets up
                # its fixtures: here they would run (a module's training runs) for nothing
                item.setup = _no_fixtures


def _no_fixtures() -> None:
    """``Function.setup`` of a ``default_emitters`` test in a process with the legacy
    emitters: no fixture is set up here (the test runs in the fresh process)."""


#: nodeid -> outcome of a ``default_emitters`` test in the fresh process: None (passed),
#: ("failed" | "skipped", text)
_emitter_runs: dict[str, tuple[str, str] | None] = {}


def _plain_id(item: pytest.Item) -> str:
    """``item``'s node id without the group suffix xdist adds (``...@default-emitters``)."""
    return item.nodeid.removesuffix(f"@{EMITTERS_GROUP}")


def _run_default_emitters(session: pytest.Session) -> str:
    """Run every selected ``default_emitters`` test not yet run in one fresh ``pytest``
    process without the legacy emitters; record each outcome from its JUnit XML report and
    return the process's output (for a test the report lacks)."""
    batch = [_plain_id(i) for i in session.items
             if i.get_closest_marker("default_emitters") and _plain_id(i) not in _emitter_runs]
    env = dict(os.environ)
    env["XLA_FLAGS"] = without_flag(env["XLA_FLAGS"], LEGACY_EMITTERS)
    with tempfile.TemporaryDirectory(prefix="jaxrl_pim_emitters_") as folder:
        report = Path(folder) / "report.xml"
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider",
             f"--junitxml={report}", *batch],
            cwd=ROOT, env=env, capture_output=True, text=True,
            timeout=DEFAULT_EMITTERS_TIMEOUT_S)
        cases = ET.parse(report).getroot().iter("testcase") if report.exists() else ()
        by_name = {}
        for case in cases:
            bad = next((c for c in case if c.tag in ("failure", "error", "skipped")), None)
            by_name[(case.get("classname"), case.get("name"))] = None if bad is None else (
                "skipped" if bad.tag == "skipped" else "failed",
                f"{bad.get('message', '')}\n{bad.text or ''}")
    for nodeid in batch:
        path, *_, name = nodeid.split("::")
        key = (path.removesuffix(".py").replace("/", "."), name)
        if key in by_name:
            _emitter_runs[nodeid] = by_name[key]
    return f"exit status {proc.returncode}:\n{proc.stdout[-6000:]}\n{proc.stderr[-3000:]}"


def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """A test marked ``default_emitters``, in a process with the legacy emitters, takes its
    outcome from a fresh ``pytest`` process without them (its fixtures run there only; all
    such tests of the run share one process and one xdist worker)."""
    if pyfuncitem.get_closest_marker("default_emitters") is None or not uses_legacy_emitters():
        return None
    nodeid, output = _plain_id(pyfuncitem), ""
    if nodeid not in _emitter_runs:
        output = _run_default_emitters(pyfuncitem.session)
    if nodeid not in _emitter_runs:
        pytest.fail(f"the default-emitters process did not report this test ({output})",
                    pytrace=False)
    outcome = _emitter_runs[nodeid]
    if outcome is not None:
        how, text = outcome
        where = "in a fresh process with XLA's default fusion emitters"
        if how == "skipped":
            pytest.skip(f"{where}: {text}")
        pytest.fail(f"{where}:\n{text}", pytrace=False)
    return True


@pytest.fixture
def multi_device():
    """Fixture returning :func:`tests.support.run_with_devices`."""
    return run_with_devices


@pytest.fixture(autouse=True)
def _marked_default_compilation(request):
    """Tests marked ``default_compilation`` (execution-bound runs: learning criteria, long
    training) compile, in this process and in the processes they start, at XLA's default
    optimisation level, as a user's program does."""
    if request.node.get_closest_marker("default_compilation") is None:
        yield
        return
    with default_compilation():
        yield
