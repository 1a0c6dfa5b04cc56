"""Jittable action and observation spaces of the library's own worlds (gymnax 1.0's API).

The worlds of :mod:`jaxrl_pim.envs` (Taxi, CliffWalking, the particle worlds, the Playground
adapter) describe their spaces with these classes; they have the attributes and methods code
written for gymnax's spaces reads (``n``, ``shape``, ``dtype``, ``low``, ``high``, ``spaces``,
``sample(key)``, ``contains(x)``), so :func:`jaxrl_pim.envs.describe` and a user's gymnax code
treat both alike. They live here rather than being imported from gymnax because importing any
part of gymnax runs its package ``__init__``, which loads every gymnax environment and with
them seaborn, matplotlib and scipy.stats (seconds of CPU in every process that imports it);
the multi-agent and tabular commands need none of it. ``sample`` draws what gymnax's spaces
draw from the same key.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp


class Space:
    """A set of values with ``sample(key)`` and ``contains(x)`` (both jittable)."""

    def sample(self, key: jax.Array) -> Any:
        """One uniformly drawn element of the space."""
        raise NotImplementedError

    def contains(self, x: Any) -> jax.Array:
        """Boolean scalar: is ``x`` in the space."""
        raise NotImplementedError


class Discrete(Space):
    """The integers ``0 .. n - 1`` (scalar, ``dtype`` int32 by default)."""

    def __init__(self, num_categories: int, *, dtype: Any = jnp.int32) -> None:
        if int(num_categories) < 0:
            raise ValueError(f"Discrete needs num_categories >= 0, got {num_categories}")
        self.n = int(num_categories)
        self.shape: tuple[int, ...] = ()
        self.dtype = jnp.dtype(dtype)

    def __repr__(self) -> str:
        return f"Discrete({self.n}, dtype={self.dtype.name})"

    def sample(self, key: jax.Array) -> jax.Array:
        return jax.random.randint(key, self.shape, 0, self.n, dtype=self.dtype)

    def contains(self, x: Any) -> jax.Array:
        x = jnp.asarray(x, dtype=self.dtype)
        return jnp.logical_and(x >= 0, x < self.n)


class Box(Space):
    """Arrays of ``shape`` with every element in ``[low, high]`` (bounds broadcast)."""

    def __init__(self, low: Any, high: Any, shape: tuple[int, ...], dtype: Any = jnp.float32
                 ) -> None:
        self.low = low
        self.high = high
        self.shape = tuple(shape)
        self.dtype = dtype

    def __repr__(self) -> str:
        return f"Box(low={self.low}, high={self.high}, shape={self.shape}, dtype={self.dtype})"

    def sample(self, key: jax.Array) -> jax.Array:
        return jax.random.uniform(key, self.shape, minval=self.low,
                                  maxval=self.high).astype(self.dtype)

    def contains(self, x: Any) -> jax.Array:
        return jnp.logical_and(jnp.all(x >= self.low), jnp.all(x <= self.high))


class Tuple(Space):
    """The product of ``spaces``; elements are tuples."""

    def __init__(self, spaces: Sequence[Space]) -> None:
        self.spaces = tuple(spaces)
        self.num_spaces = len(self.spaces)

    def __repr__(self) -> str:
        return f"Tuple({self.spaces!r})"

    def sample(self, key: jax.Array) -> tuple[Any, ...]:
        keys = jax.random.split(key, self.num_spaces)
        return tuple(s.sample(k) for s, k in zip(self.spaces, keys, strict=True))

    def contains(self, x: Any) -> jax.Array:
        inside = [jnp.asarray(s.contains(v)) for s, v in zip(self.spaces, x, strict=True)]
        return jnp.all(jnp.stack(inside)) if inside else jnp.asarray(True)


class Dict(Space):
    """Named subspaces; elements are dicts (``contains`` also takes objects with those
    attributes, e.g. an environment state)."""

    def __init__(self, spaces: Mapping[str, Space]) -> None:
        self.spaces = dict(spaces)
        self.num_spaces = len(self.spaces)

    def __repr__(self) -> str:
        return f"Dict({self.spaces!r})"

    def sample(self, key: jax.Array) -> dict[str, Any]:
        keys = jax.random.split(key, self.num_spaces)
        return {name: s.sample(k) for (name, s), k in zip(self.spaces.items(), keys,
                                                          strict=True)}

    def contains(self, x: Any) -> jax.Array:
        get = x.__getitem__ if isinstance(x, Mapping) else lambda name: getattr(x, name)
        inside = [jnp.asarray(s.contains(get(name))) for name, s in self.spaces.items()]
        return jnp.all(jnp.stack(inside)) if inside else jnp.asarray(True)


__all__ = ["Box", "Dict", "Discrete", "Space", "Tuple"]
