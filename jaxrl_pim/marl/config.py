"""Configuration of a MADDPG / MATD3 / MASAC run, validated once at construction.

Every field is checked exactly once, in field order, against limits shared with the
component that uses it (``replay.check_capacity`` for the buffers and samplers,
``mpe.MAX_AGENTS`` for the worlds), so a config that validates builds and trains; a bad value
raises ``ValueError`` naming the field, the value and the allowed range. Derived sizes
(critic count, predator-prey composition, the teams' names and sizes, update schedule) are
properties, static inside jit.
The module imports no jax: ``jaxrl-pim marl`` reads the defaults before importing it.
"""

from __future__ import annotations

import dataclasses
import math

# jax-free imports only: the command reads this config's defaults before importing jax
from jaxrl_pim import choices
from jaxrl_pim.checks import (
    check_bool,
    check_capacity,
    check_choice,
    check_float,
    check_int,
    check_widths,
)
from jaxrl_pim.choices import JAXMARL_PREFIX, JAXMARL_SUPPORTED, LAYOUTS, SAMPLERS
from jaxrl_pim.envs.mpe import constants as mpe  # MAX_AGENTS, TAG_PRESETS
from jaxrl_pim.envs.mpe.teams import TeamSpec, spread_teams, tag_teams

# the option names live in jaxrl_pim.choices (the command checks them before importing jax)
ALGOS = choices.MARL_ALGOS
ENVS = choices.MARL_ENVS
SAMPLING_MODES = choices.SAMPLING_MODES
MAX_ENVS = 65_536
MAX_EPISODE_LENGTH = 100_000

__all__ = [
    "ALGOS",
    "ENVS",
    "LAYOUTS",
    "SAMPLERS",
    "SAMPLING_MODES",
    "MARLConfig",
]


