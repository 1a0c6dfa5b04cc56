"""The update round shared by MADDPG, MATD3 and MASAC: sample, targets, critics, actors, targets.

:func:`make_learner` returns a :class:`Learner`, a NamedTuple of the round's phases, each a
pure jittable function (the profiler times them one by one; :attr:`Learner.update_round`
composes them). The algorithm enters only through its :class:`~jaxrl_pim.marl.rules.Algorithm`
(the target rule, the actor loss, the critic count, which actors act at the next step,
smoothing, policy delay); the sampling mode decides how the mini-batch is drawn:

* ``fast``: one index set per round shared by all agents; batch fields ``[B, n_k, ...]`` per
  team ``k``; target actions computed once (O(N B) actor evaluations).
* ``faithful`` (the original MADDPG): every agent (the "drawer") draws its own ``B`` indices
  and gets all agents' data at them; fields ``[N, B, n_k, ...]`` (drawers of all teams in
  team order). The whole batch is one gather per field, and each drawer's target actions are
  computed from its own gathered rows (O(N^2 B) actor evaluations, as the original).

Batches are time-major (``buffer.gather(..., time_major=True)``): a row's agents are
adjacent, as the interleaved buffer stores them, so the gather copies whole rows and the
centralised critic's input ``[B, D]`` is a reshape, with no transpose of the batch
(``benchmarks/marl_sampling.py`` times the gather in both orders).

Agents of one team are stacked (parameter leaves ``[n_t, ...]``, critics ``[n_t, C, ...]``)
and updated together with ``vmap``, all from the same round-start targets (the original
updates them one after another, so its later agents see earlier agents' fresh targets).

Structure, in the style of rlax: every target, loss and step is a module-level pure function
of the static settings it needs (a :class:`Settings`, the :class:`~jaxrl_pim.marl.networks.
Networks`, an :class:`AlgoRules`; Python values, never traced) followed by arrays.
:func:`algo_rules` picks the per-algorithm pieces once (target actors or current actors,
smoothing noise or none, which critics the actor reads, which targets move);
:data:`SAMPLING_MODES` holds the ``fast`` and ``faithful`` variants of the sample, target,
critic and actor functions; :func:`make_learner` binds them with :func:`functools.partial`.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from jaxrl_pim import replay
from jaxrl_pim.envs.mpe import TeamSpec
from jaxrl_pim.marl import rules
from jaxrl_pim.marl.networks import Networks, gumbel_noise, relaxed_sample

#: A parameter (or optimiser-state) pytree.
Params = Any
#: ``(gumbel [..., A], normal [..., A] or None)``: one team's next-step policy noise.
TeamNoise = tuple[jax.Array, jax.Array | None]


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


class TeamBatch(NamedTuple):
    """One team's mini-batch, time-major: ``obs [B, n, O]``, ``action [B, n, A]``, ``reward
    [B, n]``, ``next_obs [B, n, O]``, ``done [B, n]`` (faithful mode adds a leading drawer
    axis)."""

    obs: jax.Array
    action: jax.Array
    reward: jax.Array
    next_obs: jax.Array
    done: jax.Array


class Learner(NamedTuple):
    """The phases of one update round (pure functions over team params, batches and keys).

    * ``sample(buffer_states, sampler_state, key) -> (indices, weights, batch, sampler_state)``
      (fast: ``indices``/``weights`` ``[B]``; faithful: ``[N, B]``).
    * ``target_q(team_params, batch, key) -> ys``: critic targets ``[n_t, B]`` per team.
    * ``critic_update(team_params, batch, ys, weights) -> (team_params, critic_loss
      [num_teams], td [n_t, B] per team)``.
    * ``actor_update(team_params, batch, key) -> (team_params, actor_loss [num_teams])``.
    * ``target_update(team_params) -> team_params``: Polyak step of every target.
    * ``update_round(team_params, buffer_states, sampler_state, num_updates, key) ->
      (team_params, sampler_state, losses [num_teams, 2])``: the phases in order, priorities
      updated with the TD errors, actors and targets every ``policy_delay``-th round.
    """

    sample: Callable[..., Any]
    target_q: Callable[..., tuple[jax.Array, ...]]
    critic_update: Callable[..., Any]
    actor_update: Callable[..., Any]
    target_update: Callable[..., tuple[TeamParams, ...]]
    update_round: Callable[..., Any]


Teams = tuple[TeamParams, ...]
Batch = tuple[TeamBatch, ...]


@dataclasses.dataclass(frozen=True)
class Settings:
    """The static (Python-valued) settings of one learner, fixed when it is built.

    ``sizes``: agents per team ``n_t``; ``action_dims``: action-vector length ``A_t`` per
    team; ``batch_size``: ``B``, transitions per draw; ``gamma``: discount per env step;
    ``tau``: Polyak rate of the targets (fraction of the online weights per update);
    ``temperature``: Gumbel-softmax temperature (1.0: none applied).
    """

    sizes: tuple[int, ...]
    action_dims: tuple[int, ...]
    batch_size: int
    gamma: float
    tau: float
    temperature: float

    @property
    def num_agents(self) -> int:
        """``N``, agents of all teams (the drawers of faithful mode)."""
        return sum(self.sizes)

    def drawers(self, ti: int) -> tuple[int, int]:
        """``(lo, hi)``: team ``ti``'s drawers among all ``N`` (faithful mode)."""
        lo = sum(self.sizes[:ti])
        return lo, lo + self.sizes[ti]


