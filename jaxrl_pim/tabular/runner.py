"""Host-side driver for one tabular run with the paper's time breakdown.

Phases (seconds, wall clock, each blocked until the device is done):

* ``prepare``: validation and chunking on the host (no device work);
* ``transfer_in``: host -> device copy of the chunked dataset (sharded over the mesh);
* ``compile``: tracing and XLA compilation of the trainer (not part of the paper's figures);
* ``compute``: the trainer's run time minus the estimated ``sync`` time;
* ``sync``: ``num_rounds`` x the time of the sync step measured in isolation (lane mean and
  broadcast, with the cross-device reduction when several devices are used);
* ``transfer_out``: device -> host copy of the final Q-table.

``total`` sums the phases except ``compile``. ``updates_per_s`` counts every lane's updates
(``C * m * episodes``) over ``compute + sync``.

Across processes (after ``jax.distributed.initialize``, see :mod:`jaxrl_pim.distributed`) the
mesh spans every process's devices and the trainer runs unchanged on it. Each process holds
the chunks of a contiguous range of lanes (:func:`process_lanes`), builds only those (the
dataset rows :func:`process_rows` names) and hands them over as process-local data of the
global chunk array; the sync's ``psum`` then crosses processes. Lane ``c`` gets rows
``c * m .. (c + 1) * m`` of the dataset whatever the layout, so the results equal one
process's with the same device count (bit for bit for int32). Every process gets the final
Q-table; the phases are timed on each process for its own part.

The result is a :class:`jaxrl_pim.runner.Outcome` (:func:`run`). Checkpoints
(``checkpoints=``, a :class:`~jaxrl_pim.checkpoint.Checkpoints` folder): the run goes in
segments of ``checkpoint_every`` whole sync rounds (:func:`jaxrl_pim.runner.run` of a
:class:`TabularLearner`, one compiled :func:`make_train_from` program per segment length
continues from any round) and after each segment the
:class:`~jaxrl_pim.tabular.trainer.TabularState` (tables, lane LCG states, the key as raw data,
round counter; host arrays) and the ``q_delta`` of the rounds so far are saved as checkpoint
``<rounds done>`` (:func:`checkpoint_template`); with
``resume`` the run continues from the newest one. The final table equals an uninterrupted
run's bit for bit in every format. Extra phases: ``checkpoint`` (saving and restoring). Across
processes every process gets the whole state after each segment and calls the saves and
restores with it, and orbax writes the files from process 0; to resume, every process reads
the folder, so it must be one that every process sees (the same path on a shared file system
across hosts).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from jaxrl_pim import runner
from jaxrl_pim.checkpoint import Checkpoints, Restored, fingerprint
from jaxrl_pim.data.transitions import Dataset
from jaxrl_pim.distributed import failed_processes
from jaxrl_pim.tabular.config import episodes_in_rounds  # the one rounds arithmetic
from jaxrl_pim.tabular.trainer import (
    Callback,
    TabularConfig,
    TabularState,
    chunk,
    dropped_rows,
    init_state,
    make_mesh,
    make_sync,
    make_train_from,
    q_table,
)
from jaxrl_pim.timing import PhaseTimer, time_call


def checkpoint_template(config: TabularConfig, key: jax.Array) -> dict[str, Any]:
    """Shapes and dtypes of a tabular checkpoint: ``{"state": TabularState, "q_delta": [R]}``.

    The state's ``key`` is stored as its raw data (``jax.random.key_data``, uint32);
    ``q_delta`` holds the rounds done so far, zeros after them.
    """
    state = jax.eval_shape(lambda k: init_state(config, k), key)
    raw = jax.eval_shape(jax.random.key_data, key)
    return {"state": state._replace(key=raw),
            "q_delta": jax.ShapeDtypeStruct((config.num_rounds,), np.float32)}


def _raw_segment(config: TabularConfig, num_rounds: int, mesh: Mesh | None,
                 callback: Callback | None, key: jax.Array):
    """:func:`make_train_from` over a state whose key is raw key data, so every call takes
    host arrays (the same kind of input each time, also across processes)."""
    train_from = make_train_from(config, num_rounds, mesh, callback)
    impl = jax.random.key_impl(key)

    def segment(state: TabularState, chunks: Dataset):
        state = state._replace(key=jax.random.wrap_key_data(state.key, impl=impl))
        state, metrics = train_from(state, chunks)
        return state._replace(key=jax.random.key_data(state.key)), metrics

    return segment


def run_mesh(config: TabularConfig, num_devices: int | None = None) -> Mesh:
    """The mesh :func:`run` uses: ``num_devices`` devices, by default the largest number of
    visible devices that divides ``num_cores``. Across processes it spans every device of
    every process (``num_devices`` None or the global count; ``num_cores`` must divide)."""
    total = len(jax.devices())
    if jax.process_count() > 1:
        if num_devices not in (None, total):
            raise ValueError(
                f"devices={num_devices}: a multi-process run uses every device of every "
                f"process ({total}); leave --devices out")
        if config.num_cores % total:
            raise ValueError(
                f"num_cores={config.num_cores} is not divisible by the {total} devices of the "
                f"{jax.process_count()} processes; choose --cores so that it divides")
        return make_mesh(total)
    if num_devices is None:
        num_devices = max(d for d in range(1, total + 1) if config.num_cores % d == 0)
    mesh = make_mesh(num_devices)
    if config.num_cores % mesh.devices.size:
        raise ValueError(
            f"num_cores={config.num_cores} is not divisible by the {mesh.devices.size} devices "
            "in use; choose --devices or --cores so that it divides"
        )
    return mesh


def process_lanes(config: TabularConfig, mesh: Mesh) -> tuple[int, int]:
    """Lanes ``(lo, hi)`` whose chunks this process holds on ``mesh`` (all in one process)."""
    sharding = NamedSharding(mesh, P(mesh.axis_names[0]))
    spans = sorted((s[0].start or 0, s[0].stop or config.num_cores) for s in
                   sharding.addressable_devices_indices_map((config.num_cores,)).values())
    lo, hi = spans[0][0], spans[-1][1]
    if sum(b - a for a, b in set(spans)) != hi - lo:
        raise ValueError(f"this process's devices hold lanes {spans}, not one contiguous range")
    return lo, hi


def process_rows(config: TabularConfig, num_rows: int, lanes: tuple[int, int]) -> tuple[int, int]:
    """Rows ``(start, stop)`` of a dataset of ``num_rows`` rows (of agents ``[K, n]`` in
    independent mode) that lanes ``lanes`` train on: lane ``c`` takes ``c * m .. (c + 1) * m``
    with ``m = num_rows // num_cores`` (see :func:`~jaxrl_pim.tabular.chunk`)."""
    lo, hi = lanes
    if config.independent:
        if num_rows != config.num_cores:
            raise ValueError(f"independent mode needs num_cores={config.num_cores} per-agent "
                             f"datasets; got {num_rows}")
        return lo, hi
    m = num_rows // config.num_cores
    if m == 0:
        raise ValueError(
            f"num_cores={config.num_cores} exceeds the dataset size {num_rows}: "
            "every lane needs at least one transition"
        )
    return lo * m, hi * m


