"""jaxrl_pim.envs: worlds that step, in the gymnax ``Environment`` API.

Tabular worlds (integer observation = state index): :class:`Taxi`, :class:`CliffWalking`,
:class:`FrozenLake` (re-exported from gymnax). ``make(name, **kwargs) -> (env, params)``
builds one by name; ``tabular_model(env)`` gives its known model as NumPy arrays.
"""

from __future__ import annotations

from typing import Any

from jaxrl_pim.checks import check_choice
from jaxrl_pim.envs.cliffwalking import CliffWalking
from jaxrl_pim.envs.frozenlake import FrozenLake
from jaxrl_pim.envs.model import TabularModel, tabular_model
from jaxrl_pim.envs.taxi import Taxi

# Multi-agent particle worlds (MPE) are exported below by their own module.

# name -> (constructor, allowed kwargs, fixed kwargs)
_REGISTRY: dict[str, tuple[Any, tuple[str, ...], dict[str, Any]]] = {
    "frozenlake": (FrozenLake, ("map_name", "is_slippery"), {}),
    "frozenlake8x8": (FrozenLake, ("is_slippery",), {"map_name": "8x8"}),
    "taxi": (Taxi, (), {}),
    "cliffwalking": (CliffWalking, ("is_slippery",), {}),
}

ENV_NAMES: tuple[str, ...] = tuple(_REGISTRY)


def make(name: str, **kwargs: Any) -> tuple[Any, Any]:
    """Build a tabular environment by name; return ``(env, env.default_params)``.

    Names and keyword arguments:

    * ``"frozenlake"``: ``map_name`` ("4x4" default or "8x8"), ``is_slippery`` (default True).
    * ``"frozenlake8x8"``: ``is_slippery`` (default True).
    * ``"taxi"``: none.
    * ``"cliffwalking"``: ``is_slippery`` (default False).

    Raises:
      ValueError: unknown name (the message lists the names) or unsupported keyword/value.
    """
    check_choice("env name", name, ENV_NAMES)
    ctor, allowed, fixed = _REGISTRY[name]
    unknown = sorted(set(kwargs) - set(allowed))
    if unknown:
        options = ", ".join(allowed) if allowed else "none"
        raise ValueError(f"make({name!r}) got unknown argument(s) {unknown}; allowed: {options}")
    if "map_name" in kwargs:
        check_choice("map_name", kwargs["map_name"], ("4x4", "8x8"))
    if "is_slippery" in kwargs and not isinstance(kwargs["is_slippery"], bool):
        raise ValueError(f"is_slippery must be a bool, got {kwargs['is_slippery']!r}")
    env = ctor(**fixed, **kwargs)
    return env, env.default_params


__all__ = [
    "ENV_NAMES",
    "CliffWalking",
    "FrozenLake",
    "TabularModel",
    "Taxi",
    "make",
    "tabular_model",
]
