"""JaxMARL environments in, the library's particle worlds out.

Two adapters between JaxMARL 0.2 ``MultiAgentEnv``s (per-agent dicts, ``reset(key)``,
``step(key, state, actions)`` with auto-reset) and the team-stacked worlds of
:mod:`jaxrl_pim.envs.mpe` that the MARL trainer takes:

* :func:`from_jaxmarl` wraps a JaxMARL environment (a registered name or an object) as a
  team-stacked world (:class:`FromJaxMARL`): agents are grouped into teams by name prefix
  (``adversary_0..2`` -> team ``"adversary"``, ``agent_0`` -> ``"agent"``), each team's
  observations and rewards stacked ``[n_t, ...]`` in the environment's agent order, so
  heterogeneous observation sizes (simple_tag's 16 and 14) are two teams, as in the native
  predator-prey world. The learners' action vectors (points of the simplex, ``[n_t, K]``)
  go to a ``Discrete(K)`` agent as their argmax (for a Gumbel-softmax vector that is an
  exact categorical sample) and to a ``Box(0, 1, (K,))`` agent as they are.
* :func:`to_jaxmarl` exposes a spread or tag world (any size or composition) as a JaxMARL
  ``MultiAgentEnv`` (:class:`ToJaxMARL`) with JaxMARL's agent names and action conventions,
  so code written for JaxMARL's MPE environments (IPPO / MAPPO scripts, wrappers) runs on it.

Supported JaxMARL environments: every registered one whose agents all have flat observations
(1-D ``Box``) and ``Discrete`` or ``Box(0, 1)`` actions and whose episodes end only at the
time limit (the trainer resets every ``episode_length`` steps): the ``MPE_*`` family
(:data:`SUPPORTED`). Anything else is refused with one line (:func:`check_supported`).

jaxmarl is an optional dependency (``pip install 'jaxrl-pim[jaxmarl]'``); this module imports
it when first used, and :func:`require_jaxmarl` says which extra to install when it is
missing.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl_pim import choices
from jaxrl_pim.envs.mpe.world import ACTION_DIM, MPEParams, MPEState, ParticleWorld, TeamSpec

INSTALL_HINT = "pip install 'jaxrl-pim[jaxmarl]'"

SUPPORTED = choices.JAXMARL_SUPPORTED  # in jaxrl_pim.choices (no jax to import)
"""Registered JaxMARL environments the adapter takes (flat observations, fixed-length
episodes, ``Discrete`` or ``Box(0, 1)`` actions)."""

ACTION_PERMUTATION = np.array([0, 2, 1, 4, 3])
"""JaxMARL's MPE action index -> the library's: JaxMARL moves ``-x, +x, -y, +y`` on entries
(or discrete actions) 1-4, the library ``+x, -x, +y, -y``; ``library = jaxmarl[..., perm]``
and a JaxMARL discrete action ``d`` is the library one-hot at ``perm[d]``."""

PREFIX = choices.JAXMARL_PREFIX


def require_jaxmarl() -> Any:
    """Import and return the ``jaxmarl`` package, or raise ImportError naming the extra."""
    try:
        import jaxmarl
    except ImportError as err:
        raise ImportError(f"the JaxMARL adapters need the jaxmarl package: {INSTALL_HINT} "
                          f"({err})") from None
    return jaxmarl


def check_supported(name: str) -> str:
    """``name`` (with or without the ``jaxmarl:`` prefix) if the adapter takes it, else
    ValueError in one line naming the supported environments."""
    bare = name[len(PREFIX):] if name.startswith(PREFIX) else name
    if bare not in SUPPORTED:
        registered = set(require_jaxmarl().registered_envs)
        why = ("is not a registered JaxMARL environment" if bare not in registered else
               "is not supported (observations that are not flat vectors, or episodes that "
               "end before the time limit)")
        raise ValueError(f"jaxmarl:{bare} {why}; supported: {', '.join(SUPPORTED)}")
    return bare


def _team_name(agent: str) -> str:
    return re.sub(r"_\d+$", "", agent)


class FromJaxMARL:
    """A JaxMARL ``MultiAgentEnv`` as a team-stacked world (the trainer's environment API).

    ``teams``: one :class:`~jaxrl_pim.envs.mpe.TeamSpec` per group of agents sharing a name
    prefix, observation length and action space, in order of first appearance;
    ``team_agents[t]``: the JaxMARL agent names of team ``t``. ``reset(key, params=None) ->
    (obs, state)`` and ``step_env(key, state, actions, params=None) -> (obs, state, rewards,
    terminated, info)`` with ``obs[t]`` float32 ``[n_t, O_t]``, ``actions[t]`` float
    ``[n_t, K_t]``, ``rewards[t]`` float32 ``[n_t]``, ``terminated`` = JaxMARL's
    ``dones["__all__"]``. ``step_env`` does not reset (the trainer resets every episode);
    ``step`` does, as JaxMARL's. ``params`` is unused (JaxMARL keeps its parameters on the
    environment object).
    """

    def __init__(self, env: Any, name: str | None = None) -> None:
        jaxmarl = require_jaxmarl()
        spaces = jaxmarl.environments.spaces
        self.env = env
        self.env_name = name or type(env).__name__
        groups: dict[tuple, list[str]] = {}
        kinds: dict[tuple, tuple[str, int, int]] = {}
        for agent in env.agents:
            obs_space, act_space = env.observation_space(agent), env.action_space(agent)
            if not isinstance(obs_space, spaces.Box) or len(obs_space.shape) != 1:
                raise ValueError(f"jaxmarl:{self.env_name}: agent {agent!r} has observations "
                                 f"{type(obs_space).__name__}{getattr(obs_space, 'shape', '')}"
                                 "; the adapter takes flat (1-D Box) observations")
            if isinstance(act_space, spaces.Discrete):
                kind, k = "discrete", int(act_space.n)
            elif (isinstance(act_space, spaces.Box) and len(act_space.shape) == 1
                  and np.all(np.asarray(act_space.low) == 0)
                  and np.all(np.asarray(act_space.high) == 1)):
                kind, k = "box", int(act_space.shape[0])
            else:
                raise ValueError(f"jaxmarl:{self.env_name}: agent {agent!r} has actions "
                                 f"{type(act_space).__name__}; the adapter takes Discrete or "
                                 "Box(0, 1, (K,)) actions")
            key = (_team_name(agent), int(obs_space.shape[0]), kind, k)
            groups.setdefault(key, []).append(agent)
            kinds[key] = (kind, int(obs_space.shape[0]), k)
        names = [k[0] for k in groups]
        self.teams = tuple(
            TeamSpec(k[0] if names.count(k[0]) == 1 else f"{k[0]}_{k[1]}", len(v), k[1], k[3])
            for k, v in groups.items())
        self.team_agents = tuple(tuple(v) for v in groups.values())
        self.action_kinds = tuple(kinds[k][0] for k in groups)
        self.num_agents = len(env.agents)

    @property
    def name(self) -> str:
        return f"jaxmarl:{self.env_name}"

    def _stack(self, per_agent: dict, dtype: Any = jnp.float32) -> tuple[jax.Array, ...]:
        return tuple(jnp.stack([jnp.asarray(per_agent[a], dtype) for a in agents])
                     for agents in self.team_agents)

    def to_jaxmarl_actions(self, actions: tuple[jax.Array, ...]) -> dict[str, jax.Array]:
        """Team-stacked actions ``actions[t] [n_t, K_t]`` -> JaxMARL's per-agent dict
        (argmax for ``Discrete`` agents, the vector for ``Box`` agents)."""
        out = {}
        for agents, kind, a in zip(self.team_agents, self.action_kinds, actions, strict=True):
            a = jnp.asarray(a)
            vals = jnp.argmax(a, axis=-1).astype(jnp.int32) if kind == "discrete" else a
            out.update({agent: vals[i] for i, agent in enumerate(agents)})
        return out

    def reset(self, key: jax.Array, params: Any = None) -> tuple[tuple[jax.Array, ...], Any]:
        obs, state = self.env.reset(key)
        return self._stack(obs), state

    def _team_step(self, step: Any, key: jax.Array, state: Any,
                   actions: tuple[jax.Array, ...]) -> tuple:
        """One JaxMARL ``step`` / ``step_env`` call on team-stacked actions; returns
        ``(obs, state, rewards, done, info)`` team-stacked, ``done = dones["__all__"]``."""
        obs, state, rewards, dones, info = step(key, state, self.to_jaxmarl_actions(actions))
        return (self._stack(obs), state, self._stack(rewards),
                jnp.asarray(dones["__all__"], jnp.bool_), info)

    def step_env(self, key: jax.Array, state: Any, actions: tuple[jax.Array, ...],
                 params: Any = None) -> tuple:
        """JaxMARL's ``step_env`` (no reset), team-stacked."""
        return self._team_step(self.env.step_env, key, state, actions)

    def step(self, key: jax.Array, state: Any, actions: tuple[jax.Array, ...],
             params: Any = None) -> tuple:
        """JaxMARL's ``step`` (auto-reset when ``dones["__all__"]``), team-stacked."""
        return self._team_step(self.env.step, key, state, actions)


