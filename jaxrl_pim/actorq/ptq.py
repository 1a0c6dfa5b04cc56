"""Post-training quantization (PTQ) study: how much return do quantized policies keep?

Recipe (QuaRL / ActorQ, reference section 3): train fp32 policies with the jitted learners of
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
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import math
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from jaxrl_pim.checks import check_choice, check_float, check_int
from jaxrl_pim.rl import A2CConfig, DDPGConfig, DQNConfig, PPOConfig
from jaxrl_pim.rl.evaluate import make_evaluate, policy_divergence
from jaxrl_pim.rl.networks import Policy

#: Bit widths of the default sweep (paper quantizer; 16 = float16 round trip).
DEFAULT_BITS: tuple[int, ...] = (16, 12, 10, 8, 7, 6, 5, 4, 3, 2)
SCHEMES: tuple[str, ...] = ("paper", "symmetric", "asymmetric")


@dataclasses.dataclass(frozen=True)
class StudyTask:
    """An (algorithm, environment, hyper-parameters) combination used by the studies."""

    name: str
    algo: str
    config: Any

    def module(self) -> Any:
        """The learner module (``jaxrl_pim.rl.<algo>``)."""
        return importlib.import_module(f"jaxrl_pim.rl.{self.algo}")

    def policy(self) -> Policy:
        """The task's :class:`Policy`."""
        return self.module().make_policy(self.config)

    def scaled(self, timesteps_scale: float) -> StudyTask:
        """The same task with ``total_timesteps`` multiplied by ``timesteps_scale``."""
        if timesteps_scale == 1.0:
            return self
        cfg = self.config
        steps = max(int(cfg.total_timesteps * timesteps_scale), _min_timesteps(cfg))
        return dataclasses.replace(self, config=dataclasses.replace(cfg, total_timesteps=steps))


def _min_timesteps(cfg: Any) -> int:
    if hasattr(cfg, "num_steps"):
        return cfg.num_envs * cfg.num_steps
    return cfg.learning_starts + 1_000


#: The study tasks; hyper-parameters chosen to learn in well under a minute of CPU each.
TASKS: dict[str, StudyTask] = {
    t.name: t
    for t in (
        StudyTask("ppo-cartpole", "ppo", PPOConfig("CartPole-v1", total_timesteps=100_000)),
        StudyTask("dqn-cartpole", "dqn", DQNConfig("CartPole-v1", total_timesteps=50_000)),
        StudyTask("a2c-cartpole", "a2c", A2CConfig("CartPole-v1", total_timesteps=100_000)),
        StudyTask("ppo-acrobot", "ppo", PPOConfig("Acrobot-v1", total_timesteps=100_000)),
        # Acrobot: a 50k-step buffer, a linearly annealed step size and a small final epsilon;
        # without the annealing the final greedy network often repeats one action (-500)
        # although the training episodes of the same run reach about -100. Its action gaps
        # (~0.1 against |Q| ~ 60) are below one int8 step, so int8 flipped the greedy action
        # in ~6-20 % of states and some seeds fell to -500; the advantage-learning target
        # (alpha 0.97) widens the gaps ~33x and int8 then keeps fp32's return
        # (docs/quantization.md). 200k steps so that every seed's fp32 policy is good.
        StudyTask(
            "dqn-acrobot", "dqn",
            DQNConfig("Acrobot-v1", total_timesteps=200_000, buffer_size=50_000,
                      batch_size=128, eps_end=0.01, exploration_fraction=0.2,
                      anneal_lr=True, advantage_learning=0.97),
        ),
        # MountainCar: one-step random actions never reach the goal in 200 steps; random
        # actions held for 20 steps do in about 14 % of episodes (explore_hold), observations
        # mapped onto [-1, 1] so the velocity (|v| <= 0.07) is not ignored. Advantage
        # learning (alpha 0.9) for int8 robustness, as for Acrobot.
        StudyTask(
            "dqn-mountaincar", "dqn",
            DQNConfig("MountainCar-v0", total_timesteps=200_000, buffer_size=10_000,
                      batch_size=128, train_frequency=2, lr=4e-3, gamma=0.98,
                      target_update_interval=150, exploration_fraction=0.2, eps_end=0.01,
                      anneal_lr=True, normalize_obs=True, explore_hold=20,
                      advantage_learning=0.9),
        ),
        StudyTask(
            "ddpg-pendulum",
            "ddpg",
            DDPGConfig("Pendulum-v1", total_timesteps=10_000, hidden=(64, 64), batch_size=64),
        ),
        StudyTask(
            "ppo-pendulum",
            "ppo",
            PPOConfig("Pendulum-v1", total_timesteps=300_000, num_envs=16, num_steps=128,
                      num_minibatches=32, update_epochs=10, lr=1e-3, gamma=0.95,
                      ent_coef=0.0, anneal_lr=True),
        ),
        # MountainCarContinuous: exploration noise (and the warm-up's uniform actions) held for
        # 20 steps builds the momentum that independent per-step noise never does; a slower
        # actor keeps the tanh output from saturating at a constant full push.
        StudyTask(
            "ddpg-mountaincarcontinuous", "ddpg",
            DDPGConfig("MountainCarContinuous-v0", total_timesteps=50_000, num_envs=2,
                       hidden=(64, 64), batch_size=64, buffer_size=50_000, learning_starts=5_000,
                       expl_noise=0.5, noise_hold=20, normalize_obs=True, actor_lr=1e-4),
        ),
    )
}
QUICK_TASKS: tuple[str, ...] = ("ppo-cartpole", "dqn-cartpole", "ddpg-pendulum")
#: Tasks whose fp32 policies do not learn with their settings (a return ratio on them would
#: say nothing about quantization); left out of the full study. Empty since the Acrobot,
#: MountainCar and MountainCarContinuous settings above learn (docs/quantization.md).
UNLEARNED_TASKS: tuple[str, ...] = ()
FULL_TASKS: tuple[str, ...] = tuple(t for t in TASKS if t not in UNLEARNED_TASKS)


