"""The GPU suite's plan: its parts by priority, their estimates, and which need to run again.

``benchmarks/gpu_suite.py`` runs these parts on a borrowed accelerator; this module says what
they are and decides, on the development machine where git is, which of them the next call
may skip (:func:`part_freshness`). The table of parts and the order are the suite's documentation
(``gpu_suite.py``'s docstring and ``docs/guide/reproduce-a-benchmark.md``).

Tiers follow what a user would ask first: MARL seeds per hour (1), the paper's largest run as
the paper ran it (2), the tabular kernels (3), DQN and PPO against rejax (4), actor
inference and the replay round (5), a profiler trace and the rest (6). The plan's parts below
:data:`EXTRA_TIER` fit the deadline by their estimates; an extra runs when the parts before
it finish ahead of theirs.

**Nothing measured twice.** A part is *fresh* on a device folder (``h200``, ``h100``, ...)
when its filed result there (``benchmarks/results/<folder>/<stem>.json``) is complete (no
summary key ``*not_measured`` lists anything), was run at a commit with no uncommitted
source, none of its sources has changed since (the script and every ``benchmarks`` /
``jaxrl_pim`` module it imports, transitively, plus the files it runs as processes;
:mod:`benchmarks.freshness`), and the options it ran with are the ones the plan passes now.
A fresh part is not run again unless ``--force``.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any, NamedTuple

from benchmarks import freshness, harness

#: Seconds of one full call on one H100 / H200, compiles included (the lease's command limit
#: is 10 minutes; the rest is the install and the machine's own start).
DEADLINE_S = {"full": 480.0, "quick": 480.0, "smoke": 240.0}
#: Parts of this tier and above are extras: the plan's estimate need not fit them.
EXTRA_TIER = 6
#: Seconds the suite itself needs around the parts (device probe, writing, packing): an
#: estimate (3 s beyond the parts on an H200's first call).
OVERHEAD_S = 10
#: Options that say where or for how long a part runs, not what it measures: left out when a
#: filed command is compared with the plan's.
RUN_ONLY_OPTIONS = ("--out", "--budget-s", "--budget-gib", "--trace-archive", "--peer-site")


class Part(NamedTuple):
    """One part: its tier, the script it runs with which options, and its time.

    ``args`` are options beyond ``--out`` and the size flag, per mode (``{logs}`` stands for
    the call's log folder, which comes back in the archive; ``{peer_site}`` for the folder of
    the opponents' wheels); ``estimate_s`` the estimated wall time per mode (seconds on one
    H100 / H200, compile included); ``budget_share`` the share of the part's time passed as
    ``--budget-s`` (None: the script takes none); ``runs`` files the script runs as
    processes (freshness sources beyond its imports)."""

    name: str
    tier: int
    script: str
    stem: str
    args: dict[str, list[str]]
    estimate_s: dict[str, float]
    budget_share: float | None
    doc: str
    runs: tuple[str, ...] = ()


def _same(args: list[str], smoke: list[str] | None = None) -> dict[str, list[str]]:
    """The same options at full and quick sizes (and at smoke sizes unless ``smoke``)."""
    return {"full": args, "quick": args, "smoke": args if smoke is None else smoke}


PARTS: tuple[Part, ...] = (
    Part("marl_fill", 1, "marl_seeds.py", "marl_seeds_fill", _same(["--fill"]),
         # an estimate: 6 points, each a compile (~15 s) and three pieces of 1,024 episodes
         # the first four points took 115 s on an H200 (the budget stopped N = 24)
         {"full": 150, "quick": 80, "smoke": 25}, 0.8,
         "MADDPG seeds per hour: S = 1, 64, 16, 256 at N = 3 and 1, 16 at N = 24 vmapped, "
         "us per env step without updates"),
    Part("spread48", 2, "marl_gpu.py", "marl_gpu_spread48",
         _same(["--parts", "scaling", "--agents", "48", "--layouts", "compact", "--modes",
                "faithful", "--capacity", "1000000", "--no-cut", "--memory-fraction", "0.6",
                "--file-tag", "spread48"],
               ["--parts", "scaling", "--layouts", "compact", "--file-tag", "spread48"]),
         # 28 s on an H200 (h200/gpu_suite.json)
         {"full": 35, "quick": 35, "smoke": 20}, 0.8,
         "MADDPG spread-48 at the paper's 1e6 rows (compact layout), s per 1,000 episodes"),
    Part("tabular", 3, "tabular_gpu.py", "tabular_gpu",
         _same(["--sections", "frozenlake", "multiagent"]),
         # an estimate: 93 s for rng jax alone on an H200, lcg at most as long
         {"full": 140, "quick": 70, "smoke": 20}, 0.8,
         "FrozenLake 2,000 lanes x 12 variants with rng jax and lcg, 2,000 agents"),
    Part("e2e_rejax", 4, "e2e_gpu.py", "e2e_gpu",
         _same(["--peer-site", "rejax={peer_site}"]),
         # 74 s on an H200 (h200/gpu_suite.json)
         {"full": 80, "quick": 60, "smoke": 25}, None,
         "DQN and PPO end to end against rejax, side by side, learning checked",
         runs=("benchmarks/peers",)),
    Part("quant", 5, "quant_inference.py", "quant_inference",
         _same(["--precisions", "fp32", "bf16", "int8_fast", "int8_emulated", "int8_qwix",
                "--batches", "1", "8", "1024"],
               ["--precisions", "fp32", "int8_fast", "int8_emulated"]),
         # 26 of its 32 rows in 82 s on an H200 (a call stopped it at its deadline): about
         # 3 s a row, 60 rows with batch 8 (the actors'): ~180 s. The per-row int8 path is
         # left out (its H200 rows are filed, h200/quant_inference.json); the float32
         # products of the fast path (int8_emulated, what "auto" runs on a GPU) take its place
         {"full": 180, "quick": 80, "smoke": 15}, None,
         "actor inference device-side and dispatch-included: fp32 / bf16 / int8 (fast, and "
         "its codes multiplied in float32) / qwix"),
    Part("marl_sampling", 6, "marl_sampling.py", "marl_sampling",
         _same(["--agents", "24"], []),
         # one size: --budget-s cannot cut it; filling the original's 1e6-row buffers of
         # Python objects is 44 s of the 156 s on an H200
         {"full": 157, "quick": 40, "smoke": 20}, 0.6,
         "the replay round per layout and flashbax at N = 24 against the copy bandwidth"),
    Part("marl_trace", 6, "marl_trace.py", "marl_trace",
         _same(["--trace-archive", "{logs}/marl_trace.tar.gz"]),
         {"full": 40, "quick": 30, "smoke": 15}, 0.8,
         "one jax.profiler trace of a MADDPG piece at N = 3 and 48: kernels per env step"),
    Part("marl_profile", 6, "marl_profile.py", "marl_profile",
         {"full": ["--sizes", "48"], "quick": ["--sizes", "24"], "smoke": []},
         # its --budget-s (0.4 x twice the estimate) stops new sizes; the one running ends
         {"full": 95, "quick": 40, "smoke": 20}, 0.4,
         "MADDPG phase shares at 48 agents inside the fused program"),
    Part("marl_e2e", 6, "marl_gpu.py", "marl_gpu",
         {"full": ["--parts", "scaling", "--agents", "3", "24", "48", "--layouts",
                   "interleaved", "--modes", "faithful"],
          "quick": ["--parts", "scaling", "--agents", "3", "24", "--layouts", "interleaved",
                    "--modes", "faithful"],
          "smoke": ["--parts", "scaling", "--agents", "3"]},
         {"full": 62, "quick": 60, "smoke": 20}, 0.8,
         "MADDPG s per 1,000 episodes, spread N = 3, 24, 48, interleaved, faithful"),
    Part("tabular_sweep", 6, "tabular_gpu.py", "tabular_gpu_sweep",
         _same(["--sections", "sweep", "--file-tag", "sweep"]),
         # an estimate: the full grid did not finish inside a 220-s call on an H200
         {"full": 260, "quick": 40, "smoke": 20}, 0.8,
         "lanes per program x prefetch depth (the device's best settings)"),
    Part("marl_schedule", 6, "marl_gpu.py", "marl_gpu_schedule",
         _same(["--parts", "schedule", "--schedule-envs", "spread", "--file-tag", "schedule"]),
         {"full": 60, "quick": 40, "smoke": 20}, 0.85,
         "MADDPG spread-3 over the 60,000-episode schedule"),
)
BY_NAME = {p.name: p for p in PARTS}

#: Summary keys shown in the closing table, per part (regular expressions over the part's
#: summary keys).
HEADLINE_KEYS: dict[str, str] = {
    "marl_fill": r"^gpu_marl_(seeds_per_hour_ratio_\d+_\d+|us_per_env_step_\d+)$",
    "spread48": r"^gpu_spread48_1e6_",
    "tabular": r"^gpu_(frozenlake_2000_lanes_s(_median)?|multiagent_2000_s"
               r"|frozenlake_ns_per_dependent_step_worst|frozenlake_worst_over_floor_estimate)"
               r"(_lcg)?$",
    "e2e_rejax": r"^gpu_e2e_steps_per_s_ratio_vs_rejax_",
    "quant": (r"^(int8|int8_fast|int8_emulated|bf16|int8_qwix)_(device_)?speedup_vs_fp32"
              r"_paper_b\d+$"),
    "marl_sampling": r"_fraction_of_copy_bw_24$",
    "marl_trace": r"^gpu_marl_trace_kernels_per_env_step_",
    "marl_profile": r"^(estimated_sampling_share_|fused_update_round_share_)",
    "marl_e2e": r"^spread\d+_interleaved_faithful_s_per_1000_episodes$",
    "tabular_sweep": r"^sweep_best_(lanes_per_block|prefetch)$",
    "marl_schedule": r"^spread3_(schedule_s|s_per_1000_episodes_full_schedule)$",
}


def part_args(part: Part, mode: str, device: dict[str, Any], budget_s: float,
              places: dict[str, str] | None = None) -> list[str]:
    """Options of a part's script beyond ``--out`` and the size flag; ``budget_s`` is the
    time the part may take (seconds); ``places`` fills ``{logs}`` and ``{peer_site}``."""
    places = places or {}
    args = [a.format(**places) if "{" in a else a for a in part.args[mode]]
    if part.budget_share is not None:
        args += ["--budget-s", f"{max(1.0, part.budget_share * budget_s):.0f}"]
    if part.name == "marl_profile" and mode != "smoke" and device.get("bytes_limit"):
        # the profiler holds the state and a filled copy: a third of the device each
        args += ["--budget-gib", f"{0.3 * device['bytes_limit'] / 2**30:.1f}"]
    return args


def part_room(rows: list[dict[str, Any]], i: int, left: float, limit: float) -> float:
    """Seconds part ``rows[i]`` may plan its work for (its script's ``--budget-s`` is a share
    of them): at most twice its estimate and ``limit`` (its time before the deadline or its
    ``--budget``), and no more than leaves the later planned parts (not extras, not fresh)
    their estimates out of ``left``, but never less than its own estimate."""
    est = rows[i]["estimate_s"]
    later = sum(r["estimate_s"] for r in rows[i + 1:]
                if r["tier"] < EXTRA_TIER and "fresh" not in r)
    return min(limit, 2 * est, max(est, left - later))


def plan(mode: str, names: list[str], estimates: dict[str, float],
         fresh: dict[str, dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """The parts to run, in priority order, with their tier and estimated time (seconds);
    a part ``fresh`` marks fresh (:func:`part_freshness`) carries its reason and runs not."""
    fresh = fresh or {}
    rows = []
    for n in names:
        part = BY_NAME[n]
        row = {"part": n, "tier": part.tier, "script": f"benchmarks/{part.script}",
               "stem": part.stem + harness_suffix(mode), "estimate_s": estimates[n],
               "measures": part.doc}
        if fresh.get(n, {}).get("fresh"):
            row["fresh"] = fresh[n]["reason"]
        elif n in fresh:
            row["stale"] = fresh[n]["reason"]
        rows.append(row)
    return rows


def harness_suffix(mode: str) -> str:
    """The results-file suffix of a size mode (``""``, ``"_quick"``, ``"_smoke"``)."""
    return {"full": "", "quick": "_quick", "smoke": "_smoke"}[mode]


def plan_total_s(rows: list[dict[str, Any]], *, extras: bool = True) -> float:
    """The plan's estimated seconds: every part that will run (without the extras' unless
    ``extras``; fresh parts cost nothing) and the suite's own overhead."""
    return sum(r["estimate_s"] for r in rows if "fresh" not in r
               and (extras or r["tier"] < EXTRA_TIER)) + OVERHEAD_S


