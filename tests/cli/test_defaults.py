"""Every command takes its defaults from its config class: each option that sets a config
field defaults to that field's default, to None (the config's value, chosen at run time, e.g.
per algorithm) or to a value the command's ``COMMAND_DEFAULTS`` names with its reason."""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

import pytest

from jaxrl_pim.cli import actorq, build_parser, marl, tabular


def _subparser(command: str) -> argparse.ArgumentParser:
    parser = build_parser(command, full=False)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[command]


def _config_defaults(command: str) -> dict[str, Any]:
    if command == "tabular":
        from jaxrl_pim.tabular import TabularConfig

        return {f.name: f.default for f in dataclasses.fields(TabularConfig)
                if f.default is not dataclasses.MISSING}
    if command == "marl":
        from jaxrl_pim.marl.config import MARLConfig

        cfg = MARLConfig()
    else:
        from jaxrl_pim.actorq.config import default_config

        cfg = default_config("dqn", "CartPole-v1")
    return {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg)}


def _option_defaults(command: str, module: Any) -> dict[str, tuple[str, Any]]:
    """config field -> (flag, the parser's default) for every option that sets a field."""
    by_flag = {o: a for a in _subparser(command)._actions for o in a.option_strings}
    out = {}
    for field in _config_defaults(command):
        flag = getattr(module, "FLAGS", {}).get(field, "--" + field.replace("_", "-"))
        if flag in by_flag:
            out[field] = (flag, by_flag[flag].default)
    return out


def _same(a: Any, b: Any) -> bool:
    norm = (lambda v: tuple(v) if isinstance(v, list | tuple) else v)
    return norm(a) == norm(b)


@pytest.mark.parametrize("command, module", [("tabular", tabular), ("marl", marl),
                                             ("actorq", actorq)])
def test_command_defaults_are_the_config_defaults(command: str, module: Any) -> None:
    config = _config_defaults(command)
    options = _option_defaults(command, module)
    assert len(options) >= 5, options  # the comparison covers the command's main options
    own = getattr(module, "COMMAND_DEFAULTS", {})
    differing = {}
    for field, (flag, default) in options.items():
        if default is None or _same(default, config[field]):
            continue
        differing[field] = default
        assert field in own and _same(default, own[field]), (
            f"{command} {flag} defaults to {default!r}, the config's {field} to "
            f"{config[field]!r}: take it from the config or name it in "
            "COMMAND_DEFAULTS with the reason")
    # nothing stale: every named exception is a real difference of this parser
    assert set(own) == set(differing), (own, differing)


def test_tabular_runs_the_headline_format_by_default() -> None:
    args = build_parser("tabular", full=False).parse_args(["tabular"])
    assert (args.dtype, args.cores, args.sync_period, args.episodes) == ("int32", 2000, 50,
                                                                          2000)
