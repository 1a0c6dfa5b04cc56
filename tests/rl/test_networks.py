"""The orthogonal initializer: NumPy reference, shapes, and no LAPACK call under vmap."""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl_pim.rl.networks import MLP, orthogonal
from tests.support import run_with_devices

SHAPES = [(4, 64), (64, 64), (64, 2), (300, 400), (400, 300), (3, 5, 7), (1, 1)]


def numpy_orthogonal(key: jax.Array, shape: tuple[int, ...], scale: float) -> np.ndarray:
    """The sign-fixed QR recipe in float64 NumPy on the same normal draw."""
    n_cols = shape[-1]
    n_rows = int(np.prod(shape[:-1]))
    z = np.asarray(jax.random.normal(key, (max(n_rows, n_cols), min(n_rows, n_cols))),
                   dtype=np.float64)
    q, r = np.linalg.qr(z)
    q = q * np.where(np.diag(r) < 0, -1.0, 1.0)
    if n_rows < n_cols:
        q = q.T
    return scale * q.reshape(shape)


@pytest.mark.parametrize("shape", SHAPES)
def test_matches_numpy_qr_and_is_orthonormal(shape):
    key = jax.random.key(7)
    w = np.asarray(orthogonal(1.7)(key, shape))
    assert w.shape == shape and w.dtype == np.float32
    np.testing.assert_allclose(w, numpy_orthogonal(key, shape, 1.7), atol=2e-5)
    m = w.reshape(-1, shape[-1]) / 1.7
    gram = m.T @ m if m.shape[0] >= m.shape[1] else m @ m.T
    np.testing.assert_allclose(gram, np.eye(len(gram)), atol=2e-5)


def test_same_draw_as_jax_initializer():
    key = jax.random.key(3)
    for shape in [(8, 64), (64, 64), (64, 3)]:
        np.testing.assert_allclose(
            np.asarray(orthogonal(np.sqrt(2))(key, shape)),
            np.asarray(jax.nn.initializers.orthogonal(np.sqrt(2))(key, shape)), atol=2e-5)


def test_rejects_vectors_and_handles_empty():
    with pytest.raises(ValueError, match="rank >= 2"):
        orthogonal()(jax.random.key(0), (5,))
    assert orthogonal()(jax.random.key(0), (0, 4)).shape == (0, 4)


class JaxInitDense(nn.Module):
    """One dense layer with JAX's own orthogonal initializer (LAPACK QR on CPU)."""

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        return nn.Dense(2, kernel_init=nn.initializers.orthogonal())(x)


def _vmapped_init_hlo(net: nn.Module) -> str:
    keys = jax.random.split(jax.random.key(0), 2)
    x = jnp.zeros((1, 4))
    return jax.jit(jax.vmap(lambda k: net.init(k, x))).lower(keys).as_text()


def test_vmapped_init_calls_no_lapack():
    # the check can fail: JAX's own initializer lowers to a LAPACK QR custom call on CPU
    if jax.default_backend() == "cpu":
        assert "lapack" in _vmapped_init_hlo(JaxInitDense())
    assert "lapack" not in _vmapped_init_hlo(MLP((64, 64), 2))


DEADLOCK_CODE = """
import jax
from jaxrl_pim.rl.networks import orthogonal
def init(key):
    return [orthogonal()(k, (64, 64)) for k in jax.random.split(key, 4)]
f = jax.jit(jax.vmap(init))
for i in range(300):
    jax.block_until_ready(f(jax.random.split(jax.random.key(i), 2)))
print("ok")
"""


@pytest.mark.default_compilation  # execution-bound: 300 calls of one small program
def test_repeated_vmapped_init_does_not_deadlock():
    # With jax.nn.initializers.orthogonal this program hangs on a 2-core host (batched LAPACK
    # QR waiting on XLA:CPU's intra-op pool), every time within 300 calls.
    out = run_with_devices(DEADLOCK_CODE, n_devices=1, timeout=240)
    assert out.strip().splitlines()[-1] == "ok"
