"""ActorQ rules against plain NumPy references: n-step returns, categorical projection,
prioritized-replay weights, time to reward."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl_pim.actorq.metrics import reward_target, speedups, time_to_reward
from jaxrl_pim.actorq.replay import make_replay
from jaxrl_pim.actorq.rules import categorical_l2_project, huber, n_step_window
from tests.support.actorq import project_reference


def nstep_reference(r, term, trunc, t, n, gamma):
    """Plain loop: n-step return from step t, stopping at the first episode end."""
    g = 0.0
    for j in range(n):
        g += gamma**j * r[t + j]
        if term[t + j]:
            return g, 0.0, t + j
        if trunc[t + j]:
            return g, gamma ** (j + 1), t + j
    return g, gamma**n, t + n - 1


def test_n_step_window_matches_numpy_loop():
    rng = np.random.default_rng(0)
    T, n, gamma = 300, 5, 0.9
    r = rng.normal(size=T).astype(np.float32)
    u = rng.random(T)
    term = u < 0.06
    trunc = (u > 0.94) & ~term
    disc = (~term).astype(np.float32)
    last = (term | trunc).astype(np.float32)
    f = jax.jit(jax.vmap(lambda a, b, c: n_step_window(a, b, c, gamma)))
    idx = np.arange(T - n + 1)[:, None] + np.arange(n)[None, :]
    ret, boot, k = f(r[idx], disc[idx], last[idx])
    for t in range(T - n + 1):
        g, b, kk = nstep_reference(r, term, trunc, t, n, gamma)
        np.testing.assert_allclose(float(ret[t]), g, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(float(boot[t]), b, rtol=1e-6)
        assert int(k[t]) + t == kk
    assert term.sum() > 5 and trunc.sum() > 5  # both kinds of episode end were exercised


@pytest.mark.parametrize("shift,scale", [(0.0, 1.0), (7.3, 0.99), (-200.0, 1.0), (30.0, 0.5)])
def test_categorical_projection_matches_numpy(shift, scale):
    rng = np.random.default_rng(1)
    z_q = np.linspace(-150.0, 150.0, 51)
    probs = rng.dirichlet(np.ones(51))
    z_p = shift + scale * z_q
    got = np.asarray(categorical_l2_project(jnp.asarray(z_p, jnp.float32),
                                            jnp.asarray(probs, jnp.float32),
                                            jnp.asarray(z_q, jnp.float32)))
    want = project_reference(z_p, probs, z_q)
    np.testing.assert_allclose(got, want, atol=2e-5)
    np.testing.assert_allclose(got.sum(), 1.0, atol=1e-5)


def test_huber():
    x = jnp.array([-3.0, -0.5, 0.0, 0.2, 2.0])
    np.testing.assert_allclose(huber(x), [2.5, 0.125, 0.0, 0.02, 1.5], rtol=1e-6)


def test_prioritized_replay_weights_and_validity():
    cap, alpha, beta = 8, 0.6, 0.2
    rep = make_replay(cap, jnp.zeros((2,), jnp.float32), alpha, beta, eps=1e-6)
    add, update = jax.jit(rep.add), jax.jit(rep.update_priorities)
    st = rep.init()
    st = add(st, jnp.arange(12, dtype=jnp.float32).reshape(6, 2),
             jnp.array([True, True, False, True, True, True]))
    st = update(st, jnp.array([0, 1, 3]), jnp.array([0.5, 2.0, 0.1]))
    idx, batch, w = jax.jit(rep.sample, static_argnums=2)(st, jax.random.PRNGKey(0), 4000)
    idx = np.asarray(idx)
    assert not np.any(idx == 2) and not np.any(idx >= 6)  # invalid and empty never drawn
    # slots 4 and 5 keep the max priority at the time they were added (1.0)
    pr = np.array([0.5, 2.0, 0.0, 0.1, 1.0, 1.0]) + np.array([1, 1, 0, 1, 0, 0]) * 1e-6
    pa = np.where(pr > 0, pr**alpha, 0.0)
    probs = pa / pa.sum()
    freq = np.bincount(idx, minlength=6) / idx.size
    np.testing.assert_allclose(freq, probs, atol=0.03)
    n_valid = 5
    want_w = (n_valid * probs[idx]) ** -beta / (n_valid * probs[probs > 0].min()) ** -beta
    np.testing.assert_allclose(np.asarray(w), want_w, rtol=1e-4)
    np.testing.assert_array_equal(np.asarray(batch)[:, 0], 2.0 * idx)
    # later additions take the largest priority seen so far
    st = add(st, jnp.zeros((1, 2), jnp.float32), jnp.ones((1,), bool))
    assert float(st.sampler.priority[6]) == pytest.approx(2.0 + 1e-6)


def test_replay_wraps_around():
    rep = make_replay(4, jnp.zeros((), jnp.float32), 0.0, 0.0)
    st = rep.init()
    st = rep.add(st, jnp.arange(3, dtype=jnp.float32))
    st = rep.add(st, jnp.arange(3, 6, dtype=jnp.float32))
    np.testing.assert_array_equal(np.asarray(st.buffer.data), [4.0, 5.0, 2.0, 3.0])
    assert int(st.size) == 4 and int(st.buffer.insert_pos) == 2
    with pytest.raises(ValueError, match="capacity 4"):
        rep.add(st, jnp.arange(5, dtype=jnp.float32))


def test_time_to_reward_and_speedups():
    t = [1.0, 2.0, 3.0, 4.0]
    assert reward_target([0.0, 50.0, 100.0]) == pytest.approx(95.0)
    assert reward_target([-500.0, -200.0, -100.0]) == pytest.approx(-120.0)
    assert time_to_reward(t, [0.0, 96.0, 90.0, 99.0], 95.0) == 2.0
    assert time_to_reward(t, [0.0, 1.0, 2.0, 3.0], 95.0) is None
    out = speedups({"fp32": (t, [0.0, 10.0, 60.0, 100.0]), "int8": ([0.5, 1.0, 1.5, 2.0],
                                                                    [0.0, 99.0, 100.0, 100.0])})
    assert out["target"] == pytest.approx(95.0)
    assert out["time_to_reward_s"] == {"fp32": 4.0, "int8": 1.0}
    assert out["speedup"]["int8"] == pytest.approx(4.0)
    flat = speedups({"fp32": (t, [5.0, 4.0, 3.0, 2.0])})
    assert flat["improved"] is False and flat["speedup"]["fp32"] is None
