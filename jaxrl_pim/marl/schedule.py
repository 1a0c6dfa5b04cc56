"""A conditional that stays a conditional when seeds are vmapped, and copies nothing there.

``jax.lax.cond`` under ``jax.vmap`` with a *batched* predicate becomes a ``select``: both
branches run for every seed at every call. A trainer continued from stacked states
(``jax.vmap(make_train_from(config, n))(states)``) has per-seed step counters, so its
every-``update_every``-steps predicate is batched and the update round would run at every
environment step. :func:`when` keeps one real conditional in the batched program: it runs the
branch when *any* seed's predicate holds and keeps each seed whose predicate is false as it
was, so its result is exactly ``fn(operand, extra)`` where the seed's predicate holds and
``operand`` elsewhere. Seeds of one run share the step count, so their predicates agree and
the batched program does the work of one seed's schedule, not the work of every step.

With an unbatched predicate (seeds vmapped from keys: the counters start as constants) the
branch is ``jax.vmap(fn)``. With a batched one, how the seeds that are not due are kept
depends on the backend the program is compiled for (``jax.lax.platform_dependent``):

* XLA:CPU: a loop over the seeds, each seed's ``fn`` on its own slice under its own
  conditional, written back in place. Keeping them with a ``select`` over the vmapped
  branch's outputs instead makes XLA copy the whole operand (every seed's parameters and
  optimiser state) at every call, due or not, because the branch can no longer update its
  operand in place. Each seed's round then also works on its own arrays as the seed alone
  does, not on every seed's arrays at once (see ``docs/guide/many-seeds.md``).
* Other backends: ``jax.vmap(fn)`` over all seeds, the seeds that are not due kept with a
  ``select``.
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


def _keep(operand: T, _extra: Any) -> T:
    return operand


def _seed_by_seed(fn: Callable[[T, Any], T], pred: jax.Array, size: int
                  ) -> Callable[[T, Any], T]:
    """The branch of a batched ``pred [size]`` as a loop over the ``size`` seeds: seed ``i``'s
    slice of ``operand`` becomes ``fn`` of its slices if ``pred[i]``, in place."""

    def run(operand: T, extra: Any) -> T:
        def seed(i: jax.Array, o: T) -> T:
            o_i = jax.tree.map(lambda x: x[i], o)

            def due(o_i: T, extra: Any) -> T:
                # seed i's slice of ``extra`` is taken inside the branch, where XLA fuses it
                # into what reads it (a replay buffer's sampled rows): taken outside, it
                # was a copy of the seed's whole buffer at every call
                return fn(o_i, jax.tree.map(lambda x: x[i], extra))

            new = jax.lax.cond(pred[i], due, _keep, o_i, extra)
            return jax.tree.map(lambda x, v: x.at[i].set(v), o, new)

        return jax.lax.fori_loop(0, size, seed, operand)

    return run


def _vmapped(fn: Callable[[T, Any], T], pred: jax.Array) -> Callable[[T, Any], T]:
    """The branch of a batched ``pred`` as ``vmap(fn)`` over all seeds, keeping the seeds
    whose ``pred`` is false with a ``select``."""
    fn_b = jax.vmap(fn)

    def some(o: T, e: Any) -> T:
        new = fn_b(o, e)
        return jax.tree.map(
            lambda n, x: jnp.where(pred.reshape((-1,) + (1,) * (n.ndim - 1)), n, x), new, o)

    return some


def when(pred: jax.Array, fn: Callable[[T, Any], T], operand: T, extra: Any = ()) -> T:
    """``fn(operand, extra)`` if ``pred`` else ``operand``, a conditional also under vmap.

    ``pred`` is a scalar bool; ``fn`` maps ``(operand, extra)`` to a pytree of ``operand``'s
    structure, shapes and dtypes; ``extra`` is read-only input (pass every traced value ``fn``
    reads through ``operand`` or ``extra``, never by closure). Unbatched, this is
    ``jax.lax.cond``. Under ``jax.vmap`` with an unbatched ``pred`` it is ``lax.cond`` over
    the vmapped ``fn``; with a batched ``pred`` it is ``lax.cond(any(pred), ...)`` whose true
    branch runs ``fn`` for the seeds whose ``pred`` holds and keeps ``operand`` for the others:
    seed by seed on XLA:CPU, ``jax.vmap(fn)`` and a ``select`` elsewhere (see the module
    docstring). Each seed's result equals its result alone wherever XLA computes the branch in
    the same order as the single one (seed by seed it is the single computation).
    """

    @custom_vmap
    def run(pred: jax.Array, operand: T, extra: Any) -> T:
        return jax.lax.cond(pred, fn, _keep, operand, extra)

    @run.def_vmap
    def run_batched(axis_size: int, in_batched: Any, pred: jax.Array, operand: T,
                    extra: Any) -> tuple[T, Any]:
        pred_b, op_b, ex_b = in_batched
        operand = _broadcast(operand, op_b, axis_size)
        extra = _broadcast(extra, ex_b, axis_size)
        if not pred_b:
            out = jax.lax.cond(pred, jax.vmap(fn), _keep, operand, extra)
        else:
            by_seed, batched = _seed_by_seed(fn, pred, axis_size), _vmapped(fn, pred)

            def branch(o: T, e: Any) -> T:
                return jax.lax.platform_dependent(o, e, cpu=by_seed, default=batched)

            out = jax.lax.cond(jnp.any(pred), branch, _keep, operand, extra)
        return out, jax.tree.map(lambda _: True, out)

    return run(pred, operand, extra)
