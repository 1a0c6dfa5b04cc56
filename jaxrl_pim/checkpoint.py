"""Checkpoints for long runs: a folder of numbered, atomic orbax checkpoints, and the one driver
of checkpointed runs (over 400 lines: the folder and the driver that writes it stay together).

One :class:`Checkpoints` object manages a run's folder: ``save(step, state)`` writes the
pytree ``state`` (any arrays: networks, optimiser moments, replay buffers, PRNG keys,
counters) and a JSON ``meta`` record under ``<folder>/<step>/``; only the newest ``keep``
are kept. orbax writes each checkpoint under a temporary name and renames it when complete,
so a run killed at any moment leaves the previous checkpoints intact and never a partial
one that :meth:`Checkpoints.latest` would return. Saves are synchronous (the call returns
when the checkpoint is on disk).

Beside each checkpoint a file list (``<step>/files.json``: every file's size and CRC-32,
written after the checkpoint is complete) lets a restore verify the step before reading it: a
file truncated, deleted or rewritten since is reported as :class:`Damaged`, naming the folder
and the file. :func:`restore_latest` then falls back to the newest older step that restores and
verifies, says so in one line, and never deletes the damaged step (a resume, which will
write that step again, renames it ``damaged-<step>`` and keeps it). Arrays with no elements
(a zero-size leaf, which orbax refuses to write) are stored as a one-element placeholder and
come back with the template's shape.

The meta record carries a ``fingerprint`` (e.g. the run's config as JSON values): restoring
into a run whose fingerprint differs raises ValueError naming the first differing field, so
a checkpoint of one configuration is never loaded into another, and one of another kind of
run (tabular, MARL, ActorQ: :func:`run_kind`) is named as such. Restoring needs a
``template`` (the pytree structure with shapes and dtypes, e.g. ``jax.eval_shape(init,
key)``), against which every leaf is checked.

Example::

    ckpt = Checkpoints("runs/maddpg", fingerprint=config_dict, keep=3)
    step = ckpt.latest()
    if step is not None:
        state, meta = ckpt.restore(template)
    ...
    ckpt.save(episode, state, meta={"episodes_done": episode})

The driver of checkpointed runs
-------------------------------

Every trainer of the package continues from a state: ``train_from(state, n) -> (state,
outputs)`` runs ``n`` more units of work (tabular: sync rounds; MARL: episodes; ActorQ:
iterations of whole chunks) and is a pure function of the state, so a run cut into segments
ends where one uninterrupted run ends. :func:`run_segments` drives such a function from the
host: segments end at multiples of the checkpoint period ``every`` and at the run's end
(so a run and its resumption run the same segments), and after each segment the run is
saved as checkpoint ``<units done>`` of a :class:`~jaxrl_pim.checkpoint.Checkpoints` folder.
:func:`restore_latest` is the other half: it refuses a folder that already holds
checkpoints unless the run resumes, and otherwise reads the newest one that is intact.

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
import json
import os
import shutil
import sys
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import jax
import numpy as np

from jaxrl_pim.checks import check_int


def _is_key(x: Any) -> bool:
    return hasattr(x, "dtype") and jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key)


def _to_storable(tree: Any) -> Any:
    """Typed PRNG key arrays -> their raw ``uint32`` key data (what orbax stores); works on
    arrays and on ``jax.ShapeDtypeStruct`` templates alike."""

    def leaf(x: Any) -> Any:
        if not _is_key(x):
            return x
        if isinstance(x, jax.ShapeDtypeStruct):
            return jax.eval_shape(jax.random.key_data, x)
        return jax.random.key_data(x)

    return jax.tree.map(leaf, tree)


def _key_impl(template_leaf: Any) -> Any:
    """The PRNG implementation of a typed key array or key ``ShapeDtypeStruct``."""
    if isinstance(template_leaf, jax.ShapeDtypeStruct):
        return template_leaf.dtype._impl  # jax exposes no public accessor for templates
    return jax.random.key_impl(template_leaf)


def _first_difference(saved: Any, want: Any, path: str = "") -> str | None:
    """Path and values of the first difference between two JSON values, or None."""
    if isinstance(saved, dict) and isinstance(want, dict):
        for k in sorted(set(saved) | set(want)):
            sub = f"{path}.{k}" if path else str(k)
            if k not in saved or k not in want:
                return f"{sub}: saved {saved.get(k)!r}, this run {want.get(k)!r}"
            diff = _first_difference(saved[k], want[k], sub)
            if diff:
                return diff
        return None
    if saved != want:
        return f"{path or 'value'}: saved {saved!r}, this run {want!r}"
    return None


# listings retried when a concurrent writer prunes a step mid-listing (see Checkpoints.steps)
_LIST_ATTEMPTS = 5

#: The file list written beside each checkpoint (sizes and CRC-32 of every file of the step).
FILES = "files.json"

# A config field that only one kind of run's fingerprint holds -> that kind's name.
_KIND_MARKERS = (("num_states", "tabular"), ("sampling_mode", "MARL"),
                 ("actor_update_period", "ActorQ"))


def run_kind(fingerprint: Any) -> str | None:
    """The kind of run a fingerprint belongs to (``"tabular"``, ``"MARL"``, ``"ActorQ"``), read
    from its ``config`` fields; None when it is not one of the package's runs."""
    fields = fingerprint.get("config") if isinstance(fingerprint, dict) else None
    if isinstance(fields, dict):
        for field, kind in _KIND_MARKERS:
            if field in fields:
                return kind
    return None


