"""The ``jaxrl-pim`` command: the host wing of the package.

One module per command (:mod:`.tabular`, :mod:`.marl`, :mod:`.actorq`, :mod:`.studies` for
``ptq`` / ``qat``, :mod:`.launch`) defines ``register(subparsers)`` and its entry point
``main(args) -> int`` (called with the parsed args, returns an exit status), which
``_common.add_command`` makes the parser's ``func``. What they share (the help formatter, the
checkpoint-option check, the defaults read from the config classes) is in :mod:`._common`;
the training commands drive their trainers through one host runner, :mod:`jaxrl_pim.runner`.
The learner packages never import this package. The command modules are imported by plain
``import`` statements in the registrar functions below (visible to static import analysis),
and only the module of the command being run is imported, so ``jaxrl-pim --help`` lists the
commands without loading jax. Invalid options or data (``ValueError``) end with a one-line
error and exit status 2, never a traceback.

Every command compiles through jax's persistent compilation cache (:func:`use_compile_cache`:
``JAX_COMPILATION_CACHE_DIR``, else ``~/.cache/jaxrl_pim/xla``; ``JAXRL_PIM_COMPILE_CACHE=off``
turns it off), so the same run again reads its programs back instead of compiling them.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import sys
from collections.abc import Callable, Mapping, MutableMapping, Sequence

from jaxrl_pim.cli._common import (
    STOP_GRACE_S,
    SUMMARIES,
    CommandParser,
    Stopped,
    quiet_absl,
    report_stop,
    stop_on_signals,
)
from jaxrl_pim.xla_env import apply_cpu_workarounds

Registrar = Callable[[argparse._SubParsersAction], None]


def _tabular(sub: argparse._SubParsersAction) -> None:
    from jaxrl_pim.cli import tabular

    tabular.register(sub)


def _actorq(sub: argparse._SubParsersAction) -> None:
    from jaxrl_pim.cli import actorq

    actorq.register(sub)


def _studies(sub: argparse._SubParsersAction) -> None:
    from jaxrl_pim.cli import studies

    studies.register(sub)


def _marl(sub: argparse._SubParsersAction) -> None:
    from jaxrl_pim.cli import marl

    marl.register(sub)


def _launch(sub: argparse._SubParsersAction) -> None:
    from jaxrl_pim.cli import launch

    launch.register(sub)


#: Every sub-command: name -> (one-line summary for ``jaxrl-pim --help``, its registrar).
COMMANDS: dict[str, tuple[str, Registrar]] = {
    name: (SUMMARIES[name], register) for name, register in (
        ("tabular", _tabular), ("actorq", _actorq), ("ptq", _studies), ("qat", _studies),
        ("marl", _marl), ("launch", _launch))
}


def build_parser(command: str | None = None, full: bool = True) -> argparse.ArgumentParser:
    """The argument parser.

    ``command`` given: that command's module registers its full parser; with ``full`` (the
    default) every other command is registered fully too, otherwise it appears only by name
    and summary (enough to parse and to list, without importing its module).
    """
    parser = CommandParser(
        prog="jaxrl-pim",
        description="Memory-bound RL workloads on accelerators with JAX. "
        "Run 'jaxrl-pim COMMAND --help' for a command's options.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=CommandParser)
    done: set[Registrar] = set()
    for name, (_, register) in COMMANDS.items():
        if (full or name == command) and register not in done:
            register(sub)
            done.add(register)
    for name, (summary, _) in COMMANDS.items():
        if name not in sub.choices:
            sub.add_parser(name, help=summary)
    return parser


def version() -> str:
    """The installed package's version (``importlib.metadata``), or the source tree's
    ``jaxrl_pim.__version__`` when the package is not installed."""
    try:
        return importlib.metadata.version("jaxrl-pim")
    except importlib.metadata.PackageNotFoundError:
        from jaxrl_pim import __version__

        return __version__


def use_all_host_cores(argv: Sequence[str]) -> None:
    """Give XLA one CPU device per core for ``tabular`` runs, so lanes spread over every core
    through the mesh. Only effective before jax is first imported; an explicit
    ``--xla_force_host_platform_device_count`` in ``XLA_FLAGS`` is respected."""
    flags = os.environ.get("XLA_FLAGS", "")
    if argv[:1] == ["tabular"] and "xla_force_host_platform_device_count" not in flags:
        count = f"--xla_force_host_platform_device_count={os.cpu_count() or 1}"
        os.environ["XLA_FLAGS"] = f"{flags} {count}".strip()


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


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: parse ``argv`` and run the chosen sub-command; returns the exit status
    (0 done, 2 invalid options or data, 128 + the signal number when stopped by SIGTERM or
    Ctrl-C)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    command = argv[0] if argv and argv[0] in COMMANDS else None
    prog = f"jaxrl-pim {command}" if command else "jaxrl-pim"
    # the launcher stops its processes itself (SIGTERM, SIGKILL after 5 s): it gets Stopped
    # raised in its (plain Python) loop and the time for that; every other command ends at once
    launcher = command == "launch"
    with stop_on_signals(prog, grace_s=10.0 if launcher else STOP_GRACE_S, raise_stop=launcher):
        try:
            return _run(argv, command, prog)
        except Stopped as stop:
            report_stop(prog, stop.signum)
            return stop.status


def _run(argv: list[str], command: str | None, prog: str) -> int:
    if "jax" not in sys.modules:
        use_all_host_cores(argv)
        apply_cpu_workarounds()
    if command is not None:  # jax's persistent cache, for this process and those it starts
        use_compile_cache()
    parser = build_parser(command, full=False)
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:
        parser.print_help()
        return 2
    quiet_absl()  # orbax's absl WARNING lines would bury the command's own
    try:
        return int(args.func(args) or 0)
    except (ValueError, FileNotFoundError) as err:
        msg = str(err).splitlines()[0] if str(err) else type(err).__name__
        print(f"{prog}: error: {msg}", file=sys.stderr)
        return 2
