"""Shared pytest fixtures; the helpers they wrap live in :mod:`tests.support`."""

from __future__ import annotations

import pytest

from jaxrl_pim.xla_env import apply_cpu_workarounds
from tests.support import run_with_devices

# before any test module imports jax (jaxlib 0.10.2 XLA:CPU fusion bug, see xla_env)
apply_cpu_workarounds()


@pytest.fixture
def multi_device():
    """Fixture returning :func:`tests.support.run_with_devices`."""
    return run_with_devices
