"""What a run will do before it starts: counts, replay memory, and a measured duration estimate.

:func:`plan_run` is arithmetic on the config (no compute): env steps, stored transitions,
update rounds (the closed form of the trainer's schedule), the first update, and the bytes
of the replay buffers and sampler state. :func:`estimate_seconds` times one jitted env step
and one jitted update round on this machine and multiplies by the counts: an ESTIMATE that
excludes compilation and ignores what fusing the whole run into one program saves or costs.
``jaxrl-pim marl`` prints both before a long run.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxrl_pim import choices
from jaxrl_pim.marl.config import MARLConfig
from jaxrl_pim.marl.trainer import make_init, make_phases
from jaxrl_pim.replay import MAX_CAPACITY, sum_tree
from jaxrl_pim.replay import compact_final_slots as replay_compact_finals
from jaxrl_pim.timing import time_call

LONG_RUN_TRANSITIONS = choices.LONG_RUN_TRANSITIONS  # in jaxrl_pim.choices (no jax)
"""Runs storing at least this many transitions count as long (the command estimates them)."""

ESTIMATE_ROWS = 4096
"""Buffer rows (at most) of the copy of the run that :func:`estimate_seconds` times."""


class RunPlan(NamedTuple):
    """Counts of a run of ``episodes`` episodes starting at ``start_episode``.

    ``env_steps`` steps of the vectorised batch, ``transitions`` stored rows (``num_envs`` per
    step), ``update_rounds``, ``first_update_step`` (1-based env step of the first round,
    counted from the start of training), ``learning_starts`` (transitions it waits for),
    ``buffer_bytes`` (replay buffers and sampler state, all teams).
    """

    start_episode: int
    episodes: int
    env_steps: int
    transitions: int
    update_rounds: int
    first_update_step: int
    learning_starts: int
    buffer_bytes: int


def replay_bytes(config: MARLConfig, capacity: int | None = None) -> int:
    """Bytes of the replay state: every team's buffer (float32 ``obs``, ``action``, ``reward``,
    ``next_obs``, ``done`` for ``capacity`` rows: ``4 C n (2 O + A + 2)``; the ``compact``
    layout ``4 C n (O + A + 2) + 4 C`` plus ``4 (F + E) n O`` for its ``F`` final and ``E``
    pending observations) plus the prioritised samplers' trees (``2 P`` float32 per tree, two
    for ``info_prioritized``).
    ``capacity`` (rows per team buffer) defaults to ``config.buffer_capacity``."""
    teams = config.teams
    cap = config.buffer_capacity if capacity is None else capacity
    if config.layout == "compact":  # obs once, final observations, links, pending, ring pos
        e = config.num_envs
        f = replay_compact_finals(cap, e, config.episode_length)
        total = sum(4 * cap * t.num_agents * (t.obs_dim + t.action_dim + 2) + 4 * cap
                    + 4 * (f + e) * t.num_agents * t.obs_dim + 4 for t in teams)
    else:
        total = sum(4 * cap * t.num_agents * (2 * t.obs_dim + t.action_dim + 2) for t in teams)
    trees = {"prioritized": 1, "info_prioritized": 2}.get(config.sampler, 0)
    if trees:
        total += trees * 4 * 2 * sum_tree.tree_leaves(cap) + 4  # + max_priority
    return total


# ---------------------------------------------------------------- memory before allocation

MEMORY_FRACTION = 0.9
"""Share of the available memory a run's train states may take (the rest: the compiled
program's temporaries, the runtime)."""

MEMORY_LIMIT_ENV = "JAXRL_PIM_MEMORY_LIMIT"
"""Environment variable: bytes available to a run per device, used instead of the measured
figure (e.g. a share of a machine that others use too)."""

