"""PTQ and QAT studies on gymnax tasks: do int8 / fp16 / low-bit policies keep their return?

Trains fp32 policies with the jitted learners of ``jaxrl_pim.rl`` (several seeds, vmapped),
evaluates fake-quantized copies (fp16, int8 and a 16..2-bit sweep with the paper's uniform
quantizer); the QAT part trains with fake quantization after a delay of half of training and
compares with PTQ at the same bits; the gap part trains each DQN task with the plain and the
advantage-learning target from the same seeds and compares their int8 policies. Writes

* ``benchmarks/results/quant_ptq.json`` (system, config, results, timing_s, summary with
  ``int8_min_return_ratio`` = worst int8/fp32 return ratio over the PTQ tasks, and ``device``),
* ``quant_ptq.md`` (Table-2 style PTQ table, bit sweep, QAT table, diagnosis of misses,
  action-gap ablation table),
* ``quant_ptq_bits.png`` (return and KL vs bits) and ``quant_ptq_qat.png`` (PTQ vs QAT).

    python benchmarks/quant_ptq.py --quick          # 3 PTQ tasks, QAT on Pendulum at 4/3 bits
    python benchmarks/quant_ptq.py                  # 9 tasks, QAT on 2 tasks at 6..2 bits
    python benchmarks/quant_ptq.py --parts qat      # re-run one part, keep the others' results

Sizes are picked by ``jax.default_backend()`` (more seeds and episodes on GPU/TPU); the code
runs unmodified on any backend. The study measures returns, not speed, so no timing is
device specific beyond ``timing_s``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

import jax

from jaxrl_pim.actorq import ptq, qat
from jaxrl_pim.report import device_label, make_report, write_json

RESULTS = Path(__file__).resolve().parent / "results"
PARTS = ("ptq", "qat", "gap")
TARGET_RATIO = 0.95


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def sizes(quick: bool) -> dict[str, Any]:
    """Study sizes for the current backend."""
    accel = jax.default_backend() != "cpu"
    if quick:
        return {
            "ptq_tasks": ptq.QUICK_TASKS, "qat_tasks": qat.QUICK_QAT_TASKS,
            "qat_bits": (4, 3), "seeds": 4 if accel else 3, "episodes": 16 if accel else 8,
        }
    return {
        "ptq_tasks": ptq.FULL_TASKS, "qat_tasks": qat.FULL_QAT_TASKS,
        "qat_bits": (6, 5, 4, 3, 2), "seeds": 8 if accel else 5, "episodes": 32 if accel else 16,
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
    if ptq.is_number(ratio) and ratio >= TARGET_RATIO:
        return f"{name}: within 5 % (ratio {ratio:.3f})."
    return (
        f"{name}: int8/fp32 ratio {ptq.fmt(ratio, '.3f')}. int8 keeps the greedy action in "
        f"{i8['action_agreement']:.1%} of the states the fp32 policy visits "
        f"(KL {i8['kl_mean']:.2e} nats, action MSE {i8['action_mse']:.2e}); fp32 return varies "
        f"{noise:.1%} across seeds; per-seed int8/fp32 returns: {seeds}."
    )


def summarize(ptq_results: dict[str, Any] | None, qat_results: dict[str, Any] | None,
              quick: bool) -> dict[str, Any]:
    """The headline numbers."""
    summary: dict[str, Any] = {"device": device_label(), "mode": "quick" if quick else "full",
                               "gpu": None,
                               "gpu_note": "returns do not depend on the device; no GPU run "
                               "was made for these results" if jax.default_backend() == "cpu"
                               else None}
    if ptq_results:
        ratios = {n: r["formats"]["int8"]["return_ratio"] for n, r in ptq_results.items()}
        fp16 = [r["formats"]["fp16"]["return_ratio"] for r in ptq_results.values()]
        finite = [v for v in ratios.values() if ptq.is_number(v)]
        summary.update(
            int8_min_return_ratio=ptq.int8_min_return_ratio(ptq_results),
            int8_mean_return_ratio=sum(finite) / len(finite) if finite else math.nan,
            fp16_min_return_ratio=min((v for v in fp16 if ptq.is_number(v)), default=math.nan),
            int8_max_kl=max(r["formats"]["int8"]["kl_mean"] for r in ptq_results.values()),
            int8_ratio_by_task=ratios,
            tasks_missing_5pct=[n for n, v in ratios.items()
                                if not ptq.is_number(v) or v < TARGET_RATIO],
        )
    if qat_results:
        bits = sorted({int(b) for r in qat_results.values() for b in r["bits"]}, reverse=True)
        summary["qat_min_return_ratio_by_bits"] = {b: qat.min_qat_ratio(qat_results, b)
                                                   for b in bits}
        summary["ptq_min_return_ratio_by_bits"] = {
            b: min((r["bits"][str(b)]["ptq"]["return_ratio"] for r in qat_results.values()
                    if str(b) in r["bits"] and ptq.is_number(r["bits"][str(b)]["ptq"][
                        "return_ratio"])), default=math.nan) for b in bits
        }
    return summary


def markdown(report: dict[str, Any]) -> str:
    """The results as Markdown (tables generated from the JSON)."""
    sysinfo, summary = report["system"], report["summary"]
    lines = [
        "# PTQ and QAT on gymnax tasks",
        "",
        f"Device: {summary['device']} ({sysinfo['cpu']}), jax {sysinfo['jax']}, "
        f"mode {summary['mode']}. Generated by `python benchmarks/quant_ptq.py"
        f"{' --quick' if summary['mode'] == 'quick' else ''}`.",
        "",
    ]
    pres = report["results"].get("ptq")
    if pres:
        cfg = report["config"]["ptq"]
        lines += [
            "## PTQ: fp32 vs fp16 vs int8 (paper quantizer, per tensor)",
            "",
            f"{cfg['num_seeds']} seeds per task, {cfg['eval_episodes']} greedy episodes per "
            "seed, mean +- std over seeds; ratio = quantized / fp32 return (fp32 / quantized "
            "for negative returns); KL(fp32 || quantized) in nats on the states the fp32 "
            "policy visits.",
            "",
            ptq.ptq_table(pres),
            "",
            f"Worst int8 ratio: **{ptq.fmt(summary['int8_min_return_ratio'], '.3f')}** "
            f"(target >= {TARGET_RATIO}); mean "
            f"{ptq.fmt(summary['int8_mean_return_ratio'], '.3f')}; worst fp16 ratio "
            f"{ptq.fmt(summary['fp16_min_return_ratio'], '.3f')}.",
            "",
            "### Bit sweep: mean return (ratio to fp32)",
            "",
            ptq.bits_table(pres),
            "",
            "### Tasks against the 5 % target",
            "",
        ]
        lines += [f"* {diagnose(n, r)}" for n, r in pres.items()]
        lines += ["", "![return and KL vs bits](quant_ptq_bits.png)", ""]
    qres = report["results"].get("qat")
    if qres:
        cfg = report["config"]["qat"]
        lines += [
            "## QAT vs PTQ at the same bits",
            "",
            f"QAT: fake quantization (paper quantizer, straight-through gradient) after "
            f"{cfg['delay_fraction']:.0%} of training; {cfg['num_seeds']} seeds; the deployed "
            "QAT policy is its quantized copy. PTQ: the fp32 policies (same seeds and length) "
            "quantized after training.",
            "",
            qat.qat_table(qres),
            "",
            "![PTQ vs QAT](quant_ptq_qat.png)",
            "",
        ]
    gres = report["results"].get("gap")
    if gres:
        cfg = report["config"]["gap"]
        lines += [
            "## Action-gap ablation: plain DQN target vs advantage learning",
            "",
            f"Each DQN task trained twice from the same {cfg['num_seeds']} seeds: with the plain "
            "Q-learning target (alpha 0) and with the advantage-learning target "
            "(`DQNConfig.advantage_learning`), then quantized to int8 after training "
            f"({cfg['eval_episodes']} greedy episodes per seed). Mean action gap: best minus "
            "second-best fp32 Q-value on the states the fp32 policy visits.",
            "",
            ptq.gap_table(gres),
            "",
        ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS))
    parser.add_argument("--seeds", type=int, default=None)
    parser.add_argument("--episodes", type=int, default=None)
    parser.add_argument("--out", type=Path, default=RESULTS / "quant_ptq.json")
    args = parser.parse_args(argv)
    size = sizes(args.quick)
    seeds = args.seeds or size["seeds"]
    episodes = args.episodes or size["episodes"]

    # A part that is not re-run keeps its previous results (same output file).
    old: dict[str, Any] = {}
    if args.out.exists():
        old = json.loads(args.out.read_text())
    results = dict(old.get("results", {}))
    config = dict(old.get("config", {}))
    timing = dict(old.get("timing_s", {}))
    for part in PARTS:
        if part in args.parts:
            results.pop(part, None)
            config.pop(part, None)
            timing.pop(part, None)

    if "ptq" in args.parts:
        cfg = ptq.PTQConfig(tasks=size["ptq_tasks"], num_seeds=seeds, eval_episodes=episodes)
        results["ptq"], timing["ptq"] = ptq.run_ptq(cfg, log=_log)
        config["ptq"] = cfg
        ptq.plot_bits(results["ptq"], str(args.out.with_name("quant_ptq_bits.png")))
    if "qat" in args.parts:
        cfg = qat.QATStudyConfig(tasks=size["qat_tasks"], bits=size["qat_bits"],
                                 num_seeds=seeds, eval_episodes=episodes)
        results["qat"], timing["qat"] = qat.run_qat(cfg, log=_log)
        config["qat"] = cfg
        qat.plot_qat(results["qat"], str(args.out.with_name("quant_ptq_qat.png")))

    if "gap" in args.parts:
        cfg = ptq.PTQConfig(tasks=ptq.gap_ablation_tasks(size["ptq_tasks"]), num_seeds=seeds,
                            eval_episodes=episodes, bits=())
        results["gap"], timing["gap"] = ptq.run_gap_ablation(cfg, log=_log)
        config["gap"] = cfg

    summary = summarize(results.get("ptq"), results.get("qat"), args.quick)
    if results.get("gap"):
        summary["gap_ablation_int8_ratio"] = {
            name: {v: r[v]["formats"]["int8"]["return_ratio"] for v in r}
            for name, r in results["gap"].items()
        }
    report = make_report(config, results, timing, summary)
    write_json(args.out, report)
    md = markdown(json.loads(args.out.read_text()))
    md_path = args.out.with_suffix(".md")
    md_path.write_text(md + "\n")
    print(md)
    _log(f"wrote {args.out} and {md_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
