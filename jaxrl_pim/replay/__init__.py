"""Replay as pure JAX components: buffers ``Buffer(init, add, gather)`` and index samplers
``Sampler(init, sample, update_priorities, on_add)``, one family for every learner.

Buffers: ``make_buffer`` (multi-agent, four layouts, one module of pure functions each in
:mod:`jaxrl_pim.replay.layouts`: ``per_agent``, N ring buffers as in the original MADDPG;
``interleaved``, one row per time step holding all agents; ``packed``, every field of a time
step in one ``[R]`` row, with ``gather_rows`` / ``unpack_rows``; or ``compact``,
``interleaved`` with every observation stored once, ``next_obs`` rebuilt on ``gather``) and
``make_ring_buffer`` (one stream of single-agent transitions of any pytree, e.g.
``NStepTransition``; used by :mod:`jaxrl_pim.rl` and :mod:`jaxrl_pim.actorq`). Samplers:
``uniform``, ``neighbor`` (locality-aware runs), ``prioritized`` (proportional PER on a sum
tree), ``info_prioritized`` (priority-drawn references with 1/2/4 neighbours) and
``dense_prioritized`` (proportional over a dense priority array with invalid rows, ActorQ's).
A multi-agent learner round::

    buffer = make_buffer("interleaved", capacity, n, obs_dim, action_dim)
    sampler = uniform()
    bstate, sstate = buffer.init(), sampler.init()
    pos = bstate.insert_pos
    bstate = buffer.add(bstate, transition)          # obs [N, O], action [N, A], ...
    sstate = sampler.on_add(sstate, pos)             # no-op unless prioritised
    idx, w, sstate = sampler.sample(sstate, key, bstate.size, bstate.insert_pos, 1024)
    batch = buffer.gather(bstate, idx)               # obs [N, 1024, O], ...
"""

from jaxrl_pim.replay.buffers import (
    LAYOUTS,
    MAX_CAPACITY,
    Batch,
    Buffer,
    BufferState,
    CompactData,
    Transition,
    capacity_of,
    check_capacity,
    check_indices,
    compact_final_slots,
    gather_into,
    gather_rows,
    make_buffer,
    pack_rows,
    packed_row_floats,
    unpack_rows,
)
from jaxrl_pim.replay.dense import DenseState, dense_prioritized
from jaxrl_pim.replay.ring import NStepTransition, make_ring_buffer
from jaxrl_pim.replay.samplers import (
    SAMPLERS,
    PrioritizedState,
    Sampler,
    expand_references,
    info_prioritized,
    neighbor,
    prioritized,
    state_from_priorities,
    uniform,
)

__all__ = [
    "LAYOUTS",
    "MAX_CAPACITY",
    "SAMPLERS",
    "Batch",
    "Buffer",
    "BufferState",
    "CompactData",
    "DenseState",
    "NStepTransition",
    "PrioritizedState",
    "Sampler",
    "Transition",
    "capacity_of",
    "check_capacity",
    "check_indices",
    "compact_final_slots",
    "dense_prioritized",
    "expand_references",
    "gather_into",
    "gather_rows",
    "info_prioritized",
    "make_buffer",
    "make_ring_buffer",
    "neighbor",
    "pack_rows",
    "packed_row_floats",
    "prioritized",
    "state_from_priorities",
    "uniform",
    "unpack_rows",
]