#: The peak memory of a run's phases in train states (multiples of the state's bytes), above
#: what the jax runtime holds alone. Measured as the peak RSS (``ru_maxrss`` of the child
#: process) of ``jaxrl-pim marl`` on CPU, 3 spread agents, 1 env, the interleaved and compact
#: layouts, states of 2 MB to 1.6 GB: train 2 episodes with ``--checkpoint``, ``--resume`` to
#: 3, ``marl evaluate``; the 2 MB run's peak (the runtime's, about 0.3 GB) subtracted. Train
#: peaked at 1.0 to 1.09 states (its temporaries fit in what MEMORY_FRACTION leaves free);
#: resume at 1.97 to 2.03 (orbax reads every array of the checkpoint into a host buffer and
#: copies it into a jax array, so the state is held twice while it is read; 2.13 with the
#: command's own bookkeeping, VmHWM above VmRSS before it, in
#: ``tests/marl/test_memory_plan.py``), hence 2.1; evaluate did not grow with the state (it
#: reads the actors only, :func:`jaxrl_pim.marl.policies.load_policies`, counted as twice
#: their bytes, like a resume's read). Not measured on accelerators: the CPU factors are
#: used there too.
PEAK_STATES = {"train": 1.0, "resume": 2.1}

AUTO_HOST_FRACTION = 0.5
"""Share of the host's total memory (``MemTotal``) that ``--capacity auto`` sizes a run for on
a CPU host (the rest: the system and other programs); a device's ``bytes_limit`` is its own."""


def state_bytes(config: MARLConfig, capacity: int | None = None) -> int:
    """Bytes of one seed's :class:`~jaxrl_pim.marl.rollout.TrainState` (networks, optimiser
    states, replay buffers and sampler state, envs), from its shapes (nothing is allocated);
    ``capacity`` replaces ``config.buffer_capacity`` (the replay part is linear in it, plus
    the prioritised trees' power-of-two leaves)."""
    shapes = jax.eval_shape(make_init(config), jax.random.PRNGKey(0))
    total = sum(int(math.prod(x.shape)) * x.dtype.itemsize for x in jax.tree.leaves(shapes))
    if capacity is None:
        return total
    return total - replay_bytes(config) + replay_bytes(config, capacity)


def host_meminfo() -> dict[str, int]:
    """The host's ``/proc/meminfo`` as ``{field: value}``: ``MemTotal``, ``MemAvailable``, ...
    in bytes (the file's kB times 1024), a count without a unit (``HugePages_Total``) as
    written; empty where the file cannot be read (not Linux). The one reader of that file:
    :func:`available_memory`, :func:`total_memory` and the benchmarks' buffer capacities
    read the host's memory through it."""
    try:
        with open("/proc/meminfo") as f:
            lines = f.read().splitlines()
    except OSError:
        return {}
    out: dict[str, int] = {}
    for line in lines:
        field, _, rest = line.partition(":")
        words = rest.split()
        if not words or not words[0].isdigit():
            continue
        out[field.strip()] = int(words[0]) * (1024 if words[1:] == ["kB"] else 1)
    return out


def available_memory(device: Any = None) -> tuple[int, str]:
    """``(bytes, source)``: memory a run may fill on ``device`` (default: the first local
    device). :data:`MEMORY_LIMIT_ENV` when set; else ``bytes_limit - bytes_in_use`` of
    ``Device.memory_stats()`` where the device reports it (GPU, TPU); else the host's
    available memory (``MemAvailable`` of ``/proc/meminfo``, or free physical pages)."""
    import os

    limit = os.environ.get(MEMORY_LIMIT_ENV)
    if limit:
        try:
            return int(float(limit)), MEMORY_LIMIT_ENV
        except ValueError:
            raise ValueError(f"{MEMORY_LIMIT_ENV} must be a number of bytes, got {limit!r}"
                             ) from None
    device = jax.local_devices()[0] if device is None else device
    stats = device.memory_stats() if hasattr(device, "memory_stats") else None
    if stats and "bytes_limit" in stats:
        return (int(stats["bytes_limit"]) - int(stats.get("bytes_in_use", 0)),
                f"{device.platform} memory_stats")
    free = host_meminfo().get("MemAvailable")
    if free is not None:
        return free, "host MemAvailable"
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"), "host free pages"


