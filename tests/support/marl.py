"""JaxMARL in the tests: the tiny ``jaxrl-pim marl`` run on JaxMARL's spread
(``JAXMARL_TINY``) that ``tests/marl/conftest.py`` trains once for the policy and ``marl
evaluate`` tests, and ``JAXMARL_MARKS`` for every test module that uses JaxMARL; and
:func:`train_and_draw`, a training run that also samples a batch from its final state.
"""

from __future__ import annotations

import importlib.util

import pytest

__all__ = ["JAXMARL_ENV", "JAXMARL_GROUP", "JAXMARL_TINY", "JAXMARL_MARKS", "train_and_draw"]

JAXMARL_ENV = "jaxmarl:MPE_simple_spread_v3"
#: ``jaxrl-pim marl`` options of a tiny run on JaxMARL's spread (3 episodes of 2 envs; update
#: rounds every 5 steps from step 8 on). Seed 0.
JAXMARL_TINY = ["marl", "--env", JAXMARL_ENV, "--episodes", "3", "--num-envs", "2",
                "--batch-size", "8", "--capacity", "64", "--learning-starts", "16",
                "--update-every", "5", "--no-progress"]
#: xdist group of the tests that use that run (one worker runs them, the run is trained once)
JAXMARL_GROUP = "marl-jaxmarl-run"


#: Marks of a test that uses JaxMARL: skipped when the 'bench' extra is not installed (found
#: without importing it: the import takes seconds, and collection would pay it on every
#: worker), and run in :data:`JAXMARL_GROUP`, so one worker imports JaxMARL for all of them.
JAXMARL_MARKS = [
    pytest.mark.skipif(importlib.util.find_spec("jaxmarl") is None,
                       reason="the 'bench' extra (jaxmarl) is not installed"),
    pytest.mark.xdist_group(JAXMARL_GROUP),
]


def train_and_draw(cfg, seed: int = 0):
    """Train ``cfg`` from ``PRNGKey(seed)``, then draw one batch from the final state with the
    learner's sampler (one compiled program). Returns ``(state, metrics, idx, w, batch)`` on
    the host."""
    import jax

    from jaxrl_pim.marl.trainer import make_phases, make_train

    sample = make_phases(cfg).learner.sample
    train = make_train(cfg)

    def run(key):
        state, metrics = train(key)
        idx, w, batch, _ = sample(state.buffers, state.sampler, jax.random.fold_in(key, 7))
        return state, metrics, idx, w, batch

    return jax.device_get(jax.jit(run)(jax.random.PRNGKey(seed)))
