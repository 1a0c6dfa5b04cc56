"""The update schedule stays a conditional when seeds are vmapped (``marl.schedule.when``).

From keys and from stacked states the compiled vmapped trainer keeps an XLA ``conditional``;
each seed of the group equals the seed run alone; seeds stacked at different step counts (the
batched-predicate path) still update exactly on their own schedule. (What a group of seeds
costs against the seeds one after another is measured, not asserted here:
``benchmarks/marl_seeds.py``.) With a batched predicate the branch runs
seed by seed on XLA:CPU (a loop inside the conditional, the branch's matrix product at one
seed's shape) and vmapped elsewhere; both keep the seeds that are not due.
"""

from __future__ import annotations

import dataclasses
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl_pim.marl.config import MARLConfig
from jaxrl_pim.marl.schedule import _seed_by_seed, _vmapped, when
from jaxrl_pim.marl.trainer import make_init, make_train, make_train_from
from tests.support.seeds import equal_trees as _equal_trees
from tests.support.seeds import seed as _seed

TINY = MARLConfig(
    env="spread", num_agents=2, num_envs=1, num_episodes=4, episode_length=5,
    buffer_capacity=64, batch_size=8, learning_starts=8, update_every=3, hidden=(8, 8),
)


def test_when_matches_reference_for_every_predicate_pattern():
    def fn(o, e):
        return {"a": o["a"] * e + 1.0, "n": o["n"] + 1}

    op = {"a": jnp.arange(8.0).reshape(4, 2), "n": jnp.zeros(4, jnp.int32)}
    extra = jnp.array([2.0, 3.0, 4.0, 5.0])
    batched = jax.jit(jax.vmap(lambda p, o, e: when(p, fn, o, e)))
    for pattern in ([0, 0, 0, 0], [1, 0, 1, 0], [1, 1, 1, 1]):
        pred = jnp.array(pattern, bool)
        got = batched(pred, op, extra)
        a, n = np.arange(8.0).reshape(4, 2), np.zeros(4, np.int32)
        for i, p in enumerate(pattern):  # NumPy reference, one seed at a time
            if p:
                a[i] = a[i] * float(extra[i]) + 1.0
                n[i] += 1
        np.testing.assert_array_equal(got["a"], a)
        np.testing.assert_array_equal(got["n"], n)
    # An unbatched predicate (closed over) and the plain, unvmapped call.
    got = jax.vmap(lambda o, e: when(jnp.bool_(True), fn, o, e))(op, extra)
    np.testing.assert_array_equal(got["n"], np.ones(4))
    single = when(jnp.bool_(False), fn, _seed(op, 1), extra[1])
    assert _equal_trees(single, _seed(op, 1))


def test_both_batched_branches_match_the_reference_for_every_predicate_pattern():
    # The seed-by-seed loop (XLA:CPU) and the vmap branch (other backends) called directly,
    # so both are checked here whatever backend the test runs on.
    def fn(o, e):
        return {"a": o["a"] * e + 1.0, "n": o["n"] + 1}

    op = {"a": jnp.arange(8.0).reshape(4, 2), "n": jnp.zeros(4, jnp.int32)}
    extra = jnp.array([2.0, 3.0, 4.0, 5.0])
    for pattern in ([0, 0, 0, 0], [0, 1, 1, 0], [1, 1, 1, 1]):
        pred = jnp.array(pattern, bool)
        want_a = np.where(np.array(pattern, bool)[:, None],
                          np.arange(8.0).reshape(4, 2) * np.asarray(extra)[:, None] + 1.0,
                          np.arange(8.0).reshape(4, 2))
        for branch in (_seed_by_seed(fn, pred, 4), _vmapped(fn, pred)):
            got = jax.jit(branch)(op, extra)
            np.testing.assert_array_equal(got["a"], want_a)
            np.testing.assert_array_equal(got["n"], np.array(pattern))


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="the XLA:CPU program")
def test_on_cpu_the_batched_branch_runs_seed_by_seed():
    # fn multiplies [7, 5] by [5, 5]: seed by seed the compiled product has one seed's shape
    # f32[7,5] and sits in a loop; a vmapped branch would compute f32[4,7,5].
    def fn(o, w):
        return o @ w

    batched = jax.jit(jax.vmap(lambda p, o, w: when(p, fn, o, w)))
    pred = jnp.array([True, False, True, True])
    o, w = jnp.arange(140.0).reshape(4, 7, 5), jnp.arange(100.0).reshape(4, 5, 5)
    text = batched.lower(pred, o, w).compile().as_text()
    dots = [line for line in text.splitlines() if " dot(" in line]
    assert dots and all("f32[7,5]" in d and "f32[4,7,5]" not in d for d in dots), dots
    assert " while(" in text and " conditional(" in text
    want = np.where(np.asarray(pred)[:, None, None],
                    np.einsum("sij,sjk->sik", np.asarray(o), np.asarray(w)), np.asarray(o))
    np.testing.assert_array_equal(batched(pred, o, w), want)


