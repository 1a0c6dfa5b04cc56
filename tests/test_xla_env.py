"""The XLA:CPU workaround flags: merged into XLA_FLAGS, and they stop a known jaxlib crash."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from jaxrl_pim.xla_env import (
    CPU_WORKAROUND_FLAGS,
    apply_cpu_workarounds,
    with_flags,
    without_flag,
)

# A rank-8 broadcast-multiply-reduce that XLA:CPU's ynn fusion path of jaxlib 0.10.2 crashes on
REPRO = """
import jax, jax.numpy as jnp
obs = jnp.ones((10, 4, 6), jnp.float32)
a = jnp.ones((10, 4, 6, 9, 9, 9, 9, 9), jnp.float32)
out = jax.jit(lambda o, a: jnp.sum(o[..., None, None, None, None, None] * a, axis=2))(obs, a)
print(float(out[0, 0, 0, 0, 0, 0, 0]))
"""


def test_with_flags_adds_missing_flags_and_keeps_the_users():
    assert with_flags("", "--a=1") == "--a=1"
    assert with_flags("--b=2", "--a=1") == "--b=2 --a=1"
    assert with_flags("--a=7 --b=2", "--a=1") == "--a=7 --b=2"  # the user's value wins
    env = {"XLA_FLAGS": "--xla_force_host_platform_device_count=8"}
    apply_cpu_workarounds(env)
    assert env["XLA_FLAGS"].split() == ["--xla_force_host_platform_device_count=8",
                                        *CPU_WORKAROUND_FLAGS]
    apply_cpu_workarounds(env)  # idempotent
    assert env["XLA_FLAGS"].split().count(CPU_WORKAROUND_FLAGS[0]) == 1


@pytest.mark.default_compilation  # the default optimisation level, where the fusion bug shows
def test_without_flag_drops_every_setting_of_the_name():
    assert without_flag("--a=1 --b=2 --a=3", "--a=9") == "--b=2"
    assert without_flag("--ab=1 --b", "--a") == "--ab=1 --b"  # whole names only
    assert without_flag("", "--a=1") == ""


def test_workaround_flags_run_the_crashing_program():
    env = dict(os.environ, JAX_PLATFORMS="cpu", XLA_FLAGS=" ".join(CPU_WORKAROUND_FLAGS))
    proc = subprocess.run([sys.executable, "-c", REPRO], capture_output=True, text=True,
                          env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert float(proc.stdout.strip()) == 6.0  # the sum of six ones
