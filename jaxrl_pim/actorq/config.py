"""ActorQ configuration: one frozen dataclass per algorithm, each holding its own rules.

A run is an :class:`ActorQDQNConfig` (discrete actions) or an :class:`ActorQD4PGConfig`
(continuous actions). Both extend :class:`ActorQConfig`, the settings every run has (the task,
the actors, the replay and the learner's schedule); each adds only its own fields and carries
the functions that differ between the algorithms -- ``make_agent(info)`` (the learner and actor),
``exploration(env_steps)`` (epsilon, or the Gaussian noise scale) and ``replay_exponents()``
(prioritized or uniform replay) -- so the rest of ActorQ never asks which algorithm it runs.
``algo`` is the algorithm's name (for reports and the command line), not a setting.

The learner always trains in full precision; ``precision`` only chooses how the policy is
broadcast to (and held by) the actors: ``"fp32"`` (no quantization), ``"fp16"`` (float16
round trip) or ``"int8"`` (symmetric per-tensor int8 codes and one float32 scale per tensor).
``actor_compute`` chooses the actors' arithmetic: ``"native"`` (int8 actors run int8 x int8
-> int32 matmuls, fp16 actors float16 matmuls), ``"emulated"`` (int8 actors multiply their
int8 codes as float32 values: the same outputs), ``"float32"`` (dequantize, float32 matmuls)
or ``"auto"`` (the default: the fastest that computes the quantized policy for the device and
the rows per policy call, :func:`jaxrl_pim.quant.compute.fastest_compute`).

Units: ``total_timesteps`` and every ``*_steps`` count are in environment steps summed over
all actors; ``actor_update_period`` is in steps of one actor; ``train_frequency`` in
iterations (one step of every actor environment); ``target_update_interval`` in learner
updates.

The module imports no jax (``jaxrl-pim actorq`` reads the defaults before importing it);
building a config checks a gymnax task name against gymnax's registry, which does.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Self

# jax-free imports only: the command reads these configs' defaults before importing jax
# (the gymnax task check, rl.common.check_env, is imported where a config is built)
from jaxrl_pim import choices
from jaxrl_pim.checks import (
    check_bool,
    check_capacity,
    check_choice,
    check_float,
    check_int,
    check_widths,
)
from jaxrl_pim.envs.names import is_playground_name
from jaxrl_pim.envs.names import parse_playground_name as parse_name

if TYPE_CHECKING:
    import jax

    from jaxrl_pim.actorq.agent import Agent
    from jaxrl_pim.envs.factory import EnvInfo

# the option names live in jaxrl_pim.choices (the command checks them before importing jax)
ALGOS = choices.ACTORQ_ALGOS
PRECISIONS = choices.PRECISIONS
MODES = choices.MODES
COMPUTES = choices.COMPUTES
# The tasks with tuned defaults (and tests); any gymnax task with flat observations and
# discrete (DQN) or continuous (D4PG) actions is accepted.
DQN_ENVS = choices.DQN_ENVS
D4PG_ENVS = choices.D4PG_ENVS
# D4PG also accepts MuJoCo Playground DM Control Suite tasks, "playground/<EnvName>" with an
# optional "@<max_steps>" time limit (default: the task's episode_length, 1000 steps); the
# name itself is checked when the environment is built (jaxrl_pim.envs.playground).

# Pendulum's discounted returns reach about -1,600; scaling rewards by 0.1 keeps them inside
# the paper's [-150, 150] critic support. The paper's Adam 1e-4 needs far more learner updates
# than a CPU budget allows: with 4 actors and 20k environment steps (about 4,750 updates) it
# was still at -1,150 (random play: -1,200 to -1,500). A critic at 1e-3 learns in that budget;
# the policy steps at 3e-4: at 1e-3 its tanh output saturated at one torque in every state in
# one seed of three (-1,500; the critic's gradient no longer reaches it), at 1e-4 it learns
# more slowly (docs/quantization.md, "D4PG on Pendulum").
_ENV_DEFAULTS: dict[str, dict[str, Any]] = {
    "Pendulum-v1": dict(reward_scale=0.1, lr=1e-3, policy_lr=3e-4),
    "MountainCar-v0": dict(eps_start=1.0, eps_decay_steps=20_000),
}


@dataclass(frozen=True)
class ActorQConfig:
    """Settings every ActorQ run has (validated at construction). A run is built from one of
    the algorithm configs, :class:`ActorQDQNConfig` or :class:`ActorQD4PGConfig`.

    Attributes:
      algo: the algorithm's name, ``"dqn"`` or ``"d4pg"`` (set by the class, not a setting).
      env_name: gymnax task with flat observations, discrete actions for DQN (tuned:
        CartPole-v1, Acrobot-v1, MountainCar-v0), continuous for D4PG (tuned: Pendulum-v1),
        or for D4PG a MuJoCo Playground task ``"playground/<EnvName>[@<max_steps>]"``, e.g.
        ``"playground/CartpoleBalance"`` (actions in [-1, 1]; needs the playground extra).
      precision: actor-side policy precision and broadcast format: fp32, fp16 or int8.
      actor_compute: ``"native"``: actors compute in the precision they hold (int8 kernels
        run int8 matmuls with int8 activations and int32 accumulation, float16 kernels half
        matmuls); ``"emulated"``: int8 actors multiply the same int8 codes as float32 values
        (the same outputs, on the float units; float16 actors dequantize); ``"float32"``:
        actors dequantize and compute in float32 (int8 weights, float activations);
        ``"auto"``: the fastest arithmetic that computes the actors' quantized policy where
        they run (``actorq.broadcast.resolve_compute``).
      num_actors: K actors; in single-program mode a vmap axis, in the distributed modes the
        number of actors (Ray actors or OS processes).
      envs_per_actor: environments each actor steps in lock-step (a vmap axis).
      actor_update_period: actor steps between two policy refreshes (pull + unpack + load).
      total_timesteps: environment steps over all actors and environments.
      hidden: policy MLP widths (DQN: the Q network).
      lr: Adam step size (DQN's Q network; D4PG's critic, and its policy unless
        ``policy_lr`` is set).
      buffer_capacity: replay capacity in transitions.
      batch_size: learner minibatch.
      learning_starts: environment steps collected before the first learner update.
      train_frequency: a learner update after every ``train_frequency`` iterations (one
        iteration = one step of every actor environment).
      gamma: discount.
      n_step: n of the n-step returns (DQN 1, D4PG 5).
      target_update_interval: learner updates between hard target copies.
      max_grad_norm: global gradient-norm clip.
      reward_scale: rewards are multiplied by this before learning (returns are reported
        unscaled).
      return_window: completed episodes averaged for the reported training return.
      eval_episodes: episodes of the greedy (noise-free) quantized policy at evaluation.
    """

    algo: str = field(default="", init=False)
    env_name: str = "CartPole-v1"
    precision: str = "fp32"
    actor_compute: str = "auto"
    num_actors: int = 4
    envs_per_actor: int = 1
    actor_update_period: int = 100
    total_timesteps: int = 20_000
    hidden: tuple[int, ...] = (64, 64)
    lr: float = 1e-3
    buffer_capacity: int = 50_000
    batch_size: int = 64
    learning_starts: int = 1_000
    train_frequency: int = 1
    gamma: float = 0.99
    n_step: int = 1
    target_update_interval: int = 100
    max_grad_norm: float = 10.0
    reward_scale: float = 1.0
    return_window: int = 10
    eval_episodes: int = 10

    # whether the algorithm acts in discrete action spaces (else continuous)
    discrete: ClassVar[bool] = True
    # whether replay is sampled by priority (per-algorithm; an ActorQDQNConfig field)
    prioritized: ClassVar[bool] = False

    def __post_init__(self) -> None:
        if type(self) is ActorQConfig:
            raise TypeError("ActorQConfig holds the settings every run shares; build an "
                            "ActorQDQNConfig or an ActorQD4PGConfig (or default_config(algo, "
                            "env_name))")
        if not isinstance(self.env_name, str):
            raise ValueError(f"env_name must be a task name (str), got {self.env_name!r}")
        if is_playground_name(self.env_name):
            if self.discrete:
                raise ValueError(
                    f"env_name {self.env_name!r} is a MuJoCo Playground task with continuous "
                    f"actions; it needs D4PG (ActorQD4PGConfig, algo='d4pg'), not "
                    f"{self.algo!r}"
                )
            parse_name(self.env_name)
        else:
            from jaxrl_pim.rl.common import check_env  # gymnax's registry (loads jax)

            check_env("env_name", self.env_name, discrete=self.discrete,
                      algo=f"ActorQ's {self.algo.upper()}")
        check_choice("precision", self.precision, PRECISIONS)
        check_choice("actor_compute", self.actor_compute, COMPUTES)
        check_int("num_actors", self.num_actors, 1, 4096)
        check_int("envs_per_actor", self.envs_per_actor, 1, 4096)
        check_int("actor_update_period", self.actor_update_period, 1, 10**7)
        check_int("total_timesteps", self.total_timesteps, 1, 10**10)
        check_widths("hidden", self.hidden)
        check_float("lr", self.lr, 0.0, 1.0, lo_open=True)
        check_int("batch_size", self.batch_size, 1, 1 << 16)
        check_capacity(self.buffer_capacity, "buffer_capacity")
        check_int("buffer_capacity", self.buffer_capacity, lo=self.batch_size)  # one batch fits
        check_int("learning_starts", self.learning_starts, 0, 10**10)
        check_int("train_frequency", self.train_frequency, 1, 10**6)
        check_float("gamma", self.gamma, 0.0, 1.0)
        check_int("n_step", self.n_step, 1, 1000)
        check_int("target_update_interval", self.target_update_interval, 1, 10**7)
        check_float("max_grad_norm", self.max_grad_norm, 0.0, None, lo_open=True)
        check_float("reward_scale", self.reward_scale, 0.0, None, lo_open=True)
        check_int("return_window", self.return_window, 1, 10**6)
        check_int("eval_episodes", self.eval_episodes, 1, 10**5)
        if self.total_timesteps < self.steps_per_iteration:
            raise ValueError(
                f"total_timesteps ({self.total_timesteps}) must be >= num_actors * "
                f"envs_per_actor ({self.steps_per_iteration})"
            )

    # Derived sizes (static inside jit).
    @property
    def steps_per_iteration(self) -> int:
        """Environment steps per iteration: one step of every actor environment."""
        return self.num_actors * self.envs_per_actor

    @property
    def num_iterations(self) -> int:
        """Iterations of the single-program loop (``total_timesteps`` rounded down)."""
        return self.total_timesteps // self.steps_per_iteration

    def replace(self, **changes: Any) -> Self:
        """A validated copy with ``changes`` applied."""
        return dataclasses.replace(self, **changes)

    # The algorithm's rules (each algorithm config defines them).
    def make_agent(self, info: EnvInfo) -> Agent:
        """The learner and actor functions of this algorithm for the task ``info``."""
        raise NotImplementedError

    def exploration(self, env_steps: jax.Array) -> jax.Array:
        """The actors' exploration parameter (float32 scalar) after ``env_steps`` steps."""
        raise NotImplementedError

    def replay_exponents(self) -> tuple[float, float, float]:
        """``(alpha, beta, eps)`` of the replay: priority exponent, importance-weight
        exponent, priority floor; ``alpha = beta = 0`` samples uniformly."""
        return 0.0, 0.0, 1e-6


