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

Every command compiles through jax's persistent compilation cache
(:func:`jaxrl_pim.xla_env.use_compile_cache`:
``JAX_COMPILATION_CACHE_DIR``, else ``~/.cache/jaxrl_pim/xla``; ``JAXRL_PIM_COMPILE_CACHE=off``
turns it off), so the same run again reads its programs back instead of compiling them.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import sys
from collections.abc import Callable, Sequence

from jaxrl_pim.cli._common import (
    STOP_GRACE_S,
    SUMMARIES,
    CommandParser,
    Stopped,
    quiet_absl,
    report_stop,
    stop_on_signals,
)
from jaxrl_pim.xla_env import apply_cpu_workarounds, use_compile_cache

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
