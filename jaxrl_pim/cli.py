"""The ``jaxrl-pim`` command.

Each research line contributes its sub-commands from a ``command`` module that defines
``register(subparsers)``; the parser sets ``func`` (called with the parsed args, returns an
exit status). Invalid options or data (``ValueError``) end with a one-line error and exit
status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from jaxrl_pim.xla_env import apply_cpu_workarounds

# Modules that define ``register(subparsers: argparse._SubParsersAction) -> None``.
COMMAND_MODULES: tuple[str, ...] = (
    "jaxrl_pim.tabular.command",
    "jaxrl_pim.actorq.command",
    "jaxrl_pim.actorq.study_command",
    "jaxrl_pim.marl.command",
)


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser with every registered sub-command."""
    parser = argparse.ArgumentParser(
        prog="jaxrl-pim",
        description="Memory-bound RL workloads on accelerators with JAX.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def use_all_host_cores(argv: Sequence[str]) -> None:
    """Give XLA one CPU device per core for ``tabular`` runs, so lanes spread over every core
    through the mesh. Only effective before jax is first imported; an explicit
    ``--xla_force_host_platform_device_count`` in ``XLA_FLAGS`` is respected."""
    flags = os.environ.get("XLA_FLAGS", "")
    if argv[:1] == ["tabular"] and "xla_force_host_platform_device_count" not in flags:
        count = f"--xla_force_host_platform_device_count={os.cpu_count() or 1}"
        os.environ["XLA_FLAGS"] = f"{flags} {count}".strip()


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: parse ``argv`` and run the chosen sub-command; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if "jax" not in sys.modules:
        use_all_host_cores(argv)
        apply_cpu_workarounds()
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except (ValueError, FileNotFoundError) as err:
        msg = str(err).splitlines()[0] if str(err) else type(err).__name__
        print(f"jaxrl-pim {args.command}: error: {msg}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"jaxrl-pim {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
