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

import dataclasses
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.custom_batching import custom_vmap

from jaxrl_pim import replay
from jaxrl_pim.checks import check_int
from jaxrl_pim.envs import mpe
from jaxrl_pim.marl import rules, schedule
from jaxrl_pim.marl.config import MARLConfig
from jaxrl_pim.marl.learner import Learner, TeamBatch, TeamParams, make_learner
from jaxrl_pim.marl.networks import gumbel_softmax, make_networks
from jaxrl_pim.marl.rollout import Rollout, TrainState, make_rollout

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
    "make_schedule",
    "make_train",
    "make_train_from",
    "piece_program",
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


def make_schedule(config: MARLConfig, num_episodes: int | None = None, start_episode: int = 0,
                  algorithm: rules.Algorithm | None = None) -> tuple[schedule.Block, ...]:
    """The static plan (:func:`jaxrl_pim.marl.schedule.make_plan`) of ``num_episodes``
    episodes (default ``config.num_episodes``) after ``start_episode``; ``algorithm`` (default
    the rules named by ``config.algo``) gives the policy delay."""
    algorithm = rules.make_algorithm(config) if algorithm is None else algorithm
    return schedule.make_plan(
        episode_length=config.episode_length, update_every=config.update_every,
        first_update_step=config.first_update_step,
        updates_per_round=config.updates_per_round, policy_delay=algorithm.policy_delay,
        start_episode=start_episode,
        num_episodes=config.num_episodes if num_episodes is None else num_episodes)


Carry = tuple[TrainState, jax.Array]  # the state, and the last env step's update key
Out = tuple[jax.Array, jax.Array]  # per-step rewards [steps, T], per-episode losses [eps, T, 2]


def _chunks(count: int) -> tuple[int, int]:
    """``count`` repetitions as ``(chunks, per_chunk)`` for about 100 progress reports: a
    divisor of ``count`` near 100 when one lies in 10 .. 400 (no remainder to compile), else
    100 chunks and a remainder."""
    if count <= 100:
        return count, 1
    divisors = [d for d in range(10, 401) if count % d == 0]
    if divisors:
        c = min(divisors, key=lambda d: abs(d - 100))
        return c, count // c
    return 100, count // 100


