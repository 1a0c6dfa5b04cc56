"""Multi-agent particle worlds (MPE) in JAX: cooperative navigation and predator-prey.

Two scenarios of the original multi-agent particle environments, written over stacked
per-agent arrays (agent axis first) so that one environment is a handful of small dense
array operations and thousands of environments ``jax.vmap`` into one program:

* ``make_spread(N)``: cooperative navigation ("simple_spread"), N agents, N landmarks, one
  team ``"agents"``.
* ``make_tag(A, G, L)``: predator-prey ("simple_tag"), A predators, G prey, L obstacles,
  two teams ``"predators"`` and ``"prey"``.

Physics (the original particle world): 2-D point masses of mass 1, time step ``dt`` 0.1,
velocity damping 0.25, soft contact forces ``contact_force * delta / |delta| *
softplus(-(|delta| - (r_a + r_b)) / margin) * margin`` between every pair of colliding
entities (force 100, margin 1e-3), optional speed limit per agent. Landmarks never move.
Integration is semi-implicit Euler as in the original code (velocity first, then position);
``integration="mpe2"`` uses the order of the maintained PettingZoo port (position first).

Actions are the original 5-entry continuous vector ``[no-op, +x, -x, +y, -y]``; the applied
force is ``u = (a[1] - a[2], a[3] - a[4]) * accel`` (accel = the original "sensitivity":
5 for spread agents, 3 for predators, 4 for prey). Values are not clipped.

API (gymnax ``Environment``): ``env.reset(key, params) -> (obs, state)`` and
``env.step(key, state, actions, params) -> (obs, state, rewards, terminated, truncated,
info)``, where ``obs``, ``actions`` and ``rewards`` are tuples with one entry per team in
``env.teams`` order: ``obs[t]`` float32 ``[n_t, obs_dim_t]``, ``actions[t]`` float32
``[n_t, 5]``, ``rewards[t]`` float32 ``[n_t]``. ``terminated`` is always False;
``truncated`` is True on step ``params.max_steps`` (25), when ``step`` auto-resets (the
last observation of the finished episode is ``info["final_observation"]``).

See ``docs/mpe.md`` for every convention (reward sharing, the self-collision term, the prey
boundary penalty) and measured throughput.
"""

from __future__ import annotations

import time
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from gymnax.environments import environment, spaces

from jaxrl_pim.checks import check_choice, check_float, check_int

ACTION_DIM = 5
"""Length of every agent's action vector: ``[no-op, +x, -x, +y, -y]``."""

SPREAD_PRESETS: dict[int, int] = {3: 3, 6: 6, 12: 12, 24: 24, 48: 48}
"""Cooperative-navigation sizes: preset -> ``num_agents`` for :func:`make_spread`."""

TAG_PRESETS: dict[int, tuple[int, int, int]] = {
    3: (3, 1, 2),
    6: (6, 2, 2),
    12: (12, 4, 4),
    24: (24, 8, 8),
    48: (48, 16, 16),
}
"""Predator-prey sizes: preset (number of predators) -> ``(predators, prey, obstacles)``.

3 and 24 are the published configurations (obs 16/14 and 98/96); the others keep one
prey per three predators and ``max(2, prey)`` obstacles.
"""

REWARD_CONVENTIONS = ("original", "pettingzoo")
INTEGRATIONS = ("original", "mpe2")

# Scenario constants of the original code.
SPREAD_AGENT_SIZE = 0.15
SPREAD_LANDMARK_SIZE = 0.05
SPREAD_ACCEL = 5.0
PREDATOR_SIZE, PREDATOR_ACCEL, PREDATOR_MAX_SPEED = 0.075, 3.0, 1.0
PREY_SIZE, PREY_ACCEL, PREY_MAX_SPEED = 0.05, 4.0, 1.3
OBSTACLE_SIZE = 0.2
TAG_REWARD = 10.0
OCCUPIED_RADIUS = 0.1
SPLIT_PAIRS_MIN_AGENTS = 8


class TeamSpec(NamedTuple):
    """One team of identical agents: its name, size and per-agent obs/action lengths."""

    name: str
    num_agents: int
    obs_dim: int
    action_dim: int


