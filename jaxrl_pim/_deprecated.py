"""Deprecated names: a module-level ``__getattr__`` that warns and forwards to the new name.

Renamed public names keep working for one release: ``module.OldName`` returns the new object
and emits a ``DeprecationWarning`` naming the replacement.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable
from typing import Any


def renamed(module: str, names: dict[str, str]) -> Callable[[str], Any]:
    """``__getattr__`` for ``module``: ``names`` maps each old name to the new dotted path
    (``"package.module.NewName"`` or ``"package.module"`` for a moved module)."""

    def __getattr__(name: str) -> Any:
        if name not in names:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        target = names[name]
        warnings.warn(f"{module}.{name} is deprecated; use {target}", DeprecationWarning,
                      stacklevel=2)
        return resolve(target)

    return __getattr__


def resolve(target: str) -> Any:
    """The object at dotted path ``target`` (a module, or an attribute of one)."""
    try:
        return importlib.import_module(target)
    except ModuleNotFoundError:
        mod, _, attr = target.rpartition(".")
        return getattr(importlib.import_module(mod), attr)


def moved_module(old: str, new: str) -> None:
    """Warn that module ``old`` moved to ``new`` (call at the top of the old module)."""
    warnings.warn(f"{old} is deprecated; use {new}", DeprecationWarning, stacklevel=3)
