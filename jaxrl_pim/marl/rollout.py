"""The acting side of a run: the train state, its initialisation, and the per-step phases.

:func:`make_rollout` returns a :class:`Rollout`, a NamedTuple of pure jittable functions:
``init`` (networks, optimisers, empty buffers, reset envs), ``reset``, ``select_actions``
(Gumbel-softmax actions of every agent), ``env_step`` (the vmapped worlds, no auto-reset) and
``buffer_add`` (lock-step append of the ``num_envs`` transitions to every team buffer).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxrl_pim import replay
from jaxrl_pim.envs.mpe import MPEParams, ParticleWorld
from jaxrl_pim.marl.learner import TeamParams
from jaxrl_pim.marl.networks import Networks, gumbel_softmax, init_stacked


class TrainState(NamedTuple):
    """Everything a run carries between steps (a pytree; checkpoint it with ``checkpoint``).

    ``teams`` / ``buffers`` / ``obs`` hold one entry per team; ``obs[t]`` is ``[E, n_t, O_t]``.
    ``step`` counts env steps of the vectorised batch, ``episode`` finished episodes,
    ``num_updates`` update rounds; ``losses`` float32 ``[num_teams, 2]`` is the last round's
    (critic loss, actor loss), averaged over the team's agents (NaN before the first update).
    """

    teams: tuple[TeamParams, ...]
    buffers: tuple[replay.BufferState, ...]
    sampler: Any
    env_state: Any
    obs: tuple[jax.Array, ...]
    key: jax.Array
    step: jax.Array
    episode: jax.Array
    num_updates: jax.Array
    losses: jax.Array


class Rollout(NamedTuple):
    """The per-step phases (shapes with ``E = num_envs``, team ``t`` of ``n_t`` agents).

    * ``init(key) -> TrainState``.
    * ``reset(key) -> (obs, env_state)``; ``obs[t] [E, n_t, O_t]``.
    * ``select_actions(team_params, obs, key) -> actions``; ``actions[t] [E, n_t, A]``.
    * ``env_step(key, env_state, actions) -> (obs, env_state, rewards, terminated)``;
      ``rewards[t] [E, n_t]``, ``terminated [E]``.
    * ``buffer_add(buffer_states, sampler_state, obs, actions, rewards, next_obs,
      terminated) -> (buffer_states, sampler_state)``.
    """

    init: Callable[[jax.Array], TrainState]
    reset: Callable[[jax.Array], Any]
    select_actions: Callable[..., tuple[jax.Array, ...]]
    env_step: Callable[..., Any]
    buffer_add: Callable[..., Any]


def make_rollout(
    env: ParticleWorld,
    env_params: MPEParams,
    networks: Networks,
    buffers: Sequence[replay.Buffer],
    sampler: replay.Sampler,
    *,
    num_envs: int,
    num_critics: int,
    temperature: float,
) -> Rollout:
    """Build the acting phases of a run on ``env`` (see :class:`Rollout`)."""
    teams = tuple(env.teams)
    joint_dim = sum(t.num_agents * (t.obs_dim + t.action_dim) for t in teams)
    actors, critic_net, tx = networks
    C = num_critics

    def reset(key):
        keys = jax.random.split(key, num_envs)
        return jax.vmap(env.reset, in_axes=(0, None))(keys, env_params)

    def init(key: jax.Array) -> TrainState:
        k_env, k_net, k_run = jax.random.split(key, 3)
        team_params = []
        for ti, t in enumerate(teams):
            ka, kc = jax.random.split(jax.random.fold_in(k_net, ti))
            actor = init_stacked(actors[ti], ka, t.num_agents, t.obs_dim)
            critic = jax.tree.map(
                lambda x, n=t.num_agents: x.reshape(n, C, *x.shape[1:]),
                init_stacked(critic_net, kc, t.num_agents * C, joint_dim),
            )
            team_params.append(TeamParams(
                actor=actor, critic=critic, target_actor=actor, target_critic=critic,
                actor_opt=jax.vmap(tx.init)(actor),
                critic_opt=jax.vmap(jax.vmap(tx.init))(critic),
            ))
        obs, env_state = reset(k_env)
        return TrainState(
            teams=tuple(team_params),
            buffers=tuple(b.init() for b in buffers),
            sampler=sampler.init(),
            env_state=env_state,
            obs=obs,
            key=k_run,
            step=jnp.zeros((), jnp.int32),
            episode=jnp.zeros((), jnp.int32),
            num_updates=jnp.zeros((), jnp.int32),
            losses=jnp.full((len(teams), 2), jnp.nan, jnp.float32),
        )

    def select_actions(team_params, obs, key):
        out = []
        for ti in range(len(teams)):
            logits = jax.vmap(actors[ti].apply, in_axes=(0, 1), out_axes=1)(
                team_params[ti].actor, obs[ti]
            )
            out.append(gumbel_softmax(jax.random.fold_in(key, ti), logits, temperature))
        return tuple(out)

    def env_step(key, env_state, actions):
        # The raw step_env: episodes are reset by the trainer, so the stored next_obs of the
        # last step is the true final observation.
        keys = jax.random.split(key, num_envs)
        obs, env_state, rewards, terminated, _ = jax.vmap(
            env.step_env, in_axes=(0, 0, 0, None)
        )(keys, env_state, actions, env_params)
        return obs, env_state, rewards, terminated

    def buffer_add(buffer_states, sampler_state, obs, actions, rewards, next_obs, terminated):
        # Time order = env order; the sampler's on_add gives each new row max priority
        # (row pos + e of the ring, which on_add wraps at the capacity).
        pos = buffer_states[0].insert_pos
        new_states = []
        for ti, b in enumerate(buffers):
            n = teams[ti].num_agents
            done = jnp.broadcast_to(
                jnp.asarray(terminated, jnp.float32).reshape(num_envs, 1), (num_envs, n)
            )
            tr = replay.Transition(obs=obs[ti], action=actions[ti], reward=rewards[ti],
                                   next_obs=next_obs[ti], done=done)
            if num_envs == 1:
                tr = jax.tree.map(lambda x: x[0], tr)
            new_states.append(b.add(buffer_states[ti], tr))
        if num_envs <= 64:
            for e in range(num_envs):
                sampler_state = sampler.on_add(sampler_state, pos + e)
        else:
            def body(ss, e):
                return sampler.on_add(ss, pos + e), None

            sampler_state, _ = jax.lax.scan(body, sampler_state, jnp.arange(num_envs))
        return tuple(new_states), sampler_state

    return Rollout(init=init, reset=reset, select_actions=select_actions, env_step=env_step,
                   buffer_add=buffer_add)