def _a(kind: str) -> str:
    """``kind`` with its indefinite article (``a tabular``, ``an ActorQ``)."""
    return f"{'an' if kind[:1] in 'AEIOU' else 'a'} {kind}"


class Damaged(ValueError):
    """A checkpoint step that cannot be read back as written: ``step``, ``folder`` (the run's
    checkpoint folder), ``file`` (the damaged file, relative to the step) and ``reason``."""

    def __init__(self, folder: Path, step: int, file: str, reason: str) -> None:
        self.folder, self.step, self.file, self.reason = folder, step, file, reason
        super().__init__(f"checkpoint {step} in {str(folder)!r} is damaged: {step}/{file}: "
                         f"{reason}")


def _crc32(path: Path) -> int:
    crc = 0
    with open(path, "rb") as fh:
        while block := fh.read(1 << 22):
            crc = zlib.crc32(block, crc)
    return crc


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def _is_empty(x: Any) -> bool:
    return int(np.prod(np.shape(x), dtype=np.int64)) == 0


def _placeholder(dtype: Any) -> np.ndarray:
    """What a zero-size leaf is stored as (orbax writes no empty arrays): one zero."""
    return np.zeros((1,), dtype)


class Checkpoints:
    """A run's checkpoint folder (see the module docstring).

    Args:
      directory: folder of the run's checkpoints (created when missing).
      fingerprint: JSON values identifying the run (typically its config, without fields
        that may change on resume such as the total length); checked on restore.
      keep: how many of the newest checkpoints to keep (>= 1).
    """

    def __init__(self, directory: str | os.PathLike[str], *, fingerprint: Any = None,
                 keep: int = 3) -> None:
        import orbax.checkpoint as ocp

        self._ocp = ocp
        self.directory = Path(directory).resolve()
        self.fingerprint = fingerprint
        self.keep = check_int("keep", keep, 1)
        # the newest ``keep`` are kept by _drop_old (a rename, then a delete), not by orbax's
        # max_to_keep, whose in-place delete leaves a half-deleted step when killed
        options = ocp.CheckpointManagerOptions(max_to_keep=None, create=True,
                                               enable_async_checkpointing=False)
        self._manager = ocp.CheckpointManager(self.directory, options=options)

    def steps(self) -> list[int]:
        """The steps of the complete checkpoints on disk, oldest first.

        Safe to call while another process writes the folder: a step pruned by the writer
        between orbax's listing and its read of that step's metadata (FileNotFoundError) is
        read again from a fresh listing.
        """
        for attempt in range(_LIST_ATTEMPTS):
            try:
                self._manager.reload()
                return sorted(self._manager.all_steps())
            except FileNotFoundError:
                if attempt == _LIST_ATTEMPTS - 1:
                    raise
        raise AssertionError("unreachable")

    def latest(self) -> int | None:
        """The newest complete checkpoint's step, or None when there is none."""
        steps = self.steps()
        return steps[-1] if steps else None

    def record(self, step: int | None = None) -> dict[str, Any]:
        """The JSON record saved beside checkpoint ``step`` (default the newest):
        ``{"fingerprint": ..., "meta": ...}``, read without a template and without the
        fingerprint check (to learn which run a folder holds before restoring it).

        Raises FileNotFoundError when there is no such checkpoint.
        """
        step = self.latest() if step is None else step
        if step is None or step not in self.steps():
            raise FileNotFoundError(f"no checkpoint {'' if step is None else step} in "
                                    f"{str(self.directory)!r}")
        record = self._read_record(step)
        return {"fingerprint": record.get("fingerprint"), "meta": record.get("meta", {})}

    def _read_record(self, step: int) -> dict[str, Any]:
        """Checkpoint ``step``'s JSON record, its files verified first (:class:`Damaged`)."""
        self.verify(step, under="meta/")
        try:
            record = self._manager.restore(step, args=self._ocp.args.Composite(
                meta=self._ocp.args.JsonRestore())).meta
        except Exception as err:  # orbax and the JSON reader raise many kinds
            raise Damaged(self.directory, step, "meta/metadata", _first_line(err)) from None
        if not isinstance(record, dict):
            raise Damaged(self.directory, step, "meta/metadata",
                          f"holds {type(record).__name__}, not a record")
        return record

    def verify(self, step: int, under: str = "") -> None:
        """Check checkpoint ``step``'s files (those whose path starts with ``under``) against
        the file list written with it: raises :class:`Damaged` naming the first file that is
        missing, of another size, or whose CRC-32 differs. A step without a file list (a
        save killed before it was written, or an older checkpoint) passes unverified."""
        step_dir = self.directory / str(step)
        try:
            listed = json.loads((step_dir / FILES).read_text())["files"]
        except FileNotFoundError:
            return
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise Damaged(self.directory, step, FILES, _first_line(err)) from None
        for name, (size, crc) in sorted(listed.items()):
            if not name.startswith(under):
                continue
            path = step_dir / name
            try:
                actual = path.stat().st_size
            except FileNotFoundError:
                raise Damaged(self.directory, step, name, "missing") from None
            if actual != size:
                raise Damaged(self.directory, step, name,
                              f"{actual} bytes, {size} were written")
            if _crc32(path) != crc:
                raise Damaged(self.directory, step, name,
                              "its contents changed since it was written (CRC-32)")

    def _write_file_list(self, step: int) -> None:
        """Record the size and CRC-32 of every file of the complete step ``step``."""
        from jaxrl_pim.report import write_json

        step_dir = self.directory / str(step)
        files = {str(p.relative_to(step_dir)): [p.stat().st_size, _crc32(p)]
                 for p in sorted(step_dir.rglob("*")) if p.is_file() and p.name != FILES}
        write_json(step_dir / FILES, {"files": files})

    def check_record(self, step: int | None = None) -> None:
        """Refuse (ValueError) a folder whose checkpoint ``step`` (default the newest whose
        record reads) belongs to another kind of run or another configuration, before any
        work; nothing when the folder holds no checkpoint."""
        steps = self.steps() if step is None else [step]
        damaged: list[Damaged] = []
        for candidate in reversed(steps):
            try:
                record = self._read_record(candidate)
            except Damaged as err:
                damaged.append(err)
                continue
            self._check_fingerprint(candidate, record)
            return
        if damaged:
            raise _none_intact(damaged)

    def _check_fingerprint(self, step: int, record: dict[str, Any]) -> None:
        saved = record.get("fingerprint")
        saved_kind, this_kind = run_kind(saved), run_kind(_json(self.fingerprint))
        if saved_kind is not None and this_kind is not None and saved_kind != this_kind:
            raise ValueError(f"{str(self.directory)!r} holds {_a(saved_kind)} run's "
                             f"checkpoints, not {_a(this_kind)} run's: choose another folder")
        diff = _first_difference(saved, _json(self.fingerprint))
        if diff is not None:
            raise ValueError(f"checkpoint {str(self.directory / str(step))!r} belongs to "
                             f"another run configuration ({diff})")

    def save(self, step: int, state: Any, meta: dict[str, Any] | None = None) -> Path:
        """Write ``state`` as checkpoint ``step`` (atomically; returns when it is on disk)
        and drop the oldest beyond ``keep``. ``meta`` is extra JSON values stored beside it.
        In a single process, a step ``step`` already on disk is renamed ``damaged-<step>``
        first (kept, with one line on stderr) rather than refused.
        """
        step = check_int("step", step, 0)
        ocp = self._ocp
        record = {"fingerprint": self.fingerprint, "meta": meta or {}}
        storable = jax.tree.map(lambda x: _placeholder(x.dtype) if _is_empty(x) else x,
                                _to_storable(state))
        if (self.directory / str(step)).exists() and jax.process_count() == 1:
            aside = self._set_aside(step)  # restore_latest sets damaged steps aside first
            _warn_stderr(f"warning: checkpoint {step} in {str(self.directory)!r} is written "
                         f"again; the earlier one is kept as {aside.name}")
        try:
            self._manager.save(step, args=ocp.args.Composite(
                state=ocp.args.StandardSave(storable), meta=ocp.args.JsonSave(record)),
                force=True)
            self._manager.wait_until_finished()
        except BaseException:
            if jax.process_index() == 0:  # orbax leaves its temporary folder behind
                for tmp in self.directory.glob(f"{step}.orbax-checkpoint-tmp*"):
                    shutil.rmtree(tmp, ignore_errors=True)
            raise
        if jax.process_index() == 0:
            self._write_file_list(step)
        self._drop_old()
        return self.directory / str(step)

    def _set_aside(self, step: int) -> Path:
        """Rename step ``step`` (a damaged one a resume passed over, which the run will write
        again) to ``damaged-<step>`` (``-2``, ... when taken), which is no step name: it is
        kept, never deleted. Returns the new path."""
        aside, n = self.directory / f"damaged-{step}", 1
        while aside.exists():
            n += 1
            aside = self.directory / f"damaged-{step}-{n}"
        os.rename(self.directory / str(step), aside)
        self._manager.reload()
        return aside

    def _drop_old(self) -> None:
        """Delete all but the newest ``keep`` checkpoints, each first renamed out of the step
        names (atomic), so a kill mid-delete never leaves a listed, incomplete checkpoint."""
        if jax.process_index() != 0:
            return
        for old in self.steps()[:-self.keep]:
            trash = self.directory / f".deleting-{old}-{os.getpid()}"
            try:
                os.rename(self.directory / str(old), trash)
            except FileNotFoundError:
                continue
            shutil.rmtree(trash, ignore_errors=True)
        for stale in self.directory.glob(".deleting-*"):  # left by a killed process
            shutil.rmtree(stale, ignore_errors=True)
        self._manager.reload()

    def restore(self, template: Any, step: int | None = None, *,
                check: bool = True) -> tuple[Any, dict[str, Any]]:
        """Read checkpoint ``step`` (default the newest) into the structure of ``template``.

        Returns ``(state, meta)``. Raises FileNotFoundError when there is no checkpoint,
        :class:`Damaged` (a ValueError naming the folder and the file) when a file of the
        step is missing, truncated or rewritten, and ValueError when the run's kind, the
        fingerprint (unless ``check`` is False: the caller has read the record itself) or a
        leaf's shape / dtype does not match.
        """
        ocp = self._ocp
        step = self.latest() if step is None else step
        if step is None or step not in self.steps():
            raise FileNotFoundError(f"no checkpoint {'' if step is None else step} in "
                                    f"{str(self.directory)!r}")
        record = self._read_record(step)
        if check:
            self._check_fingerprint(step, record)
        self.verify(step)
        abstract = jax.tree.map(
            lambda x: jax.ShapeDtypeStruct((1,) if _is_empty(x) else np.shape(x),
                                           jax.numpy.result_type(x)),
            _to_storable(template))
        verified = (self.directory / str(step) / FILES).is_file()
        try:
            state = self._manager.restore(step, args=ocp.args.Composite(
                state=ocp.args.StandardRestore(abstract))).state
        except (ValueError, KeyError) as err:
            raise ValueError(f"checkpoint {str(self.directory / str(step))!r} does not match "
                             f"this run's state: {_first_line(err)}") from None
        except Exception as err:  # a file orbax could not read: the step is damaged
            if verified:
                raise
            raise Damaged(self.directory, step, _damaged_file(self.directory / str(step), err),
                          _first_line(err)) from None
        leaves_t, treedef = jax.tree.flatten(template)
        leaves = jax.tree.leaves(state)
        if len(leaves) != len(leaves_t):
            raise ValueError(f"checkpoint holds {len(leaves)} arrays, expected {len(leaves_t)}")
        out = []
        for i, (x, t) in enumerate(zip(leaves, leaves_t, strict=True)):
            if _is_empty(t):  # stored as a placeholder
                x = jax.numpy.zeros(jax.eval_shape(jax.random.key_data, t).shape
                                    if _is_key(t) else np.shape(t), x.dtype)
            x = _uncommitted(x)
            if _is_key(t):
                x = jax.random.wrap_key_data(x, impl=_key_impl(t))
            if tuple(np.shape(x)) != tuple(np.shape(t)) or x.dtype != t.dtype:
                raise ValueError(f"checkpoint leaf {i} is {np.shape(x)} {x.dtype}, expected "
                                 f"{np.shape(t)} {t.dtype}")
            out.append(x)
        return jax.tree.unflatten(treedef, out), record.get("meta", {})

    def close(self) -> None:
        """Release the manager's resources (the files stay)."""
        self._manager.close()

    def __enter__(self) -> Checkpoints:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _damaged_file(step_dir: Path, err: BaseException) -> str:
    """The file of ``step_dir`` that an orbax error names (relative), else its state folder."""
    text = str(err)
    for path in sorted(step_dir.rglob("*"), key=lambda p: -len(str(p))):
        if str(path) in text or (path.is_file() and path.name in text and len(path.name) > 8):
            return str(path.relative_to(step_dir))
    return "state/"