@struct.dataclass
class MPEParams:
    """Numeric parameters of a particle world (data: may be replaced or vmapped).

    Per-entity arrays: ``agent_size``, ``agent_accel``, ``agent_max_speed`` float32 ``[A]``
    (A = all agents, teams concatenated in ``env.teams`` order; ``inf`` = no speed limit),
    ``landmark_size`` float32 ``[L]``. Lengths are world units, ``dt`` seconds.
    """

    agent_size: jax.Array
    agent_accel: jax.Array
    agent_max_speed: jax.Array
    landmark_size: jax.Array
    dt: float = 0.1
    damping: float = 0.25
    contact_force: float = 100.0
    contact_margin: float = 1e-3
    agent_init_range: float = 1.0
    landmark_init_range: float = 1.0
    local_ratio: float = 0.5
    max_steps: int = 25


@struct.dataclass
class MPEState:
    """World state: ``agent_pos``/``agent_vel`` float32 ``[A, 2]``, ``landmark_pos`` float32
    ``[L, 2]``, ``time`` int32 scalar (steps taken in the current episode)."""

    agent_pos: jax.Array
    agent_vel: jax.Array
    landmark_pos: jax.Array
    time: jax.Array


# --------------------------------------------------------------------------- physics


def off_diagonal(x: jax.Array) -> jax.Array:
    """Drop the diagonal of ``x`` ``[N, N, ...]``: ``[N, N - 1, ...]`` with row i = x[i, j != i].

    Uses a reshape instead of a gather: the strict off-diagonal entries of a flattened square
    matrix, after dropping the first element, form ``N - 1`` rows of ``N + 1`` whose last
    column is the diagonal.
    """
    n = x.shape[0]
    rest = x.shape[2:]
    flat = x.reshape((n * n, *rest))[1:]
    return flat.reshape((n - 1, n + 1, *rest))[:, :n].reshape((n, n - 1, *rest))


def _contact_scale(sq: jax.Array, dist_min: jax.Array, params: MPEParams) -> jax.Array:
    """Contact force per unit of ``delta`` for squared distances ``sq`` (0 where ``sq == 0``)."""
    nonzero = sq > 0
    dist = jnp.sqrt(jnp.where(nonzero, sq, 1.0))
    k = params.contact_margin
    penetration = jax.nn.softplus(-(dist - dist_min) / k) * k
    return jnp.where(nonzero, params.contact_force * penetration / dist, 0.0)


def contact_force(delta: jax.Array, dist_min: jax.Array, params: MPEParams) -> jax.Array:
    """Soft contact force on entity a from b, for ``delta = pos_a - pos_b`` ``[..., 2]``.

    ``force_scale * delta / |delta| * softplus(-(|delta| - dist_min) / margin) * margin``;
    zero where ``|delta| == 0`` (self pairs; coincident entities have no defined direction).
    ``dist_min`` ``[...]`` is the sum of the two radii. Returns ``[..., 2]``.
    """
    scale = _contact_scale(jnp.sum(jnp.square(delta), axis=-1), dist_min, params)
    return delta * scale[..., None]


def _clip_speed(vel: jax.Array, max_speed: jax.Array) -> jax.Array:
    """Rescale rows of ``vel`` ``[A, 2]`` whose speed exceeds ``max_speed`` ``[A]`` to it."""
    speed = jnp.sqrt(jnp.square(vel[:, 0]) + jnp.square(vel[:, 1]))
    too_fast = speed > max_speed
    safe = jnp.where(too_fast, speed, 1.0)
    return jnp.where(too_fast[:, None], vel / safe[:, None] * max_speed[:, None], vel)


def _distances(a: jax.Array, b: jax.Array, split: bool = False) -> jax.Array:
    """Distances ``[n_a, n_b]`` between points ``a`` ``[n_a, 2]`` and ``b`` ``[n_b, 2]``.

    ``split`` computes x and y separately (faster on CPU for many agents, same values).
    """
    if split:
        dx = a[:, 0][:, None] - b[:, 0][None, :]
        dy = a[:, 1][:, None] - b[:, 1][None, :]
        return jnp.sqrt(dx * dx + dy * dy)
    return jnp.sqrt(jnp.sum(jnp.square(a[:, None, :] - b[None, :, :]), axis=-1))


