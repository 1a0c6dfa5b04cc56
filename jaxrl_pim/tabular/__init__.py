"""SwiftRL on lanes: offline tabular Q-learning and SARSA with one Q-table per lane.

Typical use::

    cfg = TabularConfig(num_states=16, num_actions=4, num_cores=2000, sync_period=50)
    train = jax.jit(make_train(cfg))
    q_table, metrics = train(jax.random.key(0), chunk(cfg, transitions))
"""

from jaxrl_pim.tabular.evaluate import EvalResult, evaluate, optimal_value, value_iteration
from jaxrl_pim.tabular.formats import FORMATS, NumericFormat, get_format
from jaxrl_pim.tabular.sampling import SAMPLINGS, stride_order
from jaxrl_pim.tabular.trainer import (
    ALGOS,
    TabularConfig,
    chunk,
    dropped_rows,
    make_mesh,
    make_train,
)

__all__ = [
    "ALGOS",
    "FORMATS",
    "SAMPLINGS",
    "EvalResult",
    "NumericFormat",
    "TabularConfig",
    "chunk",
    "dropped_rows",
    "evaluate",
    "get_format",
    "make_mesh",
    "make_train",
    "optimal_value",
    "stride_order",
    "value_iteration",
]
