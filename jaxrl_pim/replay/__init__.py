"""Vectorised multi-agent replay: buffer layouts and index samplers as pure JAX components.

Buffers (``make_buffer``): ``per_agent`` (N ring buffers, the original MADDPG layout) and
``interleaved`` (one row per time step holding all agents). Samplers: ``uniform``,
``neighbor`` (locality-aware runs), ``prioritized`` (proportional PER on a sum tree) and
``info_prioritized`` (priority-drawn references with 1/2/4 neighbours). A learner round::

    buffer = make_buffer("interleaved", capacity, n, obs_dim, action_dim)
    sampler = uniform()
    bstate, sstate = buffer.init(), sampler.init(capacity)
    pos = bstate.insert_pos
    bstate = buffer.add(bstate, transition)          # obs [N, O], action [N, A], ...
    sstate = sampler.on_add(sstate, pos)             # no-op unless prioritised
    idx, w, sstate = sampler.sample(sstate, key, bstate.size, bstate.insert_pos, 1024)
    batch = buffer.gather(bstate, idx)               # obs [N, 1024, O], ...
"""

from jaxrl_pim.replay.buffers import (
    LAYOUTS,
    Batch,
    Buffer,
    BufferState,
    Transition,
    capacity_of,
    check_indices,
    gather_into,
    make_buffer,
)
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
    "SAMPLERS",
    "Batch",
    "Buffer",
    "BufferState",
    "PrioritizedState",
    "Sampler",
    "Transition",
    "capacity_of",
    "check_indices",
    "expand_references",
    "gather_into",
    "info_prioritized",
    "make_buffer",
    "neighbor",
    "prioritized",
    "state_from_priorities",
    "uniform",
]
