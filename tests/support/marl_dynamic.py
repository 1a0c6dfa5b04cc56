"""The MARL trainer's loop as it was before the static schedule: a reference for the tests.

Episodes are a ``lax.scan`` of ``episode_length`` env steps, each step deciding at run time
(a ``lax.cond``) whether an update round is due, and resetting the worlds after the scan.
``tests/marl/test_schedule.py`` checks the static-schedule trainer against it bit for bit.
It uses the library's own phases (``make_phases``), so what it pins is the order of the
computation: the key chain, the schedule, and which losses each episode reports.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from jaxrl_pim.marl.config import MARLConfig
from jaxrl_pim.marl.trainer import TrainState, make_phases


def make_dynamic_train_from(config: MARLConfig, num_episodes: int) -> Any:
    """``train_from(state) -> (state, metrics)`` with the schedule decided at every step."""
    cfg = config
    rollout, learner = make_phases(config)

    def env_step(state: TrainState, _) -> tuple[TrainState, jax.Array]:
        key, k_act, k_env, k_upd = jax.random.split(state.key, 4)
        actions = rollout.select_actions(state.teams, state.obs, k_act)
        next_obs, env_state, rewards, terminated = rollout.env_step(k_env, state.env_state,
                                                                    actions)
        buffers, ss = rollout.buffer_add(state.buffers, state.sampler, state.obs, actions,
                                         rewards, next_obs, terminated)
        step = state.step + 1
        due = (step % cfg.update_every == 0) & (buffers[0].size >= cfg.learning_starts)

        def updates(operand):
            def one(carry, k):
                teams, ss, nu, _ = carry
                teams, ss, losses = learner.update_round(teams, buffers, ss, nu, k)
                return (teams, ss, nu + 1, losses), None

            carry, _ = jax.lax.scan(one, operand,
                                    jax.random.split(k_upd, cfg.updates_per_round))
            return carry

        teams, ss, num_updates, losses = jax.lax.cond(
            due, updates, lambda o: o, (state.teams, ss, state.num_updates, state.losses))
        losses = jnp.where(jnp.isnan(losses) & ~jnp.isnan(state.losses), state.losses, losses)
        state = state._replace(
            teams=teams, buffers=buffers, sampler=ss, env_state=env_state, obs=next_obs,
            key=key, step=step, num_updates=num_updates, losses=losses,
        )
        return state, jnp.stack([r.mean(axis=(0, 1)) for r in rewards])

    def episode(state: TrainState, _) -> tuple[TrainState, dict[str, jax.Array]]:
        state, rewards = jax.lax.scan(env_step, state, None, length=cfg.episode_length)
        key, k_reset = jax.random.split(state.key)
        obs, env_state = rollout.reset(k_reset)
        state = state._replace(episode=state.episode + 1, obs=obs, env_state=env_state,
                               key=key)
        return state, {"episode_return": rewards.sum(axis=0),
                       "critic_loss": state.losses[:, 0], "actor_loss": state.losses[:, 1]}

    def train_from(state: TrainState) -> tuple[TrainState, dict[str, jax.Array]]:
        return jax.lax.scan(episode, state, None, length=num_episodes)

    return train_from
