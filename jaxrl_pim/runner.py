"""One way to run a trainer from the host: the :class:`Learner` protocol and its host loop.

Every command of the package (``jaxrl-pim tabular``, ``marl``, ``actorq``) drives its
trainer through :func:`run`: the trainer is wrapped in a small adapter object that follows
:class:`Learner` (one adapter object per run), and the host loop does the rest -- it starts
afresh or restores the newest intact checkpoint (:func:`start`), cuts the run into segments
that end at multiples of the checkpoint period and at the run's end, saves a checkpoint after
each segment, times the phases and asks the adapter for its report fields, returned as one
:class:`Outcome` whatever the command. The package's adapters are built on
:class:`SegmentedLearner`, which keeps what they share (compiled programs, the compile/train
timing split, the learning curve across segments and restores, the bounds checks). A new
learner needs a config, a ``make_train`` (contract 1) and an adapter of a few dozen lines.

The protocol, in the run's units (tabular: sync rounds; MARL: episodes; ActorQ: iterations,
or environment steps with distributed actors):

* ``unit`` (a word for messages) and ``total`` (units of the whole run);
* ``fingerprint()``: what a checkpoint of the run must match, as JSON values
  (:func:`jaxrl_pim.checkpoint.fingerprint`);
* ``init()``: the state of a fresh run (0 units done);
* ``template(step)``: the pytree structure (shapes and dtypes) of checkpoint ``step``;
* ``restore(restored)``: the state to continue from, given a
  :class:`~jaxrl_pim.checkpoint.Restored` checkpoint (its ``step``, ``tree`` and ``meta``);
  the adapter checks it and takes back its host-side records (curves, timings);
* ``train_segment(state, n)``: ``n`` more units, ``-> (state, outputs)``, blocked until the
  device is done (so the timings mean what they say);
* ``snapshot(state, done)``: ``-> (tree, meta)``, what checkpoint ``done`` holds;
* ``report(outcome)``: the run's result fields (a dict) from the :class:`Outcome`; its
  entries ``curve`` and ``timing_s``, when present, become the outcome's fields of those
  names (the learner's learning curve and its own timing breakdown).

Example (a counter as the trainer)::

    class Counter:
        unit, total = "step", 10

        def fingerprint(self): return {"config": {"total": None}}
        def init(self): return np.int32(0)
        def template(self, step): return np.int32(0)
        def restore(self, restored): return restored.tree
        def train_segment(self, state, n): return np.int32(state + n), n
        def snapshot(self, state, done): return state, {"done": done}
        def report(self, outcome): return {"count": int(outcome.state)}

    outcome = run(Counter())                        # no checkpoints: one segment
    outcome.count                                   # 10: a report field, as an attribute
    with open_checkpoints(Counter(), folder) as ckpt:
        outcome = run(Counter(), ckpt, every=3, resume=True)

The driver under it
-------------------

Every trainer of the package continues from a state: ``train_from(state, n) -> (state,
outputs)`` runs ``n`` more units and is a pure function of the state, so a run cut into
segments ends where one uninterrupted run ends. :func:`run_segments` drives such a function:
the segments of a :class:`Plan` end at multiples of the checkpoint period ``every`` and at the
run's end (so a run and its resumption run the same segments), and after each segment the run
is saved as checkpoint ``<units done>`` of a :class:`~jaxrl_pim.checkpoint.Checkpoints`
folder. :func:`restore_latest` is the other half: it refuses a folder that already holds
checkpoints unless the run resumes, and otherwise reads the newest one that is intact
(:func:`jaxrl_pim.checkpoint.restore_newest`). How often a run is saved by default is
:func:`default_every` (about a tenth of the run). Example (any trainer; here a counter)::

    def train_from(state, n):
        return state + n, {"seen": list(range(state, state + n))}

    with Checkpoints(folder, fingerprint=fingerprint(config, seed=0)) as ckpt:
        begun = restore_latest(ckpt, lambda step: 0, resume=True)
        state, done = (0, 0) if begun is None else (begun.tree, begun.step)
        result = run_segments(train_from, state, Plan(done, 100, every=10), ckpt)
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Hashable, Iterator
from typing import Any, NamedTuple, Protocol, runtime_checkable

import numpy as np

from jaxrl_pim.checkpoint import Checkpoints, Restored, restore_newest
from jaxrl_pim.checks import check_int

__all__ = ["CHECKPOINTS_PER_RUN", "Finished", "Learner", "Outcome", "Plan",
           "SegmentedLearner", "Start", "default_every", "open_checkpoints", "restore_latest",
           "run", "run_segments", "start"]


# --------------------------------------------------------------------------------------------
# The driver: segments, their period, and where a run starts


CHECKPOINTS_PER_RUN = 10
"""A run without an explicit period is saved about this many times (and at its end)."""


def default_every(total: int, minimum: int = 1) -> int:
    """Units between checkpoints when none is given: ``ceil(total / 10)``, at least
    ``minimum`` (in the run's units: rounds, episodes, environment steps)."""
    total = check_int("total", total, lo=0)
    return max(check_int("minimum", minimum, lo=1), -(-total // CHECKPOINTS_PER_RUN))


class Plan(NamedTuple):
    """Where a run stands and how it is cut.

    Attributes:
      start: units already done (those of the state handed to :func:`run_segments`).
      total: units of the whole run.
      every: checkpoint period in units; segments end at its multiples and at ``total``.
        None: the rest of the run is one segment (a run without checkpoints).
      report: progress period in units (None: none); segments also end at its multiples, so
        the host can report between them (no checkpoint is saved there).
    """

    start: int
    total: int
    every: int | None = None
    report: int | None = None

    def segments(self) -> Iterator[tuple[int, int]]:
        """``(start, stop)`` of each segment still to run, in order."""
        check_int("start", self.start, lo=0)
        check_int("total", self.total, lo=self.start)
        periods = [check_int(name, p, lo=1) for name, p in (("every", self.every),
                                                             ("report", self.report))
                   if p is not None]
        done = self.start
        while done < self.total:
            stop = min([self.total, *((done // p + 1) * p for p in periods)])
            yield done, stop
            done = stop

    def saves_at(self, stop: int) -> bool:
        """Whether the segment ending at ``stop`` ends with a checkpoint: a multiple of
        ``every``, or the end of the run."""
        return stop == self.total or self.every is None or stop % self.every == 0


def restore_latest(checkpoints: Any, template: Callable[[int], Any], *, resume: bool,
                   unit: str = "step", warn: Callable[[str], None] | None = None,
                   ) -> Restored | None:
    """The newest checkpoint of ``checkpoints`` to resume from, or None to start afresh.

    None when ``checkpoints`` is None or holds no checkpoint. A folder that holds one is
    refused (ValueError) unless ``resume``, so a run never overwrites another's; a checkpoint
    of another run (the folder's fingerprint) or of other shapes is refused by
    :meth:`~jaxrl_pim.checkpoint.Checkpoints.restore`. The newest step that restores and
    verifies is used (:func:`restore_newest`: a damaged newer one is named in one line to
    ``warn`` and kept as ``damaged-<step>``). ``template(step)`` gives the pytree structure
    (shapes and dtypes) of checkpoint ``step``; ``unit`` names a step in messages.
    """
    newest = None if checkpoints is None else checkpoints.latest()
    if newest is None:
        return None
    if not resume:
        raise ValueError(
            f"{str(checkpoints.directory)!r} already holds checkpoints (newest after {unit} "
            f"{newest}): resume from it (--resume) or choose an empty folder")
    return restore_newest(checkpoints, template, warn=warn, set_aside=True)


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
    state itself and ``{"done": stop}``) when :meth:`Plan.saves_at` says so (segments cut
    for progress reports save nothing); then ``callback(stop, plan.total, outputs)``. So a
    callback sees every segment, and a run killed at any moment resumes
    (:func:`restore_latest`) from the last checkpoint a segment wrote.
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
        if checkpoints is not None and plan.saves_at(stop):
            t0 = time.perf_counter()
            tree, meta = snapshot(state, stop)
            checkpoints.save(stop, tree, meta=meta)
            timing["checkpoint"] += time.perf_counter() - t0
            saved += 1
        if callback is not None:
            callback(stop, plan.total, outputs)
    return Finished(state, done, saved, timing)


# --------------------------------------------------------------------------------------------
# The Learner protocol and its host loop


@runtime_checkable
class Learner(Protocol):
    """What :func:`run` drives: one run of one trainer (see the module docstring)."""

    unit: str
    total: int

    def fingerprint(self) -> dict[str, Any]:
        """What a checkpoint of this run must match, as JSON values."""
        ...

    def init(self) -> Any:
        """The state of a fresh run (0 units done)."""
        ...

    def template(self, step: int) -> Any:
        """The pytree structure (shapes and dtypes) of checkpoint ``step``."""
        ...

    def restore(self, restored: Restored) -> Any:
        """The state to continue from after checkpoint ``restored.step`` (checked)."""
        ...

    def train_segment(self, state: Any, n: int) -> tuple[Any, Any]:
        """``n`` more units from ``state``: ``(state, outputs)``, ready on the host."""
        ...

    def snapshot(self, state: Any, done: int) -> tuple[Any, dict[str, Any]]:
        """``(tree, meta)`` saved as checkpoint ``done``."""
        ...

    def report(self, outcome: Outcome) -> dict[str, Any]:
        """The run's result fields (``curve`` and ``timing_s`` become the outcome's)."""
        ...


class Start(NamedTuple):
    """Where a run starts (:func:`start`): its ``state``, the units already done (``step``;
    0 for a fresh run), ``resumed`` (True when the state came from a checkpoint) and the
    ``seconds`` that building or restoring it took."""

    state: Any
    step: int
    resumed: bool = False
    seconds: float = 0.0


class Outcome(NamedTuple):
    """What :func:`run` returns, and every command's result (tabular, MARL, a group of seeds,
    ActorQ single-program and distributed).

    Attributes:
      state: the state after the last segment.
      start: units done before this call (restored from a checkpoint, or given).
      done: units done at the end (the learner's ``total``).
      checkpoints_written: checkpoints saved by this call.
      timing_s: seconds per phase, wall clock: the learner's breakdown when its report gives
        one, else :func:`run`'s ``start`` (building or restoring the first state), ``train``
        (the ``train_segment`` calls, compilation inside them included) and ``checkpoint``
        (the saves).
      curve: the whole run's learning curve, the units before a resume included, in the
        learner's form (None when its report gives none).
      report: the learner's own result fields (empty in the outcome ``report`` is given);
        each is also readable as an attribute (``outcome.q_table`` is
        ``outcome.report["q_table"]``).
    """

    state: Any
    start: int
    done: int
    checkpoints_written: int
    timing_s: dict[str, float]
    curve: Any
    report: dict[str, Any]

    def __getattr__(self, name: str) -> Any:
        """A report field as an attribute (only names that are not fields reach here)."""
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self.report[name]
        except KeyError:
            raise AttributeError(f"Outcome has no field or report entry {name!r}") from None

    def as_dict(self) -> dict[str, Any]:
        """Every field but ``state`` and ``report``, then the report's fields, in one dict."""
        fields = self._asdict()
        del fields["state"], fields["report"]
        return {**fields, **self.report}


def open_checkpoints(learner: Learner, folder: str | os.PathLike[str],
                     keep: int = 3) -> Checkpoints:
    """The checkpoint folder of ``learner``'s run: ``folder`` (created when missing) with the
    learner's fingerprint, the newest ``keep`` checkpoints kept."""
    return Checkpoints(folder, fingerprint=learner.fingerprint(), keep=keep)


def start(learner: Learner, checkpoints: Checkpoints | None = None, *, resume: bool = False,
          warn: Callable[[str], None] | None = None) -> Start:
    """The state ``learner``'s run starts from.

    Without ``checkpoints``, or in a folder without checkpoints, ``learner.init()``. A folder
    that holds checkpoints is refused (ValueError) unless ``resume``; with it, a checkpoint of
    another kind of run or configuration is refused before any work, and the newest intact
    checkpoint (a damaged newer one is named in one line to ``warn``, default stderr, and
    kept) goes through ``learner.restore``. A checkpoint past ``learner.total`` is refused.
    """
    t0 = time.perf_counter()
    if checkpoints is not None and resume:
        checkpoints.check_record()  # another kind of run or configuration: before any work
    restored = restore_latest(checkpoints, learner.template, resume=resume, unit=learner.unit,
                              warn=warn)
    if restored is None:
        return Start(learner.init(), 0, False, time.perf_counter() - t0)
    state = learner.restore(restored)  # the learner's own checks first, in its words
    if restored.step > learner.total:
        raise ValueError(
            f"the run's total ({learner.total} {learner.unit}s) is below the checkpoint's "
            f"{learner.unit} count ({restored.step}) in {str(checkpoints.directory)!r}; pass a "
            "larger total")
    return Start(state, restored.step, True, time.perf_counter() - t0)


def run(
    learner: Learner,
    checkpoints: Checkpoints | None = None,
    *,
    every: int | None = None,
    resume: bool = False,
    begin: Start | None = None,
    callback: Callable[[int, int, Any], None] | None = None,
    warn: Callable[[str], None] | None = None,
    report_every: int | None = None,
) -> Outcome:
    """Run ``learner`` to its ``total`` from the host.

    ``begin`` is where to start (default :func:`start` with ``checkpoints``, ``resume`` and
    ``warn``). Without ``checkpoints`` the rest of the run is one segment; with them, segments
    end at multiples of ``every`` units (default :func:`default_every` of
    the total, about a tenth of the run) and at the end, and ``learner.snapshot(state, done)``
    is saved as checkpoint ``done`` after each, so a run and its resumption run the same
    segments. ``report_every`` (units) cuts the segments at its multiples too, without a
    checkpoint there, for a host-drawn progress display. ``callback(done, total, outputs)``
    follows each segment (and its checkpoint).
    Returns the :class:`Outcome` with the learner's report fields (its ``curve`` and
    ``timing_s`` entries as the outcome's fields of those names).
    """
    total = check_int("total", learner.total, lo=0)
    if begin is None:
        begin = start(learner, checkpoints, resume=resume, warn=warn)
    if checkpoints is None:
        period = None
    elif every is None:
        period = default_every(total)
    else:
        period = check_int("every", every, lo=1)
    finished = run_segments(learner.train_segment, begin.state,
                            Plan(begin.step, total, period, report_every), checkpoints,
                            callback,
                            snapshot=learner.snapshot)
    timing = {"start": begin.seconds, **finished.timing_s}
    outcome = Outcome(finished.state, begin.step, finished.done, finished.checkpoints_written,
                      timing, None, {})
    report = dict(learner.report(outcome))
    common = {name: report.pop(name) for name in ("curve", "timing_s") if name in report}
    return outcome._replace(report=report, **common)


# --------------------------------------------------------------------------------------------
# The base of the package's learners: segments as compiled programs


class SegmentedLearner:
    """What the package's :class:`Learner` adapters share; a subclass adds its trainer.

    It owns the units done (``done``: 0, the restored checkpoint's step, or :meth:`begin`'s
    start), the run's compiled programs (one per :meth:`program_key`, built by
    :meth:`compile` on first use; their seconds summed in ``compile_s``, which
    :meth:`timing` takes out of the train time), the learning curve (the part before the
    start state, restored or given, then one piece per segment, joined by :meth:`join`), and
    the bounds checks (a checkpoint past the total, a state whose count is not its
    checkpoint's step, a given start past the total or not its curve's length).

    A subclass sets ``unit`` and ``total_name`` (the setting that holds the total, named in
    messages), calls ``__init__`` with the total and the empty curve, and supplies
    ``fingerprint()``, ``init()``, ``template(step)``, ``snapshot(state, done)``, and:

    * ``load(restored) -> (state, curve)``: the state and the curve so far of a checkpoint
      (the subclass's own checks; its host-side records taken back);
    * ``compile(state, start, n)``: the program that runs a segment of ``n`` units from
      ``start`` (compiled, ready to call);
    * ``execute(program, state, start, n) -> (state, piece, outputs)``: the segment run
      and blocked on, with its piece of the curve;
    * ``report(outcome)``: its fields added to this class's ``curve`` and ``timing_s``.
    """

    unit = "unit"
    total_name = "total"
    curve_axis = 0  # the units' axis of an array curve (see join)

    def __init__(self, total: int, curve: Any, *, folder: Any = None) -> None:
        self.total = check_int("total", total, lo=0)
        self.done = 0
        self.folder = folder  # the checkpoint folder, named in messages
        self.compile_s = 0.0
        self._programs: dict[Hashable, Any] = {}
        self._curve: list[Any] = [curve]

    @property
    def where(self) -> str:
        """The checkpoint folder in messages."""
        return "the checkpoint folder" if self.folder is None else repr(str(self.folder))

    def begin(self, start: int, curve: Any) -> None:
        """Continue from a state ``start`` units in whose curve so far is ``curve`` (an array
        with ``start`` units along :attr:`curve_axis`), instead of ``init`` or ``restore``."""
        if start > self.total:
            raise ValueError(f"{self.total_name} ({self.total}) is below the state's "
                             f"{self.unit} count ({start})")
        if np.shape(curve)[self.curve_axis] != start:
            raise ValueError(f"the curve holds {np.shape(curve)[self.curve_axis]} "
                             f"{self.unit}s, the state {start}")
        self._curve, self.done = [curve], start

    def restore(self, restored: Restored) -> Any:
        """The state of checkpoint ``restored`` (:meth:`load`), refused past the total."""
        if restored.step > self.total:
            raise ValueError(
                f"{self.total_name} ({self.total}) is below the checkpoint's {self.unit} "
                f"count ({restored.step}) in {self.where}; pass a larger total")
        state, curve = self.load(restored)
        self._curve, self.done = [curve], restored.step
        return state

    def check_count(self, restored: Restored, count: int) -> None:
        """Refuse a checkpoint whose state counts ``count`` units, not its step."""
        if count != restored.step:
            raise ValueError(f"checkpoint {restored.step} of {self.where} holds {self.unit} "
                             f"{count}")

    def program_key(self, start: int, n: int) -> Hashable:
        """What identifies the program of ``n`` units from ``start`` (default: ``n``)."""
        return n

    def train_segment(self, state: Any, n: int) -> tuple[Any, Any]:
        """``n`` more units from ``done``: the program compiled on first use, then run."""
        start = self.done
        if not 0 < n <= self.total - start:
            raise ValueError(f"a segment of {n} {self.unit}s from {start} passes "
                             f"{self.total_name} ({self.total})")
        key = self.program_key(start, n)
        if key not in self._programs:
            t0 = time.perf_counter()
            self._programs[key] = self.compile(state, start, n)
            self.compile_s += time.perf_counter() - t0
        state, piece, outputs = self.execute(self._programs[key], state, start, n)
        self._curve.append(piece)
        self.done = start + n
        return state, outputs

    def join(self, pieces: list[Any]) -> Any:
        """The curve of consecutive ``pieces``: concatenated along :attr:`curve_axis`."""
        return np.concatenate(pieces, axis=self.curve_axis)

    def curve(self) -> Any:
        """The learning curve so far (the units before the start state included)."""
        if len(self._curve) > 1:
            self._curve = [self.join(self._curve)]
        return self._curve[0]

    def timing(self, outcome: Outcome) -> dict[str, float]:
        """Seconds of ``compile`` (the programs built), ``train`` (the segments less their
        compilation) and ``checkpoint`` (the saves)."""
        return {"compile": self.compile_s,
                "train": outcome.timing_s["train"] - self.compile_s,
                "checkpoint": outcome.timing_s["checkpoint"]}

    def report(self, outcome: Outcome) -> dict[str, Any]:
        """``curve`` (:meth:`curve`) and ``timing_s`` (:meth:`timing`)."""
        return {"curve": self.curve(), "timing_s": self.timing(outcome)}

    # what a subclass supplies (see the class docstring)
    def load(self, restored: Restored) -> tuple[Any, Any]:
        raise NotImplementedError

    def compile(self, state: Any, start: int, n: int) -> Any:
        raise NotImplementedError

    def execute(self, program: Any, state: Any, start: int, n: int) -> tuple[Any, Any, Any]:
        raise NotImplementedError