def test_accelerator_programs_keep_the_branch_vmapped():
    # Exported for CUDA (no GPU needed): the product runs on all seeds at once, no loop;
    # exported for CPU: one seed's product in a loop.
    from jax import export

    batched = jax.jit(jax.vmap(lambda p, o, w: when(p, lambda o, w: o @ w, o, w)))
    args = (jnp.array([True, False, True, True]), jnp.ones((4, 7, 5)), jnp.ones((4, 5, 5)))
    shapes = {}
    for platform in ("cpu", "cuda"):
        text = export.export(batched, platforms=[platform])(*args).mlir_module()
        shapes[platform] = (set(re.findall(r"dot_general.*?-> tensor<([0-9x]+)xf32>", text)),
                            "stablehlo.while" in text)
    assert shapes == {"cpu": ({"7x5"}, True), "cuda": ({"4x7x5"}, False)}, shapes


@pytest.fixture(scope="module")
def from_keys():
    """4 keys and the vmapped trainer compiled for them."""
    keys = jax.random.split(jax.random.PRNGKey(1), 4)
    return keys, jax.jit(jax.vmap(make_train(TINY))).lower(keys).compile()


@pytest.fixture(scope="module")
def from_states():
    """Seed 0 from scratch and seed 1 after two episodes (per-seed predicates that disagree),
    stacked; the vmapped 2-episode continuation compiled for them; the single-seed 2-episode
    continuation (compiled once: it also trains seed 1's first two episodes)."""
    init, two = make_init(TINY), jax.jit(make_train_from(TINY, 2))
    s0 = init(jax.random.PRNGKey(5))
    s1, _ = two(init(jax.random.PRNGKey(6)))
    stacked = jax.tree.map(lambda a, b: jnp.stack([a, b]), s0, s1)
    return (s0, s1), stacked, jax.jit(jax.vmap(make_train_from(TINY, 2))).lower(
        stacked).compile(), two


def test_vmapped_trainer_keeps_the_conditional_from_keys_and_from_stacked_states(
        from_keys, from_states):
    assert " conditional(" in from_keys[1].as_text()
    assert " conditional(" in from_states[2].as_text()


def test_each_seed_of_a_group_equals_the_seed_alone(from_keys):
    keys, group = from_keys
    group_state, group_m = group(keys)
    one = jax.jit(make_train(TINY))
    for i in range(4):
        state, m = one(keys[i])
        assert _equal_trees(m, _seed(group_m, i))
        assert _equal_trees(state, _seed(group_state, i))
    assert int(group_state.num_updates[0]) == TINY.update_rounds(20) == 4  # after 9 .. 18


def test_seeds_at_different_steps_each_follow_their_own_schedule(from_states):
    singles, stacked, group, two = from_states
    assert list(np.asarray(stacked.num_updates)) == [0, 1]  # seed 1 is 10 steps ahead
    group_state, group_m = group(stacked)
    for i, s in enumerate(singles):
        state, m = two(s)
        assert _equal_trees(m, _seed(group_m, i))
        assert _equal_trees(state, _seed(group_state, i))
    # First round after step 9 (8 rows stored, multiple of 3): steps 1..10 run one round,
    # steps 1..20 (10 in the first call, 10 here) run rounds after 9, 12, 15 and 18.
    assert list(np.asarray(group_state.num_updates)) == [1, 4]
    assert [TINY.update_rounds(10), TINY.update_rounds(20)] == [1, 4]


def test_a_round_of_stacked_seeds_copies_no_seeds_replay_buffer():
    """The seed-by-seed round of stacked states reads each seed's sampled rows in place: the
    compiled program's temporaries stay far below one seed's replay buffer (they held a copy
    of it, which at 12 agents and 1e6 rows ran 3 vmapped seeds out of the CI host's memory).
    Accelerators keep the round vmapped (``schedule``'s docstring): XLA:CPU only."""
    from jaxrl_pim.marl.plan import replay_bytes

    if jax.default_backend() != "cpu":
        pytest.skip("the seed-by-seed round is XLA:CPU's")

    cfg = dataclasses.replace(TINY, buffer_capacity=200_000)
    keys = jax.ShapeDtypeStruct((2, 2), jnp.uint32)
    stacked = jax.eval_shape(jax.vmap(make_init(cfg)), keys)  # nothing allocated
    compiled = jax.jit(jax.vmap(make_train_from(cfg, 2)), donate_argnums=0).lower(
        stacked).compile()
    assert " conditional(" in compiled.as_text()  # per-seed counters: the batched predicate
    temp = compiled.memory_analysis().temp_size_in_bytes
    assert temp < replay_bytes(cfg) / 4, (temp, replay_bytes(cfg))
