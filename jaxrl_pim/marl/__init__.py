"""Multi-agent actor-critics (MADDPG, MATD3, MASAC) on the JAX particle worlds.

Modules, in the order a run is built:

* ``config``: :class:`MARLConfig`, validated once (limits shared with the components);
* ``rules``: per-algorithm critic targets, critic / actor losses and Polyak averaging, and the
  :class:`~jaxrl_pim.marl.rules.Algorithm` each algorithm is made of;
* ``networks``: actor / critic MLPs, Gumbel-softmax, per-variable gradient clipping;
* ``rollout``: the train state and the acting phases (init, action selection, env step,
  buffer add); ``learner``: the update-round phases (sample, target Q, critic, actor,
  targets);
* ``trainer``: ``make_train(config) -> train(key) -> (state, metrics)`` and friends;
  ``schedule``: the update conditional that stays a conditional when seeds are vmapped;
* ``seeds``: many seeds in one vmapped program split over devices, with checkpoints, the
  statistics over seeds (mean, standard error, 95 % interval) and their learning curves;
* ``policies`` (:func:`load_policies`: a run's trained actors back from its checkpoint folder,
  with a jitted ``act``; :func:`evaluate`), ``render`` (episodes as animated GIFs);
* ``checkpoint`` (runs in checkpointed segments that resume bit for bit after a kill),
  ``plan`` (counts, memory decided before allocation and a measured duration estimate
  before a run), ``profiler``
  (per-phase timings). The replay components live in :mod:`jaxrl_pim.replay`; the command
  ``jaxrl-pim marl`` is :mod:`jaxrl_pim.cli.marl`.

See ``docs/marl.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jaxrl_pim import lazy
from jaxrl_pim.marl.config import MARLConfig

# Everything else loads jax, so it is imported on first use (PEP 562): ``import
# jaxrl_pim.marl.config`` and ``from jaxrl_pim.marl import MARLConfig`` load no jax.
if TYPE_CHECKING:  # where each name lives: type checkers, the import graph, lazy look-ups
    from jaxrl_pim.marl.policies import Policies, evaluate, load_policies
    from jaxrl_pim.marl.rules import Algorithm, make_algorithm
    from jaxrl_pim.marl.trainer import (
        Phases,
        TrainState,
        make_init,
        make_phases,
        make_schedule,
        make_train,
        make_train_from,
        piece_program,
        random_policy_return,
    )

__all__ = [
    "Algorithm",
    "MARLConfig",
    "Phases",
    "Policies",
    "TrainState",
    "evaluate",
    "load_policies",
    "make_algorithm",
    "make_init",
    "make_phases",
    "make_schedule",
    "make_train",
    "make_train_from",
    "piece_program",
    "random_policy_return",
]

# the names above, and the package's modules, on first use
__getattr__, __dir__ = lazy.attributes(__name__)
