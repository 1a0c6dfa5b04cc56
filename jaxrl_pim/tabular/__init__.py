"""SwiftRL on lanes: offline tabular Q-learning and SARSA with one Q-table per lane.

Typical use::

    cfg = TabularConfig(num_states=16, num_actions=4, num_cores=2000, sync_period=50)
    train = jax.jit(make_train(cfg))
    q_table, metrics = train(jax.random.key(0), chunk(cfg, transitions))

A run in segments of whole sync rounds (to checkpoint it, or to stop and continue)::

    state = init_state(cfg, jax.random.key(0))
    segment = jax.jit(make_train_from(cfg, num_rounds=10))
    state, metrics = segment(state, chunks)   # rounds 0..9; state.round == 10
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

from jaxrl_pim.tabular.config import ALGOS, FORMATS, SAMPLINGS, TabularConfig

# Everything else loads jax, so it is imported on first use (PEP 562): ``import
# jaxrl_pim.tabular.config`` (the workload description) and ``from jaxrl_pim.tabular import
# TabularConfig`` load no jax.
_LAZY = {
    "EvalResult": "evaluate", "evaluate": "evaluate", "optimal_value": "evaluate",
    "value_iteration": "evaluate",
    "NumericFormat": "formats", "get_format": "formats",
    "stride_order": "sampling",
    "TabularState": "trainer", "chunk": "trainer", "dropped_rows": "trainer",
    "init_state": "trainer", "make_mesh": "trainer", "make_train": "trainer",
    "make_train_from": "trainer", "q_table": "trainer",
}
#: The package's modules, also given as attributes on first use (``tabular.formats``).
SUBMODULES = ("config", "evaluate", "formats", "lanes", "pallas_common", "pallas_gpu",
              "pallas_lanes", "pallas_select", "pallas_tpu", "rules", "runner", "sampling",
              "trainer")

if TYPE_CHECKING:  # the static import graph and type checkers see every name
    from jaxrl_pim.tabular.evaluate import EvalResult, evaluate, optimal_value, value_iteration
    from jaxrl_pim.tabular.formats import NumericFormat, get_format
    from jaxrl_pim.tabular.sampling import stride_order
    from jaxrl_pim.tabular.trainer import (
        TabularState,
        chunk,
        dropped_rows,
        init_state,
        make_mesh,
        make_train,
        make_train_from,
        q_table,
    )


class _Package(types.ModuleType):
    """This package's module type: the import system sets a submodule as an attribute of its
    package when it first loads it, which would hide the function ``evaluate`` behind the
    module ``evaluate``; a lazy name keeps its own value."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _LAZY and isinstance(value, types.ModuleType):
            return  # the submodule stays reachable as sys.modules[...]
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
        globals()[name] = value
        return value
    if name in SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY, *SUBMODULES})


__all__ = [
    "ALGOS",
    "FORMATS",
    "SAMPLINGS",
    "EvalResult",
    "NumericFormat",
    "TabularConfig",
    "TabularState",
    "chunk",
    "dropped_rows",
    "evaluate",
    "get_format",
    "init_state",
    "make_mesh",
    "make_train",
    "make_train_from",
    "optimal_value",
    "q_table",
    "stride_order",
    "value_iteration",
]
