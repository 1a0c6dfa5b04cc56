"""The two MPE scenarios: cooperative navigation (``spread``) and predator-prey (``tag``).

* ``make_spread(N)``: cooperative navigation ("simple_spread"), N agents, N landmarks, one
  team ``"agents"``.
* ``make_tag(A, G, L)``: predator-prey ("simple_tag"), A predators, G prey, L obstacles,
  two teams ``"predators"`` and ``"prey"``.

Each scenario is a :class:`~jaxrl_pim.envs.mpe.world.ParticleWorld` with its own
observations and rewards; the constructors return ``(env, params)``.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl_pim import choices
from jaxrl_pim.checks import check_choice, check_float, check_int
from jaxrl_pim.envs.mpe import constants
from jaxrl_pim.envs.mpe.teams import spread_teams, tag_teams
from jaxrl_pim.envs.mpe.world import (
    INTEGRATIONS,
    MPEParams,
    MPEState,
    ParticleWorld,
    _distances,
    off_diagonal,
)

MAX_AGENTS = constants.MAX_AGENTS
"""Largest team size (agents, predators, prey or obstacles) a scenario accepts (in the leaf
:mod:`jaxrl_pim.envs.mpe.constants`, no jax to import)."""

SPREAD_PRESETS: dict[int, int] = {3: 3, 6: 6, 12: 12, 24: 24, 48: 48}
"""Cooperative-navigation sizes: preset -> ``num_agents`` for :func:`make_spread`."""

TAG_PRESETS = choices.TAG_PRESETS  # in jaxrl_pim.choices (no jax to import)
"""Predator-prey sizes: preset (number of predators) -> ``(predators, prey, obstacles)``.

