"""``benchmarks/marl_profile.py``'s fused measurement: phase times by subtraction of whole
fused training programs (the trainer with all phases minus the trainer with one phase
replaced by a stand-in), next to the separately jitted per-call estimate."""

from __future__ import annotations

import dataclasses
import json

import jax
import jax.numpy as jnp
import pytest

from benchmarks import marl_profile as mp
from jaxrl_pim.marl.config import MARLConfig
from jaxrl_pim.marl.profiler import PHASES, compose_update_round, filled_state
from jaxrl_pim.marl.trainer import Phases, make_phases
from tests.support import ROOT, bench

TINY = MARLConfig(env="spread", num_agents=2, num_envs=1, buffer_capacity=64, batch_size=8,
                  learning_starts=16, update_every=1, episode_length=4, hidden=(8,),
                  sampling_mode="fast")


@pytest.mark.parametrize("kw", [
    {},
    {"sampling_mode": "faithful", "sampler": "prioritized", "algo": "matd3",
     "layout": "per_agent"},
    {"env": "tag", "num_agents": 3, "sampling_mode": "faithful", "algo": "masac",
     "layout": "packed"},
    {"sampler": "info_prioritized", "algo": "matd3"},
], ids=["fast", "faithful-per-matd3", "tag-masac-packed", "info-matd3"])
def test_the_composed_round_is_the_learners_own_program(kw):
    """The hook the fused variants rebuild the round with traces to the very program of the
    library's ``update_round`` (same jaxpr), so ``full`` and ``no_<phase>`` differ in the
    replaced phase only."""
    cfg = dataclasses.replace(TINY, **kw)
    phases = make_phases(cfg)
    st = jax.eval_shape(phases.rollout.init, jax.random.PRNGKey(0))
    args = (st.teams, st.buffers, st.sampler, jnp.zeros((), jnp.int32), jax.random.PRNGKey(1))
    want = str(jax.make_jaxpr(phases.learner.update_round)(*args))
    assert str(jax.make_jaxpr(compose_update_round(cfg, phases.learner))(*args)) == want


@pytest.mark.parametrize("mode", ["fast", "faithful"])
def test_every_variant_is_the_trainer_with_the_same_outputs(mode):
    """Each stand-in keeps the shapes: every variant's program returns the full program's
    state and metrics, shape for shape (traced only)."""
    cfg = dataclasses.replace(TINY, sampling_mode=mode)
    phases = make_phases(cfg)
    state = jax.eval_shape(lambda k: filled_state(cfg, k, phases), jax.random.PRNGKey(0))
    fixed = jax.eval_shape(phases.learner.sample, state.buffers, state.sampler,
                           jax.random.PRNGKey(1))[:3]
    variants = (*mp.FUSED_VARIANTS, "no_q_loss", "no_target_q+p_loss+target_update")
    outs = {v: jax.eval_shape(mp.fused_program(cfg, phases, v, 2), state, fixed)
            for v in variants}
    assert all(o == outs["full"] for o in outs.values())
    assert jax.tree.structure(outs["full"][0]) == jax.tree.structure(state)
    for bad in ("no_env_step", "no_sampling+env_step", "sampling"):
        with pytest.raises(ValueError, match="not full, no_update_round"):
            mp.fused_program(cfg, phases, bad, 2)


def test_piece_episodes_hold_whole_update_cycles():
    assert mp.piece_episodes(MARLConfig(), 1) == 4  # 100 steps: 4 episodes of 25
    assert mp.piece_episodes(MARLConfig(), 3) == 12
    cfg = dataclasses.replace(TINY, update_every=6)
    for rounds in (1, 2, 5):
        steps = mp.piece_episodes(cfg, rounds) * cfg.episode_length
        assert steps % cfg.update_every == 0 and steps // cfg.update_every >= rounds


