"""The MARL trainer's static schedule (``marl.schedule``, ``trainer.make_train_from``).

The plan against a step-by-step enumeration of the schedule; the trainer against the loop it
replaced (``tests/support/marl_dynamic.py``: a ``lax.cond`` at every step), bit for bit at the
paper's schedule and to float32 rounding elsewhere; no conditional in the compiled program,
from keys and from stacked states; the env-step body's fusion count bounded.
"""

from __future__ import annotations

import dataclasses
import math
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl_pim.marl import schedule
from jaxrl_pim.marl.config import MARLConfig
from jaxrl_pim.marl.trainer import (
    make_init,
    make_schedule,
    make_train,
    make_train_from,
    piece_program,
)
from jaxrl_pim.testing.hlo import computations, while_bodies
from tests.support.marl_dynamic import make_dynamic_train_from
from tests.support.seeds import equal_trees

# The paper's schedule (25-step episodes, a round every 100 steps) at test sizes.
PAPER = MARLConfig(env="spread", num_agents=3, num_episodes=12, episode_length=25,
                   buffer_capacity=2_000, batch_size=32, learning_starts=200,
                   update_every=100, hidden=(16, 16))


def _events(plan, episode_length, start):
    """The plan expanded step by step: ``(reset, updates)`` per env step."""
    out, t = [], start * episode_length
    for block in plan:
        for _ in range(block.count):
            for slot in block.slots:
                for run in slot.runs:
                    for _ in range(run.count):
                        for i in range(run.steps):
                            t += 1
                            end = (t % episode_length == 0 if run.reset is None
                                   else run.reset and i == run.steps - 1)
                            out.append([end, ()])
                out[-1][1] = slot.updates
    return [tuple(e) for e in out]


def _brute(L, U, first, upr, delay, start, n):
    out, g = [], 0
    for t in range(1, (start + n) * L + 1):
        due = t % U == 0 and t >= first
        ups = tuple((g + j) % delay for j in range(upr)) if due else ()
        g += upr if due else 0
        if t > start * L:
            out.append((t % L == 0, ups))
    return out


@pytest.mark.parametrize("L,U,first,upr,delay,start,n", [
    (25, 100, 25_600, 1, 1, 0, 1_200),  # the paper's schedule from the start
    (25, 100, 25_600, 1, 1, 1_022, 9),  # across the first round, mid-slot start
    (25, 100, 200, 1, 2, 0, 40),        # MATD3's policy delay
    (5, 3, 9, 3, 2, 0, 20),             # rounds that do not hold whole episodes
    (5, 7, 14, 1, 1, 3, 11),
    (4, 1, 6, 2, 3, 1, 9),
    (3, 6, 6, 1, 1, 5, 0),
])
def test_plan_is_the_schedule_step_by_step(L, U, first, upr, delay, start, n):
    plan = schedule.make_plan(episode_length=L, update_every=U, first_update_step=first,
                              updates_per_round=upr, policy_delay=delay,
                              start_episode=start, num_episodes=n)
    got = _events(plan, L, start)
    assert got == _brute(L, U, first, upr, delay, start, n)
    counts = schedule.plan_counts(plan)
    cfg = MARLConfig(num_episodes=1, episode_length=L, update_every=U, learning_starts=first,
                     batch_size=1, buffer_capacity=max(first, 1), updates_per_round=upr)
    assert counts["updates"] == cfg.update_rounds(n * L, start * L)
    # the program is small: a block per change of pattern, not a body per round
    assert counts["slot_bodies"] <= 3 + math.lcm(1, delay)


def test_paper_schedule_is_two_scans_from_the_start():
    cfg = dataclasses.replace(PAPER, learning_starts=25_600, num_episodes=60_000,
                              buffer_capacity=1_000_000)
    warm, learn = make_schedule(cfg)
    four = (schedule.Run(4, 25, True),)
    assert warm == schedule.Block(255, (schedule.Slot(four, ()),))
    assert learn == schedule.Block(14_745, (schedule.Slot(four, (0,)),))
    # a piece after the warm-up that starts at a round is the same program wherever it starts
    assert make_schedule(cfg, 100, 2_000) == make_schedule(cfg, 100, 40_000)


def _run_both(cfg, pieces=()):
    s0 = jax.jit(make_init(cfg))(jax.random.PRNGKey(1))
    want = jax.jit(make_dynamic_train_from(cfg, cfg.num_episodes))(s0)
    if not pieces:
        return jax.jit(make_train_from(cfg))(s0), want
    state, done, metrics = s0, 0, []
    for n in pieces:
        state, m = jax.jit(make_train_from(cfg, n, start_episode=done))(state)
        done += n
        metrics.append(m)
    return (state, jax.tree.map(lambda *x: jnp.concatenate(x), *metrics)), want