@dataclasses.dataclass(frozen=True)
class MARLConfig:
    """Configuration of a MADDPG / MATD3 / MASAC run (defaults: the original MADDPG).

    Attributes:
      algo: ``"maddpg"``, ``"matd3"`` or ``"masac"``.
      env: ``"spread"`` (cooperative navigation), ``"tag"`` (predator-prey), or a JaxMARL
        environment ``"jaxmarl:<registered name>"`` (e.g. ``"jaxmarl:MPE_simple_spread_v3"``,
        one of ``envs.jaxmarl_adapter.SUPPORTED``, built with its defaults and wrapped by
        ``envs.jaxmarl_adapter.from_jaxmarl``; needs the ``jaxmarl`` extra; ``num_agents``
        is not used).
      num_agents: spread: N agents (and N landmarks). tag: the number of predators; with
        ``num_prey=None`` it must be a key of ``mpe.TAG_PRESETS`` and the preset gives the
        composition (3 -> 3 predators, 1 prey, 2 obstacles).
      num_prey: tag only: prey G (``None``: from the preset of ``num_agents``).
      num_obstacles: tag only: obstacles L (``None``: the preset's, or ``max(2, num_prey)``).
      num_envs: environments stepped in parallel (vmapped); each step stores ``num_envs``
        transitions. 1 as the original.
      num_episodes: training episodes per env (60,000 in the original).
      episode_length: steps per episode (25).
      sampling_mode: ``"faithful"`` (own indices per agent) or ``"fast"`` (shared indices).
      sampler: ``"uniform"``, ``"neighbor"``, ``"prioritized"`` or ``"info_prioritized"``.
      layout: replay layout, ``"interleaved"`` (one row per time step holding all agents,
        one array per field; the default: the fastest layout end to end at 3, 12 and 24
        agents in ``benchmarks/results/cpu/marl_e2e.json``), ``"per_agent"`` (N ring
        buffers, the original's) or ``"packed"`` (every field of a time step in one row: one
        whole-row gather, the faster standalone round at small N) or ``"compact"`` (the
        interleaved rows storing every observation once: ``next_obs`` read from the same
        env's next step within an episode, episode-final observations kept apart; about half
        the bytes per stored step); the maths is the same.
      buffer_capacity: transitions (time steps) kept per team buffer (1e6), at most
        ``replay.MAX_CAPACITY``.
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
    layout: str = "interleaved"
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
    num_prey: int | None = None
    num_obstacles: int | None = None

    def __post_init__(self) -> None:
        check_choice("algo", self.algo, ALGOS)
        if not (isinstance(self.env, str) and self.env.startswith(JAXMARL_PREFIX)):
            check_choice("env", self.env, ENVS)
        self._check_world()
        check_int("num_envs", self.num_envs, lo=1, hi=MAX_ENVS)
        check_int("num_episodes", self.num_episodes, lo=0)
        check_int("episode_length", self.episode_length, lo=1, hi=MAX_EPISODE_LENGTH)
        check_choice("sampling_mode", self.sampling_mode, SAMPLING_MODES)
        check_choice("sampler", self.sampler, SAMPLERS)
        check_choice("layout", self.layout, LAYOUTS)
        check_capacity(self.buffer_capacity, "buffer_capacity")
        if self.buffer_capacity < self.num_envs:
            raise ValueError(
                f"buffer_capacity ({self.buffer_capacity}) must be >= num_envs "
                f"({self.num_envs}): one vectorised step stores num_envs rows"
            )
        check_int("batch_size", self.batch_size, lo=1, hi=self.buffer_capacity)
        check_int("update_every", self.update_every, lo=1)
        check_int("updates_per_round", self.updates_per_round, lo=1)
        check_int("learning_starts", self.learning_starts, lo=self.batch_size,
                  hi=self.buffer_capacity)
        check_float("lr", self.lr, 0.0, lo_open=True)
        check_float("gamma", self.gamma, 0.0, 1.0)
        check_float("tau", self.tau, 0.0, 1.0, lo_open=True)
        check_float("grad_clip", self.grad_clip, 0.0, lo_open=True)
        check_widths("hidden", self.hidden)
        check_float("logits_reg", self.logits_reg, 0.0)
        check_float("temperature", self.temperature, 0.0, lo_open=True)
        check_int("policy_delay", self.policy_delay, lo=1)
        check_float("target_noise", self.target_noise, 0.0)
        check_float("target_noise_clip", self.target_noise_clip, 0.0)
        check_float("entropy_coef", self.entropy_coef, 0.0)
        check_int("num_refs", self.num_refs, lo=1,
                  hi=self.batch_size if self.sampler == "neighbor" else None)
        if self.sampler == "neighbor" and self.batch_size % self.num_refs:
            raise ValueError(
                f"batch_size ({self.batch_size}) must be divisible by num_refs "
                f"({self.num_refs}) for {self.sampler} sampling"
            )
        check_bool("window", self.window)
        check_float("priority_alpha", self.priority_alpha, 0.0)
        check_float("priority_beta", self.priority_beta, 0.0, 1.0)

    def _check_world(self) -> None:
        """``num_agents``, ``num_prey`` and ``num_obstacles`` (checked together: the tag
        preset rule reads all three)."""
        if self.is_jaxmarl:
            bare = self.env[len(JAXMARL_PREFIX):]
            if bare not in JAXMARL_SUPPORTED:
                raise ValueError(f"env {self.env!r} is not supported; JaxMARL environments: "
                                 + ", ".join(JAXMARL_PREFIX + n for n in JAXMARL_SUPPORTED))
        if self.env == "spread" or self.is_jaxmarl:
            check_int("num_agents", self.num_agents, lo=1, hi=mpe.MAX_AGENTS)
            for name in ("num_prey", "num_obstacles"):
                if getattr(self, name) is not None:
                    raise ValueError(f"{name} applies to env='tag' only; got "
                                     f"{name}={getattr(self, name)!r} with env={self.env!r}")
            return
        if self.num_prey is None:
            check_choice("num_agents (tag preset)", self.num_agents, sorted(mpe.TAG_PRESETS))
            if self.num_obstacles is not None:
                raise ValueError("num_obstacles needs num_prey (give the whole composition, "
                                 "or neither to use a preset)")
            return
        check_int("num_agents (predators)", self.num_agents, lo=1, hi=mpe.MAX_AGENTS)
        check_int("num_prey", self.num_prey, lo=1, hi=mpe.MAX_AGENTS - self.num_agents)
        if self.num_obstacles is not None:
            check_int("num_obstacles", self.num_obstacles, lo=0, hi=mpe.MAX_AGENTS)

    # ------------------------------------------------------------------ derived sizes
    @property
    def is_jaxmarl(self) -> bool:
        """Whether ``env`` names a JaxMARL environment (``"jaxmarl:<name>"``)."""
        return isinstance(self.env, str) and self.env.startswith(JAXMARL_PREFIX)

    @property
    def num_critics(self) -> int:
        """1 for MADDPG, 2 (twin critics) for MATD3 and MASAC (the algorithm's rules say)."""
        from jaxrl_pim.marl.rules import make_algorithm

        return make_algorithm(self).num_critics

    @property
    def steps_per_episode(self) -> int:
        """Env steps per episode (of the vectorised batch)."""
        return self.episode_length

    @property
    def tag_sizes(self) -> tuple[int, int, int]:
        """Predator-prey composition ``(predators, prey, obstacles)`` (tag only)."""
        if self.env != "tag":
            raise ValueError(f"tag_sizes is defined for env='tag', not {self.env!r}")
        if self.num_prey is None:
            return mpe.TAG_PRESETS[self.num_agents]
        obstacles = max(2, self.num_prey) if self.num_obstacles is None else self.num_obstacles
        return self.num_agents, self.num_prey, obstacles

    @property
    def teams(self) -> tuple[TeamSpec, ...]:
        """The world's teams, in its order (``obs[t]``, ``actions[t]``, ``rewards[t]`` and the
        learning curves' team axis follow it): one :class:`~jaxrl_pim.envs.mpe.TeamSpec`
        ``(name, num_agents, obs_dim, action_dim)`` per team, what ``make_env(config)[0].teams``
        holds. spread: ``("agents",)``; tag: ``("predators", "prey")`` of :attr:`tag_sizes`;
        both computed from the fields, without jax, by the rules the scenarios build their
        worlds' teams with (:mod:`jaxrl_pim.envs.mpe.teams`). A JaxMARL env's teams come from
        its agents' spaces, so that env is built (this loads jax and jaxmarl)."""
        if self.is_jaxmarl:
            from jaxrl_pim.envs.jaxmarl_adapter import from_jaxmarl

            return from_jaxmarl(self.env)[0].teams
        if self.env == "spread":
            return spread_teams(self.num_agents)
        return tag_teams(*self.tag_sizes)

    @property
    def total_agents(self) -> int:
        """Agents of every team together."""
        return sum(t.num_agents for t in self.teams)

    @property
    def first_update_step(self) -> int:
        """1-based env step (of the vectorised batch) after which the first update round runs:
        the first multiple of ``update_every`` at which ``learning_starts`` transitions are
        stored (``num_envs`` per step, capped by the buffer capacity)."""
        fill = math.ceil(self.learning_starts / self.num_envs)
        return math.ceil(fill / self.update_every) * self.update_every

    def update_rounds(self, env_steps: int, start_step: int = 0) -> int:
        """Update rounds run by env steps ``start_step + 1 .. start_step + env_steps``."""
        first, u = self.first_update_step, self.update_every
        end = start_step + env_steps
        begin = max(start_step + 1, first)
        if end < begin:
            return 0
        due = end // u - (begin - 1) // u
        return due * self.updates_per_round