def quant_spec(scheme: str, bits: int, per_channel: bool = False,
               include_biases: bool = True) -> Any:
    """The toolkit's :class:`jaxrl_pim.quant.QuantSpec` for one study format."""
    from jaxrl_pim.quant import QuantSpec

    return QuantSpec(scheme, bits, per_channel=per_channel, include_biases=include_biases)


def format_specs(config: PTQConfig) -> dict[str, Any]:
    """Ordered ``{label: QuantSpec or None}``: fp32, fp16, int8 and the ``bits=N`` sweep."""
    from jaxrl_pim.quant import QuantSpec

    specs: dict[str, Any] = {"fp32": None, "fp16": QuantSpec("fp16")}
    specs["int8"] = quant_spec(config.scheme, 8, config.per_channel, config.include_biases)
    for b in config.bits:
        specs[f"bits={b}"] = quant_spec(config.scheme, b, config.per_channel,
                                        config.include_biases)
    return specs


@dataclasses.dataclass(frozen=True)
class PTQConfig:
    """What the PTQ study runs.

    Attributes:
      tasks: names from :data:`TASKS`.
      num_seeds: independently trained policies per task (vmapped).
      eval_episodes: greedy evaluation episodes per seed and format.
      bits: the bit sweep (2-16; for the paper scheme 16 means float16).
      scheme: ``"paper"`` (default), ``"symmetric"`` or ``"asymmetric"``.
      per_channel: one scale per output channel instead of per tensor.
      include_biases: quantize biases too (the paper does).
      timesteps_scale: multiplies every task's training length (e.g. 0.5 for quick runs).
      seed: root PRNG seed.
    """

    tasks: tuple[str, ...] = QUICK_TASKS
    num_seeds: int = 3
    eval_episodes: int = 16
    bits: tuple[int, ...] = DEFAULT_BITS
    scheme: str = "paper"
    per_channel: bool = False
    include_biases: bool = True
    timesteps_scale: float = 1.0
    seed: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.tasks, tuple) or not self.tasks:
            raise ValueError(f"tasks must be a non-empty tuple of names, got {self.tasks!r}")
        for t in self.tasks:
            check_choice("task", t, tuple(TASKS))
        if len(set(self.tasks)) != len(self.tasks):
            raise ValueError(f"tasks must not repeat, got {self.tasks!r}")
        check_int("num_seeds", self.num_seeds, 1, 1024)
        check_int("eval_episodes", self.eval_episodes, 1, 100_000)
        if not isinstance(self.bits, tuple):
            raise ValueError(f"bits must be a tuple of bit widths, got {self.bits!r}")
        for b in self.bits:
            check_int("bits", b, 2, 16)
        check_choice("scheme", self.scheme, SCHEMES)
        check_choice("per_channel", self.per_channel, (False, True))
        check_choice("include_biases", self.include_biases, (False, True))
        check_float("timesteps_scale", self.timesteps_scale, 0.0, 100.0, lo_open=True)
        check_int("seed", self.seed, 0, 2**31 - 1)

    def task(self, name: str) -> StudyTask:
        """The (scaled) task called ``name``."""
        return TASKS[name].scaled(self.timesteps_scale)


