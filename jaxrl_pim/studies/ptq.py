"""Post-training quantization (PTQ) study: how much return do quantized policies keep?

Recipe (QuaRL: Krishnan et al., "QuaRL: Quantization for Fast and Environmentally Sustainable
Reinforcement Learning", TMLR 2022): train fp32 policies with the jitted learners of
:mod:`jaxrl_pim.rl` (several seeds, vmapped), then evaluate copies of the trained policy
parameters passed through :func:`jaxrl_pim.quant.fake_quantize`: fp32 (untouched), fp16, int8
and a bit sweep (paper's uniform quantizer by default; its 16-bit setting is a float16 round
trip). For each format the study reports the mean +- std (over seeds) of the greedy
evaluation return and how far the quantized policy acts from the fp32 one on the states the
fp32 policy visits:

* categorical policies (PPO, A2C, and DQN's Q-values read as Boltzmann logits at
  temperature 1): ``KL(pi_fp32 || pi_q)``;
* Gaussian policies (PPO on continuous tasks): the Gaussian KL;
* deterministic policies (DDPG): the action MSE and the KL between ``N(a_fp32, s^2)`` and
  ``N(a_q, s^2)`` with ``s`` the exploration noise std, i.e. ``|a_fp32 - a_q|^2 / (2 s^2)``.

The quantized and fp32 policies are evaluated from the same initial states (same key), so
differences are paired, not sampling noise between different episodes.

``return_ratio`` orients the comparison so that 1 means "as good as fp32" and < 1 worse:
``R_q / R_fp32`` when the fp32 return is positive, ``R_fp32 / R_q`` when both are negative
(cost-like rewards such as Pendulum's), NaN when the signs differ or a return is 0.
Tables and plots of the results are in :mod:`jaxrl_pim.studies.report`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from jaxrl_pim.quant import QuantSpec, fake_quantize
from jaxrl_pim.rl.evaluate import make_evaluate, policy_divergence
from jaxrl_pim.studies.config import (  # the config, defaults and checks load no jax
    DEFAULT_BITS,
    SCHEMES,
    PTQConfig,
    check_study_options,
)
from jaxrl_pim.studies.tasks import (
    StudyTask,
    final_train_return,
    study_task,
    task_keys,
    train_seeds,
)


def quant_spec(scheme: str, bits: int, per_channel: bool = False,
               include_biases: bool = True) -> QuantSpec:
    """The toolkit's :class:`jaxrl_pim.quant.QuantSpec` for one study format."""
    return QuantSpec(scheme, bits, per_channel=per_channel, include_biases=include_biases)


def format_specs(config: PTQConfig) -> dict[str, QuantSpec | None]:
    """Ordered ``{label: QuantSpec or None}``: fp32, fp16, int8 and the ``bits=N`` sweep."""
    specs: dict[str, QuantSpec | None] = {"fp32": None, "fp16": QuantSpec("fp16")}
    specs["int8"] = quant_spec(config.scheme, 8, config.per_channel, config.include_biases)
    for b in config.bits:
        specs[f"bits={b}"] = quant_spec(config.scheme, b, config.per_channel,
                                        config.include_biases)
    return specs


@functools.lru_cache(maxsize=32)
def make_paired_evaluate(
    task: StudyTask, eval_episodes: int
) -> Callable[[Any, Any, jax.Array], tuple[jax.Array, jax.Array, dict[str, jax.Array]]]:
    """Jitted ``f(ref_params, params, key) -> (ref_returns, returns, divergence)``.

    Params carry a leading seed axis ``[S, ...]``; returns are ``[S, eval_episodes]``; each
    divergence entry (see :func:`jaxrl_pim.rl.evaluate.policy_divergence`) is ``[S]``. Both
    policies start from the same states (same key); divergences are measured on the states
    the reference (fp32) policy visits.
    The compiled function is cached per ``(task, eval_episodes)``.
    """
    policy = task.policy()
    evaluate = make_evaluate(policy, task.config.env_name, eval_episodes)

    def one(ref_params, params, key):
        ref = evaluate(ref_params, key)
        new = evaluate(params, key)
        div = policy_divergence(policy, ref_params, params, ref.obs, ref.mask)
        return ref.returns, new.returns, div

    return jax.jit(jax.vmap(one, in_axes=(0, 0, None)))


def quantize_seeds(params: Any, spec: QuantSpec | None) -> Any:
    """Fake-quantize each seed's parameters separately (per-seed scales); ``None`` = fp32."""
    if spec is None:
        return params
    return _seed_quantizer(spec)(params)


