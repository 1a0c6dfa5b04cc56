"""Post-training quantization of a user's own policy: ``evaluate_quantized``.

Give it your policy (a flax module, an ``apply(params, obs)`` function, or a
:class:`~jaxrl_pim.rl.networks.ParametricPolicy`), its parameters and any gymnax environment
(a registered name such as ``"CartPole-v1"``, a ``"playground/<EnvName>"`` task, or an
environment object); it plays greedy episodes with the fp32 parameters and with each
quantized copy (fp16, int8, n-bit) from the same initial states and reports, per format, the
return change against fp32 and how differently the quantized policy acts on the states the
fp32 policy visits (KL divergence and greedy-action agreement).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl_pim.checks import check_choice, check_float
from jaxrl_pim.envs.factory import describe, make
from jaxrl_pim.quant import QuantSpec, fake_quantize
from jaxrl_pim.rl.evaluate import make_evaluate, policy_divergence
from jaxrl_pim.rl.networks import ParametricPolicy
from jaxrl_pim.studies.ptq import return_ratio

KINDS: tuple[str, ...] = ("categorical", "gaussian", "deterministic")


def format_spec(fmt: Any, scheme: str = "paper") -> tuple[str, QuantSpec]:
    """``(label, QuantSpec)`` of one format: ``"fp16"``, ``"bf16"``, ``"int8"`` (``scheme``
    at 8 bits), an int ``N`` or ``"bits=N"`` (``scheme`` at N bits), or a ``QuantSpec``."""
    if isinstance(fmt, QuantSpec):
        return f"{fmt.scheme}{fmt.bits}", fmt
    if fmt in ("fp16", "bf16"):
        return fmt, QuantSpec(fmt)
    if fmt == "int8":
        return "int8", QuantSpec(scheme, 8)
    if isinstance(fmt, str) and fmt.startswith("bits="):
        fmt = fmt[5:]
    try:
        bits = int(fmt)
    except (TypeError, ValueError):
        raise ValueError(
            f"format must be 'fp16', 'bf16', 'int8', a bit width (int or 'bits=N') or a "
            f"QuantSpec; got {fmt!r}"
        ) from None
    return f"bits={bits}", QuantSpec(scheme, bits)


def as_parametric_policy(policy: Any, kind: str, env_info: Any,
                         noise_std: float = 0.0) -> ParametricPolicy:
    """Wrap a flax module or an ``apply(params, obs)`` function as a ``ParametricPolicy``.

    ``kind`` says how to read the output: ``"categorical"`` logits ``[..., num_actions]``
    (greedy = argmax), ``"gaussian"`` ``(mean, log_std)`` (greedy = mean clipped to the
    action bounds) or ``"deterministic"`` actions ``[..., action_dim]`` (clipped to the
    bounds).
    """
    if isinstance(policy, ParametricPolicy):
        return policy
    check_choice("kind", kind, KINDS)
    apply = getattr(policy, "apply", policy)
    if not callable(apply):
        raise ValueError(f"policy must be a flax module, an apply(params, obs) function or a "
                         f"ParametricPolicy; got {type(policy).__name__}")
    if kind == "categorical":
        return ParametricPolicy(kind, apply, lambda logits: jnp.argmax(logits, axis=-1))
    low, high = env_info.action_low, env_info.action_high
    if kind == "gaussian":
        return ParametricPolicy(kind, apply, lambda dist: jnp.clip(dist[0], low, high))
    return ParametricPolicy(kind, apply, lambda a: jnp.clip(a, low, high), noise_std)


def evaluate_quantized(
    policy: Any,
    params: Any,
    env: Any,
    formats: Sequence[Any] | Mapping[str, QuantSpec] = ("fp16", "int8"),
    *,
    kind: str | None = None,
    noise_std: float | None = None,
    scheme: str = "paper",
    num_episodes: int = 16,
    max_steps: int | None = None,
    seed: int = 0,
) -> dict[str, dict[str, float]]:
    """Evaluate ``policy`` with fp32 ``params`` and with each quantized copy of them.

    Args:
      policy: a flax module (its ``apply`` is used), a function ``apply(params, obs) -> out``
        on a batch of observations ``[E, *obs_shape]``, or a ``ParametricPolicy``.
      params: what ``apply`` takes first (e.g. the dict returned by ``module.init``); every
        leaf must be a float array, since every leaf is quantized.
      env: a gymnax environment: registered name, ``"playground/<EnvName>"``, an environment
        object or ``(env, env_params)`` (:func:`jaxrl_pim.envs.make`).
      formats: labels ``"fp16"``, ``"bf16"``, ``"int8"``, bit widths ``N`` or ``"bits=N"``
        (2-16, the ``scheme`` quantizer, per tensor, biases included), ``QuantSpec`` objects,
        or a mapping ``{label: QuantSpec}``.
      kind: how to read ``apply``'s output: ``"categorical"`` (logits; default for discrete
        actions), ``"deterministic"`` (the action; default for continuous actions) or
        ``"gaussian"`` (``(mean, log_std)``).
      noise_std: deterministic policies only: the std (action units) of the Gaussian
        exploration noise that turns them into distributions for the KL; without it the KL
        is reported as NaN (the action MSE is still reported).
      scheme: integer quantizer for ``"int8"`` and bit widths: ``"paper"`` (QuaRL's uniform
        quantizer, default), ``"symmetric"`` or ``"asymmetric"``.
      num_episodes: greedy episodes per format, all from the same initial states.
      max_steps: episode length cap; default the environment's time limit.
      seed: PRNG seed of the episodes' initial states and dynamics.

    Returns:
      ``{"fp32": row, label: row, ...}`` with, per row: ``mean_return`` and ``std_return``
      (over episodes, undiscounted), ``return_change`` (``mean_return`` minus fp32's),
      ``return_ratio`` (1 = as good as fp32, < 1 worse; oriented for negative returns, NaN
      when the signs differ), ``kl`` (mean ``KL(pi_fp32 || pi_q)`` in nats over the states
      the fp32 policy visits), ``action_agreement`` (fraction of those states with the same
      greedy action) and ``action_mse`` (continuous actions).

    Raises:
      ValueError: an unknown environment, format, kind or scheme, or non-float parameters.
    """
    check_choice("scheme", scheme, ("paper", "symmetric", "asymmetric"))
    env, env_params = make(env)
    info = describe(env, env_params)
    if kind is None:
        kind = "categorical" if info.discrete else "deterministic"
    if noise_std is not None:
        check_float("noise_std", noise_std, 0.0, lo_open=True)
    pol = as_parametric_policy(policy, kind, info, noise_std or 1.0)
    if isinstance(formats, Mapping):
        specs = dict(formats)
    else:
        specs = dict(format_spec(f, scheme) for f in formats)
    quantized = {label: fake_quantize(params, spec) for label, spec in specs.items()}

    evaluate = make_evaluate(pol, (env, env_params), num_episodes, max_steps)
    run = jax.jit(_paired(evaluate, pol))
    key = jax.random.key(seed)
    out: dict[str, dict[str, float]] = {}
    ref_mean = None
    for label, p in {"fp32": params, **quantized}.items():
        ref_ret, ret, div = jax.device_get(run(params, p, key))
        if ref_mean is None:
            ref_mean = float(np.mean(ref_ret))
        mean = float(np.mean(ret))
        kl = float(div["kl"])
        if pol.kind == "deterministic" and noise_std is None:
            kl = float("nan")
        out[label] = {
            "mean_return": mean,
            "std_return": float(np.std(ret)),
            "return_change": mean - ref_mean,
            "return_ratio": return_ratio(mean, ref_mean),
            "kl": kl,
            "action_agreement": float(div["action_agreement"]),
            "action_mse": float(div["action_mse"]),
        }
    return out


def _paired(evaluate: Callable, policy: ParametricPolicy) -> Callable:
    def run(ref_params, params, key):
        ref = evaluate(ref_params, key)
        new = evaluate(params, key)
        div = policy_divergence(policy, ref_params, params, ref.obs, ref.mask)
        return ref.returns, new.returns, div

    return run


__all__ = ["KINDS", "as_parametric_policy", "evaluate_quantized", "format_spec"]
