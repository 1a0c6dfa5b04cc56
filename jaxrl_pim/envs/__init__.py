"""jaxrl_pim.envs: worlds that step, in the gymnax ``Environment`` API, and the one factory.

``make(env, **kwargs) -> (env, params)`` builds any environment the library runs on: a
tabular name (``frozenlake``, ``frozenlake8x8``, ``taxi``, ``cliffwalking``), any name
registered with gymnax (``"CartPole-v1"``, ``"Pendulum-v1"``, ...), a MuJoCo Playground task
``"playground/<EnvName>"``, or a user's own environment object (returned with its default
parameters). ``describe(env, params) -> EnvInfo`` gives the sizes a learner needs.

Tabular worlds (integer observation = state index): :class:`Taxi`, :class:`CliffWalking`,
:class:`FrozenLake` (re-exported from gymnax); ``tabular_model(env)`` gives their known model
as NumPy arrays. Multi-agent particle worlds live in :mod:`jaxrl_pim.envs.mpe` (import the
module directly). The library's own worlds implement gymnax 1.0's API on
:class:`jaxrl_pim.envs.api.Environment` and :mod:`jaxrl_pim.envs.spaces`.

Importing this package imports neither jax nor gymnax (gymnax's package import loads seaborn,
matplotlib and scipy.stats, seconds per process): every name is imported on first use, so the
jax-free leaves (``envs.names``, ``envs.mpe.constants``) load alone; ``FrozenLake`` comes from
gymnax on first use (``jaxrl_pim.envs.FrozenLake``, ``make("frozenlake")``), as do the names
registered with it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jaxrl_pim import lazy

# The worlds and the factory load jax, so they are imported on first use (PEP 562): ``import
# jaxrl_pim.envs.names`` or ``jaxrl_pim.envs.mpe.constants`` (what a config checks) loads no
# jax. ``FrozenLake`` is gymnax's class, imported on first use too (see above).
if TYPE_CHECKING:  # where each name lives: type checkers, the import graph, lazy look-ups
    from jaxrl_pim.envs.cliffwalking import CliffWalking
    from jaxrl_pim.envs.factory import (
        TABULAR_NAMES,
        EnvInfo,
        describe,
        is_env_object,
        make,
        make_with_info,
    )
    from jaxrl_pim.envs.factory import TABULAR_NAMES as ENV_NAMES
    from jaxrl_pim.envs.frozenlake import FrozenLake
    from jaxrl_pim.envs.model import TabularModel, tabular_model
    from jaxrl_pim.envs.taxi import Taxi


__all__ = [
    "ENV_NAMES",
    "TABULAR_NAMES",
    "CliffWalking",
    "EnvInfo",
    "FrozenLake",
    "TabularModel",
    "Taxi",
    "describe",
    "is_env_object",
    "make",
    "make_with_info",
    "tabular_model",
]

# the names above, and the package's modules, on first use
__getattr__, __dir__ = lazy.attributes(__name__)
