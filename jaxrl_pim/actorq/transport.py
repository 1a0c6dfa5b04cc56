"""ActorQ's actors as local OS processes: a shared-memory block and a queue (stdlib only).

``ProcessPool`` is the single-host alternative to :class:`jaxrl_pim.actorq.ray_pool.RayPool`
behind the same interface (``start`` / ``go`` / ``publish`` / ``next`` / ``stop``): actors
are ``multiprocessing`` processes started with ``spawn`` on CPU, each an
:class:`~jaxrl_pim.actorq.worker.ActorWorker` looping rollout -> send -> pull. It cannot
leave the machine and does not restart failed actors (an actor that dies fails the run);
see ``docs/quantization.md`` for when it is the better choice.

* Weights, learner -> actors: ``ParamServer`` / ``ParamClient``, a
  ``multiprocessing.shared_memory`` block holding the latest broadcast (a 32-byte header:
  version, payload length, scales length, CRC32; then payload and scales) guarded by a
  ``multiprocessing.Lock``. The learner writes each broadcast once whatever the number of
  actors; an actor "pulls" by copying the bytes out when the version changed. The bytes
  copied are exactly the packed broadcast (int8 codes + scales, or fp16/fp32 values), so pull
  time scales with the broadcast size as it would on a network, without a network.
* Experience, actors -> learner: a bounded ``multiprocessing.Queue`` (a pipe + pickle),
  many-to-one with back-pressure: a full queue blocks the actors instead of growing memory.

Why this and not ZeroMQ or sockets: no extra dependency, works with the ``spawn`` start
method on every OS, and a single shared block makes broadcast cost independent of the actor
count (one write, K reads), like a parameter server.
"""

from __future__ import annotations

import os
import queue as queue_lib
import struct
import time
import traceback
from multiprocessing import shared_memory
from typing import Any

from jaxrl_pim.actorq.broadcast import BroadcastMeta, Wire
from jaxrl_pim.actorq.config import ActorQConfig
from jaxrl_pim.actorq.worker import ACTOR_ENV, ActorWorker

_HEADER = struct.Struct("<QQQQ")  # version, payload bytes, scales bytes, crc32


class ParamServer:
    """Learner side: owns the shared block and publishes broadcasts into it."""

    def __init__(self, ctx: Any, capacity: int) -> None:
        if capacity <= 0:
            raise ValueError(f"capacity must be > 0 bytes, got {capacity}")
        self.capacity = int(capacity)
        self.shm = shared_memory.SharedMemory(create=True, size=_HEADER.size + self.capacity)
        self.lock = ctx.Lock()
        self.version = 0
        _HEADER.pack_into(self.shm.buf, 0, 0, 0, 0, 0)

    @property
    def name(self) -> str:
        """Name actors attach to."""
        return self.shm.name

    def publish(self, wire: Wire) -> int:
        """Write ``wire`` as the newest broadcast; returns its version (1, 2, ...)."""
        n_p, n_s = len(wire.payload), len(wire.scales)
        if n_p + n_s > self.capacity:
            raise ValueError(
                f"broadcast of {n_p + n_s} bytes exceeds the shared block ({self.capacity} bytes)"
            )
        with self.lock:
            self.version += 1
            buf = self.shm.buf
            buf[_HEADER.size:_HEADER.size + n_p] = wire.payload
            buf[_HEADER.size + n_p:_HEADER.size + n_p + n_s] = wire.scales
            _HEADER.pack_into(buf, 0, self.version, n_p, n_s, wire.checksum)
        return self.version

    def close(self) -> None:
        """Release and unlink the block (call once, in the learner)."""
        try:
            self.shm.close()
        finally:
            try:
                self.shm.unlink()
            except FileNotFoundError:
                pass


class ParamClient:
    """Actor side: attaches to the block and pulls new broadcasts."""

    def __init__(self, name: str, lock: Any) -> None:
        # Spawned actors share the learner's resource tracker, which unlinks the block once
        # when the learner closes it; nothing to unregister here.
        self.shm = shared_memory.SharedMemory(name=name)
        self.lock = lock
        self.version = 0

    def pull(self) -> Wire | None:
        """Copy the newest broadcast out if it is newer than the last one pulled, else None."""
        with self.lock:
            version, n_p, n_s, crc = _HEADER.unpack_from(self.shm.buf, 0)
            if version == self.version:
                return None
            start = _HEADER.size
            payload = bytes(self.shm.buf[start:start + n_p])
            scales = bytes(self.shm.buf[start + n_p:start + n_p + n_s])
        self.version = version
        return Wire(payload, scales, crc)

    def close(self) -> None:
        """Detach (does not unlink)."""
        self.shm.close()


