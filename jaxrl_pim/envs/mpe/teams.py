"""The particle worlds' teams (names, sizes, observation and action lengths) from their sizes
alone, in a module that imports no jax: the scenarios (:mod:`jaxrl_pim.envs.mpe.scenarios`)
build their worlds' ``teams`` with these functions, and a config
(:attr:`jaxrl_pim.marl.config.MARLConfig.teams`) reads them without building a world.
:mod:`jaxrl_pim.envs.mpe.world` and :mod:`jaxrl_pim.envs.mpe` re-export them."""

from __future__ import annotations

from typing import NamedTuple

ACTION_DIM = 5
"""Length of every agent's action vector: ``[no-op, +x, -x, +y, -y]``."""


class TeamSpec(NamedTuple):
    """One team of identical agents: its name, size and per-agent obs/action lengths.

    Attributes:
      name: the team's name (``"agents"`` in spread, ``"predators"`` and ``"prey"`` in tag;
        a JaxMARL agent-name prefix such as ``"adversary"`` for a wrapped JaxMARL world).
      num_agents: agents in the team, ``n_t`` (the leading axis of its observations,
        actions and rewards).
      obs_dim: length of each agent's observation vector (``obs[t]`` is ``[n_t, obs_dim]``).
      action_dim: length of each agent's action vector (``actions[t]`` is
        ``[n_t, action_dim]``; :data:`ACTION_DIM` in the particle worlds).
    """

    name: str
    num_agents: int
    obs_dim: int
    action_dim: int


def spread_teams(num_agents: int) -> tuple[TeamSpec]:
    """The one team of cooperative navigation with ``num_agents`` agents (and as many
    landmarks): ``"agents"``, observation ``4 + 2N + 4(N-1)`` (own velocity and position, the
    landmarks and the other agents relative to it, their silent communication)."""
    n = num_agents
    return (TeamSpec("agents", n, 4 + 2 * n + 4 * (n - 1), ACTION_DIM),)


def tag_teams(num_predators: int, num_prey: int, num_obstacles: int
              ) -> tuple[TeamSpec, TeamSpec]:
    """The two teams of predator-prey with ``A`` predators, ``G`` prey and ``L`` obstacles:
    ``"predators"`` (observation ``4 + 2L + 2(A+G-1) + 2G``: every prey's velocity) and
    ``"prey"`` (``4 + 2L + 2(A+G-1) + 2(G-1)``: the other prey's velocities)."""
    a, g, n_l = num_predators, num_prey, num_obstacles
    base = 4 + 2 * n_l + 2 * (a + g - 1)
    return (TeamSpec("predators", a, base + 2 * g, ACTION_DIM),
            TeamSpec("prey", g, base + 2 * (g - 1), ACTION_DIM))


__all__ = ["ACTION_DIM", "TeamSpec", "spread_teams", "tag_teams"]
