"""The shared config checks (``jaxrl_pim.checks`` and the rl configs' shared field checks in
``jaxrl_pim.rl.common``): exact messages naming the field and the value, and every config
that has the fields rejecting the same bad values."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from jaxrl_pim.checks import MAX_LAYER_WIDTH, check_bool, check_widths


@pytest.mark.parametrize("value", [True, False, np.bool_(True)])
def test_check_bool_takes_bools(value) -> None:
    assert check_bool("flag", value) is bool(value)


@pytest.mark.parametrize("value", [1, 0, "yes", None, 1.0])
def test_check_bool_refuses_the_rest_naming_field_and_value(value) -> None:
    with pytest.raises(ValueError) as err:
        check_bool("flag", value)
    assert str(err.value) == f"flag must be True or False, got {value!r}"


def test_check_widths() -> None:
    assert check_widths("hidden", (1, MAX_LAYER_WIDTH)) == (1, MAX_LAYER_WIDTH)
    assert check_widths("hidden", (8,) * 4, 16, max_layers=4) == (8, 8, 8, 8)
    cases = [
        (((),), "hidden must be a non-empty tuple of layer widths, got ()"),
        (([64],), "hidden must be a non-empty tuple of layer widths, got [64]"),
        (((8,) * 5, 16, 4), "hidden must be a non-empty tuple of layer widths (at most 4), got "
                            "(8, 8, 8, 8, 8)"),
        (((64, 0),), "hidden[1] must be >= 1, got 0"),
        (((17,), 16), "hidden[0] must be <= 16, got 17"),
        (((MAX_LAYER_WIDTH + 1,),), f"hidden[0] must be <= {MAX_LAYER_WIDTH}, got 65537"),
        (((8, 2.0),), "hidden[1] must be an integer, got 2.0"),
    ]
    for args, message in cases:
        with pytest.raises(ValueError) as err:
            check_widths("hidden", *args)
        assert str(err.value) == message


def _rl_configs():
    from jaxrl_pim.rl.a2c import A2CConfig
    from jaxrl_pim.rl.ddpg import DDPGConfig
    from jaxrl_pim.rl.dqn import DQNConfig
    from jaxrl_pim.rl.ppo import PPOConfig

    return {"a2c": A2CConfig(), "ppo": PPOConfig(), "dqn": DQNConfig(),
            "ddpg": DDPGConfig(env_name="Pendulum-v1")}


# (field, bad value, message) -> the configs that have the field
SHARED = [
    ("hidden", (64, 0), r"hidden\[1\] must be >= 1, got 0", ("a2c", "ppo", "dqn", "ddpg")),
    ("hidden", (8,) * 5, r"hidden must be a non-empty tuple of layer widths \(at most 4\)",
     ("a2c", "ppo", "dqn", "ddpg")),
    ("activation", "gelu", "activation must be one of 'tanh', 'relu'; got 'gelu'",
     ("a2c", "ppo", "dqn", "ddpg")),
    ("qat", 8, "qat must be a QATConfig or None, got 8", ("a2c", "ppo", "dqn", "ddpg")),
    ("num_envs", 0, "num_envs must be >= 1, got 0", ("a2c", "ppo", "dqn", "ddpg")),
    ("num_steps", 100_001, "num_steps must be <= 100000", ("a2c", "ppo")),
    ("gae_lambda", 1.5, "gae_lambda must be <= 1.0, got 1.5", ("a2c", "ppo")),
    ("ent_coef", -0.1, "ent_coef must be >= 0.0, got -0.1", ("a2c", "ppo")),
    ("max_grad_norm", 0.0, "max_grad_norm must be > 0.0, got 0.0", ("a2c", "ppo", "dqn")),
    ("batch_size", 0, "batch_size must be >= 1, got 0", ("dqn", "ddpg")),
    ("learning_starts", 1, "learning_starts must be >= ", ("dqn", "ddpg")),
    ("normalize_obs", 1, "normalize_obs must be True or False, got 1", ("dqn", "ddpg")),
    ("anneal_lr", "no", "anneal_lr must be True or False, got 'no'", ("ppo", "dqn")),
]


@pytest.mark.parametrize("field,value,match,names", SHARED,
                         ids=[f"{s[0]}={s[1]!r}" for s in SHARED])
def test_rl_configs_reject_shared_fields_alike(field, value, match, names) -> None:
    configs = _rl_configs()
    for name in names:
        with pytest.raises(ValueError, match=match):
            dataclasses.replace(configs[name], **{field: value})
    for name in set(configs) - set(names):  # the others do not have the field at all
        assert field not in {f.name for f in dataclasses.fields(configs[name])}


def test_rl_total_timesteps_must_hold_one_step_or_rollout() -> None:
    configs = _rl_configs()
    with pytest.raises(ValueError, match="total_timesteps must be >= 64, got 63"):
        dataclasses.replace(configs["a2c"], num_envs=8, num_steps=8, total_timesteps=63)
    with pytest.raises(ValueError, match="total_timesteps must be >= 4, got 3"):
        dataclasses.replace(configs["ddpg"], num_envs=4, total_timesteps=3)
    with pytest.raises(ValueError, match="buffer_capacity must be >= 4, got 3"):
        dataclasses.replace(configs["dqn"], num_envs=4, buffer_capacity=3, batch_size=2,
                            learning_starts=2)
