"""PTQ / QAT studies, the action-gap ablation and the ``jaxrl-pim ptq`` / ``qat`` commands.

Training is replaced by randomly initialised policies here (the learners have their own
tests in tests/rl); these tests check the study's quantization, pairing, statistics and
reports against closed forms.
"""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl_pim import cli
from jaxrl_pim.quant import QuantSpec, fake_quantize
from jaxrl_pim.rl import actor_critic, dqn
from jaxrl_pim.rl.evaluate import make_evaluate
from jaxrl_pim.studies import gap, ptq, qat, report, tasks


def _random_policies(task, num_seeds, key):
    """Stand-in for studies.train_seeds: freshly initialised PPO actors, one per seed."""
    cfg = task.config
    actor, _, spec = actor_critic.make_actor_critic(cfg.env_name, cfg.hidden, cfg.activation)
    obs = jnp.zeros((1, spec.obs_dim))
    # Scale the weights up so the random policies are far from uniform. (Jitted: the
    # orthogonal initializer's Householder loop op by op is many small compilations.)
    params = jax.jit(jax.vmap(lambda k: jax.tree.map(lambda w: 30.0 * w, actor.init(k, obs))))(
        jax.random.split(key, num_seeds)
    )
    metrics = {"episode_return": jnp.tile(jnp.array([jnp.nan, 10.0, 20.0]), (num_seeds, 1))}
    return SimpleNamespace(params=params), metrics


def test_return_ratio_orientation():
    assert ptq.return_ratio(450.0, 500.0) == pytest.approx(0.9)
    assert ptq.return_ratio(-200.0, -150.0) == pytest.approx(0.75)  # worse cost
    assert ptq.return_ratio(-100.0, -150.0) == pytest.approx(1.5)  # better cost
    assert math.isnan(ptq.return_ratio(5.0, -150.0))


def test_quantize_seeds_uses_per_seed_scales():
    task = tasks.TASKS["ppo-cartpole"]
    state, _ = _random_policies(task, 2, jax.random.key(0))
    spec = QuantSpec("paper", 4)
    q = ptq.quantize_seeds(state.params, spec)
    for s in range(2):
        one = jax.tree.map(lambda x, s=s: x[s], state.params)
        ref = fake_quantize(one, spec)
        for a, b in zip(jax.tree.leaves(jax.tree.map(lambda x, s=s: x[s], q)),
                        jax.tree.leaves(ref), strict=True):
            np.testing.assert_array_equal(a, b)
    assert ptq.quantize_seeds(state.params, None) is state.params


def test_evaluate_formats_reference_row_and_ordering():
    task = tasks.TASKS["ppo-cartpole"]
    state, _ = _random_policies(task, 2, jax.random.key(1))
    specs = {"fp32": None, "fp16": QuantSpec("fp16"), "bits=2": QuantSpec("paper", 2)}
    out = ptq.evaluate_formats(task, state.params, specs, 2, jax.random.key(2))
    fp32, fp16, b2 = out["fp32"], out["fp16"], out["bits=2"]
    assert fp32["return_ratio"] == 1.0 and fp32["kl_mean"] == 0.0
    assert fp32["action_agreement"] == 1.0
    assert len(fp32["per_seed_return"]) == 2
    np.testing.assert_allclose(fp32["mean_return"], np.mean(fp32["per_seed_return"]))
    np.testing.assert_allclose(fp32["std_return"], np.std(fp32["per_seed_return"]))
    assert 0.0 <= fp16["kl_mean"] < b2["kl_mean"]
    assert b2["action_agreement"] < 1.0


