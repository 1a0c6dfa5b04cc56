"""MADDPG, MATD3 and MASAC on the JAX particle worlds: the jitted trainer.

``make_train(config) -> train(key) -> (state, metrics)``: a whole run is one pure, jittable
function (``jax.jit(jax.vmap(train))`` over seeds works). It is built once from

* the world (``make_env``), one replay buffer per team (``make_buffers``) and the sampler
  (``make_sampler``), the networks (``networks.make_networks``) and the algorithm's rules
  (``rules.make_algorithm``);
* the acting phases (``rollout.make_rollout``) and the update-round phases
  (``learner.make_learner``), bundled as :class:`Phases` (the profiler times them one by
  one).

Training loop (everything inside one ``jit``): episodes are a ``lax.scan``; each episode
scans ``episode_length`` steps of ``num_envs`` vmapped environments and then resets them.
Every step selects actions (Gumbel-softmax, temperature 1), steps the envs, appends the
``num_envs`` transitions to every team's buffer in lock-step and, every ``update_every``
steps once ``learning_starts`` transitions are stored, runs ``updates_per_round`` update
rounds. With ``num_envs = 1`` this is the original schedule (the original updates after
steps 0, 100, ...; here after steps 99, 199, ... -- an offset of one step).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxrl_pim import replay
from jaxrl_pim.checks import check_int
from jaxrl_pim.envs import mpe
from jaxrl_pim.marl import rules
from jaxrl_pim.marl.config import MARLConfig
from jaxrl_pim.marl.learner import Learner, TeamBatch, TeamParams, make_learner
from jaxrl_pim.marl.networks import gumbel_softmax, make_networks
from jaxrl_pim.marl.rollout import Rollout, TrainState, make_rollout
from jaxrl_pim.marl.schedule import when

__all__ = [
    "Phases",
    "TeamBatch",
    "TeamParams",
    "TrainState",
    "make_buffers",
    "make_env",
    "make_init",
    "make_phases",
    "make_sampler",
    "make_train",
    "make_train_from",
    "random_policy_return",
]

Metrics = dict[str, jax.Array]


def make_env(config: MARLConfig) -> tuple[mpe.ParticleWorld, mpe.MPEParams]:
    """The configured particle world: ``(env, params)`` with ``params.max_steps`` set; for a
    ``"jaxmarl:<name>"`` env the JaxMARL environment wrapped as a team-stacked world,
    ``(envs.jaxmarl_adapter.FromJaxMARL, None)``."""
    if config.is_jaxmarl:
        from jaxrl_pim.envs.jaxmarl_adapter import from_jaxmarl

        return from_jaxmarl(config.env)
    if config.env == "spread":
        env, params = mpe.make_spread(config.num_agents)
    else:
        env, params = mpe.make_tag(*config.tag_sizes)
    return env, params.replace(max_steps=config.episode_length)


def make_buffers(config: MARLConfig, teams: tuple[mpe.TeamSpec, ...]
                 ) -> tuple[replay.Buffer, ...]:
    """One replay buffer per team, in the configured layout and capacity (``compact``: one
    row per env per step, episodes of ``episode_length`` steps)."""
    extra = ({"stride": config.num_envs, "episode_length": config.episode_length}
             if config.layout == "compact" else {})
    return tuple(replay.make_buffer(config.layout, config.buffer_capacity, t.num_agents,
                                    t.obs_dim, t.action_dim, **extra) for t in teams)


def make_sampler(config: MARLConfig) -> replay.Sampler:
    """The configured replay sampler component (``config.sampler``, one of
    ``replay.SAMPLERS``, with the config's sizes and exponents)."""
    c = config
    makers = {
        "uniform": replay.uniform,
        "neighbor": lambda: replay.neighbor(c.num_refs, c.batch_size // c.num_refs,
                                            window=c.window),
        "prioritized": lambda: replay.prioritized(c.buffer_capacity, c.priority_alpha,
                                                  c.priority_beta),
        "info_prioritized": lambda: replay.info_prioritized(c.buffer_capacity,
                                                            c.priority_alpha, c.priority_beta),
    }
    return makers[c.sampler]()


class Phases(NamedTuple):
    """The two halves of a training step: ``rollout`` (init and the per-step phases) and
    ``learner`` (the update-round phases). Every function is pure and jittable alone."""

    rollout: Rollout
    learner: Learner


def make_phases(config: MARLConfig, algorithm: rules.Algorithm | None = None) -> Phases:
    """Build the world, buffers, sampler, networks and rules once; return their phases.

    ``algorithm`` replaces the rules named by ``config.algo`` (see ``rules.Algorithm``)."""
    env, env_params = make_env(config)
    teams = tuple(env.teams)
    buffers = make_buffers(config, teams)
    sampler = make_sampler(config)
    networks = make_networks(config.hidden, [t.action_dim for t in teams], config.lr,
                             config.grad_clip)
    algorithm = rules.make_algorithm(config) if algorithm is None else algorithm
    rollout = make_rollout(env, env_params, networks, buffers, sampler,
                           num_envs=config.num_envs, num_critics=algorithm.num_critics,
                           temperature=config.temperature)
    learner = make_learner(teams, networks, algorithm, buffers, sampler,
                           sampling_mode=config.sampling_mode, batch_size=config.batch_size,
                           gamma=config.gamma, tau=config.tau, temperature=config.temperature)
    return Phases(rollout, learner)


def _train_from(
    config: MARLConfig, phases: Phases, num_episodes: int | None,
    callback: Callable[..., Any] | None,
) -> Callable[[TrainState], tuple[TrainState, Metrics]]:
    cfg = config
    rollout, learner = phases
    n_eps = cfg.num_episodes if num_episodes is None else check_int("num_episodes",
                                                                   num_episodes, lo=0)
    report_every = max(1, n_eps // 200)

    def env_step(state: TrainState, _) -> tuple[TrainState, jax.Array]:
        key, k_act, k_env, k_upd = jax.random.split(state.key, 4)
        actions = rollout.select_actions(state.teams, state.obs, k_act)
        next_obs, env_state, rewards, terminated = rollout.env_step(k_env, state.env_state,
                                                                    actions)
        buffers, ss = rollout.buffer_add(state.buffers, state.sampler, state.obs, actions,
                                         rewards, next_obs, terminated)
        step = state.step + 1
        due = (step % cfg.update_every == 0) & (buffers[0].size >= cfg.learning_starts)

        def updates(operand, extra):
            buffers, k_upd = extra

            def one(carry, k):
                teams, ss, nu, _ = carry
                teams, ss, losses = learner.update_round(teams, buffers, ss, nu, k)
                return (teams, ss, nu + 1, losses), None

            carry, _ = jax.lax.scan(one, operand,
                                    jax.random.split(k_upd, cfg.updates_per_round))
            return carry

        # A conditional also when seeds are vmapped from stacked states (per-seed counters).
        teams, ss, num_updates, losses = when(
            due, updates, (state.teams, ss, state.num_updates, state.losses),
            (buffers, k_upd))
        # MATD3's critic-only rounds keep the last actor loss.
        losses = jnp.where(jnp.isnan(losses) & ~jnp.isnan(state.losses), state.losses, losses)
        state = state._replace(
            teams=teams, buffers=buffers, sampler=ss, env_state=env_state, obs=next_obs,
            key=key, step=step, num_updates=num_updates, losses=losses,
        )
        return state, jnp.stack([r.mean(axis=(0, 1)) for r in rewards])  # [num_teams]

    def train_from(state: TrainState) -> tuple[TrainState, Metrics]:
        total = state.episode + n_eps

        def episode(state: TrainState, _) -> tuple[TrainState, Metrics]:
            state, rewards = jax.lax.scan(env_step, state, None, length=cfg.episode_length)
            key, k_reset = jax.random.split(state.key)
            obs, env_state = rollout.reset(k_reset)
            state = state._replace(episode=state.episode + 1, obs=obs, env_state=env_state,
                                   key=key)
            metrics = {
                "episode_return": rewards.sum(axis=0),
                "critic_loss": state.losses[:, 0],
                "actor_loss": state.losses[:, 1],
            }
            if callback is not None:
                done = state.episode
                jax.lax.cond(
                    (done % report_every == 0) | (done == total),
                    lambda: jax.debug.callback(callback, done, total,
                                               {"return": metrics["episode_return"][0]}),
                    lambda: None,
                )
            return state, metrics

        if n_eps == 0:
            empty = jnp.zeros((0, state.losses.shape[0]), jnp.float32)
            return state, {"episode_return": empty, "critic_loss": empty, "actor_loss": empty}
        return jax.lax.scan(episode, state, None, length=n_eps)

    return train_from


def make_train_from(
    config: MARLConfig,
    num_episodes: int | None = None,
    callback: Callable[..., Any] | None = None,
    algorithm: rules.Algorithm | None = None,
    phases: Phases | None = None,
) -> Callable[[TrainState], tuple[TrainState, Metrics]]:
    """``train_from(state) -> (state, metrics)``: continue a run for ``num_episodes`` more.

    ``num_episodes`` defaults to ``config.num_episodes``. Metrics (one row per episode):
    ``episode_return [num_episodes, num_teams]`` (undiscounted return per agent, averaged over
    the team's agents and the envs), ``critic_loss`` / ``actor_loss``
    ``[num_episodes, num_teams]`` (latest update round so far, mean over the team's agents;
    NaN before the first update; MATD3 keeps the last actor loss through critic-only
    rounds). Running ``train_from`` for ``a`` then ``b`` episodes
    equals running it once for ``a + b`` (the RNG key and counters live in the state).

    ``callback(episode, total, metrics)`` (e.g. :class:`jaxrl_pim.progress.RichProgress`) is
    called through ``jax.debug.callback`` about 200 times per run when given. ``algorithm``
    replaces the rules named by ``config.algo``; ``phases`` replaces
    ``make_phases(config, algorithm)`` (the profiler runs the same loop over a learner with
    one phase replaced).
    """
    phases = make_phases(config, algorithm) if phases is None else phases
    return _train_from(config, phases, num_episodes, callback)


def make_train(
    config: MARLConfig, callback: Callable[..., Any] | None = None,
    algorithm: rules.Algorithm | None = None,
) -> Callable[[jax.Array], tuple[TrainState, Metrics]]:
    """``train(key) -> (state, metrics)``: a whole run from scratch (pure, jittable, vmappable
    over seeds). Metrics as in :func:`make_train_from`; ``algorithm`` replaces the rules
    named by ``config.algo``."""
    phases = make_phases(config, algorithm)
    train_from = _train_from(config, phases, None, callback)

    def train(key: jax.Array) -> tuple[TrainState, Metrics]:
        return train_from(phases.rollout.init(key))

    return train


def make_init(config: MARLConfig, algorithm: rules.Algorithm | None = None
              ) -> Callable[[jax.Array], TrainState]:
    """``init(key) -> TrainState``: networks, optimisers, empty buffers, reset envs."""
    return make_phases(config, algorithm).rollout.init


def random_policy_return(config: MARLConfig, key: jax.Array, num_episodes: int,
                         one_hot: bool = False) -> jax.Array:
    """Mean episode return per team ``[num_teams]`` of a uniform-random policy.

    The policy is the Gumbel-softmax of all-zero logits (the untrained policy's action
    distribution over the simplex); with ``one_hot`` it is a uniformly random one-hot action
    instead. Averaged over ``num_episodes`` episodes of each of the ``num_envs`` envs.
    """
    num_episodes = check_int("num_episodes", num_episodes, lo=1)
    teams = make_env(config)[0].teams
    rollout = make_phases(config).rollout

    def step(env_state, k):
        k_act, k_env = jax.random.split(k)
        acts = []
        for ti, t in enumerate(teams):
            shape = (config.num_envs, t.num_agents, t.action_dim)
            kk = jax.random.fold_in(k_act, ti)
            if one_hot:
                acts.append(jax.nn.one_hot(jax.random.randint(kk, shape[:-1], 0, shape[-1]),
                                           shape[-1]))
            else:
                acts.append(gumbel_softmax(kk, jnp.zeros(shape), config.temperature))
        _, env_state, rewards, _ = rollout.env_step(k_env, env_state, tuple(acts))
        return env_state, jnp.stack([r.mean() for r in rewards])

    def episode(_, k):
        k0, k1 = jax.random.split(k)
        _, env_state = rollout.reset(k0)
        _, rewards = jax.lax.scan(step, env_state, jax.random.split(k1, config.episode_length))
        return None, rewards.sum(axis=0)

    def run(key):
        _, returns = jax.lax.scan(episode, None, jax.random.split(key, num_episodes))
        return returns.mean(axis=0)

    return jax.jit(run)(key)
