"""Helpers shared by the tests (no test module imports another test module).

* :func:`run_with_devices` and :func:`subprocess_env`: fresh Python processes with a given
  number of host CPU devices (``XLA_FLAGS`` must be set before jax loads).
* :mod:`.processes`: run a ``jaxrl-pim`` command and SIGKILL it at its first checkpoint.
* :mod:`.tabular`: the small tabular MDP shape and its random datasets.
* :data:`LOW_EFFORT` and :func:`default_compilation`: the run compiles at XLA's lowest
  optimisation effort, except inside ``default_compilation``.
* :mod:`.marl`: the tiny JaxMARL command run shared by the MARL policy tests.
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
from collections.abc import Iterator, Mapping
from pathlib import Path

from jaxrl_pim.xla_env import CPU_WORKAROUND_FLAGS, with_flags

ROOT = Path(__file__).resolve().parents[2]

#: XLA:CPU's lowest backend optimisation level (``jax.jit(..., compiler_options=...)``): the
#: same HLO program with less LLVM optimisation of its machine code, compiled in about half
#: the time, with the same IEEE semantics. For a program that must compile this way even in a
#: process at the default level.
FAST_COMPILE = {"xla_backend_optimization_level": 0}

#: jax's switch for XLA's lowest optimisation effort (``jax_disable_most_optimizations``:
#: backend optimisation level 0 and no expensive LLVM passes; the same HLO program and IEEE
#: semantics, compiled in less time; float results may differ from the default level's in the
#: last bits). ``tests/conftest.py`` sets it to ``1`` for the whole run, the xdist workers and
#: every process they start, unless it is already set: most tests run tiny shapes, where the
#: time is compilation. Execution-bound tests are marked ``default_compilation``.
LOW_EFFORT = "JAX_DISABLE_MOST_OPTIMIZATIONS"

#: XLA:CPU's legacy (LLVM IR) fusion emitters instead of its default MLIR ones: the same HLO program
#: compiled in less CPU time (seen ad hoc on two test files; the suite's time is in
#: ``benchmarks/results/cpu/suite_time.json``). ``tests/conftest.py`` adds it to ``XLA_FLAGS`` with
#: :data:`LOW_EFFORT`, for the xdist workers and the processes they start (:func:`script_env`
#: inherits it; :func:`subprocess_env` keeps it when this process has it). The legacy emitters round
#: some fusions differently, so two differently structured programs (a Pallas kernel and its scan
#: reference, a resumed and an uninterrupted run, jit and eager) can differ in the last bits where
#: the default emitters agree bit for bit: tests that assert such equality are marked
#: ``default_emitters`` and run in a fresh process without the flag, as a user's program compiles.
LEGACY_EMITTERS = "--xla_cpu_use_fusion_emitters=false"

#: XLA:CPU's code generation in one LLVM module per program instead of several compiled in
#: parallel: the tests' programs are small, and splitting them cost more CPU time than it
#: saved (8-11 % less user time on three samples of test files, 2 cores; the same HLO and the
#: same arithmetic). Added to ``XLA_FLAGS`` with :data:`LEGACY_EMITTERS` and kept in the
#: processes the tests start, the ``default_emitters`` process included.
ONE_CODEGEN_MODULE = "--xla_cpu_parallel_codegen_split_count=1"


def uses_legacy_emitters(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether ``XLA_FLAGS`` in ``environ`` (default this process's) selects
    :data:`LEGACY_EMITTERS`."""
    return LEGACY_EMITTERS in environ.get("XLA_FLAGS", "").split()


def run_docs_example(code: str, cwd: Path, timeout_s: float = 600) -> subprocess.CompletedProcess:
    """Run the docs' Python ``code`` as a user would, in a fresh interpreter in ``cwd``, in
    :func:`script_env`; stdout and stderr captured as text."""
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=script_env(),
                          capture_output=True, text=True, timeout=timeout_s)


def subprocess_env(n_devices: int | None = None, *,
                   default_emitters: bool = False) -> dict[str, str]:
    """This process's environment for a child Python on CPU: the XLA workaround flags,
    ``n_devices`` forced host devices when given, :data:`LEGACY_EMITTERS` when this process
    compiles with them (never with ``default_emitters``), :data:`ONE_CODEGEN_MODULE` when this
    process has it, and the repository on ``PYTHONPATH``."""
    env = dict(os.environ)
    flags = [] if n_devices is None else [f"--xla_force_host_platform_device_count={n_devices}"]
    if uses_legacy_emitters(env) and not default_emitters:
        flags.append(LEGACY_EMITTERS)
    if ONE_CODEGEN_MODULE in env.get("XLA_FLAGS", "").split():
        flags.append(ONE_CODEGEN_MODULE)
    env["XLA_FLAGS"] = with_flags(*flags, *CPU_WORKAROUND_FLAGS)
    env["JAX_PLATFORMS"] = "cpu"
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def script_env() -> dict[str, str]:
    """This process's environment for a script run as a user would (a docs example, a
    benchmark's smoke run): CPU only, the XLA:CPU workaround flags added to any ``XLA_FLAGS``,
    matplotlib's ``Agg`` backend (no display)."""
    env = dict(os.environ)
    env["XLA_FLAGS"] = with_flags(env.get("XLA_FLAGS", ""), *CPU_WORKAROUND_FLAGS)
    env["JAX_PLATFORMS"] = "cpu"
    env["MPLBACKEND"] = "Agg"
    return env


def run_with_devices(code: str, n_devices: int = 8, timeout: int = 600, *,
                     default_emitters: bool = False) -> str:
    """Run ``code`` in a fresh Python with ``n_devices`` forced host CPU devices; return stdout.

    ``XLA_FLAGS`` must be set before jax loads, hence the subprocess.
    """
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=subprocess_env(n_devices, default_emitters=default_emitters),
        timeout=timeout,
    )
    if proc.returncode != 0:
        raise AssertionError(f"subprocess failed:\n{proc.stdout}\n{proc.stderr}")
    return proc.stdout


@contextlib.contextmanager
def default_compilation() -> Iterator[None]:
    """Programs compiled inside, in this process and in the processes started inside, are
    compiled at XLA's default optimisation level (``LOW_EFFORT`` off); the settings before
    are restored on exit."""
    import jax

    before = jax.config.read("jax_disable_most_optimizations")
    before_env = os.environ.get(LOW_EFFORT)
    jax.config.update("jax_disable_most_optimizations", False)
    os.environ[LOW_EFFORT] = "0"
    try:
        yield
    finally:
        jax.config.update("jax_disable_most_optimizations", before)
        if before_env is None:
            os.environ.pop(LOW_EFFORT, None)
        else:
            os.environ[LOW_EFFORT] = before_env