def test_ptq_command_writes_report(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(ptq, "train_seeds", _random_policies)
    path = tmp_path / "ptq.json"
    rc = cli.main(["ptq", "--tasks", "ppo-cartpole", "--seeds", "2", "--episodes", "2",
                   "--bits", "6", "3", "--json", str(path)])
    assert rc == 0
    out = capsys.readouterr().out
    assert "| ppo-cartpole | categorical |" in out and "| 3 |" in out
    report_ = json.loads(path.read_text())
    assert set(report_) >= {"system", "config", "results", "timing_s", "summary"}
    res = report_["results"]["ptq"]["ppo-cartpole"]
    assert list(res["formats"]) == ["fp32", "fp16", "int8", "bits=6", "bits=3"]
    assert res["final_train_return"] == pytest.approx(15.0)
    assert report_["summary"]["int8_min_return_ratio"] == pytest.approx(
        res["formats"]["int8"]["return_ratio"]
    )
    assert report_["config"]["bits"] == [6, 3]


def test_qat_study_plumbing(monkeypatch):
    calls = []

    def fake_train(task, num_seeds, key):
        calls.append(task.config.qat)
        return _random_policies(task, num_seeds, key)

    monkeypatch.setattr(qat, "train_seeds", fake_train)
    cfg = qat.QATStudyConfig(tasks=("ppo-cartpole",), bits=(4,), num_seeds=2, eval_episodes=2)
    results, timing = qat.run_qat(cfg)
    assert calls == [None, qat.QATConfig(4, 0.5)]
    entry = results["ppo-cartpole"]["bits"]["4"]
    assert set(entry) == {"ptq", "qat", "qat_final_train_return"}
    assert results["ppo-cartpole"]["fp32"]["return_ratio"] == 1.0
    assert "| ppo-cartpole | 4 |" in report.qat_table(results)
    assert timing["total"] > 0


def _random_q_networks(task, num_seeds, key):
    """Stand-in for studies.train_seeds on a DQN task: freshly initialised Q-networks."""
    q_apply, net, spec = dqn._network(task.config)
    obs = jnp.zeros((1, spec.obs_dim))
    params = jax.jit(jax.vmap(lambda k: net.init(k, obs)))(jax.random.split(key, num_seeds))
    return SimpleNamespace(params=params), {}


@pytest.mark.slow
def test_gap_ablation_plumbing_and_action_gap(monkeypatch):
    calls = []

    def fake_train(task, num_seeds, key):
        calls.append((task.config.advantage_learning, jax.random.key_data(key).tolist()))
        return _random_q_networks(task, num_seeds, key)

    monkeypatch.setattr(gap, "train_seeds", fake_train)
    names = ("ppo-cartpole", "dqn-cartpole", "dqn-acrobot")
    assert gap.gap_ablation_tasks(names) == ("dqn-cartpole", "dqn-acrobot")
    cfg = ptq.PTQConfig(tasks=gap.gap_ablation_tasks(names), num_seeds=2, eval_episodes=2,
                        bits=(), timesteps_scale=0.01)
    results, _ = gap.run_gap_ablation(cfg)
    acrobot_alpha = tasks.TASKS["dqn-acrobot"].config.advantage_learning
    assert acrobot_alpha > 0 and tasks.TASKS["dqn-cartpole"].config.advantage_learning == 0
    assert [c[0] for c in calls] == [0.0, gap.GAP_ABLATION_ALPHA, 0.0, acrobot_alpha]
    assert calls[0][1] == calls[1][1] and calls[2][1] == calls[3][1]  # same seeds per task
    for variants in results.values():
        assert list(variants) == ["plain", "advantage_learning"]
        for r in variants.values():
            assert list(r["formats"]) == ["fp32", "int8"]
            assert r["formats"]["fp32"]["return_ratio"] == 1.0
            assert r["mean_action_gap"] == r["formats"]["fp32"]["action_gap"]
    # the fp32 action gap against NumPy on the evaluation's visited states
    task = tasks.study_task(cfg, "dqn-cartpole")
    state, _ = _random_q_networks(task, 2, jax.random.key(5))
    key = jax.random.key(6)
    policy = task.policy()
    evaluate = jax.jit(make_evaluate(policy, task.config.env_name, 2))
    gaps = []
    for seed in range(2):
        p = jax.tree.map(lambda x, seed=seed: x[seed], state.params)
        ev = evaluate(p, key)
        q = np.sort(np.asarray(policy.apply(p, ev.obs)), axis=-1)
        mask = np.asarray(ev.mask)
        gaps.append(((q[..., -1] - q[..., -2]) * mask).sum() / mask.sum())
    fp32 = ptq.evaluate_formats(task, state.params, {"fp32": None}, 2, key)["fp32"]
    np.testing.assert_allclose(fp32["action_gap"], np.mean(gaps),
                               rtol=1e-5)
    table = report.gap_table(results)
    assert "| dqn-acrobot | advantage learning | 0.97 |" in table
    assert table.count("| plain | 0 |") == 2


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["ptq", "--bits", "1"], "bits must be >= 2"),
        (["ptq", "--seeds", "0"], "--seeds"),
        (["ptq", "--tasks", "ppo-cartpole", "ppo-cartpole"], "must not repeat"),
        (["qat", "--delay", "1.0"], "--delay"),
    ],
)
def test_commands_reject_bad_options(argv, message, capsys):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_study_configs_share_task_and_bits_checks():
    from jaxrl_pim.studies import PTQConfig, QATStudyConfig

    assert PTQConfig(tasks=("ppo-cartpole",), bits=()).bits == ()  # PTQ: fp formats only
    for cls in (PTQConfig, QATStudyConfig):
        with pytest.raises(ValueError, match="tasks must not repeat"):
            cls(tasks=("ppo-cartpole", "ppo-cartpole"))
        with pytest.raises(ValueError, match="tasks must be a non-empty tuple"):
            cls(tasks=())
        with pytest.raises(ValueError, match="bits must be >= 2"):
            cls(bits=(8, 1))
    with pytest.raises(ValueError, match="bits must be a non-empty tuple"):
        QATStudyConfig(bits=())


