"""ActorQ's actors as Ray actors: broadcasts through the object store, batches as task results.

``RayPool`` starts ``num_actors`` Ray actors (CPU, ``JAX_PLATFORMS=cpu`` and one XLA thread
each, through the actors' ``runtime_env``), each an :class:`~jaxrl_pim.actorq.worker.
ActorWorker`. The learner (the driver) publishes a broadcast by putting its packed bytes
into the object store once (``ray.put``: int8 codes / float16 values / float32 values, the
scales and the CRC32) and hands the same object reference to every actor with its next
rollout call: ``rollout(version, [ref])``. An actor whose policy is older than ``version``
fetches the object ("pull": a zero-copy view on the same node, a network transfer across
nodes), checks and rebuilds it ("deserialize") and loads it ("load"); then it runs one
refresh period of its environments and returns the batch of transitions as the call's
result, which the learner adds to its replay. ``in_flight`` calls per actor are kept queued
(default 2: an actor never waits for the learner between two batches).

Faults: actors are created with ``max_restarts`` and ``max_task_retries=0``. When an actor
dies (a crash, ``ray.kill(actor, no_restart=False)``, SIGKILL of its process, a lost node),
Ray restarts it; the calls that were in flight fail and their batches are counted as lost
-- at most ``in_flight`` batches per failure. The learner then probes the actor (a
``prepare`` call: Ray delivers it once the actor is back; it loads the newest policy and
compiles the rollout; the actor's environments start afresh) and resumes its rollout calls
when the probe returns. An actor that Ray cannot bring back (restarts used up) or that is not
back within ``restart_timeout_s`` is dropped; the run fails only when no actor is left.
A call that was in flight on an incarnation that has since been replaced is counted as a
lost batch, not as a new failure.

Order: among the calls whose results are ready, :meth:`RayPool.next` takes the one requested
first (rollout calls oldest first, then probes), so a fast actor cannot keep a slower one's
finished batches waiting.

Restarts and the end of a run: the learner stops once it has received ``total_timesteps``,
from whichever actors answered, so a restarted actor that is slow to come back may have delivered
nothing by then. :meth:`RayPool.wait_recovered` (from an ``on_batch`` hook) holds the
learner until every failed actor is back with its queued rollout calls finished; each then
delivers within the next ``num_actors * in_flight`` batches.

``ray.init()`` starts a local Ray instance when none is running (with at least as many
logical CPUs as actors: actors beyond the host's cores oversubscribe it); ``address`` joins an
existing cluster (``ray start --head`` on one host, ``ray start --address=...`` on the
others). A Ray instance this pool started is shut down by :meth:`RayPool.stop`.
"""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np

from jaxrl_pim.actorq.broadcast import BroadcastMeta, Wire
from jaxrl_pim.actorq.config import ActorQConfig
from jaxrl_pim.actorq.worker import ACTOR_ENV, ActorWorker, Lost


def _ray():
    try:
        import ray
    except ImportError as err:  # pragma: no cover - exercised only without ray
        raise ImportError(
            "ActorQ on Ray needs the optional package ray: pip install \"jaxrl_pim[ray]\" "
            "(ray>=2.60,<2.61)") from err
    return ray