@dataclasses.dataclass(frozen=True)
class AlgoRules:
    """The per-algorithm pieces of the round, chosen once by :func:`algo_rules`.

    ``target``: ``(r_t, discount_t, q_t [C], logits_t [A]) -> y_t``, one transition;
    ``actor_loss``: ``(q [B], logits [B, A]) -> loss``; ``actor_critics``: critic params
    ``[C, ...]`` -> the critics the actor reads; ``next_actor``: a team's params -> the actor
    params ``[n, ...]`` acting at the next step; ``team_noise``: ``(key, shape) ->``
    :data:`TeamNoise`; ``smooth``: ``(logits, normal or None) -> logits``;
    ``update_targets``: ``(team params, tau) -> team params`` (one Polyak step).
    """

    target: Callable[..., jax.Array]
    actor_loss: Callable[[jax.Array, jax.Array], jax.Array]
    actor_critics: Callable[[Params], Params]
    next_actor: Callable[[TeamParams], Params]
    team_noise: Callable[[jax.Array, tuple[int, ...]], TeamNoise]
    smooth: Callable[[jax.Array, jax.Array | None], jax.Array]
    update_targets: Callable[[TeamParams, float], TeamParams]


# --------------------------------------------------------------------- per-algorithm pieces


def target_actor_params(tp: TeamParams) -> Params:
    """DDPG style (MADDPG, MATD3): the target actors act at the next step."""
    return tp.target_actor


def current_actor_params(tp: TeamParams) -> Params:
    """SAC style (MASAC): the current actors act at the next step."""
    return tp.actor


def gumbel_team_noise(key: jax.Array, shape: tuple[int, ...]) -> TeamNoise:
    """Gumbel noise ``shape`` (``[..., B, n, A]``) and no smoothing noise."""
    return gumbel_noise(key, shape), None


def smoothed_team_noise(key: jax.Array, shape: tuple[int, ...]) -> TeamNoise:
    """Gumbel noise ``shape`` from ``key`` and standard-normal smoothing noise ``shape`` from
    ``fold_in(key, 1)`` (MATD3's target-policy smoothing)."""
    # Drawn flat and reshaped: XLA:CPU compiles rank-3 random draws slowly.
    z = jax.random.normal(jax.random.fold_in(key, 1), (math.prod(shape),))
    z = z.reshape(shape)
    return gumbel_noise(key, shape), z


def no_smoothing(logits: jax.Array, noise: jax.Array | None) -> jax.Array:
    """The next-step logits ``[..., A]`` unchanged (no target-policy smoothing)."""
    del noise
    return logits


def all_critics(critic: Params) -> Params:
    """The actor reads every critic (leaves ``[C, ...]``; MADDPG, MASAC)."""
    return critic


def first_critics(critic: Params, count: int) -> Params:
    """The actor reads the first ``count`` critics (leaves ``[C, ...] -> [count, ...]``)."""
    return jax.tree.map(lambda c: c[:count], critic)


def polyak_critic_targets(tp: TeamParams, tau: float) -> TeamParams:
    """Polyak step of the target critics only (the target actors never move: MASAC)."""
    return tp._replace(target_critic=rules.polyak(tp.target_critic, tp.critic, tau))


