"""Sum tree (and max tree) over a flat JAX array, for proportional prioritised sampling.

A tree over ``capacity`` leaves is one float32 array of length ``2 * P`` where ``P`` is the
smallest power of two >= ``capacity``. Node 1 is the root, node ``i`` has children ``2i`` and
``2i + 1``, and leaf ``j`` (buffer row ``j``) lives at node ``P + j``; node 0 and the padding
leaves ``capacity .. P-1`` stay 0. Internal nodes hold ``combine(left, right)``: the sum for a
sum tree, the maximum for a max tree.

Everything here is pure and jittable. ``set_leaves`` updates B leaves and then recomputes the
``log2(P)`` levels of ancestors with one vectorised scatter per level (O(B log P) work);
``find_prefix_sum`` descends the tree for B targets at once (one gather per level). Both
loop over levels with ``lax.fori_loop`` so compile time does not grow with the depth.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax import Array


def tree_leaves(capacity: int) -> int:
    """Number of leaf slots ``P``: the smallest power of two >= ``capacity`` (at least 1)."""
    return 1 << max(int(capacity) - 1, 0).bit_length()


def tree_depth(capacity: int) -> int:
    """Number of levels between the root and the leaves, ``log2(P)``."""
    return tree_leaves(capacity).bit_length() - 1


def init_tree(capacity: int) -> Array:
    """A tree of zeros: float32 ``[2 * P]``."""
    return jnp.zeros((2 * tree_leaves(capacity),), jnp.float32)


def set_leaves(
    tree: Array,
    indices: Array,
    values: Array,
    combine: Callable[[Array, Array], Array] = jnp.add,
) -> Array:
    """Set leaves ``indices`` (int ``[B]``) to ``values`` (float ``[B]``) and fix ancestors.

    Duplicate indices are resolved deterministically: the LAST occurrence in ``indices`` wins
    (as if the updates were applied one after the other). ``combine`` is ``jnp.add`` for a sum
    tree and ``jnp.maximum`` for a max tree. Indices must lie in ``[0, capacity)``.
    """
    num_leaves = tree.shape[0] // 2
    depth = num_leaves.bit_length() - 1
    indices = jnp.asarray(indices, jnp.int32).reshape(-1)
    values = jnp.asarray(values, jnp.float32).reshape(-1)
    # Keep only the last occurrence of each index: stable sort keeps equal keys in input order.
    order = jnp.argsort(indices, stable=True)
    sorted_idx = indices[order]
    last_sorted = jnp.concatenate([sorted_idx[1:] != sorted_idx[:-1], jnp.ones((1,), bool)])
    is_last = jnp.zeros_like(last_sorted).at[order].set(last_sorted)
    target = jnp.where(is_last, num_leaves + indices, tree.shape[0])  # out of range -> dropped
    tree = tree.at[target].set(values, mode="drop")
    def level(_, carry):
        # Every duplicate parent is written with the same value (same children), so the
        # scatter is deterministic.
        tree, node = carry
        node = node // 2
        return tree.at[node].set(combine(tree[2 * node], tree[2 * node + 1])), node

    # a loop, not a Python unroll: one level's ops compiled once (compile time flat in depth)
    tree, _ = jax.lax.fori_loop(0, depth, level, (tree, num_leaves + indices))
    return tree


def find_prefix_sum(tree: Array, targets: Array) -> Array:
    """Leaf index ``j`` for each target mass ``u`` (float ``[B]``, ``0 <= u <= total``).

    Returns int32 ``[B]``: the leaf whose cumulative-sum interval ``[c_{j-1}, c_j)`` holds
    ``u``. The descent never enters a zero-mass subtree, so (for total > 0) the result always
    has positive priority even when rounding pushes ``u`` to or past the total.
    """
    num_leaves = tree.shape[0] // 2
    depth = num_leaves.bit_length() - 1
    u = jnp.asarray(targets, jnp.float32)

    def level(_, carry):
        u, node = carry
        left = tree[2 * node]
        right = tree[2 * node + 1]
        go_right = (u >= left) & (right > 0)
        return jnp.where(go_right, u - left, u), 2 * node + go_right.astype(jnp.int32)

    _, node = jax.lax.fori_loop(0, depth, level, (u, jnp.ones(u.shape, jnp.int32)))
    return node - num_leaves


def build(values: Array, combine: Callable[[Array, Array], Array] = jnp.add) -> Array:
    """A whole tree from all leaf values at once (float ``[capacity]``), bottom-up in O(P).

    Same result as :func:`set_leaves` on every row of a zero tree, without the per-level
    scatters; padding leaves are 0.
    """
    values = jnp.asarray(values, jnp.float32).reshape(-1)
    num_leaves = tree_leaves(values.shape[0])
    level = jnp.zeros((num_leaves,), jnp.float32).at[: values.shape[0]].set(values)
    levels = [level]
    while level.shape[0] > 1:
        level = combine(level[0::2], level[1::2])
        levels.append(level)
    # Node layout: [unused, root, level 1 (2 nodes), ..., leaves (P nodes)].
    return jnp.concatenate([jnp.zeros((1,), jnp.float32), *reversed(levels)])


def leaf_values(tree: Array, capacity: int) -> Array:
    """The ``capacity`` leaf values, float32 ``[capacity]``."""
    num_leaves = tree.shape[0] // 2
    return tree[num_leaves : num_leaves + capacity]
