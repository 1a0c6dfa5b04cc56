"""What a run will do before it starts: counts, replay memory, and a measured duration estimate.

:func:`plan_run` is arithmetic on the config (no compute): env steps, stored transitions,
update rounds (the closed form of the trainer's schedule), the first update, and the bytes
of the replay buffers and sampler state. :func:`estimate_seconds` times one jitted env step
and one jitted update round on this machine and multiplies by the counts: an ESTIMATE that
excludes compilation and ignores what fusing the whole run into one program saves or costs.
``jaxrl-pim marl`` prints both before a long run.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxrl_pim.marl.config import MARLConfig
from jaxrl_pim.marl.trainer import make_env, make_phases
from jaxrl_pim.replay import sum_tree
from jaxrl_pim.timing import time_call

LONG_RUN_TRANSITIONS = 100_000
"""Runs storing at least this many transitions count as long (the command estimates them)."""

ESTIMATE_ROWS = 4096
"""Buffer rows (at most) of the copy of the run that :func:`estimate_seconds` times."""


class RunPlan(NamedTuple):
    """Counts of a run of ``episodes`` episodes starting at ``start_episode``.

    ``env_steps`` steps of the vectorised batch, ``transitions`` stored rows (``num_envs`` per
    step), ``update_rounds``, ``first_update_step`` (1-based env step of the first round,
    counted from the start of training), ``learning_starts`` (transitions it waits for),
    ``buffer_bytes`` (replay buffers and sampler state, all teams).
    """

    start_episode: int
    episodes: int
    env_steps: int
    transitions: int
    update_rounds: int
    first_update_step: int
    learning_starts: int
    buffer_bytes: int


def replay_bytes(config: MARLConfig) -> int:
    """Bytes of the replay state: every team's buffer (float32 ``obs``, ``action``, ``reward``,
    ``next_obs``, ``done`` for ``capacity`` rows: ``4 C n (2 O + A + 2)``) plus the
    prioritised samplers' trees (``2 P`` float32 per tree, two for ``info_prioritized``)."""
    teams = make_env(config)[0].teams
    cap = config.buffer_capacity
    total = sum(4 * cap * t.num_agents * (2 * t.obs_dim + t.action_dim + 2) for t in teams)
    trees = {"prioritized": 1, "info_prioritized": 2}.get(config.sampler, 0)
    if trees:
        total += trees * 4 * 2 * sum_tree.tree_leaves(cap) + 4  # + max_priority
    return total


def plan_run(config: MARLConfig, start_episode: int = 0,
             num_episodes: int | None = None) -> RunPlan:
    """The counts of training ``num_episodes`` (default: up to ``config.num_episodes``)
    from episode ``start_episode``."""
    episodes = config.num_episodes - start_episode if num_episodes is None else num_episodes
    episodes = max(episodes, 0)
    start_step = start_episode * config.episode_length
    steps = episodes * config.episode_length
    return RunPlan(
        start_episode=start_episode,
        episodes=episodes,
        env_steps=steps,
        transitions=steps * config.num_envs,
        update_rounds=config.update_rounds(steps, start_step),
        first_update_step=config.first_update_step,
        learning_starts=config.learning_starts,
        buffer_bytes=replay_bytes(config),
    )


def estimate_seconds(config: MARLConfig, plan: RunPlan, key: jax.Array | None = None,
                     repeats: int = 3) -> dict[str, Any]:
    """Measured per-call times of one env step (actions, world step, buffer append) and one
    update round (on an initial state), scaled by the plan's counts.

    The timed copy of the run (all-zero state) keeps every size but the buffer capacity, cut to
    ``max(ESTIMATE_ROWS, batch_size, num_envs)`` rows (no more memory than that is used):
    a step writes and a round reads a fixed number of rows whatever the capacity; only the
    prioritised samplers' tree depth grows with it (``log2`` of the capacity).
    Returns ``{"env_step_s", "update_round_s", "estimated_s", "compile_s",
    "timed_capacity"}``; the estimate excludes compilation (``compile_s`` is what compiling
    the two timed pieces took).
    """
    import dataclasses
    import time

    key = jax.random.PRNGKey(0) if key is None else key
    rows = min(config.buffer_capacity, max(ESTIMATE_ROWS, config.batch_size, config.num_envs))
    config = dataclasses.replace(config, buffer_capacity=rows,
                                 learning_starts=min(config.learning_starts, rows))
    rollout, learner = make_phases(config)
    # Zeros of the state's shapes: the timed work does not depend on the values, and no
    # initialisation program has to be compiled.
    state = jax.tree.map(lambda x: jnp.zeros(x.shape, x.dtype),
                         jax.eval_shape(rollout.init, key))

    def env_step(state, k):
        actions = rollout.select_actions(state.teams, state.obs, k)
        next_obs, env_state, rewards, terminated = rollout.env_step(k, state.env_state,
                                                                    actions)
        return rollout.buffer_add(state.buffers, state.sampler, state.obs, actions, rewards,
                                  next_obs, terminated)

    t0 = time.perf_counter()
    step = jax.jit(env_step).lower(state, key).compile()
    rnd = None
    if plan.update_rounds:
        rnd = jax.jit(learner.update_round).lower(
            state.teams, state.buffers, state.sampler, jnp.zeros((), jnp.int32), key
        ).compile()
    compile_s = time.perf_counter() - t0
    step_s = time_call(lambda: step(state, key), repeats)
    round_s = 0.0
    if rnd is not None:
        round_s = time_call(lambda: rnd(state.teams, state.buffers, state.sampler,
                                        jnp.zeros((), jnp.int32), key), repeats)
    return {
        "env_step_s": step_s,
        "update_round_s": round_s,
        "estimated_s": plan.env_steps * step_s + plan.update_rounds * round_s,
        "compile_s": compile_s,
        "timed_capacity": rows,
    }


def human_bytes(n: int) -> str:
    """``n`` bytes in B, KiB, MiB, GiB or TiB."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1024
    raise AssertionError  # pragma: no cover


def _human_seconds(s: float) -> str:
    if s < 1:
        return f"{s:.2f} s"
    if s < 120:
        return f"{s:.0f} s"
    if s < 7200:
        return f"{s / 60:.0f} min"
    return f"{s / 3600:.1f} h"


def describe(config: MARLConfig, plan: RunPlan, estimate: dict[str, Any] | None = None
             ) -> list[str]:
    """Human-readable lines about the plan (and the estimate when given)."""
    lines = [
        f"plan: {plan.episodes:,} episodes x {config.episode_length} steps x "
        f"{config.num_envs} env(s) = {plan.transitions:,} transitions, "
        f"{plan.update_rounds:,} update rounds; replay buffers "
        f"{human_bytes(plan.buffer_bytes)} ({config.buffer_capacity:,} rows per team)"
    ]
    if estimate is not None:
        lines.append(
            f"estimated duration: {_human_seconds(estimate['estimated_s'])} (an estimate: "
            f"{plan.env_steps:,} env steps x {estimate['env_step_s'] * 1e3:.3g} ms + "
            f"{plan.update_rounds:,} update rounds x {estimate['update_round_s'] * 1e3:.3g} ms,"
            f" each timed alone on this machine; compilation not included)"
        )
    if plan.update_rounds == 0 and plan.episodes:
        first = math.ceil(plan.first_update_step / config.episode_length)
        lines.append(
            f"warning: no update will run before {plan.learning_starts:,} transitions are "
            f"stored (learning_starts; the first round comes after env step "
            f"{plan.first_update_step:,}, in episode {first:,}); this run stores "
            f"{plan.transitions:,}, so the policies stay untrained"
        )
    return lines