def polyak_all_targets(tp: TeamParams, tau: float) -> TeamParams:
    """Polyak step of the target actors, then of the target critics (MADDPG, MATD3)."""
    target_actor = rules.polyak(tp.target_actor, tp.actor, tau)
    return tp._replace(target_actor=target_actor,
                       target_critic=rules.polyak(tp.target_critic, tp.critic, tau))


def algo_rules(algorithm: rules.Algorithm) -> AlgoRules:
    """The :class:`AlgoRules` of ``algorithm``: each static choice made here, once."""
    algo = algorithm
    actor_critics: Callable[[Params], Params] = all_critics
    if algo.actor_critics < algo.num_critics:
        actor_critics = functools.partial(first_critics, count=algo.actor_critics)
    return AlgoRules(
        target=algo.target,
        actor_loss=algo.actor_loss,
        actor_critics=actor_critics,
        next_actor=target_actor_params if algo.target_actors else current_actor_params,
        team_noise=gumbel_team_noise if algo.smoothing is None else smoothed_team_noise,
        smooth=no_smoothing if algo.smoothing is None else algo.smoothing,
        update_targets=polyak_all_targets if algo.target_actors else polyak_critic_targets,
    )


# --------------------------------------------------------------------- sampling


def gather(buffers: Sequence[replay.Buffer], buffer_states: Sequence[Any],
           idx: jax.Array) -> Batch:
    """Every team's rows at ``idx [B]``, time-major: fields ``[B, n_t, ...]``."""
    return tuple(
        TeamBatch(*b.gather(s, idx, time_major=True))
        for b, s in zip(buffers, buffer_states, strict=True)
    )


def sample_shared(settings: Settings, sampler: replay.Sampler,
                  buffers: Sequence[replay.Buffer], buffer_states: Sequence[Any],
                  sampler_state: Any, key: jax.Array) -> tuple[Any, ...]:
    """Fast mode: one draw of ``B`` indices for all agents. Returns ``(idx [B], weights [B],
    batch (fields [B, n_t, ...]), sampler_state)``."""
    size = buffer_states[0].size
    pos = buffer_states[0].insert_pos
    idx, w, sampler_state = sampler.sample(sampler_state, key, size, pos, settings.batch_size)
    return idx, w, gather(buffers, buffer_states, idx), sampler_state


def draw_indices(sampler: replay.Sampler, size: jax.Array, pos: jax.Array, batch_size: int,
                 sampler_state: Any, key: jax.Array) -> tuple[Any, tuple[jax.Array, ...]]:
    """One drawer's ``B`` indices and weights (a ``lax.scan`` body over drawer keys)."""
    idx, w, sampler_state = sampler.sample(sampler_state, key, size, pos, batch_size)
    return sampler_state, (idx, w)


def sample_per_drawer(settings: Settings, sampler: replay.Sampler,
                      buffers: Sequence[replay.Buffer], buffer_states: Sequence[Any],
                      sampler_state: Any, key: jax.Array) -> tuple[Any, ...]:
    """Faithful mode: each of the ``N`` drawers draws its own ``B`` indices (one key each,
    drawer after drawer). Returns ``(idx [N, B], weights [N, B], batch (fields [N, B, n_t,
    ...]), sampler_state)``."""
    size = buffer_states[0].size
    pos = buffer_states[0].insert_pos
    draw = functools.partial(draw_indices, sampler, size, pos, settings.batch_size)
    sampler_state, (idx, w) = jax.lax.scan(draw, sampler_state,
                                           jax.random.split(key, settings.num_agents))
    batch = jax.vmap(functools.partial(gather, buffers, buffer_states))(idx)
    return idx, w, batch, sampler_state


def drawers_of(settings: Settings, batch: Batch, ti: int) -> Batch:
    """Faithful mode: the drawers of team ``ti`` (leading axis ``[n_ti, ...]``)."""
    lo, hi = settings.drawers(ti)
    return jax.tree.map(lambda x: x[lo:hi], batch)


# --------------------------------------------------------------------- shared pieces


def joint_input(obs: Sequence[jax.Array], act: Sequence[jax.Array]) -> jax.Array:
    """Centralised critic input ``[B, D]``: every agent's observation (teams in order, agents
    in order), then every agent's action; ``obs[k] [B, n_k, O_k]``, ``act[k] [B, n_k, A]``."""
    parts = [x.reshape(x.shape[0], -1) for x in (*obs, *act)]
    return jnp.concatenate(parts, axis=-1)


def batch_input(batch: Batch) -> jax.Array:
    """The critic input ``[B, D]`` at the stored observations and actions of ``batch``."""
    return joint_input(tuple(b.obs for b in batch), tuple(b.action for b in batch))