def _process_chunks(
    config: TabularConfig, transitions: Dataset, lanes: tuple[int, int],
    num_rows: int | None,
) -> tuple[Dataset, int]:
    """This process's chunks ``[hi - lo, m]`` and the whole dataset's row count (or agents)."""
    lo, hi = lanes
    if num_rows is None:  # the whole dataset: validate all of it, keep this process's lanes
        chunks = chunk(config, transitions)
        whole = transitions.shape[0]
        if (lo, hi) == (0, config.num_cores):
            return chunks, whole
        return Dataset(*(np.asarray(x)[lo:hi] for x in chunks)), whole
    start, stop = process_rows(config, num_rows, lanes)
    want = (stop - start,) if not config.independent else (stop - start, *transitions.shape[1:])
    if transitions.shape[:1] != want[:1]:
        raise ValueError(f"this process holds lanes {lo}..{hi - 1}: it needs rows "
                         f"{start}..{stop - 1} of the {num_rows} ({stop - start}), got "
                         f"{transitions.shape[0]}")
    local = dataclasses.replace(config, num_cores=hi - lo)
    return chunk(local, transitions), num_rows


def run(
    config: TabularConfig,
    transitions: Dataset,
    key: jax.Array,
    num_devices: int | None = None,
    callback: Callback | None = None,
    *,
    num_rows: int | None = None,
    checkpoints: Checkpoints | None = None,
    checkpoint_every: int | None = None,
    resume: bool = False,
) -> runner.Outcome:
    """Train on ``num_devices`` devices (see :func:`run_mesh`) and time every phase.

    Returns a :class:`jaxrl_pim.runner.Outcome`: the final ``state``, ``start`` (sync rounds
    restored from a checkpoint; 0 for a fresh run), ``done``, ``checkpoints_written``,
    ``timing_s`` (seconds per phase, see the module docstring, plus ``total``), ``curve``
    (float32 ``[num_rounds]``: ``q_delta`` per sync round, the rounds before a resume
    included) and the report fields ``q_table`` (float32 NumPy ``[S, A]``, ``[K, S, A]`` in
    independent mode, descaled), ``updates`` (Q-updates over all lanes and processes of the
    rounds run by this call), ``updates_per_s`` (``updates / (compute + sync)``),
    ``dropped_rows`` (dataset rows left out by chunking), ``num_devices`` and
    ``num_processes`` (all processes') and ``lanes`` (``(lo, hi)``, this process's lanes).

    ``transitions`` is the whole dataset (``[M]``, or ``[K, n]`` in independent mode), or,
    with ``num_rows`` (the whole dataset's ``M``, or ``K``), only the rows this process's lanes
    train on (:func:`process_rows`). Across processes every process calls ``run`` with the
    same arguments but its own rows; a data error in any process stops all of them.

    With ``checkpoints`` the run is saved every ``checkpoint_every`` sync rounds (default
    :func:`jaxrl_pim.runner.default_every` of ``num_rounds``) and at its end (see the module
    docstring). ``resume`` continues from the folder's newest checkpoint (from round 0 when it
    has none); without ``resume`` a folder that already holds checkpoints is refused
    (ValueError), as is a checkpoint of another configuration (the folder's fingerprint).
    """
    timer = PhaseTimer()
    mesh = run_mesh(config, num_devices)
    lanes = process_lanes(config, mesh)
    device_chunks, whole = _chunks_on_devices(config, transitions, mesh, lanes, num_rows,
                                              timer)
    use_mesh = mesh if mesh.devices.size > 1 else None
    # across processes every process reads the whole table: gather it inside the program
    out = NamedSharding(mesh, P()) if jax.process_count() > 1 else None
    learner = TabularLearner(config, key, device_chunks, use_mesh, callback,
                             out_sharding=out, host_state=checkpoints is not None,
                             folder=None if checkpoints is None else checkpoints.directory)
    outcome = runner.run(learner, checkpoints, every=checkpoint_every, resume=resume)
    timer.add("compile", outcome.timing_s["compile"])
    if checkpoints is not None:  # restoring and saving
        timer.add("checkpoint", outcome.timing_s["start"] + outcome.timing_s["checkpoint"])
    run_s = outcome.timing_s["train"]
    sync_s = min(_sync_seconds(config, mesh, lanes), run_s)
    timer.add("compute", run_s - sync_s)
    timer.add("sync", sync_s)
    with timer.phase("transfer_out"):
        q_host = np.asarray(jax.device_get(outcome.report["q_table"]))
    timing = timer.as_dict(total=False)
    timing["total"] = sum(v for k, v in timing.items() if k != "compile")
    episodes = episodes_in_rounds(config, outcome.start, config.num_rounds)
    updates = config.num_cores * device_chunks.shape[1] * episodes
    return outcome._replace(timing_s=timing, report={
        "q_table": q_host, "updates": updates, "updates_per_s": updates / max(run_s, 1e-12),
        "dropped_rows": 0 if config.independent else dropped_rows(config, whole),
        "num_devices": mesh.devices.size, "num_processes": jax.process_count(),
        "lanes": lanes})