@functools.lru_cache(maxsize=64)
def _seed_quantizer(spec: QuantSpec) -> Callable[[Any], Any]:
    return jax.jit(jax.vmap(lambda p: fake_quantize(p, spec)))


def return_ratio(quantized: float, reference: float) -> float:
    """Oriented return ratio (1 = as good as fp32, < 1 = worse); see the module docstring."""
    if reference > 0 and quantized >= 0:
        return quantized / reference
    if reference < 0 and quantized < 0:
        return reference / quantized
    return math.nan


def summarize_format(returns: np.ndarray, div: dict[str, np.ndarray],
                     fp32_mean: float) -> dict[str, Any]:
    """Statistics of one format: ``returns`` ``[S, E]``, divergences ``[S]``."""
    per_seed = returns.mean(axis=1)
    mean = float(per_seed.mean())
    return {
        "mean_return": mean,
        "std_return": float(per_seed.std()),
        "per_seed_return": per_seed.tolist(),
        "return_ratio": return_ratio(mean, fp32_mean),
        "kl_mean": float(np.mean(div["kl"])),
        "kl_std": float(np.std(div["kl"])),
        "action_agreement": float(np.mean(div["action_agreement"])),
        "action_mse": float(np.mean(div["action_mse"])),
        "action_gap": float(np.mean(div["action_gap"])),
    }


def evaluate_formats(
    task: StudyTask,
    params: Any,
    specs: dict[str, QuantSpec | None],
    eval_episodes: int,
    key: jax.Array,
    evaluate: Callable[..., Any] | None = None,
) -> dict[str, dict[str, Any]]:
    """Evaluate fp32 ``params`` ``[S, ...]`` under every ``{label: spec}``; one dict per label."""
    evaluate = evaluate or make_paired_evaluate(task, eval_episodes)
    out: dict[str, dict[str, Any]] = {}
    fp32_mean = None
    for label, spec in specs.items():
        ref_ret, ret, div = evaluate(params, quantize_seeds(params, spec), key)
        ref_ret, ret = np.asarray(ref_ret), np.asarray(ret)
        if fp32_mean is None:
            fp32_mean = float(ref_ret.mean(axis=1).mean())
        div = {k: np.asarray(v) for k, v in div.items()}
        out[label] = summarize_format(ret, div, fp32_mean)
    return out


def policy_kind(task: StudyTask) -> str:
    """``categorical``, ``gaussian`` or ``deterministic``."""
    return task.policy().kind


def run_ptq(
    config: PTQConfig, log: Callable[[str], None] | None = None
) -> tuple[dict[str, Any], dict[str, float]]:
    """Run the PTQ study; returns ``(results, timing_s)``.

    ``results[task]`` holds ``algo``, ``env``, ``policy_kind``, ``total_timesteps``,
    ``final_train_return`` (mean over seeds of the last finished training episodes) and
    ``formats`` (``{label: summarize_format(...)}`` for fp32, fp16, int8, bits=N).
    """
    from jaxrl_pim.timing import PhaseTimer

    timer = PhaseTimer()
    specs = format_specs(config)
    results: dict[str, Any] = {}
    for name in config.tasks:
        task = study_task(config, name)
        k_train, k_eval = task_keys(config.seed, name)
        if log:
            log(f"[ptq] {name}: training {config.num_seeds} seed(s), "
                f"{task.config.total_timesteps} steps")
        state, metrics = timer.timed(f"train/{name}", train_seeds, task, config.num_seeds,
                                     k_train)
        with timer.phase(f"evaluate/{name}"):
            formats = evaluate_formats(task, state.params, specs, config.eval_episodes, k_eval)
        results[name] = {
            "algo": task.algo,
            "env": task.config.env_name,
            "policy_kind": policy_kind(task),
            "total_timesteps": task.config.total_timesteps,
            "final_train_return": final_train_return(metrics),
            "formats": formats,
        }
        if log:
            f = formats
            log(f"[ptq] {name}: fp32 {f['fp32']['mean_return']:.1f}  "
                f"fp16 {f['fp16']['mean_return']:.1f}  int8 {f['int8']['mean_return']:.1f}")
    return results, timer.as_dict()


__all__ = [
    "DEFAULT_BITS",
    "SCHEMES",
    "PTQConfig",
    "check_study_options",
    "evaluate_formats",
    "format_specs",
    "make_paired_evaluate",
    "policy_kind",
    "quant_spec",
    "quantize_seeds",
    "return_ratio",
    "run_ptq",
    "summarize_format",
]
