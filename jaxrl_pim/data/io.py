"""Dataset files: ``.npz`` (no pickle) and the published four-column text format.

The text format has one transition per line, four integers ``s a r s'`` separated by
whitespace, as in the SwiftRL datasets. It has no terminated flag: pass ``terminal_states``
(a boolean mask ``[S]``) to mark rows whose ``s'`` is terminal; without it every row
bootstraps, which is equivalent when terminal states never appear as ``s`` and Q starts at 0.
Writes are atomic (temporary name, then rename).
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import numpy as np

from jaxrl_pim.data.transitions import Dataset, compact, validate
from jaxrl_pim.report import atomic_save


def save_npz(path: str | os.PathLike[str], t: Dataset) -> Path:
    """Save ``t`` as an uncompressed ``.npz`` with one array per field."""
    arrays = {f: np.asarray(getattr(t, f)) for f in Dataset._fields}

    def writer(tmp: str) -> None:
        with open(tmp, "wb") as fh:
            np.savez(fh, **arrays)

    return atomic_save(path, writer)


def load_npz(path: str | os.PathLike[str], num_states: int, num_actions: int) -> Dataset:
    """Load and validate a dataset written by :func:`save_npz` (pickle disabled)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"dataset file not found: {path}")
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {name: z[name] for name in z.files}
    except (OSError, EOFError, ValueError, zipfile.BadZipFile) as err:
        raise ValueError(f"{path}: not a readable .npz file ({err})") from err
    missing = [f for f in Dataset._fields if f not in arrays]
    if missing:
        raise ValueError(f"{path}: missing arrays {missing}; has {sorted(arrays)}")
    t = Dataset(*(arrays[f] for f in Dataset._fields))
    validate(t, num_states, num_actions, name=str(path))
    return compact(t, num_states)


def write_text(path: str | os.PathLike[str], t: Dataset) -> Path:
    """Write the four-column text format ``s a r s'`` (rewards must be integers)."""
    r = np.asarray(t.reward).reshape(-1)
    if not np.array_equal(r, np.round(r)):
        raise ValueError("the four-column text format holds integer rewards only")
    table = np.stack(
        [np.asarray(x).reshape(-1).astype(np.int64) for x in (t.state, t.action, r, t.next_state)],
        axis=1,
    )
    return atomic_save(path, lambda tmp: np.savetxt(tmp, table, fmt="%d"))


def read_text(
    path: str | os.PathLike[str],
    num_states: int,
    num_actions: int,
    terminal_states: np.ndarray | None = None,
) -> Dataset:
    """Read and validate the four-column text format (see module docstring)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"dataset file not found: {path}")
    rows = []
    with open(path) as fh:
        for lineno, line in enumerate(fh, 1):
            parts = line.split()
            if not parts:
                continue
            if len(parts) != 4:
                raise ValueError(f"{path}:{lineno}: expected 4 numbers 's a r s'', got {line!r}")
            try:
                rows.append([float(x) for x in parts])
            except ValueError:
                raise ValueError(f"{path}:{lineno}: not numbers: {line.strip()!r}") from None
    if not rows:
        raise ValueError(f"{path}: empty dataset (no transitions)")
    table = np.asarray(rows)
    ints = table[:, [0, 1, 3]]
    if not np.array_equal(ints, np.round(ints)):
        bad = int(np.flatnonzero((ints != np.round(ints)).any(axis=1))[0]) + 1
        raise ValueError(f"{path}: row {bad}: states and actions must be integers")
    s, a, s2 = (table[:, i].astype(np.int64) for i in (0, 1, 3))
    if terminal_states is None:
        term = np.zeros(len(s), dtype=bool)
    else:
        mask = np.asarray(terminal_states, dtype=bool)
        term = mask[np.clip(s2, 0, len(mask) - 1)]
    t = Dataset(s, a, table[:, 2].astype(np.float32), s2, term)
    validate(t, num_states, num_actions, name=str(path))
    return compact(t, num_states)


def load(
    path: str | os.PathLike[str],
    num_states: int,
    num_actions: int,
    terminal_states: np.ndarray | None = None,
) -> Dataset:
    """Load ``.npz`` or (any other suffix) the four-column text format."""
    if str(path).endswith(".npz"):
        return load_npz(path, num_states, num_actions)
    return read_text(path, num_states, num_actions, terminal_states)
