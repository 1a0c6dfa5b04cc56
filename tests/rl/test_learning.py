"""The single-agent trainers vmapped over seeds, and PPO's progress callback.

Whether each learner *learns* (greedy returns far above a random policy's after a whole
run) is a criterion of ``benchmarks/learning.py``: those runs take minutes, so the suite
checks the committed results of that script instead (``tests/benchmarks/test_learning.py``:
every criterion passed, on the library's present code). Here the trainers run briefly, two
seeds in one vmapped program, and their outputs are checked for shape, independence and
bookkeeping.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

from jaxrl_pim.rl import QATConfig, a2c, ddpg, dqn, ppo
from tests.support import FAST_COMPILE

CONFIGS = {
    "ppo": (ppo, ppo.PPOConfig("CartPole-v1", total_timesteps=1_024)),
    "a2c": (a2c, a2c.A2CConfig("CartPole-v1", total_timesteps=1_024,
                               qat=QATConfig(bits=8, delay_fraction=0.5))),
    "dqn": (dqn, dqn.DQNConfig("CartPole-v1", total_timesteps=400, learning_starts=100,
                               batch_size=32, target_update_interval=50)),
    "ddpg": (ddpg, ddpg.DDPGConfig("Pendulum-v1", total_timesteps=300, hidden=(16, 16),
                                   batch_size=32, learning_starts=100)),
}


@pytest.mark.parametrize("algo", list(CONFIGS))
def test_trainer_vmapped_over_two_seeds(algo):
    module, config = CONFIGS[algo]
    train = jax.jit(jax.vmap(module.make_train(config)), compiler_options=FAST_COMPILE)
    state, metrics = train(jax.random.split(jax.random.key(0), 2))
    leaves = jax.tree.leaves(state.params)
    assert all(leaf.shape[0] == 2 for leaf in leaves)  # one policy per seed
    assert any(not np.allclose(leaf[0], leaf[1]) for leaf in leaves)  # independent seeds
    for name, v in metrics.items():
        assert v.shape[0] == 2, name
    ret = np.asarray(metrics["episode_return"])
    assert np.isfinite(ret[~np.isnan(ret)]).all() and (~np.isnan(ret)).sum() >= 2


def test_progress_callback_fires_up_to_101_times_and_at_the_end():
    config = ppo.PPOConfig("CartPole-v1", total_timesteps=4_096)
    seen = []
    train = jax.jit(ppo.make_train(config,
                                   callback=lambda s, t, m: seen.append((int(s), int(t)))),
                    compiler_options=FAST_COMPILE)
    _, metrics = train(jax.random.key(0))
    jax.effects_barrier()
    total = seen[0][1]
    assert total == len(metrics["episode_return"]), (total, len(metrics["episode_return"]))
    assert seen[-1] == (total, total) and 1 <= len(seen) <= 101, seen
    assert [s for s, _ in seen] == sorted(s for s, _ in seen)
