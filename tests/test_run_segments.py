"""jaxrl_pim.runner.run_segments, the one driver of checkpointed runs, against a tiny
pure-Python trainer.

The trainer's state is ``{"total": sum of the units seen, "done": units done}``; unit ``i``
adds ``i``, so a state says exactly which units ran, and a run cut anywhere and resumed must
end with the uninterrupted run's state.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from jaxrl_pim.checkpoint import Checkpoints, fingerprint
from jaxrl_pim.runner import Plan, default_every, restore_latest, run_segments


def fresh() -> dict[str, np.ndarray]:
    return {"total": np.int32(0), "done": np.int32(0)}


def train_from(state, n):
    done = int(state["done"])
    units = list(range(done, done + n))
    return {"total": np.int32(int(state["total"]) + sum(units)),
            "done": np.int32(done + n)}, units


def template(_step):
    return fresh()


@dataclasses.dataclass(frozen=True)
class Config:
    lr: float = 0.1
    hidden: tuple[int, ...] = (8, 8)
    length: int = 10


def test_segments_end_at_multiples_of_every_and_at_the_end():
    assert list(Plan(0, 10, 4).segments()) == [(0, 4), (4, 8), (8, 10)]
    assert list(Plan(5, 10, 4).segments()) == [(5, 8), (8, 10)]  # a resume mid-period
    assert list(Plan(3, 10).segments()) == [(3, 10)]  # no checkpoints: one segment
    assert list(Plan(10, 10, 4).segments()) == []  # a finished run trains nothing
    with pytest.raises(ValueError, match="total"):
        list(Plan(11, 10, 4).segments())
    with pytest.raises(ValueError, match="every"):
        list(Plan(0, 10, 0).segments())


def test_default_every_is_a_tenth_of_the_run_with_a_floor():
    assert [default_every(n) for n in (0, 1, 10, 11, 60_000)] == [1, 1, 1, 2, 6000]
    assert default_every(100, minimum=25) == 25
    assert default_every(1000, minimum=25) == 100


def test_callback_sees_each_segment_after_its_checkpoint(tmp_path):
    events = []

    class Recorder(Checkpoints):
        def save(self, step, state, meta=None):
            events.append(("save", step))
            return super().save(step, state, meta)

    def callback(done, total, units):
        # the segment's checkpoint is already on disk when the callback runs
        events.append(("callback", done, total, units))
        assert ckpt.latest() == done

    with Recorder(tmp_path, keep=2) as ckpt:
        out = run_segments(train_from, fresh(), Plan(0, 7, 3), ckpt, callback)
        assert ckpt.steps() == [6, 7]
    assert events == [("save", 3), ("callback", 3, 7, [0, 1, 2]),
                      ("save", 6), ("callback", 6, 7, [3, 4, 5]),
                      ("save", 7), ("callback", 7, 7, [6])]
    assert int(out.state["total"]) == sum(range(7)) and out.done == 7
    assert out.checkpoints_written == 3
    assert set(out.timing_s) == {"train", "checkpoint"}


def test_resume_from_a_saved_step_ends_as_the_uninterrupted_run(tmp_path):
    whole = run_segments(train_from, fresh(), Plan(0, 23, 5)).state
    fp = fingerprint(Config(), seed=1)
    with Checkpoints(tmp_path, fingerprint=fp) as ckpt:
        # "killed" after the segment ending at 10
        partial = run_segments(train_from, fresh(), Plan(0, 10, 5), ckpt)
        assert partial.checkpoints_written == 2
    with Checkpoints(tmp_path, fingerprint=fingerprint(Config(), seed=1)) as ckpt:
        with pytest.raises(ValueError, match="already holds checkpoints .*after unit 10"):
            restore_latest(ckpt, template, resume=False, unit="unit")
        start = restore_latest(ckpt, template, resume=True)
        assert start.step == 10 and start.meta == {"done": 10}
        seen = []
        resumed = run_segments(train_from, start.tree, Plan(start.step, 23, 5), ckpt,
                               lambda done, total, units: seen.extend(units),
                               snapshot=lambda s, d: (s, {"done": d, "note": "resumed"}))
        assert seen == list(range(10, 23))  # only the units after the checkpoint ran
        assert ckpt.steps() == [15, 20, 23]
        assert ckpt.restore(template(23))[1] == {"done": 23, "note": "resumed"}
    for k in whole:
        assert int(resumed.state[k]) == int(whole[k])


def test_no_checkpoint_means_a_fresh_start(tmp_path):
    assert restore_latest(None, template, resume=True) is None
    with Checkpoints(tmp_path) as ckpt:
        assert restore_latest(ckpt, template, resume=True) is None
        assert restore_latest(ckpt, template, resume=False) is None


def test_fingerprint_refuses_another_run(tmp_path):
    with Checkpoints(tmp_path, fingerprint=fingerprint(Config(), seed=1)) as ckpt:
        run_segments(train_from, fresh(), Plan(0, 4, 2), ckpt)
    for other, message in [
        (fingerprint(Config(lr=0.2), seed=1), r"config.lr: saved 0.1, this run 0.2"),
        (fingerprint(Config(), seed=2), r"seed: saved 1, this run 2"),
        (fingerprint(Config(hidden=(8,)), seed=1), r"config.hidden"),
    ]:
        with Checkpoints(tmp_path, fingerprint=other) as ckpt:
            with pytest.raises(ValueError, match=message):
                restore_latest(ckpt, template, resume=True)
    # a field excluded from the fingerprint (e.g. the run's length) may change on resume
    with Checkpoints(tmp_path, fingerprint=fingerprint(Config(length=50), exclude=("length",),
                                                       seed=1)) as ckpt:
        with pytest.raises(ValueError, match="length"):
            restore_latest(ckpt, template, resume=True)  # saved with length in it
    extended = fingerprint(Config(length=50), exclude=("length",), seed=1)
    assert extended == fingerprint(Config(length=10), exclude=("length",), seed=1)
    assert "length" not in extended["config"]


def test_fingerprint_values():
    import jax

    fp = fingerprint(Config(), seed=3, data={"rows": np.int64(5)})
    assert fp == {"config": {"lr": 0.1, "hidden": [8, 8], "length": 10}, "seed": 3,
                  "data": {"rows": 5}}
    assert fingerprint(Config(), key=jax.random.key(5))["key"] == [0, 5]
    assert fingerprint(Config(), key=jax.random.PRNGKey(5))["key"] == [0, 5]
    with pytest.raises(ValueError, match="dataclass"):
        fingerprint({"lr": 0.1})
