"""XLA flags this project sets before jax loads (imports nothing from jax).

jaxlib 0.10.2 enables XLA:CPU's ``ynn`` fusion path, which crashes or hangs on some
broadcast-multiply-reduce programs (a known upstream regression, fixed in later XNNPACK:
``jnp.sum(x[..., None, ...] * A, axis=2)`` on rank-8 arrays segfaults on this project's CPU
machines). ``--xla_cpu_experimental_ynn_fusion_type=`` (empty) turns the path
off; the test suite, the ``jaxrl-pim`` command and the spawned ActorQ actor processes set it.
A user program that imports jax itself should set it in ``XLA_FLAGS`` before that import.

The ``jaxrl-pim`` commands also turn on jax's persistent compilation cache here
(:func:`use_compile_cache`), through jax's own environment variables, before jax loads.

(The other jaxlib 0.10.2 CPU hang this project met, a deadlock of batched LAPACK QR under
``vmap``, is not a flag matter; see :func:`jaxrl_pim.rl.networks.orthogonal`.)
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, MutableMapping

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


#: ``JAXRL_PIM_COMPILE_CACHE=off`` runs a command without jax's persistent compilation cache.
COMPILE_CACHE_SWITCH = "JAXRL_PIM_COMPILE_CACHE"
#: jax's own environment variables (read when jax is imported, by the command's process and by
#: every process it starts): the cache folder, the shortest compile worth an entry, and the
#: cache's master switch.
JAX_CACHE_DIR = "JAX_COMPILATION_CACHE_DIR"
JAX_CACHE_MIN_COMPILE_S = "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"
JAX_CACHE_ENABLED = "JAX_ENABLE_COMPILATION_CACHE"
#: Programs that took at least this long (seconds) to compile are written to the cache: jax's
#: default (1 s) leaves out the MARL init and evaluation programs, and the tens of small jits
#: of 10-100 ms each that a command compiles again; below it, the few-millisecond jits whose
#: read costs about what their compile does.
CACHE_MIN_COMPILE_S = "0.01"


def compile_cache_dir(environ: Mapping[str, str] | None = None) -> str | None:
    """The folder of jax's persistent compilation cache the commands use (``environ``:
    default ``os.environ``): None when ``JAXRL_PIM_COMPILE_CACHE=off`` (also ``0``,
    ``false``, ``no``); else ``JAX_COMPILATION_CACHE_DIR`` when set; else
    ``$XDG_CACHE_HOME/jaxrl_pim/xla``, or ``~/.cache/jaxrl_pim/xla`` without it."""
    env = os.environ if environ is None else environ
    if env.get(COMPILE_CACHE_SWITCH, "").strip().lower() in ("off", "0", "false", "no"):
        return None
    if env.get(JAX_CACHE_DIR):
        return env[JAX_CACHE_DIR]
    base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "jaxrl_pim", "xla")


def use_compile_cache(environ: MutableMapping[str, str] | None = None) -> str | None:
    """Turn jax's persistent compilation cache on (or off) for this command and the processes
    it starts (``jaxrl-pim launch``'s, the ActorQ actors): sets jax's own variables in
    ``environ`` (default ``os.environ``), a folder and a threshold the user set kept
    (:func:`compile_cache_dir`, :data:`CACHE_MIN_COMPILE_S`); with the cache off, jax's
    ``JAX_ENABLE_COMPILATION_CACHE=false``. jax reads them when it is imported; when it
    already is (``main`` called in a program that uses jax), its config is updated too
    (effective before its first compilation). Returns the folder, or None when off. Imports
    no jax."""
    env = os.environ if environ is None else environ
    folder = compile_cache_dir(env)
    if folder is None:
        env[JAX_CACHE_ENABLED] = "false"
    else:
        env[JAX_CACHE_DIR] = folder
        env.setdefault(JAX_CACHE_MIN_COMPILE_S, CACHE_MIN_COMPILE_S)
    jax = sys.modules.get("jax") if environ is None else None
    if jax is not None:
        if folder is None:
            jax.config.update("jax_enable_compilation_cache", False)
        else:
            jax.config.update("jax_compilation_cache_dir", folder)
            jax.config.update("jax_persistent_cache_min_compile_time_secs",
                              float(env[JAX_CACHE_MIN_COMPILE_S]))
    return folder