def print_plan(rows: list[dict[str, Any]], mode: str, device: dict[str, Any],
               deadline_s: float, folder: str | None = None) -> None:
    """The plan, before anything runs: each part with its estimate, or why it will not run."""
    where = f" for {folder}/" if folder else ""
    print(f"GPU suite plan ({mode} sizes){where} on {device['backend']}: "
          f"{device['device_count']} x {device['device_kind']} (jax {device['jax']}); "
          f"deadline {deadline_s:.0f} s", flush=True)
    for r in rows:
        what = (f"skipped, fresh: {r['fresh']}" if "fresh" in r else
                f"~{r['estimate_s']:4.0f} s (estimate): {r['measures']}"
                + (f" [{r['stale']}]" if r.get("stale") else ""))
        print(f"  tier {r['tier']} {r['part']:<14} {r['script']:<30} {what}", flush=True)
    print(f"  estimated {plan_total_s(rows, extras=False):.0f} s with {OVERHEAD_S} s of "
          f"overhead, {plan_total_s(rows):.0f} s with the extras (tier {EXTRA_TIER}) "
          f"(estimates, not measurements)", flush=True)


# ------------------------------------------------------------------ freshness of filed parts


def part_sources(part: Part, root: Path = harness.ROOT) -> list[str]:
    """The files a part's result depends on: its script's static import closure and the
    files it runs as processes (every ``.py`` under a folder of ``runs``)."""
    files = set(freshness.static_sources(root / "benchmarks" / part.script, root))
    for rel in part.runs:
        path = root / rel
        files.update(str(p.relative_to(root)) for p in
                     (sorted(path.rglob("*.py")) if path.is_dir() else [path]))
    return sorted(files)


