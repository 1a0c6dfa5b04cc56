"""Offline experience: the ``Dataset`` pytree (tabular transitions),
behaviour policies, collection and file I/O."""

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
    compact,
    concatenate,
    state_dtype,
    validate,
)

__all__ = [
    "BehaviourPolicy",
    "Dataset",
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
