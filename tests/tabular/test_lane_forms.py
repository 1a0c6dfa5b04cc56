"""The lane-step forms of the benchmark's form study against the NumPy reference loop."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl_pim.tabular import TabularConfig, chunk
from jaxrl_pim.tabular.lanes import LaneData, to_lane_data, visiting_rows
from jaxrl_pim.testing import lane_forms
from jaxrl_pim.testing.tabular_numpy import train_reference
from tests.support.tabular import A, S, random_dataset

LANES, EPISODES = 3, 4


def _setup(compat_max0: bool, sampling: str = "seq"):
    cfg = TabularConfig(S, A, algo="q", sampling=sampling, dtype="fp32", num_cores=LANES,
                        sync_period=EPISODES, num_episodes=EPISODES, rng="lcg",
                        compat_max0=compat_max0, stride=3)
    chunks = chunk(cfg, random_dataset(LANES * 19))
    spec = cfg.lane_spec()
    data = visiting_rows(to_lane_data(chunks, spec), sampling, cfg.stride)  # [m, L]
    # The reference without the final lane average: every lane's own table [L, S, A].
    ref = train_reference(dataclasses.replace(cfg, independent=True), chunks,
                          jax.random.key(0))
    return spec, data, ref


@pytest.mark.parametrize(("compat_max0", "sampling"),
                         [(False, "seq"), (True, "seq"), (False, "str")])
@pytest.mark.parametrize("form", sorted(lane_forms.FORMS))
def test_every_form_matches_the_numpy_loop(form: str, compat_max0: bool, sampling: str
                                           ) -> None:
    spec, data, ref = _setup(compat_max0, sampling)
    q0 = jnp.zeros((LANES, S, A), jnp.float32)
    q = jax.jit(lambda q: lane_forms.run_form(form, spec, q, data, EPISODES))(q0)
    np.testing.assert_allclose(np.asarray(q), ref, rtol=1e-6, atol=1e-6)
    assert np.abs(ref).max() > 0.1  # learning happened


def test_forms_agree_with_the_library_bit_for_bit() -> None:
    spec, data, _ = _setup(False)
    q0 = jnp.zeros((LANES, S, A), jnp.float32)
    lib = np.asarray(lane_forms.run_form("library", spec, q0, data, EPISODES))
    for form in lane_forms.FORMS:
        np.testing.assert_array_equal(
            np.asarray(lane_forms.run_form(form, spec, q0, data, EPISODES)), lib, err_msg=form)


def test_forms_reject_what_they_do_not_cover() -> None:
    for kw in ({"algo": "sarsa"}, {"dtype": "int32"}, {"sampling": "ran"}):
        cfg = TabularConfig(S, A, **{"algo": "q", "sampling": "seq", "dtype": "fp32", **kw})
        with pytest.raises(ValueError, match="lane forms cover"):
            lane_forms.check_spec(cfg.lane_spec())
    big = TabularConfig(40_000, 2).lane_spec()
    idx = jnp.zeros((2, 1), jnp.int32)
    with pytest.raises(ValueError, match="16 bits"):
        lane_forms.FORMS["fused_row"].prepare(
            big, LaneData(idx, idx, jnp.zeros((2, 1)), jnp.zeros((2, 1), bool)))


@pytest.mark.default_emitters  # the loop body a user's program (and the benchmark) gets: with
# the legacy emitters XLA:CPU expands the scatter into a loop of its own
def test_innermost_loop_body_lists_the_step_operations() -> None:
    spec, data, _ = _setup(False)
    q0 = jnp.zeros((LANES, S, A), jnp.float32)
    text = jax.jit(lambda q: lane_forms.run_form("library", spec, q, data, 2)).lower(
        q0).compile().as_text()
    body = lane_forms.innermost_loop_body(text)
    assert any("scatter" in line for line in body), body  # the table write of every step
    assert not any(" while(" in line for line in body)
    assert all("metadata=" not in line for line in body)
    ops = {form: lane_forms.innermost_loop_opcodes(
        jax.jit(lambda q, form=form: lane_forms.run_form(form, spec, q, data, 2)).lower(
            q0).compile().as_text()) for form in ("library", "signed", "scalar_boot")}
    assert ops["library"]["gather"] == 2 and ops["library"]["scatter"] == 1  # Q[s,a], Q[s',:]
    assert ops["scalar_boot"]["gather"] == 1 + A  # Q[s,a] and A scalar bootstrap gathers
    assert "select" not in ops["library"] and ops["signed"].get("select", 0) >= 2  # the wrap
    assert lane_forms.innermost_loop_opcodes("") == {}
    assert lane_forms.innermost_loop_body("HloModule m\n\nENTRY %main () -> f32[] {\n"
                                          "  ROOT %c = f32[] constant(0)\n}\n") == []
