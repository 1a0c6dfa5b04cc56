"""Flax policies and critics for the single-process learners, and the ``Policy`` interface.

A :class:`Policy` is what the PTQ / QAT studies (and ActorQ actors) need from a trained agent:
``apply(params, obs) -> dist`` maps policy parameters and observations ``[..., obs_dim]`` to the
parameters of the action distribution, and ``greedy(dist) -> action`` picks the evaluation
action. ``kind`` says how to read ``dist``:

* ``"categorical"``: logits ``[..., num_actions]`` (for DQN, the Q-values read as
  Boltzmann logits at temperature 1);
* ``"gaussian"``: ``(mean, log_std)``, each ``[..., action_dim]``;
* ``"deterministic"``: the action itself ``[..., action_dim]`` (DDPG); the studies pair it with
  the Gaussian exploration noise std (``Policy.noise_std``, in action units).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

_ACT = {"tanh": nn.tanh, "relu": nn.relu}


class Policy(NamedTuple):
    """Pure policy functions over a parameter pytree (see module docstring)."""

    kind: str
    apply: Callable[[Any, jax.Array], Any]
    greedy: Callable[[Any], jax.Array]
    noise_std: float = 0.0


class MLP(nn.Module):
    """Dense torso ``hidden`` with ``activation`` and a linear head of width ``out``.

    ``out_scale`` sets the orthogonal init scale of the head (0.01 for policy logits, 1 for
    values), as in the common PPO recipe.
    """

    hidden: Sequence[int]
    out: int
    activation: str = "tanh"
    out_scale: float = 1.0

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        act = _ACT[self.activation]
        for width in self.hidden:
            x = act(nn.Dense(width, kernel_init=nn.initializers.orthogonal(np.sqrt(2)))(x))
        return nn.Dense(self.out, kernel_init=nn.initializers.orthogonal(self.out_scale))(x)


class GaussianActor(nn.Module):
    """Gaussian policy head: state-dependent mean, state-independent ``log_std`` parameter."""

    hidden: Sequence[int]
    action_dim: int
    activation: str = "tanh"

    @nn.compact
    def __call__(self, x: jax.Array) -> tuple[jax.Array, jax.Array]:
        mean = MLP(self.hidden, self.action_dim, self.activation, 0.01)(x)
        log_std = self.param("log_std", nn.initializers.zeros, (self.action_dim,))
        return mean, jnp.broadcast_to(log_std, mean.shape)


class DeterministicActor(nn.Module):
    """DDPG actor: ``low + (tanh(mlp(x)) + 1) / 2 * (high - low)``, ``[..., action_dim]``."""

    hidden: Sequence[int]
    action_dim: int
    low: float
    high: float
    activation: str = "relu"

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        raw = MLP(self.hidden, self.action_dim, self.activation, 0.01)(x)
        return self.low + (jnp.tanh(raw) + 1.0) * 0.5 * (self.high - self.low)


class QCritic(nn.Module):
    """DDPG critic ``Q(s, a)``: MLP over ``concat(obs, action)``; returns ``[...]``."""

    hidden: Sequence[int]
    activation: str = "relu"

    @nn.compact
    def __call__(self, obs: jax.Array, action: jax.Array) -> jax.Array:
        x = jnp.concatenate([obs, action], axis=-1)
        return MLP(self.hidden, 1, self.activation, 1.0)(x)[..., 0]


def categorical_log_prob(logits: jax.Array, action: jax.Array) -> jax.Array:
    """``log pi(action)`` for logits ``[..., A]`` and integer actions ``[...]``."""
    logp = jax.nn.log_softmax(logits)
    return jnp.take_along_axis(logp, action[..., None].astype(jnp.int32), axis=-1)[..., 0]


def categorical_entropy(logits: jax.Array) -> jax.Array:
    """Entropy (nats) of the categorical with ``logits`` ``[..., A]``; returns ``[...]``."""
    logp = jax.nn.log_softmax(logits)
    return -jnp.sum(jnp.exp(logp) * logp, axis=-1)


def gaussian_log_prob(mean: jax.Array, log_std: jax.Array, action: jax.Array) -> jax.Array:
    """Diagonal Gaussian log density summed over the last axis; returns ``[...]``."""
    z = (action - mean) * jnp.exp(-log_std)
    return jnp.sum(-0.5 * z**2 - log_std - 0.5 * jnp.log(2 * jnp.pi), axis=-1)


def gaussian_entropy(log_std: jax.Array) -> jax.Array:
    """Entropy (nats) of a diagonal Gaussian, summed over the last axis."""
    return jnp.sum(log_std + 0.5 * jnp.log(2 * jnp.pi * jnp.e), axis=-1)


def categorical_kl(p_logits: jax.Array, q_logits: jax.Array) -> jax.Array:
    """``KL(p || q)`` (nats) between categoricals given by logits ``[..., A]``; ``[...]``."""
    logp = jax.nn.log_softmax(p_logits)
    logq = jax.nn.log_softmax(q_logits)
    return jnp.sum(jnp.exp(logp) * (logp - logq), axis=-1)


def gaussian_kl(
    p_mean: jax.Array, p_log_std: jax.Array, q_mean: jax.Array, q_log_std: jax.Array
) -> jax.Array:
    """``KL(p || q)`` (nats) between diagonal Gaussians, summed over the last axis."""
    var_p = jnp.exp(2 * p_log_std)
    var_q = jnp.exp(2 * q_log_std)
    kl = q_log_std - p_log_std + (var_p + (p_mean - q_mean) ** 2) / (2 * var_q) - 0.5
    return jnp.sum(kl, axis=-1)
