"""Each learner improves clearly over a random policy in a short run (two seeds, vmapped).

Random-policy references: CartPole-v1 about 22 per episode, Pendulum-v1 about -1200. Final
policies are evaluated greedily with jaxrl_pim.rl.evaluate on 8 episodes per seed.
"""

from __future__ import annotations

import pytest

from tests.support import run_with_devices
from tests.support.rl import CASES

CALLBACK_CODE = """
import jax
from jaxrl_pim.rl import ppo
config = ppo.PPOConfig("CartPole-v1", total_timesteps=4_096)
seen = []
train = jax.jit(ppo.make_train(config, callback=lambda s, t, m: seen.append((int(s), int(t)))))
_, metrics = train(jax.random.key(0))
jax.effects_barrier()
total = seen[0][1]
assert total == len(metrics["episode_return"]), (total, len(metrics["episode_return"]))
assert seen[-1] == (total, total) and 1 <= len(seen) <= 101, seen
assert [s for s, _ in seen] == sorted(s for s, _ in seen)
print("ok", len(seen))
"""


@pytest.mark.slow
def test_progress_callback_fires_up_to_101_times_and_at_the_end():
    # Runs in its own process, like the learning runs below.
    out = run_with_devices(CALLBACK_CODE, n_devices=1, timeout=300)
    assert out.strip().splitlines()[-1].startswith("ok")


@pytest.mark.slow
@pytest.mark.parametrize("algo", list(CASES))
def test_learns_in_short_run(algo):
    # Each learning run gets a fresh process, so a hang or crash in XLA:CPU fails one test
    # instead of the suite. (These runs used to hang: jax's orthogonal initializer under vmap
    # is a batched LAPACK QR that deadlocks XLA:CPU's thread pool on 2 cores; the networks now
    # use jaxrl_pim.rl.networks.orthogonal, see tests/rl/test_networks.py.)
    code = ("from tests.support.rl import check_learning\n"
            f"check_learning({algo!r})\nprint('ok')")
    out = run_with_devices(code, n_devices=1, timeout=500)
    assert out.strip().splitlines()[-1] == "ok"
