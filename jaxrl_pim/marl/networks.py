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


def softmax(x: jax.Array) -> jax.Array:
    """Softmax over the last axis of float ``x [..., K]``: ``exp(x - max) * (1 / sum)``.

    The same function as ``jax.nn.softmax``, written with the reciprocal of the sum (the
    gradient then divides nowhere by a broadcast value). XLA rewrites ``a / broadcast(s)`` as
    ``a * broadcast(1 / s)`` in a program compiled for one device but not in one split over
    several (:mod:`jaxrl_pim.marl.seeds`), so with ``jax.nn.softmax`` a group of seeds on 1
    and on 8 devices differs in the last bits; written this way both compile to the same
    arithmetic."""
    e = jnp.exp(x - jax.lax.stop_gradient(x.max(axis=-1, keepdims=True)))
    return e * jnp.reciprocal(e.sum(axis=-1, keepdims=True))


def relaxed_sample(logits: jax.Array, noise: jax.Array, temperature: float = 1.0) -> jax.Array:
    """``softmax((logits + noise) / temperature)`` over the last axis, given Gumbel noise
    (:func:`softmax`; ``temperature`` is a Python float: no division at 1.0)."""
    x = logits + noise
    return softmax(x if temperature == 1.0 else x * (1.0 / temperature))


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


def adam(lr: float) -> optax.GradientTransformation:
    """``optax.adam(lr)`` (default ``b1 = 0.9``, ``b2 = 0.999``, ``eps = 1e-8``; the same state
    tree) with the bias corrections applied as products with ``1 / (1 - b**t)``.

    optax divides each moment by ``1 - b**t``, a per-seed scalar under ``vmap``; XLA turns
    that division into a product with its reciprocal in a program for one device but not in
    one split over several devices, so the two would differ in the last bits. Written as the
    product, the group of seeds gives the same bits on any number of devices
    (``tests/marl/test_seeds.py``)."""
    b1, b2, eps = 0.9, 0.999, 1e-8

    def init_fn(params):
        zeros = jax.tree.map(jnp.zeros_like, params)  # immutable: both moments start here
        return optax.ScaleByAdamState(count=jnp.zeros([], jnp.int32), mu=zeros, nu=zeros)

    def update_fn(updates, state, params=None):
        del params
        mu = jax.tree.map(lambda g, m: b1 * m + (1 - b1) * g, updates, state.mu)
        nu = jax.tree.map(lambda g, v: b2 * v + (1 - b2) * jnp.square(g), updates, state.nu)
        count = optax.safe_increment(state.count)
        c1 = 1 / (1 - b1 ** count.astype(jnp.float32))
        c2 = 1 / (1 - b2 ** count.astype(jnp.float32))
        out = jax.tree.map(lambda m, v: (m * c1) / (jnp.sqrt(v * c2) + eps), mu, nu)
        return out, optax.ScaleByAdamState(count=count, mu=mu, nu=nu)

    return optax.chain(optax.GradientTransformation(init_fn, update_fn),
                       optax.scale_by_learning_rate(lr))


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
        optimizer=optax.chain(clip_by_leaf_norm(grad_clip), adam(lr)),
    )

