"""Every learner's config, with the bases they share: one module of hyper-parameters and
their checks, as ``marl.config``, ``actorq.config`` and ``tabular.config`` are for the other
families (the learner modules ``a2c``, ``ppo``, ``dqn`` and ``ddpg`` hold the algorithms and
re-export their config).

* :class:`LearnerConfig` (every learner): validation on construction in one ``__post_init__``
  (the environment name, the learner's own hyper-parameters, the network fields ``hidden``,
  ``activation`` and ``qat``). Its subclasses declare ``env_name``, ``total_timesteps`` and
  ``num_envs`` first and the network fields last; their defaults differ per learner, so each
  concrete config states them in its own field list.
* :class:`ActorCriticConfig` (A2C, PPO): the whole field list the two on-policy learners
  share, their rollout checks and ``num_updates``. :class:`A2CConfig` sets its own rollout
  shape, step size and ``gae_lambda``; :class:`PPOConfig` adds its epochs, minibatches,
  step-size annealing and clipping.
* :class:`OffPolicyConfig` (DQN, DDPG): the replay-size, ``gamma`` and ``normalize_obs`` checks
  and ``num_iterations``; :class:`DQNConfig` and :class:`DDPGConfig` state their own field
  lists, whose defaults (task, sizes, widths) all differ.

Every config is a frozen dataclass: hashable, comparable only with configs of its own class,
and rebuilt (and checked again) by :func:`dataclasses.replace`. Errors are ValueErrors naming
the field and the value.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from jaxrl_pim.checks import check_bool, check_float, check_int
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


@dataclasses.dataclass(frozen=True)
class A2CConfig(ActorCriticConfig):
    """A2C hyper-parameters (the fields of :class:`~jaxrl_pim.rl.configs.ActorCriticConfig`,
    with A2C's short rollouts in more environments, a larger step size and n-step returns);
    ``num_updates = total_timesteps // (num_envs * num_steps)``."""

    algo: ClassVar[str] = "A2C"

    num_envs: int = 16
    num_steps: int = 8
    lr: float = 1e-3
    gae_lambda: float = 1.0


@dataclasses.dataclass(frozen=True)
class PPOConfig(ActorCriticConfig):
    """PPO hyper-parameters (defaults: the usual CartPole recipe): the fields of
    :class:`~jaxrl_pim.rl.configs.ActorCriticConfig`, then ``update_epochs``,
    ``num_minibatches``, ``anneal_lr`` (step size decayed linearly to 0) and ``clip_eps``.

    Derived sizes: ``num_updates = total_timesteps // (num_envs * num_steps)`` rollouts, each
    followed by ``update_epochs`` passes of ``num_minibatches`` minibatches.
    """

    algo: ClassVar[str] = "PPO"

    update_epochs: int = 4
    num_minibatches: int = 4
    anneal_lr: bool = True
    clip_eps: float = 0.2

    def check_hyperparameters(self) -> None:
        """The shared rollout checks, then PPO's epochs, minibatches, annealing and clipping."""
        super().check_hyperparameters()
        check_int("update_epochs", self.update_epochs, 1, 1000)
        check_int("num_minibatches", self.num_minibatches, 1, 65536)
        if (self.num_envs * self.num_steps) % self.num_minibatches:
            raise ValueError(
                f"num_minibatches ({self.num_minibatches}) must divide num_envs * num_steps "
                f"({self.num_envs * self.num_steps})"
            )
        check_bool("anneal_lr", self.anneal_lr)
        check_float("clip_eps", self.clip_eps, 0.0, 10.0, lo_open=True)

    @property
    def minibatch_size(self) -> int:
        """Transitions per minibatch."""
        return self.num_envs * self.num_steps // self.num_minibatches


@dataclasses.dataclass(frozen=True)
class DQNConfig(OffPolicyConfig):
    """DQN hyper-parameters; ``num_iterations = total_timesteps // num_envs``."""

    algo: ClassVar[str] = "DQN"
    discrete: ClassVar[bool | None] = True

    env_name: str = "CartPole-v1"
    total_timesteps: int = 50_000
    num_envs: int = 4
    buffer_capacity: int = 10_000
    batch_size: int = 64
    learning_starts: int = 1_000
    train_frequency: int = 1
    target_update_interval: int = 250
    lr: float = 5e-4
    gamma: float = 0.99
    eps_start: float = 1.0
    eps_end: float = 0.05
    exploration_fraction: float = 0.3
    max_grad_norm: float = 10.0
    anneal_lr: bool = False
    normalize_obs: bool = False
    explore_hold: int = 1
    advantage_learning: float = 0.0
    hidden: tuple[int, ...] = (64, 64)
    activation: str = "relu"
    qat: common.QATConfig | None = None

    def check_hyperparameters(self) -> None:
        """The shared replay checks, then DQN's update schedule, exploration and target."""
        super().check_hyperparameters()
        check_int("train_frequency", self.train_frequency, 1)
        check_int("target_update_interval", self.target_update_interval, 1)
        check_float("lr", self.lr, 0.0, 1.0, lo_open=True)
        check_float("eps_start", self.eps_start, 0.0, 1.0)
        check_float("eps_end", self.eps_end, 0.0, self.eps_start)
        check_float("exploration_fraction", self.exploration_fraction, 0.0, 1.0, lo_open=True)
        check_float("max_grad_norm", self.max_grad_norm, 0.0, lo_open=True)
        check_int("explore_hold", self.explore_hold, 1, 10_000)
        check_float("advantage_learning", self.advantage_learning, 0.0, 1.0, hi_open=True)
        check_bool("anneal_lr", self.anneal_lr)


@dataclasses.dataclass(frozen=True)
class DDPGConfig(OffPolicyConfig):
    """DDPG hyper-parameters; ``num_iterations = total_timesteps // num_envs``."""

    algo: ClassVar[str] = "DDPG"
    discrete: ClassVar[bool | None] = False

    env_name: str = "Pendulum-v1"
    total_timesteps: int = 20_000
    num_envs: int = 1
    buffer_capacity: int = 20_000
    batch_size: int = 128
    learning_starts: int = 1_000
    actor_lr: float = 1e-3
    critic_lr: float = 1e-3
    gamma: float = 0.99
    tau: float = 0.005
    expl_noise: float = 0.1
    noise_hold: int = 1
    normalize_obs: bool = False
    hidden: tuple[int, ...] = (128, 128)
    activation: str = "relu"
    qat: common.QATConfig | None = None

    def check_hyperparameters(self) -> None:
        """The shared replay checks, then DDPG's step sizes, Polyak rate and noise."""
        super().check_hyperparameters()
        check_float("actor_lr", self.actor_lr, 0.0, 1.0, lo_open=True)
        check_float("critic_lr", self.critic_lr, 0.0, 1.0, lo_open=True)
        check_float("tau", self.tau, 0.0, 1.0, lo_open=True)
        check_float("expl_noise", self.expl_noise, 0.0, 10.0, lo_open=True)
        check_int("noise_hold", self.noise_hold, 1, 10_000)
