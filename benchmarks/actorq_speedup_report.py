"""What ``benchmarks/actorq_speedup.py`` makes of its records: the summary, tables and plot.

:func:`summarize` (the paper-size broadcast ratio and times, int8's inference speed-ups, steps
per second per actor count and the faster transport, the time to reward per precision with
its target, speed-up, noise test, phase shares, Amdahl bound and energies, and the
Playground returns), :func:`render_markdown` (a table per section) and :func:`plot` (return
against training time of every time-to-reward run), over the script's precisions
(:data:`PRECISIONS`) and the paper's actor size (:data:`PAPER_HIDDEN`).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import harness

#: The precisions of the actors and of the broadcast policies.
PRECISIONS = ("fp32", "fp16", "int8")
#: The paper's actor size (3 x 2048), the network of the headline broadcast keys.
PAPER_HIDDEN = (2048, 2048, 2048)
#: the tables' cells: the layer's number format, "-" for a value not measured
_fmt = functools.partial(harness.fmt, missing="-")


def _target(runs: list[dict[str, Any]], fraction: float = 0.95) -> float | None:
    """``start + fraction * (final - start)`` from the fp32 seeds: start = mean of their first
    finite curve points, final = mean of each curve's last quarter, averaged over seeds."""
    starts, finals = [], []
    for r in runs:
        v = np.asarray([np.nan if x is None else x for x in r["curve"]["avg_return"]], float)
        v = v[np.isfinite(v)]
        if v.size:
            starts.append(v[0])
            finals.append(np.mean(v[-max(1, v.size // 4):]))
    if not starts:
        return None
    start, final = float(np.mean(starts)), float(np.mean(finals))
    return start + fraction * (final - start) if final > start else None


def _first_hit(times: list[float], values: list[Any], target: float | None) -> float | None:
    if target is None:
        return None
    for t, v in zip(times, values, strict=True):
        if v is not None and v >= target:
            return float(t)
    return None


def _ttr_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    from jaxrl_pim.actorq.metrics import ratio_within_noise, seed_stats

    by = {p: [r for r in rows if r["precision"] == p] for p in ("fp32", "int8")}
    target = _target(by["fp32"])
    out: dict[str, Any] = {"time_to_reward_target": target}
    t_stats, s_stats, phases, energy = {}, {}, {}, {}
    for p, runs in by.items():
        times = [_first_hit(r["curve"]["time_s"], r["curve"]["avg_return"], target)
                 for r in runs]
        steps = [_first_hit(r["curve"]["env_steps"], r["curve"]["avg_return"], target)
                 for r in runs]
        t_stats[p], s_stats[p] = seed_stats(times), seed_stats(steps)
        phases[p] = _phase_shares(runs)
        kwh = [r["energy"].get("energy_kwh") for r in runs if r["energy"].get("available")]
        energy[p] = float(np.mean(kwh)) if kwh else None
    noise = ratio_within_noise(t_stats["fp32"], t_stats["int8"])
    steps_ratio = ratio_within_noise(s_stats["fp32"], s_stats["int8"])
    out.update(
        time_to_reward_s=t_stats,
        time_to_reward_speedup_int8=noise["ratio"],
        time_to_reward_speedup_int8_within_noise=noise["within_noise"],
        time_to_reward_target_1_5x_met=(noise["ratio"] is not None and noise["ratio"] >= 1.5
                                        and noise["within_noise"] is False),
        steps_to_reward=s_stats,
        steps_to_reward_ratio_int8=steps_ratio["ratio"],
        steps_to_reward_ratio_int8_within_noise=steps_ratio["within_noise"],
        phase_shares=phases,
        energy_kwh_per_run_estimated=energy,
    )
    # Amdahl: with the learner's share of wall time unchanged, int8 can save at most the
    # actors' share of the machine; the bound uses the fp32 runs' measured shares
    share = phases["fp32"].get("actor_cpu_share")
    out["speedup_bound_if_actors_were_free"] = 1.0 / (1.0 - share) if share is not None \
        and share < 1 else None
    return out


def _phase_shares(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean over seeds: learner phase shares of the training wall time, actor ms per batch,
    and the actors' share of the CPU time the run used (learner busy + actors busy)."""
    learner = {k: [] for k in ("learn", "ingest", "publish", "wait")}
    actor_ms = {k: [] for k in ("inference", "pull", "deserialize", "load")}
    cpu_share = []
    for r in runs:
        t = r["timing_s"]
        train = t.get("train") or 0.0
        if train <= 0 or "learn" not in t:
            continue
        for k in learner:
            learner[k].append(t.get(k, 0.0) / train)
        bd = r.get("actor_breakdown_ms") or {}
        for k in actor_ms:
            if bd.get(k) is not None:
                actor_ms[k].append(bd[k])
        busy_actor = sum(sum(a["timing_s"].get(k, 0.0) for k in ("inference", "pull",
                                                                 "deserialize", "load"))
                         for a in (r.get("actors") or {}).values())
        busy_learner = sum(t.get(k, 0.0) for k in ("learn", "ingest", "publish"))
        if busy_actor + busy_learner > 0:
            cpu_share.append(busy_actor / (busy_actor + busy_learner))
    mean = lambda xs: float(np.mean(xs)) if xs else None  # noqa: E731
    return {**{f"learner_{k}_share": mean(v) for k, v in learner.items()},
            **{f"actor_{k}_ms": mean(v) for k, v in actor_ms.items()},
            "actor_cpu_share": mean(cpu_share)}


def summarize(report: dict[str, Any]) -> dict[str, Any]:
    """Headline numbers computed from the stored records (see the module docstring)."""
    res, system = report["results"], report["system"]
    out: dict[str, Any] = {
        "device": f"{system['backend']}: {system['device_count']} x {system['device_kind']}",
        "cpu_count": system.get("cpu_count"),
        "mode": report["config"]["mode"],
    }
    if res.get("broadcast"):
        rows = res["broadcast"]
        paper = [r for r in rows if tuple(r["hidden"]) == PAPER_HIDDEN] or rows
        by = {r["precision"]: r for r in paper}
        out["broadcast_network"] = paper[0]["network"]
        out["broadcast_bytes"] = {p: by[p]["bytes"] for p in by}
        out["broadcast_bytes_ratio_fp32_over_int8"] = by["fp32"]["bytes"] / by["int8"]["bytes"]
        out["broadcast_ms"] = {p: by[p]["total_ms"] for p in by}
        out["broadcast_speedup_int8"] = by["fp32"]["total_ms"] / by["int8"]["total_ms"]
    if res.get("inference"):
        ms = {(r["network"], r["batch"], r["precision"]): r["ms_per_call"]
              for r in res["inference"]}
        cases = sorted({(n, b) for n, b, _ in ms}, key=lambda c: (c[0], c[1]))
        speed = {f"{n}/batch{b}": ms[(n, b, "fp32")] / ms[(n, b, "int8")] for n, b in cases}
        out["int8_inference_speedup"] = speed
        out["int8_inference_faster"] = [k for k, v in speed.items() if v > 1.1]
        out["int8_inference_slower"] = [k for k, v in speed.items() if v < 1 / 1.1]
        out["fp16_inference_speedup"] = {
            f"{n}/batch{b}": ms[(n, b, "fp32")] / ms[(n, b, "fp16")] for n, b in cases}
        for path in ("int8_fast", "int8_emulated"):
            fast = {f"{n}/batch{b}": ms[(n, b, "fp32")] / ms[(n, b, path)]
                    for n, b in cases if (n, b, path) in ms}
            if fast:
                out[f"{path}_inference_speedup"] = fast
                out[f"{path}_inference_faster"] = [k for k, v in fast.items() if v > 1.1]
                out[f"{path}_inference_slower"] = [k for k, v in fast.items() if v < 1 / 1.1]
    if res.get("throughput"):
        rows = res["throughput"]
        out["env_steps_per_s_ray"] = {str(r["actors_count"]): r["env_steps_per_s"]
                                      for r in rows if r["transport"] == "ray"
                                      and r["actor_update_period"] == 100}
        sps = {(r["transport"], r["actors_count"], r["actor_update_period"]):
               r["env_steps_per_s"] for r in rows}
        pairs = sorted({(n, per) for t, n, per in sps if t == "processes"
                        and ("ray", n, per) in sps})
        if pairs:
            ratio = {f"{n} actors, refresh {per}": sps[("processes", n, per)]
                     / sps[("ray", n, per)] for n, per in pairs}
            out["processes_over_ray_steps_per_s"] = ratio
            out["faster_transport_on_one_host"] = {
                k: "processes" if v > 1.1 else "ray" if v < 1 / 1.1 else "neither (within 10 %)"
                for k, v in ratio.items()}
    if res.get("time_to_reward"):
        out.update(_ttr_summary(res["time_to_reward"]))
    pg = res.get("playground")
    if pg:
        out["playground_env"] = pg["config"]["env_name"]
        out["playground_random_return"] = pg["random_policy"]["mean"]
        out["playground_final_eval_return"] = {p: r["final_eval_return"]
                                               for p, r in pg["runs"].items()}
        ttr = pg.get("time_to_reward") or {}
        out["playground_time_to_reward_speedup_int8_one_seed"] = (
            (ttr.get("speedup") or {}).get("int8"))
    return out



def render_markdown(report: dict[str, Any]) -> str:
    """Tables of a stored report: broadcast, inference, throughput, time to reward,
    phases, Playground."""
    s, res = report["summary"], report["results"]
    lines = [f"# ActorQ on Ray ({s['mode']})", "",
             f"Device: {s['device']}, {s['cpu_count']} CPU cores. Generated by "
             f"`{report['system']['command']}`.", ""]
    if res.get("broadcast"):
        lines += ["## Broadcast per refresh through Ray (best of "
                  f"{report['config']['sizes']['broadcast_repeats']})", "",
                  "| network | params | precision | bytes | pack ms | put ms | pull ms | "
                  "deserialize ms | load ms | total ms |", "|---" * 10 + "|"]
        for r in res["broadcast"]:
            lines.append(f"| {r['network']} | {r['params']:,} | {r['precision']} | "
                         f"{r['bytes']:,} | {_fmt(r['pack_ms'])} | {_fmt(r['put_ms'])} | "
                         f"{_fmt(r['pull_ms'])} | {_fmt(r['deserialize_ms'])} | "
                         f"{_fmt(r['load_ms'])} | {_fmt(r['total_ms'])} |")
        lines.append("")
    if res.get("inference"):
        lines += ["## Actor inference per step (one XLA thread, best of "
                  f"{report['config']['sizes']['inference_repeats']})", "",
                  "| network | batch | fp32 ms | fp16 ms | int8 ms | int8 fast ms | "
                  "int8 emulated ms | int8 speed-up | int8 fast speed-up | "
                  "int8 emulated speed-up | fp16 speed-up |",
                  "|---" * 11 + "|"]
        ms = {(r["network"], r["batch"], r["precision"]): r["ms_per_call"]
              for r in res["inference"]}
        for n, b in sorted({(n, b) for n, b, _ in ms}):
            f32, f16, i8 = (ms[(n, b, p)] for p in PRECISIONS)
            fast, emu = ms.get((n, b, "int8_fast")), ms.get((n, b, "int8_emulated"))
            lines.append(f"| {n} | {b} | {_fmt(f32)} | {_fmt(f16)} | {_fmt(i8)} | "
                         f"{_fmt(fast)} | {_fmt(emu)} | {_fmt(f32 / i8, '.2f')} | "
                         f"{_fmt(fast and f32 / fast, '.2f')} | {_fmt(emu and f32 / emu, '.2f')} | "
                         f"{_fmt(f32 / f16, '.2f')} |")
        lines.append("")
    if res.get("throughput"):
        lines += ["## System throughput (learner included)", "",
                  "| transport | actors | refresh every | env steps/s | learner learn share | "
                  "learner wait share | actor inference ms/batch | actor pull ms/refresh | "
                  "lost transitions |", "|---" * 9 + "|"]
        for r in res["throughput"]:
            t, bd = r["timing_s"], r["actor_breakdown_ms"]
            lines.append(f"| {r['transport']} | {r['actors_count']} | "
                         f"{r['actor_update_period']} | {r['env_steps_per_s']:,.0f} | "
                         f"{_fmt(t['learn'] / t['train'], '.2f')} | "
                         f"{_fmt(t['wait'] / t['train'], '.2f')} "
                         f"| {_fmt(bd.get('inference'))} | {_fmt(bd.get('pull'))} | "
                         f"{r['transitions_lost']} |")
        lines.append("")
    if res.get("time_to_reward"):
        cfg = res["time_to_reward"][0]["config"]
        lines += [f"## Time to reward: {cfg['env_name']} {cfg['algo']}, actor "
                  f"{'x'.join(map(str, cfg['hidden']))}, {cfg['num_actors']} actors x "
                  f"{cfg['envs_per_actor']} envs, refresh every {cfg['actor_update_period']} "
                  f"steps ({res['time_to_reward'][0]['mode']})", ""]
        target = s.get("time_to_reward_target")
        lines += ["The fp32 runs did not improve: no target, no times." if target is None
                  else f"Target: {target:.4g} (95 % of the fp32 seeds' mean improvement).", ""]
        lines += ["| precision | seeds reached | time to reward s (mean) | std | "
                  "steps to reward (mean) | energy kWh per run (estimated) |",
                  "|---|---|---|---|---|---|"]
        for p in ("fp32", "int8"):
            t, st = s["time_to_reward_s"][p], s["steps_to_reward"][p]
            lines.append(f"| {p} | {t['n']} of {t['n'] + t['missing']} | "
                         f"{_fmt(t['mean'])} | {_fmt(t['std'])} | {_fmt(st['mean'])} | "
                         f"{_fmt(s['energy_kwh_per_run_estimated'][p])} |")
        lines += ["", f"int8 speed-up {_fmt(s['time_to_reward_speedup_int8'], '.2f')} "
                  f"(within noise: {_fmt(s['time_to_reward_speedup_int8_within_noise'])}); "
                  f"steps ratio {_fmt(s['steps_to_reward_ratio_int8'], '.2f')}; bound if "
                  "the actors cost nothing: "
                  f"{_fmt(s['speedup_bound_if_actors_were_free'], '.2f')}.", "",
                  "| precision | learner learn share | publish share | wait share | "
                  "actor inference ms | pull ms | deserialize ms | load ms | actor CPU "
                  "share |", "|---|---|---|---|---|---|---|---|---|"]
        for p in ("fp32", "int8"):
            ph = s["phase_shares"][p]
            lines.append(
                f"| {p} | {_fmt(ph['learner_learn_share'], '.2f')} | "
                f"{_fmt(ph['learner_publish_share'], '.2f')} | "
                f"{_fmt(ph['learner_wait_share'], '.2f')} | "
                f"{_fmt(ph['actor_inference_ms'])} | {_fmt(ph['actor_pull_ms'])} | "
                f"{_fmt(ph['actor_deserialize_ms'])} | {_fmt(ph['actor_load_ms'])} | "
                f"{_fmt(ph['actor_cpu_share'], '.2f')} |")
        lines.append("")
    pg = res.get("playground")
    if pg:
        lines += [f"## {pg['config']['env_name']}: D4PG, single program, "
                  f"{pg['config']['num_actors']} actors, "
                  f"{pg['config']['total_timesteps']:,} steps, "
                  f"seed {pg['seed']}", "",
                  f"Uniform-random policy: {pg['random_policy']['mean']:.1f} over "
                  f"{pg['random_policy']['episodes']} episodes (this run).", "",
                  "| precision | final eval return | final train return | train s | "
                  "time to reward s |", "|---|---|---|---|---|"]
        ttr = (pg.get("time_to_reward") or {}).get("time_to_reward_s") or {}
        for p, r in pg["runs"].items():
            lines.append(f"| {p} | {_fmt(r['final_eval_return'], '.1f')} | "
                         f"{_fmt(r['final_train_return'], '.1f')} | "
                         f"{_fmt(r['timing_s']['train'], '.1f')} | {_fmt(ttr.get(p))} |")
        lines.append("")
    return "\n".join(lines)


def plot(report: dict[str, Any], path: Path) -> None:
    """Return against training time for every time-to-reward run (and the target)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = report["results"].get("time_to_reward") or []
    fig, ax = plt.subplots(figsize=(6.5, 4))
    colors = {"fp32": "tab:blue", "int8": "tab:orange"}
    for r in rows:
        v = [np.nan if x is None else x for x in r["curve"]["avg_return"]]
        ax.plot(r["curve"]["time_s"], v, color=colors[r["precision"]], alpha=0.8,
                label=f"{r['precision']} seed {r['seed']}")
    target = report["summary"].get("time_to_reward_target")
    if target is not None:
        ax.axhline(target, color="grey", ls=":", lw=1, label="target")
    ax.set_xlabel("training wall time (s)")
    ax.set_ylabel("actors' return (last 10 episodes)")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
