"""XLA flags this project sets before jax loads (imports nothing from jax).

jaxlib 0.10.2 enables XLA:CPU's ``ynn`` fusion path, which crashes or hangs on some
broadcast-multiply-reduce programs (a known upstream regression, fixed in later XNNPACK:
``jnp.sum(x[..., None, ...] * A, axis=2)`` on rank-8 arrays segfaults on this project's CPU
machines). ``--xla_cpu_experimental_ynn_fusion_type=`` (empty) turns the path
off; the test suite, the ``jaxrl-pim`` command and the spawned ActorQ actor processes set it.
A user program that imports jax itself should set it in ``XLA_FLAGS`` before that import.

(The other jaxlib 0.10.2 CPU hang this project met, a deadlock of batched LAPACK QR under
``vmap``, is not a flag matter; see :func:`jaxrl_pim.rl.networks.orthogonal`.)
"""

from __future__ import annotations

import os

CPU_WORKAROUND_FLAGS: tuple[str, ...] = ("--xla_cpu_experimental_ynn_fusion_type=",)


def _name(flag: str) -> str:
    """``--xla_name=value`` -> ``--xla_name``."""
    return flag.split("=", 1)[0]


def with_flags(flags: str, *extra: str) -> str:
    """``flags`` (an ``XLA_FLAGS`` value) plus each flag of ``extra`` whose name it lacks."""
    out = flags.split()
    for flag in extra:
        if not any(_name(f) == _name(flag) for f in out):
            out.append(flag)
    return " ".join(out)


def without_flag(flags: str, flag: str) -> str:
    """``flags`` (an ``XLA_FLAGS`` value) without any setting of ``flag``'s name."""
    return " ".join(f for f in flags.split() if _name(f) != _name(flag))


def apply_cpu_workarounds(environ: dict[str, str] | None = None) -> None:
    """Add :data:`CPU_WORKAROUND_FLAGS` to ``environ["XLA_FLAGS"]`` (default ``os.environ``).

    Only effective before jax initialises its backends; a flag already present (with any
    value) is left as the user set it.
    """
    env = os.environ if environ is None else environ
    env["XLA_FLAGS"] = with_flags(env.get("XLA_FLAGS", ""), *CPU_WORKAROUND_FLAGS)
