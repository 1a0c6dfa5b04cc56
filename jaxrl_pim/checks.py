"""Host-side input validation shared by every config and data loader.

Every check raises ``ValueError`` with a message that names the field, the value and what
is allowed, so a user can act on it (design contract 7). These run once on the host, never
inside jit.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable
from typing import Any


def _numpy_scalar(value: Any, *kinds: str) -> bool:
    """Whether ``value`` is an instance of NumPy's scalar types ``kinds`` (``"integer"``,
    ``"floating"``, ``"bool_"``). NumPy is not imported here (a command's cheap checks run
    before it): while it is not loaded, no NumPy value exists."""
    np = sys.modules.get("numpy")
    return np is not None and isinstance(value, tuple(getattr(np, k) for k in kinds))


def check_int(name: str, value: Any, lo: int | None = None, hi: int | None = None) -> int:
    """Return ``value`` as int if it is an integer in ``[lo, hi]``; raise ValueError otherwise."""
    if isinstance(value, bool) or not (isinstance(value, int) or _numpy_scalar(value, "integer")):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    value = int(value)
    _check_bounds(name, value, lo, hi)
    return value


def check_float(
    name: str,
    value: Any,
    lo: float | None = None,
    hi: float | None = None,
    *,
    lo_open: bool = False,
    hi_open: bool = False,
) -> float:
    """Return ``value`` as float if finite and inside the (optionally open) interval."""
    if isinstance(value, bool) or not (isinstance(value, int | float)
                                       or _numpy_scalar(value, "integer", "floating")):
        raise ValueError(f"{name} must be a number, got {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    if lo is not None and (value < lo or (lo_open and value == lo)):
        raise ValueError(f"{name} must be {'>' if lo_open else '>='} {lo}, got {value!r}")
    if hi is not None and (value > hi or (hi_open and value == hi)):
        raise ValueError(f"{name} must be {'<' if hi_open else '<='} {hi}, got {value!r}")
    return value


def check_bool(name: str, value: Any) -> bool:
    """Return ``value`` if it is a bool (``True`` / ``False``, NumPy's too); raise ValueError
    otherwise (``1`` or ``"yes"`` is not a bool)."""
    if not (isinstance(value, bool) or _numpy_scalar(value, "bool_")):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return bool(value)


#: The widest network layer a config accepts by default (:func:`check_widths`).
MAX_LAYER_WIDTH = 65_536


def check_widths(name: str, value: Any, max_width: int = MAX_LAYER_WIDTH,
                 max_layers: int | None = None) -> tuple[int, ...]:
    """Return ``value`` if it is a non-empty tuple of layer widths (at most ``max_layers``),
    each an integer in ``[1, max_width]``; raise ValueError naming ``name[i]`` otherwise."""
    if not isinstance(value, tuple) or not value or (max_layers is not None
                                                     and len(value) > max_layers):
        most = "" if max_layers is None else f" (at most {max_layers})"
        raise ValueError(f"{name} must be a non-empty tuple of layer widths{most}, got "
                         f"{value!r}")
    for i, width in enumerate(value):
        check_int(f"{name}[{i}]", width, 1, max_width)
    return value


#: Largest value of the trainers' int32 counters (env steps, episodes, sync rounds, update
#: rounds, episode indices): a count or period above it would wrap inside jit.
INT32_MAX = 2**31 - 1

#: Largest PRNG seed: without x64, ``jax.random.PRNGKey`` / ``jax.random.key`` keep a seed's
#: low 32 bits (``2**32`` gives the key of 0, ``-1`` that of ``2**32 - 1``; above ``2**63``
#: they raise OverflowError), so ``0 .. 2**32 - 1`` are the distinct seeds.
MAX_SEED = 2**32 - 1


#: Largest buffer capacity (rows) of every buffer and sampler: int32 ring positions stay below
#: 2^31, and a priority tree over ``2^30`` leaves has ``2^31`` nodes, the most int32 indexes.
MAX_CAPACITY = 2**30


def check_capacity(capacity: int, name: str = "capacity") -> int:
    """``capacity`` (rows) as an int in ``[1, MAX_CAPACITY]``; otherwise a ValueError naming
    ``name`` (the caller's field, e.g. ``"buffer_capacity"`` of a config). The one check of
    a replay size: every buffer and sampler applies it once, at construction (re-exported by
    :mod:`jaxrl_pim.replay`)."""
    return check_int(name, capacity, lo=1, hi=MAX_CAPACITY)


def special_file(path: Any) -> str | None:
    """What ``path`` is when it exists and is not a regular file (``"a folder"``, ``"a
    symbolic link"``, ``"a FIFO"``, ``"a character device"``, ``"a block device"``, ``"a
    socket"``), None for a regular file or a missing path. A final symbolic link is not
    followed (it is what the path is). The one test of what an atomic write may replace."""
    import os
    import stat

    try:
        mode = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):  # missing, or under a file
        return None
    for test, kind in ((stat.S_ISREG, None), (stat.S_ISDIR, "a folder"),
                       (stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return kind
    return "not a regular file"


def check_replaceable(path: Any) -> None:
    """Refuse a path an atomic write may not replace (:func:`special_file`): a folder raises
    IsADirectoryError, anything else but a regular file or a missing path ValueError, each
    saying what the path is and what to give instead."""
    kind = special_file(path)
    if kind == "a folder":
        raise IsADirectoryError(f"{path} is a folder; give a file name")
    if kind is not None:
        raise ValueError(f"{path} is {kind}, not a regular file; the output is written to a "
                         "new file renamed onto the path: give a file's path")


def check_choice(name: str, value: Any, choices: Iterable[Any]) -> Any:
    """Return ``value`` if it is one of ``choices``; raise ValueError listing them otherwise."""
    choices = tuple(choices)
    if value not in choices:
        allowed = ", ".join(repr(c) for c in choices)
        raise ValueError(f"{name} must be one of {allowed}; got {value!r}")
    return value


def check_finite(name: str, array: Any) -> None:
    """Raise ValueError if a float array holds NaN or infinite values (names the first one)."""
    import numpy as np

    arr = np.asarray(array)
    if arr.dtype.kind == "f":
        bad = ~np.isfinite(arr)
        if bad.any():
            idx = int(np.flatnonzero(bad.reshape(-1))[0])
            raise ValueError(
                f"{name} holds {int(bad.sum())} NaN/infinite value(s); first at flat index {idx}"
            )


def check_index_range(name: str, array: Any, n: int) -> None:
    """Raise ValueError unless every entry of an integer array lies in ``[0, n)``.

    JAX gathers clamp out-of-range indices silently, so this must run before jit.
    """
    import numpy as np

    arr = np.asarray(array)
    if arr.dtype.kind not in "iu":
        raise ValueError(f"{name} must hold integers, got dtype {arr.dtype}")
    if arr.size == 0:
        return
    lo, hi = int(arr.min()), int(arr.max())
    if lo < 0 or hi >= n:
        bad = lo if lo < 0 else hi
        where = int(np.flatnonzero(arr.reshape(-1) == bad)[0])
        raise ValueError(
            f"{name} must lie in [0, {n - 1}]; found {bad} at row {where}"
        )


def _check_bounds(name: str, value: int, lo: int | None, hi: int | None) -> None:
    if lo is not None and value < lo:
        raise ValueError(f"{name} must be >= {lo}, got {value}")
    if hi is not None and value > hi:
        raise ValueError(f"{name} must be <= {hi}, got {value}")
