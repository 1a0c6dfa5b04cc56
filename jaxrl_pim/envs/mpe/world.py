"""The particle world shared by the MPE scenarios: parameters, state, physics, stepping.

Physics (the original particle world): 2-D point masses of mass 1, time step ``dt`` 0.1,
velocity damping 0.25, soft contact forces ``contact_force * delta / |delta| *
softplus(-(|delta| - (r_a + r_b)) / margin) * margin`` between every pair of colliding
entities (force 100, margin 1e-3), optional speed limit per agent. Landmarks never move.
Integration is semi-implicit Euler as in the original code (velocity first, then position);
``integration="mpe2"`` uses the order of the maintained PettingZoo port (position first).
The scenarios (:mod:`jaxrl_pim.envs.mpe.scenarios`) add observations and rewards.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from jaxrl_pim.checks import check_choice
from jaxrl_pim.envs import api, spaces
from jaxrl_pim.envs.mpe.teams import ACTION_DIM, TeamSpec  # jax-free (a config reads them)

INTEGRATIONS = ("original", "mpe2")
#: Entities (agents + landmarks) from which the pairwise terms use separate x/y arrays.
SPLIT_PAIRS_MIN_ENTITIES = 12
#: The split pairwise terms pad their entity axis to a multiple of this (above it).
PAIR_LANES = 8


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


def _pad_entities(x: jax.Array, y: jax.Array, size: jax.Array
                  ) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Pad the entity axis of ``x``, ``y``, ``size`` ``[E]`` to a multiple of
    :data:`PAIR_LANES` when ``E > PAIR_LANES`` (else return them unchanged).

    XLA:CPU computes the ``[A, E]`` pairwise terms several times slower per pair when ``E``
    is not a multiple of its 8 float32 vector lanes (``docs/mpe.md``). A padded entity sits
    at the origin with radius ``-inf``: its contact distance is ``-inf``, so its softplus
    penetration, and with it its force on every agent, is exactly 0 wherever it is.
    """
    pad = -x.shape[0] % PAIR_LANES
    if x.shape[0] <= PAIR_LANES or not pad:
        return x, y, size
    zeros = jnp.zeros((pad,), x.dtype)
    return (jnp.concatenate([x, zeros]), jnp.concatenate([y, zeros]),
            jnp.concatenate([size, jnp.full((pad,), -jnp.inf, size.dtype)]))


# --------------------------------------------------------------------------- base world


class ParticleWorld(api.Environment):
    """Shared physics, reset and stepping of the particle worlds (an ``api.Environment``).

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
        # on CPU for a few entities, separate x/y [A, E] arrays from SPLIT_PAIRS_MIN_ENTITIES
        # agents + landmarks on (the switch follows the entity count, not the agent count:
        # spread-6, 12 entities, steps faster split, tag-6, 8 agents but 10 entities,
        # interleaved). Both are tested against the NumPy reference.
        self.split_pairs = self.num_agents + self.num_landmarks >= SPLIT_PAIRS_MIN_ENTITIES

    def _static_key(self) -> tuple:
        """Everything that changes the traced program; equal keys share jit caches."""
        return (type(self), self.teams, self.num_landmarks, self.landmarks_collide,
                self.integration, getattr(self, "reward_convention", None), self.split_pairs)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ParticleWorld) and self._static_key() == other._static_key()

    def __hash__(self) -> int:
        return hash(self._static_key())

    # ----- Environment hooks
    def reset_env(self, key: jax.Array, params: MPEParams) -> tuple[tuple[jax.Array, ...],
                                                                    MPEState]:
        """Agents uniform in ``[-agent_init_range, +]^2``, landmarks uniform in
        ``[-landmark_init_range, +]^2``, zero velocities, time 0.

        One draw of ``[A + L, 2]`` positions, agents first (a reset runs inside every
        auto-resetting ``step``, so a key split and a second draw cost there every step)."""
        n, m = self.num_agents, self.num_landmarks
        bound = jnp.concatenate([
            jnp.broadcast_to(jnp.asarray(params.agent_init_range, jnp.float32), (n,)),
            jnp.broadcast_to(jnp.asarray(params.landmark_init_range, jnp.float32), (m,)),
        ])[:, None]
        pos = jax.random.uniform(key, (n + m, 2), jnp.float32, -bound, bound)
        state = MPEState(
            agent_pos=pos[:n],
            agent_vel=jnp.zeros((n, 2), jnp.float32),
            landmark_pos=pos[n:],
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
            ex, ey, esize = _pad_entities(ex, ey, esize)
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