def _measured_options(command: list[str]) -> list[str]:
    """A command's options without :data:`RUN_ONLY_OPTIONS` and their values."""
    out, skip = [], False
    for arg in command:
        if skip:
            skip = False
        elif arg in RUN_ONLY_OPTIONS:
            skip = True
        elif not arg.startswith(tuple(o + "=" for o in RUN_ONLY_OPTIONS)):
            out.append(arg)
    return out


def part_freshness(part: Part, folder: str, mode: str = "full",
              root: Path = harness.ROOT) -> dict[str, Any]:
    """Whether ``part``'s filed result in ``benchmarks/results/<folder>/`` describes the
    present code: ``{"fresh": bool, "reason": str, "commit": str | None}``."""
    path = root / "benchmarks" / "results" / folder / (part.stem + harness_suffix(mode) + ".json")
    if not path.is_file():
        return {"fresh": False, "reason": f"never filed on {folder}", "commit": None}
    try:
        data = json.loads(path.read_text())
        system, summary = data["system"], data.get("summary") or {}
    except (OSError, ValueError, KeyError, AttributeError) as err:
        return {"fresh": False, "reason": f"{path.name} unreadable ({err})", "commit": None}
    commit = system.get("git_commit")
    sources = part_sources(part, root)
    if not commit:
        return {"fresh": False, "reason": "its filed result records no commit", "commit": None}
    dirty = sorted(set(system.get("git_dirty_paths") or []) & set(sources))
    if system.get("git_dirty") and (dirty or not system.get("git_dirty_paths")):
        return {"fresh": False, "commit": commit,
                "reason": f"run from uncommitted code ({', '.join(dirty[:3]) or 'unknown'})"}
    changed = freshness.changed_since(commit, sources, root)
    if changed is None:
        return {"fresh": False, "commit": commit,
                "reason": f"git cannot compare with {commit[:10]}"}
    if changed:
        return {"fresh": False, "commit": commit,
                "reason": f"{len(changed)} of its {len(sources)} sources changed since "
                          f"{commit[:10]}: {', '.join(changed[:3])}"
                          + (", ..." if len(changed) > 3 else "")}
    missing = [m for k, v in summary.items() if k.endswith("not_measured") and v
               for m in (v if isinstance(v, list) else [v])]
    if missing:  # e.g. points its --budget-s did not reach
        return {"fresh": False, "commit": commit,
                "reason": f"its filed result is incomplete ({str(missing[0])[:60]}"
                          + (f", and {len(missing) - 1} more)" if len(missing) > 1 else ")")}
    filed = _measured_options(shlex.split(system.get("command", ""))[2:])
    size = {"full": [], "quick": ["--quick"], "smoke": ["--smoke"]}[mode]
    if filed != size + _measured_options(part.args[mode]):
        return {"fresh": False, "commit": commit,
                "reason": f"filed with other options ({' '.join(filed)[:80]})"}
    return {"fresh": True, "commit": commit,
            "reason": f"its result at {commit[:10]} covers the present code of its "
                      f"{len(sources)} sources and the same options"}


def freshness_report(names: list[str] | None = None, mode: str = "full",
                     root: Path = harness.ROOT) -> dict[str, Any]:
    """:func:`part_freshness` of every part on every accelerator folder that holds results:
    ``{"folders": {folder: {part: {...}}}}`` (a folder not listed has nothing fresh)."""
    names = names or list(BY_NAME)
    results = root / "benchmarks" / "results"
    return {"mode": mode, "folders": {
        folder: {n: part_freshness(BY_NAME[n], folder, mode, root) for n in names}
        for folder in harness.accelerator_folders(results)}}