@dataclass(frozen=True)
class ActorQDQNConfig(ActorQConfig):
    """ActorQ DQN (discrete actions): an epsilon-greedy Q-network actor and a DQN learner
    with prioritized replay (:mod:`jaxrl_pim.actorq.dqn`). The shared settings are those of
    :class:`ActorQConfig`; the defaults are the paper's, scaled for a CPU (Adam 1e-3, batch
    64, 1-step returns, gradient clip 10).

    Attributes:
      prioritized: proportional prioritized replay instead of uniform.
      priority_alpha / priority_beta / priority_eps: priority exponent, importance-weight
        exponent, floor.
      eps_end: final (and acting) epsilon of the actors.
      eps_start / eps_decay_steps: linear decay from ``eps_start`` to ``eps_end`` over that
        many environment steps (0 = constant ``eps_end``).
    """

    algo: str = field(default="dqn", init=False)
    prioritized: bool = True  # type: ignore[misc]  # a setting of DQN, fixed for D4PG
    priority_alpha: float = 0.6
    priority_beta: float = 0.2
    priority_eps: float = 1e-6
    eps_end: float = 0.05
    eps_start: float = 1.0
    eps_decay_steps: int = 5_000

    def __post_init__(self) -> None:
        super().__post_init__()
        check_bool("prioritized", self.prioritized)
        check_float("priority_alpha", self.priority_alpha, 0.0, 1.0)
        check_float("priority_beta", self.priority_beta, 0.0, 1.0)
        check_float("priority_eps", self.priority_eps, 0.0, 1.0, lo_open=True)
        check_float("eps_end", self.eps_end, 0.0, 1.0)
        check_float("eps_start", self.eps_start, 0.0, 1.0)
        check_int("eps_decay_steps", self.eps_decay_steps, 0, 10**10)

    def make_agent(self, info: EnvInfo) -> Agent:
        """:func:`jaxrl_pim.actorq.dqn.make_dqn` for the task ``info``."""
        from jaxrl_pim.actorq.dqn import make_dqn

        return make_dqn(self, info)

    def exploration(self, env_steps: jax.Array) -> jax.Array:
        """Epsilon, decayed linearly from ``eps_start`` to ``eps_end`` over
        ``eps_decay_steps`` environment steps (constant ``eps_end`` when that is 0)."""
        import jax.numpy as jnp

        if self.eps_decay_steps == 0:
            return jnp.asarray(self.eps_end, jnp.float32)
        frac = jnp.clip(env_steps / self.eps_decay_steps, 0.0, 1.0)
        return (self.eps_start + frac * (self.eps_end - self.eps_start)).astype(jnp.float32)

    def replay_exponents(self) -> tuple[float, float, float]:
        """``(priority_alpha, priority_beta, priority_eps)``, or uniform ``(0, 0,
        priority_eps)`` without ``prioritized``."""
        if self.prioritized:
            return self.priority_alpha, self.priority_beta, self.priority_eps
        return 0.0, 0.0, self.priority_eps


