"""What the quantization studies run: their configs (:class:`PTQConfig`, :class:`QATStudyConfig`),
defaults and checks, and the task lists, in a module that imports no jax (nor gymnax, numpy).

``jaxrl-pim ptq`` and ``jaxrl-pim qat`` build their options from these and check them before
the learners are imported (seconds), so a bad option is refused within a second. The task
registry itself (the learners' configs) is :data:`jaxrl_pim.studies.tasks.TASKS`, whose names
are :data:`jaxrl_pim.choices.STUDY_TASKS`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from jaxrl_pim.checks import check_choice, check_float, check_int
from jaxrl_pim.choices import STUDY_TASKS

QUICK_TASKS: tuple[str, ...] = ("ppo-cartpole", "dqn-cartpole", "ddpg-pendulum")
#: Tasks whose fp32 policies do not learn with their settings (a return ratio on them would
#: say nothing about quantization); left out of the full study. Empty since the Acrobot,
#: MountainCar and MountainCarContinuous settings learn (docs/quantization.md).
UNLEARNED_TASKS: tuple[str, ...] = ()
FULL_TASKS: tuple[str, ...] = tuple(t for t in STUDY_TASKS if t not in UNLEARNED_TASKS)

#: Tasks whose policies lose reward under low-bit PTQ (PPO on CartPole keeps its return even at
#: 2 bits, so it cannot show a QAT benefit).
QUICK_QAT_TASKS: tuple[str, ...] = ("ddpg-pendulum",)
FULL_QAT_TASKS: tuple[str, ...] = ("ddpg-pendulum", "dqn-cartpole")

#: Bit widths of the default sweep (paper quantizer; 16 = float16 round trip).
DEFAULT_BITS: tuple[int, ...] = (16, 12, 10, 8, 7, 6, 5, 4, 3, 2)
SCHEMES: tuple[str, ...] = ("paper", "symmetric", "asymmetric")


def check_study_options(tasks: Any, bits: Any, bits_may_be_empty: bool) -> None:
    """Host checks shared by the study configs (ValueError naming the field and value).

    ``tasks`` must be a non-empty tuple of distinct names of
    :data:`~jaxrl_pim.studies.tasks.TASKS` (results are keyed by name); ``bits`` a tuple of
    bit widths in [2, 16], which may be empty only where ``bits_may_be_empty``.
    """
    if not isinstance(tasks, tuple) or not tasks:
        raise ValueError(f"tasks must be a non-empty tuple of names, got {tasks!r}")
    for t in tasks:
        check_choice("task", t, STUDY_TASKS)
    if len(set(tasks)) != len(tasks):
        raise ValueError(f"tasks must not repeat, got {tasks!r}")
    if not isinstance(bits, tuple) or not (bits or bits_may_be_empty):
        kind = "a tuple" if bits_may_be_empty else "a non-empty tuple"
        raise ValueError(f"bits must be {kind} of bit widths, got {bits!r}")
    for b in bits:
        check_int("bits", b, 2, 16)


@dataclasses.dataclass(frozen=True)
class PTQConfig:
    """What the PTQ study (and the action-gap ablation) runs.

    Attributes:
      tasks: names from :data:`jaxrl_pim.studies.TASKS`.
      num_seeds: independently trained policies per task (vmapped).
      eval_episodes: greedy evaluation episodes per seed and format.
      bits: the bit sweep (2-16; for the paper scheme 16 means float16).
      scheme: ``"paper"`` (default), ``"symmetric"`` or ``"asymmetric"``.
      per_channel: one scale per output channel instead of per tensor.
      include_biases: quantize biases too (the paper does).
      timesteps_scale: multiplies every task's training length (e.g. 0.5 for quick runs).
      seed: root PRNG seed; a task's keys depend on it and the task's name
        (:func:`jaxrl_pim.studies.task_keys`), not on its position in ``tasks``.
    """

    tasks: tuple[str, ...] = QUICK_TASKS
    num_seeds: int = 3
    eval_episodes: int = 16
    bits: tuple[int, ...] = DEFAULT_BITS
    scheme: str = "paper"
    per_channel: bool = False
    include_biases: bool = True
    timesteps_scale: float = 1.0
    seed: int = 0

    def __post_init__(self) -> None:
        check_study_options(self.tasks, self.bits, bits_may_be_empty=True)
        check_int("num_seeds", self.num_seeds, 1, 1024)
        check_int("eval_episodes", self.eval_episodes, 1, 100_000)
        check_choice("scheme", self.scheme, SCHEMES)
        check_choice("per_channel", self.per_channel, (False, True))
        check_choice("include_biases", self.include_biases, (False, True))
        check_float("timesteps_scale", self.timesteps_scale, 0.0, 100.0, lo_open=True)
        check_int("seed", self.seed, 0, 2**31 - 1)


@dataclasses.dataclass(frozen=True)
class QATStudyConfig:
    """What the QAT study runs.

    Attributes:
      tasks: names from :data:`jaxrl_pim.studies.TASKS`.
      bits: bit widths to train at (2-16; the paper keeps reward down to 5-6 bits).
      delay_fraction: fraction of training before fake quantization switches on.
      num_seeds: policies per (task, bits), vmapped.
      eval_episodes: greedy evaluation episodes per seed.
      timesteps_scale: multiplies every task's training length.
      seed: root PRNG seed (the fp32, PTQ and QAT runs of a task share training keys, which
        depend on the seed and the task's name: the fp32 policies are the PTQ study's).
    """

    tasks: tuple[str, ...] = QUICK_QAT_TASKS
    bits: tuple[int, ...] = (6, 5, 4, 3, 2)
    delay_fraction: float = 0.5
    num_seeds: int = 3
    eval_episodes: int = 16
    timesteps_scale: float = 1.0
    seed: int = 0

    def __post_init__(self) -> None:
        check_study_options(self.tasks, self.bits, bits_may_be_empty=False)
        check_float("delay_fraction", self.delay_fraction, 0.0, 1.0, hi_open=True)
        check_int("num_seeds", self.num_seeds, 1, 1024)
        check_int("eval_episodes", self.eval_episodes, 1, 100_000)
        check_float("timesteps_scale", self.timesteps_scale, 0.0, 100.0, lo_open=True)
        check_int("seed", self.seed, 0, 2**31 - 1)


__all__ = [
    "DEFAULT_BITS",
    "FULL_QAT_TASKS",
    "FULL_TASKS",
    "QUICK_QAT_TASKS",
    "QUICK_TASKS",
    "SCHEMES",
    "UNLEARNED_TASKS",
    "PTQConfig",
    "QATStudyConfig",
    "check_study_options",
]
