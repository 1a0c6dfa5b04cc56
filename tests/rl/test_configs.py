"""The learners' configs on their shared bases (jaxrl_pim.rl.configs): every field keeps its
name, default and place, the bases hold the shared checks, and the configs stay frozen,
hashable values of their own class."""

from __future__ import annotations

import dataclasses

import pytest

from jaxrl_pim.rl.a2c import A2CConfig
from jaxrl_pim.rl.configs import ActorCriticConfig, LearnerConfig, OffPolicyConfig
from jaxrl_pim.rl.ddpg import DDPGConfig
from jaxrl_pim.rl.dqn import DQNConfig
from jaxrl_pim.rl.ppo import PPOConfig

# Written out by hand: each learner's fields, in order, with the defaults they have always had.
NETWORK_AC = [("hidden", (64, 64)), ("activation", "tanh"), ("qat", None)]
EXPECTED = {
    A2CConfig: [
        ("env_name", "CartPole-v1"), ("total_timesteps", 100_000), ("num_envs", 16),
        ("num_steps", 8), ("lr", 1e-3), ("gamma", 0.99), ("gae_lambda", 1.0),
        ("ent_coef", 0.01), ("vf_coef", 0.5), ("max_grad_norm", 0.5), *NETWORK_AC,
    ],
    PPOConfig: [
        ("env_name", "CartPole-v1"), ("total_timesteps", 100_000), ("num_envs", 4),
        ("num_steps", 128), ("lr", 2.5e-4), ("gamma", 0.99), ("gae_lambda", 0.95),
        ("ent_coef", 0.01), ("vf_coef", 0.5), ("max_grad_norm", 0.5), *NETWORK_AC,
        ("update_epochs", 4), ("num_minibatches", 4), ("anneal_lr", True), ("clip_eps", 0.2),
    ],
    DQNConfig: [
        ("env_name", "CartPole-v1"), ("total_timesteps", 50_000), ("num_envs", 4),
        ("buffer_capacity", 10_000), ("batch_size", 64), ("learning_starts", 1_000),
        ("train_frequency", 1), ("target_update_interval", 250), ("lr", 5e-4),
        ("gamma", 0.99), ("eps_start", 1.0), ("eps_end", 0.05), ("exploration_fraction", 0.3),
        ("max_grad_norm", 10.0), ("anneal_lr", False), ("normalize_obs", False),
        ("explore_hold", 1), ("advantage_learning", 0.0), ("hidden", (64, 64)),
        ("activation", "relu"), ("qat", None),
    ],
    DDPGConfig: [
        ("env_name", "Pendulum-v1"), ("total_timesteps", 20_000), ("num_envs", 1),
        ("buffer_capacity", 20_000), ("batch_size", 128), ("learning_starts", 1_000),
        ("actor_lr", 1e-3), ("critic_lr", 1e-3), ("gamma", 0.99), ("tau", 0.005),
        ("expl_noise", 0.1), ("noise_hold", 1), ("normalize_obs", False),
        ("hidden", (128, 128)), ("activation", "relu"), ("qat", None),
    ],
}


@pytest.mark.parametrize("cls", list(EXPECTED), ids=lambda c: c.__name__)
def test_fields_names_defaults_and_order(cls) -> None:
    fields = dataclasses.fields(cls)
    assert [(f.name, f.default) for f in fields] == EXPECTED[cls]
    assert all(type(f.default) is type(d) for f, (_, d) in zip(fields, EXPECTED[cls], strict=True))
    config = cls()
    assert [(n, getattr(config, n)) for n, _ in EXPECTED[cls]] == EXPECTED[cls]


def test_positional_environment_and_derived_sizes() -> None:
    ppo = PPOConfig("Acrobot-v1", 2_048, 8, 64, num_minibatches=8)
    assert (ppo.env_name, ppo.total_timesteps, ppo.num_envs, ppo.num_steps) == (
        "Acrobot-v1", 2_048, 8, 64)
    assert (ppo.num_updates, ppo.minibatch_size) == (2_048 // (8 * 64), 8 * 64 // 8)
    assert A2CConfig("Acrobot-v1", 1_000).num_updates == 1_000 // (16 * 8)
    dqn = DQNConfig("MountainCar-v0", 999, 2, 500, 32, 100)
    assert (dqn.buffer_capacity, dqn.batch_size, dqn.learning_starts) == (500, 32, 100)
    assert dqn.num_iterations == 999 // 2
    assert DDPGConfig("MountainCarContinuous-v0", 301, 3).num_iterations == 100


def test_bases_and_value_semantics() -> None:
    assert issubclass(A2CConfig, ActorCriticConfig) and issubclass(PPOConfig, ActorCriticConfig)
    assert issubclass(DQNConfig, OffPolicyConfig) and issubclass(DDPGConfig, OffPolicyConfig)
    assert all(issubclass(c, LearnerConfig) for c in EXPECTED)
    assert not issubclass(PPOConfig, A2CConfig) and not issubclass(A2CConfig, PPOConfig)
    # the same shared fields in two classes are two different configs
    shared = {f.name: getattr(A2CConfig(), f.name) for f in dataclasses.fields(A2CConfig)}
    assert PPOConfig(**shared) != A2CConfig()
    for cls in EXPECTED:
        config = cls()
        with pytest.raises(dataclasses.FrozenInstanceError):
            config.num_envs = 2  # type: ignore[misc]
        assert config == cls() and hash(config) == hash(cls())
        assert config != dataclasses.replace(config, total_timesteps=config.total_timesteps + 8)
        assert len({config, cls()}) == 1


def test_shared_checks_name_the_field_and_the_learner() -> None:
    with pytest.raises(ValueError, match="DQN needs discrete actions"):
        DQNConfig("Pendulum-v1")
    with pytest.raises(ValueError, match="DDPG needs continuous actions"):
        DDPGConfig("CartPole-v1")
    assert PPOConfig("Pendulum-v1").env_name == "Pendulum-v1"  # actor-critic: either kind
    assert A2CConfig("Pendulum-v1").env_name == "Pendulum-v1"
    # the base checks run again on dataclasses.replace
    cases = [
        (A2CConfig(), {"gae_lambda": 1.5}, "gae_lambda must be <= 1.0, got 1.5"),
        (PPOConfig(), {"clip_eps": 0.0}, "clip_eps must be > 0.0, got 0.0"),
        (PPOConfig(), {"vf_coef": -1.0}, "vf_coef must be >= 0.0, got -1.0"),
        (DQNConfig(), {"gamma": 1.5}, "gamma must be <= 1.0, got 1.5"),
        (DDPGConfig(), {"gamma": -0.1}, "gamma must be >= 0.0, got -0.1"),
        (DDPGConfig(), {"tau": 0.0}, "tau must be > 0.0, got 0.0"),
        (DQNConfig(), {"eps_end": 1.5}, "eps_end must be <= 1.0, got 1.5"),
        (DQNConfig(), {"normalize_obs": True}, "finite observation bounds"),
        (DDPGConfig(), {"activation": "gelu"}, "activation must be one of"),
    ]
    for config, change, message in cases:
        with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
            dataclasses.replace(config, **change)