def from_jaxmarl(env: str | Any, **env_kwargs: Any) -> tuple[FromJaxMARL, None]:
    """Wrap a JaxMARL environment (a registered name such as ``"MPE_simple_spread_v3"``,
    optionally prefixed ``"jaxmarl:"``, made with ``env_kwargs``; or an environment object)
    as a team-stacked world. Returns ``(env, None)`` (no separate parameters)."""
    jaxmarl = require_jaxmarl()
    if isinstance(env, str):
        name = check_supported(env)
        return FromJaxMARL(jaxmarl.make(name, **env_kwargs), name), None
    return FromJaxMARL(env), None


# --------------------------------------------------------------------------- the other way


def _jaxmarl_names(world: ParticleWorld) -> list[str]:
    """JaxMARL's agent names for a library world: spread ``agent_i``; tag ``adversary_i``
    for the predators, then ``agent_j`` for the prey."""
    if len(world.teams) == 1:
        return [f"agent_{i}" for i in range(world.num_agents)]
    pred, prey = world.teams
    return ([f"adversary_{i}" for i in range(pred.num_agents)]
            + [f"agent_{j}" for j in range(prey.num_agents)])


def _make_to_jaxmarl_class() -> type:
    jaxmarl = require_jaxmarl()
    from flax import struct
    from jaxmarl.environments.multi_agent_env import MultiAgentEnv
    from jaxmarl.environments.multi_agent_env import State as BaseState
    from jaxmarl.environments.spaces import Box, Discrete

    @struct.dataclass
    class WorldState(BaseState):
        """JaxMARL state (``done``, ``step``) around the library's ``MPEState``."""

        world: MPEState

    class ToJaxMARL(MultiAgentEnv):
        __doc__ = _TO_JAXMARL_DOC

        def __init__(self, world: ParticleWorld, params: MPEParams,
                     action_type: str = "Discrete") -> None:
            if action_type not in ("Discrete", "Continuous"):
                raise ValueError(f"action_type must be 'Discrete' or 'Continuous', got "
                                 f"{action_type!r}")
            super().__init__(world.num_agents)
            self.world, self.params, self.action_type = world, params, action_type
            self.agents = _jaxmarl_names(world)
            self.max_steps = int(params.max_steps)
            dims = [t.obs_dim for t in world.teams for _ in range(t.num_agents)]
            self.observation_spaces = {a: Box(-jnp.inf, jnp.inf, (d,))
                                       for a, d in zip(self.agents, dims, strict=True)}
            self.action_spaces = {a: Discrete(ACTION_DIM) if action_type == "Discrete"
                                  else Box(0.0, 1.0, (ACTION_DIM,)) for a in self.agents}
            self._perm = jnp.asarray(ACTION_PERMUTATION)

        @property
        def name(self) -> str:
            return f"jaxrl_pim:{self.world.name}"

        @property
        def agent_classes(self) -> dict[str, list[str]]:
            """Team name -> its agents' JaxMARL names."""
            out, start = {}, 0
            for t in self.world.teams:
                out[t.name] = self.agents[start:start + t.num_agents]
                start += t.num_agents
            return out

        def _dict(self, teams: tuple[jax.Array, ...]) -> dict[str, jax.Array]:
            flat = [row for x in teams for row in x]
            return dict(zip(self.agents, flat, strict=True))

        def _world_actions(self, actions: dict[str, jax.Array]) -> tuple[jax.Array, ...]:
            a = jnp.stack([jnp.asarray(actions[n]) for n in self.agents])
            if self.action_type == "Discrete":
                vec = jax.nn.one_hot(self._perm[a.astype(jnp.int32).reshape(-1)], ACTION_DIM)
            else:
                vec = a.reshape(self.num_agents, ACTION_DIM)[:, self._perm]
            return self.world._split(vec.astype(jnp.float32))

        def reset(self, key: jax.Array) -> tuple[dict[str, jax.Array], Any]:
            obs, w = self.world.reset_env(key, self.params)
            state = WorldState(done=jnp.zeros((), jnp.bool_), step=jnp.zeros((), jnp.int32),
                               world=w)
            return self._dict(obs), state

        def step_env(self, key: jax.Array, state: Any, actions: dict[str, jax.Array]
                     ) -> tuple:
            obs, w, rewards, _, _ = self.world.step_env(key, state.world,
                                                        self._world_actions(actions),
                                                        self.params)
            done = w.time >= self.max_steps
            state = state.replace(world=w, done=done, step=w.time)
            dones = {a: done for a in self.agents}
            dones["__all__"] = done
            return self._dict(obs), state, self._dict(rewards), dones, {}

        def get_obs(self, state: Any) -> dict[str, jax.Array]:
            return self._dict(self.world.get_obs(state.world, self.params))

        def get_avail_actions(self, state: Any) -> dict[str, jax.Array]:
            return {a: jnp.ones((ACTION_DIM,), jnp.int32) for a in self.agents}

    del jaxmarl
    return ToJaxMARL


