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


def time_per_call(fn: Callable[..., Any], *args: Any, repeats: int = 3,
                  loop_s: float = 0.1) -> dict[str, float]:
    """Seconds per call of a fast jitted ``fn(*args)``, dispatch included.

    One call compiles (``compile_s``: its wall seconds, compilation and one run), one more
    sizes a loop of ``calls_per_loop`` calls lasting about ``loop_s`` seconds; the result is
    the best over ``repeats`` such loops (each blocked once at its end) divided by the calls.
    Returns ``{"seconds_per_call", "compile_s", "calls_per_loop"}``.
    """
    t0 = time.perf_counter()
    jax.block_until_ready(fn(*args))
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    jax.block_until_ready(fn(*args))
    once = max(time.perf_counter() - t0, 1e-6)
    calls = max(1, int(loop_s / once))
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(calls):
            out = fn(*args)
        jax.block_until_ready(out)
        best = min(best, (time.perf_counter() - t0) / calls)
    return {"seconds_per_call": best, "compile_s": compile_s, "calls_per_loop": calls}
