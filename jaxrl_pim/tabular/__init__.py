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

from typing import TYPE_CHECKING

from jaxrl_pim import lazy
from jaxrl_pim.tabular.config import ALGOS, FORMATS, SAMPLINGS, TabularConfig

# Everything else loads jax, so it is imported on first use (PEP 562): ``import
# jaxrl_pim.tabular.config`` (the workload description) and ``from jaxrl_pim.tabular import
# TabularConfig`` load no jax.
if TYPE_CHECKING:  # where each name lives: type checkers, the import graph, lazy look-ups
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

# the names above, and the package's modules, on first use
__getattr__, __dir__ = lazy.attributes(__name__)
