"""The single-agent learning runs of ``tests/rl/test_learning.py``: each learner improves
clearly over a random policy in a short run (two seeds, vmapped). The assertions run in a
fresh process per algorithm (``check_learning``), so this module is imported there too."""

from __future__ import annotations

import jax
import numpy as np

from jaxrl_pim.quant import fake_quantize
from jaxrl_pim.rl import QATConfig, a2c, ddpg, dqn, ppo
from jaxrl_pim.rl.evaluate import make_evaluate
from tests.support import FAST_COMPILE

CASES = {
    "ppo": (ppo, ppo.PPOConfig("CartPole-v1", total_timesteps=40_000), 150.0),
    # A2C runs with quantization-aware training (8 bits after half of training), so the
    # QAT path of a trainer is exercised too.
    "a2c": (a2c, a2c.A2CConfig("CartPole-v1", total_timesteps=60_000,
                               qat=QATConfig(bits=8, delay_fraction=0.5)), 100.0),
    "dqn": (dqn, dqn.DQNConfig("CartPole-v1", total_timesteps=30_000,
                               target_update_interval=100), 80.0),
    # DQN with the advantage-learning target (gap-increasing; used by the Acrobot PTQ task)
    "dqn_al": (dqn, dqn.DQNConfig("CartPole-v1", total_timesteps=30_000,
                                  target_update_interval=100, advantage_learning=0.9), 80.0),
    "ddpg": (ddpg, ddpg.DDPGConfig("Pendulum-v1", total_timesteps=4_000, hidden=(64, 64),
                                   batch_size=64, learning_starts=500), -500.0),
}


def check_learning(algo: str) -> None:
    """The learning assertions for one algorithm (run in a subprocess by the test above)."""
    module, config, threshold = CASES[algo]
    train = jax.jit(jax.vmap(module.make_train(config)), compiler_options=FAST_COMPILE)
    state, metrics = train(jax.random.split(jax.random.key(0), 2))
    leaves = jax.tree.leaves(state.params)
    assert all(leaf.shape[0] == 2 for leaf in leaves)  # one policy per seed
    for v in metrics.values():
        assert v.shape[0] == 2
    evaluate = jax.vmap(make_evaluate(module.make_policy(config), config.env_name, 8),
                        in_axes=(0, None))
    returns = np.asarray(evaluate(state.params, jax.random.key(1)).returns)
    assert returns.shape == (2, 8)
    assert returns.mean() > threshold, f"{algo}: mean greedy return {returns.mean():.1f}"
    # The training curve improves too: the last finished episodes beat the first ones.
    ret = np.asarray(metrics["episode_return"])
    for row in ret:
        row = row[~np.isnan(row)]
        k = max(len(row) // 10, 1)
        assert row[-k:].mean() > row[:k].mean()
    if algo == "ppo":
        # Post-training int8 (paper quantizer) keeps the trained policy's return.
        q_params = jax.vmap(lambda p: fake_quantize(p, 8))(state.params)
        q_returns = np.asarray(evaluate(q_params, jax.random.key(1)).returns)
        assert q_returns.mean() >= 0.9 * returns.mean()
