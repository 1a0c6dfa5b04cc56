"""Many seeds at once (``marl.seeds``, ``jaxrl-pim marl --seeds``): statistics over seeds,
each seed against the seed alone, checkpoints of all seeds resumed bit for bit, the same bits
on 1, 2 and 8 devices, the command's report and plot, and ``marl evaluate`` of a group."""

from __future__ import annotations

import json
import math

import jax
import numpy as np
import pytest

from jaxrl_pim.cli import main
from jaxrl_pim.marl import evaluate, load_policies, seeds
from jaxrl_pim.marl.config import MARLConfig
from jaxrl_pim.marl.trainer import make_init, make_train_from
from tests.support import run_with_devices
from tests.support.seeds import SEED_ATOL, SEED_RTOL
from tests.support.seeds import equal_trees as _equal_trees

# What ``jaxrl-pim marl --agents 2 --episodes 4 --capacity 64 --batch-size 8
# --learning-starts 8 --update-every 30`` trains (the command test below): its programs are
# compiled once for both (the run's XLA compilation cache).
TINY = MARLConfig(num_agents=2, num_episodes=4, buffer_capacity=64, batch_size=8,
                  learning_starts=8, update_every=30)
#: the device test's world: smaller and shorter (its differences stay at float32 rounding)
SMALL = MARLConfig(env="spread", num_agents=2, num_episodes=4, episode_length=5,
                   buffer_capacity=64, batch_size=8, learning_starts=8, update_every=3,
                   hidden=(8,))
TINY_FLAGS = ["--agents", "2", "--episodes", "4", "--capacity", "64", "--batch-size", "8",
              "--learning-starts", "8", "--update-every", "30"]


def test_seed_stats_match_a_hand_computation():
    x = np.array([[1.0, 10.0], [2.0, 14.0], [4.0, 12.0], [5.0, 8.0]])  # 4 seeds, 2 teams
    got = seeds.seed_stats(x)
    mean = [3.0, 11.0]
    # sample variances: (4 + 1 + 1 + 4) / 3 and (1 + 9 + 1 + 9) / 3
    se = [math.sqrt(10 / 3) / 2, math.sqrt(20 / 3) / 2]
    assert got["seeds"] == 4
    np.testing.assert_allclose(got["mean"], mean)
    np.testing.assert_allclose(got["standard_error"], se)
    np.testing.assert_allclose(got["ci95_low"], np.array(mean) - 3.182446305 * np.array(se))
    np.testing.assert_allclose(got["ci95_high"], np.array(mean) + 3.182446305 * np.array(se))
    one = seeds.seed_stats(x[:1])
    assert one["mean"] == [1.0, 10.0] and np.isnan(one["standard_error"]).all()
    with pytest.raises(ValueError, match="S >= 1 seeds"):
        seeds.seed_stats(np.zeros((0, 2)))


def test_t_quantile_matches_scipy():
    stats = pytest.importorskip("scipy.stats")
    for dof in (*range(1, 40), 60, 100, 1000):
        assert abs(seeds.t_quantile_975(dof) - stats.t.ppf(0.975, dof)) < 1e-6, dof


def test_seed_mesh_and_keys():
    keys = seeds.seed_keys(7, 3)
    np.testing.assert_array_equal(keys[2], jax.random.PRNGKey(9))
    assert seeds.seed_mesh(6, ["a", "b", "c", "d"]).devices.tolist() == ["a", "b", "c"]
    assert seeds.seed_mesh(5, ["a", "b"]).devices.size == 1
    with pytest.raises(ValueError, match="divisible by the mesh's 2 devices"):
        seeds.run_seeds(TINY, 0, 3, mesh=seeds.seed_mesh(2, jax.devices()[:1] * 2))