class MemoryPlan(NamedTuple):
    """A run's memory against what the devices have, decided before allocation.

    ``seed_bytes`` one seed's train state, ``replay_bytes`` its replay buffers and sampler
    state; the peaks of one seed, in bytes (:data:`PEAK_STATES`): ``train_bytes`` training,
    ``resume_bytes`` a ``--resume`` (reading the checkpoint, then training),
    ``evaluate_bytes`` reading the actors for ``marl evaluate``; ``phase`` the phase the plan
    sizes for (``resume`` for a run with checkpoints, which may be resumed; else ``train``);
    ``seeds`` in the run, ``seeds_per_device`` on the fullest device (``ceil(seeds /
    devices)``) and ``needed_bytes`` what the fullest memory holds at the phase's peak:
    ``seeds_per_device`` peaks per accelerator, or every local seed's on a CPU host (its
    devices share the host's memory); ``available_bytes`` from ``source`` and
    ``usable_bytes`` its :data:`MEMORY_FRACTION`; ``fits``; ``max_capacity`` the largest buffer
    capacity (rows per team) that fits with these seeds, ``max_seeds`` the most seeds (a
    multiple of nothing: per memory) that fit at this capacity.
    """

    seed_bytes: int
    seeds: int
    seeds_per_device: int
    needed_bytes: int
    available_bytes: int
    usable_bytes: int
    source: str
    fits: bool
    max_capacity: int
    max_seeds: int
    replay_bytes: int = 0
    train_bytes: int = 0
    resume_bytes: int = 0
    evaluate_bytes: int = 0
    phase: str = "train"


def evaluate_bytes(config: MARLConfig) -> int:
    """The peak bytes of reading one seed's actors (every team's) from a checkpoint for
    ``marl evaluate``, the only arrays it reads: their bytes from the state's shapes, twice
    (read like a resume, :data:`PEAK_STATES`)."""
    shapes = jax.eval_shape(make_init(config), jax.random.PRNGKey(0))
    actors = sum(int(math.prod(x.shape)) * x.dtype.itemsize
                 for t in shapes.teams for x in jax.tree.leaves(t.actor))
    return math.ceil(PEAK_STATES["resume"] * actors)


def evaluation_bytes(config: MARLConfig, teams: int, episodes: int, seeds: int = 1) -> int:
    """A lower bound of the bytes evaluating ``episodes`` episodes of ``seeds`` seeds holds at
    once (they run vmapped): per episode and step its key (2 x uint32) and each team's
    reward (float32), and the returns on the host (float64 per team). Arithmetic only."""
    per_episode = config.episode_length * (8 + 4 * teams) + 8 + 8 * teams
    return seeds * episodes * per_episode


def total_memory(device: Any = None) -> tuple[int, str]:
    """``(bytes, source)``: the fixed memory ``--capacity auto`` sizes a run for, whatever is
    free at that moment: :data:`MEMORY_LIMIT_ENV` when set; else the device's ``bytes_limit``
    (``Device.memory_stats()``, GPU / TPU); else :data:`AUTO_HOST_FRACTION` of the host's
    ``MemTotal`` (``/proc/meminfo``, or its physical pages)."""
    import os

    if os.environ.get(MEMORY_LIMIT_ENV):
        return available_memory(device)
    device = jax.local_devices()[0] if device is None else device
    stats = device.memory_stats() if hasattr(device, "memory_stats") else None
    if stats and "bytes_limit" in stats:
        return int(stats["bytes_limit"]), f"{device.platform} bytes_limit"
    total = host_meminfo().get("MemTotal")
    if total is None:
        total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    share = f"{int(AUTO_HOST_FRACTION * 100)} %"
    return int(total * AUTO_HOST_FRACTION), f"host {share} of MemTotal"


