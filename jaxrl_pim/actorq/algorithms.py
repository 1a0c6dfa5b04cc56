"""The agent of a run's config: each algorithm config
(:class:`~jaxrl_pim.actorq.config.ActorQDQNConfig`,
:class:`~jaxrl_pim.actorq.config.ActorQD4PGConfig`) builds its own (``config.make_agent``).

Kept apart from :mod:`jaxrl_pim.actorq.agent`, which only defines the interface the
algorithms implement.
"""

from __future__ import annotations

from jaxrl_pim.actorq.agent import Agent, EnvInfo
from jaxrl_pim.actorq.config import ActorQConfig


def make_agent(config: ActorQConfig, info: EnvInfo) -> Agent:
    """The agent of ``config``'s algorithm for the task ``info`` (``config.make_agent``)."""
    return config.make_agent(info)
