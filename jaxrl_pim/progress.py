"""Progress display for long runs, driven from inside jit through an opt-in callback.

Trainers stay pure: they accept an optional ``callback(step, total, metrics)`` and, when one
is given, call it through ``jax.debug.callback``. ``RichProgress`` is a ready-made callback
that shows a bar on the terminal and is silent when stdout is not a terminal.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn


class RichProgress:
    """Context manager and callback: ``with RichProgress("train") as cb: train(..., cb)``.

    ``cb(step, total, metrics)`` advances the bar to ``step`` of ``total`` and shows the
    scalar entries of ``metrics`` (a dict of numbers) next to it.
    """

    def __init__(self, description: str, enabled: bool | None = None) -> None:
        self.description = description
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self._progress: Progress | None = None
        self._task: Any = None

    def __enter__(self) -> RichProgress:
        if self.enabled:
            self._progress = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TextColumn("{task.fields[info]}"),
                console=Console(stderr=True),
                transient=False,
            )
            self._progress.__enter__()
            self._task = self._progress.add_task(self.description, total=None, info="")
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._progress is not None:
            self._progress.__exit__(*exc)
            self._progress = None

    def __call__(self, step: Any, total: Any, metrics: dict[str, Any] | None = None) -> None:
        if self._progress is None:
            return
        info = ""
        if metrics:
            info = "  ".join(f"{k}={float(np.asarray(v).mean()):.4g}" for k, v in metrics.items())
        self._progress.update(
            self._task, completed=int(np.asarray(step)), total=int(np.asarray(total)), info=info
        )