def _train_from(
    config: MARLConfig, phases: Phases, plan: tuple[schedule.Block, ...], start_episode: int,
    callback: Callable[..., Any] | None,
    make_plan_at: Callable[[int], tuple[schedule.Block, ...]] | None = None,
) -> Callable[[TrainState], tuple[TrainState, Metrics]]:
    cfg = config
    rollout, learner = phases
    L = cfg.episode_length
    n_eps = schedule.plan_counts(plan)["env_steps"] // L
    total = start_episode + n_eps

    def env_step(carry: Carry, _) -> tuple[Carry, jax.Array]:
        state = carry[0]
        key, k_act, k_env, k_upd = jax.random.split(state.key, 4)
        actions = rollout.select_actions(state.teams, state.obs, k_act)
        next_obs, env_state, rewards, terminated = rollout.env_step(k_env, state.env_state,
                                                                    actions)
        buffers, ss = rollout.buffer_add(state.buffers, state.sampler, state.obs, actions,
                                         rewards, next_obs, terminated)
        state = state._replace(buffers=buffers, sampler=ss, env_state=env_state, obs=next_obs,
                               key=key, step=state.step + 1)
        return (state, k_upd), jnp.stack([r.mean(axis=(0, 1)) for r in rewards])  # [T]

    def steps(carry: Carry, n: int) -> tuple[Carry, jax.Array]:
        if n == 1:
            carry, r = env_step(carry, None)
            return carry, r[None]
        return jax.lax.scan(env_step, carry, None, length=n)

    def reset(state: TrainState) -> TrainState:
        key, k_reset = jax.random.split(state.key)
        obs, env_state = rollout.reset(k_reset)
        return state._replace(episode=state.episode + 1, obs=obs, env_state=env_state, key=key)

    def step_and_reset(carry: Carry, _) -> tuple[Carry, Out]:
        # an env step that resets the worlds where its episode ends (a select, not a branch)
        carry, rewards = env_step(carry, None)
        state = carry[0]
        end = state.step % L == 0
        after = reset(state)
        state = jax.tree.map(lambda new, old: jnp.where(end, new, old), after, state)
        return (state, carry[1]), (rewards, state.losses)

    def run(carry: Carry, r: schedule.Run) -> tuple[Carry, Out]:
        if r.reset is None:  # per-step losses; the episodes' rows are taken at the end
            return jax.lax.scan(step_and_reset, carry, None, length=r.steps)

        def once(carry: Carry, _) -> tuple[Carry, Out]:
            carry, rewards = steps(carry, r.steps)
            state = carry[0]
            if not r.reset:
                return carry, (rewards, state.losses[None][:0])
            state = reset(state)
            return (state, carry[1]), (rewards, state.losses[None])

        if r.count == 1:
            return once(carry, None)
        return _repeat(once, carry, r.count)

    def updates_of(updates: tuple[int, ...]) -> Callable[[Any, Any], Any]:
        def run(operand: Any, extra: Any) -> Any:
            buffers, keys = extra
            if len(set(updates)) == 1:
                def one(c, k):
                    teams, ss, _ = c
                    return learner.update_round(teams, buffers, ss, updates[0], k), None

                return jax.lax.scan(one, operand, keys)[0]
            teams, ss, losses = operand  # MATD3, several updates a round: each decided here
            for j, g in enumerate(updates):
                teams, ss, losses = learner.update_round(teams, buffers, ss, g, keys[j])
            return teams, ss, losses

        return one_seed_at_a_time(run)

    def update_round(carry: Carry, updates: tuple[int, ...]) -> Carry:
        state, k_upd = carry
        keys = jax.random.split(k_upd, cfg.updates_per_round)
        teams, ss, losses = updates_of(updates)((state.teams, state.sampler, state.losses),
                                                (state.buffers, keys))
        # MATD3's critic-only rounds keep the last actor loss.
        losses = jnp.where(jnp.isnan(losses) & ~jnp.isnan(state.losses), state.losses, losses)
        state = state._replace(teams=teams, sampler=ss, losses=losses,
                               num_updates=state.num_updates + len(updates))
        return state, k_upd

    def slot(carry: Carry, s: schedule.Slot) -> tuple[Carry, Out]:
        outs = []
        for r in s.runs:
            carry, out = run(carry, r)
            outs.append(out)
        rewards, losses = (jnp.concatenate(x) for x in zip(*outs, strict=True))
        if s.updates:
            carry = update_round(carry, s.updates)
            if s.runs[-1].reset is not False:  # an episode ending here reports the round's
                losses = losses.at[-1].set(carry[0].losses)
        return carry, (rewards, losses)

    def group(carry: Carry, slots: tuple[schedule.Slot, ...]) -> tuple[Carry, Out]:
        outs = []
        for s in slots:
            carry, out = slot(carry, s)
            outs.append(out)
        return carry, tuple(jnp.concatenate(x) for x in zip(*outs, strict=True))

    def report(carry: Carry, rewards: jax.Array) -> None:
        # mean episode return of team 0 over the piece just run (whole episodes: exact)
        ret = rewards[:, 0].sum() * L / rewards.shape[0]
        jax.debug.callback(callback, carry[0].episode, total, {"return": ret})

    def block(carry: Carry, b: schedule.Block) -> tuple[Carry, Out]:
        body = lambda c, _: group(c, b.slots)  # noqa: E731
        if b.count == 1:
            carry, out = body(carry, None)
        elif callback is None:
            carry, out = _repeat(body, carry, b.count)
        else:  # chunks of the block, the progress reported between them
            chunks, per = _chunks(b.count)

            def chunk(c: Carry, _) -> tuple[Carry, Out]:
                c, out = _repeat(body, c, per) if per > 1 else body(c, None)
                report(c, out[0])
                return c, out

            carry, out = _repeat(chunk, carry, chunks)
            if b.count > chunks * per:
                carry, rest = _repeat(body, carry, b.count - chunks * per)
                out = tuple(jnp.concatenate(x) for x in zip(out, rest, strict=True))
            return carry, out
        if callback is not None:
            report(carry, out[0])
        return carry, out

    def starts_here(episode: Any) -> None:
        for e in np.unique(np.asarray(episode)):
            if e != start_episode and make_plan_at(int(e)) != plan:
                raise ValueError(
                    f"this train_from was built for states at episode {start_episode} (its "
                    f"static schedule starts there), got a state at episode {e}: pass "
                    f"start_episode=<the state's episode count> to make_train_from")

    def train_from(state: TrainState) -> tuple[TrainState, Metrics]:
        if not plan:
            empty = jnp.zeros((0, state.losses.shape[0]), jnp.float32)
            return state, {"episode_return": empty, "critic_loss": empty, "actor_loss": empty}
        if make_plan_at is not None:  # one host callback per call, before the loop
            jax.debug.callback(starts_here, state.episode)
        carry: Carry = (state, jnp.zeros_like(state.key))
        outs = []
        for b in plan:
            carry, out = block(carry, b)
            outs.append(out)
        rewards, losses = (jnp.concatenate(x) for x in zip(*outs, strict=True))
        if plan[0].slots[0].runs[0].reset is None:  # per-step losses: each episode's last
            losses = losses[L - 1::L]
        metrics = {
            "episode_return": rewards.reshape(n_eps, L, -1).sum(axis=1),
            "critic_loss": losses[:, :, 0],
            "actor_loss": losses[:, :, 1],
        }
        return carry[0], metrics

    return train_from


