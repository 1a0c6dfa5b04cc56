"""Networks, Gumbel-softmax and per-leaf clipping against closed forms / NumPy (the entropy and
Polyak rules are tested in ``test_rules.py``)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxrl_pim.marl.networks import clip_by_leaf_norm, gumbel_softmax, init_stacked, mlp


def test_clip_by_leaf_norm_matches_numpy_per_variable():
    rng = np.random.default_rng(0)
    grads = {"a": rng.normal(size=(4, 3)) * 3.0, "b": rng.normal(size=(3,)) * 0.01,
             "c": np.zeros((2,))}
    grads = {k: v.astype(np.float32) for k, v in grads.items()}
    tx = clip_by_leaf_norm(0.5)
    out, _ = tx.update(jax.tree.map(jnp.asarray, grads), tx.init(None))
    for name, g in grads.items():
        norm = np.linalg.norm(g)
        want = g * 0.5 / max(norm, 0.5)  # TF clip_by_norm, leaf by leaf
        np.testing.assert_allclose(np.asarray(out[name]), want, rtol=1e-5, atol=1e-7)
    # Different from a global-norm clip: the small leaf is left untouched.
    glob, _ = optax.clip_by_global_norm(0.5).update(grads, optax.EmptyState())
    assert not np.allclose(np.asarray(glob["b"]), grads["b"])
    np.testing.assert_allclose(np.asarray(out["b"]), grads["b"], rtol=1e-6)


def test_gumbel_softmax_on_simplex_and_argmax_is_categorical():
    logits = jnp.array([1.0, 0.0, -1.0, 0.5, -2.0])
    samples = gumbel_softmax(jax.random.PRNGKey(0), jnp.broadcast_to(logits, (40_000, 5)))
    np.testing.assert_allclose(np.asarray(samples.sum(-1)), 1.0, rtol=1e-5)
    assert float(samples.min()) >= 0.0
    # Gumbel-max: argmax(logits + g) ~ Categorical(softmax(logits)).
    freq = np.bincount(np.asarray(samples.argmax(-1)), minlength=5) / 40_000
    p = np.exp(logits) / np.exp(logits).sum()
    np.testing.assert_allclose(freq, p, atol=0.01)


def test_gumbel_softmax_temperature_sharpens():
    logits = jnp.zeros((2000, 5))
    k = jax.random.PRNGKey(1)
    soft = gumbel_softmax(k, logits, 10.0).max(-1).mean()
    hard = gumbel_softmax(k, logits, 0.1).max(-1).mean()
    assert float(hard) > 0.9 > 0.3 > float(soft)


def test_stacked_mlp_matches_numpy_forward():
    net = mlp((64, 64), 5)
    params = jax.jit(init_stacked, static_argnums=(0, 2, 3))(net, jax.random.PRNGKey(0), 3, 18)
    x = np.random.default_rng(1).normal(size=(7, 18)).astype(np.float32)
    out = jax.vmap(net.apply, in_axes=(0, None))(params, jnp.asarray(x))
    assert out.shape == (3, 7, 5)
    for i in range(3):
        p = jax.tree.map(lambda a, i=i: np.asarray(a[i]), params)["params"]
        h = np.maximum(x @ p["Dense_0"]["kernel"] + p["Dense_0"]["bias"], 0)
        h = np.maximum(h @ p["Dense_1"]["kernel"] + p["Dense_1"]["bias"], 0)
        y = h @ p["Dense_2"]["kernel"] + p["Dense_2"]["bias"]
        np.testing.assert_allclose(np.asarray(out[i]), y, rtol=1e-4, atol=1e-5)
    # Agents get independent initialisations.
    assert not np.allclose(np.asarray(out[0]), np.asarray(out[1]))


def test_one_mlp_one_polyak_one_entropy():
    """The networks and rules are the library's single definitions (rl.networks, rl.ddpg);
    the old ``marl.networks.MLP`` name warns and builds the same network."""
    import pytest

    from jaxrl_pim.marl import rules
    from jaxrl_pim.rl import ddpg
    from jaxrl_pim.rl import networks as rl_networks

    net = mlp((8,), 2)
    assert isinstance(net, rl_networks.MLP)
    assert (net.activation, net.init_scheme) == ("relu", "lecun")
    assert rules.polyak is ddpg.polyak
    assert rules.categorical_entropy is rl_networks.categorical_entropy
    with pytest.raises(ValueError, match="init_scheme='orthogonal'"):
        init_stacked(rl_networks.MLP((8,), 2), jax.random.PRNGKey(0), 2, 3)
