"""Deprecated location of the MARL trainer (kept for one release).

The 788-line module became ``marl.config`` (:class:`MARLConfig`), ``marl.rules`` (targets
and losses), ``marl.learner`` / ``marl.rollout`` (the phases) and ``marl.trainer``
(``make_train``, ``make_train_from``, ``make_init``, ``random_policy_return``).
``from jaxrl_pim.marl.maddpg import X`` still works for the names below and warns;
``make_system`` returns the old 17-field ``System`` built from the new phases.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any, NamedTuple

from jaxrl_pim.marl import config as _config
from jaxrl_pim.marl import trainer as _trainer

_NEW_HOME = {
    "MARLConfig": _config,
    "ALGOS": _config,
    "ENVS": _config,
    "SAMPLING_MODES": _config,
    "SAMPLERS": _config,
    "LAYOUTS": _config,
    "TrainState": _trainer,
    "TeamParams": _trainer,
    "TeamBatch": _trainer,
    "make_env": _trainer,
    "make_sampler": _trainer,
    "make_train": _trainer,
    "make_train_from": _trainer,
    "make_init": _trainer,
    "random_policy_return": _trainer,
}


class System(NamedTuple):
    """The old bundle of a run's pieces (deprecated; use ``trainer.make_phases``)."""

    config: Any
    env: Any
    env_params: Any
    teams: tuple[Any, ...]
    buffers: tuple[Any, ...]
    sampler: Any
    init: Callable[..., Any]
    reset: Callable[..., Any]
    select_actions: Callable[..., Any]
    env_step: Callable[..., Any]
    buffer_add: Callable[..., Any]
    sample: Callable[..., Any]
    target_q: Callable[..., Any]
    critic_update: Callable[..., Any]
    actor_update: Callable[..., Any]
    target_update: Callable[..., Any]
    update_round: Callable[..., Any]


def _make_system(config: Any) -> System:
    env, env_params = _trainer.make_env(config)
    rollout, learner = _trainer.make_phases(config)
    return System(config, env, env_params, tuple(env.teams),
                  _trainer.make_buffers(config, tuple(env.teams)),
                  _trainer.make_sampler(config), *rollout, *learner)


def __getattr__(name: str) -> Any:
    if name == "make_system":
        value: Any = _make_system
        new = "jaxrl_pim.marl.trainer.make_phases"
    elif name in _NEW_HOME:
        module = _NEW_HOME[name]
        value = getattr(module, name)
        new = f"{module.__name__}.{name}"
    else:
        raise AttributeError(f"module 'jaxrl_pim.marl.maddpg' has no attribute {name!r}")
    warnings.warn(f"jaxrl_pim.marl.maddpg is deprecated; use {new}", DeprecationWarning,
                  stacklevel=2)
    return value
