"""The opponents of ``benchmarks/marl_sampling.py`` and the library's rounds against them.

The samplers a user would pick instead, faithful semantics on every side (N independent
uniform index sets per round, all agents' fields at each index, with replacement): the
original list-of-tuples sampler's buffers (:func:`numpy_buffers`, and the Python bytes they
cost, :func:`python_bytes_per_agent_row`), vectorised NumPy (:class:`VectorizedNumpy`, and
over packed rows beside the library's ``packed`` round, :func:`time_packed`), flashbax's item
buffer and prioritised item buffer (:func:`flashbax_state`, :func:`flashbax_round`,
:func:`time_flashbax`) against the library's prioritised round with the priority update
(:func:`library_prio_round`, :func:`time_library_prio`).
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from benchmarks import harness
from benchmarks.sampling.memory import ACTION_DIM, obs_dim
from benchmarks.sampling.rounds import faithful_draw, make_sampler
from jaxrl_pim.replay import (
    Buffer,
    BufferState,
    Sampler,
    Transition,
    gather_into,
    gather_rows,
    uniform,
)
from jaxrl_pim.testing import maddpg_numpy_sampler as np_ref

#: Prioritised rounds on both sides: priority exponent, importance-weight exponent, and the
#: floor added to a new priority.
PRIO_ALPHA, PRIO_BETA, PRIO_EPS = 0.6, 0.4, 1e-6


def python_bytes_per_agent_row(num_agents: int, rows: int = 1000) -> float:
    """Python heap bytes the original sampler's list-of-tuples costs per agent and stored row
    (``tracemalloc`` over ``rows`` steps whose arrays are views of existing data)."""
    o = obs_dim(num_agents)
    host = {"obs": np.zeros((rows, num_agents, o), np.float32),
            "action": np.zeros((rows, num_agents, ACTION_DIM), np.float32),
            "reward": np.zeros((rows, num_agents), np.float32),
            "next_obs": np.zeros((rows, num_agents, o), np.float32),
            "done": np.zeros((rows, num_agents), np.float32)}
    tracemalloc.start()
    try:
        bufs = numpy_buffers(host, rows)
        used, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    del bufs
    return used / (rows * num_agents)


def numpy_buffers(host: dict[str, np.ndarray], capacity: int) -> list[np_ref.ReplayBuffer]:
    """Per-agent list-of-tuples buffers whose arrays are views into ``host`` ([C, N, ...])."""
    n = host["obs"].shape[1]
    bufs = np_ref.make_buffers(n, capacity)
    obs, act, rew, nxt, done = (host[f] for f in Transition._fields)
    for t in range(capacity):
        np_ref.add_step(bufs, obs[t], act[t], rew[t], nxt[t], done[t])
    return bufs


class VectorizedNumpy:
    """Vectorised NumPy faithful sampler over host arrays ``[C, N, ...]``: one
    ``Generator.integers`` draw of ``[N, B]`` indices, then per field one ``np.take`` into a
    preallocated time-major batch ``[N_draw, B, N_all, ...]`` (the library's
    ``interleaved_faithful`` order; ``mode="clip"`` writes straight into ``out``, and the
    indices are in range, so it clips nothing)."""

    def __init__(self, host: dict[str, np.ndarray], batch: int, seed: int = 0,
                 num_agents: int | None = None) -> None:
        self.host, self.batch = host, batch
        first = next(iter(host.values()))
        self.size = first.shape[0]
        # [C, N, ...] fields carry N; packed rows [C, R] (``{"rows": ...}``) need it given
        self.num_agents = first.shape[1] if num_agents is None else num_agents
        self.rng = np.random.default_rng(seed)
        self.out = {f: np.empty((self.num_agents, batch, *a.shape[1:]), a.dtype)
                    for f, a in host.items()}

    def gather(self, idx: np.ndarray) -> dict[str, np.ndarray]:
        """The batch at indices ``idx`` ``[N, B]``, written into the preallocated arrays."""
        for f, a in self.host.items():
            np.take(a, idx, axis=0, out=self.out[f], mode="clip")
        return self.out

    def __call__(self) -> dict[str, np.ndarray]:
        """One round: draw the ``N`` index sets, gather."""
        return self.gather(self.rng.integers(0, self.size, (self.num_agents, self.batch)))


def packed_round(num_agents: int, batch: int) -> Callable[..., jax.Array]:
    """The library's ``packed`` layout's standalone uniform faithful round: the trainer's
    index draw (``num_agents`` uniform index sets), then :func:`jaxrl_pim.replay.gather_rows`
    (one whole-row gather) written into the previous round's donated batch ``[N, B, R]``;
    ``fn(bstate, key, out)`` with a ``packed``-layout state. Not the trainer's path: the
    trainer's default layout keeps one array per field, and with the packed layout its
    ``Buffer.gather`` slices the rows into fields, which XLA fuses into the learner
    (``benchmarks/marl_e2e.py`` times that end to end)."""
    sampler = uniform()

    def fn(bstate, key, out):
        idx, _ = faithful_draw(sampler, (), key, bstate.size, bstate.insert_pos, num_agents,
                               batch)
        return out.at[...].set(gather_rows(bstate, idx))

    return jax.jit(fn, donate_argnums=2)


def time_packed(bstate: BufferState, n: int, args: argparse.Namespace,
                rkey: jax.Array) -> dict[str, Any]:
    """Alternating rounds over one ``packed``-layout buffer (rows ``[C, R]``) that both sides
    share: the vectorised NumPy sampler (``np.take`` of whole rows into a preallocated
    ``[N, B, R]`` batch) and :func:`packed_round`; the rounds of each and the best."""
    rows = bstate.data
    host = np.asarray(rows)  # on a CPU a view of the JAX buffer
    vec = VectorizedNumpy({"rows": host}, args.batch, args.seed, num_agents=n)
    fn = packed_round(n, args.batch)
    keys = jax.block_until_ready(jax.random.split(jax.random.fold_in(rkey, 11),
                                                  args.repeats + 2))
    out = jnp.zeros((n, args.batch, rows.shape[1]), rows.dtype)
    for k in keys[:2]:  # compile, first donation; the NumPy batch's first touch
        out = jax.block_until_ready(fn(bstate, k, out))
        vec()
    numpy_s, jax_s = [], []
    for k in keys[2:]:
        numpy_s.append(harness.seconds(vec))
        t0 = time.perf_counter()
        out = jax.block_until_ready(fn(bstate, k, out))
        jax_s.append(time.perf_counter() - t0)
    return {"packed_row_floats": int(rows.shape[1]),
            "numpy_vectorized_packed_seconds_by_round": numpy_s,
            "numpy_vectorized_packed_seconds": min(numpy_s),
            "library_packed_rows_seconds_by_round": jax_s,
            "library_packed_rows_seconds": min(jax_s)}


def flashbax_state(data: Transition, batch: int,
                   priorities: jax.Array | None = None) -> tuple[Any, Any]:
    """flashbax 0.1.3 item buffer (``priorities`` given: prioritised item buffer, exponent
    ``PRIO_ALPHA``) holding ``data`` (``[C, N, ...]`` per field, or a buffer's ``[1, C, N,
    ...]``; DONATED: the buffer takes its memory) as one full buffer of joint transitions;
    returns ``(buffer, state)``. The state is built with flashbax's own ``init`` and
    ``set_priorities`` and its dataclass ``replace`` (experience, ``is_full``), as if ``C``
    transitions had been added."""
    fbx = harness.require_baseline("flashbax")
    # arrays [1, C, ...] (a flashbax buffer's experience) are taken as they are
    leading = data.done.ndim == 3
    capacity = data.obs.shape[1 if leading else 0]
    if priorities is None:
        buf = fbx.make_item_buffer(max_length=capacity, min_length=1, sample_batch_size=batch)
    else:
        buf = fbx.make_prioritised_item_buffer(
            max_length=capacity, min_length=1, sample_batch_size=batch,
            priority_exponent=PRIO_ALPHA, device=jax.default_backend())

    def build(experience, prio):
        state = buf.init(jax.tree.map(lambda a: a[0, 0] if leading else a[0], experience))
        state = state.replace(experience=jax.tree.map(lambda a: a if leading else a[None],
                                                      experience),
                              is_full=jnp.asarray(True),
                              current_index=jnp.zeros_like(state.current_index))
        if prio is not None:
            state = buf.set_priorities(state, jnp.arange(capacity), prio)
        return state

    experience = data._asdict()
    return buf, jax.block_until_ready(jax.jit(build, donate_argnums=0)(experience, priorities))


def flashbax_round(buf: Any, num_agents: int, prioritized_: bool) -> Callable[..., Any]:
    """Jitted faithful round on a flashbax buffer: ``N`` index sets (``vmap`` of
    ``buf.sample`` over ``N`` keys) -> time-major batch dict ``[N, B, N, ...]``; prioritised:
    also importance weights ``(C P)^-beta / max`` per set and ``set_priorities`` of all
    ``N B`` drawn rows to ``u + eps`` (``u`` uniform, the same draw as the library side),
    returning the new state (donated)."""

    def uniform_round(state, key):
        keys = jax.random.split(key, num_agents)
        return jax.vmap(lambda k: buf.sample(state, k).experience)(keys)

    def prio_round(state, key):
        keys = jax.random.split(key, num_agents)
        smp = jax.vmap(lambda k: buf.sample(state, k))(keys)
        size = state.experience["obs"].shape[1]
        w = (size * smp.probabilities) ** (-PRIO_BETA)
        w = w / jnp.max(w, axis=-1, keepdims=True)
        td = jax.random.uniform(jax.random.fold_in(key, 1), smp.indices.shape)
        state = buf.set_priorities(state, smp.indices.reshape(-1), td.reshape(-1) + PRIO_EPS)
        return smp.experience, w, state

    if prioritized_:
        return jax.jit(prio_round, donate_argnums=0)
    return jax.jit(uniform_round)


def library_prio_round(buffer: Buffer, sampler: Sampler, mode: str, num_agents: int,
                       batch: int) -> Callable[..., Any]:
    """Jitted faithful prioritised round of the library, the same work as
    :func:`flashbax_round`'s: ``N`` index sets from ``sampler`` (``prioritized``), the gather
    of ``mode``'s layout and order into the donated previous batch, importance weights, and
    ``update_priorities`` of all ``N B`` rows to ``|u| + eps``; ``(bstate, sstate, key, out)
    -> (out, w, sstate)``."""
    time_major = mode in ("interleaved_faithful", "interleaved")

    def fn(bstate, sstate, key, out):
        idx, w = faithful_draw(sampler, sstate, key, bstate.size, bstate.insert_pos,
                               num_agents, batch)
        got = (buffer.gather(bstate, idx, time_major=time_major) if out is None
               else gather_into(buffer, bstate, idx, out, time_major))
        td = jax.random.uniform(jax.random.fold_in(key, 1), idx.shape)
        sstate = sampler.update_priorities(sstate, idx.reshape(-1), td.reshape(-1))
        return got, w, sstate

    return jax.jit(fn, donate_argnums=(1, 3))


def time_flashbax(data: Transition, n: int, args: argparse.Namespace, rkey: jax.Array,
                  prio: jax.Array | None) -> dict[str, float | None]:
    """Best round seconds of flashbax's uniform item buffer and (``prio`` given) prioritised
    item buffer, faithful, over ``data`` (donated: rebuilt from the uniform buffer's memory
    for the prioritised one)."""
    keys = jax.block_until_ready(jax.random.split(jax.random.fold_in(rkey, 3),
                                                  args.repeats + 2))
    buf, state = flashbax_state(data, args.batch)
    fn = flashbax_round(buf, n, False)
    out: dict[str, float | None] = {
        "flashbax_uniform": harness.best_seconds(lambda k, st=state: fn(st, k), keys),
        "flashbax_prioritized": None}
    if prio is None:
        return out
    data = Transition(**state.experience)  # [1, C, ...], donated to the prioritised buffer
    del state, fn
    buf, pstate = flashbax_state(data, args.batch, prio)
    del data
    fn = flashbax_round(buf, n, True)
    holder = [pstate]

    def call(k):
        _, _, holder[0] = jax.block_until_ready(fn(holder[0], k))

    out["flashbax_prioritized"] = harness.best_seconds(call, keys)
    return out


def time_library_prio(buffer: Buffer, bstate: BufferState, sstate: Any, mode: str, n: int,
                      args: argparse.Namespace,
                      rkey: jax.Array) -> float:
    """Best round seconds of :func:`library_prio_round` (the priority state carried from
    round to round, as flashbax's)."""
    keys = jax.block_until_ready(jax.random.split(jax.random.fold_in(rkey, 3),
                                                  args.repeats + 2))
    fn = library_prio_round(buffer, make_sampler("prioritized", bstate.data.obs.shape[0]),
                            mode, n, args.batch)
    holder = [jax.tree.map(jnp.copy, sstate), None]

    def call(k):
        holder[1], _, holder[0] = jax.block_until_ready(fn(bstate, holder[0], k, holder[1]))

    return harness.best_seconds(call, keys)
