"""The one environment factory: ``make(env) -> (env, env_params)`` and ``describe`` for learners.

``make`` accepts, in this order:

* an environment object (anything with the gymnax ``reset`` / ``step`` API), or a pair
  ``(env, env_params)``: returned as ``(env, env_params)`` (``env.default_params`` when no
  parameters are given), so a user's own world goes wherever a name does;
* a tabular name (:data:`TABULAR_NAMES`: ``frozenlake``, ``frozenlake8x8``, ``taxi``,
  ``cliffwalking``), with the keyword arguments listed in :func:`make`;
* ``"playground/<EnvName>[@<max_steps>]"``: a MuJoCo Playground DM Control task behind the
  gymnax API (:mod:`jaxrl_pim.envs.playground`, needs the ``playground`` extra);
* any name registered with gymnax (``gymnax.registered_envs``, e.g. ``"CartPole-v1"``,
  ``"Pendulum-v1"``, ``"Breakout-MinAtar"``), keyword arguments passed to ``gymnax.make``.

``describe(env, env_params) -> EnvInfo`` gives the static facts a learner sizes its networks
from (observation size, discrete or continuous actions and their count or bounds, time limit).
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from jaxrl_pim.checks import check_choice

# name -> (constructor class name, allowed kwargs, fixed kwargs); constructors are looked
# up lazily so that importing this module does not build anything.
_TABULAR: dict[str, tuple[str, tuple[str, ...], dict[str, Any]]] = {
    "frozenlake": ("FrozenLake", ("map_name", "is_slippery"), {}),
    "frozenlake8x8": ("FrozenLake", ("is_slippery",), {"map_name": "8x8"}),
    "taxi": ("Taxi", (), {}),
    "cliffwalking": ("CliffWalking", ("is_slippery",), {}),
}

#: The tabular worlds built by name (integer observations; SwiftRL's datasets).
TABULAR_NAMES: tuple[str, ...] = tuple(_TABULAR)


class EnvInfo(NamedTuple):
    """Static facts about an environment (host-side), from :func:`describe`.

    Attributes:
      name: the name it was built from ("" for a user's object).
      obs_dim: length of a flat observation vector (product of the observation shape).
      obs_shape: the observation shape.
      discrete: True for a discrete (``Discrete(n)``) action space.
      num_actions: number of actions (discrete spaces; 0 otherwise).
      action_dim: action vector length (continuous spaces; 0 otherwise).
      action_low / action_high: smallest lower and largest upper action bound (continuous;
        0.0 otherwise).
      max_steps: the time limit in steps (``env_params.max_steps_in_episode``; 0 if none).
    """

    name: str
    obs_dim: int
    discrete: bool
    num_actions: int
    action_dim: int
    action_low: float
    action_high: float
    max_steps: int
    obs_shape: tuple[int, ...] = ()


def is_env_object(env: Any) -> bool:
    """True for an environment object (gymnax API: ``reset`` and ``step`` methods)."""
    return callable(getattr(env, "reset", None)) and callable(getattr(env, "step", None))


def _gymnax_names() -> tuple[str, ...]:
    import gymnax

    return tuple(gymnax.registered_envs)


def make(env: Any, **kwargs: Any) -> tuple[Any, Any]:
    """Build an environment; return ``(env, env_params)`` (see the module docstring).

    Tabular names and their keyword arguments:

    * ``"frozenlake"``: ``map_name`` ("4x4" default or "8x8"), ``is_slippery`` (default True).
    * ``"frozenlake8x8"``: ``is_slippery`` (default True).
    * ``"taxi"``: none.
    * ``"cliffwalking"``: ``is_slippery`` (default False).

    Raises:
      ValueError: an unknown name (the message lists the tabular names and where the other
        names come from), an unsupported keyword or value, or keywords given with an object.
    """
    if not isinstance(env, str):
        if kwargs:
            raise ValueError(f"make() takes no keyword arguments with an environment object; "
                             f"got {sorted(kwargs)}")
        if isinstance(env, tuple) and len(env) == 2 and is_env_object(env[0]):
            return env[0], env[1]
        if is_env_object(env):
            return env, env.default_params
        raise ValueError(
            f"env must be a name or an environment object with reset/step (gymnax API), or a "
            f"pair (env, env_params); got {type(env).__name__}"
        )
    if env in _TABULAR:
        return _make_tabular(env, **kwargs)
    from jaxrl_pim.envs.names import is_playground_name  # (no flax for a gymnax name)

    if is_playground_name(env):
        if kwargs:
            raise ValueError(f"make({env!r}) takes no keyword arguments; got {sorted(kwargs)}")
        from jaxrl_pim.envs.playground import make_playground_env

        return make_playground_env(env)
    if env in _gymnax_names():
        import gymnax

        return gymnax.make(env, **kwargs)
    raise ValueError(
        f"unknown environment {env!r}: use a tabular name ({', '.join(TABULAR_NAMES)}), a name "
        f"registered with gymnax (gymnax.registered_envs, e.g. 'CartPole-v1'), "
        f"'playground/<EnvName>' for a MuJoCo Playground task, or pass an environment object"
    )


def _tabular_class(attr: str) -> Any:
    """The tabular world class named ``attr``, imported on first use from its own module
    alone (``FrozenLake`` is gymnax's: only a FrozenLake run pays gymnax's import)."""
    if attr == "FrozenLake":
        from jaxrl_pim.envs.frozenlake import FrozenLake

        return FrozenLake
    if attr == "Taxi":
        from jaxrl_pim.envs.taxi import Taxi

        return Taxi
    from jaxrl_pim.envs.cliffwalking import CliffWalking

    return CliffWalking


def _make_tabular(name: str, **kwargs: Any) -> tuple[Any, Any]:
    attr, allowed, fixed = _TABULAR[name]
    unknown = sorted(set(kwargs) - set(allowed))
    if unknown:
        options = ", ".join(allowed) if allowed else "none"
        raise ValueError(f"make({name!r}) got unknown argument(s) {unknown}; allowed: {options}")
    if "map_name" in kwargs:
        check_choice("map_name", kwargs["map_name"], ("4x4", "8x8"))
    if "is_slippery" in kwargs and not isinstance(kwargs["is_slippery"], bool):
        raise ValueError(f"is_slippery must be a bool, got {kwargs['is_slippery']!r}")
    made = _tabular_class(attr)(**fixed, **kwargs)
    return made, made.default_params


def describe(env: Any, env_params: Any, name: str = "") -> EnvInfo:
    """The :class:`EnvInfo` of an environment built by :func:`make`.

    Raises:
      ValueError: an action space that is neither discrete (``n``) nor a box
        (``shape`` / ``low`` / ``high``).
    """
    import numpy as np

    obs_shape = tuple(int(d) for d in env.observation_space(env_params).shape)
    space = env.action_space(env_params)
    max_steps = int(getattr(env_params, "max_steps_in_episode", 0) or 0)
    obs_dim = math.prod(obs_shape)
    if hasattr(space, "n"):
        return EnvInfo(name, obs_dim, True, int(space.n), 0, 0.0, 0.0, max_steps, obs_shape)
    if not all(hasattr(space, a) for a in ("shape", "low", "high")):
        raise ValueError(f"unsupported action space {type(space).__name__} for {name or env!r}")
    return EnvInfo(
        name, obs_dim, False, 0, int(math.prod(space.shape)),
        float(np.min(np.asarray(space.low))), float(np.max(np.asarray(space.high))),
        max_steps, obs_shape,
    )


def make_with_info(env: Any, **kwargs: Any) -> tuple[Any, Any, EnvInfo]:
    """``(env, env_params, describe(env, env_params, name))`` in one call."""
    name = env if isinstance(env, str) else ""
    built, params = make(env, **kwargs)
    return built, params, describe(built, params, name)
