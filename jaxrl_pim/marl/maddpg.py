"""MADDPG, MATD3 and MASAC on the JAX particle worlds, jitted end to end.

One module holds the three algorithms: they share the rollout, the replay and the update
skeleton and differ in the critic count, the target and the actor objective.

* ``maddpg`` (Lowe et al. 2017, original defaults): one centralised critic per agent on all
  agents' observations and action vectors; target ``y = r + gamma (1 - d) Q'(s', mu'(o'))``
  with the target actors' Gumbel-softmax actions; actor loss
  ``-mean Q(s, a_1..mu_i(o_i)..a_N) + 1e-3 mean(logits^2)``.
* ``matd3``: twin critics, ``y`` uses ``min(Q1', Q2')``; the actors and ALL targets are
  updated every ``policy_delay``-th (2nd) critic update; the actor loss uses ``Q1``. Target
  policy smoothing (on by default, ``target_noise=0`` turns it off): clipped Gaussian noise
  ``clip(N(0, 0.2), -0.5, 0.5)`` is added to the target actors' LOGITS before the
  Gumbel-softmax, so the smoothed target action stays on the probability simplex.
* ``masac``: twin critics, no target actors (next actions come from the current actors, as in
  SAC), entropy coefficient ``alpha = 0.05`` on the categorical policy ``pi_i = softmax(logits_i)``:
  ``y = r + gamma (1 - d) (min(Q1', Q2')(s', a') + alpha H(pi_i(.|o'_i)))`` and actor loss
  ``-mean min(Q1, Q2)(s, a_1..a~_i..a_N) - alpha mean H(pi_i(.|o_i)) + 1e-3 mean(logits^2)``
  where ``a~_i`` is the Gumbel-softmax sample and ``H`` the entropy of the categorical
  distribution (the exact expectation of ``-log pi`` over the 5 actions).

Training loop (everything inside one ``jit``): episodes are a ``lax.scan``; each episode
resets the ``num_envs`` vmapped environments and scans ``episode_length`` steps. Every step
selects actions (Gumbel-softmax, temperature 1), steps the envs, appends the ``num_envs``
transitions to every team's buffer in lock-step and, every ``update_every`` steps once
``learning_starts`` transitions are stored, runs ``updates_per_round`` update rounds. With
``num_envs = 1`` this is the original schedule (the original updates after steps 0, 100, ...;
here after steps 99, 199, ... -- an offset of one step).

Sampling modes: ``faithful`` -- every agent draws its own ``batch_size`` indices and gathers
all agents' data at them; target actions are recomputed for every drawing agent (O(N^2 B)
gathers and actor evaluations per round, as the original). ``fast`` -- one index set per
round shared by all agents; target actions are computed once (O(N B)).

Agents of one team are stacked (parameters with a leading agent axis) and updated together
with ``vmap``; all agents update in parallel from the same round-start targets (the original
updates them one after the other, so its later agents see earlier agents' fresh targets).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from jaxrl_pim import replay
from jaxrl_pim.checks import check_choice, check_float, check_int
from jaxrl_pim.envs import mpe
from jaxrl_pim.marl.networks import (
    MLP,
    categorical_entropy,
    clip_by_leaf_norm,
    gumbel_noise,
    gumbel_softmax,
    init_stacked,
    polyak,
    relaxed_sample,
)

ALGOS: tuple[str, ...] = ("maddpg", "matd3", "masac")
ENVS: tuple[str, ...] = ("spread", "tag")
SAMPLING_MODES: tuple[str, ...] = ("faithful", "fast")
SAMPLERS: tuple[str, ...] = ("uniform", "neighbor", "prioritized", "info_prioritized")
LAYOUTS: tuple[str, ...] = ("per_agent", "interleaved")


@dataclasses.dataclass(frozen=True)
class MARLConfig:
    """Configuration of a MADDPG / MATD3 / MASAC run (defaults: the original MADDPG).

    Attributes:
      algo: ``"maddpg"``, ``"matd3"`` or ``"masac"``.
      env: ``"spread"`` (cooperative navigation) or ``"tag"`` (predator-prey).
      num_agents: spread: N agents (and N landmarks); tag: a key of ``mpe.TAG_PRESETS``
        (e.g. 3 -> 3 predators, 1 prey, 2 obstacles).
      num_envs: environments stepped in parallel (vmapped); each step stores ``num_envs``
        transitions. 1 as the original.
      num_episodes: training episodes per env (60,000 in the original).
      episode_length: steps per episode (25).
      sampling_mode: ``"faithful"`` (own indices per agent) or ``"fast"`` (shared indices).
      sampler: ``"uniform"``, ``"neighbor"``, ``"prioritized"`` or ``"info_prioritized"``.
      layout: replay layout, ``"per_agent"`` or ``"interleaved"``.
      buffer_capacity: transitions (time steps) kept per team buffer (1e6).
      batch_size: transitions per agent per update (1,024).
      update_every: env steps (of the vectorised batch) between update rounds (100).
      updates_per_round: gradient rounds each time an update is due (1).
      learning_starts: stored transitions needed before the first update (25,600).
      lr: Adam learning rate of actors and critics (0.01).
      gamma: discount (0.95). tau: Polyak rate of the targets (0.01).
      grad_clip: per-variable gradient-norm clip (0.5).
      hidden: hidden layer widths of actors and critics ((64, 64)).
      logits_reg: weight of ``mean(logits^2)`` in the actor loss (1e-3).
      temperature: Gumbel-softmax temperature (1.0).
      policy_delay: MATD3 critic updates per actor/target update (2).
      target_noise, target_noise_clip: MATD3 target-policy smoothing on the target logits
        (0.2, 0.5); ``target_noise=0`` disables it.
      entropy_coef: MASAC entropy coefficient alpha (0.05).
      num_refs: neighbour sampling: reference indices R per batch
        (run length ``batch_size // num_refs``; 16 -> runs of 64 at batch 1,024).
      window: neighbour sampling takes a window around each reference instead of a run after it.
      priority_alpha, priority_beta: PER exponents (0.6, 0.4).
    """

    algo: str = "maddpg"
    env: str = "spread"
    num_agents: int = 3
    num_envs: int = 1
    num_episodes: int = 60_000
    episode_length: int = 25
    sampling_mode: str = "faithful"
    sampler: str = "uniform"
    layout: str = "per_agent"
    buffer_capacity: int = 1_000_000
    batch_size: int = 1024
    update_every: int = 100
    updates_per_round: int = 1
    learning_starts: int = 25_600
    lr: float = 0.01
    gamma: float = 0.95
    tau: float = 0.01
    grad_clip: float = 0.5
    hidden: tuple[int, ...] = (64, 64)
    logits_reg: float = 1e-3
    temperature: float = 1.0
    policy_delay: int = 2
    target_noise: float = 0.2
    target_noise_clip: float = 0.5
    entropy_coef: float = 0.05
    num_refs: int = 16
    window: bool = False
    priority_alpha: float = 0.6
    priority_beta: float = 0.4

    def __post_init__(self) -> None:
        check_choice("algo", self.algo, ALGOS)
        check_choice("env", self.env, ENVS)
        if self.env == "tag":
            check_choice("num_agents (tag preset)", self.num_agents, sorted(mpe.TAG_PRESETS))
        else:
            check_int("num_agents", self.num_agents, lo=1, hi=256)
        check_int("num_envs", self.num_envs, lo=1, hi=65_536)
        check_int("num_episodes", self.num_episodes, lo=0)
        check_int("episode_length", self.episode_length, lo=1, hi=100_000)
        check_choice("sampling_mode", self.sampling_mode, SAMPLING_MODES)
        check_choice("sampler", self.sampler, SAMPLERS)
        check_choice("layout", self.layout, LAYOUTS)
        check_int("buffer_capacity", self.buffer_capacity, lo=1, hi=2**31 - 1)
        check_int("batch_size", self.batch_size, lo=1, hi=self.buffer_capacity)
        check_int("update_every", self.update_every, lo=1)
        check_int("updates_per_round", self.updates_per_round, lo=1)
        check_int("learning_starts", self.learning_starts, lo=self.batch_size,
                  hi=self.buffer_capacity)
        if self.num_envs > self.buffer_capacity:
            raise ValueError(
                f"num_envs ({self.num_envs}) must be <= buffer_capacity ({self.buffer_capacity})"
            )
        check_float("lr", self.lr, 0.0, lo_open=True)
        check_float("gamma", self.gamma, 0.0, 1.0)
        check_float("tau", self.tau, 0.0, 1.0, lo_open=True)
        check_float("grad_clip", self.grad_clip, 0.0, lo_open=True)
        if not isinstance(self.hidden, tuple) or not self.hidden:
            raise ValueError(f"hidden must be a non-empty tuple of widths, got {self.hidden!r}")
        for w in self.hidden:
            check_int("hidden width", w, lo=1, hi=65_536)
        check_float("logits_reg", self.logits_reg, 0.0)
        check_float("temperature", self.temperature, 0.0, lo_open=True)
        check_int("policy_delay", self.policy_delay, lo=1)
        check_float("target_noise", self.target_noise, 0.0)
        check_float("target_noise_clip", self.target_noise_clip, 0.0)
        check_float("entropy_coef", self.entropy_coef, 0.0)
        if self.sampler == "neighbor":
            check_int("num_refs", self.num_refs, lo=1, hi=self.batch_size)
            if self.batch_size % self.num_refs:
                raise ValueError(
                    f"batch_size ({self.batch_size}) must be divisible by num_refs "
                    f"({self.num_refs}) for {self.sampler} sampling"
                )
        check_float("priority_alpha", self.priority_alpha, 0.0)
        check_float("priority_beta", self.priority_beta, 0.0, 1.0)

    @property
    def num_critics(self) -> int:
        """1 for MADDPG, 2 (twin critics) for MATD3 and MASAC."""
        return 1 if self.algo == "maddpg" else 2

    @property
    def steps_per_episode(self) -> int:
        """Env steps per episode (of the vectorised batch)."""
        return self.episode_length


class TeamParams(NamedTuple):
    """Stacked parameters of one team; every leaf has a leading agent axis ``[n]``.

    Critic leaves carry a second axis ``[n, C]`` (C = 1 or 2 critics).
    """

    actor: Any
    critic: Any
    target_actor: Any
    target_critic: Any
    actor_opt: Any
    critic_opt: Any


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


class TeamBatch(NamedTuple):
    """One team's mini-batch: ``obs [n, B, O]``, ``action [n, B, A]``, ``reward [n, B]``,
    ``next_obs [n, B, O]``, ``done [n, B]`` (faithful mode adds a leading drawer axis)."""

    obs: jax.Array
    action: jax.Array
    reward: jax.Array
    next_obs: jax.Array
    done: jax.Array


def make_env(config: MARLConfig):
    """The configured particle world: ``(env, params)`` with ``params.max_steps`` set."""
    if config.env == "spread":
        env, params = mpe.make_spread(config.num_agents)
    else:
        env, params = mpe.make_tag(*mpe.TAG_PRESETS[config.num_agents])
    params = params.replace(max_steps=config.episode_length)
    return env, params


def make_sampler(config: MARLConfig) -> replay.Sampler:
    """The configured replay sampler component."""
    run = config.batch_size // config.num_refs
    if config.sampler == "uniform":
        return replay.uniform()
    if config.sampler == "neighbor":
        return replay.neighbor(config.num_refs, run, window=config.window)
    if config.sampler == "prioritized":
        return replay.prioritized(config.buffer_capacity, config.priority_alpha,
                                  config.priority_beta)
    return replay.info_prioritized(config.buffer_capacity, config.priority_alpha,
                                   config.priority_beta)


class System(NamedTuple):
    """The pieces of a run, each a pure function usable on its own (the profiler jits them
    phase by phase). Built by :func:`make_system`; ``train_from`` composes them."""

    config: MARLConfig
    env: Any
    env_params: Any
    teams: tuple[Any, ...]
    buffers: tuple[replay.Buffer, ...]
    sampler: replay.Sampler
    init: Callable[[jax.Array], TrainState]
    reset: Callable[[jax.Array], Any]
    select_actions: Callable[..., tuple[jax.Array, ...]]
    env_step: Callable[..., Any]
    buffer_add: Callable[..., Any]
    sample: Callable[..., Any]
    target_q: Callable[..., tuple[jax.Array, ...]]
    critic_update: Callable[..., Any]
    actor_update: Callable[..., Any]
    target_update: Callable[..., tuple[TeamParams, ...]]
    update_round: Callable[..., Any]


def make_system(config: MARLConfig) -> System:
    """Build the environment, buffers, sampler, networks and the phase functions."""
    env, env_params = make_env(config)
    teams = tuple(env.teams)
    sizes = [t.num_agents for t in teams]
    offsets = [sum(sizes[:i]) for i in range(len(sizes))]
    n_total = sum(sizes)
    act_dims = {t.action_dim for t in teams}
    joint_dim = sum(t.num_agents * (t.obs_dim + t.action_dim) for t in teams)
    cfg = config
    C = cfg.num_critics
    faithful = cfg.sampling_mode == "faithful"
    masac = cfg.algo == "masac"
    buffers = tuple(
        replay.make_buffer(cfg.layout, cfg.buffer_capacity, t.num_agents, t.obs_dim,
                           t.action_dim)
        for t in teams
    )
    sampler = make_sampler(cfg)
    actor_nets = tuple(MLP(cfg.hidden, t.action_dim) for t in teams)
    critic_net = MLP(cfg.hidden, 1)
    tx = optax.chain(clip_by_leaf_norm(cfg.grad_clip), optax.adam(cfg.lr))
    del act_dims

    # ----------------------------------------------------------------- initial state
    def init(key: jax.Array) -> TrainState:
        k_env, k_net, k_run = jax.random.split(key, 3)
        team_params = []
        for ti, t in enumerate(teams):
            ka, kc = jax.random.split(jax.random.fold_in(k_net, ti))
            actor = init_stacked(actor_nets[ti], ka, t.num_agents, t.obs_dim)
            critic = jax.tree.map(
                lambda x, n=t.num_agents: x.reshape(n, C, *x.shape[1:]),
                init_stacked(critic_net, kc, t.num_agents * C, joint_dim),
            )
            team_params.append(
                TeamParams(
                    actor=actor,
                    critic=critic,
                    target_actor=actor,
                    target_critic=critic,
                    actor_opt=jax.vmap(tx.init)(actor),
                    critic_opt=jax.vmap(jax.vmap(tx.init))(critic),
                )
            )
        obs, env_state = reset(k_env)
        return TrainState(
            teams=tuple(team_params),
            buffers=tuple(b.init() for b in buffers),
            sampler=sampler.init(cfg.buffer_capacity),
            env_state=env_state,
            obs=obs,
            key=k_run,
            step=jnp.zeros((), jnp.int32),
            episode=jnp.zeros((), jnp.int32),
            num_updates=jnp.zeros((), jnp.int32),
            losses=jnp.full((len(teams), 2), jnp.nan, jnp.float32),
        )

    def reset(key):
        """Reset the ``E`` envs: ``(obs, env_state)``, ``obs[t] [E, n_t, O_t]``."""
        keys = jax.random.split(key, cfg.num_envs)
        return jax.vmap(env.reset, in_axes=(0, None))(keys, env_params)

    # ----------------------------------------------------------------- rollout phases
    def select_actions(team_params, obs, key):
        """Gumbel-softmax actions of every agent: ``obs[t] [E, n_t, O_t]`` -> ``[E, n_t, A]``."""
        out = []
        for ti in range(len(teams)):
            logits = jax.vmap(actor_nets[ti].apply, in_axes=(0, 1), out_axes=1)(
                team_params[ti].actor, obs[ti]
            )
            out.append(gumbel_softmax(jax.random.fold_in(key, ti), logits, cfg.temperature))
        return tuple(out)

    def env_step(key, env_state, actions):
        """Step the ``E`` envs without auto-reset (episodes are reset by the trainer, so the
        stored ``next_obs`` is the true next observation). Returns ``(obs, env_state,
        rewards, terminated)``; ``obs[t] [E, n_t, O_t]``, ``rewards[t] [E, n_t]``."""
        keys = jax.random.split(key, cfg.num_envs)
        obs, env_state, rewards, terminated, _ = jax.vmap(
            env.step_env, in_axes=(0, 0, 0, None)
        )(keys, env_state, actions, env_params)
        return obs, env_state, rewards, terminated

    def buffer_add(buffer_states, sampler_state, obs, actions, rewards, next_obs, terminated):
        """Append the ``E`` transitions (time order = env order) to every team buffer."""
        pos = buffer_states[0].insert_pos
        new_states = []
        for ti, b in enumerate(buffers):
            n = teams[ti].num_agents
            done = jnp.broadcast_to(
                jnp.asarray(terminated, jnp.float32).reshape(cfg.num_envs, 1), (cfg.num_envs, n)
            )
            tr = replay.Transition(
                obs=obs[ti], action=actions[ti], reward=rewards[ti], next_obs=next_obs[ti],
                done=done,
            )
            if cfg.num_envs == 1:
                tr = jax.tree.map(lambda x: x[0], tr)
            new_states.append(b.add(buffer_states[ti], tr))
        if cfg.num_envs <= 64:
            for e in range(cfg.num_envs):
                sampler_state = sampler.on_add(sampler_state, (pos + e) % cfg.buffer_capacity)
        else:
            def body(ss, e):
                return sampler.on_add(ss, (pos + e) % cfg.buffer_capacity), None

            sampler_state, _ = jax.lax.scan(body, sampler_state, jnp.arange(cfg.num_envs))
        return tuple(new_states), sampler_state

    # ----------------------------------------------------------------- update phases
    def _gather(buffer_states, idx):
        return tuple(
            TeamBatch(*b.gather(s, idx)) for b, s in zip(buffers, buffer_states, strict=True)
        )

    def sample(buffer_states, sampler_state, key):
        """Draw a mini-batch. Returns ``(indices, weights, batch, sampler_state)``.

        fast: ``indices [B]``, ``weights [B]``, ``batch[k]`` fields ``[n_k, B, ...]``.
        faithful: ``indices [N, B]``, ``weights [N, B]``, fields ``[N, n_k, B, ...]`` (one
        set per drawing agent, all teams' agents in team order).
        """
        size = buffer_states[0].size
        pos = buffer_states[0].insert_pos
        if not faithful:
            idx, w, sampler_state = sampler.sample(sampler_state, key, size, pos,
                                                   cfg.batch_size)
            return idx, w, _gather(buffer_states, idx), sampler_state

        def draw(ss, k):
            idx, w, ss = sampler.sample(ss, k, size, pos, cfg.batch_size)
            return ss, (idx, w)

        sampler_state, (idx, w) = jax.lax.scan(draw, sampler_state,
                                               jax.random.split(key, n_total))
        batch = jax.vmap(lambda i: _gather(buffer_states, i))(idx)
        return idx, w, batch, sampler_state

    def _joint(obs, act):
        """``obs[k] [n_k, B, O_k]``, ``act[k] [n_k, B, A]`` -> joint critic input ``[B, D]``."""
        parts = [jnp.swapaxes(x, 0, 1).reshape(x.shape[1], -1) for x in (*obs, *act)]
        return jnp.concatenate(parts, axis=-1)

    def _critic_apply(critic_params, x):
        """``critic_params`` leaves ``[C, ...]``, ``x [B, D]`` -> ``[C, B]``."""
        return jax.vmap(lambda p: critic_net.apply(p, x)[..., 0])(critic_params)

    def _policy_noise(key, next_obs):
        """Gumbel (and MATD3 smoothing) noise for the next actions, one draw per team:
        ``next_obs[k] [..., n_k, B, O]`` -> ``(gumbel [..., n_k, B, A], smooth or None)``."""
        out = []
        for k in range(len(teams)):
            shape = (*next_obs[k].shape[:-1], teams[k].action_dim)
            kk = jax.random.fold_in(key, k)
            smooth = None
            if cfg.algo == "matd3" and cfg.target_noise > 0:
                z = jax.random.normal(jax.random.fold_in(kk, 1), (math.prod(shape),))
                smooth = jnp.clip(cfg.target_noise * z.reshape(shape), -cfg.target_noise_clip,
                                  cfg.target_noise_clip)
            out.append((gumbel_noise(kk, shape), smooth))
        return tuple(out)

    def _next_policy(team_params, next_obs, noise):
        """Next actions ``[n_k, B, A]`` and policy entropies ``[n_k, B]`` for every team."""
        acts, ents = [], []
        for k in range(len(teams)):
            params = team_params[k].actor if masac else team_params[k].target_actor
            logits = jax.vmap(actor_nets[k].apply)(params, next_obs[k])
            g, smooth = noise[k]
            if smooth is not None:
                logits = logits + smooth
            acts.append(relaxed_sample(logits, g, cfg.temperature))
            ents.append(categorical_entropy(logits) if masac else jnp.zeros(logits.shape[:-1]))
        return tuple(acts), tuple(ents)

    def _team_slice(batch, ti):
        """Faithful mode: the drawing agents of team ``ti`` (leading axis ``[n_ti, ...]``)."""
        lo, hi = offsets[ti], offsets[ti] + sizes[ti]
        return jax.tree.map(lambda x: x[lo:hi], batch)

    def _y(t_critic, next_x, r, d, ent):
        q = _critic_apply(t_critic, next_x).min(axis=0)
        if masac:
            q = q + cfg.entropy_coef * ent
        return r + cfg.gamma * (1.0 - d) * q

    def target_q(team_params, batch, key):
        """Critic targets ``y`` per team, ``[n_t, B]`` (fast) -- one per agent."""
        ys = []
        if not faithful:
            next_obs = tuple(b.next_obs for b in batch)
            next_act, next_ent = _next_policy(team_params, next_obs,
                                              _policy_noise(key, next_obs))
            next_x = _joint(next_obs, next_act)
            for ti in range(len(teams)):
                ys.append(jax.vmap(_y, in_axes=(0, None, 0, 0, 0))(
                    team_params[ti].target_critic, next_x, batch[ti].reward, batch[ti].done,
                    next_ent[ti]))
            return tuple(ys)
        for ti in range(len(teams)):
            mine = _team_slice(batch, ti)  # fields [n_ti, n_k, B, ...]

            def one(t_critic, j, own, noise, ti=ti):
                next_obs = tuple(b.next_obs for b in own)
                next_act, next_ent = _next_policy(team_params, next_obs, noise)
                next_x = _joint(next_obs, next_act)
                return _y(t_critic, next_x, own[ti].reward[j], own[ti].done[j],
                          next_ent[ti][j])

            noise = _policy_noise(jax.random.fold_in(key, ti), tuple(b.next_obs for b in mine))
            ys.append(jax.vmap(one)(team_params[ti].target_critic, jnp.arange(sizes[ti]),
                                    mine, noise))
        return tuple(ys)

    def _critic_step(critic, opt, x, y, w):
        def loss_fn(p):
            q = _critic_apply(p, x)  # [C, B]
            err = q - y[None]
            return jnp.sum(jnp.mean(w[None] * jnp.square(err), axis=1)), err[0]

        (loss, td), grads = jax.value_and_grad(loss_fn, has_aux=True)(critic)
        updates, opt = jax.vmap(tx.update)(grads, opt, critic)
        return optax.apply_updates(critic, updates), opt, loss, td

    def critic_update(team_params, batch, ys, weights):
        """One Adam step of every critic on ``mean(w (Q - y)^2)``.

        Returns ``(team_params, critic_loss [num_teams], td [num_teams] of [n_t, B])``.
        """
        new, losses, tds = [], [], []
        for ti in range(len(teams)):
            tp = team_params[ti]
            if faithful:
                mine = _team_slice(batch, ti)
                w = weights[offsets[ti]:offsets[ti] + sizes[ti]]
                x = jax.vmap(lambda own: _joint(tuple(b.obs for b in own),
                                                tuple(b.action for b in own)))(mine)
                critic, opt, loss, td = jax.vmap(_critic_step)(tp.critic, tp.critic_opt, x,
                                                               ys[ti], w)
            else:
                x = _joint(tuple(b.obs for b in batch), tuple(b.action for b in batch))
                critic, opt, loss, td = jax.vmap(_critic_step, in_axes=(0, 0, None, 0, None))(
                    tp.critic, tp.critic_opt, x, ys[ti], weights)
            new.append(tp._replace(critic=critic, critic_opt=opt))
            losses.append(jnp.mean(loss))
            tds.append(td)
        return tuple(new), jnp.stack(losses), tuple(tds)

    def _actor_step(ti, actor, opt, critic, j, obs, act, noise):
        critic = critic if masac else jax.tree.map(lambda c: c[:1], critic)

        def loss_fn(p):
            logits = actor_nets[ti].apply(p, obs[ti][j])  # [B, A]
            a = relaxed_sample(logits, noise, cfg.temperature)
            acts = list(act)
            acts[ti] = acts[ti].at[j].set(a)
            q = _critic_apply(critic, _joint(obs, tuple(acts))).min(axis=0)
            loss = -jnp.mean(q) + cfg.logits_reg * jnp.mean(jnp.square(logits))
            if masac:
                loss = loss - cfg.entropy_coef * jnp.mean(categorical_entropy(logits))
            return loss

        loss, grads = jax.value_and_grad(loss_fn)(actor)
        updates, opt = tx.update(grads, opt, actor)
        return optax.apply_updates(actor, updates), opt, loss

    def actor_update(team_params, batch, key):
        """One Adam step of every actor (others' actions from the batch).

        Returns ``(team_params, actor_loss [num_teams])``.
        """
        new, losses = [], []
        for ti in range(len(teams)):
            tp = team_params[ti]
            # Gumbel noise of every agent's policy sample, one draw: [n_t, B, A].
            b_own = batch[ti].obs.shape[-2]
            keys = gumbel_noise(jax.random.fold_in(key, ti),
                                (sizes[ti], b_own, teams[ti].action_dim))
            js = jnp.arange(sizes[ti])
            step = functools.partial(_actor_step, ti)
            if faithful:
                mine = _team_slice(batch, ti)
                def drawer(a, o, c, j, own, k, step=step):
                    return step(a, o, c, j, tuple(b.obs for b in own),
                                tuple(b.action for b in own), k)

                actor, opt, loss = jax.vmap(drawer)(tp.actor, tp.actor_opt, tp.critic, js,
                                                    mine, keys)
            else:
                obs = tuple(b.obs for b in batch)
                act = tuple(b.action for b in batch)
                actor, opt, loss = jax.vmap(step, in_axes=(0, 0, 0, 0, None, None, 0))(
                    tp.actor, tp.actor_opt, tp.critic, js, obs, act, keys)
            new.append(tp._replace(actor=actor, actor_opt=opt))
            losses.append(jnp.mean(loss))
        return tuple(new), jnp.stack(losses)

    def target_update(team_params):
        """Polyak-average every target network towards its online network."""
        out = []
        for tp in team_params:
            target_actor = tp.target_actor if masac else polyak(tp.target_actor, tp.actor,
                                                                 cfg.tau)
            out.append(tp._replace(target_actor=target_actor,
                                   target_critic=polyak(tp.target_critic, tp.critic, cfg.tau)))
        return tuple(out)

    def update_round(team_params, buffer_states, sampler_state, num_updates, key):
        """Sample, target-Q, critic, (delayed) actor and target updates for every agent.

        Returns ``(team_params, sampler_state, losses [num_teams, 2])``.
        """
        k_s, k_t, k_a = jax.random.split(key, 3)
        idx, w, batch, sampler_state = sample(buffer_states, sampler_state, k_s)
        ys = target_q(team_params, batch, k_t)
        team_params, closs, tds = critic_update(team_params, batch, ys, w)
        td_abs = [jnp.abs(td) for td in tds]  # [n_t, B] each
        if faithful:
            per_drawer = jnp.concatenate(td_abs, axis=0)  # [N, B]

            def upd(ss, xs):
                i, t = xs
                return sampler.update_priorities(ss, i, t), None

            sampler_state, _ = jax.lax.scan(upd, sampler_state, (idx, per_drawer))
        else:
            mean_td = jnp.concatenate(td_abs, axis=0).mean(axis=0)
            sampler_state = sampler.update_priorities(sampler_state, idx, mean_td)

        def actor_and_targets(tp):
            tp, aloss = actor_update(tp, batch, k_a)
            return target_update(tp), aloss

        if cfg.algo == "matd3" and cfg.policy_delay > 1:
            team_params, aloss = jax.lax.cond(
                num_updates % cfg.policy_delay == 0,
                actor_and_targets,
                lambda tp: (tp, jnp.full((len(teams),), jnp.nan, jnp.float32)),
                team_params,
            )
        else:
            team_params, aloss = actor_and_targets(team_params)
        return team_params, sampler_state, jnp.stack([closs, aloss], axis=1)

    return System(
        config=cfg, env=env, env_params=env_params, teams=teams, buffers=buffers,
        sampler=sampler, init=init, reset=reset, select_actions=select_actions, env_step=env_step,
        buffer_add=buffer_add, sample=sample, target_q=target_q, critic_update=critic_update,
        actor_update=actor_update, target_update=target_update, update_round=update_round,
    )


def make_train_from(
    config: MARLConfig,
    num_episodes: int | None = None,
    callback: Callable[..., Any] | None = None,
) -> Callable[[TrainState], tuple[TrainState, dict[str, jax.Array]]]:
    """``train_from(state) -> (state, metrics)``: continue a run for ``num_episodes`` more.

    ``num_episodes`` defaults to ``config.num_episodes``. Metrics (one row per episode):
    ``episode_return [num_episodes, num_teams]`` (undiscounted return per agent, averaged over
    the team's agents and the envs), ``critic_loss`` / ``actor_loss``
    ``[num_episodes, num_teams]`` (latest update round so far, mean over the team's agents;
    NaN before the first update; MATD3 keeps the last actor loss through critic-only
    rounds). Running ``train_from`` for ``a`` then ``b`` episodes
    equals running it once for ``a + b`` (the RNG key and counters live in the state).

    ``callback(episode, total, metrics)`` (e.g. :class:`jaxrl_pim.progress.RichProgress`) is
    called through ``jax.debug.callback`` about 200 times per run when given.
    """
    sys = make_system(config)
    cfg = config
    n_eps = cfg.num_episodes if num_episodes is None else check_int("num_episodes",
                                                                   num_episodes, lo=0)
    num_teams = len(sys.teams)
    report_every = max(1, n_eps // 200)

    def env_step_fn(state: TrainState, _):
        key, k_act, k_env, k_upd = jax.random.split(state.key, 4)
        actions = sys.select_actions(state.teams, state.obs, k_act)
        next_obs, env_state, rewards, terminated = sys.env_step(k_env, state.env_state,
                                                                actions)
        buffers, ss = sys.buffer_add(state.buffers, state.sampler, state.obs, actions, rewards,
                                     next_obs, terminated)
        step = state.step + 1
        due = (step % cfg.update_every == 0) & (buffers[0].size >= cfg.learning_starts)

        def do_update(operand):
            teams, ss, nu, _ = operand

            def one(carry, k):
                teams, ss, nu, _ = carry
                teams, ss, losses = sys.update_round(teams, buffers, ss, nu, k)
                return (teams, ss, nu + 1, losses), None

            carry, _ = jax.lax.scan(one, operand, jax.random.split(k_upd,
                                                                   cfg.updates_per_round))
            return carry

        teams, ss, num_updates, losses = jax.lax.cond(
            due, do_update, lambda o: o, (state.teams, ss, state.num_updates, state.losses))
        losses = jnp.where(jnp.isnan(losses) & ~jnp.isnan(state.losses), state.losses, losses)
        state = state._replace(
            teams=teams, buffers=buffers, sampler=ss, env_state=env_state, obs=next_obs,
            key=key, step=step, num_updates=num_updates, losses=losses,
        )
        team_reward = jnp.stack([r.mean(axis=(0, 1)) for r in rewards])  # [num_teams]
        return state, team_reward

    def train_from(state: TrainState) -> tuple[TrainState, dict[str, jax.Array]]:
        total = state.episode + n_eps

        def episode_fn(state: TrainState, _):
            state, rewards = jax.lax.scan(env_step_fn, state, None, length=cfg.episode_length)
            key, k_reset = jax.random.split(state.key)
            obs, env_state = sys.reset(k_reset)
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
            empty = jnp.zeros((0, num_teams), jnp.float32)
            return state, {"episode_return": empty, "critic_loss": empty, "actor_loss": empty}
        return jax.lax.scan(episode_fn, state, None, length=n_eps)

    return train_from


def make_train(
    config: MARLConfig, callback: Callable[..., Any] | None = None
) -> Callable[[jax.Array], tuple[TrainState, dict[str, jax.Array]]]:
    """``train(key) -> (state, metrics)``: a whole run from scratch (pure, jittable, vmappable
    over seeds). Metrics as in :func:`make_train_from`."""
    init = make_system(config).init
    train_from = make_train_from(config, callback=callback)

    def train(key: jax.Array) -> tuple[TrainState, dict[str, jax.Array]]:
        return train_from(init(key))

    return train


def make_init(config: MARLConfig) -> Callable[[jax.Array], TrainState]:
    """``init(key) -> TrainState``: networks, optimisers, empty buffers, reset envs."""
    return make_system(config).init


def random_policy_return(config: MARLConfig, key: jax.Array, num_episodes: int,
                         one_hot: bool = False) -> jax.Array:
    """Mean episode return per team ``[num_teams]`` of a uniform-random policy.

    The policy is the Gumbel-softmax of all-zero logits (the untrained policy's action
    distribution over the simplex); with ``one_hot`` it is a uniformly random one-hot action
    instead. Averaged over ``num_episodes`` episodes of each of the ``num_envs`` envs.
    """
    sys = make_system(config)
    num_episodes = check_int("num_episodes", num_episodes, lo=1)

    def step(env_state, k):
        k_act, k_env = jax.random.split(k)
        acts = []
        for ti, t in enumerate(sys.teams):
            shape = (config.num_envs, t.num_agents, t.action_dim)
            kk = jax.random.fold_in(k_act, ti)
            if one_hot:
                acts.append(jax.nn.one_hot(jax.random.randint(kk, shape[:-1], 0, shape[-1]),
                                           shape[-1]))
            else:
                acts.append(gumbel_softmax(kk, jnp.zeros(shape), config.temperature))
        _, env_state, rewards, _ = sys.env_step(k_env, env_state, tuple(acts))
        return env_state, jnp.stack([r.mean() for r in rewards])

    def episode(_, k):
        k0, k1 = jax.random.split(k)
        _, env_state = sys.reset(k0)
        _, rewards = jax.lax.scan(step, env_state, jax.random.split(k1, config.episode_length))
        return None, rewards.sum(axis=0)

    def run(key):
        _, returns = jax.lax.scan(episode, None, jax.random.split(key, num_episodes))
        return returns.mean(axis=0)

    return jax.jit(run)(key)
