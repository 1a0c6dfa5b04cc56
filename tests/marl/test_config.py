"""MARLConfig: one validation per field, limits shared with the components, derived sizes."""

from __future__ import annotations

import dataclasses

import pytest

from jaxrl_pim import replay
from jaxrl_pim.envs import mpe
from jaxrl_pim.marl.config import MARLConfig
from jaxrl_pim.marl.trainer import make_buffers, make_env, make_sampler
from jaxrl_pim.replay import MAX_CAPACITY


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"algo": "ddpg"}, "algo"),
        ({"env": "tag", "num_agents": 5}, "num_agents"),
        ({"batch_size": 2048, "buffer_capacity": 1000}, "batch_size"),
        ({"learning_starts": 100}, "learning_starts"),
        ({"sampler": "neighbor", "num_refs": 3}, "num_refs"),
        ({"gamma": 1.5}, "gamma"),
        ({"hidden": (64, 0)}, "hidden"),
        ({"sampling_mode": "slow"}, "sampling_mode"),
        ({"num_envs": 8, "buffer_capacity": 4, "batch_size": 2, "learning_starts": 2},
         "buffer_capacity"),
        ({"num_refs": 0}, "num_refs"),
        ({"window": 1}, "window"),
        ({"num_prey": 2}, "num_prey"),
        ({"env": "tag", "num_agents": 3, "num_obstacles": 4}, "num_obstacles"),
        ({"env": "tag", "num_agents": 5, "num_prey": 0}, "num_prey"),
        ({"num_agents": mpe.MAX_AGENTS + 1}, "num_agents"),
    ],
)
def test_config_rejects_bad_values(kwargs, field):
    with pytest.raises(ValueError, match=field):
        MARLConfig(**kwargs)


def test_defaults_are_the_reference_hyperparameters():
    """The original MADDPG defaults, MATD3 delay 2, MASAC alpha 0.05."""
    c = MARLConfig()
    assert (c.lr, c.gamma, c.tau, c.grad_clip, c.logits_reg) == (0.01, 0.95, 0.01, 0.5, 1e-3)
    assert (c.batch_size, c.buffer_capacity, c.update_every, c.learning_starts) == (
        1024, 1_000_000, 100, 25_600)
    assert (c.hidden, c.episode_length, c.num_episodes, c.temperature) == (
        (64, 64), 25, 60_000, 1.0)
    assert c.policy_delay == 2 and c.entropy_coef == 0.05


@pytest.mark.parametrize("sampler", ["uniform", "prioritized", "info_prioritized"])
def test_capacity_limit_is_the_components_limit(sampler):
    """A capacity the config accepts builds buffers and samplers (one limit everywhere); one
    row more is rejected by the config itself, naming the field."""
    cfg = MARLConfig(buffer_capacity=MAX_CAPACITY, sampler=sampler)
    make_buffers(cfg, make_env(cfg)[0].teams)  # validates only; allocation happens in init
    make_sampler(cfg)
    with pytest.raises(ValueError, match="buffer_capacity"):
        dataclasses.replace(cfg, buffer_capacity=cfg.buffer_capacity + 1)
    with pytest.raises(ValueError, match="capacity"):
        replay.prioritized(cfg.buffer_capacity + 1)
    with pytest.raises(ValueError, match="capacity"):
        replay.make_buffer("per_agent", cfg.buffer_capacity + 1, 1, 1, 1)


def test_tag_composition_presets_and_explicit_sizes():
    assert MARLConfig(env="tag", num_agents=24).tag_sizes == (24, 8, 8)
    explicit = MARLConfig(env="tag", num_agents=5, num_prey=3)
    assert explicit.tag_sizes == (5, 3, 3) and explicit.total_agents == 8
    assert MARLConfig(env="tag", num_agents=5, num_prey=1, num_obstacles=0).tag_sizes == (5, 1, 0)
    # The default obstacle rule is the presets' rule.
    for k, (a, g, o) in mpe.TAG_PRESETS.items():
        assert MARLConfig(env="tag", num_agents=a, num_prey=g).tag_sizes == (a, g, o), k
    env, _ = make_env(explicit)
    assert [(t.name, t.num_agents) for t in env.teams] == [("predators", 5), ("prey", 3)]
    with pytest.raises(ValueError, match="tag"):
        MARLConfig().tag_sizes  # noqa: B018


@pytest.mark.parametrize("num_envs, learning_starts, update_every, upr",
                         [(1, 25_600, 100, 1), (2, 16, 2, 1), (256, 3200, 1, 1), (3, 10, 4, 2),
                          (16, 64, 1, 1)])
def test_update_rounds_match_the_schedule_loop(num_envs, learning_starts, update_every, upr):
    """The closed form against the trainer's rule applied step by step: after step s
    (1-based), ``updates_per_round`` rounds iff ``s % update_every == 0`` and the buffer
    holds ``min(s * num_envs, capacity) >= learning_starts`` rows."""
    cfg = MARLConfig(num_envs=num_envs, learning_starts=learning_starts, batch_size=8,
                     update_every=update_every, updates_per_round=upr,
                     buffer_capacity=max(learning_starts, 4 * num_envs))
    for start, steps in [(0, 1500), (0, 7), (300, 400), (12, 0)]:
        want = sum(upr for s in range(start + 1, start + steps + 1)
                   if s % update_every == 0
                   and min(s * num_envs, cfg.buffer_capacity) >= learning_starts)
        assert cfg.update_rounds(steps, start) == want, (start, steps)
    first = next(s for s in range(1, 10**6) if cfg.update_rounds(s) > 0)
    assert cfg.first_update_step == first


def test_teams_without_a_world_are_the_built_worlds_teams():
    """``config.teams`` (jax-free, from the fields) equals what the built world reports:
    team names, sizes, observation and action lengths, for spread and tag (presets and
    explicit compositions) at several sizes; the observation shapes are also checked against
    the world's own ``reset`` (traced, not run), independent of the team tables."""
    import jax

    configs = [MARLConfig(env="spread", num_agents=n) for n in (1, 2, 3, 7, 24)]
    configs += [MARLConfig(env="tag", num_agents=k) for k in mpe.TAG_PRESETS]
    configs += [MARLConfig(env="tag", num_agents=a, num_prey=g, num_obstacles=o)
                for a, g, o in ((1, 1, 0), (5, 3, None), (2, 7, 1), (4, 1, 9))]
    key = jax.ShapeDtypeStruct((2,), "uint32")
    for cfg in configs:
        env, params = make_env(cfg)
        teams = cfg.teams
        assert isinstance(teams, tuple) and all(isinstance(t, mpe.TeamSpec) for t in teams)
        assert teams == env.teams, cfg
        assert [t.name for t in teams] == (["agents"] if cfg.env == "spread"
                                           else ["predators", "prey"])
        assert cfg.total_agents == env.num_agents == sum(t.num_agents for t in teams)
        obs, _ = jax.eval_shape(env.reset, key, params)
        assert [o.shape for o in obs] == [(t.num_agents, t.obs_dim) for t in teams], cfg
        assert [t.action_dim for t in teams] == [mpe.ACTION_DIM] * len(teams)
