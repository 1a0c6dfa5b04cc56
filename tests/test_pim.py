"""The PIM cost model (``jaxrl_pim.pim``): hand-computed cases, monotone behaviour, the
presets' cited values, the calibration, the published results files and the command's
``--pim-estimate``."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from jaxrl_pim import pim
from jaxrl_pim.pim import IDEAL, UPMEM, Workload, estimate

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "cpu"


def test_ideal_system_by_hand() -> None:
    # one instruction per operation and per cycle, free transfers: a Q-SEQ-INT32 update is
    # 8 (fetch) + 3 (sample) + 11 (max over 4 and the terminal test) + 9 (update) + 3 (loop)
    w = Workload(16, 4, "q", "seq", "int32", num_cores=10, num_episodes=5, sync_period=2)
    e = estimate(w, 10_003, IDEAL)
    assert e.work["instructions_per_update"] == 34
    assert e.work["rows_per_lane"] == 1000 and e.work["updates_per_dpu"] == 5000
    assert e.kernel == pytest.approx(5000 * 34 / 350e6)
    assert e.transfer_in == e.sync == e.transfer_out == 0
    assert e.total == e.kernel and e.work["sync_rounds"] == 3


def test_upmem_transfers_sync_and_dma_by_hand() -> None:
    w = Workload(500, 6, "q", "seq", "int32", num_cores=2000, num_episodes=2000,
                 sync_period=50)
    e = estimate(w, 5_000_000, UPMEM)
    table = 500 * 6 * 4
    assert e.transfer_in == pytest.approx((5_000_000 * 16 + 2000 * table) / 6.68e9)
    assert e.transfer_out == pytest.approx(2000 * table / 4.74e9)
    assert e.sync == pytest.approx(40 * 2 * 2000 * table / UPMEM.host_sync_bytes_per_s)
    # rows stream in 2,048-byte DMA blocks of 128 rows: (77 + 0.5 * 2048) / 128 per update
    assert e.work["dma_cycles_per_update"] == pytest.approx((77 + 1024) / 128)
    instr = e.work["instructions_per_update"]
    assert e.work["cycles_per_update"] == pytest.approx(11 * instr + (77 + 1024) / 128)
    assert e.kernel == pytest.approx(2500 * 2000 * e.work["cycles_per_update"] / 350e6)
    assert e.work["table_in_wram"]


def test_independent_agents_have_no_sync_and_lanes_share_dpus() -> None:
    w = Workload(16, 4, dtype="int32", num_cores=5120, independent=True)
    e = estimate(w, 5120 * 100, UPMEM)
    assert e.sync == 0 and e.work["sync_rounds"] == 0
    assert e.work["lanes_per_dpu"] == 2  # 5,120 lanes on 2,560 DPUs: two after another
    assert e.work["updates_per_dpu"] == 2 * 100 * 2000


def test_table_streams_from_mram_once_it_outgrows_wram() -> None:
    fits = estimate(Workload(3968, 4, dtype="int32"), 1_000_000, UPMEM)
    spills = estimate(Workload(3969, 4, dtype="int32"), 1_000_000, UPMEM)
    assert fits.work["table_in_wram"] and not spills.work["table_in_wram"]
    # three more DMAs per update: the row Q[s'] (16 bytes), Q[s, a] read and written (8 each)
    extra = spills.work["dma_cycles_per_update"] - fits.work["dma_cycles_per_update"]
    assert extra == pytest.approx(3 * 77 + 0.5 * (16 + 8 + 8))
    assert estimate(Workload(500, 6), 5_000_000, UPMEM).work["table_in_wram"]  # Taxi fits


def test_more_dpus_never_slower_in_kernel_time() -> None:
    w = Workload(16, 4, dtype="int32", num_cores=5000)
    kernels = [estimate(w, 1_000_000, dataclasses.replace(UPMEM, num_dpus=n)).kernel
               for n in (1, 7, 125, 1000, 2500, 4999, 5000, 10_000)]
    assert all(b <= a for a, b in zip(kernels, kernels[1:], strict=False))
    assert kernels[-2] < kernels[0] / 1000


def test_longer_sync_period_never_more_sync_time() -> None:
    syncs = [estimate(Workload(500, 6, sync_period=t), 5_000_000, UPMEM).sync
             for t in (1, 2, 3, 7, 50, 51, 999, 2000, 5000)]
    assert all(b <= a for a, b in zip(syncs, syncs[1:], strict=False))
    assert syncs[0] == pytest.approx(2000 * syncs[-1])


def test_more_tasklets_saturate_at_the_pipeline_depth() -> None:
    w = Workload(16, 4, dtype="int32")
    k = {t: estimate(w, 1_000_000, dataclasses.replace(UPMEM, tasklets=t)).kernel
         for t in (1, 2, 11, 16, 24)}
    assert k[1] > k[2] > k[11] and k[11] == k[16] == k[24]
    with pytest.raises(ValueError, match="tasklets"):
        dataclasses.replace(pim.UPMEM_V1B, tasklets=17)


def test_variants_cost_what_they_count() -> None:
    base = estimate(Workload(16, 4, dtype="int32"), 1_000_000, UPMEM)
    fp = estimate(Workload(16, 4, dtype="fp32"), 1_000_000, UPMEM)
    ran = estimate(Workload(16, 4, sampling="ran", dtype="int32"), 1_000_000, UPMEM)
    sarsa = estimate(Workload(16, 4, algo="sarsa", dtype="int32"), 1_000_000, UPMEM)
    ops = pim.UPMEM_OPS
    # fp32 swaps 2 multiplies + 2 divisions + 3 adds for 2 float multiplies and 3 float adds,
    # and the 3 integer compares of the max for float compares
    diff = (2 * ops.fp_mul + 3 * ops.fp_add - 2 * ops.int_mul - 2 * ops.int_div - 3
            + 3 * (ops.fp_compare - ops.int_compare))
    assert fp.work["instructions_per_update"] - base.work["instructions_per_update"] == diff
    # RAN: an LCG draw and a modulo per update instead of SEQ's end-of-chunk compare, and a
    # 16-byte DMA per row instead of blocks
    assert (ran.work["instructions_per_update"] - base.work["instructions_per_update"]
            == ops.int_mul + ops.int_div - ops.int_compare)
    assert ran.work["dma_cycles_per_update"] == pytest.approx(77 + 8)
    assert sarsa.kernel > base.kernel


def test_presets_hold_their_cited_values() -> None:
    u, b, h = pim.UPMEM, pim.UPMEM_V1B, pim.HBM_PIM
    assert (u.num_dpus, u.frequency_hz, u.max_tasklets, u.wram_bytes) == (2560, 350e6, 24, 65536)
    assert (u.mram_bytes, u.pipeline_depth, u.tasklets) == (64 * 2**20, 11, 1)
    assert (u.dma_latency_cycles, u.dma_cycles_per_byte, u.dma_block_bytes) == (77, 0.5, 2048)
    assert (u.cpu_to_dpu_bytes_per_s, u.dpu_to_cpu_bytes_per_s) == (6.68e9, 4.74e9)
    assert (b.frequency_hz, b.max_tasklets, b.wram_bytes) == (400e6, 16, 63488)
    assert (h.frequency_hz, h.num_dpus, h.cpu_to_dpu_bytes_per_s) == (300e6, 128, 307.2e9)
    ideal = pim.IDEAL
    assert ideal.cpu_to_dpu_bytes_per_s == float("inf") and ideal.pipeline_depth == 1
    assert set(pim.SYSTEMS) == set(pim.SYSTEM_NAMES)
    fields = {f.name for f in dataclasses.fields(pim.PIMSystem)} - {"name"}
    assert set(pim.SOURCES["upmem"]) == fields  # every parameter has its source
    assert fields - {"tasklets", "update_overhead_instructions"} <= set(pim.SOURCES["hbm-pim"])
    assert json.dumps(ideal.as_dict())  # infinite rates are JSON values


def test_calibration_reproduces_its_two_targets() -> None:
    t = pim.CALIBRATION_TARGETS
    agents = estimate(t["multi_agent_workload"], t["multi_agent_rows"], UPMEM)
    assert agents.total == pytest.approx(1943.78 / 21.92, rel=1e-9)
    taxi = estimate(t["taxi_workload"], t["taxi_rows"], UPMEM)
    assert taxi.share("sync") == pytest.approx(0.2079, rel=1e-9)
    assert pim.calibrate() == pim.CALIBRATED
    with pytest.raises(ValueError, match="one-tasklet"):
        pim.calibrate(dataclasses.replace(UPMEM, tasklets=2))


def test_trainer_config_gives_the_same_estimate() -> None:
    from jaxrl_pim.tabular import TabularConfig

    cfg = TabularConfig(num_states=500, num_actions=6, algo="sarsa", sampling="str",
                        dtype="int32", num_cores=100, sync_period=7, num_episodes=30)
    w = Workload(500, 6, "sarsa", "str", "int32", num_cores=100, sync_period=7,
                 num_episodes=30)
    assert estimate(cfg, 12_345, UPMEM) == estimate(w, 12_345, UPMEM)
    with pytest.raises(ValueError, match="fewer than one row per lane"):
        estimate(w, 99, UPMEM)
    with pytest.raises(ValueError, match="unknown PIM system"):
        pim.get_system("tpu")


def test_importing_the_model_loads_no_jax() -> None:
    code = "import sys, jaxrl_pim.pim; assert 'jax' not in sys.modules, 'jax loaded'"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr


def _script(name: str):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))


@pytest.mark.skipif(not (RESULTS / "pim_model.json").exists(), reason="not published yet")
def test_published_model_file_matches_the_model_and_its_summary() -> None:
    data = json.loads((RESULTS / "pim_model.json").read_text())
    mod = _script("pim_model")
    assert mod.summarize(data) == data["summary"]
    # the published predictions are those of the model as it is now
    now = {r["figure"]: r["predicted"] for r in mod.figures()}
    for r in data["results"]["figures"]:
        assert r["predicted"] == pytest.approx(now[r["figure"]], rel=1e-12)
        err = (r["predicted"] - r["published"]) / r["published"]
        assert data["summary"]["error_" + r["figure"]] == pytest.approx(err)
    held = [abs(data["summary"]["error_" + r["figure"]]) for r in data["results"]["figures"]
            if r["role"] == "held out"]
    assert data["summary"]["pim_model_max_heldout_error"] == max(held)
    assert data["summary"]["pim_model_calibrated_parameters"] == pim.CALIBRATED


@pytest.mark.skipif(not (RESULTS / "pim_whatif.json").exists(), reason="not published yet")
def test_published_whatif_file_recomputes() -> None:
    data = json.loads((RESULTS / "pim_whatif.json").read_text())
    assert _script("pim_whatif").summarize(data) == data["summary"]
    assert data["summary"]["wram_largest_table_states_x4_tasklets_1"] == (65536 - 2048) // 16


@pytest.mark.parametrize("system", pim.SYSTEM_NAMES)
def test_command_prints_and_stores_the_estimate(system, tmp_path, capsys) -> None:
    from jaxrl_pim.cli import main

    out = tmp_path / "r.json"
    assert main(["tabular", "--env", "frozenlake", "--transitions", "800", "--cores", "8",
                 "--episodes", "4", "--sync-period", "2", "--eval-episodes", "5",
                 "--no-progress", "--pim-estimate", system, "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"Projected on {system}" in printed and "measured s" in printed
    est = json.loads(out.read_text())["results"]["pim_estimate"]
    assert est["system"] == system and est["parameters"]["name"] == system
    cfg = Workload(16, 4, dtype="int32", num_cores=8, num_episodes=4, sync_period=2)
    expected = estimate(cfg, 800, pim.get_system(system))
    assert est["total"] == pytest.approx(expected.total)
    assert est["work"]["updates_per_dpu"] == 100 * 4 and est["work"]["sync_rounds"] == 2


@pytest.mark.parametrize("system", pim.SYSTEM_NAMES)
def test_every_variant_and_environment_has_a_finite_estimate(system) -> None:
    import math

    shapes = {"frozenlake": (16, 4), "taxi": (500, 6), "cliffwalking": (48, 4)}
    for s, a in shapes.values():
        for algo in ("q", "sarsa"):
            for sampling in ("seq", "ran", "str"):
                for dtype in ("fp32", "int32", "fp16", "bf16"):
                    for independent in (False, True):
                        w = Workload(s, a, algo, sampling, dtype, independent=independent)
                        e = estimate(w, 1_000_000, pim.get_system(system))
                        phases = (e.transfer_in, e.kernel, e.sync, e.transfer_out)
                        assert all(math.isfinite(p) and p >= 0 for p in phases)
                        assert e.kernel > 0 and e.total == pytest.approx(sum(phases))


def test_workload_defaults_follow_the_trainer_config() -> None:
    """pim.Workload mirrors TabularConfig's fields for host code without JAX: every field
    it shares must keep the trainer's default, so an estimate of a default run is of that
    run."""
    import dataclasses

    from jaxrl_pim.tabular import TabularConfig

    trainer = {f.name: f.default for f in dataclasses.fields(TabularConfig)}
    shared = [f for f in dataclasses.fields(Workload) if f.name in trainer]
    assert len(shared) >= 9
    for f in shared:
        if f.default is not dataclasses.MISSING:
            assert f.default == trainer[f.name], f.name
