"""Dataset files: ``.npz`` (no pickle) and a plain text format.

Text: one transition per line, ``s a r s' [terminated]`` separated by whitespace: integer
state ``s`` in ``[0, S)``, integer action ``a`` in ``[0, A)``, reward ``r`` (a number; written
as an integer), integer next state ``s'`` in ``[0, S)`` and, optionally, ``terminated`` (``1``
when ``s'`` ends the episode, so the row does not bootstrap; ``0`` otherwise). Every line of a
file has the same number of columns. The four-column form is the SwiftRL datasets' format; it
has no flag: pass ``terminal_states`` (a boolean mask ``[S]``) to mark rows whose ``s'`` is
terminal; without it every row bootstraps, which is equivalent when terminal states never
appear as ``s`` and Q starts at 0. Blank lines and lines starting with ``#`` are skipped.

``.npz``: one array per field of :class:`~jaxrl_pim.data.Dataset`, all of one shape ``[M]``:
``state``, ``action``, ``next_state`` (integers), ``reward`` (float), ``terminated`` (bool).

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


def write_text(path: str | os.PathLike[str], t: Dataset, terminated: bool = True) -> Path:
    """Write the text format: ``s a r s' terminated`` lines, or with ``terminated=False`` the
    four-column ``s a r s'`` (the flag is then lost). Rewards must be integers."""
    r = np.asarray(t.reward).reshape(-1)
    if not np.array_equal(r, np.round(r)):
        raise ValueError("the text format holds integer rewards only (use save_npz)")
    cols = [t.state, t.action, r, t.next_state] + ([t.terminated] if terminated else [])
    table = np.stack([np.asarray(x).reshape(-1).astype(np.int64) for x in cols], axis=1)
    return atomic_save(path, lambda tmp: np.savetxt(tmp, table, fmt="%d"))


def read_text(
    path: str | os.PathLike[str],
    num_states: int,
    num_actions: int,
    terminal_states: np.ndarray | None = None,
) -> Dataset:
    """Read and validate the text format (see module docstring).

    ``terminal_states`` (boolean ``[S]``) marks rows whose ``s'`` is terminal in a
    four-column file; a five-column file carries its own flags, which must then agree with it.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"dataset file not found: {path}")
    rows, width = [], None
    with open(path) as fh:
        for lineno, line in enumerate(fh, 1):
            parts = line.split()
            if not parts or parts[0].startswith("#"):
                continue
            if len(parts) not in (4, 5) or (width is not None and len(parts) != width):
                want = "4 or 5" if width is None else str(width)
                raise ValueError(f"{path}:{lineno}: expected {want} numbers "
                                 f"\"s a r s' [terminated]\", got {line.strip()!r}")
            width = len(parts)
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
    term = np.zeros(len(s), dtype=bool)
    if width == 5:
        flags = table[:, 4]
        if not np.isin(flags, (0, 1)).all():
            bad = int(np.flatnonzero(~np.isin(flags, (0, 1)))[0]) + 1
            raise ValueError(f"{path}: row {bad}: terminated must be 0 or 1, got {flags[bad - 1]}")
        term = flags.astype(bool)
    t = Dataset(s, a, table[:, 2].astype(np.float32), s2, term)
    validate(t, num_states, num_actions, name=str(path))
    if terminal_states is not None:
        mask = np.asarray(terminal_states, dtype=bool)
        if mask.shape != (num_states,):
            raise ValueError(f"terminal_states must be a boolean mask [{num_states}], got "
                             f"shape {mask.shape}")
        from_mask = mask[s2]
        if width == 5 and not np.array_equal(term, from_mask):
            bad = int(np.flatnonzero(term != from_mask)[0]) + 1
            raise ValueError(f"{path}: row {bad}: terminated is {int(term[bad - 1])} but "
                             f"terminal_states says {int(from_mask[bad - 1])} for s'="
                             f"{s2[bad - 1]}")
        t = t._replace(terminated=from_mask)
    return compact(t, num_states)


def load(
    path: str | os.PathLike[str],
    num_states: int,
    num_actions: int,
    terminal_states: np.ndarray | None = None,
) -> Dataset:
    """Load ``.npz`` or (any other suffix) the text format (see the module docstring);
    ``terminal_states`` marks terminal ``s'`` in text files (see :func:`read_text`)."""
    if str(path).endswith(".npz"):
        return load_npz(path, num_states, num_actions)
    return read_text(path, num_states, num_actions, terminal_states)
