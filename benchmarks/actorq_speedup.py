"""ActorQ on Ray: actor inference, broadcasts, throughput and time to reward, fp32 vs int8.

Sections (each a list of records in ``results``; ``--sections`` runs a subset):

1. ``inference``: one actor step's policy evaluation (the agent's greedy function, jitted)
   for fp32 / fp16 / int8 actors computing in their own precision (int8: ``int8 x int8 ->
   int32`` matmuls with per-row activation scales; ``int8_fast``: the fast int8 path the
   actors run, static scales calibrated on the timed observations, first and last layers in
   float32; ``int8_emulated``: that path with the codes multiplied as float32 values, what
   ``actor_compute="emulated"`` (and "auto" where int8 products are slow) runs; fp16: half
   matmuls), at the small benchmark networks and at the paper's
   actor size (3 x 2048), batch 1 and batched; measured inside a Ray actor (one XLA
   thread, as the actors run); best of ``repeats`` timed loops after a warm-up.
2. ``broadcast``: bytes per refresh and its cost through Ray for fp32 / fp16 / int8 policies
   at the paper's size and at the time-to-reward run's size: pack on the learner (quantize +
   serialise + CRC32), ``ray.put`` once, and in a Ray actor: pull (``ray.get``), deserialize
   (CRC32 + views) and load (device copy; int8 kernels stay int8). Best of ``repeats``.
3. ``throughput``: environment steps per second of the whole system (learner included, at
   its usual update-to-data ratio) with 1, 2, 4 and 8 Ray actors refreshed every 100 steps,
   and the same work through the local-process transport (shared memory + queue), also with
   a refresh every 10 steps (small batches, frequent broadcasts: where per-message costs
   show). The machine's cores are oversubscribed beyond one actor per core (the learner runs
   beside them).
4. ``time_to_reward``: fp32 and int8 Ray runs of the same task, ``seeds`` seeds each,
   interleaved (fp32 seed 0, int8 seed 0, fp32 seed 1, ...) so load drift hits both, in the
   regime the paper's speed-ups come from: a large actor (2 x 1024) refreshed every 10 actor
   steps. Energy per run from codecarbon (power estimated from the CPU's TDP when RAPL is not
   readable; the summary keys say ``estimated``). The records keep every curve and the
   learner's and actors' phase times, so the summary can say where the time went.
5. ``playground``: ActorQ D4PG on MuJoCo Playground's CartpoleBalance (single program), fp32 /
   fp16 / int8, and a uniform-random policy's return measured in the same run.

The summary (``summarize``) is computed from the records: the paper-size broadcast ratio and
times, int8's inference speed-up per network and batch, steps per second per actor count,
the faster transport, the time to reward per precision (mean, standard deviation, standard
error over seeds; target = 95 % of the fp32 seeds' mean improvement), the int8 speed-up and
whether it is within noise (two combined standard errors), the Amdahl bound that the
measured phase shares allow, energies, and the Playground returns.

    python benchmarks/actorq_speedup.py            # full (roughly 25 min on an idle 2-core CPU)
    python benchmarks/actorq_speedup.py --quick    # reduced sizes (roughly 10 min)
    python benchmarks/actorq_speedup.py --smoke    # test sizes (about a minute)
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as python benchmarks/<name>.py: the package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import numpy as np

from benchmarks import harness
from benchmarks.actorq_speedup_report import (  # the summary, the tables and the plot
    PAPER_HIDDEN,
    PRECISIONS,
    plot,
    render_markdown,
    summarize,
)

SECTIONS = ("inference", "broadcast", "throughput", "time_to_reward", "playground")
#: the inference section's arithmetic: each precision, and int8 on the fast path with int8
#: products and with the codes multiplied as float32 values (``actor_compute="emulated"``)
INFERENCE = PRECISIONS + ("int8_fast", "int8_emulated")

# the time-to-reward task: DQN CartPole, actor 2 x 1024, refreshed every 10 actor steps
TTR_TASK: dict[str, Any] = dict(
    algo="dqn", env_name="CartPole-v1", num_actors=2, envs_per_actor=8,
    hidden=(1024, 1024), actor_update_period=10, train_frequency=2, total_timesteps=60_000,
    learning_starts=2_000, eps_decay_steps=20_000, buffer_capacity=50_000)
THROUGHPUT_TASK: dict[str, Any] = dict(
    algo="dqn", env_name="CartPole-v1", envs_per_actor=1, hidden=(64, 64),
    actor_update_period=100, learning_starts=500, eps_decay_steps=5_000)

SIZES: dict[str, dict[str, Any]] = {
    "full": {
        "networks": [("dqn", "CartPole-v1", (64, 64)), ("d4pg", "Pendulum-v1", (256, 256)),
                     ("dqn", "CartPole-v1", (1024, 1024)), ("dqn", "CartPole-v1", PAPER_HIDDEN)],
        "batches": [1, 8, 64], "inference_repeats": 7, "inference_loop_s": 0.2,
        "broadcast_hidden": [PAPER_HIDDEN, (1024, 1024)], "broadcast_repeats": 7,
        "actor_counts": [1, 2, 4, 8], "process_actor_counts": [2, 4],
        "short_refresh_actor_counts": [2],
        "throughput_steps_per_actor": 6_000,
        "ttr_task": TTR_TASK, "ttr_mode": "ray", "seeds": 3,
        "playground": dict(algo="d4pg", env_name="playground/CartpoleBalance", num_actors=4,
                           total_timesteps=50_000),
        "playground_precisions": list(PRECISIONS), "random_episodes": 16,
    },
    "quick": {
        "networks": [("dqn", "CartPole-v1", (64, 64)), ("dqn", "CartPole-v1", PAPER_HIDDEN)],
        "batches": [1, 64], "inference_repeats": 3, "inference_loop_s": 0.1,
        "broadcast_hidden": [PAPER_HIDDEN], "broadcast_repeats": 3,
        "actor_counts": [1, 2, 4], "process_actor_counts": [2],
        "short_refresh_actor_counts": [2],
        "throughput_steps_per_actor": 3_000,
        "ttr_task": dict(TTR_TASK, hidden=(256, 256), total_timesteps=30_000),
        "ttr_mode": "ray", "seeds": 3,
        "playground": dict(algo="d4pg", env_name="playground/CartpoleBalance@200",
                           num_actors=4, total_timesteps=8_000, learning_starts=500),
        "playground_precisions": ["fp32", "int8"], "random_episodes": 8,
    },
    "smoke": {  # one of each piece of work (a batch size is a shape, not a code path)
        "networks": [("dqn", "CartPole-v1", (16,))],
        "batches": [1], "inference_repeats": 1, "inference_loop_s": 0.01,
        "broadcast_hidden": [(64, 64)], "broadcast_repeats": 1,
        "actor_counts": [1], "process_actor_counts": [],
        "short_refresh_actor_counts": [],
        "throughput_steps_per_actor": 400,
        "ttr_task": dict(TTR_TASK, num_actors=2, envs_per_actor=1, hidden=(16,),
                         total_timesteps=600, learning_starts=100, batch_size=16,
                         buffer_capacity=1_000, eps_decay_steps=200),
        "ttr_mode": "single", "seeds": 2,
        "playground": None, "playground_precisions": [], "random_episodes": 0,
    },
}


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ------------------------------------------------------------------ Ray-side probes


class InferenceProbe:
    """Ray actor body timing one actor step's policy evaluation (see section 1)."""

    def time_policy(self, algo: str, env_name: str, hidden: tuple[int, ...], batch: int,
                    precision: str, repeats: int, loop_s: float) -> dict[str, Any]:
        import jax

        from jaxrl_pim.actorq.algorithms import make_agent
        from jaxrl_pim.actorq.broadcast import actor_params, fast_int8_params
        from jaxrl_pim.actorq.config import default_config
        from jaxrl_pim.envs import make_with_info
        from jaxrl_pim.timing import time_per_call

        cfg = default_config(algo, env_name, hidden=tuple(hidden))
        _, _, info = make_with_info(env_name)
        agent = make_agent(cfg, info)
        params = agent.policy_params(jax.jit(agent.init)(jax.random.PRNGKey(0)))
        obs = jax.random.normal(jax.random.PRNGKey(1), (batch, info.obs_dim))
        if precision in ("int8_fast", "int8_emulated"):
            products = "int32" if precision == "int8_fast" else "float32"
            held = fast_int8_params(agent.greedy, actor_params(params, "int8", "native"), obs,
                                    products)
        else:
            held = actor_params(params, precision, "native")
        step = jax.jit(jax.vmap(agent.greedy, in_axes=(None, 0)))
        timed = time_per_call(step, held, obs, repeats=repeats, loop_s=loop_s)
        best, calls = timed["seconds_per_call"], timed["calls_per_loop"]
        n_params = int(sum(np.size(x) for x in jax.tree.leaves(params)))
        return {"ms_per_call": 1e3 * best, "us_per_env_step": 1e6 * best / batch,
                "calls_per_loop": calls, "params": n_params}