def train_seeds(task: StudyTask, num_seeds: int, key: jax.Array) -> tuple[Any, dict[str, Any]]:
    """Train ``num_seeds`` policies in one vmapped jit; returns ``(state, metrics)``.

    Every leaf of the returned state has a leading seed axis ``[num_seeds, ...]``.
    """
    train = task.module().make_train(task.config)
    return jax.jit(jax.vmap(train))(jax.random.split(key, num_seeds))


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


def quantize_seeds(params: Any, spec: Any) -> Any:
    """Fake-quantize each seed's parameters separately (per-seed scales); ``None`` = fp32."""
    if spec is None:
        return params
    return _seed_quantizer(spec)(params)


@functools.lru_cache(maxsize=64)
def _seed_quantizer(spec: Any) -> Callable[[Any], Any]:
    from jaxrl_pim.quant import fake_quantize

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
    specs: dict[str, Any],
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
    root = jax.random.key(config.seed)
    for i, name in enumerate(config.tasks):
        task = config.task(name)
        k_train, k_eval = jax.random.split(jax.random.fold_in(root, i))
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
    same keys, once with ``advantage_learning = 0`` (the plain Q-learning target) and once with
    the task's registered ``alpha`` (:data:`GAP_ABLATION_ALPHA` if it has none), and evaluates
    fp32 and int8 copies as :func:`run_ptq` does. Returns ``(results, timing_s)`` with
    ``results[task][variant]`` (variants ``"plain"`` and ``"advantage_learning"``) holding
    ``alpha``, ``mean_action_gap`` (mean over seeds and the fp32 policy's visited states of
    the gap between its best and second-best Q-value: the fp32 format's ``action_gap``) and
    ``formats`` (``fp32`` and ``int8``).
    """
    from jaxrl_pim.quant import QuantSpec
    from jaxrl_pim.timing import PhaseTimer

    timer = PhaseTimer()
    specs = {"fp32": None,
             "int8": QuantSpec(config.scheme, 8, per_channel=config.per_channel,
                               include_biases=config.include_biases)}
    results: dict[str, Any] = {}
    root = jax.random.key(config.seed)
    for name in gap_ablation_tasks(config.tasks):
        base = config.task(name)
        alpha = base.config.advantage_learning or GAP_ABLATION_ALPHA
        k_train, k_eval = jax.random.split(jax.random.fold_in(root, list(TASKS).index(name)))
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


def final_train_return(metrics: dict[str, Any], window: int = 10) -> float:
    """Mean over seeds of the mean finished-episode return in the last ``window`` reports."""
    ret = np.asarray(metrics["episode_return"])
    vals = []
    for row in ret.reshape(ret.shape[0], -1):
        row = row[~np.isnan(row)]
        if row.size:
            vals.append(float(row[-window:].mean()))
    return float(np.mean(vals)) if vals else math.nan


def int8_min_return_ratio(results: dict[str, Any]) -> float:
    """Worst int8 / fp32 oriented return ratio over the tasks (NaN if none defined)."""
    ratios = [r["formats"]["int8"]["return_ratio"] for r in results.values()]
    ratios = [x for x in ratios if is_number(x)]
    return min(ratios) if ratios else math.nan


def ptq_table(results: dict[str, Any]) -> str:
    """Markdown table in the style of the paper's Table 2 (fp32 / fp16 / int8 per task)."""
    lines = [
        "| task | policy | fp32 return | fp16 return | int8 return | fp16 ratio | int8 ratio "
        "| KL fp16 | KL int8 | int8 action agreement | int8 action MSE |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in results.items():
        f = r["formats"]
        lines.append(
            f"| {name} | {r['policy_kind']} | {_pm(f['fp32'])} | {_pm(f['fp16'])} | "
            f"{_pm(f['int8'])} | {fmt(f['fp16']['return_ratio'], '.3f')} | "
            f"{fmt(f['int8']['return_ratio'], '.3f')} | {fmt(f['fp16']['kl_mean'], '.2e')} | "
            f"{fmt(f['int8']['kl_mean'], '.2e')} | {fmt(f['int8']['action_agreement'], '.3f')} | "
            f"{fmt(f['int8']['action_mse'], '.2e')} |"
        )
    return "\n".join(lines)


def gap_table(results: dict[str, Any]) -> str:
    """Markdown table of :func:`run_gap_ablation` results (one row per task and variant)."""
    lines = [
        "| task | target | alpha | mean action gap | fp32 return | int8 return | int8 ratio "
        "| int8 action agreement |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, variants in results.items():
        for variant, r in variants.items():
            f = r["formats"]
            lines.append(
                f"| {name} | {variant.replace('_', ' ')} | {r['alpha']:g} | "
                f"{fmt(r['mean_action_gap'], '.3g')} | {_pm(f['fp32'])} | {_pm(f['int8'])} | "
                f"{fmt(f['int8']['return_ratio'], '.3f')} | "
                f"{fmt(f['int8']['action_agreement'], '.3f')} |"
            )
    return "\n".join(lines)


def bits_table(results: dict[str, Any]) -> str:
    """Markdown table: mean return (ratio) per task and bit width of the sweep."""
    names = list(results)
    labels = [k for k in next(iter(results.values()))["formats"] if k.startswith("bits=")]
    lines = ["| bits | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    for label in labels:
        cells = []
        for n in names:
            f = results[n]["formats"][label]
            cells.append(f"{fmt(f['mean_return'], '.1f')} ({fmt(f['return_ratio'], '.2f')})")
        lines.append(f"| {label[5:]} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _pm(f: dict[str, Any]) -> str:
    return f"{fmt(f['mean_return'], '.1f')} +- {fmt(f['std_return'], '.1f')}"


def is_number(x: Any) -> bool:
    """True for a finite number (JSON reports store NaN as null)."""
    return x is not None and not (isinstance(x, float) and math.isnan(x))


def fmt(x: Any, spec: str) -> str:
    """``format(x, spec)``, or ``n/a`` for NaN / None."""
    return format(x, spec) if is_number(x) else "n/a"


def plot_bits(results: dict[str, Any], path: str) -> None:
    """Return-vs-bits (left) and KL-vs-bits (right) curves per task, saved as PNG at ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from jaxrl_pim.report import atomic_save

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for name, r in results.items():
        f = r["formats"]
        labels = [k for k in f if k.startswith("bits=")]
        bits = [int(k[5:]) for k in labels]
        ratio = [f[k]["return_ratio"] for k in labels]
        kl = [max(f[k]["kl_mean"], 1e-12) for k in labels]
        axes[0].plot(bits, ratio, marker="o", label=name)
        axes[1].plot(bits, kl, marker="o", label=name)
    axes[0].axhline(1.0, color="k", lw=0.8)
    axes[0].axhline(0.95, color="k", lw=0.8, ls="--")
    axes[0].set(xlabel="bits (paper quantizer; 16 = fp16)", ylabel="return / fp32 return",
                title="PTQ: return vs bits")
    axes[1].set(xlabel="bits", ylabel="KL(fp32 || quantized) [nats]", yscale="log",
                title="PTQ: policy divergence vs bits")
    for ax in axes:
        ax.invert_xaxis()
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    atomic_save(path, lambda tmp: fig.savefig(tmp, dpi=110))
    plt.close(fig)


__all__ = [
    "DEFAULT_BITS",
    "FULL_TASKS",
    "QUICK_TASKS",
    "TASKS",
    "UNLEARNED_TASKS",
    "PTQConfig",
    "StudyTask",
    "bits_table",
    "evaluate_formats",
    "format_specs",
    "int8_min_return_ratio",
    "make_paired_evaluate",
    "plot_bits",
    "ptq_table",
    "quantize_seeds",
    "return_ratio",
    "run_ptq",
    "train_seeds",
]
