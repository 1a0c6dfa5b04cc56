"""Multi-agent actor-critics (MADDPG, MATD3, MASAC) on the JAX particle worlds.

``maddpg`` holds the config, the phase functions and the jitted trainer
(``make_train(config) -> train(key) -> (state, metrics)``); ``replay`` the buffer layouts and
samplers; ``checkpoint`` save / load of a train state; ``profiler`` the per-phase timings.
See ``docs/marl.md``.
"""

from jaxrl_pim.marl.maddpg import (
    MARLConfig,
    TrainState,
    make_init,
    make_system,
    make_train,
    make_train_from,
    random_policy_return,
)

__all__ = [
    "MARLConfig",
    "TrainState",
    "make_init",
    "make_system",
    "make_train",
    "make_train_from",
    "random_policy_return",
]
