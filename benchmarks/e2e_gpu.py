"""The library's DQN and PPO against rejax's on an accelerator: whole training runs, side by side.

The accelerator's selection of ``benchmarks/e2e_frameworks.py``, built from its functions
(its specs, sides, subprocess protocol and run loop): DQN and PPO on gymnax's CartPole-v1
(``--envs cartpole acrobot`` adds Acrobot-v1), one seed, each side in its own process, one
process at a time, the library's run then rejax's for each algorithm; the schedule is the CPU
rows' (the library's DQN / PPO defaults, mapped onto rejax as ``peers/rejax_run.py`` says)
at the CPU full run's timesteps (``--quick``: its quick run's). Each side's start-up (process
launch to ready), compile and training seconds are in its record.

rejax 0.1 needs gymnax < 1.0 and the project a newer one, so on a bare GPU host (no venvs,
no network) rejax's wheels go into a folder of their own and rejax's side runs with this
interpreter and that folder first on ``PYTHONPATH`` (``--peer-site rejax=DIR``; without it,
``.peers/rejax``'s venv, ``bash benchmarks/peers/setup.sh rejax``)::

    python3 -m pip install --no-index --no-deps --target /tmp/rejax_site <rejax's wheels>
    python benchmarks/e2e_gpu.py --peer-site rejax=/tmp/rejax_site     # one H100 / H200
    python benchmarks/e2e_gpu.py --smoke            # any host, seconds: PPO, tiny sizes

A rejax that cannot start (no such folder or venv, or no rejax in it) is recorded as not
measured with the reason and its keys are None; ``--smoke`` then runs the library side only.

Summary keys (``gpu_`` prefixed on an accelerator backend, unprefixed on the CPU):
``[gpu_]e2e_steps_per_s_ratio_vs_rejax_<algo>`` (CartPole; other envs under
``..._<algo>_by_env``): the library's env steps per second with learning on over rejax's,
measured in this run; a number only when both sides learned (final return above the side's
own random-policy return by :data:`LEARNED_MARGIN` of its magnitude), else None, with
``[gpu_]e2e_learned_<algo>`` (``{side: bool or None}``, None: not measured) saying which did
not; ``[gpu_]e2e_steps_per_s_<side>_<algo>`` and ``[gpu_]e2e_seconds_per_run_<side>_<algo>``
(start-up + compile + training) per side.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as python benchmarks/<name>.py: the package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import e2e_frameworks as e2e
from benchmarks import harness

OPPONENT = "rejax"
ALGOS = ("dqn", "ppo")
SIDES = (e2e.LIBRARY, OPPONENT)
#: a side learned when ``final_return > random_return + LEARNED_MARGIN * |random_return|``
#: (CartPole: half again the random policy's return; Acrobot: half way from -500 to 0)
LEARNED_MARGIN = 0.5
ACCELERATORS = ("gpu", "cuda", "rocm", "tpu")


def sizes(mode: str, envs: list[str] | None = None) -> dict[str, Any]:
    """Sizes for a mode: e2e_frameworks' RL timesteps and overrides of the same mode, one
    seed, ``envs`` (keys of ``e2e.RL_ENVS``; default CartPole). Smoke: PPO only (one compile
    per side; DQN's keys None), at e2e_frameworks' smoke timesteps."""
    base = e2e.sizes(mode)
    algos = ["ppo"] if mode == "smoke" else list(ALGOS)
    return {"rl_envs": list(envs or ["cartpole"]), "rl_algos": algos, "seeds": 1,
            "rl_timesteps": base["rl_timesteps"], "rl_overrides": base["rl_overrides"],
            "random_episodes": 4 if mode == "smoke" else 20,
            "timeout_s": 300 if mode == "smoke" else 600}


def plan(size: dict[str, Any]) -> list[dict[str, Any]]:
    """Per env and algorithm, the library's run then rejax's, on the same spec."""
    return [{"side": side, "spec": e2e.rl_spec(algo, env, size)}
            for env in size["rl_envs"] for algo in size["rl_algos"] for side in SIDES]


def learned(record: dict[str, Any] | None) -> bool | None:
    """Whether a run learned (see :data:`LEARNED_MARGIN`); None when not measured."""
    if record is None:
        return None
    final, rand = record.get("final_return"), record.get("random_return")
    if final is None or rand is None:
        return False
    return final > rand + LEARNED_MARGIN * abs(rand)


def _total_s(rec: dict[str, Any] | None) -> float | None:
    """Seconds of a run: start-up + compile + training (None when not measured)."""
    if rec is None:
        return None
    return rec["startup_s"] + (rec.get("compile_s") or 0.0) + rec["wall_s"]


def summarize(report_: dict[str, Any]) -> dict[str, Any]:
    """The library / rejax steps-per-second ratios where both sides learned, the learned
    flags and each side's steps per second and seconds per run (see the module docstring);
    keys ``gpu_`` prefixed on an accelerator backend."""
    rows, cfg, system = report_["results"]["runs"], report_["config"], report_["system"]
    backend = system.get("backend")
    pre = "gpu_" if backend in ACCELERATORS else ""
    summary: dict[str, Any] = {"device": system.get("device_kind"), "backend": backend,
                               "mode": cfg["mode"], "learned_margin": LEARNED_MARGIN}
    for algo in ALGOS:  # an algorithm not run: its keys None
        by_env, flags_by_env = {}, {}
        for env in cfg["sizes"]["rl_envs"]:
            rec = {s: e2e._find(rows, s, algo, env) for s in SIDES}
            flags = {s: learned(r) for s, r in rec.items()}
            both = all(flags.values()) and all(rec.values())
            by_env[env] = (rec[e2e.LIBRARY]["steps_per_s"] / rec[OPPONENT]["steps_per_s"]
                           if both else None)
            flags_by_env[env] = flags
            if env == cfg["sizes"]["rl_envs"][0]:
                summary[f"{pre}e2e_steps_per_s_ratio_vs_rejax_{algo}"] = by_env[env]
                summary[f"{pre}e2e_learned_{algo}"] = flags
                for s, r in rec.items():
                    summary[f"{pre}e2e_steps_per_s_{s}_{algo}"] = r and r["steps_per_s"]
                    summary[f"{pre}e2e_seconds_per_run_{s}_{algo}"] = _total_s(r)
        summary[f"{pre}e2e_steps_per_s_ratio_vs_rejax_{algo}_by_env"] = by_env
        summary[f"{pre}e2e_learned_{algo}_by_env"] = flags_by_env
    summary["e2e_not_measured"] = sorted({f"{r['side']}: {r.get('reason')}" for r in rows
                                          if r["status"] == "not measured"})
    summary["e2e_failed"] = sorted(f"{r['side']} {r['algo']} {r['task']}" for r in rows
                                   if r["status"] == "failed")
    summary["rejax_versions"] = next((r["record"]["versions"] for r in rows
                                      if r["side"] == OPPONENT and r["status"] == "measured"),
                                     None)
    return summary


def render_markdown(report_: dict[str, Any]) -> str:
    """One row per env, algorithm and side: steps/s, start-up, compile and training
    seconds, final and random return, learned; then the ratio per algorithm and env."""
    rows, summary = report_["results"]["runs"], report_["summary"]
    out = []
    for r in rows:
        rec = r.get("record")
        one = (lambda k, f=".1f", rec=rec: harness.fmt(rec.get(k), f, "-")) if rec else None
        out.append([r["algo"], r["task"], r["side"],
                    one("steps_per_s", ",.0f") if one else r["status"],
                    *(one(k) if one else "-" for k in ("startup_s", "compile_s", "wall_s",
                                                         "final_return", "random_return")),
                    harness.fmt(learned(rec), missing="-")])
    pre = "gpu_" if summary["backend"] in ACCELERATORS else ""
    ratios = [[algo, env, harness.fmt(v, ".2f", "- (a side did not learn or run)")]
              for algo in ALGOS
              for env, v in summary[f"{pre}e2e_steps_per_s_ratio_vs_rejax_{algo}_by_env"]
              .items()]
    head = (f"Device: {summary['device']} ({summary['backend']}); mode {summary['mode']}; one "
            "seed per side, each side in its own process, one at a time; rejax "
            f"{(summary['rejax_versions'] or {}).get('rejax') or '(not measured)'}. Learned: "
            f"final return above random + {LEARNED_MARGIN} x |random|.")
    lines = [head, "", *harness.md_table(
        ["algo", "env", "side", "env steps/s", "start-up s", "compile s", "train s",
         "final return", "random return", "learned"], out,
        ["", "", "", ":", ":", ":", ":", ":", ":", ""]), "",
        *harness.md_table(["algo", "env", "library / rejax steps/s"], ratios, ["", "", ":"])]
    if summary["e2e_not_measured"]:
        lines += ["", "Not measured: " + "; ".join(summary["e2e_not_measured"]) + "."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__)
    e2e.add_side_options(ap)
    e2e.add_site_option(ap)
    ap.add_argument("--envs", nargs="+", choices=list(e2e.RL_ENVS), default=None,
                    help="envs to run, the first one's ratios the headline keys (default: "
                         "cartpole)")
    args, run, mode = harness.start(ap, argv, __file__, cpu_workarounds=False)
    size = sizes(mode, args.envs)
    out = harness.output_path(args, "e2e_gpu")
    sides = {e2e.LIBRARY: e2e.library_side(),
             OPPONENT: e2e.opponent_sides(e2e.peers_dir(args), e2e.peer_sites(args))[OPPONENT]}
    t0 = time.perf_counter()
    runs = e2e.measure(plan(size), sides, args.threads, size["timeout_s"])
    config = {"mode": mode, "threads": args.threads, "sizes": size,
              "rl_schedule": {a: e2e.RL_SCHEDULE[a] for a in ALGOS},
              "peer_sites": {k: str(v) for k, v in e2e.peer_sites(args).items()}}
    harness.write(out, run=run, config=config, results={"runs": runs},
                  timing_s={"runs": time.perf_counter() - t0}, summarize=summarize,
                  markdown=render_markdown, show=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
