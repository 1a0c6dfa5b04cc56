"""Wall-clock phase timing that is honest about JAX's asynchronous dispatch.

``PhaseTimer`` accumulates seconds per named phase. Use ``timer.phase(name)`` as a context
manager and hand the phase's outputs to ``timer.block(x)`` (or return them through
``timer.timed``), so the time includes the device work and not just the dispatch.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import jax

T = TypeVar("T")


class PhaseTimer:
    """Accumulates wall-clock seconds per phase name, in first-seen order."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Time the body of a ``with`` block and add it to ``name``."""
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.add(name, time.perf_counter() - t0)

    def add(self, name: str, seconds: float) -> None:
        """Add ``seconds`` to phase ``name``."""
        self.seconds[name] = self.seconds.get(name, 0.0) + float(seconds)

    def timed(self, name: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Call ``fn`` and block on its result, charging the time to ``name``."""
        with self.phase(name):
            out = fn(*args, **kwargs)
            jax.block_until_ready(out)
        return out

    @staticmethod
    def block(tree: T) -> T:
        """Block until every array in ``tree`` is computed; returns ``tree``."""
        return jax.block_until_ready(tree)

    def as_dict(self, total: bool = True) -> dict[str, float]:
        """Seconds per phase; with ``total`` a ``total`` key holding the sum."""
        out = dict(self.seconds)
        if total:
            out["total"] = sum(self.seconds.values())
        return out


def time_call(fn: Callable[[], Any], repeats: int = 3, warmup: int = 1) -> float:
    """Best-of-``repeats`` wall seconds of ``fn()`` (blocked), after ``warmup`` calls."""
    for _ in range(warmup):
        jax.block_until_ready(fn())
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(fn())
        best = min(best, time.perf_counter() - t0)
    return best
