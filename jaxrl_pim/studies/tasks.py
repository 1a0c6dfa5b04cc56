"""The study tasks: which learner, environment and hyper-parameters each study trains.

A :class:`StudyTask` names an (algorithm, environment, hyper-parameters) combination of
:mod:`jaxrl_pim.rl`; :data:`TASKS` holds the registered ones (each learns in well under a
minute of CPU). :func:`train_seeds` trains several seeds of a task in one vmapped jit.
"""

from __future__ import annotations

import dataclasses
import math
import zlib
from types import ModuleType
from typing import Any

import jax
import numpy as np

from jaxrl_pim.rl import LEARNERS, A2CConfig, DDPGConfig, DQNConfig, PPOConfig
from jaxrl_pim.rl.networks import ParametricPolicy
from jaxrl_pim.studies.config import FULL_TASKS, QUICK_TASKS, UNLEARNED_TASKS


@dataclasses.dataclass(frozen=True)
class StudyTask:
    """An (algorithm, environment, hyper-parameters) combination used by the studies.

    Attributes:
      name: registry name, e.g. ``"dqn-cartpole"``.
      algo: a key of :data:`jaxrl_pim.rl.LEARNERS` (``dqn``, ``ppo``, ``a2c``, ``ddpg``).
      config: the learner's config (``DQNConfig``, ...).
    """

    name: str
    algo: str
    config: Any

    def module(self) -> ModuleType:
        """The learner module (``jaxrl_pim.rl.<algo>``)."""
        return LEARNERS[self.algo]

    def policy(self) -> ParametricPolicy:
        """The task's :class:`~jaxrl_pim.rl.networks.ParametricPolicy`."""
        return self.module().make_policy(self.config)

    def scaled(self, timesteps_scale: float) -> StudyTask:
        """The same task with ``total_timesteps`` multiplied by ``timesteps_scale``."""
        if timesteps_scale == 1.0:
            return self
        cfg = self.config
        steps = max(int(cfg.total_timesteps * timesteps_scale), _min_timesteps(cfg))
        return dataclasses.replace(self, config=dataclasses.replace(cfg, total_timesteps=steps))


def _min_timesteps(cfg: Any) -> int:
    if hasattr(cfg, "num_steps"):
        return cfg.num_envs * cfg.num_steps
    return cfg.learning_starts + 1_000


