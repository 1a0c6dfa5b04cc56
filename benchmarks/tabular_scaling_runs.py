"""The timed trainer runs of ``benchmarks/tabular_scaling.py``'s sections, and their inputs.

The variants (:data:`VARIANTS`, chosen by name with :func:`selected_variants`), the datasets
(:func:`dataset`), the lane-count check (:func:`check_lanes`), one timed run of the trainer
with its phase breakdown and its 2,000-episode time (:func:`jax_run`), and the lanes trainer
compiled once and called for timed rounds (:class:`JaxLanes`).
"""

from __future__ import annotations

import argparse
import itertools
import time
from typing import Any

import jax
import numpy as np

#: Every variant as ``(algo, sampling, dtype)``: Q / SARSA x SEQ / RAN / STR x FP32 / INT32.
VARIANTS = list(itertools.product(("q", "sarsa"), ("seq", "ran", "str"), ("fp32", "int32")))
#: Episodes of the published runs: a time for them is measured or extrapolated.
FULL_EPISODES = 2000
#: Rows of each dataset at full size (``--quick`` and ``--smoke`` divide them).
ENV_ROWS = {"frozenlake": 1_000_000, "taxi": 5_000_000}


def variant_name(algo: str, sampling: str, dtype: str) -> str:
    """A variant's name in the tables, e.g. ``Q-SEQ-FP32``."""
    return f"{algo.upper()}-{sampling.upper()}-{dtype.upper()}"


def dataset(env_name: str, rows: int, cache: dict) -> tuple:
    """``(transitions, model)``: ``rows`` uniform-random transitions of ``env_name``."""
    from jaxrl_pim import data as data_lib
    from jaxrl_pim import envs

    if (env_name, rows) not in cache:
        env, params = envs.make(env_name)
        model = envs.tabular_model(env)
        cache[(env_name, rows)] = (data_lib.collect(env, params, jax.random.key(0), rows), model)
    return cache[(env_name, rows)]


def check_lanes(lanes: int, n_dev: int, section: str) -> None:
    """Refuse a lane count that does not divide over the devices (ValueError)."""
    if lanes % n_dev:
        raise ValueError(f"{section}: {lanes} lanes do not divide over the {n_dev} devices "
                         "every record of this section uses; choose lane counts divisible "
                         f"by {n_dev}")


def jax_run(model: Any, transitions: Any, algo: str, sampling: str, dtype: str, lanes: int,
            episodes: int, sync: int, n_dev: int, **kw: Any) -> dict:
    """One timed run of the trainer (``runner.run``) with its phase breakdown, plus the time
    of 2,000 episodes (measured when ``episodes`` is 2,000, else extrapolated)."""
    from jaxrl_pim.tabular import TabularConfig
    from jaxrl_pim.tabular.runner import describe, run

    cfg = TabularConfig(model.num_states, model.num_actions, algo=algo, sampling=sampling,
                        dtype=dtype, num_cores=lanes, sync_period=sync, num_episodes=episodes,
                        **kw)
    res = run(cfg, transitions, jax.random.key(1), num_devices=n_dev)
    t = res.timing_s
    factor = FULL_EPISODES / episodes
    full = {"transfer_in": t["transfer_in"], "compute": t["compute"] * factor,
            "sync": t["sync"] * factor, "transfer_out": t["transfer_out"]}
    full["total"] = sum(full.values())
    return {
        **describe(cfg), "lanes": lanes, "episodes_measured": episodes,
        "devices": res.num_devices, "kernel": cfg.resolved_kernel(), "rng": cfg.rng,
        "updates_per_s": res.updates_per_s, "timing_s": t, "timing_2000_episodes_s": full,
        "extrapolated_from_episodes": None if episodes == FULL_EPISODES else episodes,
    }


class JaxLanes:
    """The lanes trainer compiled once for a fixed episode count, called for timed runs."""

    def __init__(self, model: Any, transitions: Any, algo: str, sampling: str, dtype: str,
                 lanes: int, episodes: int, sync: int, n_dev: int) -> None:
        from jax.sharding import NamedSharding
        from jax.sharding import PartitionSpec as P

        from jaxrl_pim.tabular import TabularConfig, chunk, make_train
        from jaxrl_pim.tabular.trainer import make_mesh

        self.cfg = TabularConfig(model.num_states, model.num_actions, algo=algo,
                                 sampling=sampling, dtype=dtype, num_cores=lanes,
                                 sync_period=sync, num_episodes=episodes, rng="lcg")
        mesh = make_mesh(n_dev)
        chunks = chunk(self.cfg, transitions)
        self.updates = chunks.num_rows * episodes
        self.chunks = jax.block_until_ready(
            jax.device_put(chunks, NamedSharding(mesh, P(mesh.axis_names[0]))))
        self.key = jax.random.key(1)
        t0 = time.perf_counter()
        train = jax.jit(make_train(self.cfg, mesh if n_dev > 1 else None))
        self.fn = train.lower(self.key, self.chunks).compile()
        self.compile_s = time.perf_counter() - t0

    def __call__(self) -> tuple[np.ndarray, float]:
        t0 = time.perf_counter()
        q, _ = jax.block_until_ready(self.fn(self.key, self.chunks))
        return np.asarray(q), time.perf_counter() - t0


def selected_variants(args: argparse.Namespace, section: str) -> list[tuple[str, str, str]]:
    """``VARIANTS`` filtered by ``--variants`` (``numba``) or the strong-scaling list (names
    like ``q-seq-fp32``)."""
    names = args.variants if section != "strong" else args.strong_variants
    if not names:
        return VARIANTS
    wanted = {v.lower() for v in names}
    unknown = wanted - {"-".join(v) for v in VARIANTS}
    if unknown:
        raise ValueError(f"unknown variants {sorted(unknown)}; choose from "
                         f"{['-'.join(v) for v in VARIANTS]}")
    return [v for v in VARIANTS if "-".join(v) in wanted]
