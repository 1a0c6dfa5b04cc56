"""jaxrl_pim: memory-bound reinforcement-learning workloads mapped onto accelerators.

Sub-packages, imported on first use (``import jaxrl_pim`` itself loads no jax):
``envs`` (worlds that step, the ``make`` factory), ``data`` (offline datasets), ``tabular``
(SwiftRL on vmapped lanes), ``replay`` (buffers and samplers), ``marl`` (multi-agent
actor-critics), ``rl`` (single-process learners and networks), ``quant`` (quantizers),
``actorq`` (actor-learner RL with quantized actors), ``studies`` (PTQ / QAT studies), plus
``report``, ``provenance``, ``results_file``, ``timing`` and ``testing``. ``jaxrl_pim.rl.dqn``
style imports work as usual.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

#: The sub-packages and modules ``jaxrl_pim.<name>`` gives lazily.
SUBMODULES: tuple[str, ...] = (
    "actorq", "data", "envs", "marl", "pim", "provenance", "quant", "replay", "report",
    "results_file", "rl", "studies", "tabular", "testing", "timing",
)

if TYPE_CHECKING:  # the static import graph sees every sub-package
    from jaxrl_pim import (  # noqa: F401
        actorq,
        data,
        envs,
        marl,
        pim,
        provenance,
        quant,
        replay,
        report,
        results_file,
        rl,
        studies,
        tabular,
        testing,
        timing,
    )


def __getattr__(name: str) -> Any:
    if name in SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *SUBMODULES])


__all__ = ["SUBMODULES", "__version__"]
