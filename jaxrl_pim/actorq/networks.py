"""Deprecated: ActorQ's networks live with every other network in :mod:`jaxrl_pim.rl.networks`.

``QNetwork(hidden_sizes, num_actions)`` -> :func:`jaxrl_pim.rl.networks.q_network`;
``Policy`` -> :class:`jaxrl_pim.rl.networks.D4PGActor`; ``DistributionalCritic`` ->
:class:`jaxrl_pim.rl.networks.DistributionalCritic`. Same parameters for the same key.
"""

from __future__ import annotations

from collections.abc import Sequence

from jaxrl_pim._deprecated import moved_module
from jaxrl_pim.rl.networks import MLP, D4PGActor, DistributionalCritic, q_network

moved_module(__name__, "jaxrl_pim.rl.networks")

Policy = D4PGActor


def QNetwork(hidden_sizes: Sequence[int], num_actions: int) -> MLP:  # noqa: N802
    """Deprecated: :func:`jaxrl_pim.rl.networks.q_network`."""
    return q_network(hidden_sizes, num_actions)


__all__ = ["DistributionalCritic", "Policy", "QNetwork"]