_TO_JAXMARL_DOC = """A library particle world as a JaxMARL ``MultiAgentEnv``.

Agents are named as in JaxMARL's MPE (spread: ``agent_0..N-1``; tag: ``adversary_i`` for
the predators, then ``agent_j`` for the prey); observations, rewards and dones are dicts by
agent name (``obs[a]`` float32 ``[O_team]``, ``rewards[a]`` float32 scalar), and actions
follow JaxMARL's MPE conventions: ``Discrete(5)`` (0 stay, 1 -x, 2 +x, 3 -y, 4 +y) or, with
``action_type="Continuous"``, ``Box(0, 1, (5,))`` with force ``(a[2] - a[1], a[4] - a[3])``
times the agent's acceleration. ``dones`` turn true after ``params.max_steps`` steps, and
``step`` (JaxMARL's) then resets. The state is JaxMARL's ``State`` (``done``, ``step``)
holding the library's ``MPEState`` as ``world``.
"""

_CLASS: list[type] = []


def to_jaxmarl(world: ParticleWorld | tuple[ParticleWorld, MPEParams],
               params: MPEParams | None = None, *, action_type: str = "Discrete") -> Any:
    """The library world ``world`` (with ``params``; or an ``(env, params)`` pair such as
    ``mpe.make("spread", 3)`` returns) as a JaxMARL ``MultiAgentEnv`` (see the class doc)."""
    if isinstance(world, tuple):
        world, params = world
    if params is None:
        raise ValueError("to_jaxmarl needs the world's MPEParams (or an (env, params) pair)")
    if not _CLASS:
        _CLASS.append(_make_to_jaxmarl_class())
    return _CLASS[0](world, params, action_type)


def jaxmarl_class() -> Callable[..., Any]:
    """The ``ToJaxMARL`` class (a ``jaxmarl`` ``MultiAgentEnv`` subclass; built on first use
    because jaxmarl is optional)."""
    if not _CLASS:
        _CLASS.append(_make_to_jaxmarl_class())
    return _CLASS[0]
