"""Shared pytest fixtures; the helpers they wrap live in :mod:`tests.support`.

One persistent XLA compilation cache per run: ``pytest_configure`` of the first process (the
xdist controller, or the only process with ``-n 0``) makes a temporary folder and exports it
as ``JAX_COMPILATION_CACHE_DIR`` before any jax import, so the xdist workers and every
subprocess they start (``jaxrl-pim`` commands, :func:`tests.support.run_with_devices`)
share the compiled programs; the same program compiled again (a resumed run, the same
command in another test) is read back instead. The folder is removed at the end of the
run. A ``JAX_COMPILATION_CACHE_DIR`` already set is used as it is and kept.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile

import pytest

from jaxrl_pim.xla_env import apply_cpu_workarounds
from tests.support import fast_compilation, run_with_devices

# before any test module imports jax (jaxlib 0.10.2 XLA:CPU fusion bug, see xla_env)
apply_cpu_workarounds()

CACHE_DIR = "JAX_COMPILATION_CACHE_DIR"
# programs that took this long to compile are cached (jax's default is 1 s)
CACHE_MIN_COMPILE_S = "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"
_made_cache: list[str] = []


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get(CACHE_DIR):
        return  # set by the user, or inherited from the controller of these workers
    folder = tempfile.mkdtemp(prefix="jaxrl_pim_xla_cache_")
    _made_cache.append(folder)
    os.environ[CACHE_DIR] = folder
    os.environ.setdefault(CACHE_MIN_COMPILE_S, "0.5")
    if "jax" in sys.modules:  # imported by a plugin before the environment was read
        import jax

        jax.config.update("jax_compilation_cache_dir", folder)
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


@pytest.fixture(scope="module")
def logic_compilation():
    """For a whole module (``pytestmark = pytest.mark.usefixtures("logic_compilation")``): its
    programs compiled at XLA's lowest optimisation effort (:func:`tests.support.fast_compilation`),
    for modules that check program logic on small shapes, where the time is compilation and
    both sides of every comparison are compiled alike (or compared exactly)."""
    with fast_compilation():
        yield
