"""jaxrl_pim.timing: the call-loop timer the inference benchmarks share, against a function
whose cost and number of calls are known."""

from __future__ import annotations

import time

import jax.numpy as jnp
import pytest

from jaxrl_pim.timing import time_call, time_per_call


def test_time_per_call_counts_its_calls_and_measures_a_known_cost() -> None:
    calls = []

    def slow(x):
        calls.append(1)
        time.sleep(0.002)
        return x + 1

    out = time_per_call(slow, jnp.zeros(3), repeats=3, loop_s=0.02)
    assert set(out) == {"seconds_per_call", "compile_s", "calls_per_loop"}
    # one compiling call, one sizing call, then `repeats` loops of calls_per_loop calls
    assert len(calls) == 2 + 3 * out["calls_per_loop"]
    assert 1 <= out["calls_per_loop"] <= 10  # about loop_s / 2 ms
    assert 0.002 <= out["seconds_per_call"] < 0.05
    assert out["compile_s"] >= 0.002


def test_time_call_is_the_best_of_its_repeats() -> None:
    delays = iter([0.05, 0.01, 0.03, 0.02])  # warm-up, then three timed calls

    def fn():
        time.sleep(next(delays))
        return jnp.ones(1)

    assert time_call(fn, repeats=3, warmup=1) == pytest.approx(0.01, abs=0.008)
