"""The library's environment base and spaces against gymnax 1.0's own classes.

``jaxrl_pim.envs.api.Environment`` must step exactly as gymnax's ``Environment`` (key split,
time limit, auto-reset of state and observation, the ``info`` entries): the same world
dynamics are run under both bases over whole trajectories that end by termination and by
truncation, leaf for leaf. The spaces must draw what gymnax's draw from the same key.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from gymnax.environments import environment as gymnax_environment
from gymnax.environments import spaces as gymnax_spaces
from gymnax.wrappers.purerl import LogWrapper

from jaxrl_pim.envs import CliffWalking, Taxi, api, spaces
from jaxrl_pim.envs.mpe import make_spread

STEPS = 60


class UnderGymnax(gymnax_environment.Environment):
    """``world``'s own dynamics (``step_env``, ``reset_env``, time limit) under gymnax's
    ``Environment.step`` / ``reset``: the reference for the library's base."""

    def __init__(self, world: api.Environment) -> None:
        self.world = world

    def __hash__(self) -> int:
        return hash(("under-gymnax", self.world))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, UnderGymnax) and other.world == self.world

    @property
    def default_params(self):
        return self.world.default_params

    def step_env(self, key, state, action, params):
        return self.world.step_env(key, state, action, params)

    def reset_env(self, key, params):
        return self.world.reset_env(key, params)

    def is_truncated(self, state, params):
        return self.world.is_truncated(state, params)


def _trajectory(env, params, key, actions):
    """``STEPS`` steps of ``env`` from a reset with the given per-step actions."""
    k_reset, k_steps = jax.random.split(key)
    _, state = env.reset(k_reset, params)

    def body(state, xs):
        k, a = xs
        obs, state, reward, terminated, truncated, info = env.step(k, state, a, params)
        return state, (obs, state, reward, terminated, truncated, info)

    return jax.lax.scan(body, state, (jax.random.split(k_steps, STEPS), actions))[1]


def _worlds():
    taxi = Taxi()
    cliff = CliffWalking(is_slippery=True)
    spread, spread_params = make_spread(3, max_steps=11)
    return [pytest.param(*case, id=case[0]) for case in [
        ("taxi-limit-7", taxi, taxi.default_params.replace(max_steps_in_episode=7),
         lambda k: jax.random.randint(k, (STEPS,), 0, 6)),
        ("cliff-slippery", cliff, cliff.default_params.replace(max_steps_in_episode=9),
         lambda k: jax.random.randint(k, (STEPS,), 0, 4)),
        ("spread-3", spread, spread_params,
         lambda k: (jax.random.uniform(k, (STEPS, 3, 5)),)),
    ]]


@pytest.mark.parametrize("name,world,params,draw", _worlds())
def test_step_and_reset_equal_gymnax_base(name, world, params, draw):
    key = jax.random.key(3)
    actions = draw(jax.random.key(4))
    ours = _trajectory(world, params, key, actions)
    ref = _trajectory(UnderGymnax(world), params, key, actions)
    leaves, ref_leaves = jax.tree.leaves(ours), jax.tree.leaves(ref)
    assert jax.tree.structure(ours) == jax.tree.structure(ref)
    for a, b in zip(leaves, ref_leaves, strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    done = np.asarray(ours[3]) | np.asarray(ours[4])
    assert done.sum() >= 3  # the trajectories cross several episode ends
    if name.startswith("taxi"):
        assert np.asarray(ours[4]).any()  # a truncation, not only terminations


def test_a_gymnax_wrapper_steps_a_library_world():
    env = LogWrapper(Taxi())
    params = env.default_params.replace(max_steps_in_episode=4)
    _, state = env.reset(jax.random.key(0), params)
    for i in range(4):
        _, state, reward, _, _, info = env.step(jax.random.key(i + 1), state, 1, params)
    assert info["returned_episode"] and float(info["returned_episode_returns"]) == -4.0
    assert int(info["returned_episode_lengths"]) == 4


@pytest.mark.parametrize("make", [
    lambda s: s.Discrete(7),
    lambda s: s.Box(-2.0, 3.0, (4, 2)),
    lambda s: s.Tuple([s.Discrete(3), s.Box(0.0, 1.0, (5,))]),
    lambda s: s.Dict({"a": s.Discrete(4), "b": s.Box(-1.0, 1.0, (2,))}),
], ids=["discrete", "box", "tuple", "dict"])
def test_spaces_sample_what_gymnax_samples(make):
    ours, ref = make(spaces), make(gymnax_spaces)
    for i in range(5):
        sample, ref_sample = ours.sample(jax.random.key(i)), ref.sample(jax.random.key(i))
        a, b = sample, ref_sample
        if isinstance(b, dict):  # gymnax returns an OrderedDict: compare by name
            a, b = [a[k] for k in b], list(b.values())
        for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
        assert bool(ours.contains(sample))


def test_spaces_contain_and_describe():
    assert spaces.Discrete(4).contains(3) and not spaces.Discrete(4).contains(4)
    assert not spaces.Discrete(4).contains(-1)
    box = spaces.Box(-1.0, 1.0, (3,))
    assert box.contains(jnp.zeros(3)) and not box.contains(jnp.array([0.0, 2.0, 0.0]))
    pair = spaces.Tuple([spaces.Discrete(2), box])
    assert pair.contains((1, jnp.zeros(3))) and not pair.contains((2, jnp.zeros(3)))
    state_space = Taxi().state_space(Taxi().default_params)
    assert state_space.contains(Taxi().state_from_index(123))
    assert repr(spaces.Discrete(5)) == "Discrete(5, dtype=int32)"
    with pytest.raises(ValueError, match="num_categories >= 0"):
        spaces.Discrete(-1)
