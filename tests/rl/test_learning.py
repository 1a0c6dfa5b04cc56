"""Each learner improves clearly over a random policy in a short run (two seeds, vmapped).

Random-policy references: CartPole-v1 about 22 per episode, Pendulum-v1 about -1200. Final
policies are evaluated greedily with jaxrl_pim.rl.evaluate on 8 episodes per seed. The runs
and their assertions are in ``tests.support.rl``; they run in one fresh process for the
session (the ``learning_checks`` fixture of ``tests/rl/conftest.py``).
"""

from __future__ import annotations

import pytest

from tests.support.rl import CASES

# the tests that share the learning process run on one xdist worker
pytestmark = pytest.mark.xdist_group("rl-learning")


@pytest.mark.slow
def test_progress_callback_fires_up_to_101_times_and_at_the_end(learning_checks):
    learning_checks("progress_callback")


@pytest.mark.slow
@pytest.mark.parametrize("algo", list(CASES))
def test_learns_in_short_run(algo, learning_checks):
    # The learning runs are outside the test process, so a hang or crash in XLA:CPU fails
    # these tests instead of the suite. (These runs used to hang: jax's orthogonal
    # initializer under vmap is a batched LAPACK QR that deadlocks XLA:CPU's thread pool on
    # 2 cores; the networks now use jaxrl_pim.rl.networks.orthogonal, see
    # tests/rl/test_networks.py.)
    learning_checks(algo)
