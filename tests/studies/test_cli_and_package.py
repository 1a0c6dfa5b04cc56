"""The package surface: lazy ``import jaxrl_pim``, the command registry, help with defaults,
each package's ``__all__``, and no deprecated aliases."""

from __future__ import annotations

import argparse
import ast
import inspect
import os
import subprocess
import sys
import textwrap

import pytest

from jaxrl_pim import cli
from jaxrl_pim.xla_env import CPU_WORKAROUND_FLAGS, with_flags


def _run(code: str) -> str:
    env = dict(os.environ)
    env["XLA_FLAGS"] = with_flags(env.get("XLA_FLAGS", ""), *CPU_WORKAROUND_FLAGS)
    env["JAX_PLATFORMS"] = "cpu"
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_import_is_lazy_and_help_loads_no_jax():
    out = _run("""
        import sys
        import jaxrl_pim
        print("after import:", "jax" in sys.modules)
        from jaxrl_pim import cli
        try:
            cli.main(["--help"])
        except SystemExit:
            pass
        print("after help:", "jax" in sys.modules)
        print("dir:", sorted(n for n in jaxrl_pim.SUBMODULES if n in dir(jaxrl_pim)) ==
              sorted(jaxrl_pim.SUBMODULES))
        print("attribute:", callable(jaxrl_pim.quant.fake_quantize), "jax" in sys.modules)
        # the library's worlds and commands load no gymnax (its import loads its plotting)
        import jaxrl_pim.actorq, jaxrl_pim.cli.marl, jaxrl_pim.cli.tabular, jaxrl_pim.envs
        import jaxrl_pim.envs.playground, jaxrl_pim.marl, jaxrl_pim.tabular
        print("gymnax:", "gymnax" in sys.modules)
        print("FrozenLake:", jaxrl_pim.envs.FrozenLake.__module__, "gymnax" in sys.modules)
    """)
    assert "after import: False" in out and "after help: False" in out
    for name in cli.COMMANDS:
        assert f"    {name}" in out
    assert "dir: True" in out and "attribute: True True" in out
    assert "gymnax: False" in out
    assert "FrozenLake: gymnax.environments.misc.frozen_lake True" in out


def test_commands_are_registered_by_plain_imports():
    tree = ast.parse(inspect.getsource(cli))
    assert not any(isinstance(n, ast.Import) and any(a.name == "importlib" for a in n.names)
                   for n in ast.walk(tree))
    for _, register in cli.COMMANDS.values():
        body = ast.parse(textwrap.dedent(inspect.getsource(register)))
        imports = [n for n in ast.walk(body) if isinstance(n, ast.ImportFrom)]
        assert imports and imports[0].module.split(".")[0] == "jaxrl_pim", register.__name__


@pytest.mark.parametrize("command", ["ptq", "qat", "actorq"])
def test_every_option_has_help_with_its_default(command):
    parser = cli.build_parser(command, full=False)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    p = sub.choices[command]
    formatter = p.formatter_class(prog="x")
    options = [a for a in p._actions if a.dest != "help"]
    assert len(options) >= 8
    for action in options:
        text = formatter._get_help_string(action)
        assert text and len(text) > 25, action.dest
        assert "(default" in text, action.dest
    usage = p.format_help()
    assert "(default: 3)" in usage or command == "actorq"


def test_no_deprecated_modules_or_names_remain():
    import importlib
    import pathlib

    import jaxrl_pim

    root = pathlib.Path(jaxrl_pim.__file__).parent
    for old in ("_deprecated.py", "marl/maddpg.py", "marl/replay.py", "actorq/ptq.py",
                "actorq/qat.py", "actorq/networks.py", "actorq/study_command.py"):
        assert not (root / old).exists(), old
    old_names = {
        "jaxrl_pim.rl": ("Policy", "EvalResult", "ALGORITHMS"),
        "jaxrl_pim.rl.networks": ("Policy",),
        "jaxrl_pim.rl.evaluate": ("EvalResult",),
        "jaxrl_pim.actorq": ("Transition", "make_env", "run_multiprocess"),
        "jaxrl_pim.actorq.replay": ("Transition",),
        "jaxrl_pim.actorq.agent": ("make_env",),
        "jaxrl_pim.data": ("Policy", "Transitions"),
        "jaxrl_pim.data.collect": ("Policy",),
        "jaxrl_pim.marl": ("make_system",),
        "jaxrl_pim.marl.networks": ("MLP", "polyak", "categorical_entropy"),
        "jaxrl_pim.quant": ("fake_quant_ste", "fake_quantize_ste"),
        "jaxrl_pim.pim": ("Workload",),  # the model takes tabular.config.TabularConfig
    }
    for name, olds in old_names.items():
        module = importlib.import_module(name)
        hook = getattr(module, "__getattr__", None)  # no module-level alias hook (a lazy
        assert hook is None or hook.__module__ == "jaxrl_pim.lazy", name  # package's loader)
        for old in olds:
            assert not hasattr(module, old), f"{name}.{old}"


@pytest.mark.parametrize("name", ["quant", "actorq", "rl", "data", "marl", "replay", "envs",
                                  "tabular", "studies"])
def test_public_packages_export_what_all_lists(name):
    import importlib
    import types

    module = importlib.import_module(f"jaxrl_pim.{name}")
    listed = set(module.__all__)
    assert len(listed) == len(module.__all__), "duplicates in __all__"
    missing = {n for n in listed if not hasattr(module, n)}
    assert not missing, missing
    if name in ("quant", "actorq"):  # trimmed to the names a user composes with
        public = {n for n, v in vars(module).items() if not n.startswith("_")
                  and not isinstance(v, types.ModuleType)
                  and n not in ("annotations", "TYPE_CHECKING", "SUBMODULES")}  # lazy package
        assert public == listed, public ^ listed
