"""Each MARL rule alone against NumPy: targets, losses, smoothing, entropy, Polyak, algorithms."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl_pim.marl import rules
from jaxrl_pim.marl.config import MARLConfig

RNG = np.random.default_rng(0)
B, A = 7, 5


def _np_entropy(logits):
    z = logits - logits.max(-1, keepdims=True)
    p = np.exp(z) / np.exp(z).sum(-1, keepdims=True)
    return -(p * np.log(p)).sum(-1)


def _f32(*shape):
    return RNG.normal(size=shape).astype(np.float32)


def _batch(rule, *args):
    """``rule`` vmapped over the leading (batch) axis of every argument."""
    return np.asarray(jax.vmap(rule)(*map(jnp.asarray, args)))


def test_categorical_entropy_matches_numpy():
    logits = np.array([[0.0, 0.0, 0.0, 0.0, 0.0], [5.0, -1.0, 0.3, 2.0, 0.0]], np.float32)
    p = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    want = -(p * np.log(p)).sum(-1)
    np.testing.assert_allclose(np.asarray(rules.categorical_entropy(jnp.asarray(logits))), want,
                               rtol=1e-5)
    np.testing.assert_allclose(want[0], np.log(5.0), rtol=1e-6)


def test_ddpg_target_matches_numpy():
    r, d, q = _f32(B), (RNG.random(B) < 0.3).astype(np.float32), _f32(B, 1)
    discount = 0.95 * (1.0 - d)
    got = _batch(rules.ddpg_target, r, discount, q)
    np.testing.assert_allclose(got, r + discount * q[:, 0], rtol=1e-6)
    np.testing.assert_array_equal(got[d == 1], r[d == 1])  # terminal: y = r exactly


def test_clipped_double_q_target_takes_the_smaller_critic():
    r, q = _f32(B), _f32(B, 2)
    discount = np.full(B, 0.9, np.float32)
    got = _batch(rules.clipped_double_q_target, r, discount, q)
    want = np.array([r[b] + 0.9 * min(q[b, 0], q[b, 1]) for b in range(B)])
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_target_policy_smoothing_clips_the_noise():
    logits, noise = _f32(B, A), 5.0 * _f32(B, A)
    got = np.asarray(rules.target_policy_smoothing(jnp.asarray(logits), jnp.asarray(noise),
                                                   0.2, 0.5))
    want = logits + np.clip(0.2 * noise, -0.5, 0.5)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert np.abs(got - logits).max() == pytest.approx(0.5)  # the clip binds somewhere


def test_soft_target_adds_the_categorical_entropy():
    r, q, logits = _f32(B), _f32(B, 2), 2.0 * _f32(B, A)
    discount = np.full(B, 0.95, np.float32)
    got = _batch(lambda *a: rules.soft_target(*a, entropy_coef=0.05), r, discount, q, logits)
    want = r + 0.95 * (q.min(axis=1) + 0.05 * _np_entropy(logits))
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_critic_loss_matches_numpy():
    q, y, w = _f32(2, B), _f32(B), RNG.random(B).astype(np.float32)
    loss, err = rules.critic_loss(jnp.asarray(q), jnp.asarray(y), jnp.asarray(w))
    want = sum(np.mean(w * (q[c] - y) ** 2) for c in range(2))
    np.testing.assert_allclose(float(loss), want, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(err), q - y[None], rtol=1e-6)


def test_actor_losses_match_numpy():
    q, logits = _f32(B), 3.0 * _f32(B, A)
    dpg = float(rules.dpg_actor_loss(jnp.asarray(q), jnp.asarray(logits), 1e-3))
    np.testing.assert_allclose(dpg, -q.mean() + 1e-3 * np.mean(logits ** 2), rtol=1e-5)
    soft = float(rules.soft_actor_loss(jnp.asarray(q), jnp.asarray(logits), 1e-3, 0.05))
    np.testing.assert_allclose(soft, dpg - 0.05 * _np_entropy(logits).mean(), rtol=1e-5)


def test_polyak_closed_form():
    t = {"w": jnp.ones(3), "b": jnp.full((2,), 4.0)}
    o = {"w": jnp.zeros(3), "b": jnp.zeros(2)}
    out = rules.polyak(t, o, 0.01)
    np.testing.assert_allclose(np.asarray(out["w"]), 0.99, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(out["b"]), 3.96, rtol=1e-6)


def test_rules_check_shapes():
    with pytest.raises(AssertionError):
        rules.ddpg_target(jnp.zeros(()), jnp.zeros(()), jnp.zeros((2,)))  # one critic only
    with pytest.raises(AssertionError):
        rules.clipped_double_q_target(jnp.zeros((3,)), jnp.zeros(()), jnp.zeros((2,)))
    with pytest.raises(AssertionError):
        rules.critic_loss(jnp.zeros((2, 4)), jnp.zeros((5,)), jnp.zeros((5,)))
    with pytest.raises(AssertionError):
        rules.dpg_actor_loss(jnp.zeros((4,)), jnp.zeros((3, 5)), 1e-3)
    with pytest.raises(AssertionError):
        rules.polyak({"w": jnp.zeros(3)}, {"w": jnp.zeros(4)}, 0.1)


def test_algorithms_from_config():
    base = MARLConfig()
    mad = rules.make_algorithm(base)
    td3 = rules.make_algorithm(dataclasses.replace(base, algo="matd3"))
    sac = rules.make_algorithm(dataclasses.replace(base, algo="masac"))
    plain = rules.make_algorithm(dataclasses.replace(base, algo="matd3", target_noise=0.0))
    assert (mad.num_critics, td3.num_critics, sac.num_critics) == (1, 2, 2)
    assert (mad.actor_critics, td3.actor_critics, sac.actor_critics) == (1, 1, 2)
    assert mad.target_actors and td3.target_actors and not sac.target_actors
    assert (mad.policy_delay, td3.policy_delay, sac.policy_delay) == (1, 2, 1)
    assert td3.smoothing is not None and mad.smoothing is None and plain.smoothing is None
    # The plugged-in target rules are the ones tested above.
    r, d, q, lg = jnp.float32(1.0), jnp.float32(0.5), jnp.array([2.0, -4.0]), jnp.zeros(A)
    assert float(mad.target(r, d, q[:1], lg)) == pytest.approx(2.0)
    assert float(td3.target(r, d, q, lg)) == pytest.approx(-1.0)
    assert float(sac.target(r, d, q, lg)) == pytest.approx(1.0 + 0.5 * (-4.0 + 0.05 * np.log(5)))
