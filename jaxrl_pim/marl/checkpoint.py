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
    result.state, result.episode_return      # the final state, the whole learning curve
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import numpy as np

import jaxrl_pim.checkpoint as driver
from jaxrl_pim.checkpoint import Checkpoints, default_every
from jaxrl_pim.checks import check_int
from jaxrl_pim.marl import rules
from jaxrl_pim.marl.config import MARLConfig
from jaxrl_pim.marl.trainer import TrainState, make_env, make_init, make_train_from

__all__ = [
    "Run",
    "default_every",
    "fingerprint",
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


def _num_teams(config: MARLConfig) -> int:
    return len(make_env(config)[0].teams)


def template(config: MARLConfig, episodes_done: int,
             algorithm: rules.Algorithm | None = None) -> dict[str, Any]:
    """Shapes and dtypes of checkpoint ``episodes_done``: ``{"state": TrainState,
    "episode_return": [episodes_done, num_teams] float32}``."""
    state = jax.eval_shape(make_init(config, algorithm), jax.random.PRNGKey(0))
    curve = jax.ShapeDtypeStruct((episodes_done, _num_teams(config)), np.float32)
    return {"state": state, "episode_return": curve}


def starting_state(
    config: MARLConfig, key: jax.Array, checkpoints: Checkpoints | None = None, *,
    resume: bool = False, algorithm: rules.Algorithm | None = None,
) -> tuple[TrainState, np.ndarray]:
    """The state a run starts from and its learning curve so far ``[episodes, num_teams]``.

    Without ``checkpoints`` (or in an empty folder) a fresh state from ``key``. With
    ``resume`` the folder's newest checkpoint that restores and verifies (a damaged newer one
    is named in one line on stderr and kept as ``damaged-<step>``); without it a folder that
    already holds checkpoints is refused (ValueError,
    :func:`jaxrl_pim.checkpoint.restore_latest`), so a run never silently overwrites
    another's. A checkpoint of another kind of run or another
    configuration (the folder's fingerprint), or one past ``config.num_episodes``, is refused
    too.
    """
    if checkpoints is not None and resume:
        checkpoints.check_record()  # another kind of run or configuration: before any work
    restored = driver.restore_latest(checkpoints, lambda step: template(config, step, algorithm),
                                     resume=resume, unit="episode")
    if restored is None:
        state = jax.jit(make_init(config, algorithm))(key)
        return state, np.zeros((0, _num_teams(config)), np.float32)
    if restored.step > config.num_episodes:
        raise ValueError(
            f"num_episodes ({config.num_episodes}) is below the checkpoint's episode count "
            f"({restored.step}) in {str(checkpoints.directory)!r}; pass a larger total")
    state = restored.tree["state"]
    if int(state.episode) != restored.step:
        raise ValueError(f"checkpoint {restored.step} of {str(checkpoints.directory)!r} holds "
                         f"episode {int(state.episode)}")
    return state, np.asarray(restored.tree["episode_return"], np.float32)


class Run(NamedTuple):
    """What :func:`run` / :func:`train_segments` return.

    ``state``: the final :class:`~jaxrl_pim.marl.trainer.TrainState`; ``episode_return``
    float32 ``[num_episodes, num_teams]``: the whole run's learning curve (also the episodes
    before a resume); ``start_episode``: episodes restored from a checkpoint (0 for a fresh
    run); ``checkpoints_written``; ``timing_s``: ``compile``, ``train`` and ``checkpoint``
    seconds of this call.
    """

    state: TrainState
    episode_return: np.ndarray
    start_episode: int
    checkpoints_written: int
    timing_s: dict[str, float]


# Compiled segment programs of this process, by (config without num_episodes, length): a run
# resumed or extended in the same process compiles nothing again. Only runs without a callback
# or custom algorithm are kept (those carry objects the key cannot compare).
_PROGRAMS: dict[tuple[MARLConfig, int], Any] = {}
_MAX_PROGRAMS = 8


def _segment_program(config: MARLConfig, n: int, state: TrainState,
                     callback: Callable[..., Any] | None,
                     algorithm: rules.Algorithm | None) -> Any:
    """``make_train_from(config, n)`` compiled for ``state`` (which it donates)."""
    key = (dataclasses.replace(config, num_episodes=0), n)
    cacheable = callback is None and algorithm is None
    if cacheable and key in _PROGRAMS:
        return _PROGRAMS[key]
    train_from = make_train_from(config, n, callback=callback, algorithm=algorithm)
    program = jax.jit(train_from, donate_argnums=0).lower(state).compile()
    if cacheable:
        if len(_PROGRAMS) >= _MAX_PROGRAMS:
            _PROGRAMS.pop(next(iter(_PROGRAMS)))
        _PROGRAMS[key] = program
    return program


def train_segments(
    config: MARLConfig, state: TrainState, episode_return: np.ndarray,
    checkpoints: Checkpoints | None = None, *, every: int | None = None,
    callback: Callable[..., Any] | None = None, algorithm: rules.Algorithm | None = None,
) -> Run:
    """Train ``state`` up to ``config.num_episodes`` episodes, saving a checkpoint after every
    segment when ``checkpoints`` is given (:func:`jaxrl_pim.checkpoint.run_segments`: segments end
    at multiples of ``every``, default :func:`jaxrl_pim.checkpoint.default_every`, and at the end;
    without checkpoints the rest is one segment).

    ``episode_return`` is the curve so far (from :func:`starting_state`); ``callback(episode,
    total, metrics)`` is called about 200 times per segment with the run's total.
    """
    total = config.num_episodes
    start = int(state.episode)
    if start > total:
        raise ValueError(f"num_episodes ({total}) is below the state's episode count ({start})")
    if episode_return.shape[0] != start:
        raise ValueError(f"episode_return holds {episode_return.shape[0]} episodes, the state "
                         f"{start}")
    every = default_every(total) if every is None else check_int("every", every, lo=1)
    report = None if callback is None else (lambda done, _seg_total, m: callback(done, total, m))
    compile_s = 0.0
    curve = [episode_return]

    def train_from(state: TrainState, n: int) -> tuple[TrainState, np.ndarray]:
        nonlocal compile_s
        t0 = time.perf_counter()
        program = _segment_program(config, n, state, report, algorithm)
        compile_s += time.perf_counter() - t0
        state, metrics = program(state)
        returns = np.asarray(metrics["episode_return"])  # waits for the segment
        curve.append(returns)
        return state, returns

    def snapshot(state: TrainState, episode: int) -> tuple[dict[str, Any], dict[str, int]]:
        return ({"state": state, "episode_return": np.concatenate(curve)},
                {"episodes_done": episode, "num_episodes": total})

    plan = driver.Plan(start, total, None if checkpoints is None else every)
    done = driver.run_segments(train_from, state, plan, checkpoints, snapshot=snapshot)
    timing = {"compile": compile_s, "train": done.timing_s["train"] - compile_s,
              "checkpoint": done.timing_s["checkpoint"]}
    return Run(done.state, np.concatenate(curve), start, done.checkpoints_written, timing)


def run(
    config: MARLConfig, key: jax.Array, checkpoints: Checkpoints | None = None, *,
    every: int | None = None, resume: bool = False,
    callback: Callable[..., Any] | None = None, algorithm: rules.Algorithm | None = None,
) -> Run:
    """A whole run from ``key`` (or, with ``resume``, from the newest checkpoint of
    ``checkpoints``) to ``config.num_episodes``: :func:`starting_state`, then
    :func:`train_segments`. ``algorithm`` replaces the rules named by ``config.algo`` (it is
    not part of the fingerprint: resume with the same one)."""
    state, curve = starting_state(config, key, checkpoints, resume=resume, algorithm=algorithm)
    return train_segments(config, state, curve, checkpoints, every=every, callback=callback,
                          algorithm=algorithm)