# --------------------------------------------------------------------------- base world


class ParticleWorld(environment.Environment):
    """Shared physics, reset and stepping of the particle worlds (gymnax ``Environment``).

    Structural facts (team sizes, which entities collide, integration order, reward
    convention) are static Python attributes; everything numeric is in :class:`MPEParams`.
    Subclasses provide ``get_obs`` and ``_rewards``.
    """

    def __init__(
        self,
        teams: tuple[TeamSpec, ...],
        num_landmarks: int,
        landmarks_collide: bool,
        integration: str,
    ) -> None:
        super().__init__()
        self.teams = tuple(teams)
        self.num_agents = sum(t.num_agents for t in self.teams)
        self.num_landmarks = int(num_landmarks)
        self.landmarks_collide = bool(landmarks_collide)
        self.integration = check_choice("integration", integration, INTEGRATIONS)
        # Two equivalent layouts of the pairwise terms: interleaved [A, E, 2] arrays are faster
        # on CPU for a handful of agents, separate x/y [A, E] arrays for SPLIT_PAIRS_MIN_AGENTS
        # or more (about 2x at 24 agents). Both are tested against the NumPy reference.
        self.split_pairs = self.num_agents >= SPLIT_PAIRS_MIN_AGENTS

    def _static_key(self) -> tuple:
        """Everything that changes the traced program; equal keys share jit caches."""
        return (type(self), self.teams, self.num_landmarks, self.landmarks_collide,
                self.integration, getattr(self, "reward_convention", None), self.split_pairs)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ParticleWorld) and self._static_key() == other._static_key()

    def __hash__(self) -> int:
        return hash(self._static_key())

    # ----- gymnax hooks
    def reset_env(self, key: jax.Array, params: MPEParams) -> tuple[tuple[jax.Array, ...],
                                                                    MPEState]:
        """Agents uniform in ``[-agent_init_range, +]^2``, landmarks uniform in
        ``[-landmark_init_range, +]^2``, zero velocities, time 0."""
        k_agents, k_landmarks = jax.random.split(key)
        a_r = jnp.asarray(params.agent_init_range, jnp.float32)
        l_r = jnp.asarray(params.landmark_init_range, jnp.float32)
        agent_pos = jax.random.uniform(k_agents, (self.num_agents, 2), jnp.float32, -a_r, a_r)
        landmark_pos = jax.random.uniform(
            k_landmarks, (self.num_landmarks, 2), jnp.float32, -l_r, l_r
        )
        state = MPEState(
            agent_pos=agent_pos,
            agent_vel=jnp.zeros((self.num_agents, 2), jnp.float32),
            landmark_pos=landmark_pos,
            time=jnp.zeros((), jnp.int32),
        )
        return self.get_obs(state, params), state

    def step_env(
        self,
        key: jax.Array,
        state: MPEState,
        action: Any,
        params: MPEParams,
    ) -> tuple[tuple[jax.Array, ...], MPEState, tuple[jax.Array, ...], jax.Array, dict]:
        """One world step (no auto-reset; ``step`` adds that). See the module docstring."""
        del key  # the worlds are deterministic given the actions
        a = self._stack_actions(action)
        u = jnp.stack([a[:, 1] - a[:, 2], a[:, 3] - a[:, 4]], axis=-1)
        u = u * params.agent_accel[:, None]
        pos, vel = self.physics(state, u, params)
        next_state = state.replace(agent_pos=pos, agent_vel=vel, time=state.time + 1)
        obs = self.get_obs(next_state, params)
        rewards, info = self._rewards(next_state, params)
        terminated = jnp.zeros((), jnp.bool_)
        return obs, next_state, rewards, terminated, info

    def is_truncated(self, state: MPEState, params: MPEParams) -> jax.Array:
        """True once ``params.max_steps`` steps have been taken in the episode."""
        return state.time >= params.max_steps

    def is_terminated(self, state: MPEState, params: MPEParams) -> jax.Array:
        """Particle worlds never terminate."""
        return jnp.zeros((), jnp.bool_)

    # ----- physics
    def physics(
        self, state: MPEState, u: jax.Array, params: MPEParams
    ) -> tuple[jax.Array, jax.Array]:
        """Advance positions/velocities ``[A, 2]`` by ``dt`` under action forces ``u [A, 2]``."""
        pos, vel = state.agent_pos, state.agent_vel
        size = params.agent_size
        lm_collide = self.landmarks_collide and self.num_landmarks > 0
        if self.split_pairs:
            # every agent against every collidable entity, x and y as separate [A, E] arrays
            ex, ey, esize = pos[:, 0], pos[:, 1], size
            if lm_collide:
                ex = jnp.concatenate([ex, state.landmark_pos[:, 0]])
                ey = jnp.concatenate([ey, state.landmark_pos[:, 1]])
                esize = jnp.concatenate([esize, params.landmark_size])
            dx = pos[:, 0][:, None] - ex[None, :]
            dy = pos[:, 1][:, None] - ey[None, :]
            scale = _contact_scale(dx * dx + dy * dy, size[:, None] + esize[None, :], params)
            pair = jnp.stack([jnp.sum(dx * scale, axis=1), jnp.sum(dy * scale, axis=1)], -1)
        else:
            delta = pos[:, None, :] - pos[None, :, :]
            pair = jnp.sum(contact_force(delta, size[:, None] + size[None, :], params), axis=1)
            if lm_collide:
                delta_l = pos[:, None, :] - state.landmark_pos[None, :, :]
                dmin_l = size[:, None] + params.landmark_size[None, :]
                pair = pair + jnp.sum(contact_force(delta_l, dmin_l, params), axis=1)
        force = u + pair
        if self.integration == "mpe2":
            pos = pos + vel * params.dt
        vel = vel * (1.0 - params.damping)
        vel = vel + force * params.dt
        vel = _clip_speed(vel, params.agent_max_speed)
        if self.integration == "original":
            pos = pos + vel * params.dt
        return pos, vel

    # ----- actions
    def _stack_actions(self, action: Any) -> jax.Array:
        names = ", ".join(f"{t.name} [{t.num_agents}, {t.action_dim}]" for t in self.teams)
        if not isinstance(action, tuple | list) or len(action) != len(self.teams):
            raise ValueError(
                f"actions must be a tuple of {len(self.teams)} array(s), one per team ({names});"
                f" got {type(action).__name__}"
            )
        parts = []
        for team, a in zip(self.teams, action, strict=True):
            a = jnp.asarray(a)
            if a.shape != (team.num_agents, team.action_dim):
                raise ValueError(
                    f"actions for team {team.name!r} must have shape "
                    f"({team.num_agents}, {team.action_dim}); got {tuple(a.shape)}"
                )
            if not jnp.issubdtype(a.dtype, jnp.floating):
                raise ValueError(
                    f"actions for team {team.name!r} must be floating point (the 5-entry "
                    f"continuous vector), got dtype {a.dtype}"
                )
            parts.append(a.astype(jnp.float32))
        return jnp.concatenate(parts, axis=0) if len(parts) > 1 else parts[0]

    def _split(self, x: jax.Array) -> tuple[jax.Array, ...]:
        out, start = [], 0
        for t in self.teams:
            out.append(x[start : start + t.num_agents])
            start += t.num_agents
        return tuple(out)

    # ----- spaces and names
    @property
    def num_actions(self) -> int:
        return ACTION_DIM

    def action_space(self, params: MPEParams | None = None) -> spaces.Tuple:
        """One ``Box(0, 1, [n_t, 5])`` per team (the original policies emit softmax vectors;
        the world accepts any real values)."""
        return spaces.Tuple(
            [spaces.Box(0.0, 1.0, (t.num_agents, t.action_dim)) for t in self.teams]
        )

    def observation_space(self, params: MPEParams | None = None) -> spaces.Tuple:
        """One unbounded ``Box`` of shape ``[n_t, obs_dim_t]`` per team."""
        return spaces.Tuple(
            [spaces.Box(-jnp.inf, jnp.inf, (t.num_agents, t.obs_dim)) for t in self.teams]
        )

    def _rewards(
        self, state: MPEState, params: MPEParams
    ) -> tuple[tuple[jax.Array, ...], dict]:  # pragma: no cover - abstract
        raise NotImplementedError