def _json(value: Any) -> Any:
    """``value`` as it reads back from JSON (tuples -> lists, NumPy scalars -> Python)."""
    from jaxrl_pim.report import to_jsonable

    return json.loads(json.dumps(to_jsonable(value)))


# --------------------------------------------------------------------------------------------
# The driver of checkpointed runs (used by tabular, marl and actorq)


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


def _uncommitted(x: Any) -> Any:
    """``x`` as a fresh run holds it: a single-device array read back by orbax is committed to
    its device, and jit keys its cache (in memory and on disk) on that, so a resumed run would
    compile its program again. Such a leaf comes back uncommitted, on the default device,
    like the arrays of a fresh ``init``; a leaf spread over several devices or processes is
    returned as it is (its placement is the run's)."""
    if (isinstance(x, jax.Array) and x.is_fully_addressable
            and len(x.sharding.device_set) == 1 and getattr(x, "committed", False)):
        return jax.numpy.asarray(np.asarray(x))
    return x


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


def _warn_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _barrier(name: str) -> None:
    """Every process of a multi-process run waits here for the others (nothing alone)."""
    if jax.process_count() > 1:
        from jax.experimental import multihost_utils

        multihost_utils.sync_global_devices(name)


def restore_newest(checkpoints: Any, template: Callable[[int], Any], *,
                   warn: Callable[[str], None] | None = None, check: bool = True,
                   set_aside: bool = False) -> Restored:
    """The newest checkpoint of ``checkpoints`` that restores and verifies.

    Steps are tried newest first; a :class:`Damaged` one (a file missing, truncated or
    rewritten) is passed over, never deleted, and ``warn`` (default: stderr) gets one line
    naming it and the step used instead. A checkpoint of another run or of other shapes
    is refused at once (ValueError), as is a folder whose every step is damaged (the
    newest one's error, saying none is intact). ``template(step)`` gives the structure to
    read step ``step`` into (it may read :meth:`Checkpoints.record` itself, which raises
    :class:`Damaged` too); ``check`` as in :meth:`Checkpoints.restore`. With ``set_aside``
    (a run that resumes and will write those steps again) the damaged steps are renamed
    ``damaged-<step>`` and kept (process 0 renames, every process waits for it).
    FileNotFoundError when the folder holds no checkpoint.
    """
    steps = checkpoints.steps()
    if not steps:
        raise FileNotFoundError(f"no checkpoint in {str(checkpoints.directory)!r}")
    damaged: list[Damaged] = []
    for step in reversed(steps):
        try:
            tree, meta = checkpoints.restore(template(step), step, check=check)
        except Damaged as err:
            damaged.append(err)
            continue
        kept: dict[int, str] = {}
        if set_aside:
            _barrier("jaxrl_pim.checkpoint.set_aside")
            if jax.process_index() == 0:
                kept = {e.step: checkpoints._set_aside(e.step).name for e in damaged}
            _barrier("jaxrl_pim.checkpoint.set_aside_done")
            checkpoints._manager.reload()
        if damaged:
            (warn or _warn_stderr)("warning: " + "; ".join(
                f"{e} (kept as {kept[e.step]})" if e.step in kept else
                f"{e} ({'set aside' if set_aside else 'left in place'})" for e in damaged)
                + f"; using checkpoint {step}, the newest intact one")
        return Restored(step, tree, meta)
    raise _none_intact(damaged)


def _none_intact(damaged: list[Damaged]) -> Damaged:
    """The error of a folder whose every step is damaged (``damaged`` newest first)."""
    newest = damaged[0]
    return Damaged(newest.folder, newest.step, newest.file,
                   f"{newest.reason}; no older checkpoint is intact either"
                   if len(damaged) > 1 else newest.reason)


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
