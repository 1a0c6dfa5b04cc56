"""The package surface: lazy ``import jaxrl_pim``, the command registry, help with defaults,
and the deprecated names that keep old imports working for one release."""

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
    """)
    assert "after import: False" in out and "after help: False" in out
    for name in cli.COMMANDS:
        assert f"    {name}" in out
    assert "dir: True" in out and "attribute: True True" in out


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


def test_deprecated_modules_warn_and_reexport():
    out = _run("""
        import importlib, warnings
        for mod in ("jaxrl_pim.actorq.ptq", "jaxrl_pim.actorq.qat",
                    "jaxrl_pim.actorq.networks"):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                importlib.import_module(mod)
            print(mod, any(issubclass(w.category, DeprecationWarning) for w in caught))
        from jaxrl_pim.actorq import ptq, qat
        import jaxrl_pim.studies as S
        from jaxrl_pim.studies import report
        print(ptq.run_ptq is S.run_ptq, ptq.TASKS is S.TASKS, ptq.ptq_table is report.ptq_table,
              qat.run_qat is S.run_qat, qat.min_qat_ratio is report.min_qat_ratio)
    """)
    lines = out.splitlines()
    assert all(line.endswith("True") for line in lines[:3]), out
    assert lines[3] == "True True True True True"


def test_renamed_names_warn_and_resolve():
    import jax.numpy as jnp

    import jaxrl_pim.actorq as actorq
    import jaxrl_pim.actorq.replay as actorq_replay
    import jaxrl_pim.data as data
    import jaxrl_pim.rl as rl
    from jaxrl_pim.envs import make_with_info
    from jaxrl_pim.replay import NStepTransition
    from jaxrl_pim.rl import evaluate, networks

    expected = [
        (rl, "Policy", rl.ParametricPolicy),
        (networks, "Policy", rl.ParametricPolicy),
        (rl, "EvalResult", rl.EvalRollouts),
        (evaluate, "EvalResult", rl.EvalRollouts),
        (actorq, "Transition", NStepTransition),
        (actorq_replay, "Transition", NStepTransition),
        (actorq, "make_env", make_with_info),
        (data, "Policy", data.BehaviourPolicy),
    ]
    for module, old, new in expected:
        with pytest.warns(DeprecationWarning, match=old):
            assert getattr(module, old) is new
    with pytest.warns(DeprecationWarning):
        assert rl.ALGORITHMS == {k: m.__name__ for k, m in rl.LEARNERS.items()}
    assert data.Transitions is data.Dataset  # former name, kept as the same class
    with pytest.raises(AttributeError):
        rl.NoSuchName  # noqa: B018
    with pytest.warns(DeprecationWarning):
        from jaxrl_pim.actorq.agent import make_env
        assert make_env("CartPole-v1")[2] == make_with_info("CartPole-v1")[2]
    assert jnp.asarray(0).dtype  # jax is importable after all of this
