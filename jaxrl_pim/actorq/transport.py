"""Real inter-process transport for multi-process ActorQ (standard library only).

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

import struct
from multiprocessing import shared_memory
from typing import Any

from jaxrl_pim.actorq.broadcast import Wire

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
