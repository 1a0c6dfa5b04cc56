"""Multi-process ActorQ: actors in separate OS processes, the learner in this process.

Actors are ``multiprocessing`` processes started with ``spawn`` on CPU
(``JAX_PLATFORMS=cpu``, one XLA thread each); the learner runs here on the default device
(a GPU when there is one). Weights travel through ``transport.ParamServer`` (shared-memory
block, packed int8 / fp16 / fp32 broadcasts), experience through a bounded queue.

Each actor loops: run ``actor_update_period`` steps of its ``envs_per_actor`` environments
with its current (quantized) policy in one jitted scan ("inference", the paper's "step"),
send the n-step transitions, then pull the newest broadcast ("pull": copy the bytes out),
check and rebuild it ("deserialize": CRC32 + int8 codes / scales views) and dequantize it
into device arrays ("load"). The learner ingests experience, performs the learner updates
owed at the same update-to-data ratio as single-program mode (one update per
``train_every * num_actors * envs_per_actor`` environment steps), and publishes after every
round of updates. The clock starts when every actor has compiled and reported ready.
"""

from __future__ import annotations

import os
import queue as queue_lib
import time
import traceback
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl_pim.actorq.actor import env_step, evaluate, init_carry
from jaxrl_pim.actorq.algorithms import make_agent
from jaxrl_pim.actorq.broadcast import (
    actor_params,
    decode,
    deserialize,
    encode,
    load,
)
from jaxrl_pim.actorq.config import ActorQConfig
from jaxrl_pim.actorq.single import Curve, exploration, make_learner
from jaxrl_pim.actorq.transport import ParamClient, ParamServer
from jaxrl_pim.envs.factory import make_with_info
from jaxrl_pim.replay import NStepTransition
from jaxrl_pim.xla_env import CPU_WORKAROUND_FLAGS, with_flags

ACTOR_PHASES = ("inference", "send", "pull", "deserialize", "load")
_CHILD_ENV = {
    "JAX_PLATFORMS": "cpu",
    "XLA_FLAGS": with_flags("--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1",
                            *CPU_WORKAROUND_FLAGS),
}


def _actor_main(config: ActorQConfig, actor_id: int, seed: int, shm_name: str, lock: Any,
                out_q: Any, go: Any, stop: Any, meta: Any) -> None:
    """Body of one actor process (see the module docstring)."""
    try:
        env, env_params, info = make_with_info(config.env_name)
        agent = make_agent(config, info)
        n_env, period = config.envs_per_actor, config.actor_update_period
        key = jax.random.fold_in(jax.random.PRNGKey(seed), 1000 + actor_id)
        key, k_init = jax.random.split(key)
        carry = jax.vmap(lambda k: init_carry(env, env_params, agent, config.n_step, k))(
            jax.random.split(k_init, n_env)
        )
        step_one = lambda p, c, k, e: env_step(
            env, env_params, agent, config.gamma, config.reward_scale, p, c, k, e
        )
        step_all = jax.vmap(step_one, in_axes=(None, 0, 0, None))

        def rollout(params, carry, key, explore):
            body = lambda c, k: step_all(params, c, jax.random.split(k, n_env), explore)
            return jax.lax.scan(body, carry, jax.random.split(key, period))

        client = ParamClient(shm_name, lock)
        wire = client.pull()
        if wire is None:
            raise RuntimeError("no broadcast published before the actor started")
        params = jax.block_until_ready(decode(wire, meta))
        explore0 = exploration(config, jnp.zeros((), jnp.float32))
        rollout_c = jax.jit(rollout).lower(params, carry, key, explore0).compile()
        out_q.put(("ready", actor_id, None))
        go.wait()

        timing = dict.fromkeys(ACTOR_PHASES, 0.0)
        refreshes = rollouts = 0
        own_steps = 0
        while not stop.is_set():
            key, k_roll = jax.random.split(key)
            explore = exploration(config, jnp.asarray(own_steps * config.num_actors, jnp.float32))
            t0 = time.perf_counter()
            carry, out = rollout_c(params, carry, k_roll, explore)
            out = jax.device_get(out)
            t1 = time.perf_counter()
            timing["inference"] += t1 - t0
            rollouts += 1
            own_steps += period * n_env
            tr = out.transition
            flat = lambda x: np.asarray(x).reshape((period * n_env,) + np.shape(x)[2:])
            msg = {
                "transition": tuple(flat(x) for x in tr),
                "valid": flat(out.valid),
                "returns": np.asarray(out.episode_return)[np.asarray(out.episode_done)],
                "steps": period * n_env,
                "version": client.version,
            }
            out_q.put(("exp", actor_id, msg))
            t2 = time.perf_counter()
            timing["send"] += t2 - t1
            wire = client.pull()
            t3 = time.perf_counter()
            timing["pull"] += t3 - t2
            if wire is not None:
                qtree = deserialize(wire, meta)
                t4 = time.perf_counter()
                params = jax.block_until_ready(load(qtree))
                t5 = time.perf_counter()
                timing["deserialize"] += t4 - t3
                timing["load"] += t5 - t4
                refreshes += 1
        client.close()
        out_q.put(("done", actor_id, {"timing_s": timing, "refreshes": refreshes,
                                      "rollouts": rollouts, "steps": own_steps}))
    except Exception:  # report to the learner instead of dying silently
        out_q.put(("error", actor_id, traceback.format_exc()))


