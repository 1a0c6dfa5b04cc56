"""Lazy package attributes (PEP 562) for the packages whose configs and constants load no jax.

A package ``__init__`` that imports its jax modules eagerly makes every ``import
jaxrl_pim.<package>.<leaf>`` pay for jax (1-2 s), even when the leaf is a jax-free config that
a command reads before its cheap checks. Such a package instead imports its jax names only for
type checkers, and installs the module-level ``__getattr__`` / ``__dir__`` this module builds
from that same block::

    from jaxrl_pim import lazy

    if TYPE_CHECKING:  # type checkers, the import graph and the lazy look-up read this
        from jaxrl_pim.marl.trainer import make_train

    __all__ = ["make_train"]
    __getattr__, __dir__ = lazy.attributes(__name__)

The ``TYPE_CHECKING`` block is the one place a name's home is written (as with
``lazy_loader``'s stub files): ``package.make_train`` then imports ``package.trainer`` on first
use and keeps the value in the package's namespace (later look-ups are plain attribute reads);
``package.trainer``, and every other module or sub-package in the package's folder, imports
that module. Imports nothing but the standard library.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any


def declared(package: str) -> dict[str, tuple[str, str]]:
    """``{public name: (module, name there)}`` from the ``from <package>.<module> import ...``
    statements of the package's ``if TYPE_CHECKING:`` blocks (``import a as b`` gives ``b``)."""
    tree = ast.parse(Path(sys.modules[package].__file__ or "").read_text())
    out = {}
    for block in tree.body:
        if isinstance(block, ast.If) and ast.unparse(block.test) == "TYPE_CHECKING":
            for node in block.body:
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                        package + "."):
                    out.update({a.asname or a.name: (node.module, a.name) for a in node.names})
    return out


def submodules(package: str) -> tuple[str, ...]:
    """The modules and sub-packages in the package's folder, sorted."""
    return tuple(sorted(m.name for m in pkgutil.iter_modules(sys.modules[package].__path__)))


class _Package(types.ModuleType):
    """A lazy package's module type: the import system sets a submodule as an attribute of its
    package when it first loads it, which would hide a function named like its module (the
    function ``tabular.evaluate``, the module ``tabular.evaluate``); a declared name keeps its
    own value (the declared names are the module's ``_lazy_names``)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in vars(self).get("_lazy_names", ()) and isinstance(value, types.ModuleType):
            return  # the submodule stays reachable as sys.modules[...]
        super().__setattr__(name, value)


def attributes(package: str) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``(__getattr__, __dir__)`` of package ``package`` (its ``__name__``), from its
    ``TYPE_CHECKING`` imports (:func:`declared`) and its folder (:func:`submodules`).

    An unknown name raises ``AttributeError`` as a module attribute look-up does.
    """
    names = declared(package)
    modules = submodules(package)
    module = sys.modules[package]
    module._lazy_names = frozenset(names)
    module.__class__ = _Package

    def __getattr__(name: str) -> Any:
        if name in names:
            home, attr = names[name]
            value = getattr(importlib.import_module(home), attr)
            setattr(module, name, value)
            return value
        if name in modules:
            return importlib.import_module(f"{package}.{name}")
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted({*vars(module), *names, *modules})

    return __getattr__, __dir__
