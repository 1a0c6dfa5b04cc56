"""Shared pytest fixtures and helpers."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from jaxrl_pim.xla_env import CPU_WORKAROUND_FLAGS, apply_cpu_workarounds, with_flags

# before any test module imports jax (jaxlib 0.10.2 XLA:CPU fusion bug, see xla_env)
apply_cpu_workarounds()


def run_with_devices(code: str, n_devices: int = 8, timeout: int = 600) -> str:
    """Run ``code`` in a fresh Python with ``n_devices`` forced host CPU devices; return stdout.

    ``XLA_FLAGS`` must be set before jax loads, hence the subprocess.
    """
    env = dict(os.environ)
    env["XLA_FLAGS"] = with_flags(f"--xla_force_host_platform_device_count={n_devices}",
                                  *CPU_WORKAROUND_FLAGS)
    env["JAX_PLATFORMS"] = "cpu"
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )
    if proc.returncode != 0:
        raise AssertionError(f"subprocess failed:\n{proc.stdout}\n{proc.stderr}")
    return proc.stdout


@pytest.fixture
def multi_device():
    """Fixture returning :func:`run_with_devices`."""
    return run_with_devices
