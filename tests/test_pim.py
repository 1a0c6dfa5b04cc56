"""The PIM cost model (``jaxrl_pim.pim``): hand-computed cases (every transfer mode and
phase of the ``swiftrl`` preset), PrIM's microbenchmarks as the model sees them, monotone
behaviour, the presets' cited values, the calibration, the published results files and the
command's ``--pim-estimate``."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from jaxrl_pim import pim
from jaxrl_pim.pim import IDEAL, UPMEM, estimate
from jaxrl_pim.tabular.config import TabularConfig

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "cpu"


def test_ideal_system_by_hand() -> None:
    # one instruction per operation and per cycle, free transfers: a Q-SEQ-INT32 update is
    # 8 (fetch) + 3 (sample) + 11 (max over 4 and the terminal test) + 9 (update) + 3 (loop)
    w = TabularConfig(16, 4, "q", "seq", "int32", num_cores=10, num_episodes=5, sync_period=2)
    e = estimate(w, 10_003, IDEAL)
    assert e.work["instructions_per_update"] == 34
    assert e.work["rows_per_lane"] == 1000 and e.work["updates_per_dpu"] == 5000
    assert e.kernel == pytest.approx(5000 * 34 / 350e6)
    assert e.transfer_in == e.sync == e.transfer_out == 0
    assert e.total == e.kernel and e.work["sync_rounds"] == 3


def test_transfer_modes_by_hand() -> None:
    serial = pim.Transfer("serial", 1e-4, 2e8, calls=4)
    par = pim.Transfer("parallel", 1e-4, 6e9, calls=2)
    bcast = pim.Transfer("broadcast", 3e-5, 1.6e10)
    # serial: every DPU one after another, each with its calls' latencies and its bytes
    assert pim.transfer_seconds(serial, 100, 8000, 64) == pytest.approx(
        100 * (4 * 1e-4 + 8000 / 2e8))
    # parallel: the ranks at once, one rank's 64 DPUs at the rank's rate; fewer DPUs than a
    # rank move only their own bytes
    assert pim.transfer_seconds(par, 2000, 8000, 64) == pytest.approx(2e-4 + 64 * 8000 / 6e9)
    assert pim.transfer_seconds(par, 10, 8000, 64) == pytest.approx(2e-4 + 10 * 8000 / 6e9)
    assert pim.transfer_seconds(bcast, 2000, 256, 64) == pytest.approx(3e-5 + 64 * 256 / 1.6e10)
    assert pim.transfer_seconds(serial, 0, 8000, 64) == pim.transfer_seconds(serial, 5, 0, 64) == 0
    with pytest.raises(ValueError, match="mode"):
        pim.Transfer("scatter", 0.0, 1e9)
    with pytest.raises(ValueError, match="calls"):
        pim.Transfer("serial", 0.0, 1e9, calls=0)
    with pytest.raises(ValueError, match="bytes_per_s"):
        pim.Transfer("serial", 0.0, 0.0)


def test_swiftrl_phases_by_hand() -> None:
    s = pim.SWIFTRL
    lat, h = s.transfer_in.latency_s, s.host_average_s_per_entry
    w = TabularConfig(500, 6, "q", "seq", "int32", num_cores=2000, num_episodes=2000,
                 sync_period=50)
    e = estimate(w, 5_000_000, s)
    table = 500 * 6 * 4
    per_dpu_in = 2500 * 16 + table  # the rows and the initial table
    # serial copies, 4 calls per DPU (one per column), 2,000 DPUs one after another
    assert e.transfer_in == pytest.approx(2000 * (4 * lat + per_dpu_in / 0.33e9))
    # the final tables gathered rank by rank in parallel, ranks at once
    assert e.transfer_out == pytest.approx(lat + 64 * table / 4.74e9)
    # 40 rounds: gather (parallel), host average of 2,000 x 3,000 entries, broadcast
    per_round = (lat + 64 * table / 4.74e9) + 2000 * 3000 * h + (lat + 64 * table / 16.88e9)
    assert e.work["sync_rounds"] == 40
    assert e.sync == pytest.approx(40 * per_round)
    assert e.work["transfer_modes"] == {"transfer_in": "serial", "transfer_out": "parallel",
                                        "sync_gather": "parallel",
                                        "sync_broadcast": "broadcast"}
    # rows stream in 2,048-byte DMA blocks of 128 rows: (77 + 0.5 * 2048) / 128 per update
    assert e.work["dma_cycles_per_update"] == pytest.approx((77 + 1024) / 128)
    instr = e.work["instructions_per_update"]
    assert instr == pytest.approx(8 + 3 + (6 + 5 * 2 + 1) + 115 + 3
                                  + s.update_overhead_instructions)
    assert e.work["cycles_per_update"] == pytest.approx(11 * instr + (77 + 1024) / 128)
    assert e.kernel == pytest.approx(2500 * 2000 * e.work["cycles_per_update"] / 425e6)
    assert e.work["table_in_wram"]


def test_swiftrl_preset_is_the_papers_machine() -> None:
    s = pim.SWIFTRL
    assert (s.num_dpus, s.frequency_hz, s.tasklets, s.pipeline_depth) == (2524, 425e6, 1, 11)
    assert s.literal_precision == "double" and pim.UPMEM.literal_precision == "single"
    # Table 1: 2,145 GB/s over 2,524 DPUs is 2 bytes per cycle at 425 MHz, the DMA's beta
    per_dpu = 2145e9 / 2524
    assert per_dpu / s.frequency_hz == pytest.approx(1 / s.dma_cycles_per_byte, rel=0.002)
    # Table 1: 1,088 GOPS over 2,524 DPUs is one operation per cycle (a full pipeline)
    assert 1088e9 / 2524 / s.frequency_hz == pytest.approx(1.0, rel=0.015)
    assert (s.transfer_in.mode, s.transfer_in.calls, s.transfer_in.bytes_per_s) == (
        "serial", 4, 0.33e9)
    u = pim.UPMEM
    assert (u.num_dpus, u.frequency_hz, u.transfer_in.mode) == (2560, 350e6, "parallel")
    # one host-call latency for every phase of a preset
    for system in (s, u):
        assert len({getattr(system, p).latency_s for p in pim.TRANSFER_PHASES}) == 1


def test_literal_precision_costs_the_update_in_double() -> None:
    ops = pim.UPMEM_OPS
    w = TabularConfig(16, 4, "q", "seq", "fp32")
    single = pim.update_instructions(w, ops, "single")
    double = pim.update_instructions(w, ops, "double")
    assert single["update"] == ops.cvt_int_fp + 2 * ops.fp_mul + 3 * ops.fp_add + 2
    # r to double, max and Q[s, a] float -> double, 2 double multiplies, 3 double adds,
    # the result back to float, a load and a store
    assert double["update"] == (ops.cvt_int_fp + 3 * ops.cvt_fp_fp + 2 * ops.fp64_mul
                                + 3 * ops.fp64_add + 2)
    assert single["bootstrap"] == double["bootstrap"]  # float compares stay float
    # int32 does no float arithmetic in Q-learning: the switch changes nothing
    wi = TabularConfig(16, 4, "q", "seq", "int32")
    assert pim.update_instructions(wi, ops, "single") == pim.update_instructions(wi, ops, "double")
    # SARSA's epsilon draw is a real number in both formats: its cost follows the switch
    ws = TabularConfig(16, 4, "sarsa", "seq", "int32", epsilon=0.1)
    bs = pim.update_instructions(ws, ops, "single")["bootstrap"]
    bd = pim.update_instructions(ws, ops, "double")["bootstrap"]
    assert bd - bs == pytest.approx(ops.fp64_mul + ops.fp64_compare - ops.fp_mul
                                    - ops.fp_compare)
    with pytest.raises(ValueError, match="literal_precision"):
        pim.update_instructions(w, ops, "half")
    with pytest.raises(ValueError, match="literal_precision"):
        dataclasses.replace(UPMEM, literal_precision="quad")


def test_prim_arithmetic_throughput_saturates_at_11_tasklets() -> None:
    # PrIM's microbenchmark: one operation per element in a loop; the model's throughput is
    # frequency x min(T, 11) / 11 / instructions per element, flat from 11 tasklets on (the
    # pipeline rule, read in the sources: 11 tasklets for one instruction per cycle)
    def mops(op_instr: float, tasklets: int) -> float:
        system = dataclasses.replace(UPMEM, tasklets=tasklets, max_tasklets=24)
        per_elem = op_instr + 5  # the benchmark loop's other instructions
        cycles = per_elem * max(system.pipeline_depth / tasklets, 1.0)
        return system.frequency_hz / cycles / 1e6

    ops = pim.UPMEM_OPS
    for instr in (ops.int_add, ops.int_mul, ops.fp_add, ops.fp_mul, ops.fp64_mul):
        t = [mops(instr, n) for n in range(1, 25)]
        assert all(b > a for a, b in zip(t[:10], t[1:11], strict=True))  # rises to 11
        assert t[10] == t[15] == t[23]  # flat from 11 on
        assert t[0] == pytest.approx(t[10] / 11)
    # the int32 add loop (6 instructions) at 350 MHz: 58.33 MOPS saturated; the model's
    # emulated operations keep PrIM's order: add > mul, int > float > double
    assert mops(ops.int_add, 16) == pytest.approx(350 / 6)
    assert ops.int_add < ops.int_mul < ops.fp_add < ops.fp_mul < ops.fp64_mul


def test_prim_mram_latency_is_alpha_plus_beta_bytes() -> None:
    # reads alpha 77 + beta 0.5 cycles/byte, writes alpha 61 (the figures third-party notes
    # quote from PrIM), at every transfer size the SDK allows (8 .. 2,048 bytes)
    for system in (pim.SWIFTRL, UPMEM):
        for size in (8, 16, 64, 256, 1024, 2048):
            assert pim.dma_cycles(system, size) == 77 + 0.5 * size
            assert pim.dma_cycles(system, size, write=True) == 61 + 0.5 * size
    # sustained read bandwidth approaches 2 bytes per cycle for large transfers
    bw = 2048 / pim.dma_cycles(UPMEM, 2048)
    assert 1.8 < bw < 2.0


def test_table_streams_from_mram_once_it_outgrows_wram() -> None:
    fits = estimate(TabularConfig(3968, 4, dtype="int32"), 1_000_000, UPMEM)
    spills = estimate(TabularConfig(3969, 4, dtype="int32"), 1_000_000, UPMEM)
    assert fits.work["table_in_wram"] and not spills.work["table_in_wram"]
    # three more DMAs per update: the row Q[s'] (16 bytes) and Q[s, a] (8) read, Q[s, a]
    # written (8, at the write's fixed cost)
    extra = spills.work["dma_cycles_per_update"] - fits.work["dma_cycles_per_update"]
    assert extra == pytest.approx(2 * 77 + 61 + 0.5 * (16 + 8 + 8))
    assert estimate(TabularConfig(500, 6), 5_000_000, UPMEM).work["table_in_wram"]  # Taxi fits


def test_prim_transfer_bandwidth_against_dpus() -> None:
    # sustained bandwidth (bytes moved / seconds) of 32 MB per DPU against the DPU count:
    # serial stays at one DPU's rate; parallel and broadcast grow with the DPUs of a rank
    # and, ranks in parallel, with the ranks
    nbytes = 32 * 2**20

    def bw(t: pim.Transfer, n: int) -> float:
        return n * nbytes / pim.transfer_seconds(t, n, nbytes, 64)

    ser = pim.SWIFTRL.transfer_in
    par, bro = UPMEM.transfer_in, UPMEM.sync_broadcast
    assert bw(ser, 1) == pytest.approx(bw(ser, 2000)) and bw(ser, 1) < 0.33e9
    assert bw(par, 1) < bw(par, 8) < bw(par, 64) < bw(par, 128) < bw(par, 2560)
    assert bw(par, 64) == pytest.approx(6.68e9, rel=1e-3)  # one rank: the rank's rate
    assert bw(par, 2560) == pytest.approx(40 * bw(par, 64), rel=1e-3)  # 40 ranks at once
    assert bw(bro, 64) > bw(par, 64)  # broadcast faster than parallel within a rank


def test_independent_agents_have_no_sync_and_lanes_share_dpus() -> None:
    w = TabularConfig(16, 4, dtype="int32", num_cores=5120, independent=True)
    e = estimate(w, 5120 * 100, UPMEM)
    assert e.sync == 0 and e.work["sync_rounds"] == 0
    assert e.work["lanes_per_dpu"] == 2  # 5,120 lanes on 2,560 DPUs: two after another
    assert e.work["updates_per_dpu"] == 2 * 100 * 2000
    assert e.work["bytes_in_per_dpu"] == 2 * (100 * 16 + 64 * 4)


def test_more_dpus_never_slower_in_kernel_time() -> None:
    w = TabularConfig(16, 4, dtype="int32", num_cores=5000)
    kernels = [estimate(w, 1_000_000, dataclasses.replace(UPMEM, num_dpus=n)).kernel
               for n in (1, 7, 125, 1000, 2500, 4999, 5000, 10_000)]
    assert all(b <= a for a, b in zip(kernels, kernels[1:], strict=False))
    assert kernels[-2] < kernels[0] / 1000


def test_longer_sync_period_never_more_sync_time() -> None:
    syncs = [estimate(TabularConfig(500, 6, sync_period=t), 5_000_000, UPMEM).sync
             for t in (1, 2, 3, 7, 50, 51, 999, 2000, 5000)]
    assert all(b <= a for a, b in zip(syncs, syncs[1:], strict=False))
    assert syncs[0] == pytest.approx(2000 * syncs[-1])


def test_more_tasklets_saturate_at_the_pipeline_depth() -> None:
    w = TabularConfig(16, 4, dtype="int32")
    k = {t: estimate(w, 1_000_000, dataclasses.replace(UPMEM, tasklets=t)).kernel
         for t in (1, 2, 11, 16, 24)}
    assert k[1] > k[2] > k[11] and k[11] == k[16] == k[24]
    with pytest.raises(ValueError, match="tasklets"):
        dataclasses.replace(pim.UPMEM_V1B, tasklets=17)


def test_variants_cost_what_they_count() -> None:
    base = estimate(TabularConfig(16, 4, dtype="int32"), 1_000_000, UPMEM)
    fp = estimate(TabularConfig(16, 4, dtype="fp32"), 1_000_000, UPMEM)
    ran = estimate(TabularConfig(16, 4, sampling="ran", dtype="int32"), 1_000_000, UPMEM)
    sarsa = estimate(TabularConfig(16, 4, algo="sarsa", dtype="int32"), 1_000_000, UPMEM)
    ops = pim.UPMEM_OPS
    # fp32 (single) swaps 2 multiplies + 2 divisions + 3 adds for the reward's conversion,
    # 2 float multiplies and 3 float adds, and the 3 integer compares of the max for float
    diff = (ops.cvt_int_fp + 2 * ops.fp_mul + 3 * ops.fp_add - 2 * ops.int_mul
            - 2 * ops.int_div - 3 + 3 * (ops.fp_compare - ops.int_compare))
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
    assert (u.dma_latency_cycles, u.dma_write_latency_cycles, u.dma_cycles_per_byte,
            u.dma_block_bytes) == (77, 61, 0.5, 2048)
    assert (u.transfer_in.bytes_per_s, u.transfer_out.bytes_per_s,
            u.sync_broadcast.bytes_per_s) == (6.68e9, 4.74e9, 16.88e9)
    assert (b.frequency_hz, b.max_tasklets, b.wram_bytes) == (400e6, 16, 63488)
    assert (h.frequency_hz, h.num_dpus, h.transfer_in.bytes_per_s) == (300e6, 128, 307.2e9)
    ideal = pim.IDEAL
    assert ideal.transfer_in.bytes_per_s == float("inf") and ideal.pipeline_depth == 1
    assert set(pim.SYSTEMS) == set(pim.SYSTEM_NAMES)
    fields = {f.name for f in dataclasses.fields(pim.PIMSystem)} - {"name"}
    assert set(pim.SOURCES["swiftrl"]) == fields  # every parameter has its source
    assert set(pim.SOURCES["upmem"]) == fields
    assert fields - {"tasklets", "update_overhead_instructions"} <= set(pim.SOURCES["hbm-pim"])
    assert json.dumps(ideal.as_dict())  # infinite rates are JSON values
    assert ideal.as_dict()["transfer_in"]["bytes_per_s"] == "inf"


def test_calibration_reproduces_its_three_targets() -> None:
    t = pim.CALIBRATION_TARGETS
    s = pim.SWIFTRL
    agents = estimate(t["multi_agent_workload"], t["multi_agent_rows"], s)
    assert agents.kernel == pytest.approx(1943.78 / 21.92, rel=1e-9)
    taxi = estimate(t["taxi_workload"], t["taxi_rows"], s)
    assert taxi.share("sync") == pytest.approx(0.2079, rel=1e-9)
    fl = estimate(t["frozenlake_workload"], t["frozenlake_rows"], s)
    assert fl.share("transfer_in") == pytest.approx(0.2961, rel=1e-9)
    assert pim.calibrate() == pim.CALIBRATED
    assert len(pim.CALIBRATED) == 3
    with pytest.raises(ValueError, match="one-tasklet"):
        pim.calibrate(dataclasses.replace(s, tasklets=2))


def test_the_model_reads_exactly_its_fields_of_the_trainer_config() -> None:
    """Every field in MODEL_FIELDS changes the estimate; the trainer's other fields (rates,
    generator, kernel choice) do not."""
    w = TabularConfig(500, 6, "sarsa", "str", "int32", num_cores=100, sync_period=7,
                      num_episodes=30)
    base = estimate(w, 12_345, UPMEM).as_dict()
    read = dict(num_states=501, num_actions=5, algo="q", sampling="seq", dtype="fp32",
                num_cores=99, sync_period=8, num_episodes=31, epsilon=0.2, stride=3,
                independent=True)
    unread = dict(alpha=0.2, gamma=0.9, rng="lcg", lcg_seed=7, compat_max0=True,
                  kernel="scan", unroll=2, lanes_per_block=8)
    assert set(read) == set(pim.MODEL_FIELDS)
    assert set(read) | set(unread) == {f.name for f in dataclasses.fields(TabularConfig)}
    for name, value in read.items():
        changed = estimate(dataclasses.replace(w, **{name: value}), 12_345, UPMEM).as_dict()
        assert changed != base, name
    q = dataclasses.replace(w, algo="q")  # compat_max0 needs Q-learning
    base_q = estimate(q, 12_345, UPMEM).as_dict()
    for name, value in unread.items():
        same = estimate(dataclasses.replace(q, **{name: value}), 12_345, UPMEM).as_dict()
        assert same == base_q, name
    assert pim.model_fields(w) == {f: getattr(w, f) for f in read}
    with pytest.raises(ValueError, match="fewer than one row per lane"):
        estimate(w, 99, UPMEM)
    with pytest.raises(ValueError, match="unknown PIM system"):
        pim.get_system("tpu")


def test_importing_the_model_and_the_configs_loads_no_jax() -> None:
    # the workload, the MARL and ActorQ configs (the commands read their defaults before jax)
    steps = ["import jaxrl_pim.pim", "import jaxrl_pim.tabular.config",
             "from jaxrl_pim.tabular import TabularConfig; TabularConfig(16, 4, dtype='int32')",
             "import jaxrl_pim.marl.config",
             "from jaxrl_pim.marl import MARLConfig; MARLConfig(env='tag', num_agents=6)",
             "MARLConfig(env='tag', num_agents=6).teams, MARLConfig().total_agents",
             "MARLConfig(env='jaxmarl:MPE_simple_spread_v3', sampler='neighbor')",
             "import jaxrl_pim.actorq.config",
             "from jaxrl_pim.actorq import ActorQDQNConfig, ActorQD4PGConfig, default_config",
             # a task name, no gymnax
             "ActorQD4PGConfig(env_name='playground/CartpoleBalance@200')",
             "from jaxrl_pim.cli import build_parser; build_parser('marl', full=False)",
             "build_parser('actorq', full=False).parse_args(['actorq'])",
             "from jaxrl_pim.studies import PTQConfig, QATStudyConfig; PTQConfig()",
             "build_parser('ptq', full=False).parse_args(['qat', '--tasks', 'dqn-cartpole'])",
             "from jaxrl_pim import run_record"]
    # first: a command's cheap checks load no NumPy either (about 0.1 s more)
    code = ("import sys\nimport jaxrl_pim.cli.marl, jaxrl_pim.cli.actorq\n"
            "assert 'numpy' not in sys.modules, 'the commands import numpy'\n"
            + "".join(f"{s}\nassert 'jax' not in sys.modules, {s!r}\n" for s in steps))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr


def _script(name: str):
    return importlib.import_module(f"benchmarks.{name}")


def test_model_errors_by_hand() -> None:
    mod = _script("pim_model")
    rec = {"published": 10.0, "predicted": 7.0, "error_kind": "upper bound"}
    assert mod.error(rec) == 0.0
    assert mod.error({**rec, "predicted": 13.0}) == pytest.approx(0.3)
    assert mod.error({**rec, "error_kind": "relative"}) == pytest.approx(-0.3)
    assert mod.error({**rec, "predicted": None}) is None
    low = {**rec, "error_kind": "lower bound"}
    assert mod.error(low) == pytest.approx(-0.3) and mod.error({**low, "predicted": 12.0}) == 0
    assert mod.error(rec, predicted=15.0) == pytest.approx(0.5)


@pytest.mark.skipif(not (RESULTS / "pim_whatif.json").exists(), reason="not published yet")
def test_published_whatif_file_recomputes() -> None:
    data = json.loads((RESULTS / "pim_whatif.json").read_text())
    assert _script("pim_whatif").summarize(data) == data["summary"]
    assert data["summary"]["wram_largest_table_states_x4_tasklets_1"] == (65536 - 2048) // 16


# two presets with different transfer modes (the command takes its choices from
# pim.SYSTEM_NAMES; every preset's estimate is checked without the command below)
@pytest.mark.parametrize("system", ["swiftrl", "hbm-pim"])
def test_command_prints_and_stores_the_estimate(system, tmp_path, capsys) -> None:
    from jaxrl_pim.cli import main

    out = tmp_path / "r.json"
    assert main(["tabular", "--env", "frozenlake", "--transitions", "800", "--cores", "8",
                 "--episodes", "4", "--sync-period", "2", "--eval-episodes", "5",
                 "--no-progress", "--pim-estimate", system, "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"Projected on {system}" in printed and "measured s" in printed
    # the projection's basis: the measured column's device, DPUs used of the system's,
    # instructions and cycles per update, the largest phase and what it depends on
    lines = printed.splitlines()
    assert any(ln.startswith("measured: this run, JAX on cpu") for ln in lines)
    used = pim.get_system(system).num_dpus
    assert f"DPUs used: 8 of {used:,} (1 lane(s) per DPU)" in lines
    est = json.loads(out.read_text())["results"]["pim_estimate"]
    assert est["system"] == system and est["parameters"]["name"] == system
    mode = pim.get_system(system).transfer_in.mode
    assert next(ln for ln in printed.splitlines() if ln.startswith("transfer_in")).endswith(mode)
    cfg = TabularConfig(16, 4, dtype="int32", num_cores=8, num_episodes=4, sync_period=2)
    expected = estimate(cfg, 800, pim.get_system(system))
    assert est["total"] == pytest.approx(expected.total)
    assert est["work"]["updates_per_dpu"] == 100 * 4 and est["work"]["sync_rounds"] == 2
    cfg_notes = pim.sensitivity.projection_notes(cfg, 800, pim.get_system(system),
                                                 est["measured_on"])
    assert est["notes"] == cfg_notes and all(n in lines for n in cfg_notes)
    assert cfg_notes[2].startswith(
        f"per update: {expected.work['instructions_per_update']:,.1f} instructions, "
        f"{expected.work['cycles_per_update']:,.1f} cycles")
    big = est["largest_phase"]
    assert big == pim.largest_phase(cfg, 800, pim.get_system(system))
    assert cfg_notes[3].startswith(f"largest phase: {big['phase']} ")
    assert big["parameter"] in pim.phase_terms(cfg, 800, pim.get_system(system))[big["phase"]]


@pytest.mark.parametrize("system", pim.SYSTEM_NAMES)
def test_every_variant_and_environment_has_a_finite_estimate(system) -> None:
    import math

    shapes = {"frozenlake": (16, 4), "taxi": (500, 6), "cliffwalking": (48, 4)}
    for s, a in shapes.values():
        for algo in ("q", "sarsa"):
            for sampling in ("seq", "ran", "str"):
                for dtype in ("fp32", "int32", "fp16", "bf16"):
                    for independent in (False, True):
                        w = TabularConfig(s, a, algo, sampling, dtype, independent=independent)
                        e = estimate(w, 1_000_000, pim.get_system(system))
                        phases = (e.transfer_in, e.kernel, e.sync, e.transfer_out)
                        assert all(math.isfinite(p) and p >= 0 for p in phases)
                        assert e.kernel > 0 and e.total == pytest.approx(sum(phases))