def _chunks_on_devices(
    config: TabularConfig, transitions: Dataset, mesh: Mesh, lanes: tuple[int, int],
    num_rows: int | None, timer: PhaseTimer,
) -> tuple[Dataset, int]:
    """The chunks ``[num_cores, m]`` split over ``mesh`` (this process's lanes built here,
    phase ``prepare``; copied to the devices, phase ``transfer_in``) and the whole dataset's
    row count; a data error in any process stops every process."""
    with timer.phase("prepare"):
        error: ValueError | None = None
        try:
            chunks, whole = _process_chunks(config, transitions, lanes, num_rows)
        except ValueError as err:
            error = err
        failed = failed_processes(error is None)
        if error is not None:
            raise error
        if failed:
            raise ValueError(f"process {failed[0]} rejected its part of the data (see its "
                             "output)")
    sharding = NamedSharding(mesh, P(mesh.axis_names[0]))
    lane_shape = (config.num_cores, *chunks.shape[1:])
    with timer.phase("transfer_in"):
        device_chunks = timer.block(
            jax.make_array_from_process_local_data(sharding, chunks, lane_shape))
    return device_chunks, whole


def _sync_seconds(config: TabularConfig, mesh: Mesh, lanes: tuple[int, int]) -> float:
    """The run's estimated sync time: ``num_rounds`` x the sync step (lane mean and
    broadcast, across devices on ``mesh``) timed in isolation on the real shapes; 0 in
    independent mode (never averaged)."""
    if config.independent:
        return 0.0
    sync_fn = jax.jit(make_sync(config, mesh if mesh.devices.size > 1 else None))
    shape = (config.num_states, config.num_actions)
    q_lanes = jax.make_array_from_process_local_data(
        NamedSharding(mesh, P(mesh.axis_names[0])),
        np.zeros((lanes[1] - lanes[0], *shape), config.format.storage),
        (config.num_cores, *shape))
    return time_call(lambda: sync_fn(q_lanes), repeats=5) * config.num_rounds


