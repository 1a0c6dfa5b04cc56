"""The headline table: every side-by-side comparison the results files hold, one row each.

What a reader wants first from ``docs/benchmarks.md`` (and the README): what is faster than
what, by how much, against which opponent, and where the library loses. Each row of
:data:`COMPARISONS` names a results file and the summary keys that hold the library's ratio
over an opponent measured in the same run (above 1: the library is faster); where the file
holds several variants (agent counts, tabular variants, worlds) the row gives the worst and
the median, never the best. The opponent's version is read from the same file. Figures are
rounded to 3 significant digits, which is what run-to-run variation of these timings
supports (a ratio of 1.04 and one of 0.98 are not a win and a loss).

``make_docs.py`` puts :func:`headline_table` at the top of ``docs/benchmarks.md`` and into
the README's ``<!-- generated: headline -->`` block; a comparison whose file does not exist
(an accelerator folder not measured yet) is left out and counted in a closing line. A
comparison of ``gpu/<file>`` gives one row per accelerator folder (``h100``, ``h200``, ...)
that holds the file.
"""

from __future__ import annotations

import json
import math
import os
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks import harness


@dataclass(frozen=True)
class Comparison:
    """One headline row: ``file`` under ``benchmarks/results/``; ``key`` a summary key
    holding a ratio or a ``{variant: ratio}`` object (library over opponent, >1 faster);
    ``worst_key`` / ``median_key`` where the file's summary already names them;
    ``version`` a dotted path into the file (``system.packages.numba``) giving the opponent's
    version; ``variant`` formats a variant's name (``"{} agents"``); ``fallback`` a file of
    the same script's reduced sizes (``*_quick.json``), shown, with its sizes named in the
    workload, while ``file`` has not been measured."""

    file: str
    workload: str
    library: str
    opponent: str
    version: str
    key: str | None = None
    worst_key: str | None = None
    median_key: str | None = None
    worst_variant_key: str | None = None
    variant: str = "{}"
    fallback: str | None = None
    sizes: tuple[str, ...] = ("agents", "measured_episodes", "seeds")


def _size_text(value: Any) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k} {v:,}" if isinstance(v, int) else f"{k} {v}"
                         for k, v in value.items())
    if isinstance(value, list):
        return ", ".join(map(str, value))
    return f"{value:,}" if isinstance(value, int) else str(value)


def _reduced_sizes(data: dict[str, Any], keys: tuple[str, ...]) -> str:
    """What a reduced-size run measured, from its file's ``config.sizes`` (the ``keys`` that
    describe the row): ``--quick run: agents 3; measured episodes 100; seeds 4``."""
    sizes = _get(data, "config.sizes") or {}
    parts = [f"{name.replace('_', ' ')} {_size_text(sizes[name])}" for name in keys
             if sizes.get(name) is not None]
    return f"--{_get(data, 'config.mode') or 'quick'} run" + (f": {'; '.join(parts)}"
                                                            if parts else "")


def _replay_rounds(folder: str, agents: str) -> tuple[Comparison, ...]:
    """The replay-round rows of ``folder/marl_sampling.json`` (``agents``: the agent counts
    the folder's run measures): the trainer's faithful sampler against each opponent."""
    workload = f"MADDPG replay round, faithful, {agents}"
    by_agents = tuple(
        Comparison(f"{folder}/marl_sampling.json", workload, "the trainer's sampler", opponent,
                   version, key=f"sampler_speedup_vs_{key}_by_agents", variant="{} agents")
        for opponent, version, key in (
            ("vectorised NumPy", "config.baselines.numpy", "vectorized_numpy"),
            ("flashbax uniform", "config.baselines.flashbax", "flashbax_uniform"),
            ("flashbax prioritised", "config.baselines.flashbax", "flashbax_prioritized")))
    return (*by_agents,
            Comparison(f"{folder}/marl_sampling.json", "MADDPG replay round, faithful, 24 agents",
                       "the trainer's sampler", "the original MADDPG sampler (NumPy lists)",
                       "config.baselines.numpy", key="sampler_speedup_vs_original_24"))


COMPARISONS: tuple[Comparison, ...] = (
    # whole training runs against the frameworks users train with (benchmarks/e2e_frameworks.py)
    *(Comparison("cpu/e2e_frameworks.json", f"{algo} training run, env steps/s with learning "
                 "on, " + ("paper schedule" if n else "CartPole and Acrobot"),
                 "jaxrl_pim." + ("marl" if n else "rl"), name,
                 f"summary.e2e_opponent_versions.{opp}.{pkg}",
                 key=f"e2e_steps_per_s_ratio_vs_{opp}_{algo.lower()}_by_task",
                 variant="{} agents" if n else "{}", fallback="cpu/e2e_frameworks_quick.json",
                 sizes=("agents", "measured_episodes") if n else ("rl_timesteps",))
      for opp, name, pkg, algos, n in (
          ("agilerl", "AgileRL", "agilerl", ("MADDPG", "MATD3"), True),
          ("benchmarl", "BenchMARL", "benchmarl", ("MADDPG", "MASAC"), True),
          ("rejax", "rejax", "rejax", ("DQN", "PPO"), False),
          ("sb3", "Stable-Baselines3", "stable_baselines3", ("DQN", "PPO"), False))
      for algo in algos),
    *(Comparison("cpu/e2e_frameworks.json", "training runs, seeds per hour (library: seeds "
                 "vmapped in one call)", "jaxrl_pim.marl / rl", name,
                 f"summary.e2e_opponent_versions.{opp}.{pkg}",
                 key=f"e2e_seeds_per_hour_ratio_vs_{opp}_by_variant",
                 fallback="cpu/e2e_frameworks_quick.json",
                 sizes=("agents", "measured_episodes", "rl_timesteps", "seeds"))
      for opp, name, pkg in (("agilerl", "AgileRL", "agilerl"),
                             ("benchmarl", "BenchMARL", "benchmarl"),
                             ("rejax", "rejax", "rejax"),
                             ("sb3", "Stable-Baselines3", "stable_baselines3"))),
    Comparison("cpu/tabular_scaling.json", "SwiftRL tabular lanes, 12 variants (Q / SARSA x "
               "SEQ / RAN / STR x FP32 / INT32), FrozenLake and Taxi", "lanes trainer (XLA)",
               "best Numba kernel", "system.packages.numba",
               worst_key="cpu_ratio_vs_best_numba_min",
               median_key="cpu_ratio_vs_best_numba_median",
               worst_variant_key="cpu_ratio_vs_best_numba_min_variant"),
    *_replay_rounds("cpu", "3-24 agents"),
    # accelerators: "gpu/" stands for every accelerator folder that holds the file
    *_replay_rounds("gpu", "24 agents"),
    Comparison("cpu/mpe_rollout.json", "particle-world rollouts, spread and tag, 3-24 agents",
               "jaxrl_pim.envs.mpe", "JaxMARL MPE", "config.jaxmarl_version",
               key="mpe_speedup_vs_jaxmarl_by_env"),
)


