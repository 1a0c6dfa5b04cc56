"""Learning quality on cooperative navigation (3 agents), against a uniform-random policy.

The issue's criterion: MADDPG beats the uniform-random policy's return in the same
environment by at least 25 %. The random reference is the better of the two random policies
of :func:`jaxrl_pim.marl.trainer.random_policy_return` (Gumbel-softmax of zero logits, and
uniformly random one-hot actions), about -220 per agent and episode (1,024 episodes each;
the MADDPG runs below end 22-36 % above it).
Returns are negative, so "beats by 25 %" means ``R >= R_rand + 0.25 |R_rand|``.

The MADDPG run is the short-but-sufficient setting of ``benchmarks/marl_e2e.py`` part 2
(vectorised envs, one update round per vectorised step, fast shared-index sampling; the
original learning rate, discount, Polyak rate and networks), scaled for a 2-core CPU: 256
envs, batch 128, 200 episodes (4,988 update rounds), two seeds vmapped in one program (the
first two of ``split(PRNGKey(0), 4)``), compiled as a user's program is (XLA's default
optimisation level and default fusion emitters: the test runs in the default-emitters
process). Measured so over eight seeds (``split(PRNGKey(0), 8)``, whose first two are the
test's): 32.4 / 32.7 / 35.2 / 22.5 / 25.9 / 27.8 / 35.5 / 31.6 % above random (mean 30.5 %,
standard deviation about 4.6 %; the means of the four pairs 26.9-33.6 %); the test's pair
lies 7.5 points (about 2.3 of a pair's standard errors) above 25 %. With the legacy fusion
emitters the rest of the suite compiles with, the trajectories differ and the test's pair
ends at 24.2 / 26.4 % (mean 25.3 %: no margin), the next pair at 35.8 / 26.1 %. The
test asks for a mean of 25 % and at least 20 % per seed. (Batch 256 learns about as well per
update round, 26.5-35.2 %, mean 32.7 %, at 1.4 times the cost; an older XLA build gave
27.3-32.8 % there. At 150 episodes batch 128 gives 23.1-31.3 %, mean 28.0 %: too close.)

MASAC (with neighbour sampling) and MATD3 train briefly (16 envs, batch 64, 60 episodes, 1,497
rounds): offline, over four or five seeds each, their last 10 episodes beat the first 10 by
more than 20 % and the random policy by more than 9 %; the tests ask for 10 % and 5 %.
"""

from __future__ import annotations

import dataclasses

import jax
import numpy as np
import pytest

from jaxrl_pim.marl.config import MARLConfig
from jaxrl_pim.marl.trainer import make_phases, make_train, random_policy_return

# execution-bound learning criteria: compiled as a user's program is
pytestmark = pytest.mark.default_compilation

SPREAD3 = MARLConfig(
    env="spread", num_agents=3, num_envs=256, num_episodes=150, update_every=1,
    sampling_mode="fast", buffer_capacity=100_000, batch_size=256, learning_starts=3200,
)
SHORT = dataclasses.replace(SPREAD3, num_envs=16, num_episodes=60, buffer_capacity=10_000,
                            batch_size=64, learning_starts=64)


@pytest.fixture(scope="module")
def random_return() -> float:
    """Per-agent episode return of the better uniform-random policy (4 x 256 episodes each)."""
    key = jax.random.PRNGKey(123)
    gumbel = float(random_policy_return(SPREAD3, key, 4)[0])
    one_hot = float(random_policy_return(SPREAD3, key, 4, one_hot=True)[0])
    assert -240.0 < one_hot < gumbel < -210.0  # the zero-logit relaxed policy is the better
    return max(gumbel, one_hot)


