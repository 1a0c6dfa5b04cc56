"""Phase breakdown of MADDPG training (the paper's Figures 2-4) for growing agent counts.

Every run is timed on a realistic state (buffers filled with random transitions, see
:mod:`jaxrl_pim.marl.profiler`), in two ways (below). Two configurations per size: the
original (``faithful`` per-agent sampling, ``per_agent`` layout) and the optimised one
(``fast`` shared indices, ``interleaved`` layout). CPU: 3, 6, 12, 24 agents (3, 6 with
``--quick``); GPU adds 48. Buffer capacity: 25,600 rows on CPU (the
``learning_starts`` fill, to keep 24-agent buffers in memory) and 1e6 rows on GPU, cut to
what fits ``--budget-gib`` (the capacity of every run is in its record).

    python benchmarks/marl_profile.py [--quick | --smoke] [--publish]

With ``--budget-s`` no further run starts once that many seconds have passed; the runs
not started are named in ``results.skipped_by_budget`` and the file is marked incomplete.

While it runs, ``marl_profile[_quick].partial.json`` (and ``.md``) next to the results file
holds the rows measured so far (a results file of its own, ``results.complete`` false), so a
run cut short by a time limit keeps what it measured; it is removed when the run completes.

Two measurements per run (row):

* ``profile`` (the old one, kept): every phase jitted ALONE and timed per call
  (:func:`jaxrl_pim.marl.profiler.profile_phases`); a share weights its per-call time by how
  often the phase runs. Each separate call pays a dispatch (on an H200 several times what a
  fused env step takes), which these shares include.
* ``fused`` (new): whole fused training programs, the library's trainer
  (``make_train_from(config, n, phases=...)``, the trainer's own loop) for a piece
  of episodes holding ``rounds`` update rounds on a filled state, every variant of
  ``FUSED_VARIANTS`` compiled and timed in turn (best of ``--repeats``): ``full`` (the
  library's round), ``no_update_round`` (the round returns its inputs), ``no_sampling`` (the
  mini-batch drawn beforehand, a program input) and ``no_sampling+<phase>`` (that later phase
  also replaced by a cheap stand-in of the same output shapes: :func:`stand_ins`). A part's
  time is a difference of whole programs: ``env_steps`` = no_update_round; ``update_round``
  = full - no_update_round; ``sampling`` = full - no_sampling; ``<phase>`` = no_sampling -
  no_sampling+<phase> (removed from the program whose batch is an input: removing a batch
  consumer from the full program changed how XLA:GPU fuses the in-program gather with the
  rest, per_agent layout at 48 agents, and the critic came out negative); ``update_rest`` =
  update_round - the five phases (priority update, key splits, the conditional's operand
  copies, and what fusing the phases saves or costs). Differences of noisy times can come
  out slightly negative; they are recorded as measured. ``--smoke`` times only the first
  three variants (update round and sampling).

Summary, for the largest agent count, per env and configuration: ``estimated_update_share_*``
and ``estimated_sampling_share_*`` from the separately jitted phases (ESTIMATED: per-call
times weighted by call frequency, dispatch included), and ``fused_update_round_share_*`` and
``fused_<phase>_share_*`` (measured inside the fused program, by subtraction: the share of
the full piece's time).
"""

from __future__ import annotations

import copy
import dataclasses
import math
import os
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as python benchmarks/<name>.py: the package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import jax
import jax.numpy as jnp

from benchmarks import harness
from jaxrl_pim import results_file
from jaxrl_pim.marl import MARLConfig, make_init
from jaxrl_pim.marl.learner import Learner
from jaxrl_pim.marl.profiler import (
    ENV_PHASES,
    PHASES,
    compose_update_round,
    filled_episode,
    filled_state,
    format_table,
    plot_shares,
    profile_phases,
)
from jaxrl_pim.marl.trainer import Phases, TrainState, make_phases, make_train_from