def memory_plan(config: MARLConfig, seeds: int = 1, devices: int = 1,
                available: tuple[int, str] | None = None, max_rows: int | None = None,
                resumable: bool = False) -> MemoryPlan:
    """The memory of ``seeds`` seeds of ``config`` over ``devices`` local devices
    (arithmetic on shapes; nothing is allocated), at the peak of training, or with
    ``resumable`` (a run with checkpoints) of a resume. ``available`` ``(bytes, source)``
    defaults to :func:`available_memory`; ``max_capacity`` is searched up to ``max_rows``
    (default and at most ``replay.MAX_CAPACITY`` rows)."""
    bytes_, source = available_memory() if available is None else available
    on_cpu = source.startswith("host") or jax.local_devices()[0].platform == "cpu"
    per_memory = seeds if on_cpu else -(-seeds // devices)  # seeds sharing one memory
    seed_bytes = state_bytes(config)
    usable = int(bytes_ * MEMORY_FRACTION)
    fixed = seed_bytes - replay_bytes(config)
    phase = "resume" if resumable else "train"
    factor = PEAK_STATES[phase]

    def peak(state: int, of: str = phase) -> int:
        return math.ceil(PEAK_STATES[of] * state)

    def fits_rows(rows: int) -> bool:
        return per_memory * peak(fixed + replay_bytes(config, rows)) <= usable

    lo, hi = 0, min(max_rows if max_rows is not None else MAX_CAPACITY, MAX_CAPACITY)
    while lo < hi:  # the largest capacity whose states fit (0: none)
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if fits_rows(mid) else (lo, mid - 1)
    needed = per_memory * peak(seed_bytes)
    return MemoryPlan(
        seed_bytes=seed_bytes, seeds=seeds, seeds_per_device=-(-seeds // devices),
        needed_bytes=needed, available_bytes=bytes_, usable_bytes=usable, source=source,
        fits=needed <= usable, max_capacity=lo,
        max_seeds=int(usable // (factor * seed_bytes)) * (1 if on_cpu else devices),
        replay_bytes=replay_bytes(config), train_bytes=peak(seed_bytes, "train"),
        resume_bytes=peak(seed_bytes, "resume"),
        evaluate_bytes=evaluate_bytes(config), phase=phase,
    )


def min_capacity(config: MARLConfig) -> int:
    """The smallest buffer capacity the config allows: ``max(batch_size, learning_starts,
    num_envs)`` rows."""
    return max(config.batch_size, config.learning_starts, config.num_envs)


def check_memory(config: MARLConfig, seeds: int = 1, devices: int = 1,
                 available: tuple[int, str] | None = None,
                 flag: str = "buffer_capacity", resumable: bool = False) -> MemoryPlan:
    """:func:`memory_plan`, raising a one-line ``ValueError`` when the states do not fit:
    it names what is needed and available and the largest capacity (``flag``) or number of
    seeds that fits."""
    mp = memory_plan(config, seeds, devices, available, resumable=resumable)
    if mp.fits:
        return mp
    where = ("on this host" if mp.source.startswith("host") or devices == 1
             else "per device")
    one = mp.resume_bytes if resumable else mp.seed_bytes
    need = human_bytes(mp.needed_bytes)
    if mp.needed_bytes != one:
        need = f"{mp.needed_bytes // one} seeds x {human_bytes(one)} = {need}"
    if resumable:  # a run with checkpoints is planned for its resume
        need += (f" to resume from its checkpoints ({PEAK_STATES['resume']:g} x the state's "
                 f"{human_bytes(mp.seed_bytes)})")
    fix = []
    if mp.max_capacity >= min_capacity(config):
        fix.append(f"the largest {flag} that fits is {mp.max_capacity:,} rows")
    else:
        fix.append(f"no {flag} of at least {min_capacity(config):,} rows (batch size, "
                   "learning starts) fits")
    if seeds > 1 and mp.max_seeds >= 1:
        fix.append(f"at most {mp.max_seeds:,} seeds fit at {config.buffer_capacity:,} rows")
    raise ValueError(
        f"the run's train state needs {need} "
        f"({config.buffer_capacity:,} replay rows per team) but {human_bytes(mp.usable_bytes)}"
        f" ({int(MEMORY_FRACTION * 100)} % of {human_bytes(mp.available_bytes)}, "
        f"{mp.source}) is available {where}: " + "; ".join(fix))


def auto_capacity(config: MARLConfig, seeds: int = 1, devices: int = 1,
                  available: tuple[int, str] | None = None, cap: int | None = None,
                  flag: str = "buffer_capacity", resumable: bool = False) -> int:
    """The largest buffer capacity (rows per team, at most ``cap``, default the config's)
    whose ``seeds`` train states fit in memory (with ``resumable``: their resume's peak);
    ``ValueError`` (one line) when not even :func:`min_capacity` fits."""
    cap = config.buffer_capacity if cap is None else cap
    mp = memory_plan(config, seeds, devices, available, max_rows=cap, resumable=resumable)
    if mp.max_capacity < min_capacity(config):
        small = dataclasses.replace(config, buffer_capacity=min_capacity(config))
        fit = memory_plan(small, 1, devices, (mp.available_bytes, mp.source),
                          resumable=resumable).max_seeds
        raise ValueError(
            f"no {flag} of at least {min_capacity(config):,} rows (batch size, learning "
            f"starts) fits {seeds} seed(s) in {human_bytes(mp.usable_bytes)} "
            f"({mp.source}); seeds that fit at that size: "
            f"{fit}")
    return mp.max_capacity


#: The replay layout a run gets when it asks for none, per backend, chosen by measurement: the
#: faithful uniform replay round at N = 24 (``benchmarks/marl_sampling.py``) is fastest with
#: ``per_agent`` on the H200 and with ``interleaved`` (time-major rows) on CPU
#: (``docs/marl.md``, "The layout a run gets"). Backends not listed (TPU: not measured) get
#: the config's default.
BACKEND_LAYOUTS = {"gpu": "per_agent", "cpu": "interleaved"}

#: The most seeds ``--seeds auto`` picks (a host CPU's memory would hold thousands of toy runs).
MAX_AUTO_SEEDS = 256


def default_layout(platform: str | None = None) -> str:
    """The replay layout for ``platform`` (default: jax's default backend) when a run asks for
    none: :data:`BACKEND_LAYOUTS`, else ``MARLConfig``'s default."""
    platform = jax.default_backend() if platform is None else platform
    return BACKEND_LAYOUTS.get(platform, MARLConfig.layout)


def fit_layout(config: MARLConfig, seeds: int = 1, devices: int = 1,
               available: tuple[int, str] | None = None, resumable: bool = False
               ) -> tuple[MARLConfig, str | None]:
    """``config`` as it is when its ``seeds`` train states fit (``resumable``: their resume),
    else with the ``compact`` layout (observations stored once, no ``next_obs`` rows: about
    half the replay bytes) when that fits; the reason of the change (None: unchanged)."""
    if config.layout == "compact" or memory_plan(config, seeds, devices, available,
                                                 resumable=resumable).fits:
        return config, None
    compact = dataclasses.replace(config, layout="compact")
    mp = memory_plan(compact, seeds, devices, available, resumable=resumable)
    if not mp.fits:
        return config, None
    return compact, (f"the {config.layout} layout's states do not fit at "
                     f"{config.buffer_capacity:,} rows; compact ({human_bytes(mp.needed_bytes)}"
                     f") does")


def auto_seeds(config: MARLConfig, devices: int = 1,
               available: tuple[int, str] | None = None, cap: int = MAX_AUTO_SEEDS) -> int:
    """The most seeds (at most ``cap``, a multiple of ``devices`` when more than one fits per
    device) whose train states fit, for ``--seeds auto``; ``ValueError`` (one line) when not
    one does."""
    mp = memory_plan(config, 1, devices, available)
    n = min(mp.max_seeds, cap)
    if n < 1:
        raise ValueError(
            f"not one seed's train state ({human_bytes(mp.seed_bytes)}, "
            f"{config.buffer_capacity:,} replay rows per team) fits in "
            f"{human_bytes(mp.usable_bytes)} ({mp.source}): lower --capacity")
    return n // devices * devices if n >= devices else n


def plan_run(config: MARLConfig, start_episode: int = 0,
             num_episodes: int | None = None) -> RunPlan:
    """The counts of training ``num_episodes`` (default: up to ``config.num_episodes``)
    from episode ``start_episode``."""
    episodes = config.num_episodes - start_episode if num_episodes is None else num_episodes
    episodes = max(episodes, 0)
    start_step = start_episode * config.episode_length
    steps = episodes * config.episode_length
    return RunPlan(
        start_episode=start_episode,
        episodes=episodes,
        env_steps=steps,
        transitions=steps * config.num_envs,
        update_rounds=config.update_rounds(steps, start_step),
        first_update_step=config.first_update_step,
        learning_starts=config.learning_starts,
        buffer_bytes=replay_bytes(config),
    )


def estimate_seconds(config: MARLConfig, plan: RunPlan, key: jax.Array | None = None,
                     repeats: int = 3) -> dict[str, Any]:
    """Measured per-call times of one env step (actions, world step, buffer append) and one
    update round (on an initial state), scaled by the plan's counts.

    The timed copy of the run (all-zero state) keeps every size but the buffer capacity, cut to
    ``max(ESTIMATE_ROWS, batch_size, num_envs)`` rows (no more memory than that is used):
    a step writes and a round reads a fixed number of rows whatever the capacity; only the
    prioritised samplers' tree depth grows with it (``log2`` of the capacity).
    Returns ``{"env_step_s", "update_round_s", "estimated_s", "compile_s",
    "timed_capacity"}``; the estimate excludes compilation (``compile_s`` is what compiling
    the two timed pieces took).
    """
    import time

    key = jax.random.PRNGKey(0) if key is None else key
    rows = min(config.buffer_capacity, max(ESTIMATE_ROWS, config.batch_size, config.num_envs))
    config = dataclasses.replace(config, buffer_capacity=rows,
                                 learning_starts=min(config.learning_starts, rows))
    rollout, learner = make_phases(config)
    # Zeros of the state's shapes: the timed work does not depend on the values, and no
    # initialisation program has to be compiled.
    state = jax.tree.map(lambda x: jnp.zeros(x.shape, x.dtype),
                         jax.eval_shape(rollout.init, key))

    def env_step(state, k):
        actions = rollout.select_actions(state.teams, state.obs, k)
        next_obs, env_state, rewards, terminated = rollout.env_step(k, state.env_state,
                                                                    actions)
        return rollout.buffer_add(state.buffers, state.sampler, state.obs, actions, rewards,
                                  next_obs, terminated)

    t0 = time.perf_counter()
    step = jax.jit(env_step).lower(state, key).compile()
    rnd = None
    if plan.update_rounds:
        rnd = jax.jit(learner.update_round).lower(
            state.teams, state.buffers, state.sampler, jnp.zeros((), jnp.int32), key
        ).compile()
    compile_s = time.perf_counter() - t0
    step_s = time_call(lambda: step(state, key), repeats)
    round_s = 0.0
    if rnd is not None:
        round_s = time_call(lambda: rnd(state.teams, state.buffers, state.sampler,
                                        jnp.zeros((), jnp.int32), key), repeats)
    return {
        "env_step_s": step_s,
        "update_round_s": round_s,
        "estimated_s": plan.env_steps * step_s + plan.update_rounds * round_s,
        "compile_s": compile_s,
        "timed_capacity": rows,
    }


def human_bytes(n: int) -> str:
    """``n`` bytes in B, KiB, MiB, GiB or TiB."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1024
    raise AssertionError  # pragma: no cover


def _human_seconds(s: float) -> str:
    if s < 1:
        return f"{s:.2f} s"
    if s < 120:
        return f"{s:.0f} s"
    if s < 7200:
        return f"{s / 60:.0f} min"
    return f"{s / 3600:.1f} h"


def describe(config: MARLConfig, plan: RunPlan, estimate: dict[str, Any] | None = None
             ) -> list[str]:
    """Human-readable lines about the plan (and the estimate when given)."""
    lines = [
        f"plan: {plan.episodes:,} episodes x {config.episode_length} steps x "
        f"{config.num_envs} env(s) = {plan.transitions:,} transitions, "
        f"{plan.update_rounds:,} update rounds; replay buffers "
        f"{human_bytes(plan.buffer_bytes)} ({config.buffer_capacity:,} rows per team)"
    ]
    if estimate is not None:
        lines.append(
            f"estimated duration: {_human_seconds(estimate['estimated_s'])} (an estimate: "
            f"{plan.env_steps:,} env steps x {estimate['env_step_s'] * 1e3:.3g} ms + "
            f"{plan.update_rounds:,} update rounds x {estimate['update_round_s'] * 1e3:.3g} ms,"
            f" each timed alone on this machine; compilation not included)"
        )
    if plan.update_rounds == 0 and plan.episodes:
        first = math.ceil(plan.first_update_step / config.episode_length)
        lines.append(
            f"warning: no update will run before {plan.learning_starts:,} transitions are "
            f"stored (learning_starts; the first round comes after env step "
            f"{plan.first_update_step:,}, in episode {first:,}); this run stores "
            f"{plan.transitions:,}, so the policies stay untrained"
        )
    return lines


def auto_line(memory: dict[str, Any]) -> str:
    """The line ``--capacity auto`` prints: the rows it chose (or a resume read back) and the
    memory they were sized for (``memory``: :func:`jaxrl_pim.cli.marl.fit_memory`'s record)."""
    rows = f"--capacity auto: {memory['buffer_capacity']:,} rows per team"
    if memory["recorded"]:
        return f"{rows}, as the run chose when it started (recorded in its checkpoints)"
    what = "resume's peak" if memory["phase"] == "resume" else "train state"
    seeds = "" if memory["seeds"] == 1 else f" of {memory['seeds']} seeds"
    return (f"{rows}, the largest whose {what}{seeds} fits in "
            f"{human_bytes(memory['usable_bytes'])} ({memory['source']})")