class BroadcastProbe:
    """Ray actor body receiving broadcasts: pull, deserialize and load times (section 2)."""

    def set_meta(self, meta: Any) -> None:
        self.meta = meta

    def receive(self, refs: list) -> dict[str, float]:
        import jax
        import ray

        from jaxrl_pim.actorq.broadcast import deserialize, load

        t0 = time.perf_counter()
        wire = ray.get(refs[0])
        t1 = time.perf_counter()
        qtree = deserialize(wire, self.meta)
        t2 = time.perf_counter()
        jax.block_until_ready(load(qtree, "native"))
        t3 = time.perf_counter()
        return {"pull_ms": 1e3 * (t1 - t0), "deserialize_ms": 1e3 * (t2 - t1),
                "load_ms": 1e3 * (t3 - t2)}


def _remote(cls: type) -> Any:
    import ray

    from jaxrl_pim.actorq.worker import ACTOR_ENV

    return ray.remote(cls).options(num_cpus=0, runtime_env={"env_vars": dict(ACTOR_ENV)})


# ------------------------------------------------------------------ sections


def inference_section(size: dict[str, Any]) -> list[dict[str, Any]]:
    """Section 1: ms per policy evaluation, per network, batch and precision."""
    import ray

    probe = _remote(InferenceProbe).remote()
    rows = []
    for algo, env_name, hidden in size["networks"]:
        for batch in size["batches"]:
            for p in INFERENCE:
                r = ray.get(probe.time_policy.remote(algo, env_name, tuple(hidden), batch, p,
                                                     size["inference_repeats"],
                                                     size["inference_loop_s"]))
                rows.append({"network": _net_name(algo, hidden), "algo": algo, "env": env_name,
                             "hidden": list(hidden), "batch": batch, "precision": p, **r})
                _log(f"[inference] {rows[-1]['network']} batch {batch} {p}: "
                     f"{r['ms_per_call']:.3f} ms")
    ray.kill(probe)
    return rows


