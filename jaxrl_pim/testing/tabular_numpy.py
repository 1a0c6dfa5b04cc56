"""Plain NumPy/Python reference for the lanes trainer: explicit loops, one update at a time.

Independent of the library's kernel: it re-implements chunk orders, the LCG, the update
rules (float32 arithmetic, or exact Python-int fixed point) and the lane averages. For the
JAX-PRNG mode it consumes the same random draws (the documented ``episode_draws``), which
are inputs, not logic under test.
"""

from __future__ import annotations

import jax
import ml_dtypes
import numpy as np

from jaxrl_pim.tabular.config import TabularConfig, episodes_in_rounds
from jaxrl_pim.tabular.sampling import episode_draws

SCALE = 10_000
STORAGE = {"fp32": np.float32, "fp16": np.float16, "bf16": ml_dtypes.bfloat16}


def _lcg(x: int) -> int:
    return (x * 1664525 + 1013904223) % 2**32


def _lcg_int(x: int, n: int) -> int:
    u = np.float32(x >> 8) * np.float32(2.0**-24)
    return min(int(np.floor(np.float32(u * np.float32(n)))), n - 1)


def _lcg_u(x: int) -> np.float32:
    return np.float32(x >> 8) * np.float32(2.0**-24)


def _mul_scaled(c: int, x: int) -> int:
    mag = (c * abs(x)) // SCALE
    return -mag if x < 0 else mag


def _order(sampling: str, m: int, stride: int) -> list[int]:
    if sampling == "seq":
        return list(range(m))
    return [i for o in range(min(stride, m)) for i in range(o, m, stride)]


def train_reference(cfg: TabularConfig, chunks, key) -> np.ndarray:
    """Reference of ``make_train(cfg)(key, chunks)``; ``chunks`` fields are ``[C, m]``.

    Returns the final table ``[S, A]`` (``[C, S, A]`` in independent mode), float32 (float64
    for int32, descaled). The sync rounds' lengths come from
    :func:`~jaxrl_pim.tabular.config.episodes_in_rounds` (the workload's arithmetic, not
    logic under test).
    """
    s_all, a_all, r_all, s2_all, t_all = (np.asarray(x) for x in chunks)
    c, m = s_all.shape
    S, A = cfg.num_states, cfg.num_actions
    fixed = cfg.dtype == "int32"
    if fixed:
        q = np.zeros((c, S, A), dtype=object)
        q[...] = 0
        alpha_s, gamma_s = round(cfg.alpha * SCALE), round(cfg.gamma * SCALE)
    else:
        store = STORAGE[cfg.dtype]
        q = np.zeros((c, S, A), dtype=store)
    lane_keys = jax.random.split(key, c)
    lcg = [cfg.lcg_seed] * c
    for r in range(cfg.num_rounds):
        episode = episodes_in_rounds(cfg, 0, r)
        n_ep = episodes_in_rounds(cfg, r, r + 1)
        for lane in range(c):
            for e in range(episode, episode + n_ep):
                if cfg.rng == "jax":
                    idx, eu, ra = (None if x is None else np.asarray(x) for x in
                                   episode_draws(lane_keys[lane], e, m, A))
                order = _order(cfg.sampling, m, cfg.stride) if cfg.sampling != "ran" else None
                for j in range(m):
                    if cfg.rng == "lcg":
                        if cfg.sampling == "ran":
                            lcg[lane] = _lcg(lcg[lane])
                            i = _lcg_int(lcg[lane], m)
                        if cfg.algo == "sarsa":
                            lcg[lane] = _lcg(lcg[lane])
                            u = _lcg_u(lcg[lane])
                            lcg[lane] = _lcg(lcg[lane])
                            rand_a = _lcg_int(lcg[lane], A)
                    else:
                        if cfg.sampling == "ran":
                            i = int(idx[j])
                        u, rand_a = eu[j], int(ra[j])
                    if cfg.sampling != "ran":
                        i = order[j]
                    s, a, s2 = int(s_all[lane, i]), int(a_all[lane, i]), int(s2_all[lane, i])
                    disc = 0 if t_all[lane, i] else 1
                    row = q[lane, s2]
                    if cfg.algo == "q":
                        boot = max(row)
                        if cfg.compat_max0:
                            boot = max(boot, 0 * boot)
                    else:
                        greedy = int(np.argmax(np.asarray(row, dtype=np.float64)))
                        boot = row[rand_a if u < cfg.epsilon else greedy]
                    if fixed:
                        r_s = int(round(float(r_all[lane, i]) * SCALE))
                        td = r_s + _mul_scaled(gamma_s, int(boot)) * disc - int(q[lane, s, a])
                        q[lane, s, a] = int(q[lane, s, a]) + _mul_scaled(alpha_s, td)
                    else:
                        f32 = np.float32
                        q_tm1 = f32(q[lane, s, a])
                        target = f32(r_all[lane, i]) + f32(cfg.gamma) * f32(disc) * f32(boot)
                        q[lane, s, a] = store(q_tm1 + f32(cfg.alpha) * (target - q_tm1))
        if not cfg.independent:
            if fixed:
                total = q.sum(axis=0)
                mean = np.vectorize(lambda v: -((-v) // c) if v < 0 else v // c)(total)
                q[...] = mean[None]
            else:
                mean = (q.astype(np.float32).sum(axis=0) / np.float32(c)).astype(store)
                q[...] = mean[None]
    out = q.astype(np.float64) / SCALE if fixed else q.astype(np.float32)
    return out if cfg.independent else out[0]
