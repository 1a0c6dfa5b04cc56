"""Deprecated: the QAT study moved to :mod:`jaxrl_pim.studies.qat` (tables and plots in
:mod:`jaxrl_pim.studies.report`). This module re-exports the old names for one release."""

from jaxrl_pim._deprecated import moved_module
from jaxrl_pim.studies.qat import (
    FULL_QAT_TASKS,
    QUICK_QAT_TASKS,
    QATConfig,
    QATStudyConfig,
    run_qat,
    with_qat,
)
from jaxrl_pim.studies.report import min_qat_ratio, plot_qat, qat_table

moved_module(__name__, "jaxrl_pim.studies.qat")

__all__ = [
    "FULL_QAT_TASKS",
    "QUICK_QAT_TASKS",
    "QATConfig",
    "QATStudyConfig",
    "min_qat_ratio",
    "plot_qat",
    "qat_table",
    "run_qat",
    "with_qat",
]
