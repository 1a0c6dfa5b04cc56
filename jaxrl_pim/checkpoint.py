"""Checkpoints for long runs: a folder of numbered, atomic orbax checkpoints.

One :class:`Checkpoints` object manages a run's folder: ``save(step, state)`` writes the
pytree ``state`` (any arrays: networks, optimiser moments, replay buffers, PRNG keys,
counters) and a JSON ``meta`` record under ``<folder>/<step>/``; only the newest ``keep``
are kept. orbax writes each checkpoint under a temporary name and renames it when complete,
so a run killed at any moment leaves the previous checkpoints intact and never a partial
one that :meth:`Checkpoints.latest` would return. Saves are synchronous (the call returns
when the checkpoint is on disk).

Beside each checkpoint a file list (``<step>/files.json``: every file's size and CRC-32,
written after the checkpoint is complete) lets a restore verify the step before reading it;
only a step whose list is present, of the right shape and matches is read at all. A file
truncated, deleted, added or rewritten since, a list that is missing (a save killed before
it was written, or a version without lists) or of another shape, and a record that is not
``{"fingerprint": ..., "meta": {...}}`` are reported as :class:`Damaged`, in one short line
naming the folder, the step and the file. :func:`restore_newest` then falls back to the
newest older step that restores and verifies, says so in one line, and never deletes the
damaged step (a resume, which will write that step again, renames it ``damaged-<step>`` and
keeps it; one that cannot be renamed refuses the resume). A step that cannot be deleted when
pruned is named in one warning line and kept: it never stops a run. Arrays with no elements
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

What a checkpoint must match is :func:`fingerprint` (the config as JSON values, minus the
fields that may change on resume, plus what else identifies the run: seed, data, layout).
:func:`restore_newest` reads the newest intact step of a folder. Driving a run over
checkpointed segments (the period, the segments, refusing a folder that already holds a run
unless it resumes) is :mod:`jaxrl_pim.runner`'s.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import shutil
import stat
import sys
import zlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path, PurePosixPath
from typing import Any, NamedTuple

import jax
import numpy as np

from jaxrl_pim.checks import check_int
from jaxrl_pim.run_record import FILES, record_problem, run_kind  # read without jax too
from jaxrl_pim.run_record import a_kind as _a
from jaxrl_pim.run_record import short as _short


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
                return (f"{sub}: saved {_short(repr(saved.get(k)), 40)}, this run "
                        f"{_short(repr(want.get(k)), 40)}")
            diff = _first_difference(saved[k], want[k], sub)
            if diff:
                return diff
        return None
    if saved != want:
        return (f"{path or 'value'}: saved {_short(repr(saved), 40)}, this run "
                f"{_short(repr(want), 40)}")
    return None


# listings retried when a concurrent writer prunes a step mid-listing (see Checkpoints.steps)
_LIST_ATTEMPTS = 5


class Damaged(ValueError):
    """A checkpoint step that cannot be read back as written: ``step``, ``folder`` (the run's
    checkpoint folder), ``file`` (the damaged file, relative to the step) and ``reason`` (a
    few words, never the file's contents: the message is one line)."""

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
    """``err``'s first line, short (:func:`_short`), or its type's name when it has none."""
    return _short(str(err)) or type(err).__name__


class _OrbaxLogs(logging.Filter):
    """Drops the log records of orbax's own code (absl's logger): see :func:`_quiet_orbax`."""

    depth = 0

    def filter(self, record: logging.LogRecord) -> bool:
        return "orbax" not in Path(record.pathname).parts


_ORBAX_LOGS = _OrbaxLogs()


@contextlib.contextmanager
def _quiet_orbax() -> Iterator[None]:
    """orbax logs nothing inside the block. While it lists or reads steps, a damaged step's
    file makes it log that file's contents, once per listing; :class:`Checkpoints` reports
    such a step in one line (:class:`Damaged`) instead."""
    logger = logging.getLogger("absl")
    if _ORBAX_LOGS.depth == 0:
        logger.addFilter(_ORBAX_LOGS)
    _ORBAX_LOGS.depth += 1
    try:
        yield
    finally:
        _ORBAX_LOGS.depth -= 1
        if _ORBAX_LOGS.depth == 0:
            logger.removeFilter(_ORBAX_LOGS)


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
        self._undeletable: set[Path] = set()  # named once by _drop_old, not tried again
        # the newest ``keep`` are kept by _drop_old (a rename, then a delete), not by orbax's
        # max_to_keep, whose in-place delete leaves a half-deleted step when killed
        options = ocp.CheckpointManagerOptions(max_to_keep=None, create=True,
                                               enable_async_checkpointing=False)
        with _quiet_orbax():  # it reads every step's metadata (see steps)
            self._manager = ocp.CheckpointManager(self.directory, options=options)

    def steps(self) -> list[int]:
        """The steps of the complete checkpoints on disk, oldest first.

        Safe to call while another process writes the folder: a step pruned by the writer
        between orbax's listing and its read of that step's metadata (FileNotFoundError) is
        read again from a fresh listing. A step whose metadata is damaged is listed (its
        restore reports it, :meth:`verify`); orbax's log lines about it are dropped.
        """
        for attempt in range(_LIST_ATTEMPTS):
            try:
                with _quiet_orbax():
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
        return {"fingerprint": record["fingerprint"], "meta": record["meta"]}

    def _read_record(self, step: int) -> dict[str, Any]:
        """Checkpoint ``step``'s JSON record ``{"fingerprint": ..., "meta": {...}}``, its files
        verified first; :class:`Damaged` when they do not verify, do not read or hold
        anything else."""
        self.verify(step, under="meta/")
        try:
            with _quiet_orbax():
                record = self._manager.restore(step, args=self._ocp.args.Composite(
                    meta=self._ocp.args.JsonRestore())).meta
        except Exception as err:  # orbax and the JSON reader raise many kinds
            raise Damaged(self.directory, step, "meta/metadata", _first_line(err)) from None
        what = record_problem(record)
        if what is None:
            return record
        raise Damaged(self.directory, step, "meta/metadata",
                      f'not a record {{"fingerprint": ..., "meta": {{...}}}} but {what}')

    def verify(self, step: int, under: str = "") -> None:
        """Check checkpoint ``step``'s files (those whose path starts with ``under``) against
        the file list written with it (:data:`FILES`); only a step that passes is read.

        Raises :class:`Damaged` (one short line naming the file and the reason, never its
        contents) when the list is missing (the save did not finish, or a version without
        file lists wrote the step), unreadable or not of the shape ``{"files": {name: [size,
        crc]}}`` (names relative to the step, sizes and CRC-32s integers), or when a file is
        missing, not a regular file, of another size, of other contents (CRC-32), or on disk
        but not in the list.
        """
        step_dir = self.directory / str(step)
        listed = self._file_list(step)
        for name, (size, crc) in sorted(listed.items()):
            if not name.startswith(under):
                continue
            path = step_dir / name
            try:
                info = path.stat()
            except FileNotFoundError:
                raise Damaged(self.directory, step, name, "missing") from None
            except OSError as err:
                raise Damaged(self.directory, step, name, _first_line(err)) from None
            if not stat.S_ISREG(info.st_mode):
                raise Damaged(self.directory, step, name, "not a regular file")
            if info.st_size != size:
                raise Damaged(self.directory, step, name,
                              f"{info.st_size} bytes, {size} were written")
            try:
                changed = _crc32(path) != crc
            except OSError as err:
                raise Damaged(self.directory, step, name, _first_line(err)) from None
            if changed:
                raise Damaged(self.directory, step, name,
                              "its contents changed since it was written (CRC-32)")
        for path in sorted(step_dir.rglob("*")):
            name = path.relative_to(step_dir).as_posix()
            if name.startswith(under) and name != FILES and name not in listed \
                    and not path.is_dir():
                raise Damaged(self.directory, step, name,
                              "not in the file list (added since the save)")

    def _file_list(self, step: int) -> dict[str, tuple[int, int]]:
        """Checkpoint ``step``'s file list, checked for shape: ``{name: (size, crc)}``
        (:class:`Damaged` when it is missing, unreadable or of another shape)."""
        step_dir = self.directory / str(step)

        def damaged(reason: str) -> Damaged:
            return Damaged(self.directory, step, FILES, reason)

        if not step_dir.is_dir():
            raise Damaged(self.directory, step, "", "its folder is gone")
        try:
            listed = json.loads((step_dir / FILES).read_text())
        except FileNotFoundError:
            raise damaged("no file list: the save did not finish, or an older version "
                          "wrote it") from None
        except (OSError, ValueError) as err:  # unreadable, not text, not JSON
            raise damaged(_first_line(err)) from None
        files = listed.get("files") if isinstance(listed, dict) else None
        if not isinstance(files, dict):
            raise damaged('not a file list {"files": {name: [size, crc]}}, but '
                          f"{_short(type(listed).__name__ if files is None else repr(listed))}")
        out: dict[str, tuple[int, int]] = {}
        for name, entry in files.items():
            where = PurePosixPath(name)
            if (where.is_absolute() or ".." in where.parts or str(where) != name
                    or name in ("", ".", FILES)):
                raise damaged(f"lists {_short(repr(name), 40)}, not a file name in the step")
            if not (isinstance(entry, list) and len(entry) == 2 and all(
                    isinstance(v, int) and not isinstance(v, bool) and v >= 0
                    for v in entry)):
                raise damaged(f"{_short(repr(name), 40)}: {_short(repr(entry), 30)} is not "
                              "[size, crc]")
            out[name] = (entry[0], entry[1])
        return out

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
        """Write ``state`` as checkpoint ``step`` (atomically; returns when it is on disk,
        its file list included, in every process) and drop the oldest beyond ``keep``.
        ``meta`` is extra JSON values stored beside it. In a single process, a step ``step``
        already on disk is renamed ``damaged-<step>`` first (kept, with one line on stderr)
        rather than refused; ValueError (one line) when it cannot be renamed.

        An error or an interrupt during the save, and a stop of the command by SIGTERM or
        Ctrl-C (:func:`remove_in_flight`), removes orbax's temporary folder
        (``<step>.orbax-checkpoint-tmp*``); a stop after it leaves a step without its file
        list, which a resume treats as damaged.
        """
        step = check_int("step", step, 0)
        ocp = self._ocp
        record = {"fingerprint": self.fingerprint, "meta": meta or {}}
        storable = jax.tree.map(lambda x: _placeholder(x.dtype) if _is_empty(x) else x,
                                _to_storable(state))
        if (self.directory / str(step)).exists() and jax.process_count() == 1:
            try:  # a resume's restore_newest sets damaged steps aside first
                aside = self._set_aside(step)
            except OSError as err:
                raise ValueError(
                    f"checkpoint {step} in {str(self.directory)!r} cannot be renamed "
                    f"{self._aside_name(step).name} ({_os_reason(err)}) to be written again: "
                    "move it out of the folder by hand") from None
            _warn_stderr(f"warning: checkpoint {step} in {str(self.directory)!r} is written "
                         f"again; the earlier one is kept as {aside.name}")
        saving = (self.directory, step)
        if jax.process_index() == 0:  # the process whose temporary folder orbax makes
            IN_FLIGHT.add(saving)
        try:
            self._manager.save(step, args=ocp.args.Composite(
                state=ocp.args.StandardSave(storable), meta=ocp.args.JsonSave(record)),
                force=True)
            self._manager.wait_until_finished()
        except BaseException:
            if jax.process_index() == 0:  # orbax leaves its temporary folder behind
                _remove_temporary(*saving)
            raise
        finally:
            IN_FLIGHT.discard(saving)
        if jax.process_index() == 0:
            self._write_file_list(step)
        # no process reads (or lists as complete) a step before process 0 wrote its list
        _barrier("jaxrl_pim.checkpoint.file_list")
        self._drop_old()
        return self.directory / str(step)

    def _aside_name(self, step: int) -> Path:
        """``damaged-<step>`` in the folder (``-2``, ... when taken)."""
        aside, n = self.directory / f"damaged-{step}", 1
        while aside.exists():
            n += 1
            aside = self.directory / f"damaged-{step}-{n}"
        return aside

    def _set_aside(self, step: int) -> Path:
        """Rename step ``step`` (a damaged one a resume passed over, which the run will write
        again) to ``damaged-<step>`` (:meth:`_aside_name`), which is no step name: it is
        kept, never deleted. Returns the new path; OSError when it cannot be renamed."""
        aside = self._aside_name(step)
        os.rename(self.directory / str(step), aside)
        self._reload()
        return aside

    def _reload(self) -> None:
        """orbax's listing read again (after this object renamed or deleted a step)."""
        with _quiet_orbax():
            self._manager.reload()

    def _drop_old(self) -> None:
        """Delete all but the newest ``keep`` checkpoints, each first renamed out of the step
        names (atomic), so a kill mid-delete never leaves a listed, incomplete checkpoint.

        A step or folder that cannot be moved or deleted (permissions, a read-only or
        immutable file) is named once in one warning line on stderr and left where it is
        (such a step stays listed, beyond the newest ``keep``): pruning never stops a run.
        """
        if jax.process_index() != 0:
            return
        for old in self.steps()[:-self.keep]:
            path = self.directory / str(old)
            if path in self._undeletable:
                continue
            trash = self.directory / f".deleting-{old}-{os.getpid()}"
            try:
                os.rename(path, trash)
            except FileNotFoundError:
                continue
            except OSError as err:
                self._undeletable.add(path)
                _warn_stderr(f"warning: checkpoint {old} in {str(self.directory)!r} cannot be "
                             f"deleted ({_os_reason(err)}); it is kept beyond the newest "
                             f"{self.keep}: delete it by hand")
                continue
            self._remove(trash)
        for stale in self.directory.glob(".deleting-*"):  # left by a killed process
            self._remove(stale)
        self._reload()

    def _remove(self, path: Path) -> None:
        """Delete the folder ``path`` (out of the step names); one warning line, once, when
        some of it cannot be deleted."""
        if path in self._undeletable:
            return
        err = _rmtree(path)
        if err is not None:
            self._undeletable.add(path)
            _warn_stderr(f"warning: {str(path)!r} cannot be deleted ({_os_reason(err)}); "
                         "delete it by hand")

    def restore(self, template: Any, step: int | None = None, *,
                check: bool = True, partial: bool = False) -> tuple[Any, dict[str, Any]]:
        """Read checkpoint ``step`` (default the newest) into the structure of ``template``.
        With ``partial`` the template may leave out subtrees of the saved tree (None in a
        NamedTuple field, a missing dict key): only its leaves are read (e.g. a run's actors
        without its replay buffers), the rest of the step is never loaded.

        Returns ``(state, meta)``. Raises FileNotFoundError when there is no checkpoint,
        :class:`Damaged` (a ValueError naming the folder and the file) when the step does not
        verify (:meth:`verify`: orbax never reads such a step) or its record is not one, and
        ValueError when the run's kind, the
        fingerprint (unless ``check`` is False: the caller has read the record itself) or a
        leaf's shape / dtype does not match.
        """
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
        try:  # only a verified step reaches orbax: its errors are not about damage
            with _quiet_orbax():
                state = self._read_state(step, abstract, partial)
        except (ValueError, KeyError) as err:
            raise ValueError(f"checkpoint {str(self.directory / str(step))!r} does not match "
                             f"this run's state: {_first_line(err)}") from None
        except OSError as err:  # a verified file that cannot be read now (I/O, permissions)
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

    def _read_state(self, step: int, abstract: Any, partial: bool = False) -> Any:
        """Checkpoint ``step``'s ``state`` item in the structure of ``abstract`` (storable
        ``ShapeDtypeStruct`` leaves). With ``partial`` only ``abstract``'s leaves are read
        (orbax's ``partial_restore`` of the stored tree of names, :func:`_by_name`), as NumPy
        arrays handed to jax."""
        ocp = self._ocp
        if not partial:
            return self._manager.restore(step, args=ocp.args.Composite(
                state=ocp.args.StandardRestore(abstract))).state
        paths, treedef = jax.tree_util.tree_flatten_with_path(abstract)
        item = _by_name(paths)
        args = ocp.args.PyTreeRestore(
            item=item, partial_restore=True,
            restore_args=jax.tree.map(lambda _: ocp.RestoreArgs(restore_type=np.ndarray), item))
        with ocp.Checkpointer(ocp.PyTreeCheckpointHandler()) as reader:
            tree = reader.restore(self.directory / str(step) / "state", args=args)
        leaves = []
        for path, _ in paths:
            leaf = _at(tree, path)
            if not isinstance(leaf, np.ndarray):  # orbax hands back a leaf it does not hold
                raise ValueError(f"it holds no array at {jax.tree_util.keystr(path)}")
            leaves.append(jax.numpy.asarray(leaf))
        return jax.tree.unflatten(treedef, leaves)

    def close(self) -> None:
        """Release the manager's resources (the files stay)."""
        self._manager.close()

    def __enter__(self) -> Checkpoints:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


#: ``(folder, step)`` of the saves in progress in this process (see :func:`remove_in_flight`).
IN_FLIGHT: set[tuple[Path, int]] = set()


def _remove_temporary(folder: Path, step: int) -> None:
    """Delete orbax's temporary folder of a save of ``step`` into ``folder``."""
    for tmp in folder.glob(f"{step}.orbax-checkpoint-tmp*"):
        shutil.rmtree(tmp, ignore_errors=True)


def remove_in_flight() -> None:
    """Remove the temporary folders of saves still in progress (the steps before them stay
    as they were); for a process about to end without unwinding (``os._exit`` on SIGTERM or
    Ctrl-C, see :func:`jaxrl_pim.cli._common.stop_on_signals`)."""
    for folder, step in list(IN_FLIGHT):
        _remove_temporary(folder, step)
        IN_FLIGHT.discard((folder, step))


def _os_reason(err: OSError) -> str:
    """An OS error's reason in a few words (``Permission denied``)."""
    return err.strerror or _first_line(err)


def _rmtree(path: Path) -> OSError | None:
    """Delete the folder ``path`` as far as possible; the first error (other than a file
    already gone), or None when all of it is gone."""
    errors: list[BaseException] = []
    if sys.version_info >= (3, 12):
        kwargs: dict[str, Any] = {"onexc": lambda func, p, exc: errors.append(exc)}
    else:
        kwargs = {"onerror": lambda func, p, info: errors.append(info[1])}
    try:
        shutil.rmtree(path, **kwargs)
    except OSError as err:  # a replaced rmtree, or a failure rmtree does not route
        errors.append(err)
    errors = [e for e in errors if not isinstance(e, FileNotFoundError)]
    return next((e for e in errors if isinstance(e, OSError)), None)


def _name(key: Any) -> Any:
    """A pytree key as orbax names it on disk (a dict key, a NamedTuple field, a list index)."""
    for attr in ("key", "name", "idx"):
        if hasattr(key, attr):
            return getattr(key, attr)
    raise ValueError(f"cannot restore a subtree under the pytree key {key!r}")


def _by_name(paths: list[tuple[Any, Any]]) -> Any:
    """The leaves ``[(key path, leaf)]`` as orbax's stored tree of nested dicts (and lists for
    sequences), for a partial restore."""
    root: dict[Any, Any] = {}
    for path, leaf in paths:
        node = root
        for key in path[:-1]:
            node = node.setdefault(_name(key), {})
        node[_name(path[-1])] = leaf

    def lists(node: Any) -> Any:
        if not isinstance(node, dict):
            return node
        if node and all(isinstance(k, int) for k in node):
            return [lists(node.get(i)) for i in range(max(node) + 1)]
        return {k: lists(v) for k, v in node.items()}

    return lists(root)


def _at(tree: Any, path: tuple[Any, ...]) -> Any:
    """The leaf of orbax's stored tree (:func:`_by_name`) at ``path``."""
    for key in path:
        tree = tree[_name(key)]
    return tree


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
# What a run's checkpoints must match, and reading the newest intact one


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


class Restored(NamedTuple):
    """A checkpoint read by :func:`restore_newest`: its ``step`` (units done), the saved
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


def _warn_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _barrier(name: str) -> None:
    """Every process of a multi-process run waits here for the others (nothing alone)."""
    if jax.process_count() > 1:
        from jax.experimental import multihost_utils

        multihost_utils.sync_global_devices(name)


def restore_newest(checkpoints: Any, template: Callable[[int], Any], *,
                   warn: Callable[[str], None] | None = None, check: bool = True,
                   set_aside: bool = False, partial: bool = False) -> Restored:
    """The newest checkpoint of ``checkpoints`` that restores and verifies (``partial``: only
    the template's leaves are read, :meth:`Checkpoints.restore`).

    Steps are tried newest first; a :class:`Damaged` one (a file missing, truncated or
    rewritten) is passed over, never deleted, and ``warn`` (default: stderr) gets one line
    naming it and the step used instead. A checkpoint of another run or of other shapes
    is refused at once (ValueError), as is a folder whose every step is damaged (the
    newest one's error, saying none is intact). ``template(step)`` gives the structure to
    read step ``step`` into (it may read :meth:`Checkpoints.record` itself, which raises
    :class:`Damaged` too); ``check`` as in :meth:`Checkpoints.restore`. With ``set_aside``
    (a run that resumes and will write those steps again) the damaged steps are renamed
    ``damaged-<step>`` and kept (process 0 renames, every process waits for it); a damaged
    step that cannot be renamed (a read-only or immutable folder) refuses the resume
    (ValueError, one line naming the folder and the step) before any work, since the run
    could not write that step again. FileNotFoundError when the folder holds no checkpoint.
    """
    steps = checkpoints.steps()
    if not steps:
        raise FileNotFoundError(f"no checkpoint in {str(checkpoints.directory)!r}")
    damaged: list[Damaged] = []
    for step in reversed(steps):
        try:
            tree, meta = checkpoints.restore(template(step), step, check=check,
                                             partial=partial)
        except Damaged as err:
            damaged.append(err)
            continue
        kept: dict[int, str] = {}
        if set_aside and damaged:
            _barrier("jaxrl_pim.checkpoint.set_aside")
            why = "it cannot be moved"
            if jax.process_index() == 0:
                for e in damaged:
                    try:
                        kept[e.step] = checkpoints._set_aside(e.step).name
                    except FileNotFoundError:  # gone meanwhile: nothing to set aside
                        continue
                    except OSError as err:
                        why = _os_reason(err)
                        break
            _barrier("jaxrl_pim.checkpoint.set_aside_done")
            checkpoints._reload()
            for e in damaged:  # every process sees a rename that failed on process 0
                if (checkpoints.directory / str(e.step)).exists():
                    raise ValueError(
                        f"checkpoint {e.step} in {str(e.folder)!r} is damaged "
                        f"({e.step}/{e.file}) and cannot be renamed "
                        f"{checkpoints._aside_name(e.step).name} ({why}), "
                        "so the resumed run could not write it again: move it out of the "
                        "folder by hand, then --resume again")
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
