"""Particle-world throughput: environment steps per second of vmapped MPE rollouts.

For every scenario and size, ``jaxrl_pim.envs.mpe.make_rollout`` steps ``--num-envs``
vmapped environments for ``--num-steps`` steps (auto-reset included) under uniform random
actions drawn inside the jitted loop; the time is the best of ``--repeats`` blocked runs
after a compiling warm-up run. Steps per second = ``num_envs * num_steps / best seconds``.

``--clock wall`` (default) times wall seconds; ``--clock process`` counts the CPU seconds of
this process, a load-insensitive figure that equals one idle core's wall time only when XLA
runs on one thread::

    XLA_FLAGS=--xla_cpu_multi_thread_eigen=false taskset -c 0 \\
        python benchmarks/mpe_rollout.py --clock process

Opponent: JaxMARL 0.2.0's ``MPE_simple_spread_v3`` and ``MPE_simple_tag_v3`` (continuous
actions), the worlds a user would pick instead, stepped side by side in the same run with the
same semantics: the library's worlds are built to match (``integration="mpe2"``, JaxMARL's
position-then-velocity order; spread's ``reward="pettingzoo"``, JaxMARL's ``local_ratio``
mix), the same uniform random actions drawn the same way (JaxMARL's action vector orders the
moves ``[no-op, -x, +x, -y, +y]``, the library's ``[no-op, +x, -x, +y, -y]``: the columns
are mapped) and its agents in its order (``adversary_*`` then ``agent_*`` for tag). Before
timing, :func:`parity` steps both from the same state with the same actions for 25 steps and
requires equal positions and velocities to float tolerance. Key
``mpe_speedup_vs_jaxmarl_min`` (the smallest speed-up over every world and size; target
>= 2x). JaxMARL comes from the ``bench`` extra (``pip install -e ".[bench]"``).

Sizes: full -- presets 3, 6, 12 and 24 of both scenarios, 64 envs, 1,000 steps, best of 5;
``--quick`` 200 steps, best of 3; ``--smoke`` spread-3 only, 2 envs, 3 steps, one repeat.
Writes ``mpe_rollout[_quick|_smoke].json`` and a Markdown table (see ``benchmarks/harness.py``
for ``--out`` / ``--publish``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as python benchmarks/<name>.py: the package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks import harness

SIZES = {  # mode -> (scenarios, presets, num_envs, num_steps, repeats)
    "full": (["spread", "tag"], [3, 6, 12, 24], 64, 1000, 5),
    "quick": (["spread", "tag"], [3, 24], 64, 200, 3),
    "smoke": (["spread"], [3], 2, 3, 1),
}


#: JaxMARL's continuous action ``[no-op, -x, +x, -y, +y]`` from the library's
#: ``[no-op, +x, -x, +y, -y]`` (``u_x = a[2] - a[1]`` there, ``a[1] - a[2]`` here).
JAXMARL_ACTION_COLUMNS = (0, 2, 1, 4, 3)
PARITY_STEPS = 25
TARGET_VS_JAXMARL = 2.0


def matched_worlds(scenario: str, preset: int) -> tuple[Any, Any, Any]:
    """``(env, params, jaxmarl_env)``: the library's world with JaxMARL's semantics and
    JaxMARL's of the same size (spread: N agents and landmarks; tag: predators, prey and
    obstacles of the preset), continuous actions."""
    from jaxrl_pim.envs import mpe

    jaxmarl = harness.require_baseline("jaxmarl")
    if scenario == "spread":
        env, params = mpe.make(scenario, preset, integration="mpe2", reward="pettingzoo")
        jenv = jaxmarl.make("MPE_simple_spread_v3", num_agents=env.num_agents,
                            num_landmarks=env.num_landmarks, action_type="Continuous")
    else:
        env, params = mpe.make(scenario, preset, integration="mpe2")
        pred, prey = (t.num_agents for t in env.teams)
        jenv = jaxmarl.make("MPE_simple_tag_v3", num_adversaries=pred, num_good_agents=prey,
                            num_obs=env.num_landmarks, action_type="Continuous")
    return env, params, jenv


def agent_order(env: Any, jenv: Any) -> list[int]:
    """JaxMARL agent ``i`` is the library's stacked agent ``order[i]`` (teams concatenated in
    ``env.teams`` order; JaxMARL names tag's predators ``adversary_k``, its prey ``agent_k``,
    spread's agents ``agent_k``)."""
    start, index = 0, {}
    names = {"agents": "agent", "predators": "adversary", "prey": "agent"}
    for t in env.teams:
        for k in range(t.num_agents):
            index[f"{names[t.name]}_{k}"] = start + k
        start += t.num_agents
    return [index[a] for a in jenv.agents]