def critic_value(critic_net: Any, x: jax.Array, critic_params: Params) -> jax.Array:
    """One critic at ``x [B, D]``: Q-values ``[B]``."""
    return critic_net.apply(critic_params, x)[..., 0]


def critic_values(critic_net: Any, critic_params: Params, x: jax.Array) -> jax.Array:
    """``critic_params`` leaves ``[C, ...]``, ``x [B, D]`` -> Q-values ``[C, B]``."""
    return jax.vmap(functools.partial(critic_value, critic_net, x))(critic_params)


def policy_noise(team_noise: Callable[..., TeamNoise], action_dims: Sequence[int],
                 key: jax.Array, next_obs: Sequence[jax.Array]) -> tuple[TeamNoise, ...]:
    """Gumbel (and smoothing) noise for the next actions, one draw per team from
    ``fold_in(key, k)``: ``next_obs[k] [..., B, n_k, O]`` -> ``(gumbel [..., B, n_k, A],
    normal or None)``."""
    return tuple(
        team_noise(jax.random.fold_in(key, k), (*next_obs[k].shape[:-1], action_dims[k]))
        for k in range(len(action_dims))
    )


def next_policy(nets: Networks, algo: AlgoRules, temperature: float, team_params: Teams,
                next_obs: Sequence[jax.Array], noise: Sequence[TeamNoise]
                ) -> tuple[tuple[jax.Array, ...], tuple[jax.Array, ...]]:
    """Next actions ``[B, n_k, A]`` (Gumbel-softmax samples) and the logits ``[B, n_k, A]``
    they came from (smoothed where the algorithm smooths), for every team ``k``."""
    acts, all_logits = [], []
    for k, (actor, tp) in enumerate(zip(nets.actors, team_params, strict=True)):
        params = algo.next_actor(tp)
        logits = jax.vmap(actor.apply, in_axes=(0, 1), out_axes=1)(params, next_obs[k])
        g, z = noise[k]
        logits = algo.smooth(logits, z)
        acts.append(relaxed_sample(logits, g, temperature))
        all_logits.append(logits)
    return tuple(acts), tuple(all_logits)


def next_joint_input(settings: Settings, nets: Networks, algo: AlgoRules,
                     team_params: Teams, next_obs: Sequence[jax.Array],
                     noise: Sequence[TeamNoise]) -> tuple[jax.Array, tuple[jax.Array, ...]]:
    """The critic input ``[B, D]`` at the next observations and next actions, and the
    next-step logits ``[B, n_k, A]`` per team."""
    next_act, next_logits = next_policy(nets, algo, settings.temperature, team_params,
                                        next_obs, noise)
    return joint_input(next_obs, next_act), next_logits


def agent_targets(critic_net: Any, target: Callable[..., jax.Array], gamma: float,
                  t_critic: Params, next_x: jax.Array, r: jax.Array, d: jax.Array,
                  logits: jax.Array) -> jax.Array:
    """Targets ``[B]`` of one agent from its target critics (leaves ``[C, ...]``) at
    ``next_x [B, D]``; rewards ``r [B]``, done flags ``d [B]`` (0 or 1), next-step logits
    ``[B, A]``; discount ``gamma * (1 - d)``."""
    q = critic_values(critic_net, t_critic, next_x)  # [C, B]
    discount = gamma * (1.0 - d)
    return jax.vmap(target, in_axes=(0, 0, 1, 0))(r, discount, q, logits)


# --------------------------------------------------------------------- critic targets


def target_q_shared(settings: Settings, nets: Networks, algo: AlgoRules, team_params: Teams,
                    batch: Batch, key: jax.Array) -> tuple[jax.Array, ...]:
    """Fast mode: next actions once for all agents; targets ``[n_t, B]`` per team."""
    next_obs = tuple(b.next_obs for b in batch)
    noise = policy_noise(algo.team_noise, settings.action_dims, key, next_obs)
    next_x, next_logits = next_joint_input(settings, nets, algo, team_params, next_obs, noise)
    targets = jax.vmap(functools.partial(agent_targets, nets.critic, algo.target,
                                         settings.gamma), in_axes=(0, None, 1, 1, 1))
    return tuple(targets(tp.target_critic, next_x, b.reward, b.done, logits)
                 for tp, b, logits in zip(team_params, batch, next_logits, strict=True))


