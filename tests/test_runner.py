"""jaxrl_pim.runner: the Learner protocol and its host loop, against a plain loop, and the
three commands (tabular, MARL, ActorQ) going through it.

The fake learner's state is ``[sum of the units seen, units done]``; unit ``i`` adds
``i * i``, so the state says exactly which units ran, and a run cut anywhere and resumed must
end with the plain loop's state and curve.
"""

from __future__ import annotations

import dataclasses
import types

import numpy as np
import pytest

from jaxrl_pim import runner
from jaxrl_pim.checkpoint import Checkpoints, fingerprint


@dataclasses.dataclass(frozen=True)
class Config:
    width: int = 3
    total: int = 11


class Killed(Exception):
    """Raised by the fake learner to stop a run mid-way (a crash after a checkpoint)."""


class Squares:
    """A Learner: unit ``i`` adds ``i * i``; a host-side curve of every unit's value."""

    unit = "unit"

    def __init__(self, config: Config, kill_after: int | None = None) -> None:
        self.config, self.total, self.kill_after = config, config.total, kill_after
        self.curve: list[int] = []
        self.segments: list[tuple[int, int]] = []

    def fingerprint(self):
        return fingerprint(self.config, exclude=("total",), seed=0)

    def init(self):
        return np.zeros(2, np.int32)

    def template(self, step):
        return np.zeros(2, np.int32)

    def restore(self, restored):
        self.curve = list(restored.meta["curve"])
        assert int(restored.tree[1]) == restored.step
        return restored.tree

    def train_segment(self, state, n):
        done = int(state[1])
        if self.kill_after is not None and done >= self.kill_after:
            raise Killed(done)
        self.segments.append((done, done + n))
        units = [i * i for i in range(done, done + n)]
        self.curve.extend(units)
        return np.array([state[0] + sum(units), done + n], np.int32), units

    def snapshot(self, state, done):
        return state, {"curve": self.curve, "done": done}

    def report(self, outcome):
        return {"total": int(outcome.state[0]), "curve": list(self.curve)}


def plain_loop(total: int) -> tuple[int, list[int]]:
    curve = [i * i for i in range(total)]
    return sum(curve), curve


def test_fake_learner_satisfies_the_protocol():
    assert isinstance(Squares(Config()), runner.Learner)
    assert not isinstance(object(), runner.Learner)


def test_run_without_checkpoints_is_one_segment_and_matches_a_plain_loop():
    learner = Squares(Config())
    seen = []
    out = runner.run(learner, callback=lambda done, total, units: seen.append((done, total)))
    want_total, want_curve = plain_loop(11)
    assert out.report == {"total": want_total} and out.curve == want_curve
    assert out.total == want_total  # a report field, also an attribute
    assert (out.start, out.done, out.checkpoints_written) == (0, 11, 0)
    assert learner.segments == [(0, 11)] and seen == [(11, 11)]
    assert set(out.timing_s) == {"start", "train", "checkpoint"}


