"""Where a PPO update's time goes, the library's and rejax's side by side.

``benchmarks/e2e_frameworks.py`` times the library's PPO against rejax's on the same schedule
(the same jax, gymnax's CartPole-v1 and Acrobot-v1, 4 envs x 128 steps per update, 4 epochs
of 4 minibatches, tanh 2x64 actor and critic). This profile splits one update of each side
into its two phases, each side in its own process (``benchmarks/peers/``, the e2e run's
programs, with ``profile`` in the spec), one process at a time, the sides alternating:

* **rollout**: the env steps of one update (``num_envs * num_steps``) with the actor's sampling
  and the critic's values: the library's ``ActorCritic.rollout`` (the function its
  ``make_train`` runs) and rejax's ``collect_trajectories``, each jitted and called on the
  trained state, best of 50 after a compiling call;
* **rest**: advantages and the minibatch epochs, the run's seconds per update (its whole
  compiled training run, timed after compiling, over its number of updates) less the rollout.

The library runs twice: as the e2e run configures it (its default linearly annealed
learning rate) and with ``anneal_lr=False``, rejax's constant learning rate, so the one
schedule difference the mapping leaves (besides rejax's clipping by value, which the library
has no option for) is measured apart. Each variant runs ``rounds`` times per env; the summary
takes each one's median. Keys per env: ``ppo_<phase>_ratio_<env>`` and
``ppo_<phase>_ratio_constant_lr_<env>`` (library seconds / rejax seconds, ``phase`` in
``rollout``, ``rest``, ``update``; above 1 the library is slower) and
``ppo_<phase>_s_<variant>_<env>``; ``ppo_update_ratio_max`` the worst. Without rejax's venv
(``bash benchmarks/peers/setup.sh rejax``) its side is recorded as not measured.

    python benchmarks/e2e_ppo_phases.py [--publish]     # full: minutes on 2 CPU cores
    python benchmarks/e2e_ppo_phases.py --quick          # shorter runs, 2 rounds
    python benchmarks/e2e_ppo_phases.py --smoke          # the library side only, seconds
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as python benchmarks/<name>.py: the package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import e2e_frameworks as e2e
from benchmarks import harness

OPPONENT = "rejax"
PHASES = ("rollout", "rest", "update")
#: variant -> (side, spec changes): the library as configured, the library with rejax's
#: constant learning rate, rejax
VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    e2e.LIBRARY: (e2e.LIBRARY, {}),
    "constant_lr": (e2e.LIBRARY, {"anneal_lr": False}),
    OPPONENT: (OPPONENT, {}),
}


def sizes(mode: str) -> dict[str, Any]:
    """Sizes for a mode (full, quick, smoke): the e2e run's PPO timesteps, rounds, envs and
    the variants run (smoke: the library as configured, and rejax, not started)."""
    if mode == "smoke":
        return {"rl_timesteps": {"ppo": 2_048}, "rl_overrides": {"ppo": {}}, "rounds": 1,
                "rl_envs": ["cartpole"], "variants": [e2e.LIBRARY, OPPONENT], "random_episodes": 2,
                "timeout_s": 600}
    return {"rl_timesteps": {"ppo": 40_000 if mode == "quick" else 100_000},
            "rl_overrides": {"ppo": {}}, "rounds": 2 if mode == "quick" else 5,
            "rl_envs": list(e2e.RL_ENVS), "variants": list(VARIANTS), "random_episodes": 2,
            "timeout_s": 1800}


def measure(size: dict[str, Any], sides: dict[str, e2e.Side],
            threads: int) -> list[dict[str, Any]]:
    """Every round of every env, the variants alternating (:data:`VARIANTS`' order); one
    row per run."""
    rows = []
    for env in size["rl_envs"]:
        for i in range(size["rounds"]):
            for name in size["variants"]:
                side, changes = VARIANTS[name]
                spec = {**e2e.rl_spec("ppo", env, size), **changes, "profile": True}
                res = e2e.run_side(sides[side], spec, threads, size["timeout_s"])
                phases = (res.get("record") or {}).get("phases")
                print(f"[{name}] ppo {env} round {i}: "
                      + (f"rollout {phases['rollout_s'] * 1e3:.2f} ms, rest "
                         f"{phases['rest_s'] * 1e3:.2f} ms per update" if phases
                         else f"{res['status']}: {res.get('reason')}"), flush=True)
                rows.append({"variant": name, "side": side, "env": env, "round": i,
                             "spec": spec, **res})
    return rows


def _median(rows: list[dict[str, Any]], variant: str, env: str, phase: str) -> float | None:
    """A variant's median seconds of ``phase`` (``update``: ``per_update_s``) over its
    rounds."""
    key = "per_update_s" if phase == "update" else f"{phase}_s"
    vals = [r["record"]["phases"][key] for r in rows
            if r["variant"] == variant and r["env"] == env and r["status"] == "measured"
            and r["record"].get("phases")]
    return statistics.median(vals) if vals else None


def summarize(report_: dict[str, Any]) -> dict[str, Any]:
    """Median phase seconds per variant and env, the library / rejax ratios and the worst."""
    rows, cfg = report_["results"]["runs"], report_["config"]
    summary: dict[str, Any] = {"device": report_["system"].get("device_kind"),
                               "mode": cfg["mode"], "threads": cfg["threads"]}
    ratios = []
    for env in cfg["sizes"]["rl_envs"]:
        for phase in PHASES:
            got = {v: _median(rows, v, env, phase) for v in VARIANTS}
            for variant, v in got.items():
                summary[f"ppo_{phase}_s_{variant}_{env}"] = v
            for variant, tag in ((e2e.LIBRARY, ""), ("constant_lr", "constant_lr_")):
                ratio = (got[variant] / got[OPPONENT]
                         if got[variant] and got[OPPONENT] else None)
                summary[f"ppo_{phase}_ratio_{tag}{env}"] = ratio
                if phase == "update" and not tag and ratio is not None:
                    ratios.append(ratio)
    summary["ppo_update_ratio_max"] = max(ratios) if ratios else None
    summary["ppo_not_measured"] = sorted({r["variant"] for r in rows
                                          if r["status"] != "measured"})
    summary["rejax_version"] = next(
        (r["record"]["versions"].get("rejax") for r in rows
         if r["side"] == OPPONENT and r["status"] == "measured"), None)
    return summary


def render_markdown(report_: dict[str, Any]) -> str:
    """One row per env and phase: each variant's median milliseconds per update, the
    ratios."""
    summary, cfg = report_["summary"], report_["config"]
    ms = 1e3
    rows = []
    for env in cfg["sizes"]["rl_envs"]:
        for phase in PHASES:
            cells = [harness.fmt(summary[f"ppo_{phase}_s_{v}_{env}"], ".3g", "-", ms)
                     for v in VARIANTS]
            rows.append([env, phase, *cells,
                         harness.fmt(summary[f"ppo_{phase}_ratio_{env}"], ".3g", "-"),
                         harness.fmt(summary[f"ppo_{phase}_ratio_constant_lr_{env}"],
                                     ".3g", "-")])
    head = (f"Device: {summary['device']}; mode {summary['mode']}; {cfg['threads']} threads "
            f"per side; medians over {cfg['sizes']['rounds']} round(s) of "
            f"{cfg['sizes']['rl_timesteps']['ppo']:,} env steps per run. Milliseconds per "
            "update of 512 env steps (4 envs x 128); ratio: library / rejax "
            f"{summary['rejax_version'] or '(not measured)'}.")
    table = harness.md_table(["env", "phase", "jaxrl_pim ms", "jaxrl_pim constant lr ms",
                              "rejax ms", "ratio", "ratio, constant lr"], rows,
                             ["", "", ":", ":", ":", ":", ":"])
    return "\n".join([head, "", *table]) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__)
    e2e.add_side_options(ap)
    args, run, mode = harness.start(ap, argv, __file__, cpu_workarounds=False)
    size = sizes(mode)
    peers = e2e.peers_dir(args)
    out = harness.output_path(args, "e2e_ppo_phases")
    sides = {e2e.LIBRARY: e2e.library_side(), OPPONENT: e2e.opponent_side(OPPONENT, peers)}
    if mode == "smoke":
        sides[OPPONENT] = sides[OPPONENT]._replace(skip="--smoke starts no opponent")
    t0 = time.perf_counter()
    rows = measure(size, sides, args.threads)
    config = {"mode": mode, "threads": args.threads, "sizes": size,
              "rl_schedule": {"ppo": e2e.RL_SCHEDULE["ppo"]}}
    harness.write(out, run=run, config=config, results={"runs": rows},
                  timing_s={"runs": time.perf_counter() - t0}, summarize=summarize,
                  markdown=render_markdown, show=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
