"""Lazy package attributes (PEP 562) for the packages whose configs and constants load no jax.

A package ``__init__`` that imports its jax modules eagerly makes every ``import
jaxrl_pim.<package>.<leaf>`` pay for jax (1-2 s), even when the leaf is a jax-free config that
a command reads before its cheap checks. Such a package instead names where each public name
lives and installs the module-level ``__getattr__`` / ``__dir__`` this module builds::

    _LAZY = {"make_train": "trainer", "MARLConfig": "config"}
    __getattr__, __dir__ = lazy.attributes(__name__, _LAZY, SUBMODULES)

``package.make_train`` then imports ``package.trainer`` on first use and keeps the value in the
package's namespace (later look-ups are plain attribute reads); ``package.trainer`` imports
the submodule. Imports nothing but the standard library.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any


def attributes(package: str, names: Mapping[str, str], submodules: Iterable[str] = ()
               ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``(__getattr__, __dir__)`` of package ``package`` (its ``__name__``).

    ``names`` maps each lazy public name to the submodule (relative to ``package``) that
    defines it, or to ``"submodule:name"`` where it has another name there; ``submodules``
    are the package's modules, also given as attributes on first use. An unknown name raises
    ``AttributeError`` as a module attribute look-up does.
    """
    names = dict(names)
    submodules = tuple(submodules)

    def __getattr__(name: str) -> Any:
        if name in names:
            module, _, attr = names[name].partition(":")
            value = getattr(importlib.import_module(f"{package}.{module}"), attr or name)
            setattr(sys.modules[package], name, value)
            return value
        if name in submodules:
            return importlib.import_module(f"{package}.{name}")
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *names, *submodules})

    return __getattr__, __dir__
