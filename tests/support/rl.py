"""The single-agent learning runs of ``tests/rl``: each learner improves clearly over a random
policy in a short run (two seeds, vmapped; ``check_learning``), the progress callback
(``check_progress_callback``) and the registered harder study tasks (``check_registered``).

They all run in one fresh process (:func:`run_checks`, started once per test session by the
``learning_checks`` fixture of ``tests/rl/conftest.py``): one jax import and one process for
all of them, and a crash or hang in XLA:CPU fails these tests, not the suite. Each check
reports separately, so each test still fails on its own assertion.
"""

from __future__ import annotations

import json
import time
import traceback
from collections.abc import Callable, Iterable

import jax
import numpy as np

from jaxrl_pim.quant import fake_quantize
from jaxrl_pim.rl import QATConfig, a2c, ddpg, dqn, ppo
from jaxrl_pim.rl.evaluate import make_evaluate
from tests.support import FAST_COMPILE

# Mean greedy returns of the seed pairs of key(0), key(1), key(2): PPO at 24,000 steps 373,
# 255, 338 (int8 / fp32 0.99 to 1.00); A2C at 40,000 steps 496, 364, 327. DQN at 18,000 steps
# left key(1)'s pair at 63 and DDPG at 3,000 steps key(1)'s at -645, hence their sizes.
CASES = {
    "ppo": (ppo, ppo.PPOConfig("CartPole-v1", total_timesteps=24_000), 150.0),
    # A2C runs with quantization-aware training (8 bits after half of training), so the
    # QAT path of a trainer is exercised too.
    "a2c": (a2c, a2c.A2CConfig("CartPole-v1", total_timesteps=40_000,
                               qat=QATConfig(bits=8, delay_fraction=0.5)), 100.0),
    # (DQN with the advantage-learning target learns in the registered Acrobot and
    # MountainCar checks below, whose settings use it; its target is in tests/rl/test_losses)
    "dqn": (dqn, dqn.DQNConfig("CartPole-v1", total_timesteps=30_000,
                               target_update_interval=100), 80.0),
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


def check_progress_callback() -> None:
    """PPO's progress callback fires up to 101 times, in order, and at the end."""
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


# Random-policy references: Acrobot-v1 -500 (the arm never swings up within 500 steps),
# MountainCar-v0 -200 (never reaches the flag), MountainCarContinuous-v0 about -30 to 0
# (random pushes cost 0.1 a^2 a step and never reach the flag; standing still scores 0).
# Each task trains with its registered settings (jaxrl_pim.studies.TASKS) over a fraction of
# its registered horizon (StudyTask.scaled: the exploration and step-size schedules shrink
# with it); the full horizons are what the studies run. The runs are execution-bound:
# XLA's default optimisation level runs them about twice as fast as FAST_COMPILE, but the
# rounding differs and a seed's outcome with it. Greedy returns of 5 seeds
# (jax.random.key(0..4)) with the options used here, fp32 / int8, 8 episodes each, compiled
# with XLA:CPU's legacy fusion emitters as the test run compiles them (tests.support
# .LEGACY_EMITTERS; the default emitters gave -104 -92 -100 -100 -161 for dqn-acrobot and
# -155 -140 -174 -181 -192 for dqn-mountaincar, fp32):
#   dqn-acrobot 80k of 200k, default level: -104 -83 -90 -175 -100 / -126 -91 -91 -157
#     -121 (100k: -108 -81 -135 -97 -100 / -115 -81 -145 -94 -87; 40k or 60k: some seeds
#     still at -500, key 2 at 60k)
#   dqn-mountaincar 100k of 200k, FAST_COMPILE: -181 -120 -141 -179 -181 / -181 -121 -140
#     -180 -181; the seeds vary (default emitters, 150k: -132 -192 -137 -136 -184; 80k:
#     three at -200), hence -190 here where the full horizon's test had -180 (random play
#     never leaves -200)
#   ddpg-mountaincarcontinuous 15k of 50k, FAST_COMPILE: key 0 90.2 / 90.2 (default
#     emitters: 90.2 91.7 90.3 90.1 93.6, the same in int8; the default level left one seed
#     at -100; 10k: -26 to 20, not yet)
#: task name -> (fraction of the registered horizon, threshold, XLA compiler options)
REGISTERED: dict[str, tuple[float, float, dict]] = {
    "dqn-acrobot": (0.4, -250.0, {}),
    "dqn-mountaincar": (0.5, -190.0, FAST_COMPILE),
    "ddpg-mountaincarcontinuous": (0.3, 80.0, FAST_COMPILE),
}


def check_registered(name: str) -> None:
    """A registered study task learns (fp32 and int8 greedy returns above the threshold)."""
    from jaxrl_pim.studies import TASKS

    scale, threshold, options = REGISTERED[name]
    task = TASKS[name].scaled(scale)
    train = jax.jit(task.module().make_train(task.config), compiler_options=options)
    state, _ = train(jax.random.key(0))
    evaluate = jax.jit(make_evaluate(task.policy(), task.config.env_name, 8))
    fp32 = np.asarray(evaluate(state.params, jax.random.key(1)).returns)
    # the policy keeps its return under int8 post-training quantization (paper quantizer)
    int8 = np.asarray(evaluate(fake_quantize(state.params, 8), jax.random.key(1)).returns)
    assert fp32.shape == int8.shape == (8,)
    assert fp32.mean() > threshold, (name, fp32)
    assert int8.mean() > threshold, (name, int8)


CHECKS: dict[str, Callable[[], None]] = {
    **{algo: (lambda algo=algo: check_learning(algo)) for algo in CASES},
    **{name: (lambda name=name: check_registered(name)) for name in REGISTERED},
    "progress_callback": check_progress_callback,
}
#: marks the result lines of :func:`run_checks` on stdout
RESULT = "LEARNING-CHECK "


def run_checks(names: Iterable[str]) -> None:
    """Run the named :data:`CHECKS` one after the other; print one ``RESULT`` line each (JSON:
    name, ``error``: None or the traceback, seconds of wall time and of this process's CPU
    time)."""
    for name in names:
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            CHECKS[name]()
            error = None
        except Exception:  # noqa: BLE001 - reported to the test of this check
            error = traceback.format_exc()
        print(RESULT + json.dumps({"name": name, "error": error,
                                   "seconds": round(time.perf_counter() - t0, 1),
                                   "cpu_s": round(time.process_time() - c0, 1)}), flush=True)
