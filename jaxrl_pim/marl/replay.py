"""Deprecated location of :mod:`jaxrl_pim.replay` (kept for one release).

The replay components serve every learner (``marl``, ``rl``, ``actorq``), so they moved to
the top-level :mod:`jaxrl_pim.replay`; ``from jaxrl_pim.marl.replay import X`` still works
and warns.
"""

from __future__ import annotations

import warnings
from typing import Any

from jaxrl_pim import replay as _replay


def __getattr__(name: str) -> Any:
    value = getattr(_replay, name)
    warnings.warn("jaxrl_pim.marl.replay moved to jaxrl_pim.replay", DeprecationWarning,
                  stacklevel=2)
    return value
