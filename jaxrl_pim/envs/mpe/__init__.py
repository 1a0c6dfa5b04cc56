"""Multi-agent particle worlds (MPE) in JAX: cooperative navigation and predator-prey.

Two scenarios of the original multi-agent particle environments, written over stacked
per-agent arrays (agent axis first) so that one environment is a handful of small dense
array operations and thousands of environments ``jax.vmap`` into one program:

* ``make_spread(N)``: cooperative navigation ("simple_spread"), N agents, N landmarks, one
  team ``"agents"``.
* ``make_tag(A, G, L)``: predator-prey ("simple_tag"), A predators, G prey, L obstacles,
  two teams ``"predators"`` and ``"prey"``.

Actions are the original 5-entry continuous vector ``[no-op, +x, -x, +y, -y]``; the applied
force is ``u = (a[1] - a[2], a[3] - a[4]) * accel`` (accel = the original "sensitivity":
5 for spread agents, 3 for predators, 4 for prey). Values are not clipped.

API (gymnax 1.0's, :class:`jaxrl_pim.envs.api.Environment`): ``env.reset(key, params) ->
(obs, state)`` and ``env.step(key, state, actions, params) -> (obs, state, rewards,
terminated, truncated, info)``, where ``obs``, ``actions`` and ``rewards`` are tuples with
one entry per team in ``env.teams`` order: ``obs[t]`` float32 ``[n_t, obs_dim_t]``,
``actions[t]`` float32 ``[n_t, 5]``, ``rewards[t]`` float32 ``[n_t]``. ``terminated`` is
always False; ``truncated`` is True on step ``params.max_steps`` (25), when ``step``
auto-resets (the last observation of the finished episode is ``info["final_observation"]``).

Modules: ``world`` (parameters, state, physics, the shared ``ParticleWorld``), ``scenarios``
(the two worlds, presets, constructors), ``teams`` (``TeamSpec`` and each scenario's teams
from its sizes; no jax), ``constants`` (size limits and presets; no jax), ``rollout`` (a
jitted random-action rollout). See ``docs/mpe.md`` for every convention (reward sharing, the
self-collision term, the prey boundary penalty).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jaxrl_pim import lazy
from jaxrl_pim.envs.mpe.constants import MAX_AGENTS, TAG_PRESETS

# The worlds load jax, so they are imported on first use (PEP 562): ``import
# jaxrl_pim.envs.mpe.constants`` (the size limits a config checks) and
# ``jaxrl_pim.envs.mpe.teams`` (the teams a config reads) load no jax.
if TYPE_CHECKING:  # where each name lives: type checkers, the import graph, lazy look-ups
    from jaxrl_pim.envs.mpe.rollout import make_rollout
    from jaxrl_pim.envs.mpe.scenarios import (
        OBSTACLE_SIZE,
        OCCUPIED_RADIUS,
        PREDATOR_ACCEL,
        PREDATOR_MAX_SPEED,
        PREDATOR_SIZE,
        PREY_ACCEL,
        PREY_MAX_SPEED,
        PREY_SIZE,
        REWARD_CONVENTIONS,
        SPREAD_ACCEL,
        SPREAD_AGENT_SIZE,
        SPREAD_LANDMARK_SIZE,
        SPREAD_PRESETS,
        TAG_REWARD,
        SpreadEnv,
        TagEnv,
        make,
        make_spread,
        make_tag,
    )
    from jaxrl_pim.envs.mpe.teams import ACTION_DIM, TeamSpec, spread_teams, tag_teams
    from jaxrl_pim.envs.mpe.world import (
        INTEGRATIONS,
        SPLIT_PAIRS_MIN_ENTITIES,
        MPEParams,
        MPEState,
        ParticleWorld,
        contact_force,
        off_diagonal,
    )

__all__ = [
    "ACTION_DIM",
    "INTEGRATIONS",
    "MAX_AGENTS",
    "OBSTACLE_SIZE",
    "OCCUPIED_RADIUS",
    "PREDATOR_ACCEL",
    "PREDATOR_MAX_SPEED",
    "PREDATOR_SIZE",
    "PREY_ACCEL",
    "PREY_MAX_SPEED",
    "PREY_SIZE",
    "REWARD_CONVENTIONS",
    "SPLIT_PAIRS_MIN_ENTITIES",
    "SPREAD_ACCEL",
    "SPREAD_AGENT_SIZE",
    "SPREAD_LANDMARK_SIZE",
    "SPREAD_PRESETS",
    "TAG_PRESETS",
    "TAG_REWARD",
    "MPEParams",
    "MPEState",
    "ParticleWorld",
    "SpreadEnv",
    "TagEnv",
    "TeamSpec",
    "contact_force",
    "make",
    "make_rollout",
    "make_spread",
    "make_tag",
    "off_diagonal",
    "spread_teams",
    "tag_teams",
]

# the names above, and the package's modules, on first use
__getattr__, __dir__ = lazy.attributes(__name__)