def drawer_targets(settings: Settings, nets: Networks, algo: AlgoRules, team_params: Teams,
                   ti: int, t_critic: Params, j: jax.Array, own: Batch,
                   noise: Sequence[TeamNoise]) -> jax.Array:
    """Faithful mode: targets ``[B]`` of agent ``j`` of team ``ti`` from its own rows
    ``own`` (fields ``[B, n_k, ...]``) and its own next-step noise."""
    next_obs = tuple(b.next_obs for b in own)
    next_x, next_logits = next_joint_input(settings, nets, algo, team_params, next_obs, noise)
    return agent_targets(nets.critic, algo.target, settings.gamma, t_critic, next_x,
                         own[ti].reward[:, j], own[ti].done[:, j], next_logits[ti][:, j])


def target_q_per_drawer(settings: Settings, nets: Networks, algo: AlgoRules,
                        team_params: Teams, batch: Batch, key: jax.Array
                        ) -> tuple[jax.Array, ...]:
    """Faithful mode: each drawer's targets from its own rows (next-step noise of team ``ti``
    from ``fold_in(key, ti)``); targets ``[n_t, B]`` per team."""
    ys = []
    for ti, size in enumerate(settings.sizes):
        mine = drawers_of(settings, batch, ti)  # fields [n_ti, B, n_k, ...]
        noise = policy_noise(algo.team_noise, settings.action_dims,
                             jax.random.fold_in(key, ti), tuple(b.next_obs for b in mine))
        drawer = functools.partial(drawer_targets, settings, nets, algo, team_params, ti)
        ys.append(jax.vmap(drawer)(team_params[ti].target_critic, jnp.arange(size), mine,
                                   noise))
    return tuple(ys)


# --------------------------------------------------------------------- critics


def critic_objective(critic_net: Any, critic_params: Params, x: jax.Array, y: jax.Array,
                     w: jax.Array) -> tuple[jax.Array, jax.Array]:
    """One agent's critic loss (:func:`rules.critic_loss`) at ``x [B, D]``, targets ``y
    [B]``, importance weights ``w [B]``; aux: the first critic's TD errors ``[B]``."""
    loss, err = rules.critic_loss(critic_values(critic_net, critic_params, x), y, w)
    return loss, err[0]


def critic_step(critic_net: Any, tx: optax.GradientTransformation, critic: Params,
                opt: Params, x: jax.Array, y: jax.Array, w: jax.Array
                ) -> tuple[Params, Params, jax.Array, jax.Array]:
    """One optimiser step of one agent's ``C`` critics (leaves ``[C, ...]``, each with its
    own optimiser state). Returns ``(critic, opt, loss, td [B])``."""
    loss_fn = functools.partial(critic_objective, critic_net)
    (loss, td), grads = jax.value_and_grad(loss_fn, has_aux=True)(critic, x, y, w)
    updates, opt = jax.vmap(tx.update)(grads, opt, critic)
    return optax.apply_updates(critic, updates), opt, loss, td


def team_critic_step_shared(settings: Settings, nets: Networks, ti: int, tp: TeamParams,
                            batch: Batch, y: jax.Array, weights: jax.Array
                            ) -> tuple[Params, Params, jax.Array, jax.Array]:
    """Fast mode: team ``ti``'s critic steps on the shared batch; ``y [n_t, B]``,
    ``weights [B]``. Returns stacked ``(critic, opt, loss [n_t], td [n_t, B])``."""
    del settings, ti
    x = batch_input(batch)
    step = functools.partial(critic_step, nets.critic, nets.optimizer)
    return jax.vmap(step, in_axes=(0, 0, None, 0, None))(tp.critic, tp.critic_opt, x, y,
                                                        weights)


def team_critic_step_per_drawer(settings: Settings, nets: Networks, ti: int, tp: TeamParams,
                                batch: Batch, y: jax.Array, weights: jax.Array
                                ) -> tuple[Params, Params, jax.Array, jax.Array]:
    """Faithful mode: each of team ``ti``'s critics on its own rows; ``y [n_t, B]``,
    ``weights [N, B]``. Returns stacked ``(critic, opt, loss [n_t], td [n_t, B])``."""
    lo, hi = settings.drawers(ti)
    mine = drawers_of(settings, batch, ti)
    w = weights[lo:hi]
    x = jax.vmap(batch_input)(mine)
    step = functools.partial(critic_step, nets.critic, nets.optimizer)
    return jax.vmap(step)(tp.critic, tp.critic_opt, x, y, w)


