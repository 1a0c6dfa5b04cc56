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
``train_frequency * num_actors * envs_per_actor`` environment steps once ``learning_starts``
are collected) and publishes a broadcast after every round of updates. The clock starts when
every actor has compiled and reported ready.

Counting: the report gives ``transitions_requested`` (asked of the actors),
``transitions_received`` (added to replay), ``transitions_lost`` (batches in flight on an
actor that failed: at most ``in_flight`` batches per failure) and ``transitions_unused``
(still in flight when the run ended); requested = received + lost + unused.

The learner is a :class:`DistributedLearner` driven by :func:`jaxrl_pim.runner.run` like
every other trainer: its units are environment steps, a segment drives the actor pool until
the segment's environment steps have arrived (every batch holds ``actor_update_period *
envs_per_actor`` of them, so the run ends after the first whole batch at or past
``total_timesteps``), and the pool, started for the first segment, stays alive across
segments.

Checkpoints (``checkpoints=``, a :class:`jaxrl_pim.checkpoint.Checkpoints` folder): the
learner's state, its replay and its counters are saved every ``checkpoint_every``
environment steps (rounded up to whole batches) and at the end; with ``resume`` (both in
:class:`DistributedRun`) the run continues from the newest one with fresh actors (their
environments restart; the learner's updates continue where they stopped). Unlike
single-program mode the continuation is not bit-identical to an uninterrupted run: arrival
order depends on timing.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl_pim import runner
from jaxrl_pim.actorq.actor import evaluate
from jaxrl_pim.actorq.broadcast import actor_params, actors_compute, encode
from jaxrl_pim.actorq.config import ActorQConfig
from jaxrl_pim.actorq.single import (
    Curve,
    checkpoint_fingerprint,
    curve_meta,
    curve_points,
    join_curves,
    make_learner,
)
from jaxrl_pim.actorq.worker import ACTOR_PHASES, Lost
from jaxrl_pim.checkpoint import Restored
from jaxrl_pim.checks import check_choice, check_float, check_int
from jaxrl_pim.envs.factory import make_with_info
from jaxrl_pim.replay import NStepTransition

TRANSPORTS = ("ray", "processes")

__all__ = ["ACTOR_PHASES", "REPORT_FIELDS", "TRANSPORTS", "DistributedLearner",
           "DistributedRun", "LearnerState", "actor_breakdown", "make_pool", "run_distributed"]


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
      checkpoint_every: environment steps between checkpoints, rounded up to whole batches
        (None: about 10 % of the run, :func:`jaxrl_pim.runner.default_every`); used with
        ``checkpoints``.
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


#: The report fields of a distributed run's :class:`jaxrl_pim.runner.Outcome` (also readable
#: as its attributes), besides its ``curve`` (one :class:`~jaxrl_pim.actorq.single.Curve`
#: point per ingested batch: its arrival time in seconds of training, compile excluded,
#: continued across a resume; the environment steps so far; the mean of the last
#: ``return_window`` completed episodes, nan: none yet) and ``timing_s`` (learner phases in
#: seconds: startup, wait, ingest, learn, publish, checkpoint, eval, train):
#:
#: ``transport`` (the pool's name), ``episode_returns`` (float64 ``[E]``, every completed
#: episode's return in arrival order), ``final_eval_return`` (mean return of the greedy
#: quantized policy over ``eval_episodes`` episodes; None without ``final_eval``),
#: ``env_steps`` (ingested, counted across a resume), ``learner_updates``, ``broadcasts``
#: (policies published, the initial one included), ``broadcast_bytes`` (one encoded policy),
#: ``experience_bytes`` (transitions received), ``replay_size`` (at the end), this call's
#: ``transitions_requested`` / ``transitions_received`` / ``transitions_lost`` (in flight on
#: a failed actor) / ``transitions_unused`` (in flight at the end), ``batches_lost``,
#: ``actor_failures``, ``actors_dropped`` (restarts used up or not answering),
#: ``transitions_lost_total`` (including the runs before a resume), ``actors`` (per-actor
#: reports ``{actor_id: {"timing_s": {phase: s}, "refreshes", "rollouts", ...}}``),
#: ``actor_breakdown_ms`` (:func:`actor_breakdown`) and ``resumed_from`` (environment steps
#: restored, None: a fresh run). The learner's final state is ``outcome.state.learner``.
REPORT_FIELDS = (
    "transport", "episode_returns", "final_eval_return", "env_steps", "learner_updates",
    "broadcasts", "broadcast_bytes", "experience_bytes", "replay_size",
    "transitions_requested", "transitions_received", "transitions_lost", "transitions_unused",
    "batches_lost", "actor_failures", "actors_dropped", "transitions_lost_total", "actors",
    "actor_breakdown_ms", "resumed_from")

#: The learner's phases timed over the segments (seconds).
_PHASES = ("wait", "ingest", "learn", "publish")


class LearnerState(NamedTuple):
    """A distributed run's state between segments (:class:`DistributedLearner`)."""

    learner: Any  # the learner's state (DQNState / D4PGState)
    replay: Any  # its replay (ReplayState)
    env_steps: int  # environment steps ingested
    updates: int  # learner updates done
    broadcasts: int  # policies published, the initial one included
    experience_bytes: int  # bytes of transitions received


class _Programs(NamedTuple):
    """What the segments run on: the learner's compiled replay insert and update."""

    add: Any  # (replay, batch [n_msg], valid [n_msg]) -> replay
    learn: Any  # (learner, replay, key) -> (learner, replay, loss)


class DistributedLearner(runner.SegmentedLearner):
    """Distributed ActorQ as a :class:`jaxrl_pim.runner.Learner` (one object per run, what
    :func:`run_distributed` drives): units are environment steps, the state a
    :class:`LearnerState`, a checkpoint the learner's state and its replay with the counters,
    the curve so far, the returns and the training clock in the meta record.

    The first segment starts the pool (the actors compile their rollouts) and compiles the
    learner's replay insert and update (warmed up on throwaway copies): the startup, off
    the clock. A segment then ingests batches in arrival order until its environment steps
    have arrived, performing the updates owed and publishing a broadcast after every round
    of them; ``on_batch(pool, summary)`` and ``callback(env_steps, total_timesteps,
    {"return": ...})`` follow every batch (those of a segment's last batch after its
    checkpoint, through the runner's callback: :meth:`after_batch`). :meth:`report` stops the pool
    (:meth:`close`, also called by :func:`run_distributed` when a run fails) and evaluates.
    """

    unit = "environment step"
    total_name = "total_timesteps"

    def __init__(self, config: ActorQConfig, spec: DistributedRun, pool: Any = None,
                 callback: Callable[..., None] | None = None,
                 on_batch: Callable[[Any, dict[str, Any]], None] | None = None) -> None:
        self.batch = config.actor_update_period * config.envs_per_actor  # steps per batch
        super().__init__(self.batch * -(-config.total_timesteps // self.batch),
                         curve_points([], [], []))
        self.config, self.spec, self.callback, self.on_batch = config, spec, callback, on_batch
        self.pool = make_pool(spec.transport, spec.ray_address) if pool is None else pool
        self.env, self.env_params, self.info = make_with_info(config.env_name)
        self.agent, self.replay, self.learn = make_learner(config, self.info)
        self.k_learn, self.k_run, self.k_eval = jax.random.split(jax.random.PRNGKey(spec.seed),
                                                                 3)
        self.timing = dict.fromkeys(_PHASES, 0.0)
        self.returns: list[float] = []
        self.train_offset = self.train_s = 0.0  # the clock before this call, and now
        self.lost_before = 0  # transitions lost in the runs before a resume
        self.resumed_from: int | None = None
        self._t_start: float | None = None  # when the clock started (the pool went)
        self._started = False  # the pool was asked to start
        self.actors: dict[int, dict[str, Any]] = {}

    def every(self, steps: int | None) -> int:
        """Environment steps between checkpoints for ``steps`` (default
        :func:`jaxrl_pim.runner.default_every` of ``total_timesteps``), rounded up to whole
        batches."""
        cfg = self.config
        if steps is None:
            steps = runner.default_every(cfg.total_timesteps, cfg.steps_per_iteration)
        return self.batch * max(1, -(-check_int("checkpoint_every", steps, 1) // self.batch))

    def fingerprint(self) -> dict[str, Any]:
        """The config, the seed and the transport (:func:`checkpoint_fingerprint`, no
        chunks); what the folder handed to :func:`run_distributed` is checked against is its
        own fingerprint."""
        return checkpoint_fingerprint(self.config, self.spec.seed, 0, self.pool.name)

    def init(self) -> LearnerState:
        return LearnerState(jax.jit(self.agent.init)(self.k_learn), self.replay.init(), 0, 0, 1,
                            0)

    def template(self, step: int) -> dict[str, Any]:
        del step
        return {"learner": jax.eval_shape(self.agent.init, self.k_learn),
                "replay": jax.eval_shape(self.replay.init)}

    def load(self, restored: Restored) -> tuple[LearnerState, Curve]:
        meta = restored.meta
        state = LearnerState(restored.tree["learner"], restored.tree["replay"],
                             int(meta["env_steps"]), int(meta["updates"]),
                             int(meta["broadcasts"]), int(meta["experience_bytes"]))
        self.check_count(restored, state.env_steps)
        self.returns = list(meta["returns"])
        self.train_offset = self.train_s = float(meta["train_s"])
        self.lost_before = int(meta.get("transitions_lost", 0))
        self.resumed_from = state.env_steps
        return state, curve_points(meta["times"], meta["steps"], meta["avgs"])

    def program_key(self, start: int, n: int) -> str:
        return "ingest"  # one pool and one pair of programs for every segment

    def compile(self, state: LearnerState, start: int, n: int) -> _Programs:
        """Start the pool with the learner's policy; compile the replay insert and the update
        (the actors compile at the same time) and warm them up on throwaway copies, so
        first-execution costs stay off the clock."""
        cfg, learner, rstate = self.config, state.learner, state.replay
        wire, meta = encode(self.agent.policy_params(learner), cfg.precision)
        self._started = True
        self.pool.start(cfg, self.spec.seed, wire, meta, self.spec.start_timeout_s)
        n_msg = cfg.actor_update_period * cfg.envs_per_actor
        example = jax.tree.map(lambda x: x[0], rstate.buffer.data)
        batch = jax.tree.map(lambda x: jnp.zeros((n_msg,) + x.shape, x.dtype), example)
        add = jax.jit(self.replay.add, donate_argnums=0).lower(
            rstate, batch, jnp.zeros((n_msg,), bool)).compile()
        learn = jax.jit(self.learn, donate_argnums=(0, 1)).lower(learner, rstate,
                                                                  self.k_run).compile()
        copy = lambda t: jax.tree.map(jnp.copy, t)
        jax.block_until_ready(add(copy(rstate), batch, jnp.ones((n_msg,), bool)))
        jax.block_until_ready(learn(copy(learner), copy(rstate), self.k_run))
        return _Programs(add, learn)

    def execute(self, programs: _Programs, state: LearnerState, start: int, n: int,
                ) -> tuple[LearnerState, Curve, dict[str, Any] | None]:
        """Batches until ``start + n`` environment steps have arrived, each followed by
        :meth:`after_batch` but the last (whose summary is returned for the runner's callback,
        after the segment's checkpoint); the piece of the curve, a point per batch."""
        if self._t_start is None:
            self.pool.go()
            self._t_start = time.perf_counter()
        times: list[float] = []
        steps: list[int] = []
        avgs: list[float] = []
        summary = None
        while state.env_steps < start + n:
            t0 = time.perf_counter()
            msg = self.pool.next(self.spec.message_timeout_s)
            t1 = time.perf_counter()
            self.timing["wait"] += t1 - t0
            if isinstance(msg, Lost):
                continue
            state = self._ingest(programs, state, msg)
            t2 = time.perf_counter()
            self.timing["ingest"] += t2 - t1
            self.train_s = self.train_offset + t2 - self._t_start
            window = self.returns[-self.config.return_window:]
            times.append(self.train_s)
            steps.append(state.env_steps)
            avgs.append(float(np.mean(window)) if window else float("nan"))
            state = self._update(programs, state)
            summary = {"env_steps": state.env_steps, "updates": state.updates,
                       "return": avgs[-1]}
            if state.env_steps < start + n:
                self.after_batch(summary)
        return state, curve_points(times, steps, avgs), summary

    def _ingest(self, programs: _Programs, state: LearnerState, msg: dict[str, Any],
                ) -> LearnerState:
        """``msg``'s transitions added to replay, its returns recorded, the counters moved."""
        batch = NStepTransition(*(jnp.asarray(x) for x in msg["transition"]))
        rstate = programs.add(state.replay, batch, jnp.asarray(msg["valid"]))
        received = sum(x.nbytes for x in msg["transition"]) + msg["valid"].nbytes
        self.returns.extend(np.asarray(msg["returns"], np.float64).tolist())
        return state._replace(replay=rstate, env_steps=state.env_steps + msg["steps"],
                              experience_bytes=state.experience_bytes + received)

    def _update(self, programs: _Programs, state: LearnerState) -> LearnerState:
        """The updates owed at the single-program update-to-data ratio (one per
        ``train_frequency * steps_per_iteration`` environment steps from the first update on),
        then a broadcast of the new policy when there were any."""
        cfg = self.config
        first = (max(cfg.learning_starts, cfg.batch_size)
                 + (cfg.n_step - 1) * cfg.steps_per_iteration)
        owed = ((state.env_steps - first) // (cfg.steps_per_iteration * cfg.train_frequency) + 1
                if state.env_steps >= first else 0)
        if owed <= state.updates:
            return state
        t2 = time.perf_counter()
        learner, rstate, updates, loss = state.learner, state.replay, state.updates, None
        while updates < owed:
            learner, rstate, loss = programs.learn(learner, rstate,
                                                   jax.random.fold_in(self.k_run, updates))
            updates += 1
        jax.block_until_ready(loss)
        t3 = time.perf_counter()
        self.timing["learn"] += t3 - t2
        self.pool.publish(encode(self.agent.policy_params(learner), cfg.precision)[0])
        self.timing["publish"] += time.perf_counter() - t3
        return state._replace(learner=learner, replay=rstate, updates=updates,
                              broadcasts=state.broadcasts + 1)

    def after_batch(self, summary: dict[str, Any] | None) -> None:
        """``on_batch(pool, {"env_steps", "updates"})``, then ``callback(env_steps,
        total_timesteps, {"return": ...})``, for one ingested batch."""
        if summary is None:
            return
        if self.on_batch is not None:
            self.on_batch(self.pool, {"env_steps": summary["env_steps"],
                                      "updates": summary["updates"]})
        if self.callback is not None:
            total = self.config.total_timesteps
            self.callback(min(summary["env_steps"], total), total, {"return": summary["return"]})

    def join(self, pieces: list[Curve]) -> Curve:
        return join_curves(pieces)

    def snapshot(self, state: LearnerState, done: int) -> tuple[dict[str, Any], dict[str, Any]]:
        curve = curve_meta(self.curve())
        return {"learner": state.learner, "replay": state.replay}, {
            "env_steps": state.env_steps, "updates": state.updates,
            "broadcasts": state.broadcasts, "experience_bytes": state.experience_bytes,
            "returns": self.returns, "times": curve["times"], "steps": curve["steps"],
            "avgs": curve["avgs"], "train_s": self.train_s,
            "transitions_lost": self.lost_before + self.pool.counters["transitions_lost"]}

    def close(self) -> dict[int, dict[str, Any]]:
        """Stop the pool once if it was started; the actors' reports (none if not)."""
        if self._started:
            self._started = False
            self.actors = self.pool.stop()
        return self.actors

    def report(self, outcome: runner.Outcome) -> dict[str, Any]:
        """The pool stopped, the final policy evaluated; the fields of :data:`REPORT_FIELDS`
        with the curve and the learner's ``timing_s``."""
        actors = self.close()
        state, cfg = outcome.state, self.config
        t5 = time.perf_counter()
        final_return = self._evaluate(state.learner) if self.spec.final_eval else None
        timing = {"startup": outcome.timing_s["start"] + self.compile_s, **self.timing,
                  "checkpoint": outcome.timing_s["checkpoint"],
                  "eval": time.perf_counter() - t5, "train": self.train_s}
        counters = dict(self.pool.counters)
        counters["transitions_lost_total"] = self.lost_before + counters["transitions_lost"]
        wire, _ = encode(self.agent.policy_params(state.learner), cfg.precision)
        return {"transport": self.pool.name, "curve": self.curve(),
                "episode_returns": np.asarray(self.returns), "final_eval_return": final_return,
                "env_steps": state.env_steps, "learner_updates": state.updates,
                "broadcasts": state.broadcasts, "broadcast_bytes": wire.nbytes,
                "experience_bytes": state.experience_bytes,
                "replay_size": int(state.replay.size), **counters, "actors": actors,
                "actor_breakdown_ms": actor_breakdown(actors), "timing_s": timing,
                "resumed_from": self.resumed_from}

    def _evaluate(self, learner: Any) -> float:
        """Mean return of the greedy quantized policy of ``learner``."""
        cfg = self.config
        params = actor_params(self.agent.policy_params(learner), cfg.precision,
                              actors_compute(cfg, cfg.eval_episodes))
        return float(jax.jit(lambda p, k: evaluate(
            self.env, self.env_params, self.agent, self.info, p, k, cfg.eval_episodes))(
                params, self.k_eval))


def run_distributed(
    config: ActorQConfig,
    spec: DistributedRun | None = None,
    *,
    pool: Any = None,
    checkpoints: Any = None,
    callback: Callable[..., None] | None = None,
    on_batch: Callable[[Any, dict[str, Any]], None] | None = None,
) -> runner.Outcome:
    """Train with ``config.num_actors`` distributed actors (:func:`jaxrl_pim.runner.run` of a
    :class:`DistributedLearner`); returns results and timings.

    Args:
      config: the run (``num_actors`` actors of ``envs_per_actor`` environments each).
      spec: how it is deployed and driven (:class:`DistributedRun`; default: a local Ray,
        seed 0).
      pool: an actor pool object to use instead of ``spec.transport``'s (e.g. a ``RayPool``
        with other settings).
      checkpoints: a :class:`jaxrl_pim.checkpoint.Checkpoints` folder (see the module
        docstring).
      callback: ``callback(env_steps, total_timesteps, {"return": ...})`` after every batch.
      on_batch: ``on_batch(pool, summary)`` after every ingested batch (tests use it to
        stop an actor mid-run).

    Returns:
      A :class:`jaxrl_pim.runner.Outcome`: ``state`` (a :class:`LearnerState`), ``start`` and
      ``done`` (environment steps), ``checkpoints_written``, ``curve``, ``timing_s`` and the
      report fields of :data:`REPORT_FIELDS`.
    """
    spec = DistributedRun() if spec is None else spec
    learner = DistributedLearner(config, spec, pool, callback, on_batch)
    every = None if checkpoints is None else learner.every(spec.checkpoint_every)
    try:
        return runner.run(learner, checkpoints, every=every, resume=spec.resume,
                          callback=lambda _done, _total, summary: learner.after_batch(summary))
    finally:
        learner.close()


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