# --------------------------------------------------------------------------- scenarios


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
        team = TeamSpec("agents", n, 4 + 2 * n + 4 * (n - 1), ACTION_DIM)
        super().__init__((team,), n, landmarks_collide=False, integration=integration)
        self.reward_convention = check_choice("reward", reward, REWARD_CONVENTIONS)

    @property
    def name(self) -> str:
        return f"spread-{self.num_agents}"

    def get_obs(self, state: MPEState, params: MPEParams | None = None, key: Any = None
                ) -> tuple[jax.Array, ...]:
        """Observations of all agents: a 1-tuple holding float32 ``[N, 4 + 2L + 4(N-1)]``."""
        pos, vel, lm = state.agent_pos, state.agent_vel, state.landmark_pos
        n = self.num_agents
        rel_lm = lm[None, :, :] - pos[:, None, :]
        rel_ag = off_diagonal(pos[None, :, :] - pos[:, None, :])
        comm = jnp.zeros((n, 2 * (n - 1)), jnp.float32)
        obs = jnp.concatenate(
            [vel, pos, rel_lm.reshape(n, -1), rel_ag.reshape(n, -1), comm], axis=1
        )
        return (obs,)

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
        base = 4 + 2 * n_l + 2 * (a + g - 1)
        teams = (
            TeamSpec("predators", a, base + 2 * g, ACTION_DIM),
            TeamSpec("prey", g, base + 2 * (g - 1), ACTION_DIM),
        )
        super().__init__(teams, n_l, landmarks_collide=True, integration=integration)
        self.num_predators, self.num_prey = a, g

    @property
    def name(self) -> str:
        return f"tag-{self.num_predators}-{self.num_prey}-{self.num_landmarks}"

    def get_obs(self, state: MPEState, params: MPEParams | None = None, key: Any = None
                ) -> tuple[jax.Array, ...]:
        """``(predator_obs [A, 4+2L+2(A+G-1)+2G], prey_obs [G, 4+2L+2(A+G-1)+2(G-1)])``."""
        pos, vel, lm = state.agent_pos, state.agent_vel, state.landmark_pos
        a, g, m = self.num_predators, self.num_prey, self.num_agents
        rel_lm = (lm[None, :, :] - pos[:, None, :]).reshape(m, -1)
        rel_ag = off_diagonal(pos[None, :, :] - pos[:, None, :]).reshape(m, -1)
        common = jnp.concatenate([vel, pos, rel_lm, rel_ag], axis=1)
        prey_vel = vel[a:]
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
    n = check_int("num_agents", num_agents, 1, 4096)
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
    a = check_int("num_predators", num_predators, 1, 4096)
    g = check_int("num_prey", num_prey, 1, 4096)
    n_l = check_int("num_obstacles", num_obstacles, 0, 4096)
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