def _train(cfg: MARLConfig, draw: bool = False, seed: int = 0):
    """Train from ``seed``; with ``draw`` also sample one batch from the final state (in the
    same program). Returns ``(state, metrics)`` or ``(state, metrics, idx, w, batch)``."""
    sample = make_phases(cfg).learner.sample
    train = make_train(cfg)

    def run(key):
        state, metrics = train(key)
        if not draw:
            return state, metrics
        idx, w, batch, _ = sample(state.buffers, state.sampler, jax.random.fold_in(key, 7))
        return state, metrics, idx, w, batch

    return jax.device_get(jax.jit(run)(jax.random.PRNGKey(seed)))


def _check_short_run(state, m, random_return):
    assert int(state.num_updates) == 60 * 25 - 3  # from step 4 on (16 rows per step)
    assert np.isfinite(np.asarray(m["critic_loss"])[1:]).all()
    assert np.isfinite(np.asarray(m["actor_loss"])[1:]).all()
    r = np.asarray(m["episode_return"])[:, 0]
    first, last = r[:10].mean(), r[-10:].mean()
    assert last > first + 0.1 * abs(first), (first, last)
    assert last > random_return + 0.05 * abs(random_return), (last, random_return)


@pytest.mark.slow
@pytest.mark.default_emitters  # the margins above are a user's program's (default emitters)
def test_maddpg_beats_uniform_random_by_25_percent(random_return):
    # The criterion is about MADDPG's expected return, so it is checked on the mean over two
    # seeds (vmapped in one program): single seeds of this short run end 22-36 % above random,
    # too close to 25 % for one seed to decide (seed 0 alone gave 25.0 % on one XLA build).
    cfg = dataclasses.replace(SPREAD3, num_episodes=200, batch_size=128)
    keys = jax.random.split(jax.random.PRNGKey(0), 4)[:2]
    state, m = jax.device_get(jax.jit(jax.vmap(make_train(cfg)))(keys))
    r = np.asarray(m["episode_return"])[..., 0]  # [seed, episode]
    # 200 episodes x 25 steps; rounds from step 13 on (256 rows per step, 3,200 needed).
    assert (np.asarray(state.num_updates) == 200 * 25 - 12).all()
    assert np.isfinite(np.asarray(m["critic_loss"])[:, 1:]).all()
    final = r[:, -20:].mean(axis=1)  # the last 10 % of the episodes, per seed
    improvement = (final - random_return) / abs(random_return)
    assert improvement.mean() >= 0.25, (final, random_return, improvement)
    assert improvement.min() >= 0.20, improvement  # no seed failed to learn


@pytest.mark.slow
def test_masac_with_neighbor_sampling_learns(random_return):
    """MASAC (alpha 0.05) trained with locality-aware neighbour sampling (16 references x
    runs of 4 rows); the sampler's draws from the trained state are checked too."""
    cfg = dataclasses.replace(SHORT, algo="masac", sampler="neighbor", num_refs=16)
    state, m, idx, w, batch = _train(cfg, draw=True)
    _check_short_run(state, m, random_return)
    buf = state.buffers[0]  # full ring: 24,000 rows written into 10,000
    size, pos = int(buf.size), int(buf.insert_pos)
    assert size == 10_000 and pos == 24_000 % 10_000
    assert ((idx >= 0) & (idx < size)).all()
    np.testing.assert_array_equal(w, 1.0)
    # Runs consecutive in time order (row k in time order is physical row (pos + k) % size):
    # a run may cross the physical end of the ring but never jumps from newest to oldest.
    chron = ((idx - pos) % size).reshape(16, 4)
    np.testing.assert_array_equal(np.diff(chron, axis=1), 1)
    # The learner's batch is the buffer's data at those rows for every agent (NumPy gather).
    data = buf.data  # the default interleaved layout: [capacity, N, ...]
    for name in ("obs", "action", "reward", "next_obs"):
        want = np.asarray(getattr(data, name))[idx]  # time-major [B, N, ...]
        np.testing.assert_array_equal(getattr(batch[0], name), want, err_msg=name)


@pytest.mark.slow
def test_matd3_short_run_learns(random_return):
    state, m = _train(dataclasses.replace(SHORT, algo="matd3"))
    _check_short_run(state, m, random_return)
