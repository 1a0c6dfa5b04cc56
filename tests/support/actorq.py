"""ActorQ helpers: the categorical projection as a plain loop, and a tiny D4PG run."""

from __future__ import annotations

import numpy as np


def project_reference(z_p, probs, z_q):
    """C51-style projection loop with explicit lower/upper neighbours."""
    v_min, v_max = z_q[0], z_q[-1]
    dz = (v_max - v_min) / (len(z_q) - 1)
    out = np.zeros(len(z_q))
    for z, p in zip(z_p, probs, strict=True):
        b = (min(max(z, v_min), v_max) - v_min) / dz
        lo, hi = int(np.floor(b)), int(np.ceil(b))
        if lo == hi:
            out[lo] += p
        else:
            out[lo] += p * (hi - b)
            out[hi] += p * (b - lo)
    return out


def run_tiny_d4pg(env_name: str, width: int, **overrides) -> np.ndarray:
    """A tiny single-program D4PG run (2 actors, ``width``-wide networks) on ``env_name``.

    Checks that more than 50 learner losses and the final critic are finite; returns the
    returns of the finished episodes.
    """
    import jax
    import jax.numpy as jnp

    from jaxrl_pim.actorq.config import default_config
    from jaxrl_pim.actorq.single import episode_returns, make_train

    cfg = default_config("d4pg", env_name, num_actors=2, hidden=(width,),
                         critic_hidden=(width, width), **overrides)
    state, metrics = jax.jit(make_train(cfg))(jax.random.PRNGKey(1))
    loss = np.asarray(metrics["loss"])[np.asarray(metrics["learned"])]
    assert loss.size > 50 and np.all(np.isfinite(loss))
    for leaf in jax.tree.leaves(state.learner.critic):
        assert bool(jnp.all(jnp.isfinite(leaf)))
    return episode_returns(metrics)