class _RayActor:
    """Body of one Ray actor (wrapped by ``ray.remote`` in :meth:`RayPool.start`)."""

    def __init__(self, config: ActorQConfig, actor_id: int, seed: int,
                 meta: BroadcastMeta) -> None:
        # small constructor arguments only: Ray re-runs this on a restart, and arguments kept
        # in the object store (e.g. a broadcast's reference) could be gone by then
        ray = _ray()
        restarted = ray.get_runtime_context().was_current_actor_reconstructed
        self.incarnation = os.getpid() if restarted else 0
        self.worker = ActorWorker(config, actor_id, seed, meta, self.incarnation)

    def _refresh(self, version: int, refs: list) -> None:
        if version == self.worker.version:
            return
        first = self.worker.version < 0  # the first policy compiles the rollout: not timed
        t0 = time.perf_counter()
        wire = _ray().get(refs[0])
        if not first:
            self.worker.timing["pull"] += time.perf_counter() - t0
        self.worker.set_policy(version, wire)

    def prepare(self, version: int, refs: list) -> int:
        """Load the first policy and compile the rollout; returns the actor's process id."""
        self._refresh(version, refs)
        return os.getpid()

    def rollout(self, version: int, refs: list) -> dict[str, Any]:
        """Refresh to broadcast ``version`` if needed, then one refresh period of experience."""
        self._refresh(version, refs)
        msg = self.worker.rollout()
        msg["incarnation"] = self.incarnation
        msg["report"] = self.worker.report()
        return msg