class TabularLearner(runner.SegmentedLearner):
    """The tabular trainer as a :class:`jaxrl_pim.runner.Learner` (one object per run, on
    chunks already on the devices): units are sync rounds, the state a
    :class:`~jaxrl_pim.tabular.trainer.TabularState` whose key is raw key data (host arrays
    with ``host_state``, the checkpointed case, so every segment takes the same kind of input,
    also across processes), a checkpoint :func:`checkpoint_template`. Segments are
    :func:`~jaxrl_pim.tabular.trainer.make_train_from` programs, one per length; the curve is
    ``q_delta`` per round (float32 ``[rounds done]``). ``identity`` is the fingerprint
    (default: the config and the key); ``folder``, the checkpoint folder, is named in messages.
    """

    unit = "round"
    total_name = "num_rounds"

    def __init__(self, config: TabularConfig, key: jax.Array, chunks: Dataset,
                 mesh: Mesh | None = None, callback: Callback | None = None, *,
                 out_sharding: Any = None, host_state: bool = True,
                 identity: dict[str, Any] | None = None, folder: Any = None) -> None:
        super().__init__(config.num_rounds, np.zeros(0, np.float32), folder=folder)
        self.config, self.key, self.chunks, self.mesh = config, key, chunks, mesh
        self.callback, self.out_sharding, self.host_state = callback, out_sharding, host_state
        self.identity = identity
        self.key_data = np.asarray(jax.random.key_data(key))

    def fingerprint(self) -> dict[str, Any]:
        return self.identity if self.identity is not None else fingerprint(
            self.config, key=self.key)

    def init(self) -> TabularState:
        state = init_state(self.config, self.key)._replace(key=self.key_data)
        return jax.tree.map(np.asarray, state)

    def template(self, step: int) -> dict[str, Any]:
        del step
        return checkpoint_template(self.config, self.key)

    def load(self, restored: Restored) -> tuple[TabularState, np.ndarray]:
        state = TabularState(*(np.asarray(x) for x in restored.tree["state"]))
        self.check_count(restored, int(state.round))
        if not np.array_equal(state.key, self.key_data):
            raise ValueError(f"checkpoint {restored.step} of {self.where} was made with "
                             "another key (seed)")
        q_delta = np.array(restored.tree["q_delta"], np.float32)
        return state, q_delta[:restored.step]

    def compile(self, state: TabularState, start: int, n: int) -> Any:
        seg = jax.jit(_raw_segment(self.config, n, self.mesh, self.callback, self.key),
                      out_shardings=self.out_sharding)
        return seg.lower(state, self.chunks).compile()

    def execute(self, program: Any, state: TabularState, start: int, n: int,
                ) -> tuple[TabularState, np.ndarray, Any]:
        state, metrics = jax.block_until_ready(program(state, self.chunks))
        if self.host_state:  # the next segment and the checkpoint take host arrays
            state = jax.tree.map(np.asarray, jax.device_get(state))
        return state, np.asarray(jax.device_get(metrics["q_delta"])), metrics

    def snapshot(self, state: TabularState, rounds: int) -> tuple[Any, dict[str, int]]:
        q_delta = np.zeros(self.config.num_rounds, np.float32)  # zeros after the rounds done
        q_delta[:rounds] = self.curve()
        return ({"state": state, "q_delta": q_delta},
                {"rounds_done": rounds, "num_rounds": self.config.num_rounds,
                 "episodes_done": episodes_in_rounds(self.config, 0, rounds)})

    def timing(self, outcome: runner.Outcome) -> dict[str, float]:
        """``start`` (building or restoring the first state), then the base's timings."""
        return {"start": outcome.timing_s["start"], **super().timing(outcome)}

    def report(self, outcome: runner.Outcome) -> dict[str, Any]:
        """``q_table`` (descaled, on the devices), the curve and the timings."""
        return {"q_table": q_table(self.config, outcome.state), **super().report(outcome)}


def describe(config: TabularConfig) -> dict[str, Any]:
    """Short variant label pieces, e.g. ``{"variant": "Q-SEQ-INT32"}``."""
    algo = {"q": "Q", "sarsa": "SARSA"}[config.algo]
    return {"variant": f"{algo}-{config.sampling.upper()}-{config.dtype.upper()}"}