def _process_main(config: ActorQConfig, actor_id: int, seed: int, shm_name: str, lock: Any,
                  out_q: Any, go: Any, stop: Any, meta: BroadcastMeta) -> None:
    """Body of one actor process: rollout, send, pull (and refresh when a new one came)."""
    try:
        worker = ActorWorker(config, actor_id, seed, meta)
        client = ParamClient(shm_name, lock)
        wire = client.pull()
        if wire is None:
            raise RuntimeError("no broadcast published before the actor started")
        worker.set_policy(client.version, wire)  # also compiles the rollout
        out_q.put(("ready", actor_id, os.getpid()))
        go.wait()
        while not stop.is_set():
            msg = worker.rollout()
            t1 = time.perf_counter()
            out_q.put(("exp", actor_id, msg))
            t2 = time.perf_counter()
            worker.timing["send"] += t2 - t1
            wire = client.pull()
            worker.timing["pull"] += time.perf_counter() - t2
            if wire is not None:
                worker.set_policy(client.version, wire)
        client.close()
        out_q.put(("done", actor_id, worker.report()))
    except Exception:  # report to the learner instead of dying silently
        out_q.put(("error", actor_id, traceback.format_exc()))


class ProcessPool:
    """Local actor processes for :func:`jaxrl_pim.actorq.distributed.run_distributed`."""

    name = "processes"

    def __init__(self) -> None:
        import multiprocessing as mp

        self._ctx = mp.get_context("spawn")
        self.procs: list[Any] = []
        self.server: ParamServer | None = None
        self.pids: list[int] = []
        self._reports: dict[int, dict[str, Any]] = {}
        self.counters = {"transitions_requested": 0, "transitions_received": 0,
                         "transitions_lost": 0, "transitions_unused": 0, "batches_lost": 0,
                         "actor_failures": 0, "actors_dropped": 0}

    def start(self, config: ActorQConfig, seed: int, wire: Wire, meta: BroadcastMeta,
              timeout_s: float) -> None:
        """Create the shared block, publish broadcast 0, spawn the actors, wait until ready."""
        ctx = self._ctx
        self.server = ParamServer(ctx, wire.nbytes + 64)
        self.server.publish(wire)
        self._q = ctx.Queue(maxsize=max(4, 2 * config.num_actors))
        self._go, self._stop = ctx.Event(), ctx.Event()
        saved = {k: os.environ.get(k) for k in ACTOR_ENV}
        os.environ.update(ACTOR_ENV)
        try:
            for a in range(config.num_actors):
                p = ctx.Process(target=_process_main, daemon=True, args=(
                    config, a, seed, self.server.name, self.server.lock, self._q, self._go,
                    self._stop, meta))
                p.start()
                self.procs.append(p)
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        deadline = time.perf_counter() + timeout_s
        pids: dict[int, int] = {}
        while len(pids) < config.num_actors:
            kind, aid, payload = self._get(deadline)
            if kind == "error":
                raise RuntimeError(f"actor {aid} failed:\n{payload}")
            if kind == "ready":
                pids[aid] = payload
        self.pids = [pids[a] for a in range(config.num_actors)]

    def go(self) -> None:
        """Let the actors run (the clock starts now)."""
        self._go.set()

    def publish(self, wire: Wire) -> None:
        """Write a new broadcast into the shared block (once, whatever the actor count)."""
        assert self.server is not None
        self.server.publish(wire)

    def next(self, timeout_s: float) -> dict[str, Any]:
        """The next batch from any actor; raises RuntimeError if an actor failed."""
        deadline = time.perf_counter() + timeout_s
        while True:
            kind, aid, msg = self._get(deadline)
            if kind == "error":
                raise RuntimeError(f"actor {aid} failed:\n{msg}")
            if kind == "exp":
                self.counters["transitions_received"] += msg["steps"]
                return msg

    def _get(self, deadline: float) -> tuple[str, int, Any]:
        while True:
            try:
                return self._q.get(timeout=0.5)
            except queue_lib.Empty:
                if any(not p.is_alive() for p in self.procs):
                    dead = [i for i, p in enumerate(self.procs) if not p.is_alive()]
                    raise RuntimeError(f"actor process(es) {dead} exited unexpectedly (this "
                                       "transport does not restart actors; Ray does)") from None
                if time.perf_counter() > deadline:
                    raise RuntimeError("timed out waiting for the actor processes") from None

    def stop(self, timeout_s: float = 60.0) -> dict[int, dict[str, Any]]:
        """Stop the actors, collect their reports, release the shared block."""
        try:
            if self.procs:
                self._stop.set()
                self._go.set()
                deadline = time.perf_counter() + timeout_s
                while len(self._reports) < len(self.procs) and time.perf_counter() < deadline:
                    try:
                        kind, aid, msg = self._q.get(timeout=0.5)
                    except queue_lib.Empty:
                        if not any(p.is_alive() for p in self.procs):
                            break
                        continue
                    if kind == "done":
                        self._reports[aid] = dict(msg, incarnations=1)
        finally:
            for p in self.procs:
                p.join(timeout=10)
                if p.is_alive():
                    p.terminate()
                    p.join(timeout=5)
            if self.server is not None:
                self.server.close()
                self.server = None
        sent = sum(r["steps"] for r in self._reports.values())
        self.counters["transitions_requested"] = sent
        self.counters["transitions_unused"] = max(0, sent - self.counters["transitions_received"])
        return dict(self._reports)
