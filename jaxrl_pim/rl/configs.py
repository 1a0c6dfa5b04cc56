"""The bases of the learners' configs: what every learner, every actor-critic learner and every
off-policy learner has in common.

* :class:`LearnerConfig` (every learner): validation on construction in one ``__post_init__``
  (the environment name, the learner's own hyper-parameters, the network fields ``hidden``,
  ``activation`` and ``qat``). Its subclasses declare ``env_name``, ``total_timesteps`` and
  ``num_envs`` first and the network fields last; their defaults differ per learner, so each
  concrete config states them in its own field list.
* :class:`ActorCriticConfig` (A2C, PPO): the whole field list the two on-policy learners
  share, their rollout checks and ``num_updates``. :class:`~jaxrl_pim.rl.a2c.A2CConfig` sets its
  own rollout shape, step size and ``gae_lambda``; :class:`~jaxrl_pim.rl.ppo.PPOConfig` adds its
  epochs, minibatches, step-size annealing and clipping.
* :class:`OffPolicyConfig` (DQN, DDPG): the replay-size, ``gamma`` and ``normalize_obs`` checks
  and ``num_iterations``; the field lists stay with the two learners, whose defaults (task,
  sizes, widths) all differ.

Every config is a frozen dataclass: hashable, comparable only with configs of its own class,
and rebuilt (and checked again) by :func:`dataclasses.replace`. Errors are ValueErrors naming
the field and the value.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from jaxrl_pim.checks import check_float
from jaxrl_pim.rl import common


@dataclasses.dataclass(frozen=True)
class LearnerConfig:
    """Base of every learner's config (A2C, PPO, DQN, DDPG).

    Subclasses declare the fields ``env_name`` (a gymnax id), ``total_timesteps`` (environment
    steps, all environments together), ``num_envs``, ..., ``hidden`` (layer widths),
    ``activation`` and ``qat`` (:class:`~jaxrl_pim.rl.common.QATConfig` or None), and set
    ``algo`` (the name errors use) and ``discrete`` (True / False: the learner needs discrete /
    continuous actions; None: either).
    """

    algo: ClassVar[str] = "this learner"
    discrete: ClassVar[bool | None] = None

    def __post_init__(self) -> None:
        cfg: Any = self
        common.check_env("env_name", cfg.env_name, discrete=self.discrete, algo=self.algo)
        self.check_hyperparameters()
        common.check_network(cfg)

    def check_hyperparameters(self) -> None:
        """Check the learner's own fields (run between the environment and network checks);
        ValueError naming the field and the value."""


@dataclasses.dataclass(frozen=True)
class ActorCriticConfig(LearnerConfig):
    """The hyper-parameters A2C and PPO share (defaults: PPO's CartPole recipe).

    ``num_updates = total_timesteps // (num_envs * num_steps)`` rollouts of ``num_steps`` in
    each of ``num_envs`` environments; ``lr`` is Adam's step size, ``gae_lambda`` GAE's lambda
    (1 gives n-step returns), ``ent_coef`` / ``vf_coef`` weigh the entropy bonus and the value
    loss, ``max_grad_norm`` clips the global gradient norm.
    """

    env_name: str = "CartPole-v1"
    total_timesteps: int = 100_000
    num_envs: int = 4
    num_steps: int = 128
    lr: float = 2.5e-4
    gamma: float = 0.99
    gae_lambda: float = 0.95
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    hidden: tuple[int, ...] = (64, 64)
    activation: str = "tanh"
    qat: common.QATConfig | None = None

    def check_hyperparameters(self) -> None:
        """The rollout sizes and rates (:func:`~jaxrl_pim.rl.common.check_rollout`)."""
        common.check_rollout(self)

    @property
    def num_updates(self) -> int:
        """Number of rollout + optimisation rounds."""
        return self.total_timesteps // (self.num_envs * self.num_steps)


@dataclasses.dataclass(frozen=True)
class OffPolicyConfig(LearnerConfig):
    """Base of the replay learners' configs (DQN, DDPG).

    Subclasses declare ``env_name``, ``total_timesteps``, ``num_envs``, ``buffer_capacity``,
    ``batch_size``, ``learning_starts`` (in that order), ``gamma``, ``normalize_obs`` and the
    network fields; ``num_iterations = total_timesteps // num_envs`` vectorised steps.
    """

    def check_hyperparameters(self) -> None:
        """Replay sizes (:func:`~jaxrl_pim.rl.common.check_replay_sizes`), ``gamma`` in
        [0, 1] and ``normalize_obs`` (:func:`~jaxrl_pim.rl.common.check_normalize_obs`)."""
        cfg: Any = self
        common.check_replay_sizes(cfg)
        check_float("gamma", cfg.gamma, 0.0, 1.0)
        common.check_normalize_obs(cfg)

    @property
    def num_iterations(self) -> int:
        """Vectorised env steps (each adds ``num_envs`` transitions)."""
        cfg: Any = self
        return cfg.total_timesteps // cfg.num_envs
