"""What a tabular run would cost on processing-in-memory hardware: a counted-work cost model.

:func:`estimate` takes the same :class:`~jaxrl_pim.tabular.TabularConfig` the trainer runs
(or a :class:`Workload` with its fields), the dataset's row count and a :class:`PIMSystem`,
and returns a :class:`PIMEstimate` with SwiftRL's time breakdown (``transfer_in``,
``kernel``, ``sync``, ``transfer_out``, ``total``, seconds). Pure host code: importing it
loads no JAX.

* :mod:`.model`: the model (operation costs, cycles and DMA per update, the breakdown) and
  :func:`side_by_side`, a measured-vs-projected table; its docstring states every equation
  and what is not modelled.
* :mod:`.presets`: ``UPMEM`` (the SwiftRL system), ``UPMEM_V1B``, ``HBM_PIM`` and ``IDEAL``,
  every parameter's source in :data:`SOURCES`, and :func:`calibrate` (two parameters, each
  on one published figure).

See docs/pim.md for the validation against the published figures and the what-if study.
"""

from jaxrl_pim.pim.model import (
    ENTRY_BYTES,
    PHASES,
    ROW_BYTES,
    SYSTEM_NAMES,
    UPMEM_OPS,
    OpCosts,
    PIMEstimate,
    PIMSystem,
    Workload,
    cycles_per_update,
    dma_per_update,
    estimate,
    lanes_per_dpu,
    side_by_side,
    table_in_wram,
    update_instructions,
)
from jaxrl_pim.pim.presets import (
    CALIBRATED,
    CALIBRATION_TARGETS,
    HBM_PIM,
    IDEAL,
    SOURCES,
    SYSTEMS,
    UPMEM,
    UPMEM_V1B,
    calibrate,
    get_system,
)

__all__ = [
    "CALIBRATED",
    "CALIBRATION_TARGETS",
    "ENTRY_BYTES",
    "HBM_PIM",
    "IDEAL",
    "PHASES",
    "ROW_BYTES",
    "SOURCES",
    "SYSTEMS",
    "SYSTEM_NAMES",
    "UPMEM",
    "UPMEM_OPS",
    "UPMEM_V1B",
    "OpCosts",
    "PIMEstimate",
    "PIMSystem",
    "Workload",
    "calibrate",
    "cycles_per_update",
    "dma_per_update",
    "estimate",
    "get_system",
    "lanes_per_dpu",
    "side_by_side",
    "table_in_wram",
    "update_instructions",
]
