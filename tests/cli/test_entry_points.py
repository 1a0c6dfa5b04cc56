"""Every ``jaxrl-pim`` command is entered one way: its module's ``main(args) -> int``, the
function its parser calls with the parsed options."""

from __future__ import annotations

import argparse
import importlib

import pytest

from jaxrl_pim.cli import COMMANDS, build_parser

#: command -> the module that defines it
MODULES = {"tabular": "tabular", "actorq": "actorq", "ptq": "studies", "qat": "studies",
           "marl": "marl", "launch": "launch"}


def test_every_command_has_a_module() -> None:
    assert set(MODULES) == set(COMMANDS)


@pytest.mark.parametrize("command", sorted(MODULES))
def test_the_parser_calls_the_modules_main(command: str) -> None:
    module = importlib.import_module(f"jaxrl_pim.cli.{MODULES[command]}")
    parser = build_parser(command, full=False)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    func = sub.choices[command].get_default("func")
    assert func is module.main and func.__name__ == "main"
    # the one-line help in `jaxrl-pim --help` is the command's summary in COMMANDS
    assert next(a.help for a in sub._choices_actions if a.dest == command) == \
        COMMANDS[command][0]
