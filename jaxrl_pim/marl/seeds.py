"""Many seeds of one MARL run at once: one jitted, vmapped program, the seed axis over devices.

A MARL result is a mean over seeds with an error bar. ``make_train`` is pure, so S seeds are
one program: :func:`make_init_seeds` / :func:`make_train_seeds_from` vmap the trainer over a
leading seed axis and split that axis over a one-axis device mesh (:data:`SEED_AXIS`,
``jax.shard_map`` inside ``jax.jit``, inputs and outputs placed with ``NamedSharding``): each
device runs its own seeds with no communication (the seeds share the trainer's static schedule,
:mod:`jaxrl_pim.marl.schedule`, so the program is one seed's with a batch axis and no
conditional). :func:`run_seeds` trains them in checkpointed segments
(every seed in each checkpoint, resumed bit for bit) and :func:`seed_stats` gives the mean,
standard error and 95 % interval over seeds.

Seed ``i`` of a group started from ``seed`` uses ``jax.random.PRNGKey(seed + i)``, the key of
``jaxrl-pim marl --seed <seed + i>`` alone, and runs the same per-seed computation, so its
result is the seed's result alone wherever XLA compiles the batched program with the same
float32 rounding. Measured on XLA:CPU (tests state the tolerance): a group on one device
equals each seed alone bit for bit at XLA's default optimisation level at the tests' sizes
(at larger sizes XLA:CPU may compile the batched acting with another summation order, and a
seed agrees to float32 rounding), and to float32
rounding (relative 1e-5 after a few updates) at its lowest effort; the same group split over
2 or 8 devices is compiled as a partitioned program, the same bit for bit on 2 and on 8
devices at the default level, which XLA simplifies differently from the unpartitioned
one-device program (a division by a per-seed value becomes a multiplication by its reciprocal
there), so it agrees with the one-device run to float32 rounding, not bit for bit; the
same mesh spread over processes (``jaxrl_pim.distributed``) gives the one-process results
bit for bit (tested with 2 processes of 4 CPU devices against 8 devices in one). Like any
change of summation order, such differences grow with training into different (equally
valid) runs: compare seeds' statistics, not their trajectories, across device counts.

Example::

    from jaxrl_pim.marl import MARLConfig, seeds

    config = MARLConfig(num_agents=3, num_episodes=200, buffer_capacity=20_000,
                        batch_size=256, learning_starts=2_560)
    run = seeds.run_seeds(config, seed=0, num_seeds=16)
    run.curve.shape                         # [16, 200, num_teams]: episode_return
    seeds.seed_stats(run.curve[:, -20:].mean(axis=1))
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

import jaxrl_pim.checkpoint as driver
from jaxrl_pim import runner
from jaxrl_pim.checkpoint import Checkpoints
from jaxrl_pim.checks import check_int
from jaxrl_pim.marl import checkpoint as marl_checkpoint
from jaxrl_pim.marl.config import MARLConfig
from jaxrl_pim.marl.trainer import (
    TrainState,
    make_init,
    make_schedule,
    make_train_from,
)

__all__ = [
    "SEED_AXIS",
    "SeedsLearner",
    "evaluate_seeds",
    "fingerprint",
    "make_init_seeds",
    "make_train_seeds_from",
    "plot_curves",
    "run_seeds",
    "seed_keys",
    "seed_mesh",
    "seed_stats",
    "t_quantile_975",
]

SEED_AXIS = "seeds"
"""Name of the device mesh axis the seeds are split over."""

# Student's t 97.5 % quantiles for 1..30 degrees of freedom (two-sided 95 % interval).
_T975 = (12.706204736, 4.302652730, 3.182446305, 2.776445105, 2.570581836, 2.446911851,
         2.364624252, 2.306004135, 2.262157163, 2.228138852, 2.200985160, 2.178812830,
         2.160368656, 2.144786688, 2.131449546, 2.119905299, 2.109815578, 2.100922040,
         2.093024054, 2.085963447, 2.079613845, 2.073873068, 2.068657610, 2.063898562,
         2.059538553, 2.055529439, 2.051830516, 2.048407142, 2.045229642, 2.042272456)


def t_quantile_975(dof: int) -> float:
    """Student's t 97.5 % quantile for ``dof`` >= 1 degrees of freedom: a table to 30, above
    it the Cornish-Fisher expansion about the normal quantile to the fourth order (error below
    1e-6)."""
    dof = check_int("dof", dof, lo=1)
    if dof <= len(_T975):
        return _T975[dof - 1]
    z, v = 1.959963984540054, float(dof)
    return (z + (z**3 + z) / (4 * v) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * v**2)
            + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * v**3)
            + (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z)
            / (92160 * v**4))


def seed_stats(values: Any) -> dict[str, Any]:
    """Mean over seeds of ``values [S, ...]`` with its standard error (``std(ddof=1) /
    sqrt(S)``) and the 95 % interval ``mean -+ t_{0.975, S-1} x standard error`` (Student's
    t); each entry has ``values``' trailing shape, as lists (NaN error and interval for S = 1).
    """
    x = np.asarray(values, np.float64)
    if x.ndim < 1 or x.shape[0] < 1:
        raise ValueError(f"values must be [S, ...] with S >= 1 seeds, got shape {x.shape}")
    s = x.shape[0]
    mean = x.mean(axis=0)
    se = x.std(axis=0, ddof=1) / math.sqrt(s) if s > 1 else np.full_like(mean, np.nan)
    half = (t_quantile_975(s - 1) if s > 1 else np.nan) * se
    return {"seeds": s, "mean": np.asarray(mean).tolist(),
            "standard_error": np.asarray(se).tolist(),
            "ci95_low": np.asarray(mean - half).tolist(),
            "ci95_high": np.asarray(mean + half).tolist()}


def seed_keys(seed: int, num_seeds: int) -> jax.Array:
    """``[num_seeds, 2]`` uint32: ``jax.random.PRNGKey(seed + i)`` for seed ``i``."""
    seed = check_int("seed", seed)
    num_seeds = check_int("num_seeds", num_seeds, lo=1)
    return jnp.stack([jax.random.PRNGKey(seed + i) for i in range(num_seeds)])


def seed_mesh(num_seeds: int, devices: Sequence[Any] | None = None) -> Mesh:
    """A one-axis mesh (:data:`SEED_AXIS`) over the most of ``devices`` (default: every
    device) that divides ``num_seeds``, so each holds the same number of seeds."""
    num_seeds = check_int("num_seeds", num_seeds, lo=1)
    devices = list(jax.devices() if devices is None else devices)
    n = max(d for d in range(1, len(devices) + 1) if num_seeds % d == 0)
    return Mesh(np.array(devices[:n]), (SEED_AXIS,))


def _split(mesh: Mesh) -> NamedSharding:
    return NamedSharding(mesh, P(SEED_AXIS))


def _to_host(x: jax.Array) -> np.ndarray:
    """The whole array on the host, also when its shards live in several processes."""
    if getattr(x, "is_fully_addressable", True):
        return np.asarray(x)
    from jax.experimental import multihost_utils

    return np.asarray(multihost_utils.process_allgather(x, tiled=True))


def _over_seeds(fn: Any, mesh: Mesh) -> Any:
    """``fn`` vmapped over the seeds of each device, the seed axis split over ``mesh``.

    Every input and output is split over the seed axis; the trainer's scans start from
    constants (counters, resets) that shard_map's varying-axes check would type as replicated,
    so the check is off."""
    return jax.shard_map(jax.vmap(fn), mesh=mesh, in_specs=P(SEED_AXIS),
                         out_specs=P(SEED_AXIS), check_vma=False)


def make_init_seeds(config: MARLConfig, mesh: Mesh) -> Any:
    """Jitted ``init(keys [S, 2]) -> TrainState`` with every leaf ``[S, ...]``, split over
    ``mesh``'s seed axis."""
    return jax.jit(_over_seeds(make_init(config), mesh), in_shardings=_split(mesh),
                   out_shardings=_split(mesh))


