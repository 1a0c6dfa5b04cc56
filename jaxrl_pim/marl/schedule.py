"""The MARL trainer's schedule, decided before tracing: which env steps end an episode and which
run an update round, as a static plan the trainer unrolls into nested scans.

The paper's schedule is static: an episode ends every ``episode_length`` env steps, and once
``learning_starts`` transitions are stored an update round runs every ``update_every`` steps
(``updates_per_round`` updates, the actors and targets only on every ``policy_delay``-th
update). Nothing in it depends on the data, so the compiled loop needs no conditional: on a
GPU a conditional in the step loop reads its predicate back to the host and waits for the
stream at every step.

:func:`make_plan` cuts the steps of a piece of a run into *slots*, the steps between two
update rounds (a slot ends at a multiple of ``update_every``, or where the piece ends). A
:class:`Slot` is its env steps as :class:`Run` s (``count`` times ``steps`` env steps, each
time followed by an episode reset when ``reset``) and the round at its end (``updates``: one
index per update modulo ``policy_delay``, 0 where that update also steps the actors and
targets; empty for no round).
Consecutive equal groups of slots are folded into :class:`Block` s, each a ``lax.scan``: at
the paper's schedule (25-step episodes, a round every 100 steps) a run from episode 0 is two
blocks, the warm-up (slots of 4 episodes, no round) and the rest (slots of 4 episodes, one
round each).

A reset and the update round of the same step touch disjoint parts of the train state (the
worlds and the RNG key; the networks, the sampler and the losses) and the round's key comes
from the step, so within a slot every reset runs before the round: an episode that ends where
a round runs reports the losses after that round, as it always did.

The plan depends on where the piece starts (``start_episode``), not only on its length; two
pieces with equal plans are one compiled program (:func:`jaxrl_pim.marl.trainer.make_train_from`
is cached by plan), so a run cut into segments at round boundaries after the warm-up compiles
one program per segment length.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from jaxrl_pim.checks import check_int

__all__ = ["Block", "Run", "Slot", "make_plan", "plan_counts"]


class Run(NamedTuple):
    """``count`` times: ``steps`` env steps, then an episode reset if ``reset``. ``reset=None``
    (plans whose rounds do not hold whole episodes): each of the ``steps`` env steps resets
    the worlds where the episode ends (a ``select`` on the step count, no conditional)."""

    count: int
    steps: int
    reset: bool | None


class Slot(NamedTuple):
    """The env steps between two update rounds (``runs``, in order) and the round at its end:
    ``updates`` holds each update's index in the run modulo ``policy_delay`` (0: the actors
    and targets step too); ``()`` when no round ends the slot."""

    runs: tuple[Run, ...]
    updates: tuple[int, ...]


class Block(NamedTuple):
    """``count`` repetitions of the group of ``slots`` (a ``lax.scan`` when ``count > 1``)."""

    count: int
    slots: tuple[Slot, ...]


def _runs(lo: int, hi: int, episode_length: int) -> tuple[Run, ...]:
    """Env steps ``lo + 1 .. hi`` as runs: episode ends at multiples of ``episode_length``."""
    out: list[Run] = []
    t = lo
    while t < hi:
        end = min(hi, (t // episode_length + 1) * episode_length)
        run = Run(1, end - t, end % episode_length == 0)
        if out and out[-1][1:] == run[1:]:
            out[-1] = out[-1]._replace(count=out[-1].count + 1)
        else:
            out.append(run)
        t = end
    return tuple(out)


def _fold(slots: list[Slot], period: int) -> tuple[Block, ...]:
    """``slots`` as blocks: the longest repetitions of ``period``-slot groups, greedily from
    the front; a group of one slot repeated becomes a one-slot block, and equal neighbouring
    one-slot blocks merge."""
    blocks: list[Block] = []
    i, n = 0, len(slots)
    while i < n:
        group = tuple(slots[i:i + period])
        k = 1
        if len(group) == period:
            while tuple(slots[i + k * period:i + (k + 1) * period]) == group:
                k += 1
        if k > 1:
            if all(s == group[0] for s in group):
                blocks.append(Block(k * period, group[:1]))
            else:
                blocks.append(Block(k, group))
            i += k * period
        else:
            blocks.append(Block(1, (slots[i],)))
            i += 1
        last = blocks[-1]
        if (len(blocks) > 1 and len(last.slots) == 1 and len(blocks[-2].slots) == 1
                and blocks[-2].slots == last.slots):
            blocks[-2:] = [Block(blocks[-2].count + last.count, last.slots)]
    return tuple(blocks)


def make_plan(*, episode_length: int, update_every: int, first_update_step: int,
              updates_per_round: int, policy_delay: int, start_episode: int,
              num_episodes: int) -> tuple[Block, ...]:
    """The static plan of episodes ``start_episode + 1 .. start_episode + num_episodes``.

    Env steps are 1-based steps of the vectorised batch; a round runs after every step that
    is a multiple of ``update_every`` and at least ``first_update_step``
    (``MARLConfig.first_update_step``); update ``g`` of the run (0-based, counted from its
    first) steps the actors and targets iff ``g % policy_delay == 0`` (a slot holds ``g %
    policy_delay`` per update). ``()`` for
    ``num_episodes = 0``.
    """
    L = check_int("episode_length", episode_length, lo=1)
    U = check_int("update_every", update_every, lo=1)
    upr = check_int("updates_per_round", updates_per_round, lo=1)
    delay = check_int("policy_delay", policy_delay, lo=1)
    first = check_int("first_update_step", first_update_step, lo=1)
    a = check_int("start_episode", start_episode, lo=0) * L
    b = a + check_int("num_episodes", num_episodes, lo=0) * L
    whole = U % L == 0  # rounds hold whole episodes: each reset where it falls
    slots: list[Slot] = []
    lo = a
    while lo < b:
        hi = min(b, (lo // U + 1) * U)
        updates: tuple[int, ...] = ()
        if hi % U == 0 and hi >= first:
            done = (hi // U - first // U) * upr  # updates of the rounds before this one
            updates = tuple((done + j) % delay for j in range(upr))
        runs = _runs(lo, hi, L) if whole else (Run(1, hi - lo, None),)
        slots.append(Slot(runs, updates))
        lo = hi
    # The actor flags repeat every delay / gcd(delay, updates_per_round) rounds.
    return _fold(slots, delay // math.gcd(delay, upr))


def plan_counts(plan: tuple[Block, ...]) -> dict[str, int]:
    """What ``plan`` runs: ``env_steps``, ``rounds``, ``updates`` and ``actor_updates``; and
    ``slot_bodies``, the slots the program traces (its size). (Its episodes are
    ``env_steps / episode_length``: a plan covers whole episodes.)"""
    out = dict.fromkeys(("env_steps", "rounds", "updates", "actor_updates", "slot_bodies"), 0)
    for block in plan:
        for slot in block.slots:
            out["slot_bodies"] += 1
            for run in slot.runs:
                out["env_steps"] += block.count * run.count * run.steps
            out["rounds"] += block.count * bool(slot.updates)
            out["updates"] += block.count * len(slot.updates)
            out["actor_updates"] += block.count * slot.updates.count(0)
    return out
