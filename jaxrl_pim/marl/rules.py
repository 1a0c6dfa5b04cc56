"""Targets and losses of MADDPG, MATD3 and MASAC as small rules, and the algorithms built from them.

Critic targets are per-transition rules in the rlax style: ``r_t`` the reward, ``discount_t``
``gamma * (1 - done)``, ``q_t`` the target critics' values ``[C]`` at the next observations
and next actions (C = 1 or 2 critics); batch them with ``jax.vmap``. Critic and actor losses
are batch rules (a mean over the mini-batch is part of their definition). Shapes are checked
at the top of each rule (at trace time).

* MADDPG (Lowe et al., "Multi-Agent Actor-Critic for Mixed Cooperative-Competitive
  Environments", NeurIPS 2017): ``y = r + discount * Q'(s', mu'(o'))`` with one critic;
  actor loss ``-mean Q(s, a_1..a~_i..a_N) + reg * mean(logits^2)``.
* MATD3 (twin critics and delayed policy updates of Fujimoto et al., "Addressing Function
  Approximation Error in Actor-Critic Methods", ICML 2018): ``y = r + discount *
  min(Q1', Q2')`` at the smoothed target action; the actor follows ``Q1`` and updates, with
  all targets, every ``policy_delay``-th round.
* MASAC (the soft target of Haarnoja et al., "Soft Actor-Critic", ICML 2018, with the exact
  entropy of the categorical policy): ``y = r + discount * (min(Q1', Q2') + alpha H(pi(o')))``
  with the CURRENT actors' next actions; actor loss adds ``-alpha mean H(pi(o))`` and uses
  ``min(Q1, Q2)``.

An :class:`Algorithm` is a NamedTuple of these rules plus the few facts the learner needs
(critic count, which critics the actor reads, which actors act at the next step, smoothing,
policy delay); :func:`make_algorithm` picks one from a config once. A new algorithm is a new
``Algorithm`` value (see ``docs/marl.md``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import chex
import jax
import jax.numpy as jnp

from jaxrl_pim.checks import check_choice
from jaxrl_pim.rl import ddpg as _ddpg
from jaxrl_pim.rl.ddpg import polyak
from jaxrl_pim.rl.networks import categorical_entropy

__all__ = [
    "ALGORITHMS",
    "Algorithm",
    "categorical_entropy",
    "clipped_double_q_target",
    "critic_loss",
    "ddpg_target",
    "dpg_actor_loss",
    "make_algorithm",
    "maddpg",
    "masac",
    "matd3",
    "polyak",
    "soft_actor_loss",
    "soft_target",
    "target_policy_smoothing",
]

# ``polyak`` (the soft target update) and ``categorical_entropy`` (nats, over the last axis)
# are the library's single definitions, from :mod:`jaxrl_pim.rl.ddpg` and
# :mod:`jaxrl_pim.rl.networks`; they are rules of every algorithm here too.

# --------------------------------------------------------------------- critic targets


def ddpg_target(r_t: jax.Array, discount_t: jax.Array, q_t: jax.Array) -> jax.Array:
    """MADDPG target of one transition: ``r_t + discount_t * q_t[0]``.

    ``r_t``, ``discount_t`` scalars; ``q_t`` ``[1]``: the one target critic at ``(s', mu'(o'))``.
    """
    chex.assert_rank([r_t, discount_t, q_t], [0, 0, 1])
    chex.assert_shape(q_t, (1,))
    return _ddpg.ddpg_target(r_t, discount_t, q_t[0])


def clipped_double_q_target(r_t: jax.Array, discount_t: jax.Array, q_t: jax.Array) -> jax.Array:
    """MATD3 target of one transition: ``r_t + discount_t * min_c q_t[c]``.

    ``q_t`` ``[C]``: the twin target critics at the (smoothed) target action.
    """
    chex.assert_rank([r_t, discount_t, q_t], [0, 0, 1])
    return r_t + discount_t * jnp.min(q_t, axis=0)


def soft_target(
    r_t: jax.Array, discount_t: jax.Array, q_t: jax.Array, logits_t: jax.Array,
    entropy_coef: float,
) -> jax.Array:
    """MASAC soft target of one transition:
    ``r_t + discount_t * (min_c q_t[c] + entropy_coef * H(softmax(logits_t)))``.

    ``q_t`` ``[C]``: the twin target critics at the current policy's next action;
    ``logits_t`` ``[A]``: the current actor's logits at the next observation (``H`` in nats).
    """
    chex.assert_rank([r_t, discount_t, q_t, logits_t], [0, 0, 1, 1])
    v_t = jnp.min(q_t, axis=0) + entropy_coef * categorical_entropy(logits_t)
    return r_t + discount_t * v_t


def target_policy_smoothing(logits_t: jax.Array, noise: jax.Array, scale: float,
                            clip: float) -> jax.Array:
    """MATD3 smoothing on the target actor's logits: ``logits + clip(scale * noise, +-clip)``.

    ``logits_t`` and ``noise`` (standard normal) have the same shape ``[..., A]``; the
    smoothed logits go through the Gumbel-softmax, so the target action stays on the simplex.
    """
    chex.assert_equal_shape([logits_t, noise])
    return logits_t + jnp.clip(scale * noise, -clip, clip)


# --------------------------------------------------------------------- losses


def critic_loss(q_tm1: jax.Array, y: jax.Array, weights: jax.Array) -> tuple[jax.Array,
                                                                              jax.Array]:
    """Weighted squared TD loss of ``C`` critics on one batch.

    ``q_tm1`` ``[C, B]`` (each critic at the stored ``(s, a)``), ``y`` ``[B]`` targets,
    ``weights`` ``[B]`` importance weights. Returns ``(sum_c mean_b w_b (q_tm1[c, b] -
    y_b)^2, err [C, B])`` with ``err = q_tm1 - y`` (the first critic's row gives priorities).
    """
    chex.assert_rank([q_tm1, y, weights], [2, 1, 1])
    chex.assert_equal_shape([y, weights])
    chex.assert_equal_shape_suffix([q_tm1, y], 1)
    err = q_tm1 - y[None]
    return jnp.sum(jnp.mean(weights[None] * jnp.square(err), axis=1)), err


def dpg_actor_loss(q: jax.Array, logits: jax.Array, logits_reg: float) -> jax.Array:
    """MADDPG / MATD3 actor loss on one batch: ``-mean(q) + logits_reg * mean(logits^2)``.

    ``q`` ``[B]``: the critic at the agent's fresh (differentiable) action; ``logits`` ``[B, A]``.
    """
    chex.assert_rank([q, logits], [1, 2])
    chex.assert_equal_shape_prefix([q, logits], 1)
    return -jnp.mean(q) + logits_reg * jnp.mean(jnp.square(logits))


def soft_actor_loss(q: jax.Array, logits: jax.Array, logits_reg: float,
                    entropy_coef: float) -> jax.Array:
    """MASAC actor loss on one batch: the DPG loss ``- entropy_coef * mean H(softmax(logits))``.

    ``q`` ``[B]``: ``min(Q1, Q2)`` at the agent's fresh action; ``logits`` ``[B, A]``.
    """
    loss = dpg_actor_loss(q, logits, logits_reg)
    return loss - entropy_coef * jnp.mean(categorical_entropy(logits))


# --------------------------------------------------------------------- algorithms


class Algorithm(NamedTuple):
    """One multi-agent actor-critic, as the rules it plugs into the shared learner.

    Fields:
      name: display name.
      num_critics: critics per agent (1, or 2 twin critics).
      target: ``(r_t, discount_t, q_t [C], logits_t [A]) -> y``, one transition;
        ``logits_t`` are the next-step actor's logits (ignored unless the rule needs them).
      actor_loss: ``(q [B], logits [B, A]) -> loss`` of one agent on one batch.
      actor_critics: how many critics the actor loss reads: 1 (``Q1``) or ``num_critics``
        (their minimum).
      target_actors: True if the next action comes from the target actors (DDPG style),
        False for the current actors (SAC style; target actors then never move).
      smoothing: ``(logits [..., A], noise [..., A]) -> logits`` applied to the next-step
        logits, or None.
      policy_delay: critic rounds per actor and target update (1 = every round).
    """

    name: str
    num_critics: int
    target: Callable[..., jax.Array]
    actor_loss: Callable[[jax.Array, jax.Array], jax.Array]
    actor_critics: int
    target_actors: bool
    smoothing: Callable[[jax.Array, jax.Array], jax.Array] | None
    policy_delay: int


def maddpg(logits_reg: float = 1e-3) -> Algorithm:
    """MADDPG: one critic, target actors, DPG actor loss."""

    def target(r_t, discount_t, q_t, logits_t):
        del logits_t
        return ddpg_target(r_t, discount_t, q_t)

    return Algorithm("maddpg", 1, target,
                     functools.partial(dpg_actor_loss, logits_reg=logits_reg),
                     actor_critics=1, target_actors=True, smoothing=None, policy_delay=1)


def matd3(logits_reg: float = 1e-3, policy_delay: int = 2, target_noise: float = 0.2,
          target_noise_clip: float = 0.5) -> Algorithm:
    """MATD3: twin critics (clipped double-Q target), actor on ``Q1``, delayed actor and
    target updates, target-policy smoothing on the logits (off when ``target_noise == 0``)."""

    def target(r_t, discount_t, q_t, logits_t):
        del logits_t
        return clipped_double_q_target(r_t, discount_t, q_t)

    smoothing = None
    if target_noise > 0:
        smoothing = functools.partial(target_policy_smoothing, scale=target_noise,
                                      clip=target_noise_clip)
    return Algorithm("matd3", 2, target,
                     functools.partial(dpg_actor_loss, logits_reg=logits_reg),
                     actor_critics=1, target_actors=True, smoothing=smoothing,
                     policy_delay=policy_delay)


def masac(logits_reg: float = 1e-3, entropy_coef: float = 0.05) -> Algorithm:
    """MASAC: twin critics, soft target with the current actors, entropy-regularised actor
    loss on ``min(Q1, Q2)``."""
    return Algorithm("masac", 2, functools.partial(soft_target, entropy_coef=entropy_coef),
                     functools.partial(soft_actor_loss, logits_reg=logits_reg,
                                       entropy_coef=entropy_coef),
                     actor_critics=2, target_actors=False, smoothing=None, policy_delay=1)


ALGORITHMS: dict[str, Callable[..., Algorithm]] = {"maddpg": maddpg, "matd3": matd3,
                                                   "masac": masac}


def make_algorithm(config: Any) -> Algorithm:
    """The :class:`Algorithm` named by ``config.algo``, with the config's coefficients."""
    check_choice("algo", config.algo, tuple(ALGORITHMS))
    if config.algo == "maddpg":
        return maddpg(config.logits_reg)
    if config.algo == "matd3":
        return matd3(config.logits_reg, config.policy_delay, config.target_noise,
                     config.target_noise_clip)
    return masac(config.logits_reg, config.entropy_coef)