def make_train_seeds_from(config: MARLConfig, num_episodes: int, mesh: Mesh,
                          start_episode: int = 0) -> Any:
    """Jitted ``train_from(states) -> (states, metrics)``: :func:`make_train_from` for
    ``num_episodes`` episodes of every seed from ``start_episode`` (leaves ``[S, ...]``, split
    over ``mesh``; the input states are donated); metrics as there with a leading seed axis,
    e.g. ``episode_return [S, num_episodes, num_teams]``. The seeds share the static schedule,
    so the program is one seed's with a batch axis."""
    train_from = make_train_from(config, num_episodes, start_episode=start_episode)
    return jax.jit(_over_seeds(train_from, mesh),
                   in_shardings=_split(mesh), out_shardings=_split(mesh), donate_argnums=0)


def fingerprint(config: MARLConfig, seed: int, num_seeds: int) -> dict[str, Any]:
    """What a checkpoint of a group of seeds must match: the run's
    :func:`jaxrl_pim.marl.checkpoint.fingerprint` (config without ``num_episodes``, first
    seed) and ``num_seeds``."""
    return {**marl_checkpoint.fingerprint(config, seed=seed), "num_seeds": int(num_seeds)}


def _template(config: MARLConfig, num_seeds: int, episodes_done: int) -> dict[str, Any]:
    state = jax.eval_shape(jax.vmap(make_init(config)), seed_keys(0, num_seeds))
    teams = len(config.teams)
    curve = jax.ShapeDtypeStruct((num_seeds, episodes_done, teams), np.float32)
    return {"state": state, "episode_return": curve}


