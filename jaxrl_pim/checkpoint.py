"""Checkpoints for long runs: a folder of numbered, atomic orbax checkpoints.

One :class:`Checkpoints` object manages a run's folder: ``save(step, state)`` writes the
pytree ``state`` (any arrays: networks, optimiser moments, replay buffers, PRNG keys,
counters) and a JSON ``meta`` record under ``<folder>/<step>/``; only the newest ``keep``
are kept. orbax writes each checkpoint under a temporary name and renames it when complete,
so a run killed at any moment leaves the previous checkpoints intact and never a partial
one that :meth:`Checkpoints.latest` would return. Saves are synchronous (the call returns
when the checkpoint is on disk).

The meta record carries a ``fingerprint`` (e.g. the run's config as JSON values): restoring
into a run whose fingerprint differs raises ValueError naming the first differing field, so
a checkpoint of one configuration is never loaded into another. Restoring needs a
``template`` (the pytree structure with shapes and dtypes, e.g. ``jax.eval_shape(init,
key)``), against which every leaf is checked.

Example::

    ckpt = Checkpoints("runs/maddpg", fingerprint=config_dict, keep=3)
    step = ckpt.latest()
    if step is not None:
        state, meta = ckpt.restore(template)
    ...
    ckpt.save(episode, state, meta={"episodes_done": episode})
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

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
        record = self._manager.restore(step, args=self._ocp.args.Composite(
            meta=self._ocp.args.JsonRestore())).meta
        return {"fingerprint": record.get("fingerprint"), "meta": record.get("meta", {})}

    def save(self, step: int, state: Any, meta: dict[str, Any] | None = None) -> Path:
        """Write ``state`` as checkpoint ``step`` (atomically; returns when it is on disk)
        and drop the oldest beyond ``keep``. ``meta`` is extra JSON values stored beside it.
        """
        step = check_int("step", step, 0)
        ocp = self._ocp
        record = {"fingerprint": self.fingerprint, "meta": meta or {}}
        self._manager.save(step, args=ocp.args.Composite(
            state=ocp.args.StandardSave(_to_storable(state)), meta=ocp.args.JsonSave(record)),
            force=True)
        self._manager.wait_until_finished()
        self._drop_old()
        return self.directory / str(step)

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

    def restore(self, template: Any, step: int | None = None) -> tuple[Any, dict[str, Any]]:
        """Read checkpoint ``step`` (default the newest) into the structure of ``template``.

        Returns ``(state, meta)``. Raises FileNotFoundError when there is no checkpoint and
        ValueError when the fingerprint or a leaf's shape / dtype does not match.
        """
        ocp = self._ocp
        step = self.latest() if step is None else step
        if step is None or step not in self.steps():
            raise FileNotFoundError(f"no checkpoint {'' if step is None else step} in "
                                    f"{str(self.directory)!r}")
        record = self._manager.restore(step, args=ocp.args.Composite(
            meta=ocp.args.JsonRestore())).meta
        diff = _first_difference(record.get("fingerprint"), _json(self.fingerprint))
        if diff is not None:
            raise ValueError(f"checkpoint {str(self.directory / str(step))!r} belongs to "
                             f"another run configuration ({diff})")
        abstract = jax.tree.map(
            lambda x: jax.ShapeDtypeStruct(np.shape(x), jax.numpy.result_type(x)),
            _to_storable(template))
        try:
            state = self._manager.restore(step, args=ocp.args.Composite(
                state=ocp.args.StandardRestore(abstract))).state
        except (ValueError, KeyError) as err:
            raise ValueError(f"checkpoint {str(self.directory / str(step))!r} does not match "
                             f"this run's state: {str(err).splitlines()[0]}") from None
        leaves_t, treedef = jax.tree.flatten(template)
        leaves = jax.tree.leaves(state)
        if len(leaves) != len(leaves_t):
            raise ValueError(f"checkpoint holds {len(leaves)} arrays, expected {len(leaves_t)}")
        out = []
        for i, (x, t) in enumerate(zip(leaves, leaves_t, strict=True)):
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


def _json(value: Any) -> Any:
    """``value`` as it reads back from JSON (tuples -> lists, NumPy scalars -> Python)."""
    import json

    from jaxrl_pim.report import to_jsonable

    return json.loads(json.dumps(to_jsonable(value)))