@dataclass(frozen=True)
class ActorQD4PGConfig(ActorQConfig):
    """ActorQ D4PG (continuous actions): a Gaussian-noise policy actor and a distributional
    critic learner with uniform replay (:mod:`jaxrl_pim.actorq.d4pg`). The shared settings
    are those of :class:`ActorQConfig`, with D4PG's defaults (Adam 1e-4, batch 256, 5-step
    returns, gradient clip 40, 256 x 256 policy).

    Attributes:
      critic_hidden: critic widths (layer-norm MLP).
      policy_lr: policy step size; ``None`` = ``lr``.
      num_atoms / v_min / v_max: categorical critic support.
      expl_noise: Gaussian action noise, in units of the action half-range.
    """

    algo: str = field(default="d4pg", init=False)
    env_name: str = "Pendulum-v1"
    hidden: tuple[int, ...] = (256, 256)
    lr: float = 1e-4
    batch_size: int = 256
    n_step: int = 5
    max_grad_norm: float = 40.0
    critic_hidden: tuple[int, ...] = (256, 256, 128)
    policy_lr: float | None = None
    num_atoms: int = 51
    v_min: float = -150.0
    v_max: float = 150.0
    expl_noise: float = 0.3

    discrete: ClassVar[bool] = False

    def __post_init__(self) -> None:
        super().__post_init__()
        check_widths("critic_hidden", self.critic_hidden)
        if self.policy_lr is not None:
            check_float("policy_lr", self.policy_lr, 0.0, 1.0, lo_open=True)
        check_int("num_atoms", self.num_atoms, 2, 4096)
        check_float("v_min", self.v_min)
        check_float("v_max", self.v_max, self.v_min, None, lo_open=True)
        check_float("expl_noise", self.expl_noise, 0.0, 10.0)

    def make_agent(self, info: EnvInfo) -> Agent:
        """:func:`jaxrl_pim.actorq.d4pg.make_d4pg` for the task ``info``."""
        from jaxrl_pim.actorq.d4pg import make_d4pg

        return make_d4pg(self, info)

    def exploration(self, env_steps: jax.Array) -> jax.Array:
        """The Gaussian noise scale ``expl_noise`` (constant)."""
        import jax.numpy as jnp

        del env_steps
        return jnp.asarray(self.expl_noise, jnp.float32)


