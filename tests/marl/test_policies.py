"""Trained policies back from a checkpoint folder: ``load_policies``, ``evaluate``, the GIF.

One short checkpointed run on predator-prey (two teams of different observation sizes) and
one on a JaxMARL spread (through the command: the ``jaxmarl_run`` fixture of ``conftest.py``,
shared with ``test_evaluate_command.py``); the loaded actors must be the run's final actors,
``greedy`` / ``act`` must equal the networks applied by hand (softmax, Gumbel-softmax with
the same key), ``evaluate`` must equal a step-by-step loop over the world, and bad folders
are one line.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl_pim.checkpoint import Checkpoints
from jaxrl_pim.marl import checkpoint, evaluate, load_policies
from jaxrl_pim.marl.config import MARLConfig
from jaxrl_pim.marl.networks import gumbel_noise, mlp
from jaxrl_pim.marl.policies import rollout_positions
from jaxrl_pim.marl.trainer import make_env
from tests.support.marl import JAXMARL_ENV, JAXMARL_GROUP

TAG = MARLConfig(env="tag", num_agents=3, num_envs=2, num_episodes=6, batch_size=8,
                 buffer_capacity=128, learning_starts=16, update_every=5, hidden=(16, 16))


#: the tests of ``tag_run`` on one xdist worker: the run is trained once, not once per worker
ON_ONE_WORKER = pytest.mark.xdist_group("marl-tag-run")


@pytest.fixture(scope="module")
def tag_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tag_run")
    with Checkpoints(folder, fingerprint=checkpoint.fingerprint(TAG, seed=0)) as ckpt:
        result = checkpoint.run(TAG, jax.random.PRNGKey(0), ckpt, every=3)
    return folder, result.state


def _logits(config, params, obs):
    out = []
    for p, o, t in zip(params, obs, make_env(config)[0].teams, strict=True):
        net = mlp(config.hidden, t.action_dim)
        out.append(jnp.stack([net.apply(jax.tree.map(lambda x, i=i: x[i], p), o[i])
                              for i in range(t.num_agents)]))
    return out


@ON_ONE_WORKER
def test_load_policies_returns_the_final_actors(tag_run):
    folder, state = tag_run
    pol = load_policies(folder)
    assert pol.config == TAG and pol.episodes_done == 6
    assert [t.name for t in pol.teams] == ["predators", "prey"]
    for loaded, team in zip(pol.params, state.teams, strict=True):
        jax.tree.map(np.testing.assert_array_equal, loaded, team.actor)
    obs = tuple(jax.random.normal(jax.random.PRNGKey(i), (t.num_agents, t.obs_dim))
                for i, t in enumerate(pol.teams))
    logits = _logits(TAG, pol.params, obs)
    for g, lg in zip(pol.greedy(obs), logits, strict=True):
        np.testing.assert_allclose(g, jax.nn.softmax(lg, axis=-1), rtol=1e-5, atol=1e-6)
    key = jax.random.PRNGKey(5)
    for ti, (a, lg) in enumerate(zip(pol.act(obs, key), logits, strict=True)):
        noise = gumbel_noise(jax.random.fold_in(key, ti), lg.shape)
        np.testing.assert_allclose(a, jax.nn.softmax(lg + noise, axis=-1), rtol=1e-5,
                                   atol=1e-6)
    batched = pol.greedy(tuple(jnp.stack([o, o]) for o in obs))  # [2, n_t, K]
    # same tolerance as above: batching changes float32 rounding with the run's emitters
    np.testing.assert_allclose(batched[0][1], pol.greedy(obs)[0], rtol=1e-5, atol=1e-6)


@ON_ONE_WORKER
def test_evaluate_equals_a_step_loop(tag_run):
    folder, _ = tag_run
    pol = load_policies(folder, env="tag")
    key = jax.random.PRNGKey(9)
    got = evaluate(pol.config, pol.params, key, 3)
    env, params = make_env(pol.config)
    reset, step = jax.jit(env.reset), jax.jit(env.step_env)  # one world step per call
    for i in range(3):
        k0, k1 = jax.random.split(jax.random.fold_in(key, i))
        obs, state = reset(k0, params)
        total = np.zeros(2)
        for k in jax.random.split(k1, TAG.episode_length):
            _, k_env = jax.random.split(k)
            obs, state, rew, _, _ = step(k_env, state, pol.greedy(obs), params)
            total += [float(r.mean()) for r in rew]
        np.testing.assert_allclose(got[i], total, rtol=1e-4, atol=1e-4)
    rand = evaluate(pol.config, None, key, 3, policy="random")
    assert rand.shape == (3, 2) and not np.allclose(rand, got)


@ON_ONE_WORKER
def test_bad_folders_are_one_line(tag_run, tmp_path):
    folder, _ = tag_run
    cases = [
        (tmp_path / "missing", "is not a folder"),
        (tmp_path, "holds no checkpoint"),
    ]
    other = tmp_path / "other"
    with Checkpoints(other, fingerprint={"lanes": 4}) as ckpt:
        ckpt.save(1, {"q": np.zeros(3, np.float32)})
    cases.append((other, "it is not a MARL checkpoint"))
    for path, message in cases:
        with pytest.raises(ValueError, match=message) as err:
            load_policies(path)
        assert "\n" not in str(err.value)
    with pytest.raises(ValueError, match="holds a checkpoint of env 'tag', not 'spread'"):
        load_policies(folder, env="spread")


@ON_ONE_WORKER
def test_rollout_positions_and_gif(tag_run, tmp_path):
    from PIL import Image

    from jaxrl_pim.marl.render import render_gif

    folder, _ = tag_run
    pol = load_policies(folder)
    ep = rollout_positions(pol.config, pol.params, jax.random.PRNGKey(2))
    assert ep["agents"].shape == (TAG.episode_length + 1, 4, 2)
    assert ep["landmarks"].shape == (TAG.episode_length + 1, 2, 2)
    np.testing.assert_allclose(ep["agent_radius"], [0.075] * 3 + [0.05])
    assert ep["agent_team"].tolist() == [0, 0, 0, 1] and ep["landmark_kind"] == "obstacle"
    same = rollout_positions(pol.config, pol.params,
                             jax.random.fold_in(jax.random.PRNGKey(4), 0))["returns"]
    np.testing.assert_allclose(same, evaluate(pol.config, pol.params, jax.random.PRNGKey(4),
                                              1)[0], rtol=1e-5)
    path = render_gif([ep, ep], tmp_path / "tag.gif", titles=["a", "b"])
    with Image.open(path) as im:
        assert im.n_frames == TAG.episode_length + 1
        assert im.size[0] > im.size[1]  # two panels side by side
    with pytest.raises(ValueError, match="GIF"):
        render_gif([ep], tmp_path / "tag.png")


@pytest.mark.xdist_group(JAXMARL_GROUP)
def test_jaxmarl_checkpoint_round_trip(jaxmarl_run, tmp_path):
    """The command's JaxMARL run, loaded back, holds the actors of the same run made through
    the Python API (seed 0, checkpoints after every episode as the command makes them)."""
    assert jaxmarl_run.status == 0
    pol = load_policies(jaxmarl_run.checkpoint, env=JAXMARL_ENV)
    assert pol.config.env == JAXMARL_ENV and pol.episodes_done == 3
    with Checkpoints(tmp_path, fingerprint=checkpoint.fingerprint(pol.config, seed=0)) as ckpt:
        result = checkpoint.run(pol.config, jax.random.PRNGKey(0), ckpt, every=1)
    assert int(result.state.num_updates) > 0  # the actors were trained
    jax.tree.map(np.testing.assert_array_equal, pol.params[0], result.state.teams[0].actor)
    ep = rollout_positions(pol.config, pol.params, jax.random.PRNGKey(0))
    assert ep["agents"].shape == (26, 3, 2) and ep["landmark_kind"] == "landmark"
    np.testing.assert_allclose(ep["agent_radius"], 0.15)
    np.testing.assert_allclose(ep["landmark_radius"], 0.05)
