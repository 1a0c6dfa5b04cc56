"""Trained policies back from a checkpoint: load, act, evaluate, roll out one episode.

:func:`load_policies` reads the newest checkpoint of a MARL run folder (written by
``jaxrl-pim marl --checkpoint DIR``) through :class:`jaxrl_pim.checkpoint.Checkpoints`: the
run's configuration comes from the folder's fingerprint, the actors' parameters from the
saved train state. The returned :class:`Policies` carries a jitted ``act(obs, key)``
(Gumbel-softmax samples, the behaviour policy of training) and ``greedy(obs)`` (the same
without noise: ``softmax(logits / temperature)``; a ``Discrete`` JaxMARL agent takes its
argmax, the most likely action).

:func:`evaluate` runs whole episodes of one environment with the greedy, sampled or a
uniform-random policy and returns the return per team; :func:`rollout_positions` records
one episode's positions for :mod:`jaxrl_pim.marl.render`.

Example::

    from jaxrl_pim.marl import load_policies, evaluate
    policies = load_policies("runs/spread3")
    actions = policies.greedy(obs)            # obs[t] [n_t, O_t] -> actions[t] [n_t, K_t]
    returns = evaluate(policies.config, policies.params, jax.random.PRNGKey(0), 100)
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl_pim import choices
from jaxrl_pim.checks import check_choice, check_int
from jaxrl_pim.marl.config import MARLConfig
from jaxrl_pim.marl.networks import gumbel_softmax, make_networks
from jaxrl_pim.marl.trainer import make_env, make_init

__all__ = ["POLICIES", "Policies", "config_from_fingerprint", "evaluate", "load_policies",
           "make_act", "rollout_positions"]

POLICIES = choices.POLICIES  # in jaxrl_pim.choices (no jax to import)
"""Policies :func:`evaluate` runs: ``greedy`` (softmax of the logits, no noise), ``sample``
(Gumbel-softmax, as in training), ``random`` (Gumbel-softmax of zero logits: uniformly random
discrete actions, the untrained policy's distribution)."""


class Policies(NamedTuple):
    """A run's trained actors.

    ``config``: the run's :class:`MARLConfig`; ``teams``: its ``TeamSpec``s; ``params``:
    one actor parameter pytree per team, leaves ``[n_t, ...]`` (agents stacked);
    ``act(obs, key) -> actions`` and ``greedy(obs) -> actions`` (jitted; ``obs[t]``
    ``[..., n_t, O_t]``, ``actions[t]`` ``[..., n_t, K_t]`` on the simplex);
    ``episodes_done``: episodes trained when the checkpoint was written; ``checkpoint``:
    the checkpoint's folder. A group of seeds (``jaxrl-pim marl --seeds S``,
    :func:`jaxrl_pim.marl.seeds.run_seeds`): ``params`` / ``act`` / ``greedy`` are seed
    ``seed_index``'s, ``seed_params`` every seed's (leaves ``[S, n_t, ...]``) and
    ``num_seeds`` is S; a single run has ``seed_params`` None and ``num_seeds`` 1.
    """

    config: MARLConfig
    teams: tuple[Any, ...]
    params: tuple[Any, ...]
    act: Callable[..., tuple[jax.Array, ...]]
    greedy: Callable[..., tuple[jax.Array, ...]]
    episodes_done: int
    checkpoint: Path
    seed_params: tuple[Any, ...] | None = None
    num_seeds: int = 1


def make_act(config: MARLConfig) -> tuple[Callable[..., tuple[jax.Array, ...]],
                                          Callable[..., tuple[jax.Array, ...]]]:
    """``(act, greedy)`` for the actors of ``config``: ``act(params, obs, key)`` samples the
    Gumbel-softmax (temperature ``config.temperature``); ``greedy(params, obs)`` is
    ``softmax(logits / temperature)``. ``params[t]`` as in :class:`Policies`."""
    actors = make_networks(config.hidden, [t.action_dim for t in config.teams], config.lr,
                           config.grad_clip).actors

    def logits(params: tuple[Any, ...], obs: tuple[jax.Array, ...]) -> list[jax.Array]:
        out = []
        for ti, net in enumerate(actors):
            o = jnp.asarray(obs[ti], jnp.float32)
            axis = o.ndim - 2  # the agent axis
            out.append(jax.vmap(net.apply, in_axes=(0, axis), out_axes=axis)(params[ti], o))
        return out

    def act(params, obs, key):
        return tuple(gumbel_softmax(jax.random.fold_in(key, ti), lg, config.temperature)
                     for ti, lg in enumerate(logits(params, obs)))

    def greedy(params, obs):
        return tuple(jax.nn.softmax(lg / config.temperature, axis=-1)
                     for lg in logits(params, obs))

    return act, greedy


def config_from_fingerprint(fingerprint: Any, episodes: int = 0) -> MARLConfig:
    """The :class:`MARLConfig` a MARL checkpoint folder was written with (its fingerprint's
    ``config``; ``num_episodes`` set to ``episodes``). ValueError when the fingerprint is not
    a MARL run's."""
    fields = fingerprint.get("config") if isinstance(fingerprint, dict) else None
    names = {f.name for f in dataclasses.fields(MARLConfig)}
    if not isinstance(fields, dict) or "algo" not in fields or not set(fields) <= names:
        raise ValueError("it is not a MARL checkpoint (no MADDPG / MATD3 / MASAC "
                         "configuration in its record)")
    fields = dict(fields, num_episodes=episodes)
    fields["hidden"] = tuple(fields["hidden"])
    if fields.get("env") == "tag":  # stored resolved; the preset form when it is one
        from jaxrl_pim.envs.mpe import TAG_PRESETS

        sizes = (fields["num_agents"], fields["num_prey"], fields["num_obstacles"])
        if TAG_PRESETS.get(fields["num_agents"]) == sizes:
            fields["num_prey"] = fields["num_obstacles"] = None
    return MARLConfig(**fields)


def load_policies(checkpoint_dir: str | Path, *, env: str | None = None,
                  seed_index: int = 0) -> Policies:
    """The actors of the newest intact checkpoint in ``checkpoint_dir`` (a MARL run folder;
    a damaged newer step is named in one line on stderr and passed over). For a group of
    seeds, every seed's actors, and seed ``seed_index``'s as the policies' own. Only the
    actors' parameters are read from the checkpoint (a partial restore): its replay buffers,
    critics and optimiser states are never loaded.

    ``env`` (optional, e.g. ``"spread"`` or ``"jaxmarl:MPE_simple_spread_v3"``): the world
    the caller expects; a checkpoint of another world is refused. Raises ValueError (one
    line) for a folder without a checkpoint, a checkpoint that is not a MARL run's, or one
    of another world.
    """
    from jaxrl_pim.checkpoint import Checkpoints, restore_newest, run_kind

    folder = Path(checkpoint_dir)
    if not folder.is_dir():
        raise ValueError(f"{str(folder)!r} is not a folder (expected a MARL run's "
                         "--checkpoint folder)")
    found: dict[str, Any] = {}

    def template(step: int) -> dict[str, Any]:
        record = reader.record(step)  # Damaged (the step is passed over) when unreadable
        kind = run_kind(record["fingerprint"])
        if kind not in (None, "MARL"):
            raise ValueError(f"{str(folder)!r} holds {'an' if kind == 'ActorQ' else 'a'} "
                             f"{kind} run's checkpoints, not a MARL run's")
        try:
            config = config_from_fingerprint(record["fingerprint"], step)
        except ValueError as err:
            raise ValueError(f"{str(folder)!r}: {err}") from None
        if env is not None and env != config.env:
            raise ValueError(f"{str(folder)!r} holds a checkpoint of env {config.env!r}, not "
                             f"{env!r}")
        found.update(config=config, teams=config.teams)
        seeds = record["fingerprint"].get("num_seeds") if isinstance(
            record["fingerprint"], dict) else None
        found["num_seeds"] = seeds
        if seeds is None:
            state = jax.eval_shape(make_init(config), jax.random.PRNGKey(0))
        else:
            state = jax.eval_shape(jax.vmap(make_init(config)),
                                   jax.ShapeDtypeStruct((seeds, 2), np.uint32))
        # the actors only (a partial restore): the replay buffers are never loaded
        return {"state": {"teams": tuple({"actor": t.actor} for t in state.teams)}}

    # the newest step that restores and verifies (a damaged newer one is named on stderr)
    with Checkpoints(folder) as reader:
        if reader.latest() is None:
            raise ValueError(f"{str(folder)!r} holds no checkpoint (expected a MARL run's "
                             "--checkpoint folder)")
        step, tree, _ = restore_newest(reader, template, check=False, partial=True)
    config, teams, num_seeds = found["config"], found["teams"], found["num_seeds"]
    restored = tree
    params = tuple(t["actor"] for t in restored["state"]["teams"])
    seed_params = None
    if num_seeds is not None:
        if not 0 <= seed_index < num_seeds:
            raise ValueError(f"seed_index must be in [0, {num_seeds}) for the {num_seeds} "
                             f"seeds of {str(folder)!r}, got {seed_index}")
        seed_params = params
        params = jax.tree.map(lambda x: x[seed_index], seed_params)
    act, greedy = make_act(config)
    return Policies(config=config, teams=tuple(teams), params=params,
                    act=jax.jit(lambda obs, key: act(params, obs, key)),
                    greedy=jax.jit(lambda obs: greedy(params, obs)),
                    episodes_done=int(step), checkpoint=folder.resolve(),
                    seed_params=seed_params, num_seeds=num_seeds or 1)


def _policy_fn(config: MARLConfig, teams: tuple[Any, ...], policy: str
               ) -> Callable[[Any, tuple[jax.Array, ...], jax.Array], tuple[jax.Array, ...]]:
    """``pi(params, obs, key) -> actions`` of ``policy`` (``params`` unused for random)."""
    check_choice("policy", policy, POLICIES)
    if policy == "random":
        def rand(params, obs, key):
            return tuple(gumbel_softmax(jax.random.fold_in(key, ti),
                                        jnp.zeros((t.num_agents, t.action_dim)),
                                        config.temperature) for ti, t in enumerate(teams))
        return rand
    act, greedy = make_act(config)
    if policy == "greedy":
        return lambda params, obs, key: greedy(params, obs)
    return act


def _check_params(params: Any, policy: str) -> None:
    check_choice("policy", policy, POLICIES)
    if params is None and policy != "random":
        raise ValueError(f"policy {policy!r} needs the actors' parameters")


def _episode(config: MARLConfig, policy: str, record: bool) -> Callable:
    """``run(params, key)``: one episode of ``policy`` from ``key``; the parameters are an
    argument, so one compiled program serves every set of actors of ``config``."""
    env, env_params = make_env(config)
    if env_params is not None:
        env_params = env_params.replace(max_steps=config.episode_length)
    pi = _policy_fn(config, tuple(env.teams), policy)

    def run(params, key):
        k0, k1 = jax.random.split(key)
        obs, state = env.reset(k0, env_params)

        def step(carry, k):
            obs, state = carry
            k_act, k_env = jax.random.split(k)
            actions = pi(params, obs, k_act)
            obs, state, rewards, _, _ = env.step_env(k_env, state, actions, env_params)
            out = jnp.stack([r.mean() for r in rewards])
            if record:
                out = (out, _positions(env, state))
            return (obs, state), out

        _, out = jax.lax.scan(step, (obs, state),
                              jax.random.split(k1, config.episode_length))
        if record:
            rewards, pos = out
            first = _positions(env, state)
            pos = jax.tree.map(lambda a, b: jnp.concatenate([a[None], b]), first, pos)
            return rewards.sum(axis=0), pos
        return out.sum(axis=0)

    return run


def evaluate(config: MARLConfig, params: tuple[Any, ...] | None, key: jax.Array,
             num_episodes: int, *, policy: str = "greedy") -> np.ndarray:
    """Returns of ``num_episodes`` episodes (``config.episode_length`` steps each) of one
    environment under ``policy`` (see :data:`POLICIES`; ``params`` may be None for
    ``"random"``): float ``[num_episodes, num_teams]``, each entry the episode's summed
    reward averaged over the team's agents (the trainer's ``episode_return``). Episode
    ``i`` starts from ``fold_in(key, i)``, so two policies evaluated with one key see the
    same initial worlds."""
    n = check_int("num_episodes", num_episodes, lo=1)
    _check_params(params, policy)
    keys = jax.vmap(lambda i: jax.random.fold_in(key, i))(jnp.arange(n))
    return np.asarray(_evaluator(config, policy)(params, keys), np.float64)


@functools.lru_cache(maxsize=32)
def _evaluator(config: MARLConfig, policy: str) -> Callable:
    """Jitted ``(params, keys [n, 2]) -> returns [n, num_teams]``, one per config and policy
    (its compiled programs are reused for every set of actors of that shape)."""
    return jax.jit(jax.vmap(_episode(config, policy, record=False), in_axes=(None, 0)))


@functools.lru_cache(maxsize=32)
def _recorder(config: MARLConfig, policy: str) -> Callable:
    return jax.jit(_episode(config, policy, record=True))


def _positions(env: Any, state: Any) -> dict[str, jax.Array]:
    if hasattr(state, "agent_pos"):
        return {"agents": state.agent_pos, "landmarks": state.landmark_pos}
    n = env.num_agents  # a JaxMARL MPE state: agents first, then landmarks
    return {"agents": state.p_pos[:n], "landmarks": state.p_pos[n:]}


def rollout_positions(config: MARLConfig, params: tuple[Any, ...] | None, key: jax.Array,
                      *, policy: str = "greedy") -> dict[str, Any]:
    """One episode for rendering: ``agents`` float ``[T + 1, A, 2]`` and ``landmarks``
    ``[T + 1, L, 2]`` (world units, the reset state first), ``agent_radius [A]``,
    ``landmark_radius [L]``, ``agent_team [A]`` (team index), ``team_names``, ``env``,
    ``landmark_kind`` (``"landmark"`` or ``"obstacle"``) and ``returns [num_teams]``."""
    _check_params(params, policy)
    env, env_params = make_env(config)
    returns, pos = _recorder(config, policy)(params, key)
    if env_params is not None:
        agent_r, land_r = np.asarray(env_params.agent_size), np.asarray(env_params.landmark_size)
        kind = "obstacle" if len(env.teams) > 1 else "landmark"
    else:
        rad = np.asarray(env.env.rad)
        agent_r, land_r = rad[:env.num_agents], rad[env.num_agents:]
        kind = "obstacle" if "tag" in config.env else "landmark"
    team = np.concatenate([np.full(t.num_agents, i) for i, t in enumerate(env.teams)])
    if env_params is None:  # JaxMARL agent order -> team index
        order = {a: i for i, agents in enumerate(env.team_agents) for a in agents}
        team = np.array([order[a] for a in env.env.agents])
    return {"agents": np.asarray(pos["agents"]), "landmarks": np.asarray(pos["landmarks"]),
            "agent_radius": agent_r, "landmark_radius": land_r, "agent_team": team,
            "team_names": [t.name for t in env.teams], "env": config.env,
            "landmark_kind": kind, "returns": np.asarray(returns)}
