"""jaxrl_pim.rl: single-process, fully jitted RL learners on gymnax environments.

Each algorithm module offers a frozen, validated config, ``make_train(config) -> train(key)
-> (state, metrics)`` (pure, jittable, vmappable over keys) and ``make_policy(config) ->
ParametricPolicy`` whose ``apply(state.params, obs)`` gives the action distribution, so
quantized copies of ``state.params`` can be evaluated (:mod:`jaxrl_pim.studies`).

* :mod:`.dqn`: the library's DQN (ring-buffer replay, target network, epsilon-greedy); its
  loss is also ActorQ's DQN learner's.
* :mod:`.ppo`: PPO (clipped surrogate, GAE), categorical or Gaussian policy.
* :mod:`.a2c`: A2C (n-step / GAE advantages), categorical or Gaussian policy.
* :mod:`.actor_critic`: what A2C and PPO share (actor and critic networks, action sampling,
  the rollout, the training state).
* :mod:`.ddpg`: DDPG (Gaussian exploration noise, target nets, Polyak averaging).
* :mod:`.configs`: the configs' bases: ``LearnerConfig`` (every learner: the checks run on
  construction), ``ActorCriticConfig`` (the fields A2C and PPO share) and ``OffPolicyConfig``
  (the replay checks DQN and DDPG share).
* :mod:`.evaluate`: greedy evaluation on any gymnax environment and fp32-vs-quantized policy
  divergences.
* :mod:`.networks`: every network of rl and ActorQ, the ``ParametricPolicy`` interface,
  log-probs, entropies, KLs.

Environments come from :func:`jaxrl_pim.envs.make`; replay from :mod:`jaxrl_pim.replay`.
"""

from types import ModuleType

from jaxrl_pim.rl import a2c, ddpg, dqn, ppo
from jaxrl_pim.rl.a2c import A2CConfig
from jaxrl_pim.rl.common import CONTINUOUS_ENVS, DISCRETE_ENVS, QATConfig
from jaxrl_pim.rl.ddpg import DDPGConfig
from jaxrl_pim.rl.dqn import DQNConfig
from jaxrl_pim.rl.evaluate import EvalRollouts, make_evaluate, policy_divergence
from jaxrl_pim.rl.networks import ParametricPolicy
from jaxrl_pim.rl.ppo import PPOConfig

#: The learner modules by algorithm name (each has ``make_train`` and ``make_policy``).
LEARNERS: dict[str, ModuleType] = {"dqn": dqn, "ppo": ppo, "a2c": a2c, "ddpg": ddpg}

__all__ = [
    "CONTINUOUS_ENVS",
    "DISCRETE_ENVS",
    "LEARNERS",
    "A2CConfig",
    "DDPGConfig",
    "DQNConfig",
    "EvalRollouts",
    "PPOConfig",
    "ParametricPolicy",
    "QATConfig",
    "make_evaluate",
    "policy_divergence",
]