@pytest.mark.slow
def test_each_seed_of_a_run_equals_the_seed_alone_and_resumes_bit_for_bit(tmp_path):
    from jaxrl_pim.checkpoint import Checkpoints

    def folder(name):
        return Checkpoints(tmp_path / name, fingerprint=seeds.fingerprint(TINY, 3, 4))

    whole = seeds.run_seeds(TINY, seed=3, num_seeds=4, checkpoints=folder("a"), every=2)
    assert whole.curve.shape == (4, 4, 1) and whole.checkpoints_written == 2
    assert TINY.update_rounds(100) == 3
    # each seed alone, in the same two segments (the static schedule makes each segment its
    # own program; the same segments keep the comparison to one program's rounding)
    first, second = (jax.jit(make_train_from(TINY, 2, start_episode=s)) for s in (0, 2))
    for i in range(4):
        state, m1 = first(jax.jit(make_init(TINY))(jax.random.PRNGKey(3 + i)))
        state, m2 = second(state)
        m = {"episode_return": np.concatenate([m1["episode_return"], m2["episode_return"]])}
        np.testing.assert_allclose(whole.curve[i], m["episode_return"],
                                   rtol=SEED_RTOL, atol=SEED_ATOL)
        assert _equal_trees(state, jax.tree.map(lambda x, i=i: x[i], whole.state))
    # Half the run, then resumed to the end: the same states and curves, bit for bit.
    half = MARLConfig(**{**TINY.__dict__, "num_episodes": 2})
    seeds.run_seeds(half, seed=3, num_seeds=4, checkpoints=folder("b"), every=2)
    with pytest.raises(ValueError, match="already holds checkpoints"):
        seeds.run_seeds(TINY, seed=3, num_seeds=4, checkpoints=folder("b"), every=2)
    resumed = seeds.run_seeds(TINY, seed=3, num_seeds=4, checkpoints=folder("b"), every=2,
                              resume=True)
    assert resumed.start == 2
    np.testing.assert_array_equal(resumed.curve, whole.curve)
    for a, b in zip(jax.tree.leaves(resumed.state), jax.tree.leaves(whole.state), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    other = Checkpoints(tmp_path / "b", fingerprint=seeds.fingerprint(TINY, 3, 8))
    with pytest.raises(ValueError, match="num_seeds"):
        seeds.run_seeds(TINY, seed=3, num_seeds=8, checkpoints=other, resume=True)


@pytest.mark.slow
def test_sixteen_seeds_on_one_two_and_eight_devices():
    """16 seeds on 1, 2 and 8 devices agree bit for bit: the programs split over 2 and 8
    devices are the same per-device program, and the 1-device program (compiled
    unpartitioned) computes the same arithmetic because the trainer writes the divisions by a
    per-seed value that XLA would rewrite only there (Adam's bias corrections, the softmax
    gradient) as products with reciprocals (``jaxrl_pim.marl.networks``). Compiled at the
    run's lowest effort with XLA:CPU's default emitters, as at the default level; the legacy
    emitters of the suite part 1 and 8 devices by rounding at the lowest effort."""
    out = run_with_devices(f"""
        import jax, numpy as np
        from jaxrl_pim.marl import seeds
        from jaxrl_pim.marl.config import MARLConfig
        cfg = MARLConfig(**{SMALL.__dict__!r})
        runs = {{}}
        for n in (1, 2, 8):
            r = seeds.run_seeds(cfg, seed=3, num_seeds=16,
                                mesh=seeds.seed_mesh(16, jax.devices()[:n]))
            assert r.devices == n and r.curve.shape == (16, 4, 1)
            runs[n] = [np.asarray(x) for x in jax.tree.leaves((r.state, r.curve))]
            updates = int(r.state.num_updates[0])
        same = [all(np.array_equal(a, b, equal_nan=True) for a, b in zip(runs[n], runs[8]))
                for n in (1, 2)]
        print("SAME", same, "UPDATES", updates)
    """, n_devices=8, default_emitters=True)
    assert f"SAME [True, True] UPDATES {SMALL.update_rounds(20)}" in out, out


def test_the_command_reports_every_seed_and_the_spread(tmp_path, capsys):
    report, plot = tmp_path / "r.json", tmp_path / "curves.png"
    args = ["marl", *TINY_FLAGS, "--seeds", "4", "--seed", "3", "--eval-episodes", "2",
            "--json", str(report), "--plot", str(plot), "--checkpoint", str(tmp_path / "c"),
            "--checkpoint-every", "2"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "seeds: 4 (3..6) in one vmapped program over 1 device(s)" in out
    assert "final return (last 1 eps, mean over seeds +- standard error): agents" in out
    res = json.loads(report.read_text())["results"]
    assert res["seeds"] == [3, 4, 5, 6] and len(res["final_return_per_seed"]) == 4
    assert res["checkpoints_written"] == 2 and res["update_rounds"] == [3] * 4
    per_seed = np.array(res["final_return_per_seed"])
    assert res["final_return"] == seeds.seed_stats(per_seed)
    assert np.array(res["greedy_return_per_seed"]).shape == (4, 1)
    assert res["memory"]["seeds"] == 4 and res["memory"]["fits"]
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # marl evaluate of the group's checkpoint: every seed's greedy return, as each seed's
    # policies evaluated alone (marl.evaluate on the same starting worlds).
    ev = tmp_path / "ev.json"
    assert main(["marl", "evaluate", "--checkpoint", str(tmp_path / "c"), "--episodes", "2",
                 "--json", str(ev)]) == 0
    assert "4 seeds, greedy policy, 2 episodes each" in capsys.readouterr().out
    got = json.loads(ev.read_text())["results"]
    for i in (0, 3):
        pol = load_policies(tmp_path / "c", seed_index=i)
        assert pol.num_seeds == 4 and pol.episodes_done == 4
        want = evaluate(pol.config, pol.params, jax.random.PRNGKey(0), 2).mean(axis=0)
        np.testing.assert_allclose(got["mean_return_per_seed"][i], want, rtol=1e-5)
    assert got["mean_return"] == seeds.seed_stats(np.array(got["mean_return_per_seed"]))
    assert main(["marl", "evaluate", "--checkpoint", str(tmp_path / "c"), "--policy",
                 "sample"]) == 2
    assert "evaluated with --policy greedy" in capsys.readouterr().err
    for bad, msg in ((["--seeds", "0"], "--seeds must be >= 1"),
                     (["--plot", str(tmp_path / "x.png")], "--plot draws the curves"),
                     (["--seeds", "2", "--plot", str(tmp_path / "x.gif")], "does not end in")):
        assert main(["marl", "--episodes", "1", *bad]) == 2
        assert msg in capsys.readouterr().err
