"""The tabular workload description (``jaxrl_pim.tabular.config``): the sync-round arithmetic
against hand counts and a loop over episodes, the checks the references used to make, and
the lazy package keeping every public name importable."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from jaxrl_pim.tabular.config import (
    TabularConfig,
    episodes_in_rounds,
    round_lengths,
)


def _episode_rounds(num_episodes: int, sync_period: int) -> list[int]:
    """The round of every episode, counted one episode at a time (independent of the
    module's arithmetic): a round closes after ``sync_period`` episodes or at the end."""
    rounds, r, in_round = [], 0, 0
    for _ in range(num_episodes):
        rounds.append(r)
        in_round += 1
        if in_round == sync_period:
            r, in_round = r + 1, 0
    return rounds


def test_rounds_by_hand() -> None:
    cfg = TabularConfig(16, 4, num_episodes=5, sync_period=2)  # rounds of 2, 2, 1 episodes
    assert cfg.num_rounds == 3
    assert round_lengths(cfg) == [2, 2, 1]
    assert episodes_in_rounds(cfg, 0, 3) == 5
    assert episodes_in_rounds(cfg, 1, 3) == 3
    assert episodes_in_rounds(cfg, 2, 3) == 1
    assert episodes_in_rounds(cfg, 3, 3) == 0  # a finished run has nothing left
    assert episodes_in_rounds(cfg, 2, 9) == 1 and episodes_in_rounds(cfg, -4, 1) == 2
    assert episodes_in_rounds(cfg, 2, 1) == 0  # an empty range
    paper = TabularConfig(16, 4)  # 2,000 episodes, tau 50: 40 full rounds
    assert paper.num_rounds == 40 and set(round_lengths(paper)) == {50}


@pytest.mark.parametrize("num_episodes,sync_period",
                         [(1, 1), (1, 7), (7, 7), (8, 7), (30, 4), (2000, 50), (13, 1)])
def test_rounds_match_a_loop_over_episodes(num_episodes: int, sync_period: int) -> None:
    cfg = TabularConfig(16, 4, num_episodes=num_episodes, sync_period=sync_period)
    of = np.array(_episode_rounds(num_episodes, sync_period))
    assert cfg.num_rounds == of[-1] + 1
    assert round_lengths(cfg) == np.bincount(of).tolist()
    for start in range(cfg.num_rounds + 1):
        for stop in range(start, cfg.num_rounds + 2):
            assert episodes_in_rounds(cfg, start, stop) == int(((of >= start) & (of < stop)).sum())


@pytest.mark.parametrize(
    "changes,match",
    [
        (dict(dtype="int32", gamma=1.0), "dtype int32 needs gamma < 1"),
        (dict(dtype="int32", gamma=0.99996), "dtype int32 needs gamma < 1"),  # rounds to 1
        (dict(dtype="int32", alpha=0.00004), r"alpha \* 10000 to round to >= 1"),
        (dict(dtype="int32", num_cores=65_537), "num_cores must be <= 65536"),
        (dict(num_states=2**31), "num_states must be <= 2147483647"),
        (dict(independent=1), "independent must be True or False, got 1"),
        (dict(compat_max0="yes"), "compat_max0 must be True or False, got 'yes'"),
        (dict(algo="sarsa", compat_max0=True), "compat_max0 applies to Q-learning only"),
        (dict(dtype="int8"), "dtype must be one of 'fp32', 'int32', 'fp16', 'bf16'; got 'int8'"),
        (dict(kernel="pallas_lane", num_states=2**20, num_actions=255), "does not fit"),
    ],
)
def test_bad_workloads_are_rejected_naming_the_field(changes: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        TabularConfig(**{"num_states": 16, "num_actions": 4, **changes})


def test_good_edges_are_accepted() -> None:
    TabularConfig(16, 4, dtype="int32", gamma=0.99994, alpha=0.0001)  # scale to 9999 and 1
    TabularConfig(16, 4, dtype="int32", num_cores=65_537, independent=True)  # no lane mean
    TabularConfig(16, 4, dtype="fp32", gamma=1.0, independent=np.bool_(True))


def test_the_trainer_and_runner_names_are_the_config_module_s() -> None:
    from jaxrl_pim import tabular
    from jaxrl_pim.tabular import runner, trainer

    assert trainer.TabularConfig is tabular.TabularConfig is TabularConfig
    assert runner.episodes_in_rounds is episodes_in_rounds
    cfg = TabularConfig(16, 4, dtype="int32")
    assert cfg.format.name == "int32" and cfg.lane_spec().num_actions == 4
    assert dataclasses.replace(cfg, kernel="scan").resolved_kernel("cpu") == "scan"


def test_a_lazy_function_named_like_its_module_stays_the_function() -> None:
    # (every public name and module of the package: tests/test_lazy.py; that importing the
    # package and the config loads no jax: tests/test_pim.py)
    import importlib

    from jaxrl_pim import tabular

    module = importlib.import_module("jaxrl_pim.tabular.evaluate")  # loading the module ...
    assert tabular.evaluate is module.evaluate  # ... leaves the package's evaluate the function
    from jaxrl_pim.tabular import make_train, trainer

    assert tabular.make_train is make_train is trainer.make_train
    assert tabular.constants is importlib.import_module("jaxrl_pim.tabular.constants")