def _identical(a, b):
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


@pytest.mark.default_compilation  # the program users run: default effort and emitters
@pytest.mark.default_emitters
def test_paper_schedule_is_bit_identical_to_the_branching_loop():
    """A whole run from the start at the paper's schedule: the same bits as the loop that
    decided every step with a conditional."""
    got, want = _run_both(PAPER)
    _identical(got, want)
    assert int(got[0].num_updates) == 2 and np.isfinite(got[1]["critic_loss"][-1]).all()


def test_other_schedules_agree_to_float32_rounding():
    """Pieces that start inside a round, rounds that do not hold whole episodes (resets by
    select) and MATD3's policy delay with several updates a round: counters, keys and the
    schedule exact, floats to rounding (XLA compiles a round that runs once as straight-line
    code, or the round outside the old conditional, and may fuse it differently)."""
    for cfg, pieces in ((PAPER, (4, 2, 6)),
                        (dataclasses.replace(PAPER, update_every=30, num_episodes=10), ()),
                        (dataclasses.replace(PAPER, algo="matd3", num_episodes=12, num_envs=2,
                                             learning_starts=400, updates_per_round=3), ())):
        got, want = _run_both(cfg, pieces)
        assert equal_trees(got, want), cfg
        assert int(got[0].num_updates) == int(want[0].num_updates) > 0
        np.testing.assert_array_equal(got[0].key, want[0].key)


def test_a_program_refuses_a_state_it_was_not_built_for():
    s0 = jax.jit(make_init(PAPER))(jax.random.PRNGKey(0))
    s4, _ = jax.jit(make_train_from(PAPER, 4))(s0)
    with pytest.raises(Exception, match="built for states at episode 0"):
        jax.block_until_ready(jax.jit(make_train_from(PAPER, 4))(s4))
    # episodes 4 and 8 start rounds after the warm-up: one plan, one program
    program = piece_program(PAPER, 4, s4)
    s8, _ = program(s4)
    assert program is piece_program(PAPER, 4, s8) and int(s8.episode) == 8


def _conditionals(text):
    return len(re.findall(r"\bconditional\(", text))


def test_no_conditional_in_the_compiled_program():
    """From keys (MATD3: its delayed actor steps too), from stacked states (seeds vmapped) and
    with a progress callback: the compiled program holds no XLA conditional."""
    keys = jnp.stack([jax.random.PRNGKey(i) for i in range(2)])
    matd3 = dataclasses.replace(PAPER, algo="matd3")
    from_keys = jax.jit(jax.vmap(make_train(matd3))).lower(keys).compile().as_text()
    states = jax.jit(jax.vmap(make_init(PAPER)))(keys)
    stacked = jax.jit(jax.vmap(make_train_from(PAPER, 8, start_episode=0))).lower(
        states).compile().as_text()
    progress = jax.jit(make_train(matd3, callback=lambda *a: None)).lower(
        keys[0]).compile().as_text()
    assert [_conditionals(t) for t in (from_keys, stacked, progress)] == [0, 0, 0]


def env_step_fusions(agents: int) -> int:
    """Fusions in the compiled env-step loop body (XLA:CPU) of a spread world of ``agents``:
    the largest while body of a piece of one 4-step episode without updates (the others are
    the random-bit generator's small loops)."""
    cfg = MARLConfig(env="spread", num_agents=agents, num_episodes=1, episode_length=4,
                     buffer_capacity=2_048, batch_size=32, learning_starts=1_024)
    s0 = jax.jit(make_init(cfg))(jax.random.PRNGKey(0))
    text = jax.jit(make_train_from(cfg)).lower(s0).compile().as_text()
    comps, _ = computations(text)
    body = max((comps[b] for b in while_bodies(text)), key=len)
    assert not any("conditional(" in line for line in body)
    return sum(1 for line in body if re.search(r"\sfusion\(|= \S+ fusion\(", line))


@pytest.mark.default_compilation  # the program users run: default effort and emitters
@pytest.mark.default_emitters
@pytest.mark.parametrize("agents,bound", [(3, 48), (48, 62)])
def test_env_step_body_fusion_count(agents, bound):
    """Every fusion is a kernel launch on a GPU. Measured on XLA:CPU (jax 0.10): 46 at N = 3
    (49 with the old per-step conditional), 59 at N = 48; docs/marl.md lists what they are."""
    assert 20 <= env_step_fusions(agents) <= bound
