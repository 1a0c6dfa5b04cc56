"""NumPy port of the original MADDPG replay sampler (the baseline the paper profiles).

Written from the description of the original code, not copied: each agent owns a ring
buffer kept as a Python list of per-step tuples ``(obs, action, reward, next_obs, done)``.
``make_index`` draws ``random.randint(0, len - 1)`` per batch row (uniform, with
replacement) and ``sample_index`` / ``_encode_sample`` loop over the indices, appending one
array per field per row (``np.asarray``, the NumPy 2 spelling of ``np.array(copy=False)``)
and stacking the lists at the end. In an update round every agent draws its own indices
and then gathers ALL agents' data at them
(``sample_round``): N * N * B per-row lookups.

Used by the tests as an independent reference for ``jaxrl_pim.replay`` and by
``benchmarks/marl_sampling.py`` as the timing baseline.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import numpy as np


class ReplayBuffer:
    """One agent's ring buffer as a list of tuples (original data structure)."""

    def __init__(self, size: int) -> None:
        self._storage: list[tuple] = []
        self._maxsize = int(size)
        self._next_idx = 0

    def __len__(self) -> int:
        return len(self._storage)

    def add(self, obs_t, action, reward, obs_tp1, done) -> None:
        """Append one transition, overwriting the oldest once full."""
        data = (obs_t, action, reward, obs_tp1, done)
        if self._next_idx >= len(self._storage):
            self._storage.append(data)
        else:
            self._storage[self._next_idx] = data
        self._next_idx = (self._next_idx + 1) % self._maxsize

    def _encode_sample(self, idxes: Sequence[int]) -> tuple[np.ndarray, ...]:
        obses_t, actions, rewards, obses_tp1, dones = [], [], [], [], []
        for i in idxes:
            obs_t, action, reward, obs_tp1, done = self._storage[i]
            obses_t.append(np.asarray(obs_t))
            actions.append(np.asarray(action))
            rewards.append(reward)
            obses_tp1.append(np.asarray(obs_tp1))
            dones.append(done)
        return (
            np.array(obses_t),
            np.array(actions),
            np.array(rewards),
            np.array(obses_tp1),
            np.array(dones),
        )

    def make_index(self, batch_size: int) -> list[int]:
        """``batch_size`` uniform indices with replacement over the stored rows."""
        return [random.randint(0, len(self._storage) - 1) for _ in range(batch_size)]

    def sample_index(self, idxes: Sequence[int]) -> tuple[np.ndarray, ...]:
        """Stacked ``(obs [B, O], action [B, A], reward [B], next_obs [B, O], done [B])``."""
        return self._encode_sample(idxes)


def make_buffers(num_agents: int, size: int) -> list[ReplayBuffer]:
    """One list-of-tuples buffer per agent."""
    return [ReplayBuffer(size) for _ in range(num_agents)]


def add_step(buffers: list[ReplayBuffer], obs, action, reward, next_obs, done) -> None:
    """Lock-step append: agent ``i`` stores ``(obs[i], action[i], reward[i], next_obs[i],
    done[i])`` (arrays with the agent axis first)."""
    for i, buf in enumerate(buffers):
        buf.add(obs[i], action[i], reward[i], next_obs[i], done[i])


def sample_round(
    buffers: list[ReplayBuffer],
    batch_size: int,
    indices: Sequence[Sequence[int]] | None = None,
) -> tuple[list[list[int]], list[list[tuple[np.ndarray, ...]]]]:
    """One MADDPG update round's sampling: for each agent, draw indices and gather everyone.

    ``indices[i]`` (optional) replaces agent ``i``'s random draw. Returns ``(indices,
    samples)`` where ``samples[i][j]`` is agent ``j``'s ``(obs, action, reward, next_obs,
    done)`` at agent ``i``'s indices -- N * N ``sample_index`` calls.
    """
    drawn, samples = [], []
    for i, buf in enumerate(buffers):
        idx = list(indices[i]) if indices is not None else buf.make_index(batch_size)
        drawn.append(idx)
        samples.append([other.sample_index(idx) for other in buffers])
    return drawn, samples
