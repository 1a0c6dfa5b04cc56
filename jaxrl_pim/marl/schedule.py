"""A conditional that stays a conditional when seeds are vmapped.

``jax.lax.cond`` under ``jax.vmap`` with a *batched* predicate becomes a ``select``: both
branches run for every seed at every call. A trainer continued from stacked states
(``jax.vmap(make_train_from(config, n))(states)``) has per-seed step counters, so its
every-``update_every``-steps predicate is batched and the update round would run at every
environment step. :func:`when` keeps one real conditional in the batched program: it runs the
(vmapped) branch when *any* seed's predicate holds and keeps each seed whose predicate is false
as it was, so its result is exactly ``fn(operand, extra)`` where the seed's predicate holds and
``operand`` elsewhere. Seeds of one run share the step count, so their predicates agree and
the batched program does the work of one seed's schedule, not the work of every step.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import jax
import jax.numpy as jnp
from jax.custom_batching import custom_vmap

__all__ = ["when"]

T = TypeVar("T")


def _broadcast(tree: Any, batched: Any, size: int) -> Any:
    return jax.tree.map(
        lambda x, b: x if b else jnp.broadcast_to(x, (size, *jnp.shape(x))), tree, batched)


def when(pred: jax.Array, fn: Callable[[T, Any], T], operand: T, extra: Any = ()) -> T:
    """``fn(operand, extra)`` if ``pred`` else ``operand``, a conditional also under vmap.

    ``pred`` is a scalar bool; ``fn`` maps ``(operand, extra)`` to a pytree of ``operand``'s
    structure, shapes and dtypes; ``extra`` is read-only input (pass every traced value ``fn``
    reads through ``operand`` or ``extra``, never by closure). Unbatched, this is
    ``jax.lax.cond``. Under ``jax.vmap`` with an unbatched ``pred`` it is ``lax.cond`` over the
    vmapped ``fn``; with a batched ``pred`` it is ``lax.cond(any(pred), ...)`` whose true
    branch runs the vmapped ``fn`` and keeps ``operand`` for the seeds whose ``pred`` is false.
    Each seed's result equals its result alone wherever XLA computes the batched ``fn`` in the
    same order as the single one.
    """

    @custom_vmap
    def run(pred: jax.Array, operand: T, extra: Any) -> T:
        return jax.lax.cond(pred, fn, lambda o, _: o, operand, extra)

    @run.def_vmap
    def run_batched(axis_size: int, in_batched: Any, pred: jax.Array, operand: T,
                    extra: Any) -> tuple[T, Any]:
        pred_b, op_b, ex_b = in_batched
        operand = _broadcast(operand, op_b, axis_size)
        extra = _broadcast(extra, ex_b, axis_size)
        fn_b = jax.vmap(fn)
        if not pred_b:
            out = jax.lax.cond(pred, fn_b, lambda o, _: o, operand, extra)
        else:
            def some(o: T, e: Any) -> T:
                new = fn_b(o, e)
                return jax.tree.map(
                    lambda n, x: jnp.where(pred.reshape((-1,) + (1,) * (n.ndim - 1)), n, x),
                    new, o)

            out = jax.lax.cond(jnp.any(pred), some, lambda o, _: o, operand, extra)
        return out, jax.tree.map(lambda _: True, out)

    return run(pred, operand, extra)