3 and 24 are the published configurations (obs 16/14 and 98/96); the others keep one
prey per three predators and ``max(2, prey)`` obstacles.
"""

REWARD_CONVENTIONS = ("original", "pettingzoo")

# Scenario constants of the original code.
SPREAD_AGENT_SIZE = 0.15
SPREAD_LANDMARK_SIZE = 0.05
SPREAD_ACCEL = 5.0
PREDATOR_SIZE, PREDATOR_ACCEL, PREDATOR_MAX_SPEED = 0.075, 3.0, 1.0
PREY_SIZE, PREY_ACCEL, PREY_MAX_SPEED = 0.05, 4.0, 1.3
OBSTACLE_SIZE = 0.2
TAG_REWARD = 10.0
OCCUPIED_RADIUS = 0.1


def _physical_view(state: MPEState) -> jax.Array:
    """What every agent of the particle worlds sees of the world, ``[M, 4 + 2L + 2(M-1)]``
    float32 for ``M`` agents and ``L`` landmarks: own velocity (2), own position (2), landmark
    positions relative to the agent (2L), the other agents' positions relative to it in index
    order (2(M-1))."""
    pos, vel, lm = state.agent_pos, state.agent_vel, state.landmark_pos
    m = pos.shape[0]
    rel_lm = (lm[None, :, :] - pos[:, None, :]).reshape(m, -1)
    rel_ag = off_diagonal(pos[None, :, :] - pos[:, None, :]).reshape(m, -1)
    return jnp.concatenate([vel, pos, rel_lm, rel_ag], axis=1)


class SpreadEnv(ParticleWorld):
    """Cooperative navigation: N agents (radius 0.15, accel 5, no speed limit) should cover N
    landmarks (radius 0.05, not collidable) without colliding.

    Observation of agent i (4 + 2L + 4(N-1) floats): own velocity (2), own position (2),
    landmark positions relative to i (2L), other agents' positions relative to i in index
    order (2(N-1)), other agents' communication (2(N-1), always zero: agents are silent).

    Rewards, with ``D = sum_l min_i |p_i - q_l|`` and ``C_i`` = number of agents j != i with
    ``|p_i - p_j| < 0.3``:

    * ``"original"`` (default): every agent receives ``sum_i (-D - C_i - 1)`` =
      ``-N D - sum_i C_i - N`` (the original per-agent rewards, summed because the world is
      collaborative; the ``-1`` is each agent "colliding" with itself).
    * ``"pettingzoo"``: agent i receives ``(1 - local_ratio) * (-D) + local_ratio * (-C_i)``.
    """

    def __init__(self, num_agents: int, reward: str, integration: str) -> None:
        n = num_agents
        super().__init__(spread_teams(n), n, landmarks_collide=False, integration=integration)
        self.reward_convention = check_choice("reward", reward, REWARD_CONVENTIONS)

    @property
    def name(self) -> str:
        return f"spread-{self.num_agents}"

    def get_obs(self, state: MPEState, params: MPEParams | None = None, key: Any = None
                ) -> tuple[jax.Array, ...]:
        """Observations of all agents: a 1-tuple holding float32 ``[N, 4 + 2L + 4(N-1)]``."""
        n = self.num_agents
        comm = jnp.zeros((n, 2 * (n - 1)), jnp.float32)
        return (jnp.concatenate([_physical_view(state), comm], axis=1),)

    def _rewards(self, state: MPEState, params: MPEParams) -> tuple[tuple[jax.Array, ...],
                                                                    dict]:
        pos, lm = state.agent_pos, state.landmark_pos
        n = self.num_agents
        min_dist = jnp.min(_distances(pos, lm, self.split_pairs), axis=0)  # [L]
        dist_sum = jnp.sum(min_dist)
        size = params.agent_size
        colliding = _distances(pos, pos, self.split_pairs) < size[:, None] + size[None, :]
        colliding = colliding & ~jnp.eye(n, dtype=jnp.bool_)
        c_i = jnp.sum(colliding, axis=1).astype(jnp.float32)  # other agents hit by i
        if self.reward_convention == "original":
            shared = -n * dist_sum - jnp.sum(c_i) - n
            rew = jnp.full((n,), shared, jnp.float32)
        else:
            lr = params.local_ratio
            rew = ((1.0 - lr) * (-dist_sum) + lr * (-c_i)).astype(jnp.float32)
        info = {
            "landmark_dist": dist_sum,
            "collisions": (jnp.sum(c_i) / 2).astype(jnp.int32),
            "occupied_landmarks": jnp.sum(min_dist < OCCUPIED_RADIUS).astype(jnp.int32),
        }
        return (rew,), info


def _boundary_penalty(x: jax.Array) -> jax.Array:
    """The original prey boundary penalty of ``x = |coordinate|`` (elementwise)."""
    return jnp.where(
        x < 0.9, 0.0, jnp.where(x < 1.0, (x - 0.9) * 10.0, jnp.minimum(jnp.exp(2 * x - 2), 10.0))
    )


class TagEnv(ParticleWorld):
    """Predator-prey: A predators (radius 0.075, accel 3, max speed 1.0) chase G prey
    (radius 0.05, accel 4, max speed 1.3) among L fixed obstacles (radius 0.2). Every pair of
    agents and every agent-obstacle pair collides.

    Observation (agents ordered predators then prey): own velocity (2), own position (2),
    obstacle positions relative to self (2L), all other agents' positions relative to self in
    index order (2(A+G-1)), then prey velocities: all G prey for a predator (2G), the other
    G-1 prey for a prey (2(G-1)).

    Rewards, with ``K_g`` = number of predators touching prey g (``|p_a - p_g| < r_a + r_g``):
    every predator gets ``10 * sum_g K_g``; prey g gets ``-10 * K_g - sum_{x,y}
    bound(|p_g|)`` with ``bound(x) = 0`` for x < 0.9, ``10 (x - 0.9)`` for x < 1, else
    ``min(exp(2x - 2), 10)``.
    """

    def __init__(self, num_predators: int, num_prey: int, num_obstacles: int,
                 integration: str) -> None:
        a, g, n_l = num_predators, num_prey, num_obstacles
        super().__init__(tag_teams(a, g, n_l), n_l, landmarks_collide=True,
                         integration=integration)
        self.num_predators, self.num_prey = a, g

    @property
    def name(self) -> str:
        return f"tag-{self.num_predators}-{self.num_prey}-{self.num_landmarks}"

    def get_obs(self, state: MPEState, params: MPEParams | None = None, key: Any = None
                ) -> tuple[jax.Array, ...]:
        """``(predator_obs [A, 4+2L+2(A+G-1)+2G], prey_obs [G, 4+2L+2(A+G-1)+2(G-1)])``."""
        a, g = self.num_predators, self.num_prey
        common = _physical_view(state)
        prey_vel = state.agent_vel[a:]
        pred_obs = jnp.concatenate(
            [common[:a], jnp.broadcast_to(prey_vel.reshape(1, -1), (a, 2 * g))], axis=1
        )
        other_prey_vel = off_diagonal(jnp.broadcast_to(prey_vel[None], (g, g, 2)))
        prey_obs = jnp.concatenate([common[a:], other_prey_vel.reshape(g, -1)], axis=1)
        return (pred_obs, prey_obs)

    def _rewards(self, state: MPEState, params: MPEParams) -> tuple[tuple[jax.Array, ...],
                                                                    dict]:
        pos = state.agent_pos
        a = self.num_predators
        size = params.agent_size
        dist = _distances(pos[:a], pos[a:], self.split_pairs)  # [A, G]
        touching = dist < size[:a, None] + size[None, a:]
        k_g = jnp.sum(touching, axis=0).astype(jnp.float32)
        total = jnp.sum(k_g)
        pred_rew = jnp.full((a,), TAG_REWARD * total, jnp.float32)
        bound = jnp.sum(_boundary_penalty(jnp.abs(pos[a:])), axis=1)
        prey_rew = (-TAG_REWARD * k_g - bound).astype(jnp.float32)
        info = {"collisions": total.astype(jnp.int32)}
        return (pred_rew, prey_rew), info


# --------------------------------------------------------------------------- constructors


def _f32(x: Any) -> jax.Array:
    return jnp.asarray(np.asarray(x, np.float32))


def make_spread(
    num_agents: int,
    *,
    reward: str = "original",
    integration: str = "original",
    local_ratio: float = 0.5,
    max_steps: int = 25,
) -> tuple[SpreadEnv, MPEParams]:
    """Cooperative navigation with ``num_agents`` agents and as many landmarks.

    ``reward``: ``"original"`` (shared sum of per-agent rewards incl. the self-collision
    term) or ``"pettingzoo"`` (``local_ratio`` mix, no self term). ``integration``:
    ``"original"`` (velocity then position) or ``"mpe2"`` (position then velocity).
    Returns ``(env, params)``; obs dim 4 + 2N + 4(N-1) (18/36/72/144 for N=3/6/12/24).
    """
    n = check_int("num_agents", num_agents, 1, MAX_AGENTS)
    check_choice("reward", reward, REWARD_CONVENTIONS)
    check_choice("integration", integration, INTEGRATIONS)
    lr = check_float("local_ratio", local_ratio, 0.0, 1.0)
    steps = check_int("max_steps", max_steps, 1)
    env = SpreadEnv(n, reward, integration)
    params = MPEParams(
        agent_size=_f32(np.full(n, SPREAD_AGENT_SIZE)),
        agent_accel=_f32(np.full(n, SPREAD_ACCEL)),
        agent_max_speed=_f32(np.full(n, np.inf)),
        landmark_size=_f32(np.full(n, SPREAD_LANDMARK_SIZE)),
        agent_init_range=1.0,
        landmark_init_range=1.0,
        local_ratio=lr,
        max_steps=steps,
    )
    return env, params


def make_tag(
    num_predators: int,
    num_prey: int,
    num_obstacles: int,
    *,
    integration: str = "original",
    max_steps: int = 25,
) -> tuple[TagEnv, MPEParams]:
    """Predator-prey with ``num_predators`` predators, ``num_prey`` prey and
    ``num_obstacles`` obstacles (uniform in [-0.9, 0.9]^2 at reset).

    Returns ``(env, params)``; teams ``("predators", "prey")`` with obs dims
    4 + 2L + 2(A+G-1) + 2G and 4 + 2L + 2(A+G-1) + 2(G-1) (16/14 for 3/1/2, 98/96 for
    24/8/8).
    """
    a = check_int("num_predators", num_predators, 1, MAX_AGENTS)
    g = check_int("num_prey", num_prey, 1, MAX_AGENTS)
    n_l = check_int("num_obstacles", num_obstacles, 0, MAX_AGENTS)
    check_choice("integration", integration, INTEGRATIONS)
    steps = check_int("max_steps", max_steps, 1)
    env = TagEnv(a, g, n_l, integration)
    params = MPEParams(
        agent_size=_f32([PREDATOR_SIZE] * a + [PREY_SIZE] * g),
        agent_accel=_f32([PREDATOR_ACCEL] * a + [PREY_ACCEL] * g),
        agent_max_speed=_f32([PREDATOR_MAX_SPEED] * a + [PREY_MAX_SPEED] * g),
        landmark_size=_f32(np.full(n_l, OBSTACLE_SIZE)),
        agent_init_range=1.0,
        landmark_init_range=0.9,
        max_steps=steps,
    )
    return env, params


def make(scenario: str, preset: int, **kwargs: Any) -> tuple[ParticleWorld, MPEParams]:
    """``make("spread", 24)`` or ``make("tag", 24)`` from :data:`SPREAD_PRESETS` /
    :data:`TAG_PRESETS`; keyword arguments go to :func:`make_spread` / :func:`make_tag`."""
    check_choice("scenario", scenario, ("spread", "tag"))
    if scenario == "spread":
        check_choice("preset", preset, tuple(SPREAD_PRESETS))
        return make_spread(SPREAD_PRESETS[preset], **kwargs)
    check_choice("preset", preset, tuple(TAG_PRESETS))
    return make_tag(*TAG_PRESETS[preset], **kwargs)
