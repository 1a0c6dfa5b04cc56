"""jaxrl_pim.studies: quantization studies over the learners of :mod:`jaxrl_pim.rl` and the
quantizers of :mod:`jaxrl_pim.quant`.

* :mod:`.config`: the study configs (:class:`PTQConfig`, :class:`QATStudyConfig`), their
  defaults, checks and task lists, without jax (the commands check their options with it).
* :mod:`.tasks`: the registered study tasks (:data:`TASKS`) and seed-vmapped training.
* :mod:`.ptq`: post-training quantization (fp32 / fp16 / int8 / bit sweep; return, KL and
  action agreement against fp32 on the same initial states).
* :mod:`.gap`: the action-gap ablation (plain vs advantage-learning DQN under int8).
* :mod:`.qat`: quantization-aware training vs PTQ at the same bit widths.
* :mod:`.quantized_policy`: :func:`evaluate_quantized`, PTQ of a user's own flax policy on any
  gymnax environment.
* :mod:`.report`: Markdown tables, headline numbers and plots (host code only).

The ``jaxrl-pim ptq`` and ``jaxrl-pim qat`` commands are :mod:`jaxrl_pim.cli.studies`.

Seeds: a task's training and evaluation keys derive from the user's seed and the task's
*name* (:func:`task_keys`), so the same task and seed train the same policies in every study.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jaxrl_pim import lazy
from jaxrl_pim.studies.config import (
    DEFAULT_BITS,
    FULL_TASKS,
    QUICK_TASKS,
    PTQConfig,
    QATStudyConfig,
)

# Everything else loads jax (and gymnax), so it is imported on first use (PEP 562): ``from
# jaxrl_pim.studies import PTQConfig`` and ``import jaxrl_pim.studies.config`` load no jax.
if TYPE_CHECKING:  # where each name lives: type checkers, the import graph, lazy look-ups
    from jaxrl_pim.studies.gap import GAP_ABLATION_ALPHA, gap_ablation_tasks, run_gap_ablation
    from jaxrl_pim.studies.ptq import evaluate_formats, format_specs, return_ratio, run_ptq
    from jaxrl_pim.studies.qat import run_qat, with_qat
    from jaxrl_pim.studies.quantized_policy import evaluate_quantized
    from jaxrl_pim.studies.tasks import TASKS, StudyTask, task_keys, train_seeds

__all__ = [
    "DEFAULT_BITS",
    "FULL_TASKS",
    "GAP_ABLATION_ALPHA",
    "QUICK_TASKS",
    "TASKS",
    "PTQConfig",
    "QATStudyConfig",
    "StudyTask",
    "evaluate_formats",
    "evaluate_quantized",
    "format_specs",
    "gap_ablation_tasks",
    "return_ratio",
    "run_gap_ablation",
    "run_ptq",
    "run_qat",
    "task_keys",
    "train_seeds",
    "with_qat",
]

# the names above, and the package's modules, on first use
__getattr__, __dir__ = lazy.attributes(__name__)
