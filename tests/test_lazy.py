"""The packages that import lazily (:mod:`jaxrl_pim.lazy`): every public name is the object its
own module defines, every module is reachable as an attribute, and an unknown name is an
AttributeError. (That importing their configs and constants loads no jax: tests/test_pim.py.)

The reference for where a name lives is each ``__init__``'s own import statements (the eager
ones and those of its ``TYPE_CHECKING`` block, which type checkers and the import graph read),
not the lazy table that is under test.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path
from types import ModuleType

import pytest

PACKAGES = ("jaxrl_pim.envs", "jaxrl_pim.envs.mpe", "jaxrl_pim.marl", "jaxrl_pim.actorq",
            "jaxrl_pim.studies", "jaxrl_pim.tabular")


def _declared(package: ModuleType) -> dict[str, tuple[str, str]]:
    """public name -> (module, name there), from the package's ``from X import a as b``."""
    out = {}
    for node in ast.walk(ast.parse(Path(package.__file__).read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                package.__name__ + "."):
            for alias in node.names:
                out[alias.asname or alias.name] = (node.module, alias.name)
    return out


@pytest.mark.parametrize("name", PACKAGES)
def test_every_public_name_of_a_lazy_package_is_its_modules(name: str) -> None:
    package = importlib.import_module(name)
    declared = _declared(package)
    missing = sorted(set(package.__all__) - set(declared))
    assert not missing, f"{name}: no import names the home of {missing}"
    for public in package.__all__:
        home, there = declared[public]
        assert getattr(package, public) is getattr(importlib.import_module(home), there), public
        assert public in dir(package)
    folder = Path(package.__file__).parent
    modules = {p.stem for p in folder.glob("*.py") if p.stem != "__init__"}
    modules |= {p.parent.name for p in folder.glob("*/__init__.py")}
    for module in sorted(modules - set(declared)):  # every module, a new one too
        assert getattr(package, module) is importlib.import_module(f"{name}.{module}")
        assert module in dir(package)
    with pytest.raises(AttributeError, match=f"module '{name}' has no attribute 'nothing'"):
        package.nothing  # noqa: B018


def test_a_name_from_a_lazy_package_stays_the_same_object() -> None:
    from jaxrl_pim import envs, marl
    from jaxrl_pim.envs import factory
    from jaxrl_pim.marl import evaluate, policies

    assert envs.ENV_NAMES is envs.TABULAR_NAMES is factory.TABULAR_NAMES  # another name there
    assert marl.evaluate is evaluate is policies.evaluate and callable(marl.evaluate)
    assert "evaluate" in vars(marl)  # kept in the namespace after the first look-up
