"""What every ``jaxrl-pim`` command shares: the help formatter and the check of the
checkpoint options.

Imports nothing heavier than ``argparse``, so registering a command's options costs no jax
import.
"""

from __future__ import annotations

import argparse


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Help that appends each option's default as ``(default: ...)`` unless the help text
    already says it (write ``(default: ...)`` yourself where the value needs words, e.g.
    ``None``); the help text itself states the unit."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if "(default" in text:
            return text
        return super()._get_help_string(action)


def check_checkpoint_arguments(args: argparse.Namespace) -> None:
    """Refuses ``--resume`` or ``--checkpoint-every`` without ``--checkpoint DIR``, and a period
    below 1: the one check of the checkpoint options every training command takes."""
    if args.checkpoint is None:
        if args.resume:
            raise ValueError("--resume needs --checkpoint DIR (the folder to resume from)")
        if args.checkpoint_every is not None:
            raise ValueError("--checkpoint-every needs --checkpoint DIR")
    if args.checkpoint_every is not None and args.checkpoint_every < 1:
        raise ValueError(f"--checkpoint-every must be >= 1, got {args.checkpoint_every}")