def test_subtraction_of_made_up_times():
    piece = {"full": 10.0, "no_update_round": 4.0, "no_sampling": 9.0,
             "no_sampling+target_q": 7.0, "no_sampling+q_loss": 6.5, "no_sampling+p_loss": 7.5,
             "no_sampling+target_update": 9.25}
    d = mp.derive_fused(piece)
    assert d == {"env_steps": 4.0, "update_round": 6.0, "sampling": 1.0, "target_q": 2.0,
                 "q_loss": 2.5, "p_loss": 1.5, "target_update": -0.25,  # noise: kept
                 "update_rest": -0.75}
    assert d["env_steps"] + d["update_round"] == piece["full"]
    assert set(piece) == set(mp.FUSED_VARIANTS)
    part = mp.derive_fused({k: piece[k] for k in mp.SMOKE_VARIANTS})
    assert part == {"env_steps": 4.0, "update_round": 6.0, "sampling": 1.0}


def _heavy(seed: jax.Array, n: int = 256, rounds: int = 40) -> jax.Array:
    """A scalar costing ``rounds`` dense ``n x n`` products, computed from ``seed`` (a value
    of the round's batch, so XLA cannot hoist it out of the training loop)."""
    m = jnp.eye(n) + 1e-3 * seed
    return jax.lax.fori_loop(0, rounds, lambda _, x: jnp.tanh(x @ m), m).sum()


@pytest.mark.slow
def test_a_planted_slow_actor_update_is_found_inside_the_fused_program():
    """Whole programs with and without each part, on a tiny CPU config: the derived parts add
    up to the full piece (by construction: env_steps + update_round, and the phases + the
    rest = update_round), the planted phase carries the round, and what the subtraction does
    not place (``update_rest``) stays under half of the piece (a loose bound: the CPU of a
    test run is shared)."""
    rollout, learner = make_phases(TINY)

    def slow_actor(team_params, batch, key):
        team_params, loss = learner.actor_update(team_params, batch, key)
        # the round's key in the heavy input: a function of the fixed batch alone would be
        # loop-invariant, and XLA hoists it out of the rounds' scan
        seed = jnp.mean(batch[0].obs) + 1e-6 * jax.random.uniform(key)
        return team_params, loss + 1e-30 * _heavy(seed)

    planted = learner._replace(actor_update=slow_actor)
    planted = planted._replace(update_round=compose_update_round(TINY, planted))
    variants = ("full", "no_update_round", "no_sampling", "no_sampling+p_loss")
    f = mp.profile_fused(TINY, repeats=3, rounds=4, variants=variants,
                         phases=Phases(rollout, planted))
    assert f["update_rounds"] == 4 == f["env_steps"] and set(f["piece_s"]) == set(variants)
    piece, sec, full = f["piece_s"], f["seconds"], f["piece_s"]["full"]
    assert sec["update_round"] == piece["full"] - piece["no_update_round"]
    assert sec["env_steps"] + sec["update_round"] == pytest.approx(full, rel=1e-12)
    assert sec["sampling"] == piece["full"] - piece["no_sampling"]
    assert sec["p_loss"] == piece["no_sampling"] - piece["no_sampling+p_loss"]
    assert set(sec) == {"env_steps", "update_round", "sampling", "p_loss"}  # no update_rest
    assert f["share"] == {k: v / full for k, v in sec.items()}
    assert sec["p_loss"] > max(sec["sampling"], sec["env_steps"]), f
    assert sec["p_loss"] > 0.5 * full and sec["update_round"] > 0.5 * full, f
    assert abs(sec["update_round"] - sec["p_loss"] - sec["sampling"]) < 0.5 * full, f


def _record(rows):
    return {"system": {"backend": "gpu", "device_count": 1, "device_kind": "X"},
            "config": {"mode": "full", "repeats": 3, "budget_gib": 20.0, "update_every": 100},
            "results": {"rows": rows, "complete": True}}


