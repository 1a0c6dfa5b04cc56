"""Pick the actor-learner algorithm named by a config (DQN or D4PG).

Kept apart from :mod:`jaxrl_pim.actorq.agent`, which only defines the interface the
algorithms implement, so imports run one way: interface <- algorithms <- this factory.
"""

from __future__ import annotations

from typing import Any

from jaxrl_pim.actorq.agent import Agent, EnvInfo
from jaxrl_pim.actorq.d4pg import make_d4pg
from jaxrl_pim.actorq.dqn import make_dqn


def make_agent(config: Any, info: EnvInfo) -> Agent:
    """The DQN or D4PG agent of ``config.algo`` for the task ``info``."""
    if config.algo == "dqn":
        return make_dqn(config, info)
    return make_d4pg(config, info)