def to_jaxmarl(actions: Any, order: list[int], jenv: Any) -> dict[str, Any]:
    """The library's per-team actions ``[n_t, 5]`` as JaxMARL's dict of ``[5]`` vectors."""
    import jax.numpy as jnp

    stacked = jnp.concatenate(list(actions), axis=-2)[..., jnp.asarray(JAXMARL_ACTION_COLUMNS)]
    return {a: stacked[..., order[i], :] for i, a in enumerate(jenv.agents)}


def parity(env: Any, params: Any, jenv: Any, steps: int = PARITY_STEPS, seed: int = 0
           ) -> dict[str, Any]:
    """Step both worlds ``steps`` times with the same random actions, JaxMARL's positions and
    velocities set to the library's before every step (from its reset on), so each step
    compares the two transition functions from one state: float rounding differences are not
    compounded through the collision forces, which in crowded worlds (12 agents and more)
    amplify them past any fixed tolerance within 25 free-running steps. Returns the largest
    absolute differences of agent positions and velocities after a step, and ``ok`` (both
    within ``1e-4``)."""
    import jax
    import jax.numpy as jnp

    order = agent_order(env, jenv)
    inv = jnp.asarray(order)
    key = jax.random.key(seed)
    _, state = env.reset(key, params)
    _, jstate = jenv.reset(jax.random.key(seed + 1))
    step = jax.jit(env.step_env)
    jstep = jax.jit(jenv.step_env)
    worst = {"pos": 0.0, "vel": 0.0}
    for i in range(steps):
        jstate = jstate.replace(
            p_pos=jnp.concatenate([state.agent_pos[inv], state.landmark_pos]),
            p_vel=jnp.concatenate([state.agent_vel[inv], jnp.zeros_like(state.landmark_pos)]))
        k = jax.random.fold_in(key, i)
        actions = tuple(jax.random.uniform(jax.random.fold_in(k, j), (t.num_agents, 5))
                        for j, t in enumerate(env.teams))
        _, state, _, _, _ = step(k, state, actions, params)
        _, jstate, _, _, _ = jstep(k, jstate, to_jaxmarl(actions, order, jenv))
        n = env.num_agents
        worst["pos"] = max(worst["pos"], float(jnp.max(jnp.abs(
            jstate.p_pos[:n] - state.agent_pos[inv]))))
        worst["vel"] = max(worst["vel"], float(jnp.max(jnp.abs(
            jstate.p_vel[:n] - state.agent_vel[inv]))))
    return {"steps": steps, "max_abs_pos": worst["pos"], "max_abs_vel": worst["vel"],
            "tolerance": 1e-4, "ok": max(worst.values()) <= 1e-4,
            "agent_order": order}


def jaxmarl_rollout(env: Any, jenv: Any, num_envs: int, num_steps: int):
    """JaxMARL's counterpart of :func:`jaxrl_pim.envs.mpe.make_rollout`: ``num_envs``
    vmapped worlds, ``num_steps`` steps of ``jenv.step`` (its auto-reset included) under the
    same uniform random actions, drawn the same way (per team, then mapped); returns the
    summed reward."""
    import jax
    import jax.numpy as jnp

    order = agent_order(env, jenv)
    step = jax.vmap(jenv.step)

    def one_step(carry, key):
        state, acc = carry
        k_act, k_step = jax.random.split(key)
        keys = jax.random.split(k_act, len(env.teams))
        actions = tuple(jax.random.uniform(k, (num_envs, t.num_agents, t.action_dim))
                        for k, t in zip(keys, env.teams, strict=True))
        _, state, rewards, _, _ = step(jax.random.split(k_step, num_envs), state,
                                       to_jaxmarl(actions, order, jenv))
        acc = acc + sum(jnp.sum(r) for r in rewards.values())
        return (state, acc), None

    @jax.jit
    def rollout(key: jax.Array) -> jax.Array:
        k_reset, k_run = jax.random.split(key)
        _, state = jax.vmap(jenv.reset)(jax.random.split(k_reset, num_envs))
        (_, acc), _ = jax.lax.scan(
            one_step, (state, jnp.zeros((), jnp.float32)), jax.random.split(k_run, num_steps))
        return acc

    return rollout