#: The study tasks; hyper-parameters chosen to learn in well under a minute of CPU each (their
#: names, in this order, are :data:`jaxrl_pim.choices.STUDY_TASKS`; the task lists
#: QUICK_TASKS, FULL_TASKS and UNLEARNED_TASKS live in :mod:`jaxrl_pim.studies.config`).
TASKS: dict[str, StudyTask] = {
    t.name: t
    for t in (
        StudyTask("ppo-cartpole", "ppo", PPOConfig("CartPole-v1", total_timesteps=100_000)),
        StudyTask("dqn-cartpole", "dqn", DQNConfig("CartPole-v1", total_timesteps=50_000)),
        StudyTask("a2c-cartpole", "a2c", A2CConfig("CartPole-v1", total_timesteps=100_000)),
        StudyTask("ppo-acrobot", "ppo", PPOConfig("Acrobot-v1", total_timesteps=100_000)),
        # Acrobot: a 50k-step buffer, a linearly annealed step size and a small final epsilon;
        # without the annealing the final greedy network often repeats one action (-500)
        # although the training episodes of the same run reach about -100. Its action gaps
        # (~0.1 against |Q| ~ 60) are below one int8 step, so int8 flipped the greedy action
        # in ~6-20 % of states and some seeds fell to -500; the advantage-learning target
        # (alpha 0.97) widens the gaps ~33x and int8 then keeps fp32's return
        # (docs/quantization.md). 200k steps so that every seed's fp32 policy is good.
        StudyTask(
            "dqn-acrobot", "dqn",
            DQNConfig("Acrobot-v1", total_timesteps=200_000, buffer_capacity=50_000,
                      batch_size=128, eps_end=0.01, exploration_fraction=0.2,
                      anneal_lr=True, advantage_learning=0.97),
        ),
        # MountainCar: one-step random actions never reach the goal in 200 steps; random
        # actions held for 20 steps do in about 14 % of episodes (explore_hold), observations
        # mapped onto [-1, 1] so the velocity (|v| <= 0.07) is not ignored. Advantage
        # learning (alpha 0.9) for int8 robustness, as for Acrobot.
        StudyTask(
            "dqn-mountaincar", "dqn",
            DQNConfig("MountainCar-v0", total_timesteps=200_000, buffer_capacity=10_000,
                      batch_size=128, train_frequency=2, lr=4e-3, gamma=0.98,
                      target_update_interval=150, exploration_fraction=0.2, eps_end=0.01,
                      anneal_lr=True, normalize_obs=True, explore_hold=20,
                      advantage_learning=0.9),
        ),
        StudyTask(
            "ddpg-pendulum",
            "ddpg",
            DDPGConfig("Pendulum-v1", total_timesteps=10_000, hidden=(64, 64), batch_size=64),
        ),
        StudyTask(
            "ppo-pendulum",
            "ppo",
            PPOConfig("Pendulum-v1", total_timesteps=300_000, num_envs=16, num_steps=128,
                      num_minibatches=32, update_epochs=10, lr=1e-3, gamma=0.95,
                      ent_coef=0.0, anneal_lr=True),
        ),
        # MountainCarContinuous: exploration noise (and the warm-up's uniform actions) held for
        # 20 steps builds the momentum that independent per-step noise never does; a slower
        # actor keeps the tanh output from saturating at a constant full push.
        StudyTask(
            "ddpg-mountaincarcontinuous", "ddpg",
            DDPGConfig("MountainCarContinuous-v0", total_timesteps=50_000, num_envs=2,
                       hidden=(64, 64), batch_size=64, buffer_capacity=50_000,
                       learning_starts=5_000, expl_noise=0.5, noise_hold=20,
                       normalize_obs=True, actor_lr=1e-4),
        ),
    )
}


def task_keys(seed: int, name: str) -> tuple[jax.Array, jax.Array]:
    """``(train_key, eval_key)`` of the task called ``name`` for the user's root ``seed``.

    The name's CRC32 is folded into ``jax.random.key(seed)``: the keys depend on the seed and
    the task's name only, never on the task's position in a list, so every study (PTQ, QAT,
    the gap ablation) trains the same fp32 policies for the same task and seed.
    """
    folded = jax.random.fold_in(jax.random.key(seed), zlib.crc32(name.encode()) & 0x7FFFFFFF)
    k_train, k_eval = jax.random.split(folded)
    return k_train, k_eval


def train_seeds(task: StudyTask, num_seeds: int, key: jax.Array) -> tuple[Any, dict[str, Any]]:
    """Train ``num_seeds`` policies in one vmapped jit; returns ``(state, metrics)``.

    Every leaf of the returned state has a leading seed axis ``[num_seeds, ...]``.
    """
    train = task.module().make_train(task.config)
    return jax.jit(jax.vmap(train))(jax.random.split(key, num_seeds))


def final_train_return(metrics: dict[str, Any], window: int = 10) -> float:
    """Mean over seeds of the mean finished-episode return in the last ``window`` reports."""
    ret = np.asarray(metrics["episode_return"])
    vals = []
    for row in ret.reshape(ret.shape[0], -1):
        row = row[~np.isnan(row)]
        if row.size:
            vals.append(float(row[-window:].mean()))
    return float(np.mean(vals)) if vals else math.nan


def study_task(config: Any, name: str) -> StudyTask:
    """The registered task ``name`` with its training length scaled by ``config``'s
    ``timesteps_scale`` (a :class:`~jaxrl_pim.studies.config.PTQConfig` or
    :class:`~jaxrl_pim.studies.config.QATStudyConfig`)."""
    return TASKS[name].scaled(config.timesteps_scale)


__all__ = [
    "FULL_TASKS",
    "QUICK_TASKS",
    "TASKS",
    "UNLEARNED_TASKS",
    "StudyTask",
    "final_train_return",
    "study_task",
    "task_keys",
    "train_seeds",
]