def test_the_task_names_are_the_registrys():
    from jaxrl_pim import choices, studies

    assert tuple(tasks.TASKS) == choices.STUDY_TASKS  # the commands' --tasks, read without jax
    assert all(t.name == name for name, t in tasks.TASKS.items())
    assert studies.TASKS is tasks.TASKS and studies.run_ptq is ptq.run_ptq
    assert ptq.PTQConfig is studies.PTQConfig and qat.QATStudyConfig is studies.QATStudyConfig


def test_task_seeds_depend_on_name_and_seed_not_position(monkeypatch):
    """The same task and seed train the same policies (same config, same key) and evaluate
    them from the same states (same key) in ``ptq`` (whatever the task order), ``qat`` and the
    gap ablation; other tasks or seeds differ. Training and evaluation are stubs here."""
    calls, eval_keys = [], []

    def fake_train(study):
        def train(task, num_seeds, key):
            calls.append((study, task.name, task.config, jax.random.key_data(key).tolist()))
            return SimpleNamespace(params=None), {"episode_return": jnp.ones((num_seeds, 2))}

        return train

    def fake_formats(task, params, specs, eval_episodes, key):
        eval_keys.append((task.name, jax.random.key_data(key).tolist()))
        return {label: {"action_gap": 0.0} for label in specs}

    def fake_paired(task, eval_episodes):
        def evaluate(ref, params, key):
            eval_keys.append((task.name, jax.random.key_data(key).tolist()))
            div = {k: np.zeros(1) for k in ("kl", "action_agreement", "action_mse",
                                             "action_gap")}
            return np.zeros((1, 1)), np.zeros((1, 1)), div

        return evaluate

    for module in (ptq, qat, gap):
        monkeypatch.setattr(module, "train_seeds", fake_train(module.__name__))
    monkeypatch.setattr(ptq, "evaluate_formats", fake_formats)
    monkeypatch.setattr(gap, "evaluate_formats", fake_formats)
    monkeypatch.setattr(qat, "make_paired_evaluate", fake_paired)
    monkeypatch.setattr(qat, "quantize_seeds", lambda params, spec: params)
    small = dict(num_seeds=1, eval_episodes=1, timesteps_scale=0.01)
    ptq.run_ptq(ptq.PTQConfig(tasks=("ppo-cartpole", "dqn-cartpole"), bits=(), **small))
    ptq.run_ptq(ptq.PTQConfig(tasks=("dqn-cartpole", "ppo-cartpole"), bits=(), **small))
    qat.run_qat(qat.QATStudyConfig(tasks=("dqn-cartpole",), bits=(4,), **small))
    gap.run_gap_ablation(ptq.PTQConfig(tasks=("dqn-cartpole",), bits=(), **small))
    ptq.run_ptq(ptq.PTQConfig(tasks=("dqn-cartpole",), bits=(), seed=1, **small))
    dqn_fp32 = [(c[2], c[3]) for c in calls
                if c[1] == "dqn-cartpole" and c[2].qat is None and c[2].advantage_learning == 0]
    # ptq twice (both orders), qat's fp32 run, the gap ablation's plain run, then seed 1
    assert len(dqn_fp32) == 5
    assert all(d == dqn_fp32[0] for d in dqn_fp32[:4])
    assert dqn_fp32[4][1] != dqn_fp32[0][1]  # another seed, another key
    ppo_keys = [c[3] for c in calls if c[1] == "ppo-cartpole"]
    assert len(ppo_keys) == 2 and ppo_keys[0] == ppo_keys[1] != dqn_fp32[0][1]
    # the QAT run of a task shares the fp32 run's key; the keys come from task_keys
    qat_run = [c for c in calls if c[2].qat is not None]
    assert len(qat_run) == 1 and qat_run[0][3] == dqn_fp32[0][1]
    k_train, k_eval = tasks.task_keys(0, "dqn-cartpole")
    assert jax.random.key_data(k_train).tolist() == dqn_fp32[0][1]
    # every evaluation of dqn-cartpole at seed 0 (ptq x2, qat x3, gap x2) starts from k_eval
    dqn_evals = [k for name, k in eval_keys if name == "dqn-cartpole"]
    assert len(dqn_evals) == 8
    assert all(k == jax.random.key_data(k_eval).tolist() for k in dqn_evals[:7])
    assert dqn_evals[7] != dqn_evals[0]
