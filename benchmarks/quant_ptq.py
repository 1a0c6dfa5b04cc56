"""PTQ and QAT studies on gymnax tasks: do int8 / fp16 / low-bit policies keep their return?

Trains fp32 policies with the jitted learners of ``jaxrl_pim.rl`` (several seeds, vmapped),
evaluates fake-quantized copies (fp16, int8 and a 16..2-bit sweep with the paper's uniform
quantizer); the QAT part trains with fake quantization after a delay of half of training and
compares with PTQ at the same bits; the gap part trains each DQN task with the plain and the
advantage-learning target from the same seeds and compares their int8 policies. Writes
``quant_ptq[_quick].json`` (summary: ``int8_min_return_ratio`` = worst int8/fp32 return
ratio over the PTQ tasks, its mean, the worst fp16 ratio, the largest int8 KL, the tasks
missing the 5 % target, QAT and PTQ worst ratios per bit width, the gap ablation's int8
ratios), its ``.md`` (Table-2 style PTQ table, bit sweep, QAT table, diagnosis of misses,
action-gap ablation table) and ``_bits.png`` / ``_qat.png`` plots.

    python benchmarks/quant_ptq.py [--publish]      # 9 tasks, QAT on 2 tasks at 6..2 bits
    python benchmarks/quant_ptq.py --quick          # 3 PTQ tasks, QAT on Pendulum at 4/3 bits
    python benchmarks/quant_ptq.py --smoke          # one tiny DQN task, PTQ part (seconds)
    python benchmarks/quant_ptq.py --parts qat      # one part only (the others are absent)

Sizes are picked by ``jax.default_backend()`` (more seeds and episodes on GPU/TPU); the code
runs unmodified on any backend. The study measures returns, not speed, so no timing is
device specific beyond ``timing_s``.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as python benchmarks/<name>.py: the package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import jax

from benchmarks import harness
from jaxrl_pim import studies
from jaxrl_pim.studies import qat as qat_study
from jaxrl_pim.studies import report as tables

PARTS = ("ptq", "qat", "gap")
TARGET_RATIO = 0.95


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def sizes(mode: str) -> dict[str, Any]:
    """Study sizes for a mode (full, quick, smoke) on the current backend."""
    accel = jax.default_backend() != "cpu"
    if mode == "smoke":
        return {"ptq_tasks": ("dqn-cartpole",), "qat_tasks": ("dqn-cartpole",),
                "qat_bits": (4,), "bits": (8, 4), "seeds": 2, "episodes": 2,
                "timesteps_scale": 0.001, "parts": ["ptq"]}
    if mode == "quick":
        return {
            "ptq_tasks": studies.QUICK_TASKS, "qat_tasks": qat_study.QUICK_QAT_TASKS,
            "qat_bits": (4, 3), "bits": studies.DEFAULT_BITS, "seeds": 4 if accel else 3,
            "episodes": 16 if accel else 8, "timesteps_scale": 1.0, "parts": list(PARTS),
        }
    return {
        "ptq_tasks": studies.FULL_TASKS, "qat_tasks": qat_study.FULL_QAT_TASKS,
        "qat_bits": (6, 5, 4, 3, 2), "bits": studies.DEFAULT_BITS, "seeds": 8 if accel else 5,
        "episodes": 32 if accel else 16, "timesteps_scale": 1.0, "parts": list(PARTS),
    }


def diagnose(name: str, r: dict[str, Any]) -> str:
    """One line saying why a task's int8 policy misses the 5 % target (or that it meets it)."""
    f = r["formats"]
    fp, i8 = f["fp32"], f["int8"]
    ratio = i8["return_ratio"]
    seeds = ", ".join(
        f"{q:.1f}/{p:.1f}" for q, p in zip(i8["per_seed_return"], fp["per_seed_return"],
                                           strict=True)
    )
    noise = fp["std_return"] / max(abs(fp["mean_return"]), 1e-9)
    if tables.is_number(ratio) and ratio >= TARGET_RATIO:
        return f"{name}: within 5 % (ratio {ratio:.3f})."
    return (
        f"{name}: int8/fp32 ratio {tables.fmt(ratio, '.3f')}. int8 keeps the greedy action in "
        f"{i8['action_agreement']:.1%} of the states the fp32 policy visits "
        f"(KL {i8['kl_mean']:.2e} nats, action MSE {i8['action_mse']:.2e}); fp32 return varies "
        f"{noise:.1%} across seeds; per-seed int8/fp32 returns: {seeds}."
    )