def run_seeds(
    config: MARLConfig, seed: int = 0, num_seeds: int = 1,
    checkpoints: Checkpoints | None = None, *, every: int | None = None,
    resume: bool = False, mesh: Mesh | None = None, memory: dict[str, Any] | None = None,
) -> runner.Outcome:
    """Train seeds ``seed .. seed + num_seeds - 1`` of ``config`` to ``config.num_episodes``
    in one vmapped program split over ``mesh`` (default :func:`seed_mesh` over every device).

    With ``checkpoints`` (fingerprint :func:`fingerprint`) the run is saved after segments of
    ``every`` episodes (default ``ceil(num_episodes / 10)``) and at its end, all seeds in each
    checkpoint; ``resume`` continues from the newest one, ending with the states an
    uninterrupted run ends with. Without ``resume`` a folder that holds checkpoints is refused.

    After ``jaxrl_pim.distributed.initialize`` the default mesh spans every process's
    devices: each process trains the seeds on its own devices and every process gets the
    whole curves (``episode_return``); ``state`` is then a global array whose other shards
    live in the other processes. Checkpoints are single-process for now (ValueError).
    ``memory``: the run's memory plan, recorded in every checkpoint's meta (``"memory"``).

    Returns a :class:`jaxrl_pim.runner.Outcome`: the final ``state`` (every leaf
    ``[S, ...]``), ``start`` (episodes restored), ``done``, ``checkpoints_written``, ``curve``
    (float32 ``[S, num_episodes, num_teams]``: every seed's whole ``episode_return``, also
    before a resume), ``timing_s`` (``init``, ``compile``, ``train``, ``checkpoint``
    seconds) and the report field ``devices`` (the mesh size the seeds were split over).
    """
    num_seeds = check_int("num_seeds", num_seeds, lo=1)
    mesh = seed_mesh(num_seeds) if mesh is None else mesh
    if num_seeds % mesh.devices.size:
        raise ValueError(f"num_seeds ({num_seeds}) must be divisible by the mesh's "
                         f"{mesh.devices.size} devices")
    if checkpoints is not None and jax.process_count() > 1:
        raise ValueError("checkpoints of a group of seeds over several processes are not "
                         "supported yet; run without checkpoints, or in one process")
    return runner.run(SeedsLearner(config, seed, num_seeds, mesh, checkpoints, memory),
                      checkpoints, every=every, resume=resume)