def critic_update(team_step: Callable[..., Any], settings: Settings, nets: Networks,
                  team_params: Teams, batch: Batch, ys: Sequence[jax.Array],
                  weights: jax.Array) -> tuple[Teams, jax.Array, tuple[jax.Array, ...]]:
    """Every team's critic step (``team_step``: :func:`team_critic_step_shared` or
    :func:`team_critic_step_per_drawer`). Returns ``(team_params, mean critic loss
    [num_teams], td [n_t, B] per team)``."""
    new, losses, tds = [], [], []
    for ti, tp in enumerate(team_params):
        critic, opt, loss, td = team_step(settings, nets, ti, tp, batch, ys[ti], weights)
        new.append(tp._replace(critic=critic, critic_opt=opt))
        losses.append(jnp.mean(loss))
        tds.append(td)
    return tuple(new), jnp.stack(losses), tuple(tds)


# --------------------------------------------------------------------- actors


def actor_objective(nets: Networks, algo: AlgoRules, temperature: float, ti: int,
                    actor_params: Params, critic: Params, j: jax.Array,
                    obs: Sequence[jax.Array], act: Sequence[jax.Array],
                    noise: jax.Array) -> jax.Array:
    """Actor loss of agent ``j`` of team ``ti``: its fresh Gumbel-softmax action (noise
    ``[B, A]``) replaces its stored one in ``act``; ``critic`` leaves ``[C', ...]`` (the
    critics it reads, their minimum taken); ``obs[k] [B, n_k, O]``, ``act[k] [B, n_k, A]``."""
    logits = nets.actors[ti].apply(actor_params, obs[ti][:, j])  # [B, A]
    a = relaxed_sample(logits, noise, temperature)
    acts = list(act)
    acts[ti] = acts[ti].at[:, j].set(a)
    q = critic_values(nets.critic, critic, joint_input(obs, tuple(acts))).min(axis=0)
    return algo.actor_loss(q, logits)


def actor_step(nets: Networks, algo: AlgoRules, temperature: float, ti: int, actor: Params,
               opt: Params, critic: Params, j: jax.Array, obs: Sequence[jax.Array],
               act: Sequence[jax.Array], noise: jax.Array) -> tuple[Params, Params, jax.Array]:
    """One optimiser step of agent ``j``'s actor (see :func:`actor_objective`); ``critic``
    leaves ``[C, ...]``. Returns ``(actor, opt, loss)``."""
    critic = algo.actor_critics(critic)
    loss_fn = functools.partial(actor_objective, nets, algo, temperature, ti)
    loss, grads = jax.value_and_grad(loss_fn)(actor, critic, j, obs, act, noise)
    updates, opt = nets.optimizer.update(grads, opt, actor)
    return optax.apply_updates(actor, updates), opt, loss


def drawer_actor_step(nets: Networks, algo: AlgoRules, temperature: float, ti: int,
                      actor: Params, opt: Params, critic: Params, j: jax.Array, own: Batch,
                      noise: jax.Array) -> tuple[Params, Params, jax.Array]:
    """Faithful mode: :func:`actor_step` of agent ``j`` on its own rows ``own``."""
    return actor_step(nets, algo, temperature, ti, actor, opt, critic, j,
                      tuple(b.obs for b in own), tuple(b.action for b in own), noise)


def team_actor_step_shared(settings: Settings, nets: Networks, algo: AlgoRules, ti: int,
                           tp: TeamParams, batch: Batch, noise: jax.Array
                           ) -> tuple[Params, Params, jax.Array]:
    """Fast mode: team ``ti``'s actor steps on the shared batch; ``noise [n_t, B, A]``.
    Returns stacked ``(actor, opt, loss [n_t])``."""
    js = jnp.arange(settings.sizes[ti])
    obs = tuple(b.obs for b in batch)
    act = tuple(b.action for b in batch)
    step = functools.partial(actor_step, nets, algo, settings.temperature, ti)
    return jax.vmap(step, in_axes=(0, 0, 0, 0, None, None, 0))(
        tp.actor, tp.actor_opt, tp.critic, js, obs, act, noise)