MODES = {
    "original": {"sampling_mode": "faithful", "layout": "per_agent"},
    "fast+interleaved": {"sampling_mode": "fast", "layout": "interleaved"},
}
#: What runs once per update round: sampling, target-Q, critic, actor, target update (the
#: "update share" column of the table).
UPDATE_PHASES = PHASES[3:]
#: The fused programs (``no_a+b``: phases ``a`` and ``b`` replaced by stand-ins): all phases;
#: the update round replaced; sampling replaced (the batch a program input); sampling and each
#: later update phase replaced.
FUSED_VARIANTS: tuple[str, ...] = ("full", "no_update_round", "no_sampling",
                                   *(f"no_sampling+{p}" for p in UPDATE_PHASES[1:]))
SMOKE_VARIANTS: tuple[str, ...] = FUSED_VARIANTS[:3]
#: The parts of the full program that the fused measurement derives (module docstring).
FUSED_PARTS: tuple[str, ...] = ("env_steps", "update_round", *UPDATE_PHASES, "update_rest")
#: Each update phase's field of :class:`jaxrl_pim.marl.learner.Learner`.
FIELD = {"sampling": "sample", "target_q": "target_q", "q_loss": "critic_update",
         "p_loss": "actor_update", "target_update": "target_update"}


# ------------------------------------------------------------------ fused programs
def _touch(*trees: Any) -> jax.Array:
    """A float32 scalar reading every leaf once (a sum of means): what produced the leaves
    stays in the program when a stand-in replaces their consumer."""
    return sum((jnp.mean(x).astype(jnp.float32) for x in jax.tree.leaves(trees)),
               jnp.zeros((), jnp.float32))


def _like(shapes: Any, value: jax.Array | float) -> Any:
    """Arrays of ``shapes`` (a tree of ``ShapeDtypeStruct``) filled with ``value``."""
    return jax.tree.map(lambda s: jnp.full(s.shape, value, s.dtype), shapes)


def stand_ins(learner: Learner, teams: Any, fixed: tuple[Any, Any, Any]
              ) -> dict[str, Callable[..., Any]]:
    """Cheap replacements of the update phases, with their signatures and output shapes:
    ``sampling`` returns the ``fixed`` ``(indices, weights, batch)`` (drawn beforehand, a
    program input); ``target_q`` fills the targets with one scalar read from the rewards,
    ``q_loss`` its losses and TD errors with one read from the targets and weights (so the
    targets stay in the program); ``p_loss`` returns zero losses; ``target_update`` its
    input. Parameters pass through unchanged."""
    _, w, batch = fixed
    key = jax.random.PRNGKey(0)
    ys_shapes = jax.eval_shape(learner.target_q, teams, batch, key)
    _, closs, tds = jax.eval_shape(learner.critic_update, teams, batch, ys_shapes, w)
    _, aloss = jax.eval_shape(learner.actor_update, teams, batch, key)

    def critic_update(team_params, batch, ys, weights):
        s = _touch(ys, weights)
        return team_params, _like(closs, s), _like(tds, s)

    return {
        "sampling": lambda buffer_states, sampler_state, key: (*fixed, sampler_state),
        "target_q": lambda team_params, batch, key: _like(
            ys_shapes, _touch([b.reward for b in batch])),
        "q_loss": critic_update,
        "p_loss": lambda team_params, batch, key: (team_params, _like(aloss, 0.0)),
        "target_update": lambda team_params: team_params,
    }


def fused_program(config: MARLConfig, phases: Phases, variant: str, episodes: int
                  ) -> Callable[[TrainState, Any], tuple[TrainState, Any]]:
    """``program(state, fixed) -> (state, metrics)``: the library's trainer for ``episodes``
    episodes from ``state`` with the update round as ``variant`` says: ``full`` the
    learner's own ``update_round``; ``no_update_round`` one returning its inputs (zero
    losses); ``no_<phase>[+<phase>...]`` (update phases) the round rebuilt
    (:func:`~jaxrl_pim.marl.profiler.compose_update_round`) with those phases'
    :func:`stand_ins` entries (``fixed``: the batch the sampling stand-in returns)."""
    replaced = variant.removeprefix("no_").split("+")
    if variant not in ("full", "no_update_round") and not (
            variant.startswith("no_") and set(replaced) <= set(UPDATE_PHASES)):
        raise ValueError(f"variant {variant!r}: not full, no_update_round or no_<update "
                         f"phases joined by +> (update phases: {UPDATE_PHASES})")
    rollout, learner = phases

    def program(state, fixed):
        ln = learner
        if variant == "no_update_round":
            ln = learner._replace(update_round=lambda tp, bs, ss, nu, k: (
                tp, ss, jnp.zeros(state.losses.shape, jnp.float32)))
        elif variant != "full":
            cheap = stand_ins(learner, state.teams, fixed)
            ln = learner._replace(**{FIELD[p]: cheap[p] for p in replaced})
            ln = ln._replace(update_round=compose_update_round(config, ln))
        return make_train_from(config, episodes, phases=Phases(rollout, ln),
                               start_episode=filled_episode(config))(state)

    return program


