"""One driver for long runs: train in segments, save a checkpoint after each, resume.

Every trainer of the package continues from a state: ``train_from(state, n) -> (state,
outputs)`` runs ``n`` more units of work (tabular: sync rounds; MARL: episodes; ActorQ:
iterations of whole chunks) and is a pure function of the state, so a run cut into segments
ends where one uninterrupted run ends. :func:`run_segments` drives such a function from the
host: segments end at multiples of the checkpoint period ``every`` and at the run's end
(so a run and its resumption run the same segments), and after each segment the run is
saved as checkpoint ``<units done>`` of a :class:`~jaxrl_pim.checkpoint.Checkpoints` folder.
:func:`restore_latest` is the other half: it refuses a folder that already holds
checkpoints unless the run resumes, and otherwise reads the newest one.

What a checkpoint must match is :func:`fingerprint` (the config as JSON values, minus the
fields that may change on resume, plus what else identifies the run: seed, data, layout);
how often a run is saved by default is :func:`default_every` (about a tenth of the run).

Example (any trainer; here a counter)::

    def train_from(state, n):
        return state + n, {"seen": list(range(state, state + n))}

    with Checkpoints(folder, fingerprint=fingerprint(config, seed=0)) as ckpt:
        start = restore_latest(ckpt, lambda step: 0, resume=True)
        state, done = (0, 0) if start is None else (start.tree, start.step)
        result = run_segments(train_from, state, Plan(done, 100, every=10), ckpt)
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

import numpy as np

from jaxrl_pim.checks import check_int

__all__ = [
    "CHECKPOINTS_PER_RUN",
    "Finished",
    "Plan",
    "Restored",
    "default_every",
    "fingerprint",
    "restore_latest",
    "run_segments",
]

CHECKPOINTS_PER_RUN = 10
"""A run without an explicit period is saved about this many times (and at its end)."""


def default_every(total: int, minimum: int = 1) -> int:
    """Units between checkpoints when none is given: ``ceil(total / 10)``, at least
    ``minimum`` (in the run's units: rounds, episodes, environment steps)."""
    total = check_int("total", total, lo=0)
    return max(check_int("minimum", minimum, lo=1), -(-total // CHECKPOINTS_PER_RUN))


def fingerprint(config: Any, *, exclude: Sequence[str] = (), key: Any = None,
                **identity: Any) -> dict[str, Any]:
    """What a checkpoint of a run must match to be resumed, as JSON values.

    ``{"config": <config's fields without exclude>, **identity}``, plus ``"key"`` (the raw
    data of a PRNG key, typed or legacy) when ``key`` is given. ``config`` is a dataclass;
    ``exclude`` names its fields that may change between a run and its resumption (e.g. the
    total length); ``identity`` holds what else decides the run's states (seed, data, layout).
    """
    from jaxrl_pim.report import to_jsonable

    if not dataclasses.is_dataclass(config) or isinstance(config, type):
        raise ValueError(f"config must be a dataclass instance, got {type(config).__name__}")
    fields = {k: v for k, v in to_jsonable(config).items() if k not in set(exclude)}
    out: dict[str, Any] = {"config": fields}
    out.update({k: to_jsonable(v) for k, v in identity.items()})
    if key is not None:
        import jax

        raw = jax.random.key_data(key) if jax.dtypes.issubdtype(
            key.dtype, jax.dtypes.prng_key) else key
        out["key"] = np.asarray(raw).tolist()
    return out


class Plan(NamedTuple):
    """Where a run stands and how it is cut.

    Attributes:
      start: units already done (those of the state handed to :func:`run_segments`).
      total: units of the whole run.
      every: checkpoint period in units; segments end at its multiples and at ``total``.
        None: the rest of the run is one segment (a run without checkpoints).
    """

    start: int
    total: int
    every: int | None = None

    def segments(self) -> Iterator[tuple[int, int]]:
        """``(start, stop)`` of each segment still to run, in order."""
        check_int("start", self.start, lo=0)
        check_int("total", self.total, lo=self.start)
        if self.every is not None:
            check_int("every", self.every, lo=1)
        done = self.start
        while done < self.total:
            stop = self.total if self.every is None else min(
                (done // self.every + 1) * self.every, self.total)
            yield done, stop
            done = stop


class Restored(NamedTuple):
    """A checkpoint read by :func:`restore_latest`: its ``step`` (units done), the saved
    pytree and its ``meta`` record."""

    step: int
    tree: Any
    meta: dict[str, Any]


def restore_latest(checkpoints: Any, template: Callable[[int], Any], *, resume: bool,
                   unit: str = "step") -> Restored | None:
    """The newest checkpoint of ``checkpoints`` to resume from, or None to start afresh.

    None when ``checkpoints`` is None or holds no checkpoint. A folder that holds one is
    refused (ValueError) unless ``resume``, so a run never overwrites another's; a checkpoint
    of another run (the folder's fingerprint) or of other shapes is refused by
    :meth:`~jaxrl_pim.checkpoint.Checkpoints.restore`. ``template(step)`` gives the pytree
    structure (shapes and dtypes) of checkpoint ``step``; ``unit`` names a step in messages.
    """
    newest = None if checkpoints is None else checkpoints.latest()
    if newest is None:
        return None
    if not resume:
        raise ValueError(
            f"{str(checkpoints.directory)!r} already holds checkpoints (newest after {unit} "
            f"{newest}): resume from it (--resume) or choose an empty folder")
    tree, meta = checkpoints.restore(template(newest), newest)
    return Restored(newest, tree, meta)


class Finished(NamedTuple):
    """What :func:`run_segments` returns.

    Attributes:
      state: the state after the last segment.
      done: units done (the plan's ``total``).
      checkpoints_written: checkpoints saved by this call.
      timing_s: seconds of ``train`` (the ``train_from`` calls, including any compilation
        inside them) and ``checkpoint`` (the saves), wall clock.
    """

    state: Any
    done: int
    checkpoints_written: int
    timing_s: dict[str, float]


def _as_saved(state: Any, done: int) -> tuple[Any, dict[str, Any]]:
    return state, {"done": done}


def run_segments(
    train_from: Callable[[Any, int], tuple[Any, Any]],
    state: Any,
    plan: Plan,
    checkpoints: Any = None,
    callback: Callable[[int, int, Any], None] | None = None,
    *,
    snapshot: Callable[[Any, int], tuple[Any, dict[str, Any]]] = _as_saved,
) -> Finished:
    """Run ``train_from`` over the segments of ``plan``, saving after each one.

    For each segment ``(start, stop)`` of :meth:`Plan.segments`, in order:
    ``state, outputs = train_from(state, stop - start)``; with ``checkpoints``,
    ``tree, meta = snapshot(state, stop)`` is saved as checkpoint ``stop`` (default: the
    state itself and ``{"done": stop}``); then ``callback(stop, plan.total, outputs)``. So a
    callback only ever sees a segment whose checkpoint is on disk, and a run killed at any
    moment resumes (:func:`restore_latest`) from the last segment it reported.
    ``train_from`` must return results that are ready (blocked on) for the timings to mean
    what they say.
    """
    timing = {"train": 0.0, "checkpoint": 0.0}
    saved, done = 0, plan.start
    for start, stop in plan.segments():
        t0 = time.perf_counter()
        state, outputs = train_from(state, stop - start)
        timing["train"] += time.perf_counter() - t0
        done = stop
        if checkpoints is not None:
            t0 = time.perf_counter()
            tree, meta = snapshot(state, stop)
            checkpoints.save(stop, tree, meta=meta)
            timing["checkpoint"] += time.perf_counter() - t0
            saved += 1
        if callback is not None:
            callback(stop, plan.total, outputs)
    return Finished(state, done, saved, timing)