def team_actor_step_per_drawer(settings: Settings, nets: Networks, algo: AlgoRules, ti: int,
                               tp: TeamParams, batch: Batch, noise: jax.Array
                               ) -> tuple[Params, Params, jax.Array]:
    """Faithful mode: each of team ``ti``'s actors on its own rows; ``noise [n_t, B, A]``.
    Returns stacked ``(actor, opt, loss [n_t])``."""
    js = jnp.arange(settings.sizes[ti])
    mine = drawers_of(settings, batch, ti)
    step = functools.partial(drawer_actor_step, nets, algo, settings.temperature, ti)
    return jax.vmap(step)(tp.actor, tp.actor_opt, tp.critic, js, mine, noise)


def actor_update(team_step: Callable[..., Any], settings: Settings, nets: Networks,
                 algo: AlgoRules, team_params: Teams, batch: Batch, key: jax.Array
                 ) -> tuple[Teams, jax.Array]:
    """Every team's actor step (``team_step``: :func:`team_actor_step_shared` or
    :func:`team_actor_step_per_drawer`), team ``ti``'s Gumbel noise ``[n_t, B, A]`` one draw
    from ``fold_in(key, ti)``. Returns ``(team_params, mean actor loss [num_teams])``."""
    new, losses = [], []
    for ti, tp in enumerate(team_params):
        b_own = batch[ti].obs.shape[-3]
        noise = gumbel_noise(jax.random.fold_in(key, ti),
                             (settings.sizes[ti], b_own, settings.action_dims[ti]))
        actor, opt, loss = team_step(settings, nets, algo, ti, tp, batch, noise)
        new.append(tp._replace(actor=actor, actor_opt=opt))
        losses.append(jnp.mean(loss))
    return tuple(new), jnp.stack(losses)


def target_update(algo: AlgoRules, tau: float, team_params: Teams) -> Teams:
    """One Polyak step (rate ``tau``) of every team's targets (:attr:`AlgoRules.
    update_targets`)."""
    return tuple(algo.update_targets(tp, tau) for tp in team_params)


# --------------------------------------------------------------------- the round


def priority_step(update_priorities: Callable[..., Any], sampler_state: Any,
                  drawn: tuple[jax.Array, jax.Array]) -> tuple[Any, None]:
    """One drawer's priorities: ``drawn = (idx [B], |td| [B])`` (a ``lax.scan`` body)."""
    idx, td = drawn
    return update_priorities(sampler_state, idx, td), None


def priorities_per_drawer(update_priorities: Callable[..., Any], sampler_state: Any,
                          idx: jax.Array, td_abs: Sequence[jax.Array]) -> Any:
    """Faithful mode: each drawer's ``|td| [B]`` at its own ``idx [N, B]``, drawer after
    drawer; ``td_abs[t] [n_t, B]``."""
    step = functools.partial(priority_step, update_priorities)
    sampler_state, _ = jax.lax.scan(step, sampler_state,
                                    (idx, jnp.concatenate(td_abs, axis=0)))
    return sampler_state


def priorities_shared(update_priorities: Callable[..., Any], sampler_state: Any,
                      idx: jax.Array, td_abs: Sequence[jax.Array]) -> Any:
    """Fast mode: the agents' mean ``|td|`` ``[B]`` at the shared ``idx [B]``."""
    mean_td = jnp.concatenate(td_abs, axis=0).mean(axis=0)
    return update_priorities(sampler_state, idx, mean_td)


def actor_and_targets(phases: Learner, batch: Batch, key: jax.Array, team_params: Teams
                      ) -> tuple[Teams, jax.Array]:
    """The actor update, then the target update; actor losses ``[num_teams]``."""
    team_params, aloss = phases.actor_update(team_params, batch, key)
    return phases.target_update(team_params), aloss


def critic_only(team_params: Teams) -> tuple[Teams, jax.Array]:
    """No actor or target update: ``team_params`` and NaN actor losses ``[num_teams]``."""
    return team_params, jnp.full((len(team_params),), jnp.nan, jnp.float32)


def delayed_actor_phase(phases: Learner, policy_delay: int, team_params: Teams,
                        batch: Batch, num_updates: int | jax.Array, key: jax.Array
                        ) -> tuple[Teams, jax.Array]:
    """:func:`actor_and_targets` every ``policy_delay``-th round, else :func:`critic_only`:
    chosen when traced for a Python-int ``num_updates``, else by a ``lax.cond``."""
    step = functools.partial(actor_and_targets, phases, batch, key)
    if policy_delay == 1:
        return step(team_params)
    if isinstance(num_updates, int):  # decided when traced (the trainer's schedule)
        return (step if num_updates % policy_delay == 0 else critic_only)(team_params)
    return jax.lax.cond(num_updates % policy_delay == 0, step, critic_only, team_params)