def steps_per_second(env: Any, params: Any, num_envs: int, num_steps: int, repeats: int,
                     seed: int = 0, clock: str = "wall", rollout: Any = None
                     ) -> dict[str, Any]:
    """Time :func:`jaxrl_pim.envs.mpe.make_rollout` (or ``rollout``, a jitted function of a
    key): ``{"steps_per_s", "seconds" (best run), "compile_s" (first call), "num_envs",
    "num_steps", "clock"}``."""
    import jax

    from jaxrl_pim.envs import mpe

    timer = time.perf_counter if clock == "wall" else time.process_time
    rollout = rollout or mpe.make_rollout(env, params, num_envs, num_steps)
    key = jax.random.key(seed)
    t0 = time.perf_counter()
    jax.block_until_ready(rollout(key))
    compile_s = time.perf_counter() - t0
    best = float("inf")
    for i in range(repeats):
        k = jax.random.fold_in(key, i + 1)
        t0 = timer()
        jax.block_until_ready(rollout(k))
        best = min(best, timer() - t0)
    return {"steps_per_s": num_envs * num_steps / best, "seconds": best,
            "compile_s": compile_s, "num_envs": num_envs, "num_steps": num_steps,
            "clock": clock}


def summarize(report: dict[str, Any]) -> dict[str, Any]:
    """Steps per second per world (``<env>_steps_per_s``) and the device."""
    out: dict[str, Any] = {f"{r['env']}_steps_per_s": r["steps_per_s"]
                           for r in report["results"]["rows"]}
    out["device"] = report["system"].get("device_kind")
    rows = report["results"].get("jaxmarl")
    if rows is not None:  # files written before the JaxMARL comparison have none
        speed = {r["env"]: r["ours"]["steps_per_s"] / r["jaxmarl"]["steps_per_s"] for r in rows}
        out["mpe_speedup_vs_jaxmarl_by_env"] = speed
        out["mpe_speedup_vs_jaxmarl_min"] = min(speed.values()) if speed else None
        out["mpe_target_vs_jaxmarl"] = TARGET_VS_JAXMARL
        out["mpe_target_vs_jaxmarl_met"] = (None if not speed else
                                            min(speed.values()) >= TARGET_VS_JAXMARL)
        out["jaxmarl_parity_ok"] = all(r["parity"]["ok"] for r in rows)
    return out