# --------------------------------------------------------------------------- throughput


def make_rollout(env: ParticleWorld, params: MPEParams, num_envs: int, num_steps: int):
    """A jitted ``rollout(key) -> summed reward`` stepping ``num_envs`` vmapped envs for
    ``num_steps`` steps (with auto-reset) under uniform-[0, 1) random actions.

    The rollout is what :func:`measure_steps_per_second` times; it returns a scalar so the
    timing covers the whole computation but no large transfer.
    """
    check_int("num_envs", num_envs, 1)
    check_int("num_steps", num_steps, 1)
    step = jax.vmap(env.step, in_axes=(0, 0, 0, None))

    def one_step(carry, key):
        state, acc = carry
        k_act, k_step = jax.random.split(key)
        keys = jax.random.split(k_act, len(env.teams))
        actions = tuple(
            jax.random.uniform(k, (num_envs, t.num_agents, t.action_dim))
            for k, t in zip(keys, env.teams, strict=True)
        )
        _, state, rewards, _, _, _ = step(jax.random.split(k_step, num_envs), state, actions,
                                          params)
        acc = acc + sum(jnp.sum(r) for r in rewards)
        return (state, acc), None

    @jax.jit
    def rollout(key: jax.Array) -> jax.Array:
        k_reset, k_run = jax.random.split(key)
        _, state = jax.vmap(env.reset, in_axes=(0, None))(
            jax.random.split(k_reset, num_envs), params
        )
        (_, acc), _ = jax.lax.scan(
            one_step, (state, jnp.zeros((), jnp.float32)), jax.random.split(k_run, num_steps)
        )
        return acc

    return rollout