def update_round(phases: Learner, set_priorities: Callable[..., Any], policy_delay: int,
                 team_params: Teams, buffer_states: Sequence[Any], sampler_state: Any,
                 num_updates: int | jax.Array, key: jax.Array) -> tuple[Teams, Any, jax.Array]:
    """One round from ``phases``' fields (see :func:`compose_update_round`); ``key`` splits
    into the sample, target and actor keys. Returns ``(team_params, sampler_state, losses
    [num_teams, 2])`` (critic, actor)."""
    k_s, k_t, k_a = jax.random.split(key, 3)
    idx, w, batch, sampler_state = phases.sample(buffer_states, sampler_state, k_s)
    ys = phases.target_q(team_params, batch, k_t)
    team_params, closs, tds = phases.critic_update(team_params, batch, ys, w)
    td_abs = [jnp.abs(td) for td in tds]  # [n_t, B] each
    sampler_state = set_priorities(sampler_state, idx, td_abs)
    team_params, aloss = delayed_actor_phase(phases, policy_delay, team_params, batch,
                                             num_updates, k_a)
    return team_params, sampler_state, jnp.stack([closs, aloss], axis=1)


def compose_update_round(phases: Learner, update_priorities: Callable[..., Any],
                         faithful: bool, policy_delay: int) -> Callable[..., Any]:
    """``update_round(team_params, buffer_states, sampler_state, num_updates, key) ->
    (team_params, sampler_state, losses [num_teams, 2])`` from ``phases``' fields, looked up
    when the round is traced (so a field replaced with ``phases._replace`` takes effect, as
    the profiler's fused pieces need): sample, critic targets, critic update, priorities from
    the |TD errors| (``faithful``: each drawer's at its own indices, drawer after drawer;
    else their mean at the shared indices), then actors and targets every
    ``policy_delay``-th round (NaN actor losses in the others). ``num_updates``, the updates
    before this one, is a Python int (the choice made when the round is traced: the trainer's
    static schedule) or an int32 array (a ``lax.cond``, for a round called on its own)."""
    set_priorities = priorities_per_drawer if faithful else priorities_shared
    return functools.partial(update_round, phases,
                             functools.partial(set_priorities, update_priorities),
                             policy_delay)


class SamplingMode(NamedTuple):
    """The functions that differ between the ``fast`` and ``faithful`` sampling modes."""

    sample: Callable[..., Any]
    target_q: Callable[..., Any]
    team_critic_step: Callable[..., Any]
    team_actor_step: Callable[..., Any]


#: The two sampling modes' variants of the sample, target, critic and actor functions.
SAMPLING_MODES: dict[str, SamplingMode] = {
    "fast": SamplingMode(sample_shared, target_q_shared, team_critic_step_shared,
                         team_actor_step_shared),
    "faithful": SamplingMode(sample_per_drawer, target_q_per_drawer,
                             team_critic_step_per_drawer, team_actor_step_per_drawer),
}


def make_learner(
    teams: Sequence[TeamSpec],
    networks: Networks,
    algorithm: rules.Algorithm,
    buffers: Sequence[replay.Buffer],
    sampler: replay.Sampler,
    *,
    sampling_mode: str,
    batch_size: int,
    gamma: float,
    tau: float,
    temperature: float,
) -> Learner:
    """Build the update-round phases for ``teams`` (see :class:`Learner`): the module's pure
    functions bound to the settings, networks and per-algorithm rules."""
    settings = Settings(sizes=tuple(t.num_agents for t in teams),
                        action_dims=tuple(t.action_dim for t in teams),
                        batch_size=batch_size, gamma=gamma, tau=tau, temperature=temperature)
    algo = algo_rules(algorithm)
    faithful = sampling_mode == "faithful"
    mode = SAMPLING_MODES["faithful" if faithful else "fast"]
    partial = functools.partial
    phases = Learner(
        sample=partial(mode.sample, settings, sampler, tuple(buffers)),
        target_q=partial(mode.target_q, settings, networks, algo),
        critic_update=partial(critic_update, mode.team_critic_step, settings, networks),
        actor_update=partial(actor_update, mode.team_actor_step, settings, networks, algo),
        target_update=partial(target_update, algo, tau),
        update_round=None,
    )
    return phases._replace(update_round=compose_update_round(
        phases, sampler.update_priorities, faithful, algorithm.policy_delay))
