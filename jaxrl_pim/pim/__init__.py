"""What a tabular run would cost on processing-in-memory hardware: a counted-work cost model.

:func:`estimate` takes the same :class:`~jaxrl_pim.tabular.TabularConfig` the trainer runs
(the one workload description, from the jax-free :mod:`jaxrl_pim.tabular.config`), the
dataset's row count and a :class:`PIMSystem`
(``pim.SWIFTRL`` for SwiftRL's own machine), and returns a :class:`PIMEstimate` with
SwiftRL's time breakdown (``transfer_in``, ``kernel``, ``sync``, ``transfer_out``,
``total``, seconds). Pure host code: importing it
loads no JAX.

* :mod:`.model`: the model (operation costs, cycles and DMA per update, the breakdown) and
  :func:`side_by_side`, a measured-vs-projected table; its docstring states every equation
  and what is not modelled.
* :mod:`.presets`: ``SWIFTRL`` (SwiftRL's machine and host code as published: 2,524 DPUs
  at 425 MHz, serial per-DPU dataset copies, the fp32 update promoted to double),
  ``UPMEM`` (the generic system PrIM characterised), ``UPMEM_V1B``, ``HBM_PIM`` and
  ``IDEAL``, every parameter's source in :data:`SOURCES`, and :func:`calibrate` (three
  parameters, each on one published figure).
* :mod:`.sensitivity`: every unverified cost with its stated plausible range, the presets
  refitted at each end (:func:`~.sensitivity.presets_at`), a prediction's range over them
  (:func:`~.sensitivity.bands`), and the lines a projection prints about its basis
  (:func:`~.sensitivity.projection_notes`: DPUs used, instructions and cycles per update,
  the largest phase and the parameter it depends on, from :func:`phase_terms`, which splits
  every phase into the parameters its seconds come from).
* :mod:`.released`: what the authors released, as evidence: PrIM's ADD profiles (the values
  the model's ADD costs and pipeline rule are tested against) and SwiftRL's multi-agent
  kernel costed as built.

See docs/pim.md for the validation against the published figures and the what-if study.
"""

from jaxrl_pim.pim import released, sensitivity
from jaxrl_pim.pim.model import (
    ENTRY_BYTES,
    LITERAL_PRECISIONS,
    MODEL_FIELDS,
    PHASES,
    ROW_BYTES,
    SYSTEM_NAMES,
    TRANSFER_MODES,
    TRANSFER_PHASES,
    UPMEM_OPS,
    OpCosts,
    PIMEstimate,
    PIMSystem,
    Transfer,
    cycles_per_update,
    dma_cycles,
    dma_per_update,
    estimate,
    lanes_per_dpu,
    model_fields,
    side_by_side,
    table_in_wram,
    transfer_seconds,
    update_instructions,
)
from jaxrl_pim.pim.presets import (
    CALIBRATED,
    CALIBRATION_TARGETS,
    HBM_PIM,
    IDEAL,
    SOURCES,
    SWIFTRL,
    SWIFTRL_BASE,
    SYSTEMS,
    UPMEM,
    UPMEM_BASE,
    UPMEM_V1B,
    calibrate,
    calibrated_presets,
    get_system,
    with_host_latency,
)
from jaxrl_pim.pim.sensitivity import largest_phase, phase_terms

__all__ = [
    "CALIBRATED",
    "CALIBRATION_TARGETS",
    "ENTRY_BYTES",
    "HBM_PIM",
    "IDEAL",
    "LITERAL_PRECISIONS",
    "MODEL_FIELDS",
    "PHASES",
    "ROW_BYTES",
    "SOURCES",
    "SWIFTRL",
    "SWIFTRL_BASE",
    "SYSTEMS",
    "SYSTEM_NAMES",
    "TRANSFER_MODES",
    "TRANSFER_PHASES",
    "UPMEM",
    "UPMEM_BASE",
    "UPMEM_OPS",
    "UPMEM_V1B",
    "OpCosts",
    "PIMEstimate",
    "PIMSystem",
    "Transfer",
    "calibrate",
    "calibrated_presets",
    "cycles_per_update",
    "dma_cycles",
    "dma_per_update",
    "estimate",
    "get_system",
    "lanes_per_dpu",
    "largest_phase",
    "model_fields",
    "phase_terms",
    "released",
    "sensitivity",
    "side_by_side",
    "table_in_wram",
    "transfer_seconds",
    "update_instructions",
    "with_host_latency",
]
