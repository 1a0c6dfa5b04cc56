"""Greedy evaluation and policy divergences against plain Python loops and closed forms."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl_pim.envs import make
from jaxrl_pim.rl.evaluate import make_evaluate, policy_divergence
from jaxrl_pim.rl.networks import ParametricPolicy


def _linear_policy(kind="categorical"):
    # logits = obs @ W: a fixed, hand-made CartPole controller (push toward the pole's lean).
    return ParametricPolicy(kind, lambda p, obs: obs @ p["w"],
                            lambda logits: jnp.argmax(logits, -1))


def test_evaluate_matches_python_episode_loop():
    env, env_params = make("CartPole-v1")
    params = {"w": jnp.array([[0.0, 0.0], [0.0, 0.1], [-1.0, 1.0], [-0.5, 0.5]])}
    policy = _linear_policy()
    n = 3
    key = jax.random.key(4)
    result = jax.jit(make_evaluate(policy, "CartPole-v1", n))(params, key)
    # Reference: reset with the same per-episode keys, then step one episode at a time in
    # Python until it ends (CartPole's dynamics do not use the step key).
    _, k_reset = jax.random.split(key)
    step = jax.jit(env.step_env)
    for i, k in enumerate(jax.random.split(k_reset, n)):
        obs, state = env.reset(k, env_params)
        total, t = 0.0, 0
        while True:
            action = int(np.argmax(np.asarray(obs) @ np.asarray(params["w"])))
            obs, state, reward, terminated, _ = step(k, state, action, env_params)
            total += float(reward)
            t += 1
            if bool(terminated) or t >= env_params.max_steps_in_episode:
                break
        assert float(result.returns[i]) == total
        assert int(result.mask[:, i].sum()) == t
    assert result.obs.shape == (500, n, 4)


def test_divergence_closed_forms():
    obs = jnp.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    mask = jnp.array([1.0, 1.0, 0.0])  # third state ignored
    p_ref = {"w": jnp.array([[1.0, 0.0], [0.0, 1.0]])}
    p_new = {"w": jnp.array([[1.0, 0.0], [0.0, 0.5]])}
    pol = _linear_policy()
    same = policy_divergence(pol, p_ref, p_ref, obs, mask)
    assert float(same["kl"]) == 0.0 and float(same["action_agreement"]) == 1.0
    div = policy_divergence(pol, p_ref, p_new, obs, mask)

    def kl(a, b):
        pa, pb = np.exp(a) / np.exp(a).sum(), np.exp(b) / np.exp(b).sum()
        return float(np.sum(pa * np.log(pa / pb)))

    ref = (kl(np.array([1.0, 0.0]), np.array([1.0, 0.0])) +
           kl(np.array([0.0, 1.0]), np.array([0.0, 0.5]))) / 2
    np.testing.assert_allclose(div["kl"], ref, rtol=1e-5)
    assert float(div["action_agreement"]) == 1.0

    det = ParametricPolicy("deterministic", lambda p, o: o @ p["w"], lambda a: a, noise_std=0.5)
    d = policy_divergence(det, p_ref, p_new, obs, mask)
    # Only state 2 differs: action (0, 1) vs (0, 0.5); squared error 0.25 over 2 dims.
    np.testing.assert_allclose(d["action_mse"], (0.0 + 0.25 / 2) / 2, rtol=1e-6)
    np.testing.assert_allclose(d["kl"], (0.0 + 0.25 / (2 * 0.25)) / 2, rtol=1e-6)
    np.testing.assert_allclose(d["action_agreement"], 0.5)