@pytest.mark.parametrize("every, kill_after", [(3, 5), (4, 8), (1, 10), (5, 1)])
def test_killed_and_resumed_run_ends_as_the_plain_loop(tmp_path, every, kill_after):
    cfg = Config()
    with runner.open_checkpoints(Squares(cfg), tmp_path) as ckpt:
        with pytest.raises(Killed):
            runner.run(Squares(cfg, kill_after), ckpt, every=every)
        saved = ckpt.steps()
        # the last segment to run is the one that reaches kill_after: saved at its end
        assert saved[-1] == min(-(-kill_after // every) * every, cfg.total)
        # a folder holding checkpoints is never written over without resume
        with pytest.raises(ValueError, match="already holds checkpoints"):
            runner.run(Squares(cfg), ckpt, every=every)
        resumed = Squares(cfg)
        out = runner.run(resumed, ckpt, every=every, resume=True)
    want_total, want_curve = plain_loop(cfg.total)
    assert out.report == {"total": want_total} and out.curve == want_curve
    assert out.start == saved[-1] and out.done == cfg.total
    # the resumed run's segments end where an uninterrupted run's do
    ends = [stop for _, stop in resumed.segments]
    assert ends == [s for s in [*range(every, cfg.total, every), cfg.total] if s > out.start]
    assert out.checkpoints_written == len(ends)


def test_resume_checks_the_fingerprint_and_the_total(tmp_path):
    with runner.open_checkpoints(Squares(Config()), tmp_path) as ckpt:
        runner.run(Squares(Config()), ckpt, every=4)
    # another configuration: refused, naming the field
    other = Squares(Config(width=4))
    with Checkpoints(tmp_path, fingerprint=other.fingerprint()) as ckpt:
        with pytest.raises(ValueError, match="config.width: saved 3, this run 4"):
            runner.start(other, ckpt, resume=True)
    # a shorter total than the checkpoint's: refused; a longer one extends the run
    with runner.open_checkpoints(Squares(Config(total=5)), tmp_path) as ckpt:
        with pytest.raises(ValueError, match=r"below the checkpoint's unit count \(11\)"):
            runner.start(Squares(Config(total=5)), ckpt, resume=True)
        longer = Squares(Config(total=14))
        out = runner.run(longer, ckpt, every=4, resume=True)
    assert out.start == 11 and out.curve == plain_loop(14)[1]


def test_a_finished_run_resumed_trains_nothing(tmp_path):
    with runner.open_checkpoints(Squares(Config()), tmp_path) as ckpt:
        runner.run(Squares(Config()), ckpt)
        again = Squares(Config())
        out = runner.run(again, ckpt, resume=True)
    assert again.segments == [] and out.checkpoints_written == 0
    assert out.report["total"] == plain_loop(11)[0]


class _Reached(Exception):
    """Raised by the spy in place of the runner's loop: the command got that far."""


#: The MARL flags of the command paths below (a tiny run; nothing is trained).
MARL = ["marl", "--agents", "2", "--episodes", "2", "--num-envs", "2", "--capacity", "100",
        "--batch-size", "8", "--learning-starts", "8", "--no-progress"]
#: The ActorQ flags of the command paths below.
ACTORQ = ["actorq", "--actors", "2", "--steps", "200", "--hidden", "8", "--precision", "int8",
          "--no-progress"]
#: Every command path that trains, and the adapter (module, class) it drives.
COMMANDS = [
    (["tabular", "--transitions", "200", "--cores", "2", "--episodes", "2", "--no-progress"],
     ("jaxrl_pim.tabular.runner", "TabularLearner")),
    ([*MARL, "--no-estimate"], ("jaxrl_pim.marl.checkpoint", "MARLLearner")),
    ([*MARL, "--seeds", "2"], ("jaxrl_pim.marl.seeds", "SeedsLearner")),
    ([*ACTORQ, "--mode", "single"], ("jaxrl_pim.actorq.single", "ActorQLearner")),
    ([*ACTORQ, "--mode", "ray"], ("jaxrl_pim.actorq.distributed", "DistributedLearner")),
    ([*ACTORQ, "--mode", "processes"], ("jaxrl_pim.actorq.distributed", "DistributedLearner")),
]


@pytest.fixture
def spy_run(monkeypatch):
    """``jaxrl_pim.runner.run`` replaced by a spy that records the learner and stops the
    command before any training; ``runner.start`` (which a MARL run calls first, to print
    where it starts) hands over a placeholder state at episode 0 without building one."""
    seen: list[object] = []

    def run(learner, checkpoints=None, **kwargs):
        seen.append(learner)
        raise _Reached

    monkeypatch.setattr(runner, "run", run)
    monkeypatch.setattr(runner, "start", lambda learner, checkpoints=None, **kwargs:
                        runner.Start(types.SimpleNamespace(episode=0), 0))
    return seen


def test_every_command_drives_its_learner_through_the_runner(spy_run):
    """tabular, marl (one seed and a group of seeds) and actorq (single program, Ray actors,
    local processes) each hand their adapter, a runner.Learner on the runner's segmented
    base, to runner.run; the distributed ones with the transport asked for."""
    import importlib

    from jaxrl_pim.cli import main

    for argv, (module, name) in COMMANDS:
        with pytest.raises(_Reached):
            main(argv)
        learner = spy_run[-1]
        kind = getattr(importlib.import_module(module), name)
        assert type(learner) is kind, argv
        assert isinstance(learner, runner.Learner), argv
        assert isinstance(learner, runner.SegmentedLearner), argv
        if "--mode" in argv and argv[-1] != "single":
            assert learner.pool.name == argv[-1]
    assert len(spy_run) == len(COMMANDS)


@pytest.mark.parametrize("dtype", ["fp32", "int32"])
def test_tabular_run_without_checkpoints_equals_make_train_bit_for_bit(dtype):
    """The tabular run without checkpoints is one runner segment over an initial state: it
    ends with the table of the one-program trainer, every bit."""
    import jax

    from jaxrl_pim.data import Dataset
    from jaxrl_pim.tabular import TabularConfig, chunk, make_train
    from jaxrl_pim.tabular.runner import run

    rng = np.random.default_rng(0)
    d = Dataset(*(rng.integers(0, n, 4 * 25).astype(t) for n, t in
                  [(7, np.uint8), (3, np.uint8), (4, np.float32), (7, np.uint8)]),
                rng.random(4 * 25) < 0.1)
    cfg = TabularConfig(7, 3, algo="sarsa", sampling="ran", dtype=dtype, num_cores=4,
                        sync_period=2, num_episodes=5)
    key = jax.random.key(5)
    q, metrics = jax.jit(make_train(cfg))(key, chunk(cfg, d))
    result = run(cfg, d, key, num_devices=1)
    np.testing.assert_array_equal(result.q_table, np.asarray(q))
    np.testing.assert_array_equal(result.curve, np.asarray(metrics["q_delta"]))
    assert (result.start, result.checkpoints_written, result.updates) == (0, 0, 4 * 25 * 5)
    assert "checkpoint" not in result.timing_s and result.timing_s["compute"] >= 0