def broadcast_section(size: dict[str, Any]) -> list[dict[str, Any]]:
    """Section 2: bytes and per-phase times of one refresh through Ray's object store."""
    import jax
    import ray

    from jaxrl_pim.actorq.algorithms import make_agent
    from jaxrl_pim.actorq.broadcast import Wire, encode
    from jaxrl_pim.actorq.config import default_config
    from jaxrl_pim.envs import make_with_info

    probe = _remote(BroadcastProbe).remote()
    rows = []
    for hidden in size["broadcast_hidden"]:
        cfg = default_config("dqn", "CartPole-v1", hidden=tuple(hidden))
        _, _, info = make_with_info(cfg.env_name)
        agent = make_agent(cfg, info)
        params = agent.policy_params(jax.jit(agent.init)(jax.random.PRNGKey(0)))
        for p in PRECISIONS:
            wire, meta = encode(params, p)  # compiles the quantizer
            ray.get(probe.set_meta.remote(meta))
            best: dict[str, float] = {}
            for r in range(size["broadcast_repeats"] + 1):  # the first is a warm-up
                t0 = time.perf_counter()
                wire, _ = encode(params, p)
                t1 = time.perf_counter()
                ref = ray.put(Wire(np.frombuffer(wire.payload, np.uint8),
                                   np.frombuffer(wire.scales, np.uint8), wire.checksum))
                t2 = time.perf_counter()
                times = ray.get(probe.receive.remote([ref]))
                times.update(pack_ms=1e3 * (t1 - t0), put_ms=1e3 * (t2 - t1))
                del ref
                if r == 0:
                    continue
                for k, v in times.items():
                    best[k] = min(best.get(k, float("inf")), v)
            best["total_ms"] = sum(best[k] for k in ("pack_ms", "put_ms", "pull_ms",
                                                     "deserialize_ms", "load_ms"))
            rows.append({"network": _net_name("dqn", hidden), "hidden": list(hidden),
                         "params": int(sum(np.size(x) for x in jax.tree.leaves(params))),
                         "precision": p, "bytes": wire.nbytes, **best})
            _log(f"[broadcast] {rows[-1]['network']} {p}: {wire.nbytes:,} B, "
                 f"{best['total_ms']:.2f} ms")
    ray.kill(probe)
    return rows


