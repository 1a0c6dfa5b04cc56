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
"""

from __future__ import annotations

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


def joint_input(obs: Sequence[jax.Array], act: Sequence[jax.Array]) -> jax.Array:
    """Centralised critic input ``[B, D]``: every agent's observation (teams in order, agents
    in order), then every agent's action; ``obs[k] [B, n_k, O_k]``, ``act[k] [B, n_k, A]``."""
    parts = [x.reshape(x.shape[0], -1) for x in (*obs, *act)]
    return jnp.concatenate(parts, axis=-1)


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
    """Build the update-round phases for ``teams`` (see :class:`Learner`)."""
    algo = algorithm
    sizes = [t.num_agents for t in teams]
    offsets = [sum(sizes[:i]) for i in range(len(sizes))]
    n_total = sum(sizes)
    faithful = sampling_mode == "faithful"
    actors, critic_net, tx = networks

    # ----------------------------------------------------------------- sampling
    def gather(buffer_states, idx):
        return tuple(
            TeamBatch(*b.gather(s, idx, time_major=True))
            for b, s in zip(buffers, buffer_states, strict=True)
        )

    def sample(buffer_states, sampler_state, key):
        size = buffer_states[0].size
        pos = buffer_states[0].insert_pos
        if not faithful:
            idx, w, sampler_state = sampler.sample(sampler_state, key, size, pos, batch_size)
            return idx, w, gather(buffer_states, idx), sampler_state

        def draw(ss, k):
            idx, w, ss = sampler.sample(ss, k, size, pos, batch_size)
            return ss, (idx, w)

        sampler_state, (idx, w) = jax.lax.scan(draw, sampler_state,
                                               jax.random.split(key, n_total))
        batch = jax.vmap(lambda i: gather(buffer_states, i))(idx)
        return idx, w, batch, sampler_state

    # ----------------------------------------------------------------- shared pieces
    def critic_apply(critic_params, x):
        """``critic_params`` leaves ``[C, ...]``, ``x [B, D]`` -> ``[C, B]``."""
        return jax.vmap(lambda p: critic_net.apply(p, x)[..., 0])(critic_params)

    def team_slice(batch, ti):
        """Faithful mode: the drawers of team ``ti`` (leading axis ``[n_ti, ...]``)."""
        lo, hi = offsets[ti], offsets[ti] + sizes[ti]
        return jax.tree.map(lambda x: x[lo:hi], batch)

    def policy_noise(key, next_obs):
        """Gumbel (and smoothing) noise for the next actions, one draw per team:
        ``next_obs[k] [..., B, n_k, O]`` -> ``(gumbel [..., B, n_k, A], normal or None)``."""
        out = []
        for k in range(len(teams)):
            shape = (*next_obs[k].shape[:-1], teams[k].action_dim)
            kk = jax.random.fold_in(key, k)
            z = None
            if algo.smoothing is not None:
                # Drawn flat and reshaped: XLA:CPU compiles rank-3 random draws slowly.
                z = jax.random.normal(jax.random.fold_in(kk, 1), (math.prod(shape),))
                z = z.reshape(shape)
            out.append((gumbel_noise(kk, shape), z))
        return tuple(out)

    def next_policy(team_params, next_obs, noise):
        """Next actions ``[B, n_k, A]`` and the logits they came from, for every team."""
        acts, all_logits = [], []
        for k in range(len(teams)):
            tp = team_params[k]
            params = tp.target_actor if algo.target_actors else tp.actor
            logits = jax.vmap(actors[k].apply, in_axes=(0, 1), out_axes=1)(params, next_obs[k])
            g, z = noise[k]
            if z is not None:
                logits = algo.smoothing(logits, z)
            acts.append(relaxed_sample(logits, g, temperature))
            all_logits.append(logits)
        return tuple(acts), tuple(all_logits)

    def agent_targets(t_critic, next_x, r, d, logits):
        """Targets ``[B]`` of one agent from its target critics ``[C, ...]``."""
        q = critic_apply(t_critic, next_x)  # [C, B]
        discount = gamma * (1.0 - d)
        return jax.vmap(algo.target, in_axes=(0, 0, 1, 0))(r, discount, q, logits)

    # ----------------------------------------------------------------- phases
    def target_q(team_params, batch, key):
        ys = []
        if not faithful:
            next_obs = tuple(b.next_obs for b in batch)
            next_act, next_logits = next_policy(team_params, next_obs,
                                                policy_noise(key, next_obs))
            next_x = joint_input(next_obs, next_act)
            for ti in range(len(teams)):
                ys.append(jax.vmap(agent_targets, in_axes=(0, None, 1, 1, 1))(
                    team_params[ti].target_critic, next_x, batch[ti].reward, batch[ti].done,
                    next_logits[ti]))
            return tuple(ys)
        for ti in range(len(teams)):
            mine = team_slice(batch, ti)  # fields [n_ti, B, n_k, ...]

            def drawer(t_critic, j, own, noise, ti=ti):
                next_obs = tuple(b.next_obs for b in own)
                next_act, next_logits = next_policy(team_params, next_obs, noise)
                next_x = joint_input(next_obs, next_act)
                return agent_targets(t_critic, next_x, own[ti].reward[:, j],
                                     own[ti].done[:, j], next_logits[ti][:, j])

            noise = policy_noise(jax.random.fold_in(key, ti), tuple(b.next_obs for b in mine))
            ys.append(jax.vmap(drawer)(team_params[ti].target_critic, jnp.arange(sizes[ti]),
                                       mine, noise))
        return tuple(ys)

    def critic_step(critic, opt, x, y, w):
        def loss_fn(p):
            loss, err = rules.critic_loss(critic_apply(p, x), y, w)
            return loss, err[0]

        (loss, td), grads = jax.value_and_grad(loss_fn, has_aux=True)(critic)
        updates, opt = jax.vmap(tx.update)(grads, opt, critic)
        return optax.apply_updates(critic, updates), opt, loss, td

    def critic_update(team_params, batch, ys, weights):
        new, losses, tds = [], [], []
        for ti in range(len(teams)):
            tp = team_params[ti]
            if faithful:
                mine = team_slice(batch, ti)
                w = weights[offsets[ti]:offsets[ti] + sizes[ti]]
                x = jax.vmap(lambda own: joint_input(tuple(b.obs for b in own),
                                                     tuple(b.action for b in own)))(mine)
                critic, opt, loss, td = jax.vmap(critic_step)(tp.critic, tp.critic_opt, x,
                                                              ys[ti], w)
            else:
                x = joint_input(tuple(b.obs for b in batch), tuple(b.action for b in batch))
                critic, opt, loss, td = jax.vmap(critic_step, in_axes=(0, 0, None, 0, None))(
                    tp.critic, tp.critic_opt, x, ys[ti], weights)
            new.append(tp._replace(critic=critic, critic_opt=opt))
            losses.append(jnp.mean(loss))
            tds.append(td)
        return tuple(new), jnp.stack(losses), tuple(tds)

    def actor_step(ti, actor, opt, critic, j, obs, act, noise):
        if algo.actor_critics < algo.num_critics:
            critic = jax.tree.map(lambda c: c[:algo.actor_critics], critic)

        def loss_fn(p):
            logits = actors[ti].apply(p, obs[ti][:, j])  # [B, A]
            a = relaxed_sample(logits, noise, temperature)
            acts = list(act)
            acts[ti] = acts[ti].at[:, j].set(a)
            q = critic_apply(critic, joint_input(obs, tuple(acts))).min(axis=0)
            return algo.actor_loss(q, logits)

        loss, grads = jax.value_and_grad(loss_fn)(actor)
        updates, opt = tx.update(grads, opt, actor)
        return optax.apply_updates(actor, updates), opt, loss

    def actor_update(team_params, batch, key):
        new, losses = [], []
        for ti in range(len(teams)):
            tp = team_params[ti]
            # Gumbel noise of every agent's policy sample, one draw: [n_t, B, A].
            b_own = batch[ti].obs.shape[-3]
            noise = gumbel_noise(jax.random.fold_in(key, ti),
                                 (sizes[ti], b_own, teams[ti].action_dim))
            js = jnp.arange(sizes[ti])

            def step(*args, ti=ti):
                return actor_step(ti, *args)

            if faithful:
                mine = team_slice(batch, ti)

                def drawer(a, o, c, j, own, k, step=step):
                    return step(a, o, c, j, tuple(b.obs for b in own),
                                tuple(b.action for b in own), k)

                actor, opt, loss = jax.vmap(drawer)(tp.actor, tp.actor_opt, tp.critic, js,
                                                    mine, noise)
            else:
                obs = tuple(b.obs for b in batch)
                act = tuple(b.action for b in batch)
                actor, opt, loss = jax.vmap(step, in_axes=(0, 0, 0, 0, None, None, 0))(
                    tp.actor, tp.actor_opt, tp.critic, js, obs, act, noise)
            new.append(tp._replace(actor=actor, actor_opt=opt))
            losses.append(jnp.mean(loss))
        return tuple(new), jnp.stack(losses)

    def target_update(team_params):
        out = []
        for tp in team_params:
            target_actor = tp.target_actor
            if algo.target_actors:
                target_actor = rules.polyak(tp.target_actor, tp.actor, tau)
            out.append(tp._replace(target_actor=target_actor,
                                   target_critic=rules.polyak(tp.target_critic, tp.critic, tau)))
        return tuple(out)

    phases = Learner(sample=sample, target_q=target_q, critic_update=critic_update,
                     actor_update=actor_update, target_update=target_update,
                     update_round=None)
    return phases._replace(update_round=compose_update_round(
        phases, sampler.update_priorities, faithful, algo.policy_delay))


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

    def update_round(team_params, buffer_states, sampler_state, num_updates, key):
        k_s, k_t, k_a = jax.random.split(key, 3)
        idx, w, batch, sampler_state = phases.sample(buffer_states, sampler_state, k_s)
        ys = phases.target_q(team_params, batch, k_t)
        team_params, closs, tds = phases.critic_update(team_params, batch, ys, w)
        td_abs = [jnp.abs(td) for td in tds]  # [n_t, B] each
        if faithful:
            def upd(ss, xs):
                i, t = xs
                return update_priorities(ss, i, t), None

            sampler_state, _ = jax.lax.scan(upd, sampler_state,
                                            (idx, jnp.concatenate(td_abs, axis=0)))
        else:
            mean_td = jnp.concatenate(td_abs, axis=0).mean(axis=0)
            sampler_state = update_priorities(sampler_state, idx, mean_td)

        def actor_and_targets(tp):
            tp, aloss = phases.actor_update(tp, batch, k_a)
            return phases.target_update(tp), aloss

        def critic_only(tp):
            return tp, jnp.full((len(tp),), jnp.nan, jnp.float32)

        if policy_delay == 1:
            team_params, aloss = actor_and_targets(team_params)
        elif isinstance(num_updates, int):  # decided when traced (the trainer's schedule)
            step = actor_and_targets if num_updates % policy_delay == 0 else critic_only
            team_params, aloss = step(team_params)
        else:
            team_params, aloss = jax.lax.cond(num_updates % policy_delay == 0,
                                              actor_and_targets, critic_only, team_params)
        return team_params, sampler_state, jnp.stack([closs, aloss], axis=1)

    return update_round
