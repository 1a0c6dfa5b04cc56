"""The four multi-agent replay layouts, one module of pure functions each (flashbax style):
``per_agent``, ``interleaved``, ``packed`` and ``compact``.

Every layout module has ``init(spec) -> BufferState``, ``add(spec, state, transition) ->
BufferState``, ``gather(spec, state, indices, time_major=False) -> Batch`` and
``capacity(state) -> int``, over a static :class:`~jaxrl_pim.replay.layouts.common.LayoutSpec`;
:func:`jaxrl_pim.replay.make_buffer` picks one from :data:`MODULES` and binds the spec with
:func:`functools.partial`. Storage shapes are documented in each module.
"""

from __future__ import annotations

from types import ModuleType

from jaxrl_pim.replay.layouts import compact, interleaved, packed, per_agent
from jaxrl_pim.replay.layouts.common import LayoutSpec

#: Layout name (:data:`jaxrl_pim.replay.LAYOUTS`) -> its module of functions.
MODULES: dict[str, ModuleType] = {
    "per_agent": per_agent,
    "interleaved": interleaved,
    "packed": packed,
    "compact": compact,
}

__all__ = ["MODULES", "LayoutSpec", "compact", "interleaved", "packed", "per_agent"]
