"""Every network of the function-approximation learners (rl and ActorQ), and the
:class:`ParametricPolicy` interface.

Networks (flax modules), one definition per kind:

* :class:`MLP`: dense torso + linear head; Q-networks (DQN, ActorQ's DQN), PPO/A2C logits and
  values. ``init_scheme="orthogonal"`` (the PPO recipe, default) or ``"lecun"`` (flax's default
  Dense initialisation, ActorQ's networks).
* :class:`GaussianActor`: Gaussian policy head (PPO / A2C on continuous actions).
* :class:`DeterministicActor` (DDPG): tanh action scaled to the bounds ``[low, high]`` inside
  the network, orthogonal init. :class:`D4PGActor` (ActorQ's D4PG): tanh action in
  ``[-1, 1]`` (the agent scales it), LeCun init and a near-zero uniform head, as in the D4PG
  recipe. Two classes because their parameters and initial policies differ.
* :class:`QCritic` (DDPG, scalar ``Q(s, a)``) and :class:`DistributionalCritic` (D4PG,
  layer-norm MLP with a categorical head).

A :class:`ParametricPolicy` is what the PTQ / QAT studies (and ActorQ actors) need from a
trained agent: ``apply(params, obs) -> dist`` maps policy parameters and observations
``[..., obs_dim]`` to the parameters of the action distribution, and ``greedy(dist) ->
action`` picks the evaluation action. ``kind`` says how to read ``dist``:

* ``"categorical"``: logits ``[..., num_actions]`` (for DQN, the Q-values read as
  Boltzmann logits at temperature 1);
* ``"gaussian"``: ``(mean, log_std)``, each ``[..., action_dim]``;
* ``"deterministic"``: the action itself ``[..., action_dim]`` (DDPG); the studies pair it with
  the Gaussian exploration noise std (``ParametricPolicy.noise_std``, in action units).

(Not to be confused with :data:`jaxrl_pim.data.BehaviourPolicy`, a ``(key, state) -> action``
callable that collects tabular datasets.)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

_ACT = {"tanh": nn.tanh, "relu": nn.relu}
#: Kernel initialisations of :class:`MLP` (``init_scheme``).
INIT_SCHEMES: tuple[str, ...] = ("orthogonal", "lecun")


def _householder_q(a: jax.Array) -> jax.Array:
    """``Q * sign(diag(R))`` of the QR factorization of ``a`` ``[m, n]`` (``m >= n``): ``[m, n]``.

    Householder reflections in plain array ops (no LAPACK call); with the sign fix the factor
    is unique, so it equals what ``jnp.linalg.qr`` gives up to float rounding. Dots run at
    ``HIGHEST`` precision so a GPU does not round them to TF32.
    """
    m, n = a.shape
    rows = jnp.arange(m)
    hi = lax.Precision.HIGHEST

    def reflect(k, carry):
        r, q = carry  # r [m, n] being reduced to upper-triangular, q [m, m] accumulated
        x = jnp.where(rows >= k, lax.dynamic_index_in_dim(r, k, axis=1, keepdims=False), 0.0)
        alpha = -jnp.where(x[k] >= 0, 1.0, -1.0) * jnp.sqrt(jnp.sum(x * x))
        v = x - alpha * (rows == k)
        v_norm = jnp.sqrt(jnp.sum(v * v))
        v = jnp.where(v_norm > 0, v / jnp.where(v_norm > 0, v_norm, 1.0), 0.0)
        r = r - 2.0 * jnp.outer(v, jnp.dot(v, r, precision=hi))
        q = q - 2.0 * jnp.outer(jnp.dot(q, v, precision=hi), v)
        return r, q

    r, q = lax.fori_loop(0, n, reflect, (a, jnp.eye(m, dtype=a.dtype)))
    return q[:, :n] * jnp.where(jnp.diagonal(r) < 0, -1.0, 1.0).astype(a.dtype)


def orthogonal(scale: float = 1.0) -> Callable[..., jax.Array]:
    """Orthogonal kernel initializer, the same draw as ``jax.nn.initializers.orthogonal``.

    For a kernel ``shape`` ``[..., n_cols]`` with ``n_rows = prod(shape[:-1])``, draws a
    standard normal ``[max, min]`` matrix with the same key use as JAX's initializer, takes the
    sign-fixed Q factor (:func:`_householder_q`), transposes it when ``n_rows < n_cols`` and
    returns ``scale * Q`` reshaped to ``shape``: rows or columns orthonormal, whichever is fewer.

    Why not JAX's own: on CPU its QR is a LAPACK call that, batched under ``vmap`` (one
    initialization per seed), hands its batch to XLA's intra-op thread pool and blocks on it;
    two such calls running at once on a 2-core host deadlock the process (jaxlib 0.10.2,
    reproduced: a vmapped two-seed init of four 64x64 layers hangs within 300 calls, every time).
    Plain array ops cannot.
    """

    def init(key: jax.Array, shape: Sequence[int], dtype: Any = jnp.float32) -> jax.Array:
        if len(shape) < 2:
            raise ValueError(f"orthogonal init needs a shape of rank >= 2, got {tuple(shape)}")
        n_cols = int(shape[-1])
        n_rows = int(np.prod(shape[:-1]))
        if n_rows == 0 or n_cols == 0:
            return jnp.zeros(shape, dtype)
        z = jax.random.normal(key, (max(n_rows, n_cols), min(n_rows, n_cols)), dtype)
        q = _householder_q(z)
        if n_rows < n_cols:
            q = q.T
        return (jnp.asarray(scale, dtype) * q).reshape(shape)

    return init


class ParametricPolicy(NamedTuple):
    """How to act with a parameter pytree: pure functions and the output kind.

    ``apply(params, obs [..., obs_dim]) -> dist``; ``greedy(dist) -> action [...]`` (or
    ``[..., action_dim]``); ``kind`` is ``"categorical"``, ``"gaussian"`` or
    ``"deterministic"`` (see the module docstring); ``noise_std`` is the exploration std in
    action units of a deterministic policy (0 otherwise).
    """

    kind: str
    apply: Callable[[Any, jax.Array], Any]
    greedy: Callable[[Any], jax.Array]
    noise_std: float = 0.0


class MLP(nn.Module):
    """Dense torso ``hidden`` with ``activation`` and a linear head: ``[..., in] -> [..., out]``.

    ``init_scheme="orthogonal"`` (default, the common PPO recipe): kernels from :func:`orthogonal`
    (no LAPACK call), scale sqrt(2) in the torso and ``out_scale`` in the head (0.01 for
    policy logits, 1 for values). ``init_scheme="lecun"``: flax's default Dense initialisation
    (LeCun normal kernels; ``out_scale`` unused), as ActorQ's networks use. Biases start at 0.
    """

    hidden: Sequence[int]
    out: int
    activation: str = "tanh"
    out_scale: float = 1.0
    init_scheme: str = "orthogonal"

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        act = _ACT[self.activation]
        if self.init_scheme == "lecun":
            torso_init = head_init = nn.initializers.lecun_normal()
        else:
            torso_init, head_init = orthogonal(np.sqrt(2)), orthogonal(self.out_scale)
        for width in self.hidden:
            x = act(nn.Dense(width, kernel_init=torso_init)(x))
        return nn.Dense(self.out, kernel_init=head_init)(x)


class GaussianActor(nn.Module):
    """Gaussian policy head: state-dependent mean, state-independent ``log_std`` parameter."""

    hidden: Sequence[int]
    action_dim: int
    activation: str = "tanh"

    @nn.compact
    def __call__(self, x: jax.Array) -> tuple[jax.Array, jax.Array]:
        mean = MLP(self.hidden, self.action_dim, self.activation, 0.01)(x)
        log_std = self.param("log_std", nn.initializers.zeros, (self.action_dim,))
        return mean, jnp.broadcast_to(log_std, mean.shape)


class DeterministicActor(nn.Module):
    """DDPG actor: ``low + (tanh(mlp(x)) + 1) / 2 * (high - low)``, ``[..., action_dim]``."""

    hidden: Sequence[int]
    action_dim: int
    low: float
    high: float
    activation: str = "relu"

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        raw = MLP(self.hidden, self.action_dim, self.activation, 0.01)(x)
        return self.low + (jnp.tanh(raw) + 1.0) * 0.5 * (self.high - self.low)


class QCritic(nn.Module):
    """DDPG critic ``Q(s, a)``: MLP over ``concat(obs, action)``; returns ``[...]``."""

    hidden: Sequence[int]
    activation: str = "relu"

    @nn.compact
    def __call__(self, obs: jax.Array, action: jax.Array) -> jax.Array:
        x = jnp.concatenate([obs, action], axis=-1)
        return MLP(self.hidden, 1, self.activation, 1.0)(x)[..., 0]


class D4PGActor(nn.Module):
    """D4PG / ActorQ actor: ReLU MLP, tanh output ``[..., action_dim]`` in ``[-1, 1]``.

    LeCun-normal torso, head initialised uniformly with variance ``1e-4 / fan_in`` (the policy
    starts near action 0). The agent maps ``[-1, 1]`` onto the action bounds.
    """

    hidden_sizes: Sequence[int]
    action_dim: int

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        x = obs
        for h in self.hidden_sizes:
            x = nn.relu(nn.Dense(h)(x))
        x = nn.Dense(self.action_dim, kernel_init=nn.initializers.variance_scaling(
            1e-4, "fan_in", "uniform"))(x)
        return jnp.tanh(x)


class DistributionalCritic(nn.Module):
    """D4PG critic: layer-norm MLP on ``concat(obs, action)``, ``-> [..., num_atoms]`` logits.

    First layer dense + layer norm + tanh, then ELU layers, then the categorical head.
    """

    hidden_sizes: Sequence[int]
    num_atoms: int

    @nn.compact
    def __call__(self, obs: jax.Array, action: jax.Array) -> jax.Array:
        x = jnp.concatenate([obs, action], axis=-1)
        x = nn.Dense(self.hidden_sizes[0])(x)
        x = jnp.tanh(nn.LayerNorm()(x))
        for h in self.hidden_sizes[1:]:
            x = nn.elu(nn.Dense(h)(x))
        return nn.Dense(self.num_atoms)(x)


def q_network(hidden_sizes: Sequence[int], num_actions: int) -> MLP:
    """ActorQ's DQN Q-network: ReLU :class:`MLP` with LeCun init, ``-> [..., num_actions]``."""
    return MLP(tuple(hidden_sizes), num_actions, "relu", init_scheme="lecun")


