"""The MADDPG optimiser and softmax written for device-count-independent bits
(``jaxrl_pim.marl.networks.adam`` / ``softmax``) against NumPy loops and closed forms; the
bit-for-bit agreement over 1, 2 and 8 devices is in ``test_seeds.py``."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxrl_pim.marl.networks import adam, relaxed_sample, softmax


def _numpy_adam(grads: list[np.ndarray], lr: float) -> list[np.ndarray]:
    """Kingma & Ba's Adam (b1 0.9, b2 0.999, eps 1e-8) in float64: the step of each call."""
    m = v = np.zeros_like(grads[0])
    steps = []
    for t, g in enumerate(grads, start=1):
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        steps.append(-lr * (m / (1 - 0.9 ** t)) / (np.sqrt(v / (1 - 0.999 ** t)) + 1e-8))
    return steps


def test_adam_matches_the_paper_loop_and_keeps_optax_state_tree():
    rng = np.random.default_rng(0)
    grads = [rng.normal(size=(3, 4)) * s for s in (1.0, 0.1, 3.0, 0.01, 1.0)]
    tx = adam(0.01)
    params = {"w": jnp.zeros((3, 4))}
    state = tx.init(params)
    # the same state tree as optax.adam: a checkpoint of either restores into the other
    ref_state = optax.adam(0.01).init(params)
    assert jax.tree.structure(state) == jax.tree.structure(ref_state)
    for g, want in zip(grads, _numpy_adam(grads, 0.01), strict=True):
        step, state = tx.update({"w": jnp.asarray(g, jnp.float32)}, state)
        np.testing.assert_allclose(np.asarray(step["w"]), want, rtol=2e-5, atol=1e-9)
    assert int(state[0].count) == len(grads)


def test_softmax_and_its_gradient_match_closed_forms():
    x = jnp.asarray(np.random.default_rng(1).normal(size=(6, 5)) * 4, jnp.float32)
    xs = np.asarray(x, np.float64)
    p = np.exp(xs - xs.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    np.testing.assert_allclose(np.asarray(softmax(x)), p, rtol=1e-6, atol=1e-7)
    # d sum(w * softmax(x)) / dx = p * (w - sum(w * p)) (the softmax Jacobian, closed form)
    w = np.arange(5.0)
    grad = jax.grad(lambda z: jnp.sum(jnp.asarray(w, jnp.float32) * softmax(z)))(x)
    want = p * (w - (w * p).sum(-1, keepdims=True))
    np.testing.assert_allclose(np.asarray(grad), want, rtol=1e-5, atol=1e-6)
    # temperature: softmax((logits + noise) / T)
    noise = jnp.ones_like(x)
    for temp in (1.0, 0.5):
        q = np.exp((xs + 1) / temp - ((xs + 1) / temp).max(-1, keepdims=True))
        np.testing.assert_allclose(np.asarray(relaxed_sample(x, noise, temp)),
                                   q / q.sum(-1, keepdims=True), rtol=1e-5, atol=1e-7)