def piece_episodes(config: MARLConfig, rounds: int) -> int:
    """Episodes of a piece holding at least ``rounds`` update-due steps, exactly a multiple of
    ``update_every`` steps (so as many wherever the step counter starts)."""
    per = config.update_every // math.gcd(config.update_every, config.episode_length)
    return per * -(-max(1, rounds) * config.update_every // (per * config.episode_length))


def derive_fused(piece_s: dict[str, float]) -> dict[str, float]:
    """Seconds per part of the full piece, by subtraction, for the variants in ``piece_s``
    (seconds per variant, ``full`` among them; see the module docstring). Negative
    differences (noise) are kept as measured."""
    full, out = piece_s["full"], {}
    if "no_update_round" in piece_s:
        out["env_steps"] = piece_s["no_update_round"]
        out["update_round"] = full - piece_s["no_update_round"]
    if "no_sampling" in piece_s:
        out["sampling"] = full - piece_s["no_sampling"]
        out.update({p: piece_s["no_sampling"] - piece_s[f"no_sampling+{p}"]
                    for p in UPDATE_PHASES[1:] if f"no_sampling+{p}" in piece_s})
    if set(FUSED_VARIANTS) <= set(piece_s):
        out["update_rest"] = out["update_round"] - sum(out[p] for p in UPDATE_PHASES)
    return out


def profile_fused(config: MARLConfig, *, repeats: int = 3, rounds: int = 1,
                  variants: tuple[str, ...] = FUSED_VARIANTS, phases: Phases | None = None,
                  threads: int = 1, key: jax.Array | None = None) -> dict[str, Any]:
    """Time the fused ``variants`` on a filled state (every step past ``learning_starts``),
    the state donated and chained from call to call: compiled ahead (on ``threads``
    threads), one warm-up call each, then ``repeats`` passes over all, best taken. Returns
    the piece's size, ``compile_s`` (wall, all variants), ``piece_s`` per variant and the
    derived ``seconds`` and ``share`` (of the full piece) per part."""
    if "full" not in variants:
        raise ValueError(f"variants {variants} lack 'full'")
    phases = make_phases(config) if phases is None else phases
    episodes = piece_episodes(config, rounds)
    state = filled_state(config, jax.random.PRNGKey(0) if key is None else key, phases)
    fixed = jax.jit(phases.learner.sample)(state.buffers, state.sampler,
                                           jax.random.PRNGKey(1))[:3]
    t0 = time.perf_counter()
    lowered = [jax.jit(fused_program(config, phases, v, episodes), donate_argnums=0)
               .lower(state, fixed) for v in variants]  # tracing holds the GIL
    with ThreadPoolExecutor(max(1, threads)) as pool:
        compiled = dict(zip(variants, pool.map(lambda low: low.compile(), lowered),
                            strict=True))
    compile_s = time.perf_counter() - t0
    best = dict.fromkeys(variants, math.inf)
    chain = [state]  # the state, donated from call to call

    def call(v: str) -> Any:
        chain[0] = compiled[v](chain[0], fixed)[0]
        return chain[0]

    for r in range(repeats + 1):  # the first pass warms up; variants interleaved per pass
        for v in variants:
            t = harness.seconds(lambda v=v: call(v))
            if r:
                best[v] = t if t < best[v] else best[v]
    steps = episodes * config.episode_length
    seconds = derive_fused(best)
    return {"episodes": episodes, "env_steps": steps,
            "update_rounds": steps // config.update_every * config.updates_per_round,
            "compile_s": compile_s, "piece_s": best, "seconds": seconds,
            "share": {p: x / best["full"] for p, x in seconds.items()}}


def rounds_for(profile: dict[str, Any], config: MARLConfig, piece_s: float) -> int:
    """Update rounds per fused piece so that it lasts about ``piece_s`` seconds, judged from
    the separately jitted calls (which overstate a fused cycle): 1 to 64."""
    sec = profile["seconds"]
    cycle = (profile["update_round_fused"] or sum(sec[p] for p in UPDATE_PHASES)) \
        + config.update_every * sum(sec[p] for p in ENV_PHASES)
    return max(1, min(64, math.ceil(piece_s / cycle)))


def state_bytes(cfg: MARLConfig) -> int:
    """Bytes of the whole training state (buffers, networks, optimisers), from shapes only."""
    shapes = jax.eval_shape(make_init(cfg), jax.random.PRNGKey(0))
    return int(sum(x.size * x.dtype.itemsize for x in jax.tree.leaves(shapes)))


def capacity_that_fits(cfg: MARLConfig, wanted: int, budget_bytes: float) -> int:
    """The largest buffer capacity up to ``wanted`` whose training state fits the budget.

    State bytes are affine in the capacity; the slope and intercept come from two shape-only
    evaluations. The result is rounded down to a multiple of 1,024 rows.
    """
    small, large = 1_024, 2_048
    b1 = state_bytes(dataclasses.replace(cfg, buffer_capacity=small, learning_starts=small))
    b2 = state_bytes(dataclasses.replace(cfg, buffer_capacity=large, learning_starts=small))
    per_row = (b2 - b1) / (large - small)
    fits = int((budget_bytes - (b1 - per_row * small)) / per_row)
    return max(1_024, min(wanted, fits // 1_024 * 1_024))


def sizes(mode: str, gpu: bool) -> dict[str, Any]:
    """Agent counts, envs, capacity, repeats and configurations of a mode (full, quick,
    smoke)."""
    if mode == "smoke":
        return {"sizes": [3], "envs": ["spread"], "capacity": 2_048, "repeats": 1,
                "modes": ["fast+interleaved"], "variants": SMOKE_VARIANTS}
    agents = [3, 6, 12, 24, 48] if gpu else [3, 6, 12, 24]
    return {"sizes": agents[:2] if mode == "quick" else agents, "envs": ["spread", "tag"],
            "capacity": 1_000_000 if gpu else 25_600, "repeats": 3, "modes": list(MODES),
            "variants": FUSED_VARIANTS}


def _share(row: dict[str, Any], phases: tuple[str, ...]) -> float:
    return sum(row["profile"]["share"][p] for p in phases)


def summarize(report_: dict[str, Any]) -> dict[str, Any]:
    """Headline numbers from the stored rows (see the module docstring)."""
    system, results = report_["system"], report_["results"]
    rows = results["rows"]
    summary: dict[str, Any] = {
        "device": f"{system['backend']}: {system['device_count']} x {system['device_kind']}",
        "mode": report_["config"]["mode"],
        "complete": results["complete"],
        "largest_agents": max((r["agents"] for r in rows), default=None),
    }
    for r in rows:
        if r["agents"] != summary["largest_agents"]:
            continue
        tag = f"{r['env']}_largest_{'original' if r['mode'] == 'original' else 'fast'}"
        summary[f"estimated_update_share_{tag}"] = _share(r, UPDATE_PHASES)
        summary[f"estimated_sampling_share_{tag}"] = _share(r, ("sampling",))
        for part in ("update_round", *UPDATE_PHASES):  # rows with a fused measurement
            if part in r.get("fused", {}).get("share", {}):
                summary[f"fused_{part}_share_{tag}"] = r["fused"]["share"][part]
    summary["capacity_by_run"] = {f"{r['env']}-{r['agents']}-{r['mode']}": r["capacity"]
                                  for r in rows}
    return summary


def _estimated(row: dict[str, Any], part: str) -> float | None:
    """The old (separately jitted) estimate's share of a fused part (None: no such part)."""
    groups = {"env_steps": ENV_PHASES, "update_round": UPDATE_PHASES, "update_rest": ()}
    phases = groups.get(part, (part,))
    return _share(row, phases) if phases else None


def fused_table(rows: list[dict[str, Any]]) -> str:
    """The fused measurement's table: per part, ms per update round, its share of the full
    piece and the separately jitted estimate's share."""
    lines = ["| env | agents | mode | rounds per piece | fused cycle (est.) | "
             + " | ".join(FUSED_PARTS) + " |", "|" + "---|" * (len(FUSED_PARTS) + 5)]
    for r in rows:
        f, prof = r["fused"], r["profile"]
        n = f["update_rounds"]
        est = sum(prof["seconds"][p] * prof["calls_per_update_round"][p] for p in PHASES)
        cells = []
        for part in FUSED_PARTS:
            if part not in f["seconds"]:
                cells.append("not run")
                continue
            e = _estimated(r, part)
            cells.append(f"{f['seconds'][part] / n * 1e3:.3g} ms ({f['share'][part]:.0%}"
                         + ("" if e is None else f"; est. {e:.0%}") + ")")
        lines.append(f"| {r['env']} | {r['agents']} | {r['mode']} | {n} | "
                     f"{f['piece_s']['full'] / n * 1e3:.3g} ms ({est * 1e3:.3g} ms) | "
                     + " | ".join(cells) + " |")
    return "\n".join(lines)


def render_markdown(report_: dict[str, Any]) -> str:
    """The phase tables (from the stored report): the separately jitted estimate, then the
    fused measurement (rows that have one)."""
    cfg, rows = report_["config"], report_["results"]["rows"]
    caps = sorted({r["capacity"] for r in rows})
    cap = (f"{caps[0]:,} rows" if len(caps) == 1 else
           f"{caps[0]:,}-{caps[-1]:,} rows (cut to fit {cfg['budget_gib']} GiB; per run in "
           "the JSON)")
    return "\n".join([
        f"Device: {report_['summary']['device']}; buffer capacity {cap}; per-call times "
        f"(best of {cfg['repeats']}) and the share of training time they imply (estimated: "
        "per-call times weighted by call frequency)"
        + ("" if report_["results"]["complete"] else "; INCOMPLETE run") + ".",
        "",
        format_table(rows),
        "",
    ] + ([] if not any("fused" in r for r in rows) else [
        "Inside the fused training program (the trainer's own loop over update cycles of "
        f"{cfg.get('update_every', 100)} env steps and a round; best of {cfg['repeats']}): "
        "per part, ms per update round, its share of the full piece and (est.) the share "
        "estimated above. Parts are differences of whole programs (env_steps: the program "
        "without update rounds; update_round: full minus that; sampling: full minus the "
        "program with the batch passed in; a later phase: that program minus it with the "
        "phase also replaced by a cheap stand-in; update_rest: the round minus its five "
        "phases), so noise can make a small part NEGATIVE: recorded as measured. fused "
        "cycle: the full piece per update round (est.: the separately jitted calls of one "
        "cycle, dispatch included).",
        "",
        fused_table([r for r in rows if "fused" in r]),
        "",
    ]))


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__)
    ap.add_argument("--repeats", type=int, default=None,
                    help="timed calls per phase, best taken (default 3; --smoke 1)")
    ap.add_argument("--sizes", type=int, nargs="+", default=None,
                    help="agent counts (default 3 6 12 24, plus 48 on GPU; --quick 3 6)")
    ap.add_argument("--capacity", type=int, default=None,
                    help="buffer rows (default 1e6 on GPU, 25,600 on CPU)")
    ap.add_argument("--piece-s", type=float, default=0.25,
                    help="about how long one fused piece runs; sets its update rounds "
                    "(1 to 64, from the separately jitted times; --smoke: 1 round; "
                    "default 0.25)")
    ap.add_argument("--compile-threads", type=int, default=min(len(FUSED_VARIANTS),
                                                                os.cpu_count() or 1),
                    help="threads compiling the fused variants (default: one each, up to "
                    "the CPU count)")
    ap.add_argument("--budget-gib", type=float, default=20.0,
                    help="device memory the training state may take; larger buffers are cut "
                    "to fit (the profiler also holds a filled copy while timing; default 20)")
    harness.add_budget(ap, "run (the file is then marked incomplete)")
    args, run, mode = harness.start(ap, argv, __file__, cpu_workarounds=False)
    gpu = jax.default_backend() != "cpu"
    size = sizes(mode, gpu)
    agent_counts = args.sizes or size["sizes"]
    capacity = args.capacity or size["capacity"]
    repeats = args.repeats or size["repeats"]
    out = harness.output_path(args, "marl_profile")
    partial = out.with_name(f"{out.stem}.partial.json")
    budget = args.budget_gib * 2**30
    modes = {name: MODES[name] for name in size["modes"]}
    config = {"mode": mode, "sizes": agent_counts, "envs": size["envs"], "modes": modes,
              "capacity": capacity, "budget_gib": args.budget_gib, "repeats": repeats,
              "fused_variants": list(size["variants"]), "piece_s": args.piece_s,
              "update_every": MARLConfig().update_every}
    rows: list[dict[str, Any]] = []
    skipped: list[str] = []
    time_left = harness.Budget(args.budget_s)
    for env in size["envs"]:
        for n in agent_counts:
            for mode_name, kw in modes.items():
                if rows and time_left.spent():
                    skipped.append(f"{env}-{n}-{mode_name}")
                    continue
                base = MARLConfig(env=env, num_agents=n, **kw)
                cap = capacity_that_fits(base, capacity, budget)
                if cap < capacity:
                    print(f"{env} N={n}: {capacity:,} rows need more than {args.budget_gib} GiB;"
                          f" using {cap:,} rows", flush=True)
                cfg = MARLConfig(env=env, num_agents=n, buffer_capacity=cap,
                                 learning_starts=min(25_600, cap), **kw)
                t0 = time.perf_counter()
                prof = profile_phases(cfg, repeats=repeats)
                rounds = 1 if mode == "smoke" else rounds_for(prof, cfg, args.piece_s)
                fused = profile_fused(cfg, repeats=repeats, rounds=rounds,
                                      variants=size["variants"], threads=args.compile_threads)
                row = {"env": env, "agents": n, "mode": mode_name, "config": cfg,
                       "capacity": cap, "profile": prof, "fused": fused}
                print(f"{env} N={n} {mode_name}: update phases "
                      f"{_share(row, UPDATE_PHASES) * 100:.0f}% of training time, sampling "
                      f"{_share(row, ('sampling',)) * 100:.0f}% (estimated); fused: update "
                      f"round {fused['share']['update_round']:.0%}, sampling "
                      f"{fused['share']['sampling']:.0%} ({rounds} rounds per piece, "
                      f"compiled in {fused['compile_s']:.0f} s; {time.perf_counter() - t0:.0f}"
                      " s)", flush=True)
                rows.append(row)
                # what is measured so far survives a run cut short (time-limited hosts)
                results_file.write_results(
                    partial, run=copy.copy(run), config=config,
                    results={"rows": rows, "complete": False},
                    timing_s={"total": time.perf_counter() - time_left.start},
                    summarize=summarize, markdown=render_markdown)
    results: dict[str, Any] = {"rows": rows, "complete": not skipped}
    if skipped:
        print(f"--budget-s {args.budget_s:g} spent; not run: {', '.join(skipped)}", flush=True)
        results["skipped_by_budget"] = skipped
    harness.write(out, run=run, config=config, results=results,
                  timing_s={"total": time.perf_counter() - time_left.start}, summarize=summarize,
                  markdown=render_markdown)
    partial.unlink(missing_ok=True)
    partial.with_suffix(".md").unlink(missing_ok=True)
    device = f"{jax.default_backend()}: {len(jax.devices())} x {jax.devices()[0].device_kind}"
    plot_shares(rows, str(out.with_suffix(".png")), f"MADDPG phase shares ({device})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