def _row(env, mode, fused=True):
    sec = {p: 1e-3 * (i + 1) for i, p in enumerate(PHASES)}
    calls = {p: (100.0 if p in mp.ENV_PHASES else 1.0) for p in PHASES}
    w = {p: sec[p] * calls[p] for p in PHASES}
    row = {"env": env, "agents": 48, "mode": mode, "capacity": 1024,
           "profile": {"seconds": sec, "calls_per_update_round": calls,
                       "share": {p: w[p] / sum(w.values()) for p in PHASES},
                       "update_round_fused": 0.01}}
    if fused:
        piece = {"full": 0.2, "no_update_round": 0.05, "no_sampling": 0.19,
                 "no_sampling+target_q": 0.16, "no_sampling+q_loss": 0.15,
                 "no_sampling+p_loss": 0.14, "no_sampling+target_update": 0.191}
        sec_f = mp.derive_fused(piece)
        row["fused"] = {"episodes": 8, "env_steps": 200, "update_rounds": 2, "compile_s": 1.0,
                        "piece_s": piece, "seconds": sec_f,
                        "share": {k: v / 0.2 for k, v in sec_f.items()}}
    return row


def test_summary_and_table_of_a_synthetic_record():
    rep = _record([_row("spread", "original"), _row("spread", "fast+interleaved"),
                   _row("tag", "original", fused=False)])
    s = mp.summarize(rep)
    for part in ("update_round", *mp.UPDATE_PHASES):
        for cfg in ("original", "fast"):
            key = f"fused_{part}_share_spread_largest_{cfg}"
            assert s[key] == rep["results"]["rows"][0]["fused"]["share"][part], key
    assert s["fused_update_round_share_spread_largest_fast"] == pytest.approx(0.75)
    assert s["fused_target_update_share_spread_largest_original"] == pytest.approx(-0.005)
    assert not any(k.startswith("fused_") and "_tag_" in k for k in s)  # no fused row there
    assert "estimated_sampling_share_tag_largest_original" in s
    rep["summary"] = s
    md = mp.render_markdown(rep)
    assert "NEGATIVE" in md and "| spread | 48 | original | 2 | 100 ms" in md
    assert "(-0%; est." in md or "(-1%; est." in md  # the negative target update, as measured
    assert md.count("| tag | 48 |") == 1  # in the estimate's table only


@pytest.mark.parametrize("device", ["cpu", "h200"])
def test_committed_records_keep_their_summary_and_table(device):
    path = ROOT / "benchmarks" / "results" / device / "marl_profile.json"
    rep = json.loads(path.read_text())
    assert mp.summarize(rep) == rep["summary"]
    assert not any(k.startswith("fused_") for k in rep["summary"])
    assert mp.render_markdown(rep) == path.with_suffix(".md").read_text()


@pytest.mark.xdist_group(bench.group("marl_profile"))  # the provenance test's smoke run
def test_smoke_run_records_the_fused_pieces(smoke_run):
    run = smoke_run("marl_profile")  # python benchmarks/marl_profile.py --smoke --out <folder>
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    rep = json.loads((run.out / "marl_profile_smoke.json").read_text())
    (row,) = rep["results"]["rows"]
    f = row["fused"]
    assert list(f["piece_s"]) == list(mp.SMOKE_VARIANTS) == rep["config"]["fused_variants"]
    assert f["seconds"]["update_round"] == f["piece_s"]["full"] - f["piece_s"]["no_update_round"]
    assert f["seconds"]["sampling"] == f["piece_s"]["full"] - f["piece_s"]["no_sampling"]
    assert f["update_rounds"] == 1 and f["episodes"] == 4
    assert rep["summary"] == mp.summarize(rep)
    assert set(k for k in rep["summary"] if k.startswith("fused_")) == {
        "fused_update_round_share_spread_largest_fast", "fused_sampling_share_spread_largest_fast"}
    assert "Inside the fused training program" in (run.out / "marl_profile_smoke.md").read_text()
