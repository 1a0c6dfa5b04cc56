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

from jaxrl_pim.tabular.evaluate import EvalResult, evaluate, optimal_value, value_iteration
from jaxrl_pim.tabular.formats import FORMATS, NumericFormat, get_format
from jaxrl_pim.tabular.sampling import SAMPLINGS, stride_order
from jaxrl_pim.tabular.trainer import (
    ALGOS,
    TabularConfig,
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
