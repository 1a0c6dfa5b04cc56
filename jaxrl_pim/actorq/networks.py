"""Flax networks of the ActorQ agents.

* ``QNetwork``: ReLU MLP, ``[..., obs_dim] -> [..., num_actions]`` Q-values (DQN).
* ``Policy``: ReLU MLP with a tanh head, ``[..., obs_dim] -> [..., action_dim]`` in [-1, 1]
  (D4PG; scaled to the action bounds by the agent).
* ``DistributionalCritic``: layer-norm MLP on ``concat(obs, action)`` with a categorical
  head, ``-> [..., num_atoms]`` logits (D4PG).
"""

from __future__ import annotations

from collections.abc import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp


class QNetwork(nn.Module):
    """Q-value MLP."""

    hidden_sizes: Sequence[int]
    num_actions: int

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        x = obs
        for h in self.hidden_sizes:
            x = nn.relu(nn.Dense(h)(x))
        return nn.Dense(self.num_actions)(x)


class Policy(nn.Module):
    """Deterministic policy MLP with tanh output in [-1, 1]."""

    hidden_sizes: Sequence[int]
    action_dim: int

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        x = obs
        for h in self.hidden_sizes:
            x = nn.relu(nn.Dense(h)(x))
        x = nn.Dense(self.action_dim, kernel_init=nn.initializers.variance_scaling(
            1e-4, "fan_in", "uniform"))(x)
        return jnp.tanh(x)


class DistributionalCritic(nn.Module):
    """Layer-norm MLP critic with a ``num_atoms`` categorical head (logits)."""

    hidden_sizes: Sequence[int]
    num_atoms: int

    @nn.compact
    def __call__(self, obs: jax.Array, action: jax.Array) -> jax.Array:
        x = jnp.concatenate([obs, action], axis=-1)
        x = nn.Dense(self.hidden_sizes[0])(x)
        x = jnp.tanh(nn.LayerNorm()(x))
        for h in self.hidden_sizes[1:]:
            x = nn.elu(nn.Dense(h)(x))
        return nn.Dense(self.num_atoms)(x)
