"""A uniform-random policy's mean episode return on a gymnax environment (jax + gymnax only;
shared by the library's side and rejax's side of ``benchmarks/e2e_frameworks.py``)."""

from __future__ import annotations


def random_return(env_name: str, episodes: int, seed: int = 123) -> float:
    """Mean undiscounted return of ``episodes`` episodes of uniformly random actions on the
    gymnax environment ``env_name`` (each episode ends at its first ``done``, the time limit
    included)."""
    import gymnax
    import jax
    import jax.numpy as jnp

    env, params = gymnax.make(env_name)
    steps = int(params.max_steps_in_episode)

    def one(key: jax.Array) -> jax.Array:
        k0, k1 = jax.random.split(key)
        _, state = env.reset(k0, params)

        def step(carry, k):
            state, ret, alive = carry
            ka, ks = jax.random.split(k)
            action = env.action_space(params).sample(ka)
            out = env.step(ks, state, action, params)  # gymnax 1.0: 6 values, 0.0.x: 5
            state, reward = out[1], out[2]
            done = out[3] if len(out) == 5 else jnp.logical_or(out[3], out[4])
            return (state, ret + alive * reward, alive * (1.0 - done.astype(jnp.float32))), None

        (_, ret, _), _ = jax.lax.scan(step, (state, jnp.float32(0), jnp.float32(1)),
                                      jax.random.split(k1, steps))
        return ret

    keys = jax.random.split(jax.random.PRNGKey(seed), episodes)
    return float(jnp.mean(jax.jit(jax.vmap(one))(keys)))