class RayPool:
    """Ray actors for the learner loop of :func:`jaxrl_pim.actorq.distributed.run_distributed`.

    Args:
      address: Ray cluster to join (``"auto"``, ``"HOST:6379"``, ``"ray://HOST:10001"``);
        None starts or reuses a local instance.
      max_restarts: restarts Ray grants each actor.
      in_flight: rollout calls queued per actor (>= 1).
      actor_cpus: logical CPUs each actor reserves for Ray's scheduler.
      restart_timeout_s: how long a failed actor may take to come back before it is dropped.
    """

    name = "ray"

    def __init__(self, address: str | None = None, max_restarts: int = 3, in_flight: int = 2,
                 actor_cpus: float = 1.0, restart_timeout_s: float = 300.0) -> None:
        if in_flight < 1:
            raise ValueError(f"in_flight must be >= 1, got {in_flight}")
        if max_restarts < 0:
            raise ValueError(f"max_restarts must be >= 0, got {max_restarts}")
        self.address = address
        self.max_restarts = max_restarts
        self.in_flight = in_flight
        self.actor_cpus = actor_cpus
        self.restart_timeout_s = restart_timeout_s
        self.actors: list[Any] = []
        self.pids: list[int] = []
        self._pending: dict[Any, tuple[int, int]] = {}  # call -> (actor, incarnation seen)
        self._epoch: dict[int, int] = {}  # actor -> incarnations taken back so far
        self._owns_ray = False
        self.version = 0
        self._ref: Any = None
        self._steps = 0
        self._probes: dict[Any, int] = {}
        self._reprobe_at: dict[int, float] = {}
        self._recovering: dict[int, float] = {}  # actor -> time its failure was seen
        self._reports: dict[tuple[int, int], dict[str, Any]] = {}
        self.counters = {"transitions_requested": 0, "transitions_received": 0,
                         "transitions_lost": 0, "transitions_unused": 0, "batches_lost": 0,
                         "actor_failures": 0, "actors_dropped": 0}

    # -- learner side -------------------------------------------------------------------
    def start(self, config: ActorQConfig, seed: int, wire: Wire, meta: BroadcastMeta,
              timeout_s: float) -> None:
        """Start Ray if needed, create the actors with broadcast 0, wait until all are ready."""
        ray = _ray()
        if not ray.is_initialized():
            kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
            if self.address is None:
                kwargs["num_cpus"] = max(os.cpu_count() or 1,
                                         int(np.ceil(config.num_actors * self.actor_cpus)))
            ray.init(address=self.address, **kwargs)
            self._owns_ray = True
        self._steps = config.actor_update_period * config.envs_per_actor
        self.publish(wire)
        cls = ray.remote(_RayActor).options(
            num_cpus=self.actor_cpus, max_restarts=self.max_restarts, max_task_retries=0,
            runtime_env={"env_vars": dict(ACTOR_ENV)})
        self.actors = [cls.remote(config, a, seed, meta) for a in range(config.num_actors)]
        try:
            self.pids = ray.get([a.prepare.remote(self.version, [self._ref])
                                 for a in self.actors], timeout=timeout_s)
        except ray.exceptions.GetTimeoutError:
            raise RuntimeError(f"the Ray actors did not start within {timeout_s:.0f} s") from None
        except ray.exceptions.RayActorError as err:
            raise RuntimeError(f"a Ray actor failed to start: {_first_line(err)}") from None

    def go(self) -> None:
        """Queue ``in_flight`` rollout calls on every actor (the clock starts now)."""
        for aid in range(len(self.actors)):
            for _ in range(self.in_flight):
                self._submit(aid)

    def _submit(self, aid: int) -> None:
        ref = self.actors[aid].rollout.remote(self.version, [self._ref])
        self._pending[ref] = (aid, self._epoch.get(aid, 0))
        self.counters["transitions_requested"] += self._steps

    def publish(self, wire: Wire) -> None:
        """Put a new broadcast into the object store once; later calls carry its reference."""
        ray = _ray()
        self._ref = ray.put(Wire(np.frombuffer(wire.payload, np.uint8),
                                 np.frombuffer(wire.scales, np.uint8), wire.checksum))
        self.version += 1

    def next(self, timeout_s: float) -> dict[str, Any] | Lost:
        """The next batch from any actor (or a :class:`Lost` record); resubmits that actor.

        A failed call counts its batch as lost. Its actor is then probed with ``prepare``
        calls (which fail while Ray restarts it, then load the newest policy and compile the
        rollout) and gets new rollout calls when a probe returns. An actor that is not back
        within ``restart_timeout_s``, or that Ray reports dead for good (its restarts used
        up), is dropped.
        """
        ray = _ray()
        deadline = time.perf_counter() + timeout_s
        while True:
            if not self._pending and not self._probes and not self._reprobe_at:
                raise RuntimeError("every Ray actor failed past its restarts")
            ref = self._wait_first(deadline)
            if ref is None:
                if time.perf_counter() >= deadline:
                    raise RuntimeError(f"no batch from the Ray actors within {timeout_s:.0f} s")
                continue
            if ref in self._probes:
                self._probe_done(ref)
                continue
            aid, epoch = self._pending.pop(ref)
            try:
                msg = ray.get(ref)
            except (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError) as err:
                self.counters["transitions_lost"] += self._steps
                self.counters["batches_lost"] += 1
                # a new failure, unless this call was on an incarnation already replaced
                if aid not in self._recovering and epoch == self._epoch.get(aid, 0):
                    self._recovering[aid] = time.perf_counter()
                    self.counters["actor_failures"] += 1
                    self._probe(aid)
                return Lost(aid, self._steps, _first_line(err))
            except ray.exceptions.RayTaskError as err:
                raise RuntimeError(f"actor {aid} failed: {err}") from None
            self.counters["transitions_received"] += msg["steps"]
            self._reports[(aid, msg["incarnation"])] = msg.pop("report")
            self._submit(aid)
            return msg

    def wait_recovered(self, timeout_s: float) -> None:
        """Block until every actor whose failure has been seen is back -- it answered its
        probe (loaded the newest policy, compiled its rollout) and the ``in_flight`` rollout
        calls it got then have finished -- or has been dropped.

        Their batches stay queued for :meth:`next`, which takes ready calls oldest first:
        each restarted actor delivers within the next ``num_actors * in_flight`` batches.
        """
        ray = _ray()
        deadline = time.perf_counter() + timeout_s
        back = set(self._recovering)
        while self._recovering:
            ref = self._wait_first(deadline, batches=False)
            if ref is not None:
                self._probe_done(ref)
            elif time.perf_counter() >= deadline:
                raise RuntimeError(f"the failed Ray actors were not back within "
                                   f"{timeout_s:.0f} s")
        calls = [ref for ref, (aid, epoch) in self._pending.items()
                 if aid in back and epoch == self._epoch.get(aid, 0)]
        if not calls:
            return
        done, _ = ray.wait(calls, num_returns=len(calls),
                           timeout=max(deadline - time.perf_counter(), 0.0))
        if len(done) < len(calls):
            raise RuntimeError(f"the restarted Ray actors did not deliver within "
                               f"{timeout_s:.0f} s")

    def _wait_first(self, deadline: float, batches: bool = True) -> Any:
        """Re-probe the actors that are due; then the first ready call in request order
        (rollout calls unless ``batches`` is False, then probes), or None when none is ready
        before ``deadline`` or the next re-probe."""
        ray = _ray()
        now = time.perf_counter()
        for aid, due in list(self._reprobe_at.items()):
            if due <= now:
                del self._reprobe_at[aid]
                self._probe(aid)
        waiting = (list(self._pending) if batches else []) + list(self._probes)
        wait_s = max(min([deadline - now] + [due - now for due in self._reprobe_at.values()]),
                     0.0)
        if not waiting:
            time.sleep(wait_s)
            return None
        ready = set(ray.wait(waiting, num_returns=len(waiting), timeout=0)[0])
        if not ready:  # block until one is
            ready = set(ray.wait(waiting, num_returns=1, timeout=wait_s)[0])
        return next((ref for ref in waiting if ref in ready), None)

    def _probe(self, aid: int) -> None:
        self._probes[self.actors[aid].prepare.remote(self.version, [self._ref])] = aid

    def _probe_done(self, ref: Any) -> None:
        ray = _ray()
        aid = self._probes.pop(ref)
        try:
            pid = ray.get(ref)
        except ray.exceptions.ActorUnavailableError:  # restarting: ask again shortly
            if time.perf_counter() - self._recovering[aid] > self.restart_timeout_s:
                self._drop(aid)
            else:
                self._reprobe_at[aid] = time.perf_counter() + 0.5
            return
        except ray.exceptions.RayActorError:  # dead for good
            self._drop(aid)
            return
        del self._recovering[aid]
        self._epoch[aid] = self._epoch.get(aid, 0) + 1
        self.pids[aid] = pid  # the new incarnation's process
        for _ in range(self.in_flight):
            self._submit(aid)

    def _drop(self, aid: int) -> None:
        self.counters["actors_dropped"] += 1
        self._recovering.pop(aid, None)

    def stop(self) -> dict[int, dict[str, Any]]:
        """Stop the actors (and a Ray instance this pool started); returns per-actor reports
        (phase times summed over each actor's incarnations)."""
        try:
            ray = _ray()
        except ImportError:  # pragma: no cover
            return {}
        self.counters["transitions_unused"] = len(self._pending) * self._steps
        if ray.is_initialized():
            for ref in list(self._pending) + list(self._probes):
                try:
                    ray.cancel(ref, force=False)
                except Exception:  # noqa: BLE001 - finished or its actor is gone
                    pass
            for a in self.actors:
                try:
                    ray.kill(a, no_restart=True)
                except Exception:  # noqa: BLE001 - already gone
                    pass
        self._pending.clear()
        self._probes.clear()
        self._reprobe_at.clear()
        if self._owns_ray and ray.is_initialized():
            ray.shutdown()
            self._owns_ray = False
        return merge_reports(self._reports)


def merge_reports(reports: dict[tuple[int, int], dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """Sum the reports of each actor's incarnations."""
    out: dict[int, dict[str, Any]] = {}
    for (aid, _), rep in sorted(reports.items()):
        if aid not in out:
            out[aid] = {"timing_s": dict(rep["timing_s"]), "refreshes": rep["refreshes"],
                        "rollouts": rep["rollouts"], "steps": rep["steps"], "incarnations": 1}
            continue
        cur = out[aid]
        for k, v in rep["timing_s"].items():
            cur["timing_s"][k] += v
        for k in ("refreshes", "rollouts", "steps"):
            cur[k] += rep[k]
        cur["incarnations"] += 1
    return out


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return text[0] if text else type(err).__name__
