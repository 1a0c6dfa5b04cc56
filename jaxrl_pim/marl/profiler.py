"""Phase profiler for the MARL learners: where does a training step's time go?

Each phase of the trainer (:func:`jaxrl_pim.marl.trainer.make_phases`) is jitted on its own
and timed with :func:`jaxrl_pim.timing.time_call` (best of ``repeats`` blocked calls after a
warm-up call, so compile time is excluded) on a realistic state: freshly initialised networks
and optimisers, and replay buffers FILLED to ``capacity`` rows of random transitions
(prioritised samplers get random priorities on every row). The phases, as in the
characterisation paper:

===================  =================================================  ==================
phase                what one timed call does                           how often
===================  =================================================  ==================
action_selection     every actor on its observation + Gumbel-softmax    every env step
env_step             ``num_envs`` vmapped particle-world steps          every env step
buffer_add           lock-step append to every team buffer (+ on_add)   every env step
sampling             draw indices (sampler) + gather the mini-batch     every update round
target_q             target actions + target critics -> y per agent     every update round
q_loss               critic loss, gradients, clip, Adam (all agents)    every update round
p_loss               actor loss, gradients, clip, Adam (all agents)     every update round
target_update        Polyak update of all target networks               every update round
===================  =================================================  ==================

``share`` weights each phase by how often it runs in training (env-step phases
``update_every`` times per update round; MATD3's actor/target phases every
``policy_delay``-th round) and normalises to 1, i.e. the fraction of training time once
updates have started (warm-up excluded). Separately jitted phases cannot fuse with each other
and each pays one dispatch, so the sum of the phases is an upper bound of a fused step;
``update_round_fused`` times the whole jitted update round for comparison.

Two pieces let ``benchmarks/marl_profile.py`` time the phases inside the fused training
program instead (by subtraction: the trainer with all phases against the trainer with one
phase replaced by a cheap stand-in): ``make_train_from(config, n, phases=...)`` runs the
trainer's own loop over given phases, and :func:`compose_update_round` rebuilds the library's
update round from a learner's phase fields, so that a replaced field takes effect.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl_pim import replay
from jaxrl_pim.marl.config import MARLConfig
from jaxrl_pim.marl.learner import Learner
from jaxrl_pim.marl.learner import compose_update_round as learner_round
from jaxrl_pim.marl.rules import make_algorithm
from jaxrl_pim.marl.trainer import (
    Phases,
    TrainState,
    make_phases,
    make_sampler,
)
from jaxrl_pim.timing import time_call

PHASES: tuple[str, ...] = (
    "action_selection",
    "env_step",
    "buffer_add",
    "sampling",
    "target_q",
    "q_loss",
    "p_loss",
    "target_update",
)
ENV_PHASES: tuple[str, ...] = PHASES[:3]


def filled_state(config: MARLConfig, key: jax.Array, phases: Phases | None = None
                 ) -> TrainState:
    """An initial train state whose buffers hold ``buffer_capacity`` random transitions, its
    counters at :func:`filled_episode` (past the warm-up: a piece from it runs its rounds).

    Observations and rewards are standard normal, actions uniform on the simplex, ``done``
    0; prioritised samplers get priorities uniform in ``[0, 1)`` on every row. ``phases``
    defaults to ``make_phases(config)``.
    """
    phases = make_phases(config) if phases is None else phases
    cap = config.buffer_capacity
    prioritized = config.sampler in ("prioritized", "info_prioritized")
    update_priorities = make_sampler(config).update_priorities
    teams = config.teams
    packed = config.layout == "packed"
    compact = config.layout == "compact"

    def fill(key):
        state = phases.rollout.init(key)
        buffers = []
        for ti, (s, team) in enumerate(zip(state.buffers, teams, strict=True)):
            kk = jax.random.fold_in(key, 100 + ti)
            if compact:  # every row chained to the next (within an episode), random fields
                d = s.data
                data = d._replace(
                    obs=jax.random.normal(jax.random.fold_in(kk, 0), d.obs.shape),
                    action=jax.nn.softmax(jax.random.normal(jax.random.fold_in(kk, 1),
                                                            d.action.shape), axis=-1),
                    reward=jax.random.normal(jax.random.fold_in(kk, 2), d.reward.shape))
                buffers.append(s._replace(data=data, size=jnp.asarray(cap, jnp.int32),
                                          insert_pos=jnp.zeros((), jnp.int32)))
                continue
            # the packed layout is filled field by field too (its rows' fields), then packed
            fields = replay.unpack_rows(s.data, team.num_agents, team.obs_dim,
                                        team.action_dim) if packed else s.data
            data = []
            for fi, arr in enumerate(fields):
                k = jax.random.fold_in(kk, fi)
                if fi == 1:  # action
                    data.append(jax.nn.softmax(jax.random.normal(k, arr.shape), axis=-1))
                elif fi == 4:  # done
                    data.append(jnp.zeros_like(arr))
                else:
                    data.append(jax.random.normal(k, arr.shape, arr.dtype))
            data = replay.pack_rows(replay.Transition(*data)) if packed else type(s.data)(*data)
            buffers.append(s._replace(data=data,
                                      size=jnp.asarray(cap, jnp.int32),
                                      insert_pos=jnp.zeros((), jnp.int32)))
        ss = state.sampler
        if prioritized:
            prio = jax.random.uniform(jax.random.fold_in(key, 7), (cap,))
            ss = update_priorities(ss, jnp.arange(cap, dtype=jnp.int32), prio)
        episode = filled_episode(config)
        return state._replace(buffers=tuple(buffers), sampler=ss,
                              episode=jnp.asarray(episode, jnp.int32),
                              step=jnp.asarray(episode * config.episode_length, jnp.int32))

    return jax.jit(fill)(key)


def filled_episode(config: MARLConfig) -> int:
    """The episode count of :func:`filled_state`: the first that starts a round (where
    rounds hold whole episodes) with every later round due, so pieces of the static schedule
    from it (``make_train_from(..., start_episode=filled_episode(config))``) run rounds."""
    L, U = config.episode_length, config.update_every
    first = max(0, config.first_update_step - U)  # a round's steps start here or later
    e = -(-first // L)
    while U % L == 0 and e * L % U:
        e += 1
    return e


def calls_per_update_round(config: MARLConfig) -> dict[str, float]:
    """How often each phase runs per update round in training: env-step phases
    ``update_every`` times, the update phases once, the actor and target phases once every
    ``policy_delay``-th round (MATD3)."""
    delayed = 1.0 / make_algorithm(config).policy_delay
    calls = {p: float(config.update_every) for p in ENV_PHASES}
    calls.update(sampling=1.0, target_q=1.0, q_loss=1.0, p_loss=delayed,
                 target_update=delayed)
    return calls


def phase_shares(seconds: dict[str, float], calls: dict[str, float]) -> dict[str, float]:
    """Fraction of training time per phase: ``seconds * calls``, normalised to sum to 1."""
    weighted = {p: seconds[p] * calls[p] for p in PHASES}
    total = sum(weighted.values())
    return {p: weighted[p] / total for p in PHASES}


def profile_phases(
    config: MARLConfig, key: jax.Array | None = None, repeats: int = 5,
    phases: Phases | None = None, fused: bool = True,
) -> dict[str, Any]:
    """Time every phase of one training step / update round for ``config``.

    ``phases`` defaults to ``make_phases(config)`` (pass others, e.g. instrumented ones, with
    the same signatures). Returns ``{"seconds": {phase: s per call}, "share": {phase:
    fraction of training time}, "update_round_fused": s (None unless ``fused``),
    "calls_per_update_round": {phase: count}}``.
    """
    key = jax.random.PRNGKey(0) if key is None else key
    phases = make_phases(config) if phases is None else phases
    rollout, learner = phases
    state = filled_state(config, key, phases)
    k = jax.random.PRNGKey(1)
    teams, buffers, ss = state.teams, state.buffers, state.sampler

    act = jax.jit(rollout.select_actions)
    step = jax.jit(rollout.env_step)
    add = jax.jit(rollout.buffer_add, donate_argnums=(0, 1))
    sample = jax.jit(learner.sample)
    target_q = jax.jit(learner.target_q)
    critic = jax.jit(learner.critic_update)
    actor = jax.jit(learner.actor_update)
    target = jax.jit(learner.target_update)
    fused_round = jax.jit(learner.update_round)

    actions = act(teams, state.obs, k)
    next_obs, _, rewards, terminated = step(k, state.env_state, actions)
    _, weights, batch, _ = sample(buffers, ss, k)
    ys = target_q(teams, batch, k)

    holder = {"buffers": buffers, "ss": ss}

    def do_add():
        holder["buffers"], holder["ss"] = add(holder["buffers"], holder["ss"], state.obs,
                                              actions, rewards, next_obs, terminated)
        return holder["buffers"]

    seconds = {
        "action_selection": time_call(lambda: act(teams, state.obs, k), repeats),
        "env_step": time_call(lambda: step(k, state.env_state, actions), repeats),
        "buffer_add": time_call(do_add, repeats),
    }
    buffers, ss = holder["buffers"], holder["ss"]
    seconds["sampling"] = time_call(lambda: sample(buffers, ss, k), repeats)
    seconds["target_q"] = time_call(lambda: target_q(teams, batch, k), repeats)
    seconds["q_loss"] = time_call(lambda: critic(teams, batch, ys, weights), repeats)
    seconds["p_loss"] = time_call(lambda: actor(teams, batch, k), repeats)
    seconds["target_update"] = time_call(lambda: target(teams), repeats)
    fused_s = None
    if fused:
        fused_s = time_call(lambda: fused_round(teams, buffers, ss, jnp.zeros((), jnp.int32), k),
                            repeats)

    calls = calls_per_update_round(config)
    return {
        "seconds": seconds,
        "share": phase_shares(seconds, calls),
        "update_round_fused": fused_s,
        "calls_per_update_round": calls,
    }


def format_table(rows: list[dict[str, Any]]) -> str:
    """Markdown table of ``rows`` (each with ``env``, ``agents``, ``mode`` and a profile)."""
    head = "| env | agents | mode | " + " | ".join(PHASES) + " | update share |"
    sep = "|" + "---|" * (len(PHASES) + 4)
    lines = [head, sep]
    for r in rows:
        sec = r["profile"]["seconds"]
        share = r["profile"]["share"]
        upd = sum(share[p] for p in PHASES[3:])
        cells = [f"{sec[p] * 1e3:.3g} ms ({share[p] * 100:.0f}%)" for p in PHASES]
        lines.append(f"| {r['env']} | {r['agents']} | {r['mode']} | " + " | ".join(cells)
                     + f" | {upd * 100:.0f}% |")
    return "\n".join(lines)


def plot_shares(rows: list[dict[str, Any]], path: str, title: str) -> None:
    """Stacked bars of the phase shares, one bar per row (like the paper's Figures 2-4)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [f"{r['env']}\n{r['agents']} ({r['mode']})" for r in rows]
    fig, ax = plt.subplots(figsize=(max(6.0, 0.9 * len(rows) + 2), 4.5))
    bottom = np.zeros(len(rows))
    colors = plt.get_cmap("tab10")
    for i, p in enumerate(PHASES):
        vals = np.array([r["profile"]["share"][p] * 100 for r in rows])
        ax.bar(labels, vals, bottom=bottom, label=p, color=colors(i))
        bottom += vals
    ax.set_ylabel("share of training time (%)")
    ax.set_title(title)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.tick_params(axis="x", labelsize=7)
    fig.tight_layout()
    from jaxrl_pim.report import atomic_save  # the one atomic writer

    atomic_save(path, lambda tmp: fig.savefig(tmp, dpi=120))
    plt.close(fig)


# ------------------------------------------------------------------ fused-program hooks
def compose_update_round(config: MARLConfig, learner: Learner) -> Callable[..., Any]:
    """``Learner.update_round`` rebuilt from ``learner``'s phase fields (so that a field
    replaced with ``learner._replace`` takes effect): the library's own round,
    :func:`jaxrl_pim.marl.learner.compose_update_round`, with ``config``'s sampler, sampling
    mode and policy delay."""
    return learner_round(learner, make_sampler(config).update_priorities,
                         config.sampling_mode == "faithful", make_algorithm(config).policy_delay)