def _get(data: dict[str, Any], path: str) -> Any:
    value: Any = data
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def sig3(x: float) -> str:
    """``x`` rounded to 3 significant digits (``0.382``, ``21.7``, ``1,050``)."""
    if x == 0 or not math.isfinite(x):
        return str(x)
    digits = 2 - math.floor(math.log10(abs(x)))
    return f"{round(x, digits):,.{max(digits, 0)}f}"


def row_values(c: Comparison, data: dict[str, Any]) -> dict[str, Any]:
    """The worst and median ratio of a comparison, the worst variant's name, the number of
    variants and the opponent's version, from one results file."""
    summary = data.get("summary", {})
    out: dict[str, Any] = {"version": _get(data, c.version), "variants": 1,
                           "worst_variant": None}
    if c.worst_key is not None:
        out["worst"] = summary.get(c.worst_key)
        out["median"] = summary.get(c.median_key) if c.median_key else out["worst"]
        out["worst_variant"] = summary.get(c.worst_variant_key) if c.worst_variant_key else None
        by = summary.get("cpu_ratio_by_variant")
        out["variants"] = len(by) if isinstance(by, dict) else 1
        return out
    value = summary.get(c.key)
    if isinstance(value, dict):
        ratios = {k: v for k, v in value.items() if isinstance(v, int | float)}
        if ratios:
            worst = min(ratios, key=ratios.get)
            out.update(worst=ratios[worst], median=statistics.median(ratios.values()),
                       worst_variant=worst, variants=len(ratios))
        else:
            out.update(worst=None, median=None)
    else:
        out.update(worst=value, median=value)
    return out


def _verdict(worst: float | None, median: float | None) -> str:
    if worst is None:
        return "not measured"
    if worst >= 1:
        return "faster at every variant"
    if median is not None and median >= 1:
        return "slower at some variants"
    return "slower"


def headline_rows(root: Path) -> tuple[list[dict[str, Any]], list[Comparison]]:
    """The rows whose file exists under ``root/benchmarks/results``, and the comparisons left
    out because their file does not."""
    rows, missing = [], []
    results = root / "benchmarks" / "results"
    accelerators = harness.accelerator_folders(results)
    for c in COMPARISONS:
        folder, name = c.file.split("/", 1)
        found = False
        for device in accelerators if folder == "gpu" else [folder]:
            path, reduced = results / device / name, False
            if not path.is_file() and c.fallback and (results / c.fallback).is_file():
                path, reduced = results / c.fallback, True
            if not path.is_file():
                continue
            found = True
            data = json.loads(path.read_text())
            rows.append({"comparison": c, "path": path, "device": device,
                         "sizes": _reduced_sizes(data, c.sizes) if reduced else None,
                         **row_values(c, data)})
        if not found:
            missing.append(c)
    return rows, missing


def headline_table(root: Path, page: Path) -> str:
    """The Markdown table (links relative to ``page``), one row per comparison."""
    rows, missing = headline_rows(root)
    cells = []
    for r in rows:
        c = r["comparison"]
        opp = c.opponent + (f" {r['version']}" if r["version"] else "")
        worst = "not measured" if r["worst"] is None else sig3(r["worst"]) + "x"
        if r["worst_variant"] and r["variants"] > 1:
            worst += f" ({c.variant.format(r['worst_variant'])})"
        median = "" if r["median"] is None or r["variants"] == 1 else sig3(r["median"]) + "x"
        link = os.path.relpath(r["path"], page.parent)
        workload = c.workload + (f" ({r['sizes']})" if r.get("sizes") else "")
        cells.append([workload, c.library, opp, worst, median, r["variants"],
                      _verdict(r["worst"], r["median"]), f"`{r['device']}`",
                      f"[{r['path'].name}]({link})"])
    lines = harness.md_table(["workload", "jaxrl_pim", "opponent", "worst ratio",
                              "median ratio", "variants", "result", "device", "file"], cells)
    text = "\n".join(lines) + "\n"
    text += ("\nRatios are the library's speed over the opponent's, measured side by side "
             "in one run on the same machine (above 1: the library is faster); the worst "
             "variant is named in brackets.")
    if missing:
        text += (f" {len(missing)} comparison(s) have no results file yet and are not "
                 "measured.")
    return text + "\n"
