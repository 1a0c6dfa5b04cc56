"""Action-gap ablation: plain DQN vs DQN with the advantage-learning target, quantized after
training.

The advantage-learning target (Bellemare, Ostrovski, Guez, Thomas and Munos, "Increasing the
Action Gap: New Operators for Reinforcement Learning", AAAI 2016) widens the gap between a
DQN's best and second-best Q-values; the ablation measures whether that keeps int8 policies'
greedy actions. Tables: :func:`jaxrl_pim.studies.report.gap_table`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from jaxrl_pim.quant import QuantSpec
from jaxrl_pim.studies.ptq import PTQConfig, evaluate_formats
from jaxrl_pim.studies.tasks import TASKS, study_task, task_keys, train_seeds

#: The advantage-learning weight the gap ablation gives DQN tasks registered without one.
GAP_ABLATION_ALPHA = 0.9


def gap_ablation_tasks(tasks: tuple[str, ...]) -> tuple[str, ...]:
    """The DQN tasks among ``tasks`` (the ones the action-gap ablation compares)."""
    return tuple(t for t in tasks if TASKS[t].algo == "dqn")


def run_gap_ablation(
    config: PTQConfig, log: Callable[[str], None] | None = None
) -> tuple[dict[str, Any], dict[str, float]]:
    """Plain DQN vs DQN with the advantage-learning target, each quantized after training.

    For every DQN task of ``config.tasks``, trains ``config.num_seeds`` policies twice from the
    same keys (the PTQ study's keys of that task, :func:`jaxrl_pim.studies.task_keys`), once
    with ``advantage_learning = 0`` (the plain Q-learning target) and once with the task's
    registered ``alpha`` (:data:`GAP_ABLATION_ALPHA` if it has none), and evaluates
    fp32 and int8 copies as :func:`jaxrl_pim.studies.run_ptq` does. Returns ``(results,
    timing_s)`` with ``results[task][variant]`` (variants ``"plain"`` and
    ``"advantage_learning"``) holding ``alpha``, ``mean_action_gap`` (mean over seeds and the
    fp32 policy's visited states of the gap between its best and second-best Q-value: the fp32
    format's ``action_gap``) and ``formats`` (``fp32`` and ``int8``).
    """
    from jaxrl_pim.timing import PhaseTimer

    timer = PhaseTimer()
    specs = {"fp32": None,
             "int8": QuantSpec(config.scheme, 8, per_channel=config.per_channel,
                               include_biases=config.include_biases)}
    results: dict[str, Any] = {}
    for name in gap_ablation_tasks(config.tasks):
        base = study_task(config, name)
        alpha = base.config.advantage_learning or GAP_ABLATION_ALPHA
        k_train, k_eval = task_keys(config.seed, name)
        results[name] = {}
        for variant, a in (("plain", 0.0), ("advantage_learning", alpha)):
            task = dataclasses.replace(
                base, config=dataclasses.replace(base.config, advantage_learning=a))
            if log:
                log(f"[gap] {name} {variant} (alpha {a}): training {config.num_seeds} seed(s)")
            state, _ = timer.timed(f"train/{name}/{variant}", train_seeds, task,
                                   config.num_seeds, k_train)
            with timer.phase(f"evaluate/{name}/{variant}"):
                formats = evaluate_formats(task, state.params, specs, config.eval_episodes,
                                           k_eval)
            gap = formats["fp32"]["action_gap"]
            results[name][variant] = {"alpha": a, "mean_action_gap": gap, "formats": formats}
            if log:
                f = formats
                log(f"[gap] {name} {variant}: fp32 {f['fp32']['mean_return']:.1f}  int8 "
                    f"{f['int8']['mean_return']:.1f}  agreement "
                    f"{f['int8']['action_agreement']:.3f}  gap {gap:.3g}")
    return results, timer.as_dict()


__all__ = ["GAP_ABLATION_ALPHA", "gap_ablation_tasks", "run_gap_ablation"]