def _distributed_record(out: dict[str, Any]) -> dict[str, Any]:
    keys = ("transport", "env_steps", "learner_updates", "broadcasts", "broadcast_bytes",
            "transitions_requested", "transitions_received", "transitions_lost",
            "transitions_unused", "actor_failures", "timing_s", "actor_breakdown_ms",
            "final_eval_return")
    rec = {k: out[k] for k in keys}
    rec["actors"] = {str(a): r for a, r in out["actors"].items()}
    return rec


def throughput_section(size: dict[str, Any], seed: int) -> list[dict[str, Any]]:
    """Section 3: environment steps per second per actor count, refresh period and
    transport."""
    from jaxrl_pim.actorq.config import default_config
    from jaxrl_pim.actorq.distributed import DistributedRun, run_distributed

    rows = []
    runs = [("ray", n, 100) for n in size["actor_counts"]]
    runs += [("processes", n, 100) for n in size["process_actor_counts"]]
    runs += [(t, n, 10) for n in size["short_refresh_actor_counts"] for t in ("ray", "processes")]
    for transport, n, period in runs:
        steps = n * size["throughput_steps_per_actor"]
        cfg = default_config(**dict(THROUGHPUT_TASK, actor_update_period=period), num_actors=n,
                             precision="fp32", total_timesteps=steps)
        out = run_distributed(cfg, DistributedRun(seed, transport=transport,
                                                  final_eval=False)).as_dict()
        rec = _distributed_record(out)
        rec.update(actors_count=n, actor_update_period=period, config=_jsonable(cfg),
                   env_steps_per_s=out["env_steps"] / out["timing_s"]["train"])
        rows.append(rec)
        _log(f"[throughput] {transport} x {n}, refresh every {period}: "
             f"{rec['env_steps_per_s']:,.0f} steps/s")
    return rows


def time_to_reward_section(size: dict[str, Any]) -> list[dict[str, Any]]:
    """Section 4: fp32 and int8 runs of the TTR task, seeds interleaved, energy per run."""
    from jaxrl_pim.actorq.config import default_config
    from jaxrl_pim.actorq.energy import EnergyTracker
    from jaxrl_pim.actorq.experiment import run_one

    rows = []
    for seed in range(size["seeds"]):
        for p in ("fp32", "int8"):
            cfg = default_config(**size["ttr_task"], precision=p)
            with EnergyTracker(enabled=True, country_iso_code="USA") as energy:
                out = run_one(cfg, size["ttr_mode"], seed, num_chunks=40)
            out.pop("episode_returns", None)
            rows.append({"precision": p, "seed": seed, "mode": size["ttr_mode"],
                         "config": _jsonable(cfg), "energy": energy.result(), **out})
            _log(f"[time to reward] {p} seed {seed}: {out['timing_s']['train']:.1f} s, "
                 f"final {out['final_train_return']}")
    return rows