def render_markdown(report: dict[str, Any]) -> str:
    """The throughput table of a stored report."""
    cfg = report["config"]
    lines = [
        f"Device: {report['system'].get('device_kind')}; {cfg['num_envs']} vmapped envs, "
        f"{cfg['num_steps']} steps, best of {cfg['repeats']}, {cfg['clock']} clock.",
        "",
    ]
    lines += harness.md_table(
        ["env", "agents", "steps/s", "best run s", "compile s"],
        ([r["env"], r["agents"], f"{r['steps_per_s']:,.0f}", f"{r['seconds']:.3f}",
          f"{r['compile_s']:.1f}"] for r in report["results"]["rows"]),
        ["", ":", ":", ":", ":"])
    rows = report["results"].get("jaxmarl")
    if rows is not None:
        lines += [
            "", f"Against JaxMARL {cfg.get('jaxmarl_version')} (same semantics: position-then-"
            "velocity integration, JaxMARL's rewards, the same random actions mapped to its "
            f"action order and agent order; parity checked over {PARITY_STEPS} steps first; "
            "steps/s of the library here are of the matched worlds):", ""]
        lines += harness.md_table(
            ["env", "agents", "library steps/s", "JaxMARL steps/s", "speed-up",
             "parity max abs pos / vel"],
            ([r["env"], r["agents"], f"{r['ours']['steps_per_s']:,.0f}",
              f"{r['jaxmarl']['steps_per_s']:,.0f}",
              f"{r['ours']['steps_per_s'] / r['jaxmarl']['steps_per_s']:.2f}x",
              f"{r['parity']['max_abs_pos']:.1e} / {r['parity']['max_abs_vel']:.1e}"
              f"{'' if r['parity']['ok'] else ' (FAILED)'}"] for r in rows),
            ["", ":", ":", ":", ":", ""])
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Measure, print the table, write the results file."""
    p = harness.parser(__doc__)
    p.add_argument("--scenarios", nargs="+", choices=["spread", "tag"], default=None,
                   help="worlds to time (default: spread tag; --smoke: spread)")
    p.add_argument("--sizes", type=int, nargs="+", default=None,
                   help="presets (spread: agents; tag: predators) (default: 3 24; --smoke: 3)")
    p.add_argument("--num-envs", type=int, default=None,
                   help="vmapped environments (default: 64; --smoke: 2)")
    p.add_argument("--num-steps", type=int, default=None,
                   help="steps per timed rollout (default: 1000; --quick: 200; --smoke: 3)")
    p.add_argument("--repeats", type=int, default=None,
                   help="timed rollouts, the best is kept (default: 5; --quick: 3; --smoke: 1)")
    p.add_argument("--clock", choices=["wall", "process"], default="wall",
                   help="wall seconds, or CPU seconds of this process (default: wall)")
    p.add_argument("--jaxmarl", action=argparse.BooleanOptionalAction, default=True,
                   help="also step JaxMARL's worlds side by side (the 'bench' extra; "
                        "default: on)")
    args, run, mode = harness.start(p, argv, __file__)
    from jaxrl_pim.checks import check_int
    scenarios, sizes, num_envs, num_steps, repeats = SIZES[mode]
    cfg = {
        "mode": mode,
        "scenarios": args.scenarios or scenarios,
        "sizes": args.sizes or sizes,
        "num_envs": check_int("--num-envs", args.num_envs or num_envs, lo=1),
        "num_steps": check_int("--num-steps", args.num_steps or num_steps, lo=1),
        "repeats": check_int("--repeats", args.repeats or repeats, lo=1),
        "clock": args.clock,
    }
    path = harness.output_path(args, "mpe_rollout")

    from jaxrl_pim.envs import mpe

    cfg["jaxmarl"] = args.jaxmarl
    if args.jaxmarl:
        from importlib import metadata

        cfg["jaxmarl_version"] = metadata.version("jaxmarl")
    rows, jrows, timing = [], [], {}
    for scenario in cfg["scenarios"]:
        for size in cfg["sizes"]:
            env, params = mpe.make(scenario, size)
            r = steps_per_second(env, params, cfg["num_envs"], cfg["num_steps"],
                                 cfg["repeats"], clock=cfg["clock"])
            rows.append({"scenario": scenario, "preset": size, "env": env.name,
                         "agents": env.num_agents, **r})
            timing[env.name] = r["seconds"]
            if not args.jaxmarl:
                continue
            menv, mparams, jenv = matched_worlds(scenario, size)
            par = parity(menv, mparams, jenv)
            if not par["ok"]:
                raise SystemExit(f"{env.name}: JaxMARL parity failed ({par}); not timing")
            ours = steps_per_second(menv, mparams, cfg["num_envs"], cfg["num_steps"],
                                    cfg["repeats"], clock=cfg["clock"])
            theirs = steps_per_second(
                menv, mparams, cfg["num_envs"], cfg["num_steps"], cfg["repeats"],
                clock=cfg["clock"], rollout=jaxmarl_rollout(menv, jenv, cfg["num_envs"],
                                                            cfg["num_steps"]))
            jrows.append({"scenario": scenario, "preset": size, "env": env.name,
                          "agents": env.num_agents, "parity": par, "ours": ours,
                          "jaxmarl": theirs})
            print(f"{env.name}: library {ours['steps_per_s']:,.0f} steps/s, JaxMARL "
                  f"{theirs['steps_per_s']:,.0f} (parity max abs pos {par['max_abs_pos']:.1e})",
                  flush=True)
    results: dict[str, Any] = {"rows": rows}
    if args.jaxmarl:
        results["jaxmarl"] = jrows
    harness.write(path, run=run, config=cfg, results=results,
                  timing_s=timing, summarize=summarize, markdown=render_markdown, show=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
