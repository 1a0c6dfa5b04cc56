"""Deprecated: the PTQ study moved to :mod:`jaxrl_pim.studies` (``studies.ptq``,
``studies.gap``, ``studies.tasks``, tables in ``studies.report``). This module re-exports the
old names for one release."""

from jaxrl_pim._deprecated import moved_module
from jaxrl_pim.studies.gap import GAP_ABLATION_ALPHA, gap_ablation_tasks, run_gap_ablation
from jaxrl_pim.studies.ptq import (
    DEFAULT_BITS,
    SCHEMES,
    PTQConfig,
    evaluate_formats,
    format_specs,
    make_paired_evaluate,
    policy_kind,
    quant_spec,
    quantize_seeds,
    return_ratio,
    run_ptq,
    summarize_format,
)
from jaxrl_pim.studies.report import (
    bits_table,
    fmt,
    gap_table,
    int8_min_return_ratio,
    is_number,
    plot_bits,
    ptq_table,
)
from jaxrl_pim.studies.tasks import (
    FULL_TASKS,
    QUICK_TASKS,
    TASKS,
    UNLEARNED_TASKS,
    StudyTask,
    final_train_return,
    train_seeds,
)

moved_module(__name__, "jaxrl_pim.studies")

__all__ = [
    "DEFAULT_BITS",
    "FULL_TASKS",
    "GAP_ABLATION_ALPHA",
    "QUICK_TASKS",
    "SCHEMES",
    "TASKS",
    "UNLEARNED_TASKS",
    "PTQConfig",
    "StudyTask",
    "bits_table",
    "evaluate_formats",
    "final_train_return",
    "fmt",
    "format_specs",
    "gap_ablation_tasks",
    "gap_table",
    "int8_min_return_ratio",
    "is_number",
    "make_paired_evaluate",
    "plot_bits",
    "policy_kind",
    "ptq_table",
    "quant_spec",
    "quantize_seeds",
    "return_ratio",
    "run_gap_ablation",
    "run_ptq",
    "summarize_format",
    "train_seeds",
]
