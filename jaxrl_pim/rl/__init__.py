"""jaxrl_pim.rl: single-process, fully jitted RL learners on gymnax environments.

Each algorithm module offers a frozen, validated config, ``make_train(config) -> train(key)
-> (state, metrics)`` (pure, jittable, vmappable over keys) and ``make_policy(config) ->
Policy`` whose ``apply(state.params, obs)`` gives the action distribution, so quantized
copies of ``state.params`` can be evaluated (:mod:`jaxrl_pim.actorq.ptq`).

* :mod:`.dqn`: DQN (replay buffer in JAX arrays, target network, epsilon-greedy).
* :mod:`.ppo`: PPO (clipped surrogate, GAE), categorical or Gaussian policy.
* :mod:`.a2c`: A2C (n-step / GAE advantages), categorical or Gaussian policy.
* :mod:`.ddpg`: DDPG (Gaussian exploration noise, target nets, Polyak averaging).
* :mod:`.evaluate`: greedy evaluation and fp32-vs-quantized policy divergences.
* :mod:`.networks`: flax modules, the ``Policy`` interface, log-probs, entropies, KLs.
"""

from jaxrl_pim.rl.a2c import A2CConfig
from jaxrl_pim.rl.common import CONTINUOUS_ENVS, DISCRETE_ENVS, QATConfig
from jaxrl_pim.rl.ddpg import DDPGConfig
from jaxrl_pim.rl.dqn import DQNConfig
from jaxrl_pim.rl.evaluate import EvalResult, make_evaluate, policy_divergence
from jaxrl_pim.rl.networks import Policy
from jaxrl_pim.rl.ppo import PPOConfig

ALGORITHMS: dict[str, str] = {
    "dqn": "jaxrl_pim.rl.dqn",
    "ppo": "jaxrl_pim.rl.ppo",
    "a2c": "jaxrl_pim.rl.a2c",
    "ddpg": "jaxrl_pim.rl.ddpg",
}

__all__ = [
    "ALGORITHMS",
    "CONTINUOUS_ENVS",
    "DISCRETE_ENVS",
    "A2CConfig",
    "DDPGConfig",
    "DQNConfig",
    "EvalResult",
    "PPOConfig",
    "Policy",
    "QATConfig",
    "make_evaluate",
    "policy_divergence",
]