def run_multiprocess(
    config: ActorQConfig,
    seed: int = 0,
    callback: Callable[..., None] | None = None,
    final_eval: bool = True,
    start_timeout_s: float = 300.0,
    message_timeout_s: float = 120.0,
) -> dict[str, Any]:
    """Train with ``config.num_actors`` actor processes; returns results and timings.

    Returns a dict with ``curve`` (:class:`single.Curve`: arrival time of each experience
    message, environment steps, mean of the last ``return_window`` episodes),
    ``episode_returns``, ``final_eval_return`` (greedy quantized policy; None without
    ``final_eval``), ``learner_updates``,
    ``broadcasts``, ``broadcast_bytes``, ``experience_bytes``, ``replay_size``, per-actor
    ``actors`` reports (timing per phase, refreshes), ``actor_breakdown_ms`` (mean ms per
    rollout / refresh over actors), ``timing_s`` (learner phases) and ``final_state``.

    Raises RuntimeError when an actor fails or does not start in ``start_timeout_s``.
    """
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    env, env_params, info = make_with_info(config.env_name)
    agent, replay, learn = make_learner(config, info)
    key = jax.random.PRNGKey(seed)
    k_learn, k_run, k_eval = jax.random.split(key, 3)
    timing: dict[str, float] = {"startup": 0.0, "wait": 0.0, "ingest": 0.0, "learn": 0.0,
                                "publish": 0.0, "eval": 0.0}
    t_boot = time.perf_counter()

    learner = jax.jit(agent.init)(k_learn)
    rstate = replay.init()
    example = jax.tree.map(lambda x: x[0], rstate.buffer.data)


    wire, meta = encode(agent.policy_params(learner), config.precision)
    server = ParamServer(ctx, wire.nbytes + 64)
    procs: list[Any] = []
    out_q = ctx.Queue(maxsize=max(4, 2 * config.num_actors))
    go, stop = ctx.Event(), ctx.Event()
    try:
        server.publish(wire)
        saved = {k: os.environ.get(k) for k in _CHILD_ENV}
        os.environ.update(_CHILD_ENV)
        try:
            for a in range(config.num_actors):
                p = ctx.Process(
                    target=_actor_main,
                    args=(config, a, seed, server.name, server.lock, out_q, go, stop, meta),
                    daemon=True,
                )
                p.start()
                procs.append(p)
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

        # Compile while the actors start, before the clock starts (as in single mode).
        n_msg = config.actor_update_period * config.envs_per_actor
        msg_batch = jax.tree.map(lambda x: jnp.zeros((n_msg,) + x.shape, x.dtype), example)
        add_c = jax.jit(replay.add, donate_argnums=0).lower(
            rstate, msg_batch, jnp.zeros((n_msg,), bool)).compile()
        learn_c = jax.jit(learn, donate_argnums=(0, 1)).lower(learner, rstate, k_run).compile()
        # warm-up calls on throwaway copies keep first-execution costs off the clock
        copy = lambda t: jax.tree.map(jnp.copy, t)
        jax.block_until_ready(add_c(copy(rstate), msg_batch, jnp.ones((n_msg,), bool)))
        jax.block_until_ready(learn_c(copy(learner), copy(rstate), k_run))

        ready = 0
        deadline = time.perf_counter() + start_timeout_s
        while ready < config.num_actors:
            kind, aid, payload = _get(out_q, procs, deadline)
            if kind == "error":
                raise RuntimeError(f"actor {aid} failed:\n{payload}")
            ready += kind == "ready"
        timing["startup"] = time.perf_counter() - t_boot

        steps_per_update = config.steps_per_iteration * config.train_every
        first_update = (max(config.learning_starts, config.batch_size)
                        + (config.n_step - 1) * config.steps_per_iteration)
        env_steps = updates = 0
        broadcasts = 1
        exp_bytes = 0
        returns: list[float] = []
        times, steps, avgs = [], [], []
        go.set()
        t_start = time.perf_counter()
        while env_steps < config.total_steps:
            t0 = time.perf_counter()
            kind, aid, msg = _get(out_q, procs, t0 + message_timeout_s)
            t1 = time.perf_counter()
            timing["wait"] += t1 - t0
            if kind == "error":
                raise RuntimeError(f"actor {aid} failed:\n{msg}")
            if kind != "exp":
                continue
            batch = NStepTransition(*(jnp.asarray(x) for x in msg["transition"]))
            rstate = add_c(rstate, batch, jnp.asarray(msg["valid"]))
            exp_bytes += sum(x.nbytes for x in msg["transition"]) + msg["valid"].nbytes
            env_steps += msg["steps"]
            returns.extend(np.asarray(msg["returns"], np.float64).tolist())
            t2 = time.perf_counter()
            timing["ingest"] += t2 - t1
            times.append(t2 - t_start)
            steps.append(env_steps)
            avgs.append(float(np.mean(returns[-config.return_window:])) if returns
                        else float("nan"))
            owed = (env_steps - first_update) // steps_per_update + 1 if env_steps >= \
                first_update else 0
            if owed > updates:
                loss = None
                while updates < owed:
                    learner, rstate, loss = learn_c(learner, rstate, jax.random.fold_in(k_run,
                                                                                        updates))
                    updates += 1
                jax.block_until_ready(loss)
                t3 = time.perf_counter()
                timing["learn"] += t3 - t2
                wire, _ = encode(agent.policy_params(learner), config.precision)
                server.publish(wire)
                broadcasts += 1
                timing["publish"] += time.perf_counter() - t3
            if callback is not None:
                callback(min(env_steps, config.total_steps), config.total_steps,
                         {"return": avgs[-1]})
        train_s = time.perf_counter() - t_start
        stop.set()
        actors = _drain(out_q, procs)
    finally:
        stop.set()
        go.set()
        for p in procs:
            p.join(timeout=10)
            if p.is_alive():
                p.terminate()
                p.join(timeout=5)
        server.close()

    t4 = time.perf_counter()
    final_return = None
    if final_eval:
        final_params = actor_params(agent.policy_params(learner), config.precision)
        final_return = float(jax.jit(lambda p, k: evaluate(
            env, env_params, agent, info, p, k, config.eval_episodes))(final_params, k_eval))
    timing["eval"] = time.perf_counter() - t4
    timing["train"] = train_s
    return {
        "curve": Curve(np.asarray(times), np.asarray(steps), np.asarray(avgs)),
        "episode_returns": np.asarray(returns),
        "final_eval_return": final_return,
        "env_steps": env_steps,
        "learner_updates": updates,
        "broadcasts": broadcasts,
        "broadcast_bytes": wire.nbytes,
        "experience_bytes": exp_bytes,
        "replay_size": int(rstate.size),
        "actors": actors,
        "actor_breakdown_ms": actor_breakdown(actors),
        "timing_s": timing,
        "final_state": learner,
    }