def measure_steps_per_second(
    env: ParticleWorld,
    params: MPEParams,
    num_envs: int = 64,
    num_steps: int = 1000,
    repeats: int = 3,
    seed: int = 0,
    clock: str = "wall",
) -> dict[str, float]:
    """Environment steps per second (``num_envs * num_steps`` / best time of ``repeats``
    runs, compile excluded) of :func:`make_rollout`; includes action sampling and auto-reset.

    ``clock="wall"`` times wall seconds; ``clock="process"`` CPU seconds of this process,
    a load-insensitive figure that equals single-core wall time only when XLA runs on one
    thread (``XLA_FLAGS=--xla_cpu_multi_thread_eigen=false``, ``taskset -c 0``). Returns
    ``{"steps_per_s", "seconds", "compile_s", "num_envs", "num_steps", "clock"}``.
    """
    check_int("repeats", repeats, 1)
    check_choice("clock", clock, ("wall", "process"))
    timer = time.perf_counter if clock == "wall" else time.process_time
    rollout = make_rollout(env, params, num_envs, num_steps)
    key = jax.random.key(seed)
    t0 = time.perf_counter()
    jax.block_until_ready(rollout(key))
    compile_s = time.perf_counter() - t0
    best = float("inf")
    for i in range(repeats):
        k = jax.random.fold_in(key, i + 1)
        t0 = timer()
        jax.block_until_ready(rollout(k))
        best = min(best, timer() - t0)
    return {
        "steps_per_s": num_envs * num_steps / best,
        "seconds": best,
        "compile_s": compile_s,
        "num_envs": num_envs,
        "num_steps": num_steps,
        "clock": clock,
    }


def main(argv: list[str] | None = None) -> int:
    """``python -m jaxrl_pim.envs.mpe``: print (and optionally save) env steps/s per scenario.

    Prints a Markdown table; ``--json PATH`` also writes a report (shared schema, atomic).
    """
    import argparse

    from jaxrl_pim import report

    parser = argparse.ArgumentParser(prog="python -m jaxrl_pim.envs.mpe", description=main.__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[3, 24],
                        help="presets (spread: agents; tag: predators), default 3 24")
    parser.add_argument("--scenarios", nargs="+", default=["spread", "tag"])
    parser.add_argument("--num-envs", type=int, default=64)
    parser.add_argument("--num-steps", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--clock", choices=["wall", "process"], default="wall",
                        help="wall seconds, or CPU seconds of this process (see docs/mpe.md)")
    parser.add_argument("--json", default=None, help="write a JSON report here")
    args = parser.parse_args(argv)
    rows = []
    for scenario in args.scenarios:
        for size in args.sizes:
            env, params = make(scenario, size)
            r = measure_steps_per_second(env, params, args.num_envs, args.num_steps, args.repeats,
                                         clock=args.clock)
            rows.append({"scenario": scenario, "preset": size, "env": env.name, **r})
    print(f"device: {report.device_label()}, {args.num_envs} vmapped envs, "
          f"{args.num_steps} steps, best of {args.repeats}, {args.clock} clock")
    print("| env | agents | steps/s | best run s | compile s |")
    print("|---|---:|---:|---:|---:|")
    for r in rows:
        agents = make(r["scenario"], r["preset"])[0].num_agents
        print(f"| {r['env']} | {agents} | {r['steps_per_s']:,.0f} | {r['seconds']:.3f} | "
              f"{r['compile_s']:.1f} |")
    if args.json:
        summary = {f"{r['env']}_steps_per_s": r["steps_per_s"] for r in rows}
        data = report.make_report(vars(args), {"rows": rows},
                                  {r["env"]: r["seconds"] for r in rows}, summary)
        report.write_json(args.json, data)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
