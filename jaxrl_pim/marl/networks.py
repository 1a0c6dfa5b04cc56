"""Actor and critic networks, Gumbel-softmax actions and per-leaf gradient clipping.

The original MADDPG uses two 64-unit ReLU layers for both networks: here the library's one MLP
(:class:`jaxrl_pim.rl.networks.MLP` with ReLU and flax's default LeCun-normal
initialisation, built by :func:`mlp`). Actors map one agent's observation ``[..., obs_dim]``
to ``action_dim`` logits; critics map the joint input ``[..., joint_dim]`` (every agent's
observation, then every agent's action vector) to one Q-value. Agents of one team are
stacked: parameters carry a leading agent axis and are applied with ``jax.vmap``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax

from jaxrl_pim.rl import networks as rl_networks


def mlp(hidden: Sequence[int], out_dim: int) -> rl_networks.MLP:
    """The actor / critic network: ``hidden`` ReLU layers, then a linear layer of
    ``out_dim`` outputs; LeCun-normal kernels, zero biases (``rl.networks.MLP`` with
    ``activation="relu"``, ``init_scheme="lecun"``)."""
    return rl_networks.MLP(tuple(hidden), out_dim, "relu", init_scheme="lecun")


def init_stacked(module: nn.Module, key: jax.Array, num: int, in_dim: int):
    """Initialise ``num`` independent parameter sets of ``module`` for inputs ``[in_dim]``.

    Returns a parameter pytree whose leaves have a leading axis of size ``num``. Kernels are
    LeCun-normal (flax's ``Dense`` default: truncated normal, variance ``1 / fan_in``, the
    scheme of :func:`mlp`) drawn per agent, biases zero. One flat random draw per leaf for all
    agents (no ``vmap`` over keys and no rank-3 draws, both slow to compile on CPU).
    """
    if getattr(module, "init_scheme", "lecun") != "lecun":
        raise ValueError(f"init_stacked draws LeCun-normal kernels; got a module with "
                         f"init_scheme={module.init_scheme!r}")
    shapes = jax.eval_shape(module.init, key, jnp.zeros((in_dim,), jnp.float32))
    leaves, treedef = jax.tree.flatten(shapes)
    keys = jax.random.split(key, len(leaves))
    out = []
    for k, leaf in zip(keys, leaves, strict=True):
        shape = (num, *leaf.shape)
        if leaf.ndim >= 2:
            # LeCun normal: truncated N(0, 1) on [-2, 2], rescaled to std sqrt(1 / fan_in).
            std = (1.0 / leaf.shape[-2]) ** 0.5 / 0.87962566103423978
            z = jax.random.truncated_normal(k, -2.0, 2.0, (math.prod(shape),), leaf.dtype)
            out.append((z * std).reshape(shape))
        else:
            out.append(jnp.zeros(shape, leaf.dtype))
    return jax.tree.unflatten(treedef, out)


def gumbel_noise(key: jax.Array, shape: tuple[int, ...]) -> jax.Array:
    """Standard Gumbel noise ``-log(-log(u))``, ``u ~ U(0, 1)``, float32 ``shape``."""
    # Drawn flat and reshaped: XLA:CPU compiles rank-3 random draws very slowly.
    u = jax.random.uniform(key, (math.prod(shape),), minval=1e-10, maxval=1.0)
    return -jnp.log(-jnp.log(u)).reshape(shape)


def relaxed_sample(logits: jax.Array, noise: jax.Array, temperature: float = 1.0) -> jax.Array:
    """``softmax((logits + noise) / temperature)`` over the last axis, given Gumbel noise."""
    return jax.nn.softmax((logits + noise) / temperature, axis=-1)


def gumbel_softmax(key: jax.Array, logits: jax.Array, temperature: float = 1.0) -> jax.Array:
    """Relaxed one-hot sample ``softmax((logits + g) / temperature)``, ``g ~ Gumbel(0, 1)``.

    ``logits``: float ``[..., K]``; returns float ``[..., K]`` on the probability simplex. This
    is the original MADDPG action (``SoftCategoricalPd.sample``), differentiable in ``logits``.
    """
    return relaxed_sample(logits, gumbel_noise(key, logits.shape), temperature)


def clip_by_leaf_norm(max_norm: float) -> optax.GradientTransformation:
    """Clip every gradient leaf by its own L2 norm: ``g * max_norm / max(||g||, max_norm)``.

    This is TensorFlow's ``clip_by_norm`` applied per variable, as in the original MADDPG
    (each layer's kernel and bias are clipped separately), unlike ``optax.clip_by_global_norm``.
    """

    def init_fn(params):
        del params
        return optax.EmptyState()

    def update_fn(updates, state, params=None):
        del params

        def clip(g):
            norm = jnp.sqrt(jnp.sum(jnp.square(g)))
            return g * (max_norm / jnp.maximum(norm, max_norm))

        return jax.tree.map(clip, updates), state

    return optax.GradientTransformation(init_fn, update_fn)


class Networks(NamedTuple):
    """The modules and optimiser of a run: one actor module per team, one critic module
    (every agent's critics share its shape), and the per-variable-clipped Adam."""

    actors: tuple[rl_networks.MLP, ...]
    critic: rl_networks.MLP
    optimizer: optax.GradientTransformation


def make_networks(hidden: Sequence[int], action_dims: Sequence[int], lr: float,
                  grad_clip: float) -> Networks:
    """Actors ``mlp(hidden, action_dim)`` per team, critic ``mlp(hidden, 1)``, and
    ``clip_by_leaf_norm(grad_clip)`` followed by ``adam(lr)``."""
    return Networks(
        actors=tuple(mlp(hidden, a) for a in action_dims),
        critic=mlp(hidden, 1),
        optimizer=optax.chain(clip_by_leaf_norm(grad_clip), optax.adam(lr)),
    )

