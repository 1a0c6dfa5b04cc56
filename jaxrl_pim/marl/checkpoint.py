"""Long MARL runs that survive being killed: checkpoints every few episodes, resumed bit for bit.

A run is trained in segments of ``every`` episodes (``make_train_from``, one compiled program
per segment length); after each segment the whole train state (networks, Adam moments, replay
buffers, sampler priorities, env state, RNG key, counters) and the learning curve so far
(``episode_return [episodes done, num_teams]``) are saved as checkpoint ``<episodes done>`` of a
:class:`jaxrl_pim.checkpoint.Checkpoints` folder (orbax, written atomically, the newest few
kept). Segments end at multiples of ``every`` (and at the run's end), so a run and its
resumption use the same programs.

The RNG key and all counters live in the state, and segments are the same computation as one
long program, so a run killed at any moment and resumed from its newest checkpoint ends with
the state an uninterrupted run ends with, bit for bit (tested with SIGKILL through
``jaxrl-pim marl``). A checkpoint records a :func:`fingerprint` of its run (the config without
``num_episodes``, the predator-prey composition resolved, and the seed or key): restoring into
a run that differs raises ``ValueError`` naming the first differing field, and a longer
``num_episodes`` extends a finished run.

Example::

    from jaxrl_pim.checkpoint import Checkpoints
    from jaxrl_pim.marl import checkpoint

    folder = Checkpoints("runs/spread3", fingerprint=checkpoint.fingerprint(config, seed=0))
    result = checkpoint.run(config, jax.random.PRNGKey(0), folder, every=100, resume=True)
    result.state, result.curve      # the final state, the whole learning curve (episode_return)
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import numpy as np

import jaxrl_pim.checkpoint as driver
from jaxrl_pim import runner
from jaxrl_pim.checkpoint import Checkpoints
from jaxrl_pim.marl import rules
from jaxrl_pim.marl.config import MARLConfig
from jaxrl_pim.marl.trainer import (
    TrainState,
    make_init,
    piece_program,
)

__all__ = [
    "MARLLearner",
    "fingerprint",
    "recorded_run",
    "run",
    "starting_state",
    "template",
    "train_segments",
]

# Config fields that may differ between the saved run and the resumed one.
_RESUMABLE_FIELDS = ("num_episodes",)


def fingerprint(config: MARLConfig, key: jax.Array | None = None, *,
                seed: int | None = None) -> dict[str, Any]:
    """What a checkpoint of this run must match (:func:`jaxrl_pim.checkpoint.fingerprint`): the
    config without ``num_episodes`` (a predator-prey preset and the same sizes given in full
    compare equal), and the ``seed`` (when given) or else the raw data of the start ``key``."""
    if config.env == "tag":
        agents, prey, obstacles = config.tag_sizes
        config = dataclasses.replace(config, num_agents=agents, num_prey=prey,
                                     num_obstacles=obstacles)
    if seed is not None:
        return driver.fingerprint(config, exclude=_RESUMABLE_FIELDS, seed=int(seed))
    return driver.fingerprint(config, exclude=_RESUMABLE_FIELDS, key=key)


def recorded_run(folder: str | Path) -> dict[str, Any] | None:
    """The record of the newest checkpoint of ``folder`` whose record reads (``{"fingerprint":
    ..., "meta": ...}``, a damaged newer one passed over), read without a template and without
    loading any array; None when ``folder`` is not a folder or holds no readable record. What a
    resume or an evaluation reads first: the run's configuration and its memory plan
    (``meta["memory"]``)."""
    if not Path(folder).is_dir():
        return None
    with Checkpoints(folder) as reader:
        for step in reversed(reader.steps()):
            try:
                return reader.record(step)
            except driver.Damaged:
                continue
    return None


def _num_teams(config: MARLConfig) -> int:
    return len(config.teams)


def template(config: MARLConfig, episodes_done: int,
             algorithm: rules.Algorithm | None = None) -> dict[str, Any]:
    """Shapes and dtypes of checkpoint ``episodes_done``: ``{"state": TrainState,
    "episode_return": [episodes_done, num_teams] float32}``."""
    state = jax.eval_shape(make_init(config, algorithm), jax.random.PRNGKey(0))
    curve = jax.ShapeDtypeStruct((episodes_done, _num_teams(config)), np.float32)
    return {"state": state, "episode_return": curve}


class MARLLearner(runner.SegmentedLearner):
    """The MARL trainer as a :class:`jaxrl_pim.runner.Learner` (one object per run): units are
    episodes, the state a :class:`~jaxrl_pim.marl.trainer.TrainState`, a checkpoint
    :func:`template` (the state and the learning curve so far, ``episode_return [episodes
    done, num_teams]`` float32); segments are ``make_train_from(config, n,
    start_episode=done)`` programs (:func:`~jaxrl_pim.marl.trainer.piece_program`, kept per
    process by static plan), one per segment start and length.

    ``callback(episode, total, metrics)`` is called about 200 times per segment with the run's
    total; ``memory`` the run's memory plan (JSON values, e.g. ``jaxrl-pim marl``'s
    :func:`~jaxrl_pim.cli.marl.fit_memory` record), saved in every checkpoint's meta record
    (``meta["memory"]``) for a resume or an evaluation to check before it loads anything.
    ``folder``: the checkpoint folder, named in messages.
    """

    unit = "episode"
    total_name = "num_episodes"

    def __init__(self, config: MARLConfig, key: jax.Array | None = None, *,
                 seed: int | None = None, algorithm: rules.Algorithm | None = None,
                 callback: Callable[..., Any] | None = None,
                 memory: dict[str, Any] | None = None, folder: Any = None) -> None:
        super().__init__(config.num_episodes, np.zeros((0, _num_teams(config)), np.float32),
                         folder=folder)
        self.config, self.key, self.seed, self.algorithm = config, key, seed, algorithm
        self.memory = memory
        total = self.total
        self._report = (None if callback is None else
                        (lambda done, _seg_total, m: callback(done, total, m)))

    def fingerprint(self) -> dict[str, Any]:
        return fingerprint(self.config, self.key, seed=self.seed)

    def init(self) -> TrainState:
        if self.key is None:
            raise ValueError("a fresh MARL run needs a key")
        return jax.jit(make_init(self.config, self.algorithm))(self.key)

    def template(self, step: int) -> dict[str, Any]:
        return template(self.config, step, self.algorithm)

    def load(self, restored: driver.Restored) -> tuple[TrainState, np.ndarray]:
        state = restored.tree["state"]
        self.check_count(restored, int(state.episode))
        return state, np.asarray(restored.tree["episode_return"], np.float32)

    def program_key(self, start: int, n: int) -> tuple[int, int]:
        return start, n  # the static schedule (and a callback's episodes) start at start

    def compile(self, state: TrainState, start: int, n: int) -> Any:
        return piece_program(self.config, n, state, start_episode=start,
                             callback=self._report, algorithm=self.algorithm)

    def execute(self, program: Any, state: TrainState, start: int, n: int,
                ) -> tuple[TrainState, np.ndarray, np.ndarray]:
        state, metrics = program(state)
        returns = np.asarray(metrics["episode_return"])  # waits for the segment
        return state, returns, returns

    def snapshot(self, state: TrainState, episode: int) -> tuple[dict[str, Any], dict[str, Any]]:
        meta: dict[str, Any] = {"episodes_done": episode, "num_episodes": self.total}
        if self.memory is not None:
            meta["memory"] = self.memory
        return {"state": state, "episode_return": self.curve()}, meta


def starting_state(
    config: MARLConfig, key: jax.Array, checkpoints: Checkpoints | None = None, *,
    resume: bool = False, algorithm: rules.Algorithm | None = None,
) -> tuple[TrainState, np.ndarray]:
    """The state a run starts from and its learning curve so far ``[episodes, num_teams]``
    (:func:`jaxrl_pim.runner.start` of a :class:`MARLLearner`).

    Without ``checkpoints`` (or in an empty folder) a fresh state from ``key``. With
    ``resume`` the folder's newest checkpoint that restores and verifies (a damaged newer one
    is named in one line on stderr and kept as ``damaged-<step>``); without it a folder that
    already holds checkpoints is refused (ValueError,
    :func:`jaxrl_pim.runner.restore_latest`), so a run never silently overwrites
    another's. A checkpoint of another kind of run or another
    configuration (the folder's fingerprint), or one past ``config.num_episodes``, is refused
    too.
    """
    learner = MARLLearner(config, key, algorithm=algorithm, folder=_folder(checkpoints))
    begin = runner.start(learner, checkpoints, resume=resume)
    return begin.state, learner.curve()


def _folder(checkpoints: Checkpoints | None) -> Any:
    return None if checkpoints is None else checkpoints.directory


#: About this many progress reports over a run drawn from the host (:func:`progress_every`).
PROGRESS_REPORTS = 50


def progress_every(config: MARLConfig, start: int, every: int | None = None) -> int:
    """Episodes between two progress reports drawn from the host (:func:`train_segments`'s
    ``progress``): about :data:`PROGRESS_REPORTS` over the rest of the run from ``start``, a
    multiple of the episodes of one update cycle (``lcm(env steps per episode, update_every)``
    env steps), so every whole piece after the warm-up starts at the same phase of the cycle
    and runs one compiled program; with checkpoints every ``every`` episodes, a divisor of it
    that is such a multiple (``every`` itself when there is none), so reports never cut a
    checkpoint period unevenly."""
    steps = config.episode_length * config.num_envs
    cycle = math.lcm(steps, config.update_every) // steps
    want = max(cycle, -(-max(1, (config.num_episodes - start) // PROGRESS_REPORTS)
                       // cycle) * cycle)
    if every is None:
        return want
    fits = [d for d in range(cycle, every + 1, cycle) if every % d == 0 and d <= want]
    return max(fits) if fits else every


def train_segments(
    config: MARLConfig, state: TrainState, episode_return: np.ndarray,
    checkpoints: Checkpoints | None = None, *, every: int | None = None,
    callback: Callable[..., Any] | None = None, algorithm: rules.Algorithm | None = None,
    memory: dict[str, Any] | None = None,
    progress: Callable[[int, int, dict[str, float]], Any] | None = None,
) -> runner.Outcome:
    """Train ``state`` up to ``config.num_episodes`` episodes, saving a checkpoint after every
    segment when ``checkpoints`` is given (:func:`jaxrl_pim.runner.run` of a
    :class:`MARLLearner`: segments end at multiples of ``every``, default
    :func:`jaxrl_pim.runner.default_every`, and at the end; without checkpoints the rest is
    one segment).

    ``episode_return`` is the curve so far (from :func:`starting_state`); ``callback(episode,
    total, metrics)`` is called about 200 times per segment with the run's total, from inside
    the compiled program (a host callback: jax's persistent compilation cache never keeps such
    a program); ``progress(episode, total, {"return": ...})`` instead is called from the host
    between pieces of :func:`progress_every` episodes (the last piece's mean episode return),
    whose programs hold no callback and are cached; ``memory`` the run's memory plan, recorded
    in every checkpoint (:class:`MARLLearner`).

    Returns a :class:`jaxrl_pim.runner.Outcome`: the final ``state``
    (:class:`~jaxrl_pim.marl.trainer.TrainState`), ``start`` (episodes before this call),
    ``done``, ``checkpoints_written``, ``curve`` (float32 ``[num_episodes, num_teams]``, the
    whole run's ``episode_return``, also the episodes before a resume) and ``timing_s``
    (``compile``, ``train`` and ``checkpoint`` seconds of this call).
    """
    total, start = config.num_episodes, int(state.episode)
    learner = MARLLearner(config, callback=callback, algorithm=algorithm, memory=memory,
                          folder=_folder(checkpoints))
    learner.begin(start, np.asarray(episode_return, np.float32))
    report, report_every = None, None
    if progress is not None:
        period = (every or runner.default_every(total)) if checkpoints is not None else None
        report_every = progress_every(config, start, period)

        def report(done: int, _total: int, returns: np.ndarray) -> None:
            progress(done, total, {"return": float(returns[-1].mean())} if len(returns) else {})

    return runner.run(learner, checkpoints, every=every, callback=report,
                      begin=runner.Start(state, start), report_every=report_every)


def run(
    config: MARLConfig, key: jax.Array, checkpoints: Checkpoints | None = None, *,
    every: int | None = None, resume: bool = False,
    callback: Callable[..., Any] | None = None, algorithm: rules.Algorithm | None = None,
) -> runner.Outcome:
    """A whole run from ``key`` (or, with ``resume``, from the newest checkpoint of
    ``checkpoints``) to ``config.num_episodes``: :func:`jaxrl_pim.runner.run` of a
    :class:`MARLLearner`. ``algorithm`` replaces the rules named by ``config.algo`` (it is
    not part of the fingerprint: resume with the same one). Returns the
    :class:`jaxrl_pim.runner.Outcome` of :func:`train_segments` (``start``: episodes restored
    from a checkpoint, 0 for a fresh run)."""
    learner = MARLLearner(config, key, callback=callback, algorithm=algorithm,
                          folder=_folder(checkpoints))
    return runner.run(learner, checkpoints, every=every, resume=resume)
