"""Offline experience: the ``Dataset`` pytree (tabular transitions; formerly ``Transitions``),
behaviour policies, collection and file I/O."""

from jaxrl_pim._deprecated import renamed
from jaxrl_pim.data.collect import (
    BehaviourPolicy,
    boltzmann_policy,
    collect,
    collect_per_agent,
    epsilon_greedy_policy,
    uniform_policy,
)
from jaxrl_pim.data.io import load, load_npz, read_text, save_npz, write_text
from jaxrl_pim.data.transitions import (
    Dataset,
    Transitions,
    compact,
    concatenate,
    state_dtype,
    validate,
)

#: ``BehaviourPolicy``: a ``(key, state int32 []) -> action int32 []`` callable that collects
#: a tabular dataset (not :class:`jaxrl_pim.rl.ParametricPolicy`, a parametrised network).
__getattr__ = renamed(__name__, {"Policy": "jaxrl_pim.data.BehaviourPolicy"})

__all__ = [
    "BehaviourPolicy",
    "Dataset",
    "Transitions",
    "boltzmann_policy",
    "collect",
    "collect_per_agent",
    "compact",
    "concatenate",
    "epsilon_greedy_policy",
    "load",
    "load_npz",
    "read_text",
    "save_npz",
    "state_dtype",
    "uniform_policy",
    "validate",
    "write_text",
]
