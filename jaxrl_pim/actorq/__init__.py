"""jaxrl_pim.actorq: actor-learner RL with quantized actors (ActorQ).

ActorQ is the actor-learner system of Krishnan, Lam, Chitlangia, Wan, Barth-Maron, Faust and
Janapa Reddi, "QuaRL: Quantization for Fast and Environmentally Sustainable Reinforcement
Learning", TMLR 2022. The learner trains in full precision; every ``actor_update_period``
actor steps the policy is quantized (int8 or fp16 through :mod:`jaxrl_pim.quant`, or left
fp32), broadcast and acted with. A run is an :class:`ActorQDQNConfig` or an
:class:`ActorQD4PGConfig` (each holds its algorithm's rules). Two deployments share the same
agents, rules and broadcast code:

* single program (:mod:`.single`): ``make_train(config) -> train(key) -> (state, metrics)``,
  actors vmapped on the learner's device, everything jitted; ``run_timed`` drives it in
  timed chunks with optional checkpoints and resume;
* distributed (:mod:`.distributed`): ``run_distributed(config, DistributedRun(seed))``, the
  learner here and the actors as Ray actors (:mod:`.ray_pool`: broadcasts through the object
  store, restarts after failures, a local Ray or a cluster) or as local OS processes
  (:mod:`.transport`: a shared-memory block and a queue), each an :class:`.worker.ActorWorker`.

Actors compute in the fastest arithmetic that computes their quantized policy on their device
(``actor_compute="auto"``, the default: :func:`jaxrl_pim.quant.compute.fastest_compute`);
``"native"`` makes int8 actors run int8 matmuls on the fast int8 path
(:mod:`jaxrl_pim.quant.fast_int8`), ``"emulated"`` the same path with the int8 codes multiplied
as float32 values (the same outputs, on the float units), and ``"float32"`` the dequantized
policy.

The building blocks come from the rest of the library: the DQN loss from
:mod:`jaxrl_pim.rl.dqn`, the networks from :mod:`jaxrl_pim.rl.networks`, the replay from
:mod:`jaxrl_pim.replay`, environments from :func:`jaxrl_pim.envs.make`. The PTQ / QAT studies
are :mod:`jaxrl_pim.studies`. The pieces a run is assembled from (agents, rules, broadcast
codecs, replay, transports) are reached through their modules. See ``docs/quantization.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jaxrl_pim import lazy
from jaxrl_pim.actorq.config import (
    ActorQConfig,
    ActorQD4PGConfig,
    ActorQDQNConfig,
    default_config,
)

# Everything else loads jax, so it is imported on first use (PEP 562): ``import
# jaxrl_pim.actorq.config`` and ``from jaxrl_pim.actorq import ActorQDQNConfig`` load no jax.
if TYPE_CHECKING:  # where each name lives: type checkers, the import graph, lazy look-ups
    from jaxrl_pim.actorq.distributed import DistributedRun, run_distributed
    from jaxrl_pim.actorq.energy import EnergyTracker
    from jaxrl_pim.actorq.experiment import compare_precisions, run_one
    from jaxrl_pim.actorq.metrics import speedups, time_to_reward
    from jaxrl_pim.actorq.single import make_system, make_train, run_timed

__all__ = [
    "ActorQConfig",
    "ActorQD4PGConfig",
    "ActorQDQNConfig",
    "DistributedRun",
    "EnergyTracker",
    "compare_precisions",
    "default_config",
    "make_system",
    "make_train",
    "run_distributed",
    "run_one",
    "run_timed",
    "speedups",
    "time_to_reward",
]

# the names above, and the package's modules, on first use
__getattr__, __dir__ = lazy.attributes(__name__)
