"""Distributed ActorQ: actors in other processes (Ray actors, or local OS processes), the
learner here.

``run_distributed(config, DistributedRun(seed, transport="ray"))`` runs the learner in this
process on the default device (a GPU when there is one) and ``config.num_actors`` actors
through an actor pool:

* ``"ray"`` (:class:`~jaxrl_pim.actorq.ray_pool.RayPool`): Ray actors, on this machine
  (``ray.init()``) or on a cluster (``ray_address``); broadcasts through the object store;
  failed actors are restarted and the batches they had in flight counted as lost.
* ``"processes"`` (:class:`~jaxrl_pim.actorq.transport.ProcessPool`): ``multiprocessing``
  processes on this machine, broadcasts through a shared-memory block and batches through a
  queue; no restarts.

Each actor (:class:`~jaxrl_pim.actorq.worker.ActorWorker`) runs ``actor_update_period`` steps
of its ``envs_per_actor`` environments with its current (quantized) policy ("inference"),
hands the batch of n-step transitions over ("send"), then takes the newest broadcast ("pull",
"deserialize", "load"). The learner ingests batches in arrival order, performs the updates
owed at the same update-to-data ratio as single-program mode (one update per
``train_every * num_actors * envs_per_actor`` environment steps once ``learning_starts`` are
collected) and publishes a broadcast after every round of updates. The clock starts when
every actor has compiled and reported ready.

Counting: the report gives ``transitions_requested`` (asked of the actors),
``transitions_received`` (added to replay), ``transitions_lost`` (batches in flight on an
actor that failed: at most ``in_flight`` batches per failure) and ``transitions_unused``
(still in flight when the run ended); requested = received + lost + unused.

Checkpoints (``checkpoints=``, a :class:`jaxrl_pim.checkpoint.Checkpoints` folder): the
learner's state, its replay and its counters are saved every ``checkpoint_every``
environment steps and at the end; with ``resume`` (both in :class:`DistributedRun`) the run
continues from the newest one with fresh actors (their environments restart; the learner's
updates continue where they stopped). Unlike single-program mode the continuation is not
bit-identical to an uninterrupted run: arrival order depends on timing.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl_pim.actorq.actor import evaluate
from jaxrl_pim.actorq.broadcast import actor_params, encode, resolve_compute
from jaxrl_pim.actorq.config import ActorQConfig
from jaxrl_pim.actorq.single import Curve, make_learner
from jaxrl_pim.actorq.worker import ACTOR_PHASES, Lost
from jaxrl_pim.checks import check_choice, check_float, check_int
from jaxrl_pim.envs.factory import make_with_info
from jaxrl_pim.replay import NStepTransition
from jaxrl_pim.runner import default_every, restore_latest

TRANSPORTS = ("ray", "processes")

__all__ = ["ACTOR_PHASES", "TRANSPORTS", "DistributedResult", "DistributedRun",
           "actor_breakdown", "make_pool", "run_distributed"]


def make_pool(transport: str, ray_address: str | None = None, **kwargs: Any) -> Any:
    """The actor pool of ``transport`` (``"ray"`` or ``"processes"``)."""
    if transport == "ray":
        from jaxrl_pim.actorq.ray_pool import RayPool

        return RayPool(address=ray_address, **kwargs)
    if transport == "processes":
        if ray_address is not None:
            raise ValueError("ray_address needs transport='ray'")
        from jaxrl_pim.actorq.transport import ProcessPool

        return ProcessPool(**kwargs)
    raise ValueError(f"transport must be one of {', '.join(TRANSPORTS)}; got {transport!r}")


@dataclass(frozen=True)
class DistributedRun:
    """How a distributed run is deployed and driven (what it trains is the config).

    Attributes:
      seed: PRNG seed of the learner and the actors' environments.
      transport: ``"ray"`` or ``"processes"`` (see the module docstring); ignored when
        :func:`run_distributed` is given a ``pool``.
      ray_address: Ray cluster to join (None: a local instance); ``transport="ray"`` only.
      final_eval: evaluate the final quantized policy greedily.
      start_timeout_s: how long to wait for the actors to start, in seconds (RuntimeError
        after that).
      message_timeout_s: how long to wait for each batch, in seconds (RuntimeError after
        that).
      checkpoint_every: environment steps between checkpoints (None: about 10 % of the run,
        :func:`jaxrl_pim.runner.default_every`); used with ``checkpoints``.
      resume: continue from the newest checkpoint in ``checkpoints``.
    """

    seed: int = 0
    transport: str = "ray"
    ray_address: str | None = None
    final_eval: bool = True
    start_timeout_s: float = 300.0
    message_timeout_s: float = 180.0
    checkpoint_every: int | None = None
    resume: bool = False

    def __post_init__(self) -> None:
        check_int("seed", self.seed)
        check_choice("transport", self.transport, TRANSPORTS)
        if self.ray_address is not None and self.transport != "ray":
            raise ValueError("ray_address needs transport='ray'")
        check_float("start_timeout_s", self.start_timeout_s, 0.0, None, lo_open=True)
        check_float("message_timeout_s", self.message_timeout_s, 0.0, None, lo_open=True)
        if self.checkpoint_every is not None:
            check_int("checkpoint_every", self.checkpoint_every, 1)


class DistributedResult(NamedTuple):
    """What :func:`run_distributed` returns (``_asdict()`` gives the JSON-ready report
    fields, less ``final_state`` and with ``curve`` to convert).

    Attributes:
      transport: the pool's name (``"ray"`` or ``"processes"``).
      curve: one point per ingested batch: its arrival time (seconds of training, compile
        excluded, continued across a resume), the environment steps so far and the mean of
        the last ``return_window`` completed episodes (nan: none yet).
      episode_returns: float64 ``[E]``, every completed episode's return in arrival order.
      final_eval_return: mean return of the greedy quantized policy over ``eval_episodes``
        episodes (None without ``final_eval``).
      env_steps: environment steps ingested (counted across a resume).
      learner_updates: learner updates done.
      broadcasts: policies published to the actors (the initial one included).
      broadcast_bytes: bytes of one broadcast (the encoded policy).
      experience_bytes: bytes of transitions received from the actors.
      replay_size: transitions held in replay at the end.
      transitions_requested: environment steps asked of the actors (this call).
      transitions_received: environment steps received and added to replay (this call).
      transitions_lost: environment steps in batches in flight on a failed actor (this call).
      transitions_unused: environment steps still in flight at the end (this call).
      batches_lost: batches lost with failed actors (this call).
      actor_failures: actor failures seen (this call).
      actors_dropped: actors given up on (restarts used up or not answering).
      transitions_lost_total: ``transitions_lost`` including the runs before a resume.
      actors: per-actor reports ``{actor_id: {"timing_s": {phase: s}, "refreshes",
        "rollouts", ...}}``.
      actor_breakdown_ms: :func:`actor_breakdown` of ``actors`` (milliseconds, fractions).
      timing_s: learner phases in seconds: startup, wait, ingest, learn, publish,
        checkpoint, eval, train.
      resumed_from: environment steps restored from a checkpoint (None: a fresh run).
      final_state: the learner's final state (DQNState / D4PGState).
    """

    transport: str
    curve: Curve
    episode_returns: np.ndarray
    final_eval_return: float | None
    env_steps: int
    learner_updates: int
    broadcasts: int
    broadcast_bytes: int
    experience_bytes: int
    replay_size: int
    transitions_requested: int
    transitions_received: int
    transitions_lost: int
    transitions_unused: int
    batches_lost: int
    actor_failures: int
    actors_dropped: int
    transitions_lost_total: int
    actors: dict[int, dict[str, Any]]
    actor_breakdown_ms: dict[str, float | None]
    timing_s: dict[str, float]
    resumed_from: int | None
    final_state: Any


def run_distributed(
    config: ActorQConfig,
    spec: DistributedRun | None = None,
    *,
    pool: Any = None,
    checkpoints: Any = None,
    callback: Callable[..., None] | None = None,
    on_batch: Callable[[Any, dict[str, Any]], None] | None = None,
) -> DistributedResult:
    """Train with ``config.num_actors`` distributed actors; returns results and timings.

    Args:
      config: the run (``num_actors`` actors of ``envs_per_actor`` environments each).
      spec: how it is deployed and driven (:class:`DistributedRun`; default: a local Ray,
        seed 0).
      pool: an actor pool object to use instead of ``spec.transport``'s (e.g. a ``RayPool``
        with other settings).
      checkpoints: a :class:`jaxrl_pim.checkpoint.Checkpoints` folder (see the module
        docstring).
      callback: ``callback(env_steps, total_steps, {"return": ...})`` after every batch.
      on_batch: ``on_batch(pool, summary)`` after every ingested batch (tests use it to
        stop an actor mid-run).
    """
    spec = DistributedRun() if spec is None else spec
    seed, resume = spec.seed, spec.resume
    env, env_params, info = make_with_info(config.env_name)
    agent, replay, learn = make_learner(config, info)
    key = jax.random.PRNGKey(seed)
    k_learn, k_run, k_eval = jax.random.split(key, 3)
    timing: dict[str, float] = {"startup": 0.0, "wait": 0.0, "ingest": 0.0, "learn": 0.0,
                                "publish": 0.0, "checkpoint": 0.0, "eval": 0.0}
    t_boot = time.perf_counter()
    learner = jax.jit(agent.init)(k_learn)
    rstate = replay.init()

    every = None
    if checkpoints is not None:
        every = (default_every(config.total_steps, config.steps_per_iteration)
                 if spec.checkpoint_every is None else spec.checkpoint_every)
    env_steps = updates = 0
    broadcasts = 1
    exp_bytes = 0
    returns: list[float] = []
    times: list[float] = []
    steps: list[int] = []
    avgs: list[float] = []
    train_offset = 0.0
    lost_before = 0
    resumed_from = None
    restored = restore_latest(checkpoints, lambda _: {"learner": learner, "replay": rstate},
                              resume=resume, unit="environment step")
    if restored is not None:
        meta = restored.meta
        learner, rstate = restored.tree["learner"], restored.tree["replay"]
        env_steps, updates = int(meta["env_steps"]), int(meta["updates"])
        broadcasts, exp_bytes = int(meta["broadcasts"]), int(meta["experience_bytes"])
        returns, times, steps = list(meta["returns"]), list(meta["times"]), list(meta["steps"])
        avgs = [float("nan") if v is None else v for v in meta["avgs"]]
        train_offset = float(meta["train_s"])
        lost_before = int(meta.get("transitions_lost", 0))
        resumed_from = env_steps

    if pool is None:
        pool = make_pool(spec.transport, spec.ray_address)
    example = jax.tree.map(lambda x: x[0], rstate.buffer.data)
    wire, meta_b = encode(agent.policy_params(learner), config.precision)
    try:
        pool.start(config, seed, wire, meta_b, spec.start_timeout_s)
        # Compile (the actors compile at the same time), before the clock starts.
        n_msg = config.actor_update_period * config.envs_per_actor
        msg_batch = jax.tree.map(lambda x: jnp.zeros((n_msg,) + x.shape, x.dtype), example)
        add_c = jax.jit(replay.add, donate_argnums=0).lower(
            rstate, msg_batch, jnp.zeros((n_msg,), bool)).compile()
        learn_c = jax.jit(learn, donate_argnums=(0, 1)).lower(learner, rstate, k_run).compile()
        # warm-up calls on throwaway copies keep first-execution costs off the clock
        copy = lambda t: jax.tree.map(jnp.copy, t)
        jax.block_until_ready(add_c(copy(rstate), msg_batch, jnp.ones((n_msg,), bool)))
        jax.block_until_ready(learn_c(copy(learner), copy(rstate), k_run))
        timing["startup"] = time.perf_counter() - t_boot

        steps_per_update = config.steps_per_iteration * config.train_every
        first_update = (max(config.learning_starts, config.batch_size)
                        + (config.n_step - 1) * config.steps_per_iteration)
        last_saved = env_steps
        train_s = train_offset
        pool.go()
        t_start = time.perf_counter()
        while env_steps < config.total_steps:
            t0 = time.perf_counter()
            msg = pool.next(spec.message_timeout_s)
            t1 = time.perf_counter()
            timing["wait"] += t1 - t0
            if isinstance(msg, Lost):
                continue
            batch = NStepTransition(*(jnp.asarray(x) for x in msg["transition"]))
            rstate = add_c(rstate, batch, jnp.asarray(msg["valid"]))
            exp_bytes += sum(x.nbytes for x in msg["transition"]) + msg["valid"].nbytes
            env_steps += msg["steps"]
            returns.extend(np.asarray(msg["returns"], np.float64).tolist())
            t2 = time.perf_counter()
            timing["ingest"] += t2 - t1
            train_s = train_offset + t2 - t_start
            times.append(train_s)
            steps.append(env_steps)
            avgs.append(float(np.mean(returns[-config.return_window:])) if returns
                        else float("nan"))
            owed = ((env_steps - first_update) // steps_per_update + 1
                    if env_steps >= first_update else 0)
            if owed > updates:
                loss = None
                while updates < owed:
                    learner, rstate, loss = learn_c(learner, rstate,
                                                    jax.random.fold_in(k_run, updates))
                    updates += 1
                jax.block_until_ready(loss)
                t3 = time.perf_counter()
                timing["learn"] += t3 - t2
                wire, _ = encode(agent.policy_params(learner), config.precision)
                pool.publish(wire)
                broadcasts += 1
                timing["publish"] += time.perf_counter() - t3
            done = env_steps >= config.total_steps
            if every is not None and (env_steps - last_saved >= every or done):
                t4 = time.perf_counter()
                checkpoints.save(env_steps, {"learner": learner, "replay": rstate}, meta={
                    "env_steps": env_steps, "updates": updates, "broadcasts": broadcasts,
                    "experience_bytes": exp_bytes, "returns": returns, "times": times,
                    "steps": steps, "avgs": [None if not np.isfinite(v) else v for v in avgs],
                    "train_s": train_s,
                    "transitions_lost": lost_before + pool.counters["transitions_lost"]})
                last_saved = env_steps
                timing["checkpoint"] += time.perf_counter() - t4
            if on_batch is not None:
                on_batch(pool, {"env_steps": env_steps, "updates": updates})
            if callback is not None:
                callback(min(env_steps, config.total_steps), config.total_steps,
                         {"return": avgs[-1]})
        timing["train"] = train_s
    finally:
        actors = pool.stop()

    t5 = time.perf_counter()
    final_return = None
    if spec.final_eval:
        final_params = actor_params(agent.policy_params(learner), config.precision,
                                    resolve_compute(config.actor_compute, config.precision,
                                                    config.eval_episodes))
        final_return = float(jax.jit(lambda p, k: evaluate(
            env, env_params, agent, info, p, k, config.eval_episodes))(final_params, k_eval))
    timing["eval"] = time.perf_counter() - t5
    counters = dict(pool.counters)
    counters["transitions_lost_total"] = lost_before + counters["transitions_lost"]
    return DistributedResult(
        transport=pool.name,
        curve=Curve(np.asarray(times), np.asarray(steps), np.asarray(avgs)),
        episode_returns=np.asarray(returns),
        final_eval_return=final_return,
        env_steps=env_steps,
        learner_updates=updates,
        broadcasts=broadcasts,
        broadcast_bytes=wire.nbytes,
        experience_bytes=exp_bytes,
        replay_size=int(rstate.size),
        **counters,
        actors=actors,
        actor_breakdown_ms=actor_breakdown(actors),
        timing_s=timing,
        resumed_from=resumed_from,
        final_state=learner,
    )


def actor_breakdown(actors: dict[int, dict[str, Any]]) -> dict[str, float | None]:
    """Mean milliseconds per rollout (inference, send) and per refresh (pull, deserialize,
    load) over the actors' reports, and each phase's share of the actors' busy time."""
    if not actors:
        return dict.fromkeys(ACTOR_PHASES)
    out: dict[str, float | None] = {}
    for ph in ACTOR_PHASES:
        per = []
        for rep in actors.values():
            denom = rep["refreshes"] if ph in ("pull", "deserialize", "load") else \
                rep["rollouts"]
            if denom:
                per.append(1e3 * rep["timing_s"][ph] / denom)
        out[ph] = float(np.mean(per)) if per else None
    tot = {ph: sum(r["timing_s"][ph] for r in actors.values()) for ph in ACTOR_PHASES}
    total = sum(tot.values())
    for ph in ACTOR_PHASES:
        out[f"{ph}_fraction"] = tot[ph] / total if total > 0 else None
    return out