def actor_breakdown(actors: dict[int, dict[str, Any]]) -> dict[str, float | None]:
    """Mean milliseconds per rollout (inference, send) and per refresh (pull, deserialize,
    load) over the actors' reports; pull is charged per attempt (once per rollout)."""
    if not actors:
        return dict.fromkeys(ACTOR_PHASES)
    out: dict[str, float | None] = {}
    for ph in ACTOR_PHASES:
        per = []
        for rep in actors.values():
            denom = rep["refreshes"] if ph in ("deserialize", "load") else rep["rollouts"]
            if denom:
                per.append(1e3 * rep["timing_s"][ph] / denom)
        out[ph] = float(np.mean(per)) if per else None
    tot = {ph: sum(r["timing_s"][ph] for r in actors.values()) for ph in ACTOR_PHASES}
    total = sum(tot.values())
    for ph in ACTOR_PHASES:
        out[f"{ph}_fraction"] = tot[ph] / total if total > 0 else None
    return out


def _get(q: Any, procs: list[Any], deadline: float) -> tuple[str, int, Any]:
    """Next message, raising RuntimeError if every actor died or the deadline passed."""
    while True:
        try:
            return q.get(timeout=0.5)
        except queue_lib.Empty:
            if procs and not any(p.is_alive() for p in procs):
                raise RuntimeError("all actor processes exited unexpectedly") from None
            if time.perf_counter() > deadline:
                raise RuntimeError("timed out waiting for the actors") from None


def _drain(q: Any, procs: list[Any], timeout_s: float = 60.0) -> dict[int, dict[str, Any]]:
    """After ``stop``: read until every actor said done; returns their reports."""
    reports: dict[int, dict[str, Any]] = {}
    deadline = time.perf_counter() + timeout_s
    while len(reports) < len(procs) and time.perf_counter() < deadline:
        try:
            kind, aid, msg = q.get(timeout=0.5)
        except queue_lib.Empty:
            if not any(p.is_alive() for p in procs):
                break
            continue
        if kind == "done":
            reports[aid] = msg
        elif kind == "error":
            raise RuntimeError(f"actor {aid} failed:\n{msg}")
    return reports
