"""``evaluate_quantized``: a user's own flax policy under quantization, against NumPy.

A hand-made environment object (four states visited in turn, reward 1 for the state's target
action) makes every number closed-form: the return is 3 x the number of states whose greedy
action is the target, and the KL / agreement are averages over the four states.
"""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import struct
from gymnax.environments import environment, spaces

from jaxrl_pim.quant import QuantSpec, fake_quantize
from jaxrl_pim.studies import evaluate_quantized

TARGET = np.array([0, 1, 2, 0])


@struct.dataclass
class _State:
    time: jax.Array


@struct.dataclass
class _Params:
    max_steps_in_episode: int = 12


class Pointer(environment.Environment):
    """States 0, 1, 2, 3, 0, ... (one-hot observations); reward 1 for action TARGET[state]."""

    @property
    def default_params(self) -> _Params:
        return _Params()

    def get_obs(self, state, params=None, key=None):
        return jax.nn.one_hot(state.time % 4, 4)

    def reset_env(self, key, params):
        state = _State(jnp.zeros((), jnp.int32))
        return self.get_obs(state), state

    def step_env(self, key, state, action, params):
        reward = (action == jnp.asarray(TARGET)[state.time % 4]).astype(jnp.float32)
        new = _State(state.time + 1)
        return self.get_obs(new), new, reward, jnp.zeros((), bool), {}

    def is_terminated(self, state, params):
        return jnp.zeros((), bool)

    def action_space(self, params=None):
        return spaces.Discrete(3)

    def observation_space(self, params):
        return spaces.Box(0.0, 1.0, (4,), jnp.float32)


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _reference(params, quantized):
    """Return, KL and agreement of ``quantized`` vs ``params`` on the four states (NumPy)."""
    def logits(p):
        return np.eye(4) @ np.asarray(p["params"]["kernel"]) + np.asarray(p["params"]["bias"])

    ref, new = logits(params), logits(quantized)
    ret = 3.0 * np.sum(new.argmax(-1) == TARGET)
    pr, pn = _softmax(ref), _softmax(new)
    kl = np.mean(np.sum(pr * (np.log(pr) - np.log(pn)), -1))
    agree = np.mean(ref.argmax(-1) == new.argmax(-1))
    return ret, kl, agree


def test_user_module_and_env_object_against_numpy():
    module = nn.Dense(3)
    params = module.init(jax.random.key(0), jnp.zeros((4,)))
    # near-ties: state 1 prefers action 1 by 0.02, state 3 prefers action 0 by 0.03
    kernel = np.array([[1.0, -0.5, 0.2], [0.48, 0.5, -1.0], [-0.3, 0.1, 0.9],
                       [0.53, 0.5, -0.4]], np.float32)
    params = {"params": {"kernel": jnp.asarray(kernel), "bias": jnp.zeros((3,))}}
    out = evaluate_quantized(module, params, Pointer(), formats=("fp16", "int8", 3),
                             num_episodes=2)
    assert list(out) == ["fp32", "fp16", "int8", "bits=3"]
    fp32 = out["fp32"]
    assert fp32["mean_return"] == 12.0 and fp32["return_change"] == 0.0
    assert fp32["kl"] == 0.0 and fp32["action_agreement"] == 1.0
    for label, spec in (("fp16", QuantSpec("fp16")), ("int8", QuantSpec("paper", 8)),
                        ("bits=3", QuantSpec("paper", 3))):
        ret, kl, agree = _reference(params, fake_quantize(params, spec))
        row = out[label]
        assert row["mean_return"] == ret and row["std_return"] == 0.0
        assert row["return_change"] == ret - 12.0
        assert row["return_ratio"] == pytest.approx(ret / 12.0)
        np.testing.assert_allclose(row["kl"], kl, rtol=1e-4, atol=1e-6)
        assert row["action_agreement"] == pytest.approx(agree)
    assert out["bits=3"]["action_agreement"] < 1.0  # 3 bits flips a near-tie


@pytest.mark.default_emitters  # the fp32 row equals the unquantized policy exactly
def test_apply_function_on_registered_continuous_env():
    """A deterministic policy given as a function on Pendulum: the KL is the Gaussian KL of
    the action difference at ``noise_std``, |a - a_q|^2 / (2 s^2) = MSE / (2 s^2) for one
    action dimension; without ``noise_std`` it is NaN."""
    w = jax.random.normal(jax.random.key(1), (3, 1)) * 0.7

    def apply(p, obs):
        return 2.0 * jnp.tanh(obs @ p["w"])

    out = evaluate_quantized(apply, {"w": w}, "Pendulum-v1", formats=(4,), noise_std=0.5,
                             num_episodes=2)
    row = out["bits=4"]
    assert row["action_mse"] > 0
    np.testing.assert_allclose(row["kl"], row["action_mse"] / (2 * 0.5**2), rtol=1e-5)
    assert out["fp32"]["return_change"] == 0.0 and out["fp32"]["action_mse"] == 0.0
    plain = evaluate_quantized(apply, {"w": w}, "Pendulum-v1", formats=(4,), num_episodes=2)
    assert np.isnan(plain["bits=4"]["kl"])
    assert plain["bits=4"]["mean_return"] == row["mean_return"]  # same states, same seed


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(env="NoSuchEnv-v0"), "unknown environment"),
        (dict(formats=("int9x",)), "format must be"),
        (dict(kind="beta"), "kind"),
        (dict(scheme="log"), "scheme"),
        (dict(params={"w": jnp.zeros((4, 3), jnp.int32)}), "float"),
    ],
)
def test_bad_input_is_rejected(kwargs, match):
    args = dict(policy=lambda p, o: o @ p["w"], params={"w": jnp.zeros((4, 3))}, env=Pointer())
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        evaluate_quantized(args.pop("policy"), args.pop("params"), args.pop("env"), **args)