CONFIGS: dict[str, type[ActorQConfig]] = {"dqn": ActorQDQNConfig, "d4pg": ActorQD4PGConfig}
"""The algorithm config of each name in ``ALGOS``."""


def default_config(
    algo: str = "dqn", env_name: str | None = None, **overrides: Any
) -> ActorQConfig:
    """The config of ``algo`` (``CONFIGS[algo]``, whose defaults are the algorithm's) with the
    task's defaults, then ``overrides``.

    DQN: Adam 1e-3, batch 64, prioritized replay (alpha 0.6, beta 0.2), 1-step returns.
    D4PG: Adam 1e-4, batch 256, uniform replay, 5-step returns, gradient clip 40.
    Task defaults then apply (Pendulum-v1: rewards x 0.1, critic Adam 1e-3, policy 3e-4;
    MountainCar-v0: epsilon decayed over 20,000 steps). An override that is not a setting of
    ``algo`` is a ValueError naming it.
    """
    check_choice("algo", algo, ALGOS)
    cls = CONFIGS[algo]
    names = {f.name for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(overrides) - names)
    if unknown:
        raise ValueError(f"{unknown[0]} is not a setting of {algo.upper()} ({cls.__name__}); "
                         f"its settings: {', '.join(sorted(names))}")
    kwargs: dict[str, Any] = {} if env_name is None else {"env_name": env_name}
    task = _ENV_DEFAULTS.get(env_name or cls.env_name, {})
    kwargs.update({k: v for k, v in task.items() if k in names})
    kwargs.update(overrides)
    return cls(**kwargs)