def summarize(report: dict[str, Any]) -> dict[str, Any]:
    """Headline numbers from the stored records (see the module docstring)."""
    system, results = report["system"], report["results"]
    ptq_results, qat_results = results.get("ptq"), results.get("qat")
    summary: dict[str, Any] = {
        "device": f"{system['backend']}: {system['device_count']} x {system['device_kind']}",
        "mode": report["config"]["mode"],
    }
    if ptq_results:
        ratios = {n: r["formats"]["int8"]["return_ratio"] for n, r in ptq_results.items()}
        fp16 = [r["formats"]["fp16"]["return_ratio"] for r in ptq_results.values()]
        finite = [v for v in ratios.values() if tables.is_number(v)]
        summary.update(
            int8_min_return_ratio=tables.int8_min_return_ratio(ptq_results),
            int8_mean_return_ratio=sum(finite) / len(finite) if finite else math.nan,
            fp16_min_return_ratio=min((v for v in fp16 if tables.is_number(v)), default=math.nan),
            int8_max_kl=max(r["formats"]["int8"]["kl_mean"] for r in ptq_results.values()),
            int8_ratio_by_task=ratios,
            tasks_missing_5pct=[n for n, v in ratios.items()
                                if not tables.is_number(v) or v < TARGET_RATIO],
        )
    if qat_results:
        bits = sorted({int(b) for r in qat_results.values() for b in r["bits"]}, reverse=True)
        summary["qat_min_return_ratio_by_bits"] = {b: tables.min_qat_ratio(qat_results, b)
                                                   for b in bits}
        summary["ptq_min_return_ratio_by_bits"] = {
            b: min((r["bits"][str(b)]["ptq"]["return_ratio"] for r in qat_results.values()
                    if str(b) in r["bits"] and tables.is_number(r["bits"][str(b)]["ptq"][
                        "return_ratio"])), default=math.nan) for b in bits
        }
    if results.get("gap"):
        summary["gap_ablation_int8_ratio"] = {
            name: {v: r[v]["formats"]["int8"]["return_ratio"] for v in r}
            for name, r in results["gap"].items()
        }
    return summary


def _stem(mode: str) -> str:
    return "quant_ptq" if mode == "full" else f"quant_ptq_{mode}"


def _ptq_lines(res: dict[str, Any], cfg: dict[str, Any], summary: dict[str, Any],
               stem: str) -> list[str]:
    """The PTQ section: the per-task table, the worst ratios, the bit sweep, the diagnoses."""
    return [
        "## PTQ: fp32 vs fp16 vs int8 (paper quantizer, per tensor)",
        "",
        f"{cfg['num_seeds']} seeds per task, {cfg['eval_episodes']} greedy episodes per "
        "seed, mean +- std over seeds; ratio = quantized / fp32 return (fp32 / quantized "
        "for negative returns); KL(fp32 || quantized) in nats on the states the fp32 "
        "policy visits.",
        "",
        tables.ptq_table(res),
        "",
        f"Worst int8 ratio: **{tables.fmt(summary['int8_min_return_ratio'], '.3f')}** "
        f"(target >= {TARGET_RATIO}); mean "
        f"{tables.fmt(summary['int8_mean_return_ratio'], '.3f')}; worst fp16 ratio "
        f"{tables.fmt(summary['fp16_min_return_ratio'], '.3f')}.",
        "",
        "### Bit sweep: mean return (ratio to fp32)",
        "",
        tables.bits_table(res),
        "",
        "### Tasks against the 5 % target",
        "",
        *(f"* {diagnose(n, r)}" for n, r in res.items()),
        "",
        f"![return and KL vs bits]({stem}_bits.png)",
        "",
    ]


