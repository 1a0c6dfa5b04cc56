"""Helpers shared by the tests (no test module imports another test module).

* :func:`run_with_devices` and :func:`subprocess_env`: fresh Python processes with a given
  number of host CPU devices (``XLA_FLAGS`` must be set before jax loads).
* :mod:`.processes`: run a ``jaxrl-pim`` command and SIGKILL it at its first checkpoint.
* :mod:`.tabular`: the small tabular MDP shape and its random datasets.
* :func:`fast_compilation`: programs compiled inside at XLA's lowest optimisation effort.
* :mod:`.marl`: compiling the MARL learner programs at XLA's lowest optimisation level.
* :mod:`.actorq`: the categorical-projection reference loop and a tiny D4PG run.
* :mod:`.rl`: the single-agent learning runs and their assertions.
* :mod:`.bench`: one smoke run per benchmark command, shared by the tests that check it.
* :func:`run_docs_example`: a docs page's Python code run as a user would.

The reference implementations that the benchmarks also use live in ``jaxrl_pim.testing``.
Fixtures are in ``tests/conftest.py`` and in the folders' own ``conftest.py``.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

from jaxrl_pim.xla_env import CPU_WORKAROUND_FLAGS, with_flags

ROOT = Path(__file__).resolve().parents[2]

#: XLA:CPU's lowest backend optimisation level (``jax.jit(..., compiler_options=...)``): the
#: same HLO program with less LLVM optimisation of its machine code, compiled in about half
#: the time, with the same IEEE semantics. For short runs whose wall time is compilation.
FAST_COMPILE = {"xla_backend_optimization_level": 0}

#: The ``XLA_FLAGS`` entry the docs examples run with. They run small workloads, so their time
#: is almost all compilation (a training program takes 5-10 s to compile, well under 1 s to
#: run), which backend optimisation level 1 about halves: the same programs with less optimised
#: machine code (float results may differ in the last bits; the examples neither print them as
#: measured numbers nor assert on them). An ``XLA_FLAGS`` that already sets the level keeps it.
DOCS_EXAMPLE_FLAG = "--xla_backend_optimization_level=1"


def run_docs_example(code: str, cwd: Path, timeout_s: float = 600) -> subprocess.CompletedProcess:
    """Run the docs' Python ``code`` as a user would, in a fresh interpreter in ``cwd``, on CPU,
    with the XLA:CPU workaround flags, :data:`DOCS_EXAMPLE_FLAG` and matplotlib's ``Agg``
    backend; stdout and stderr captured as text."""
    env = dict(os.environ)
    env["XLA_FLAGS"] = with_flags(env.get("XLA_FLAGS", ""), *CPU_WORKAROUND_FLAGS,
                                  DOCS_EXAMPLE_FLAG)
    env["JAX_PLATFORMS"] = "cpu"
    env["MPLBACKEND"] = "Agg"
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout_s)


def subprocess_env(n_devices: int | None = None, fast_compile: bool = False) -> dict[str, str]:
    """This process's environment for a child Python on CPU: the XLA workaround flags,
    ``n_devices`` forced host devices when given, and the repository on ``PYTHONPATH``.

    ``fast_compile``: the child compiles every program with XLA's lowest optimisation effort
    (jax's ``JAX_DISABLE_MOST_OPTIMIZATIONS``: backend optimisation level 0, the same HLO and
    IEEE semantics in about half the compile time), for children that check program logic on
    tiny shapes; their results are compared with programs compiled the same way, or exactly
    (integer arithmetic)."""
    env = dict(os.environ)
    flags = [] if n_devices is None else [f"--xla_force_host_platform_device_count={n_devices}"]
    env["XLA_FLAGS"] = with_flags(*flags, *CPU_WORKAROUND_FLAGS)
    env["JAX_PLATFORMS"] = "cpu"
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    if fast_compile:
        env["JAX_DISABLE_MOST_OPTIMIZATIONS"] = "1"
    return env


def benchmark_env() -> dict[str, str]:
    """Environment of a benchmark script's smoke run: CPU only, no display, and XLA:CPU's
    lowest backend optimisation level (smoke sizes are compilation-bound; the same programs
    and IEEE semantics, and smoke timings are never published)."""
    env = dict(os.environ)
    env["XLA_FLAGS"] = with_flags(env.get("XLA_FLAGS", ""), "--xla_backend_optimization_level=0",
                                  *CPU_WORKAROUND_FLAGS)
    env["JAX_PLATFORMS"] = "cpu"
    env["MPLBACKEND"] = "Agg"
    return env


def run_with_devices(code: str, n_devices: int = 8, timeout: int = 600,
                     fast_compile: bool = False) -> str:
    """Run ``code`` in a fresh Python with ``n_devices`` forced host CPU devices; return stdout.

    ``XLA_FLAGS`` must be set before jax loads, hence the subprocess. ``fast_compile``: as in
    :func:`subprocess_env` (for code that compares programs it compiles itself).
    """
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=subprocess_env(n_devices, fast_compile),
        timeout=timeout,
    )
    if proc.returncode != 0:
        raise AssertionError(f"subprocess failed:\n{proc.stdout}\n{proc.stderr}")
    return proc.stdout


@contextlib.contextmanager
def fast_compilation() -> Iterator[None]:
    """Programs compiled inside are compiled with XLA's lowest optimisation effort (jax's
    ``jax_disable_most_optimizations``: backend optimisation level 0, no expensive LLVM
    passes); the setting before is restored on exit. Programs already compiled (jax's
    in-memory caches) are reused as they are, inside and after."""
    import jax  # not at import: tests/conftest.py sets the XLA flags first

    before = jax.config.read("jax_disable_most_optimizations")
    jax.config.update("jax_disable_most_optimizations", True)
    try:
        yield
    finally:
        jax.config.update("jax_disable_most_optimizations", before)
