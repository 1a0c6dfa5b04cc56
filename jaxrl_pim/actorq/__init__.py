"""jaxrl_pim.actorq: actor-learner RL with quantized actors (ActorQ, reference.md section 3).

The learner trains in full precision; every ``actor_update_period`` actor steps the policy is
quantized (int8 or fp16 through :mod:`jaxrl_pim.quant`, or left fp32), broadcast and acted
with. Two deployments share the same agents, rules and broadcast code:

* single program (:mod:`.single`): ``make_train(config) -> train(key) -> (state, metrics)``,
  actors vmapped on the learner's device, everything jitted;
* multi-process (:mod:`.distributed`): ``run_multiprocess(config)``, actor processes on CPU,
  weights through a shared-memory block and experience through a queue (:mod:`.transport`).

Also here: PTQ / QAT studies (:mod:`.ptq`, :mod:`.qat`). See ``docs/quantization.md``.
"""

from jaxrl_pim.actorq.agent import Agent, EnvInfo, make_env
from jaxrl_pim.actorq.algorithms import make_agent
from jaxrl_pim.actorq.broadcast import actor_params, broadcast_spec, decode, encode
from jaxrl_pim.actorq.config import ActorQConfig, default_config
from jaxrl_pim.actorq.distributed import run_multiprocess
from jaxrl_pim.actorq.energy import EnergyTracker
from jaxrl_pim.actorq.experiment import compare_precisions, run_one
from jaxrl_pim.actorq.metrics import reward_target, speedups, time_to_reward
from jaxrl_pim.actorq.replay import Transition, make_replay
from jaxrl_pim.actorq.rules import categorical_l2_project, n_step_window
from jaxrl_pim.actorq.single import make_system, make_train, run_timed

__all__ = [
    "ActorQConfig",
    "Agent",
    "EnergyTracker",
    "EnvInfo",
    "Transition",
    "actor_params",
    "broadcast_spec",
    "categorical_l2_project",
    "compare_precisions",
    "decode",
    "default_config",
    "encode",
    "make_agent",
    "make_env",
    "make_replay",
    "make_system",
    "make_train",
    "n_step_window",
    "reward_target",
    "run_multiprocess",
    "run_one",
    "run_timed",
    "speedups",
    "time_to_reward",
]