def _qat_lines(res: dict[str, Any], cfg: dict[str, Any], summary: dict[str, Any],
               stem: str) -> list[str]:
    """The QAT section: QAT against PTQ at the same bits, and its figure."""
    intro = (f"QAT: fake quantization (paper quantizer, straight-through gradient) after "
             f"{cfg['delay_fraction']:.0%} of training; {cfg['num_seeds']} seeds; the deployed "
             "QAT policy is its quantized copy. PTQ: the fp32 policies (same seeds and length) "
             "quantized after training.")
    return ["## QAT vs PTQ at the same bits", "", intro, "", tables.qat_table(res), "",
            f"![PTQ vs QAT]({stem}_qat.png)", ""]


def _gap_lines(res: dict[str, Any], cfg: dict[str, Any], summary: dict[str, Any],
               stem: str) -> list[str]:
    """The action-gap ablation section."""
    intro = (f"Each DQN task trained twice from the same {cfg['num_seeds']} seeds: with the "
             "plain Q-learning target (alpha 0) and with the advantage-learning target "
             "(`DQNConfig.advantage_learning`), then quantized to int8 after training "
             f"({cfg['eval_episodes']} greedy episodes per seed). Mean action gap: best minus "
             "second-best fp32 Q-value on the states the fp32 policy visits.")
    return ["## Action-gap ablation: plain DQN target vs advantage learning", "", intro, "",
            tables.gap_table(res), ""]


def render_markdown(report: dict[str, Any]) -> str:
    """The results as Markdown (tables generated from the stored report)."""
    sysinfo, summary = report["system"], report["summary"]
    stem = _stem(summary["mode"])
    lines = [
        "# PTQ and QAT on gymnax tasks",
        "",
        f"Device: {summary['device']} ({sysinfo['cpu']}), jax {sysinfo['jax']}, "
        f"mode {summary['mode']}. Generated by `{sysinfo['command']}`.",
        "",
    ]
    for part, section in (("ptq", _ptq_lines), ("qat", _qat_lines), ("gap", _gap_lines)):
        res = report["results"].get(part)
        if res:
            lines += section(res, report["config"][part], summary, stem)
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = harness.parser(__doc__)
    harness.add_parts(parser, PARTS, "ptq")
    parser.add_argument("--seeds", type=int, default=None,
                        help="seeds per task (default CPU 5, --quick 3, GPU 8 / 4)")
    parser.add_argument("--episodes", type=int, default=None,
                        help="greedy evaluation episodes per seed (default CPU 16, --quick 8, "
                        "GPU 32 / 16)")
    args = parser.parse_args(argv)
    run = harness.record(args)
    mode = harness.mode_of(args)
    size = sizes(mode)
    parts = args.parts or size["parts"]
    seeds = args.seeds or size["seeds"]
    episodes = args.episodes or size["episodes"]
    out = harness.output_path(args, "quant_ptq")
    results: dict[str, Any] = {}
    config: dict[str, Any] = {"mode": mode, "parts": parts}
    timing: dict[str, Any] = {}
    scale = size["timesteps_scale"]
    if "ptq" in parts:
        cfg = studies.PTQConfig(tasks=size["ptq_tasks"], num_seeds=seeds, eval_episodes=episodes,
                            bits=size["bits"], timesteps_scale=scale)
        results["ptq"], timing["ptq"] = studies.run_ptq(cfg, log=_log)
        config["ptq"] = cfg
    if "qat" in parts:
        cfg = studies.QATStudyConfig(tasks=size["qat_tasks"], bits=size["qat_bits"],
                                     num_seeds=seeds, eval_episodes=episodes,
                                     timesteps_scale=scale)
        results["qat"], timing["qat"] = studies.run_qat(cfg, log=_log)
        config["qat"] = cfg
    if "gap" in parts:
        cfg = studies.PTQConfig(tasks=studies.gap_ablation_tasks(size["ptq_tasks"]),
                                num_seeds=seeds, eval_episodes=episodes, bits=(),
                                timesteps_scale=scale)
        results["gap"], timing["gap"] = studies.run_gap_ablation(cfg, log=_log)
        config["gap"] = cfg
    harness.write(out, run=run, config=config, results=results, timing_s=timing,
                  summarize=summarize, markdown=render_markdown)
    if results.get("ptq"):
        tables.plot_bits(results["ptq"], str(out.with_name(f"{out.stem}_bits.png")))
    if results.get("qat"):
        tables.plot_qat(results["qat"], str(out.with_name(f"{out.stem}_qat.png")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
