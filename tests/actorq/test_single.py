"""Single-program ActorQ: DQN vmapped over seeds, D4PG runs on Pendulum; the D4PG learner's
target distribution, target copies and action scaling and the actors' n-step transitions
against plain NumPy / Python references; configs reject bad input."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl_pim.actorq.actor import env_step, init_carry
from jaxrl_pim.actorq.algorithms import make_agent
from jaxrl_pim.actorq.config import (
    ActorQConfig,
    ActorQD4PGConfig,
    ActorQDQNConfig,
    default_config,
)
from jaxrl_pim.actorq.single import episode_returns, make_system, make_train
from jaxrl_pim.envs import make_with_info
from jaxrl_pim.replay import NStepTransition
from jaxrl_pim.rl.networks import D4PGActor, DistributionalCritic
from tests.support.actorq import project_reference, run_tiny_d4pg


def test_dqn_int8_actors_vmapped_over_two_seeds():
    # whether DQN with int8 actors learns CartPole (and D4PG Pendulum) is a criterion of
    # benchmarks/learning.py; here two seeds train briefly in one vmapped program, the actors
    # computing in int8 (the fast int8 path, calibrated at every broadcast)
    cfg = default_config("dqn", "CartPole-v1", precision="int8", num_actors=4,
                         total_timesteps=600, learning_starts=100, eps_decay_steps=300,
                         actor_update_period=50, hidden=(16, 32, 16), eval_episodes=2,
                         actor_compute="native")
    system = make_system(cfg)
    train = make_train(cfg)

    def run(key):
        state, metrics = train(key)
        return state, metrics, system.evaluate(state.actor_params, jax.random.fold_in(key, 7))

    keys = jax.random.split(jax.random.PRNGKey(0), 2)
    state, metrics, trained = jax.jit(jax.vmap(run))(keys)
    assert metrics["loss"].shape == (2, cfg.num_iterations) and trained.shape == (2,)
    assert state.actor_params.layers["Dense_1"].kernel.dtype == jnp.int8
    w = jax.tree.leaves(state.learner.params)[0]
    assert not np.allclose(w[0], w[1])  # independent seeds
    for s in range(2):
        # 150 iterations of 4 steps; one update per iteration from iteration 25 on (100
        # steps collected, 1-step returns)
        assert int(state.learner.step[s]) == int(np.sum(metrics["learned"][s])) == 125
        returns = episode_returns(jax.tree.map(lambda x, s=s: x[s], metrics))
        assert returns.size > 5 and (returns >= 1).all()  # CartPole pays 1 per step


def test_d4pg_pendulum_runs_and_stays_finite():
    ret = run_tiny_d4pg("Pendulum-v1", 16, precision="fp16", total_timesteps=400,
                        learning_starts=64, batch_size=32, actor_update_period=20,
                        buffer_capacity=512)
    # Pendulum returns are <= 0 and episodes last 200 steps: 2 actors x 200 iterations -> 2
    assert ret.size == 2 and np.all(ret <= 0)


@pytest.mark.parametrize(
    "cls, kwargs, match",
    [
        (ActorQDQNConfig, dict(precision="int4"), "precision"),
        (ActorQD4PGConfig, dict(env_name="CartPole-v1"), "env_name"),
        (ActorQDQNConfig, dict(env_name="Pendulum-v1"), "env_name"),
        (ActorQDQNConfig, dict(num_actors=0), "num_actors"),
        (ActorQDQNConfig, dict(actor_update_period=0), "actor_update_period"),
        (ActorQDQNConfig, dict(gamma=1.5), "gamma"),
        (ActorQDQNConfig, dict(batch_size=64, buffer_capacity=32), "buffer_capacity"),
        (ActorQDQNConfig, dict(hidden=[64]), "hidden"),
        (ActorQD4PGConfig, dict(v_min=10.0, v_max=-10.0), "v_max"),
        (ActorQDQNConfig, dict(num_actors=8, total_timesteps=4), "total_timesteps"),
        (ActorQD4PGConfig, dict(env_name="Pendulum-v1", policy_lr=0.0), "policy_lr"),
        (ActorQDQNConfig, dict(eps_end=1.5), "eps_end"),
    ],
)
def test_config_rejects_bad_values(cls, kwargs, match):
    with pytest.raises(ValueError, match=match):
        cls(**kwargs)


def test_each_algorithm_config_holds_only_its_own_settings():
    dqn = {f.name for f in dataclasses.fields(ActorQDQNConfig)}
    d4pg = {f.name for f in dataclasses.fields(ActorQD4PGConfig)}
    assert {"eps_end", "priority_alpha", "prioritized"} <= dqn - d4pg
    assert {"num_atoms", "v_min", "critic_hidden", "expl_noise"} <= d4pg - dqn
    assert (ActorQDQNConfig().algo, ActorQD4PGConfig().algo) == ("dqn", "d4pg")
    with pytest.raises(TypeError):
        ActorQDQNConfig(algo="d4pg")  # the name comes with the class, it is not a setting
    with pytest.raises(ValueError, match="eps_end is not a setting of D4PG"):
        default_config("d4pg", eps_end=0.1)
    with pytest.raises(ValueError, match="num_atoms is not a setting of DQN"):
        default_config("dqn", num_atoms=11)
    with pytest.raises(TypeError, match="an ActorQDQNConfig or an ActorQD4PGConfig"):
        ActorQConfig()
    # the per-algorithm rules: DQN decays epsilon, D4PG keeps its noise scale
    q = ActorQDQNConfig(eps_start=1.0, eps_end=0.1, eps_decay_steps=100)
    assert [float(q.exploration(jnp.float32(t))) for t in (0, 50, 100, 200)] == pytest.approx(
        [1.0, 0.55, 0.1, 0.1])
    assert float(ActorQDQNConfig(eps_end=0.2, eps_decay_steps=0).exploration(5)) == \
        pytest.approx(0.2)
    assert float(ActorQD4PGConfig(expl_noise=0.4).exploration(jnp.float32(1e6))) == \
        pytest.approx(0.4)
    assert q.replay_exponents() == (0.6, 0.2, 1e-6)
    assert q.replace(prioritized=False).replay_exponents() == (0.0, 0.0, 1e-6)
    assert ActorQD4PGConfig().replay_exponents()[:2] == (0.0, 0.0)
    assert not ActorQD4PGConfig.prioritized


def test_default_config_applies_algorithm_defaults():
    d = default_config("d4pg")
    assert (d.env_name, d.n_step, d.batch_size, d.max_grad_norm) == ("Pendulum-v1", 5, 256, 40.0)
    # Pendulum's task defaults: critic 1e-3, policy 3e-4 (the paper's 1e-4 does not learn in a
    # CPU budget), rewards x 0.1 for the [-150, 150] support
    assert (d.lr, d.policy_lr, d.reward_scale) == (1e-3, 3e-4, 0.1)
    assert (d.num_atoms, d.v_min, d.v_max, d.target_update_interval, d.prioritized) == (
        51, -150.0, 150.0, 100, False)
    q = default_config("dqn", "Acrobot-v1")
    assert (q.priority_alpha, q.priority_beta, q.eps_end, q.lr, q.n_step) == (
        0.6, 0.2, 0.05, 1e-3, 1)


# ---------------------------------------------------------------- D4PG against references


def _softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _d4pg(**kw):
    cfg = default_config("d4pg", "Pendulum-v1", hidden=(16, 16),
                         critic_hidden=(32, 32, 16), **kw)
    info = make_with_info(cfg.env_name)[2]
    return cfg, info, make_agent(cfg, info)


def test_d4pg_critic_loss_matches_numpy_target_distribution():
    cfg, info, agent = _d4pg(v_min=-10.0, v_max=10.0)
    state = agent.init(jax.random.PRNGKey(0))
    # targets that differ from the online networks, so using the wrong ones would show
    other = agent.init(jax.random.PRNGKey(1))
    state = state._replace(target_policy=other.policy, target_critic=other.critic)
    rng = np.random.default_rng(0)
    b = 64
    theta = rng.uniform(-np.pi, np.pi, (2, b))
    obs, next_obs = (np.stack([np.cos(t), np.sin(t), rng.uniform(-8, 8, b)], -1)
                     .astype(np.float32) for t in theta)
    action = rng.uniform(-2.0, 2.0, (b, 1)).astype(np.float32)  # Pendulum's torque units
    reward = rng.uniform(-12.0, 3.0, b).astype(np.float32)  # some targets leave the support
    discount = (0.99**5 * (rng.random(b) > 0.2)).astype(np.float32)
    batch = NStepTransition(*(jnp.asarray(x) for x in (obs, action, reward, discount, next_obs)))
    _, ce, _ = jax.jit(agent.update)(state, batch, jnp.ones(b))

    policy = D4PGActor(cfg.hidden, 1)
    critic = DistributionalCritic(cfg.critic_hidden, cfg.num_atoms)
    atoms = np.linspace(cfg.v_min, cfg.v_max, cfg.num_atoms)
    next_a = np.asarray(policy.apply(other.policy, next_obs))  # learner units, [-1, 1]
    next_p = _softmax(np.asarray(critic.apply(other.critic, next_obs, next_a), np.float64))
    logits = np.asarray(critic.apply(state.critic, obs, action / 2.0), np.float64)
    shifted = logits - logits.max(-1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    want = np.empty(b)
    for i in range(b):
        target = project_reference(reward[i] + discount[i] * atoms, next_p[i], atoms)
        assert abs(target.sum() - 1.0) < 1e-9
        want[i] = -np.sum(target * log_p[i])
    np.testing.assert_allclose(np.asarray(ce), want, rtol=1e-4, atol=1e-4)
    assert np.sum(reward + discount * atoms.min() < cfg.v_min) > 5  # clipping exercised


def test_d4pg_hard_target_copies_every_target_update_interval():
    _, info, agent = _d4pg(target_update_interval=3)
    state = agent.init(jax.random.PRNGKey(0))
    rng = np.random.default_rng(1)
    b = 32
    batch = NStepTransition(
        jnp.asarray(rng.normal(size=(b, 3)), jnp.float32),
        jnp.asarray(rng.uniform(-2, 2, (b, 1)), jnp.float32),
        jnp.asarray(rng.uniform(-1, 0, b), jnp.float32),
        jnp.full((b,), 0.95, jnp.float32),
        jnp.asarray(rng.normal(size=(b, 3)), jnp.float32),
    )
    update = jax.jit(agent.update)
    initial = state
    same = lambda a, c: all(np.array_equal(x, y) for x, y in  # noqa: E731
                            zip(jax.tree.leaves(a), jax.tree.leaves(c), strict=True))
    for step in range(1, 7):
        state, _, _ = update(state, batch, jnp.ones(b))
        assert not same(state.policy, initial.policy)  # the online networks do move
        if step % 3 == 0:
            assert same(state.target_policy, state.policy)
            assert same(state.target_critic, state.critic)
            copied = state
        else:
            ref = initial if step < 3 else copied
            assert same(state.target_policy, ref.policy)
            assert same(state.target_critic, ref.critic)


def test_d4pg_actions_are_scaled_to_pendulum_torque_bounds():
    _, info, agent = _d4pg()
    assert (info.action_low, info.action_high) == (-2.0, 2.0)
    params = agent.policy_params(agent.init(jax.random.PRNGKey(0)))
    # a policy head whose tanh output spans (-1, 1), so scaling errors would show
    head = params["params"]["Dense_2"]
    head["kernel"] = 0.2 * jax.random.normal(jax.random.PRNGKey(5), head["kernel"].shape)
    head["bias"] = jnp.full(head["bias"].shape, 0.5)
    obs = jnp.asarray(np.random.default_rng(0).normal(size=(256, 3)), jnp.float32)
    raw = np.asarray(D4PGActor((16, 16), 1).apply(params, obs))
    assert raw.min() < -0.5 and raw.max() > 0.2
    np.testing.assert_allclose(np.asarray(jax.vmap(agent.greedy, (None, 0))(params, obs)),
                               2.0 * raw, rtol=1e-6)
    keys = jax.random.split(jax.random.PRNGKey(1), 256)
    act = jax.vmap(agent.act, (None, 0, 0, None))
    noisy = np.asarray(act(params, obs, keys, jnp.float32(0.3)))
    # noise in units of the half-range: std 0.3 -> 0.6 N m around the greedy torque
    assert 0.5 < np.std((noisy - 2.0 * raw)[np.abs(raw) < 0.5]) < 0.7
    wild = np.asarray(act(params, obs, keys, jnp.float32(10.0)))
    assert wild.min() == -2.0 and wild.max() == 2.0 and np.mean(np.abs(wild) == 2.0) > 0.8


# ------------------------------------------------- n-step transitions against a Python loop


TOL = 5e-4


@pytest.mark.parametrize("algo,env_name,steps", [("d4pg", "Pendulum-v1", 430),
                                                 ("dqn", "CartPole-v1", 300)])
def test_actor_n_step_transitions_match_python_loop(algo, env_name, steps):
    """Step one environment with ``env_step`` and rebuild every emitted transition from the
    raw trajectory (replayed with gymnax and the same keys) with a plain loop."""
    n, gamma, scale = 4, 0.9, 0.5
    critic = {"critic_hidden": (8, 8)} if algo == "d4pg" else {}
    cfg = default_config(algo, env_name, n_step=n, hidden=(8,), **critic)
    env, env_params, info = make_with_info(env_name)
    agent = make_agent(cfg, info)
    params = agent.policy_params(agent.init(jax.random.PRNGKey(0)))
    explore = jnp.float32(0.3 if algo == "d4pg" else 1.0)  # D4PG noise / DQN epsilon
    step = jax.jit(lambda c, k: env_step(env, env_params, agent, gamma, scale, params, c, k,
                                         explore))
    keys = jax.random.split(jax.random.PRNGKey(3), steps)
    carry = init_carry(env, env_params, agent, n, jax.random.PRNGKey(2))

    # the raw trajectory, replayed with gymnax directly
    obs, state = env.reset(jax.random.PRNGKey(2), env_params)
    raw: dict = {"obs": [], "r": [], "term": [], "end": [], "final": []}
    act = jax.jit(agent.act)
    gym_step = jax.jit(env.step)
    emitted = []
    for t in range(steps):
        k_act, k_env = jax.random.split(keys[t])
        a = act(params, obs.astype(jnp.float32), k_act, explore)
        obs2, state, r, term, trunc, extra = gym_step(k_env, state, a, env_params)
        raw["obs"].append(np.asarray(obs, np.float32))
        raw["r"].append(float(r) * scale)
        raw["ret"] = raw.get("ret", 0.0) + float(r)
        raw["term"].append(bool(term))
        raw["end"].append(bool(term) or bool(trunc))
        raw["final"].append(np.asarray(extra["final_observation"], np.float32))
        obs = obs2
        carry, out = step(carry, keys[t])
        out = jax.tree.map(np.asarray, out)
        emitted.append(out)
        # the undiscounted, unscaled return is reported when an episode ends
        assert bool(out.episode_done) == raw["end"][-1]
        if raw["end"][-1]:
            np.testing.assert_allclose(float(out.episode_return), raw.pop("ret"), rtol=TOL)
    assert sum(raw["end"]) >= 2  # episode boundaries inside the run
    # the two jitted programs round differently (about 1e-6 per step, growing along the
    # trajectory); an off-by-one step would be off by far more than TOL
    step_size = np.abs(np.diff(np.stack(raw["obs"]), axis=0)).max(axis=1)
    assert np.median(step_size) > 20 * TOL
    if algo == "dqn":
        assert sum(raw["term"]) >= 2  # terminations (no bootstrap) exercised

    for t in range(steps):
        out = emitted[t]
        assert bool(out.valid) == (t >= n - 1)
        if t < n - 1:
            continue
        s = t - (n - 1)  # the window's oldest step
        g, disc, last = 0.0, gamma**n, s + n - 1
        for j in range(n):
            g += gamma**j * raw["r"][s + j]
            if raw["end"][s + j]:
                disc = 0.0 if raw["term"][s + j] else gamma ** (j + 1)
                last = s + j
                break
        tr = out.transition
        np.testing.assert_allclose(tr.obs, raw["obs"][s], rtol=0, atol=TOL)
        np.testing.assert_allclose(float(tr.reward), g, rtol=TOL, atol=TOL)
        np.testing.assert_allclose(float(tr.discount), disc, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(tr.next_obs, raw["final"][last], rtol=0, atol=TOL)
