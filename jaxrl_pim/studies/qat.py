"""Quantization-aware training (QAT) study: does training through the quantizer keep reward
at bit widths where post-training quantization breaks?

For each task and bit width ``b`` the study trains policies with fake quantization in the
forward pass (paper uniform quantizer, ``b`` bits, straight-through gradient) switched on
after a quantization delay (``delay_fraction`` of training, about half as in the paper), via
the learners' ``qat`` option (:class:`jaxrl_pim.rl.QATConfig`). The deployed QAT policy is
the ``b``-bit fake-quantized copy of its weights, exactly what the forward pass saw. It is
compared with PTQ at the same ``b`` applied to fp32 policies trained with the same seeds and
length, and with those fp32 policies themselves. All three are evaluated greedily from the
same initial states; ratios follow :func:`jaxrl_pim.studies.ptq.return_ratio`. Tables and
plots: :mod:`jaxrl_pim.studies.report`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

from jaxrl_pim.rl.common import QATConfig
from jaxrl_pim.studies.config import FULL_QAT_TASKS, QUICK_QAT_TASKS, QATStudyConfig
from jaxrl_pim.studies.ptq import (
    make_paired_evaluate,
    quant_spec,
    quantize_seeds,
    summarize_format,
)
from jaxrl_pim.studies.tasks import (
    StudyTask,
    final_train_return,
    study_task,
    task_keys,
    train_seeds,
)


def with_qat(task: StudyTask, bits: int, delay_fraction: float) -> StudyTask:
    """``task`` trained with QAT at ``bits`` after ``delay_fraction`` of training."""
    cfg = dataclasses.replace(task.config, qat=QATConfig(bits, delay_fraction))
    return dataclasses.replace(task, name=f"{task.name}/qat{bits}", config=cfg)


def run_qat(
    config: QATStudyConfig, log: Callable[[str], None] | None = None
) -> tuple[dict[str, Any], dict[str, float]]:
    """Run the QAT study; returns ``(results, timing_s)``.

    ``results[task]`` holds ``fp32`` (summary of the fp32 policies) and ``bits``:
    ``{b: {"ptq": summary, "qat": summary, "qat_final_train_return": float}}`` where each
    summary is :func:`jaxrl_pim.studies.ptq.summarize_format`'s dict (ratios vs fp32).
    """
    from jaxrl_pim.timing import PhaseTimer

    timer = PhaseTimer()
    results: dict[str, Any] = {}
    for name in config.tasks:
        task = study_task(config, name)
        k_train, k_eval = task_keys(config.seed, name)
        if log:
            log(f"[qat] {name}: fp32 training, {config.num_seeds} seed(s)")
        state, _ = timer.timed(f"train_fp32/{name}", train_seeds, task, config.num_seeds,
                               k_train)
        fp32 = state.params
        evaluate = make_paired_evaluate(task, config.eval_episodes)
        ref_ret, _, ref_div = evaluate(fp32, fp32, k_eval)
        fp32_mean = float(np.asarray(ref_ret).mean(axis=1).mean())
        entry: dict[str, Any] = {
            "algo": task.algo,
            "env": task.config.env_name,
            "total_timesteps": task.config.total_timesteps,
            "fp32": summarize_format(np.asarray(ref_ret), _np(ref_div), fp32_mean),
            "bits": {},
        }
        for b in config.bits:
            spec = quant_spec("paper", b)
            with timer.phase(f"evaluate/{name}"):
                _, ptq_ret, ptq_div = evaluate(fp32, quantize_seeds(fp32, spec), k_eval)
            qtask = with_qat(task, b, config.delay_fraction)
            if log:
                log(f"[qat] {name}: QAT training at {b} bits")
            qstate, qmetrics = timer.timed(f"train_qat/{name}", train_seeds, qtask,
                                           config.num_seeds, k_train)
            with timer.phase(f"evaluate/{name}"):
                _, qat_ret, qat_div = evaluate(fp32, quantize_seeds(qstate.params, spec), k_eval)
            ptq = summarize_format(np.asarray(ptq_ret), _np(ptq_div), fp32_mean)
            qat = summarize_format(np.asarray(qat_ret), _np(qat_div), fp32_mean)
            # The QAT policy is a different network: its divergence from the fp32 policy
            # measures training differences, not quantization error, so it is not reported.
            for k in ("kl_mean", "kl_std", "action_agreement", "action_mse"):
                qat.pop(k)
            entry["bits"][str(b)] = {
                "ptq": ptq,
                "qat": qat,
                "qat_final_train_return": final_train_return(qmetrics),
            }
            if log:
                log(f"[qat] {name} {b} bits: fp32 {fp32_mean:.1f}  PTQ {ptq['mean_return']:.1f}"
                    f"  QAT {qat['mean_return']:.1f}")
        results[name] = entry
    return results, timer.as_dict()


def _np(tree: dict[str, Any]) -> dict[str, np.ndarray]:
    return {k: np.asarray(v) for k, v in tree.items()}


__all__ = [
    "FULL_QAT_TASKS",
    "QUICK_QAT_TASKS",
    "QATConfig",
    "QATStudyConfig",
    "run_qat",
    "with_qat",
]