def one_seed_at_a_time(fn: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """``fn(operand, extra) -> operand`` (``extra`` read-only), and under ``jax.vmap`` (seeds)
    on XLA:CPU a ``lax.scan`` over the seeds: each seed's ``fn`` on its own slice of
    ``operand`` (the scan's input) into its row of a new stacked result (the scan's output),
    so the update round's temporaries (every agent's mini-batch, activations and gradients)
    are one seed's at a time, as the seed alone holds them, and each seed's slice of
    ``extra`` (the replay buffers) is taken inside the body, where XLA fuses it into the
    gather that reads it. Other backends run ``jax.vmap(fn)`` over all seeds. No conditional
    either way.

    (A ``fori_loop`` that slices the stacked operand and writes each seed back into it in
    place made XLA:CPU copy the networks and optimiser states several times a seed and round:
    at 24 agents about 0.3 GB a seed-round, and vmapped seeds slower per seed than seeds run
    one after another.)"""

    @custom_vmap
    def run(operand: Any, extra: Any) -> Any:
        return fn(operand, extra)

    @run.def_vmap
    def batched(axis_size: int, in_batched: Any, operand: Any, extra: Any) -> Any:
        operand, extra = (jax.tree.map(
            lambda x, b: x if b else jnp.broadcast_to(x, (axis_size, *jnp.shape(x))), t, bt)
            for t, bt in zip((operand, extra), in_batched, strict=True))

        def by_seed(o: Any, e: Any) -> Any:
            def seed(_, xs: tuple[jax.Array, Any]) -> tuple[None, Any]:
                i, own = xs
                return None, fn(own, jax.tree.map(lambda x: x[i], e))

            return jax.lax.scan(seed, None, (jnp.arange(axis_size), o))[1]

        out = jax.lax.platform_dependent(operand, extra, cpu=by_seed, default=jax.vmap(fn))
        return out, jax.tree.map(lambda _: True, out)

    return run


def _repeat(body: Callable[[Carry, Any], tuple[Carry, Out]], carry: Carry, count: int
            ) -> tuple[Carry, Out]:
    """``body`` scanned ``count`` times, its per-iteration outputs concatenated in order."""
    carry, (rewards, losses) = jax.lax.scan(body, carry, None, length=count)
    return carry, (rewards.reshape(-1, rewards.shape[-1]),
                   losses.reshape(-1, *losses.shape[2:]))


def make_train_from(
    config: MARLConfig,
    num_episodes: int | None = None,
    callback: Callable[..., Any] | None = None,
    algorithm: rules.Algorithm | None = None,
    phases: Phases | None = None,
    start_episode: int = 0,
) -> Callable[[TrainState], tuple[TrainState, Metrics]]:
    """``train_from(state) -> (state, metrics)``: continue a run at ``start_episode`` episodes
    for ``num_episodes`` more (default ``config.num_episodes``).

    The schedule is static (:func:`make_schedule`): the program is built for states at
    ``start_episode`` episodes (``state.episode``; another raises ``ValueError`` when called)
    and has no conditional in its loops. Metrics (one row per episode):
    ``episode_return [num_episodes, num_teams]`` (undiscounted return per agent, averaged over
    the team's agents and the envs), ``critic_loss`` / ``actor_loss``
    ``[num_episodes, num_teams]`` (latest update round so far, mean over the team's agents;
    NaN before the first update; MATD3 keeps the last actor loss through critic-only
    rounds). Running ``train_from`` for ``a`` episodes from ``s`` then for ``b`` from ``s + a``
    equals running it once for ``a + b`` from ``s`` (the RNG key and counters live in the
    state).

    ``callback(episode, total, metrics)`` (e.g. :class:`jaxrl_pim.progress.RichProgress`) is
    called through ``jax.debug.callback`` between chunks of the loop (about 100 per block of
    the plan), with ``metrics = {"return": team 0's mean episode return over the chunk}``.
    ``algorithm`` replaces the rules named by ``config.algo``; ``phases`` replaces
    ``make_phases(config, algorithm)`` (the profiler runs the same loop over a learner with
    one phase replaced).
    """
    n = config.num_episodes if num_episodes is None else check_int("num_episodes",
                                                                  num_episodes, lo=0)
    start = check_int("start_episode", start_episode, lo=0)
    plan = make_schedule(config, n, start, algorithm)
    phases = make_phases(config, algorithm) if phases is None else phases
    return _train_from(config, phases, plan, start, callback,
                       lambda e: make_schedule(config, n, e, algorithm))


def make_train(
    config: MARLConfig, callback: Callable[..., Any] | None = None,
    algorithm: rules.Algorithm | None = None,
) -> Callable[[jax.Array], tuple[TrainState, Metrics]]:
    """``train(key) -> (state, metrics)``: a whole run from scratch (pure, jittable, vmappable
    over seeds). Metrics as in :func:`make_train_from`; ``algorithm`` replaces the rules
    named by ``config.algo``."""
    phases = make_phases(config, algorithm)
    train_from = _train_from(config, phases, make_schedule(config, None, 0, algorithm), 0,
                             callback)  # init() starts at episode 0: nothing to check

    def train(key: jax.Array) -> tuple[TrainState, Metrics]:
        return train_from(phases.rollout.init(key))

    return train


# Compiled pieces of this process, by (config without num_episodes, static plan): a run resumed
# or extended in the same process compiles nothing again, and the pieces after the warm-up
# that start at a round boundary share one program per length. Only pieces without a callback
# or custom algorithm are kept (those carry objects the key cannot compare).
_PROGRAMS: dict[tuple[MARLConfig, tuple[schedule.Block, ...]], Any] = {}
_MAX_PROGRAMS = 8


def piece_program(
    config: MARLConfig, num_episodes: int, state: TrainState, *,
    start_episode: int | None = None, callback: Callable[..., Any] | None = None,
    algorithm: rules.Algorithm | None = None,
) -> Callable[[TrainState], tuple[TrainState, Metrics]]:
    """``jax.jit(make_train_from(config, num_episodes, start_episode=...),
    donate_argnums=0)`` compiled for ``state`` (which each call donates): the program for the
    next ``num_episodes`` of a run at ``state``. ``start_episode`` defaults to
    ``int(state.episode)`` (a read of the device, which waits for ``state``). Programs are
    kept per process by static plan, so a driver asks for the program of every piece and
    compiles only the pieces whose schedule is new. Call a program with the state it was got
    for: unlike :func:`make_train_from`'s, it does not check the state's episode (that check
    is a host callback, and a program with one is never written to jax's persistent
    compilation cache, so every command would compile its training program again).
    """
    start = int(state.episode) if start_episode is None else start_episode
    key = (dataclasses.replace(config, num_episodes=0),
           make_schedule(config, num_episodes, start, algorithm))
    cacheable = callback is None and algorithm is None
    if cacheable and key in _PROGRAMS:
        return _PROGRAMS[key]
    train_from = _train_from(config, make_phases(config, algorithm), key[1], start, callback)
    program = jax.jit(train_from, donate_argnums=0).lower(state).compile()
    if cacheable:
        if len(_PROGRAMS) >= _MAX_PROGRAMS:
            _PROGRAMS.pop(next(iter(_PROGRAMS)))
        _PROGRAMS[key] = program
    return program


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
    teams = config.teams
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