def categorical_log_prob(logits: jax.Array, action: jax.Array) -> jax.Array:
    """``log pi(action)`` for logits ``[..., A]`` and integer actions ``[...]``."""
    logp = jax.nn.log_softmax(logits)
    return jnp.take_along_axis(logp, action[..., None].astype(jnp.int32), axis=-1)[..., 0]


def categorical_entropy(logits: jax.Array) -> jax.Array:
    """Entropy (nats) of the categorical with ``logits`` ``[..., A]``; returns ``[...]``."""
    logp = jax.nn.log_softmax(logits)
    return -jnp.sum(jnp.exp(logp) * logp, axis=-1)


def gaussian_log_prob(mean: jax.Array, log_std: jax.Array, action: jax.Array) -> jax.Array:
    """Diagonal Gaussian log density summed over the last axis; returns ``[...]``."""
    z = (action - mean) * jnp.exp(-log_std)
    return jnp.sum(-0.5 * z**2 - log_std - 0.5 * jnp.log(2 * jnp.pi), axis=-1)


def gaussian_entropy(log_std: jax.Array) -> jax.Array:
    """Entropy (nats) of a diagonal Gaussian, summed over the last axis."""
    return jnp.sum(log_std + 0.5 * jnp.log(2 * jnp.pi * jnp.e), axis=-1)


def categorical_kl(p_logits: jax.Array, q_logits: jax.Array) -> jax.Array:
    """``KL(p || q)`` (nats) between categoricals given by logits ``[..., A]``; ``[...]``."""
    logp = jax.nn.log_softmax(p_logits)
    logq = jax.nn.log_softmax(q_logits)
    return jnp.sum(jnp.exp(logp) * (logp - logq), axis=-1)


def gaussian_kl(
    p_mean: jax.Array, p_log_std: jax.Array, q_mean: jax.Array, q_log_std: jax.Array
) -> jax.Array:
    """``KL(p || q)`` (nats) between diagonal Gaussians, summed over the last axis."""
    var_p = jnp.exp(2 * p_log_std)
    var_q = jnp.exp(2 * q_log_std)
    kl = q_log_std - p_log_std + (var_p + (p_mean - q_mean) ** 2) / (2 * var_q) - 0.5
    return jnp.sum(kl, axis=-1)