class SeedsLearner(runner.SegmentedLearner):
    """A group of seeds as a :class:`jaxrl_pim.runner.Learner` (one object per run, what
    :func:`run_seeds` drives): units are episodes, the state the stacked ``TrainState``
    ``[S, ...]`` split over ``mesh``, a checkpoint every seed's state and curves
    (``episode_return [S, episodes done, num_teams]``, the curve); one compiled
    :func:`make_train_seeds_from` program per static plan (segment length and start)."""

    unit = "episode"
    total_name = "num_episodes"
    curve_axis = 1

    def __init__(self, config: MARLConfig, seed: int, num_seeds: int, mesh: Mesh,
                 checkpoints: Checkpoints | None = None,
                 memory: dict[str, Any] | None = None) -> None:
        super().__init__(config.num_episodes,
                         np.zeros((num_seeds, 0, len(config.teams)), np.float32),
                         folder=None if checkpoints is None else checkpoints.directory)
        self.config, self.seed, self.num_seeds, self.mesh = config, seed, num_seeds, mesh
        self.memory = memory  # the run's memory plan, saved in each checkpoint's meta

    def fingerprint(self) -> dict[str, Any]:
        return fingerprint(self.config, self.seed, self.num_seeds)

    def init(self) -> TrainState:
        keys = np.asarray(seed_keys(self.seed, self.num_seeds))  # placed shard by shard
        keys = jax.make_array_from_callback(keys.shape, _split(self.mesh), lambda i: keys[i])
        return make_init_seeds(self.config, self.mesh)(keys)

    def template(self, step: int) -> dict[str, Any]:
        return _template(self.config, self.num_seeds, step)

    def load(self, restored: driver.Restored) -> tuple[TrainState, np.ndarray]:
        return (jax.device_put(restored.tree["state"], _split(self.mesh)),
                np.asarray(restored.tree["episode_return"], np.float32))

    def program_key(self, start: int, n: int) -> Any:
        return make_schedule(self.config, n, start)

    def compile(self, state: TrainState, start: int, n: int) -> Any:
        return make_train_seeds_from(self.config, n, self.mesh, start).lower(state).compile()

    def execute(self, program: Any, state: TrainState, start: int, n: int,
                ) -> tuple[TrainState, np.ndarray, np.ndarray]:
        state, metrics = program(state)
        returns = _to_host(metrics["episode_return"])  # waits for the segment
        return state, returns, returns

    def snapshot(self, state: TrainState, episode: int) -> tuple[dict[str, Any], dict[str, Any]]:
        meta = {"episodes_done": episode, "num_episodes": self.total,
                "num_seeds": self.num_seeds}
        if self.memory is not None:
            meta["memory"] = self.memory
        return {"state": state, "episode_return": self.curve()}, meta

    def timing(self, outcome: runner.Outcome) -> dict[str, float]:
        """``init`` (building or restoring the start state), then the base's timings."""
        return {"init": outcome.timing_s["start"], **super().timing(outcome)}

    def report(self, outcome: runner.Outcome) -> dict[str, Any]:
        """The curve, the timings and ``devices`` (the mesh size)."""
        return {**super().report(outcome), "devices": int(self.mesh.devices.size)}


def evaluate_seeds(config: MARLConfig, actors: tuple[Any, ...], key: jax.Array,
                   num_episodes: int) -> np.ndarray:
    """Greedy-policy returns of every seed: ``actors`` is the stacked ``state.teams[t].actor``
    of each team (leaves ``[S, ...]``); returns float ``[S, num_episodes, num_teams]`` (as
    :func:`jaxrl_pim.marl.policies.evaluate`, every seed on the same initial worlds: episode
    ``i`` starts from ``fold_in(key, i)``), one vmapped program for all seeds."""
    from jaxrl_pim.marl.policies import _episode

    n = check_int("num_episodes", num_episodes, lo=1)
    keys = jax.vmap(lambda i: jax.random.fold_in(key, i))(jnp.arange(n))

    def one(params: tuple[Any, ...]) -> jax.Array:
        return jax.vmap(_episode(config, "greedy", record=False), in_axes=(None, 0))(params,
                                                                                      keys)

    return _to_host(jax.jit(jax.vmap(one))(tuple(actors))).astype(np.float64)


def plot_curves(episode_return: np.ndarray, team_names: Sequence[str], path: str,
                title: str = "") -> None:
    """Learning curves of a group of seeds as a PNG at ``path``: per team the mean over seeds
    of ``episode_return [S, episodes, teams]`` (smoothed over ``episodes / 50`` episodes)
    with its 95 % interval as a band (Student's t over seeds)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from jaxrl_pim.report import atomic_save

    r = np.asarray(episode_return, np.float64)
    s, e, _ = r.shape
    w = max(1, e // 50)
    if w > 1:  # moving average per seed, over full windows
        c = np.cumsum(np.pad(r, ((0, 0), (1, 0), (0, 0))), axis=1)
        r = (c[:, w:] - c[:, :-w]) / w
    x = np.arange(r.shape[1]) + w
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for t, name in enumerate(team_names):
        mean = r[:, :, t].mean(axis=0)
        ax.plot(x, mean, label=f"{name} (mean of {s} seeds)")
        if s > 1:
            half = t_quantile_975(s - 1) * r[:, :, t].std(axis=0, ddof=1) / math.sqrt(s)
            ax.fill_between(x, mean - half, mean + half, alpha=0.25, label=f"{name} 95 % CI")
    ax.set_xlabel("episode")
    ax.set_ylabel("episode return" + (f" ({w}-episode mean)" if w > 1 else ""))
    if title:
        ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    try:
        atomic_save(path, lambda tmp: fig.savefig(tmp, format="png", dpi=100))
    finally:
        plt.close(fig)
