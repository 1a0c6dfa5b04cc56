"""Shared pytest fixtures; the helpers they wrap live in :mod:`tests.support`.

One persistent XLA compilation cache per run: ``pytest_configure`` of the first process (the
xdist controller, or the only process with ``-n 0``) makes a temporary folder and exports it
as ``JAX_COMPILATION_CACHE_DIR`` before any jax import, so the xdist workers and every
subprocess they start (``jaxrl-pim`` commands, :func:`tests.support.run_with_devices`)
share the compiled programs; the same program compiled again (a resumed run, the same
command in another test) is read back instead. The folder is removed at the end of the
run. A ``JAX_COMPILATION_CACHE_DIR`` already set is used as it is and kept.

The run compiles at XLA's lowest optimisation effort (``tests.support.LOW_EFFORT``, set here
for the workers and their subprocesses unless already set); tests marked
``default_compilation`` compile at the default level.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile

import pytest

from jaxrl_pim.xla_env import apply_cpu_workarounds
from tests.support import LOW_EFFORT, default_compilation, run_with_devices

# before any test module imports jax (jaxlib 0.10.2 XLA:CPU fusion bug, see xla_env)
apply_cpu_workarounds()

CACHE_DIR = "JAX_COMPILATION_CACHE_DIR"
# programs that took this long to compile are cached (jax's default is 1 s)
CACHE_MIN_COMPILE_S = "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"
_made_cache: list[str] = []


def pytest_configure(config: pytest.Config) -> None:
    os.environ.setdefault(LOW_EFFORT, "1")
    if not os.environ.get(CACHE_DIR):  # else set by the user, or inherited from the controller
        folder = tempfile.mkdtemp(prefix="jaxrl_pim_xla_cache_")
        _made_cache.append(folder)
        os.environ[CACHE_DIR] = folder
        os.environ.setdefault(CACHE_MIN_COMPILE_S, "0")
    if "jax" in sys.modules:  # imported by a plugin before the environment was read
        import jax

        jax.config.update("jax_disable_most_optimizations", os.environ[LOW_EFFORT] == "1")
        jax.config.update("jax_compilation_cache_dir", os.environ[CACHE_DIR])
        if CACHE_MIN_COMPILE_S in os.environ:
            jax.config.update("jax_persistent_cache_min_compile_time_secs",
                              float(os.environ[CACHE_MIN_COMPILE_S]))


def pytest_unconfigure(config: pytest.Config) -> None:
    while _made_cache:
        shutil.rmtree(_made_cache.pop(), ignore_errors=True)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The tests marked ``slow`` run first (otherwise in collection order): xdist hands tests
    out in this order, so a long test never starts last while the other worker idles."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


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