def random_return(env_name: str, episodes: int, seed: int) -> dict[str, Any]:
    """Mean undiscounted return of uniform-random actions in [low, high] (same adapter and
    time limit as the runs)."""
    import jax
    import jax.numpy as jnp

    from jaxrl_pim.envs import make_with_info

    env, params, info = make_with_info(env_name)

    def episode(key):
        k0, k1 = jax.random.split(key)
        _, state = env.reset(k0, params)

        def body(carry, k):
            state, total, alive = carry
            ka, ks = jax.random.split(k)
            a = jax.random.uniform(ka, (info.action_dim,), minval=info.action_low,
                                   maxval=info.action_high)
            _, state, r, term, trunc, _ = env.step(ks, state, a, params)
            done = jnp.logical_or(term, trunc).astype(jnp.float32)
            return (state, total + alive * r, alive * (1.0 - done)), None

        init = (state, jnp.float32(0.0), jnp.float32(1.0))
        (_, total, _), _ = jax.lax.scan(body, init, jax.random.split(k1, info.max_steps))
        return total

    keys = jax.random.split(jax.random.PRNGKey(seed + 777), episodes)
    returns = np.asarray(jax.jit(jax.vmap(episode))(keys), np.float64)
    return {"episodes": episodes, "max_steps": info.max_steps, "returns": returns.tolist(),
            "mean": float(returns.mean()), "std": float(returns.std(ddof=1))}


def playground_section(size: dict[str, Any], seed: int) -> dict[str, Any]:
    """Section 5: D4PG on Playground CartpoleBalance per precision, plus random play."""
    from jaxrl_pim.actorq.config import default_config
    from jaxrl_pim.actorq.experiment import compare_precisions

    cfg = default_config(**size["playground"])
    rand = random_return(cfg.env_name, size["random_episodes"], seed)
    _log(f"[playground] random policy: {rand['mean']:.1f}")
    res = compare_precisions(cfg, size["playground_precisions"], seed)
    for r in res["runs"].values():
        r.pop("episode_returns", None)
    _log("[playground] final eval " + ", ".join(
        f"{p} {r['final_eval_return']:.1f}" for p, r in res["runs"].items()))
    return {"config": _jsonable(cfg), "seed": seed, "random_policy": rand, **res}


def _net_name(algo: str, hidden: Any) -> str:
    return f"{algo}-{'x'.join(str(h) for h in hidden)}"


def _jsonable(x: Any) -> Any:
    from jaxrl_pim.report import to_jsonable

    return to_jsonable(x)


# ------------------------------------------------------------------ main


def main(argv: list[str] | None = None) -> int:
    """Run the sections, write the results file, its table and plot."""
    p = harness.parser(__doc__)
    harness.add_parts(p, SECTIONS, "all but playground", flag="--sections")
    p.add_argument("--seeds", type=int, default=None,
                   help="time-to-reward seeds per precision (default: 3)")
    p.add_argument("--seed", type=int, default=0, help="seed of the other sections")
    args, run, mode = harness.start(p, argv, __file__)
    from jaxrl_pim.checks import check_int
    size = dict(SIZES[mode])
    if args.seeds is not None:
        size["seeds"] = check_int("--seeds", args.seeds, 2, 100)
    sections = list(args.sections or [s for s in SECTIONS
                                      if s != "playground" or size["playground"]])
    path = harness.output_path(args, "actorq_speedup")

    import os

    import ray

    # no prestarted idle workers: the first driver would wait for num_cpus of them to start
    # (ray-project/ray#40131), and the actors, whose runtime_env sets environment variables,
    # do not use them
    ray.init(num_cpus=max(os.cpu_count() or 1, max(size["actor_counts"]), 2),
             include_dashboard=False, log_to_driver=False,
             _system_config={"prestart_worker_first_driver": False})
    results: dict[str, Any] = {}
    timing: dict[str, float] = {}
    try:
        for name in sections:
            t0 = time.perf_counter()
            if name == "inference":
                results[name] = inference_section(size)
            elif name == "broadcast":
                results[name] = broadcast_section(size)
            elif name == "throughput":
                results[name] = throughput_section(size, args.seed)
            elif name == "time_to_reward":
                results[name] = time_to_reward_section(size)
            elif name == "playground":
                results[name] = playground_section(size, args.seed)
            timing[name] = time.perf_counter() - t0
    finally:
        ray.shutdown()
    config = {"mode": mode, "sections": sections, "seed": args.seed, "sizes": size,
              "ttr_task": size["ttr_task"], "throughput_task": THROUGHPUT_TASK}
    stored = harness.write(path, run=run, config=config, results=results, timing_s=timing,
                           summarize=summarize, markdown=render_markdown)
    if results.get("time_to_reward"):
        plot(stored, path.with_suffix(".png"))
    print(render_markdown(stored))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
