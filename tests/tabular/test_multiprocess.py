"""Lanes across processes (jax.distributed on CPU, in subprocesses, every one under a timeout).

* 2 processes x 4 devices give the tables of 1 process x 8 devices: int32 bit for bit, fp32
  within rounding, for Q and SARSA, SEQ and RAN, and independent mode. The multi-process side
  collects only its own lanes' rows; the reference collects the whole dataset and chunks it.
* ``jaxrl-pim launch`` end to end: one report, written by process 0, and the Q-table of a
  single-process run.
* A data error in one process stops both before training, each with a ValueError.
* A process killed with SIGKILL mid-run makes the other exit non-zero with a one-line error
  within the heartbeat timeout plus a margin; earlier files survive and no partial one appears.
  The relay that folds the runtime's fatal report into that line is also checked on its own.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from jaxrl_pim import distributed
from jaxrl_pim.cli import launch, main
from tests.support import subprocess_env

TIMEOUT_S = 300  # bound on every subprocess of this file


def _env(devices: int) -> dict[str, str]:
    # lowest XLA optimisation effort: tiny programs whose time is compilation; the tables are
    # compared between processes started alike, or exactly (int32) with this process's run
    return dict(subprocess_env(devices), PYTHONUNBUFFERED="1")


@contextlib.contextmanager
def _processes():
    """Collects started processes; kills (by pid) and reaps any still running at the end."""
    procs: list[subprocess.Popen] = []
    try:
        yield procs
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
        for p in procs:
            p.wait(timeout=30)


def _start(procs: list, argv: list[str], devices: int, log: Path, cwd: Path) -> subprocess.Popen:
    out = open(log.with_suffix(".out"), "wb")  # noqa: SIM115 (closed with the process)
    err = open(log.with_suffix(".err"), "wb")  # noqa: SIM115
    p = subprocess.Popen([sys.executable, *argv], env=_env(devices), cwd=cwd,
                         stdin=subprocess.DEVNULL, stdout=out, stderr=err)
    out.close()
    err.close()
    procs.append(p)
    return p


def _wait(p: subprocess.Popen, log: Path, timeout: float = TIMEOUT_S) -> None:
    rc = p.wait(timeout=timeout)
    if rc != 0:
        raise AssertionError(f"{p.args} exited with {rc}:\n"
                             f"{log.with_suffix('.out').read_text()[-3000:]}\n"
                             f"{log.with_suffix('.err').read_text()[-3000:]}")


# --------------------------------------------------------------------------------------------
# Bit identity: one driver, several variants per process

DRIVER = """
import json, sys
import jax, numpy as np
from jaxrl_pim import distributed
mode, port, pid, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
if mode == "multi":
    procs = distributed.initialize(f"127.0.0.1:{port}", 2, pid, heartbeat_timeout_s=20)
    assert procs == (pid, 2) and len(jax.local_devices()) == 4 and len(jax.devices()) == 8
from jaxrl_pim.data import Dataset
from jaxrl_pim.tabular import TabularConfig, chunk, make_mesh, make_train
from jaxrl_pim.tabular.runner import process_lanes, process_rows, run, run_mesh

def dataset(shape):  # the same rows in every process: lane c's rows depend on c only
    rng = np.random.default_rng(7)
    return Dataset(rng.integers(0, 20, shape).astype(np.uint8),
                       rng.integers(0, 4, shape).astype(np.uint8),
                       rng.integers(-5, 6, shape).astype(np.float32),
                       rng.integers(0, 20, shape).astype(np.uint8), rng.random(shape) < 0.1)

rows, per_agent, key = 8 * 40 + 3, (8, 30), jax.random.key(6)
variants = [("q", "seq", "int32", False), ("sarsa", "ran", "int32", False),
            ("sarsa", "seq", "fp32", False), ("q", "ran", "fp32", True)]
tables, lanes = {}, {}
for algo, sampling, dtype, independent in variants:
    cfg = TabularConfig(20, 4, algo=algo, sampling=sampling, dtype=dtype, num_cores=8,
                        sync_period=3, num_episodes=7, independent=independent)
    name = f"{algo}-{sampling}-{dtype}-{'indep' if independent else 'mean'}"
    whole = dataset(per_agent if independent else rows)
    if mode == "multi":  # hand over this process's rows only
        mine = process_lanes(cfg, run_mesh(cfg))
        start, stop = process_rows(cfg, 8 if independent else rows, mine)
        local = Dataset(*(x[start:stop] for x in whole))
        res = run(cfg, local, key, num_rows=8 if independent else rows)
        assert res.num_processes == 2 and res.num_devices == 8 and res.lanes == mine
        q = res.q_table
        lanes[name] = list(mine)
    else:  # the whole dataset, chunked, on one 8-device mesh
        mesh = make_mesh(8)
        spec = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("cores"))
        q, _ = jax.jit(make_train(cfg, mesh))(key, jax.device_put(chunk(cfg, whole), spec))
    tables[name] = np.asarray(q)
if mode == "single" or pid == 0:
    np.savez(out, **tables)
print("LANES", pid, json.dumps(lanes))
if mode == "multi":  # bad rows in process 1 only: both processes stop before training
    cfg = TabularConfig(20, 4, num_cores=8, sync_period=3, num_episodes=2)
    start, stop = process_rows(cfg, rows, process_lanes(cfg, run_mesh(cfg)))
    local = Dataset(*(x[start:stop] for x in dataset(rows)))
    if pid == 1:
        local = local._replace(action=np.full_like(local.action, 9))
    try:
        run(cfg, local, key, num_rows=rows)
    except ValueError as err:
        print("REJECTED", pid, err)
"""


@pytest.mark.slow
def test_two_processes_give_the_tables_of_one(tmp_path):
    port = str(launch.free_port())
    with _processes() as procs:
        argv = ["-c", textwrap.dedent(DRIVER)]
        single = _start(procs, [*argv, "single", port, "0", str(tmp_path / "one.npz")], 8,
                        tmp_path / "single", tmp_path)
        multi = [_start(procs, [*argv, "multi", port, str(i), str(tmp_path / "two.npz")], 4,
                        tmp_path / f"multi{i}", tmp_path) for i in range(2)]
        for p, log in ((single, "single"), (multi[0], "multi0"), (multi[1], "multi1")):
            _wait(p, tmp_path / log)
    lanes = [json.loads(next(line for line in (tmp_path / f"multi{i}.out").read_text()
                             .splitlines() if line.startswith(f"LANES {i} "))[8:])
             for i in range(2)]
    assert list(lanes[0].values()) == [[0, 4]] * 4 and list(lanes[1].values()) == [[4, 8]] * 4
    rejected = [next(line for line in (tmp_path / f"multi{i}.out").read_text().splitlines()
                     if line.startswith(f"REJECTED {i} ")) for i in range(2)]
    assert "rejected its part" in rejected[0] and "process 1" in rejected[0]
    assert "action must lie in [0, 3]" in rejected[1]
    one, two = np.load(tmp_path / "one.npz"), np.load(tmp_path / "two.npz")
    assert sorted(one.files) == sorted(two.files) and len(one.files) == 4
    for name in one.files:
        a, b = one[name].astype(np.float64), two[name].astype(np.float64)
        assert a.shape == b.shape == ((8, 20, 4) if name.endswith("indep") else (20, 4))
        scale = np.abs(a).max()
        assert scale > 0.5, name
        if "int32" in name or "indep" in name:  # independent lanes are never averaged
            assert np.array_equal(a, b), name  # bit for bit
        else:
            assert np.abs(a - b).max() <= 1e-5 * scale, name


@pytest.mark.slow
def test_a_lane_range_collects_exactly_its_rows():
    import jax

    from jaxrl_pim import data, envs

    env, params = envs.make("frozenlake")
    key = jax.random.key(3)
    whole = data.collect(env, params, key, 1000, num_envs=16)  # streams of 63 rows
    part = data.collect(env, params, key, 1000, num_envs=16, rows=(62, 300))  # 5 streams
    agents = data.collect_per_agent(env, params, key, 5, 20)
    some = data.collect_per_agent(env, params, key, 5, 20, agents=(1, 4))
    for x, y in zip(whole, part, strict=True):
        np.testing.assert_array_equal(x[62:300], y)
    for x, y in zip(agents, some, strict=True):
        np.testing.assert_array_equal(x[1:4], y)
    with pytest.raises(ValueError, match="rows stop"):
        data.collect(env, params, key, 1000, rows=(10, 10))


# --------------------------------------------------------------------------------------------
# The launcher

SMALL = ["tabular", "--env", "taxi", "--cores", "8", "--transitions", "4003", "--episodes", "6",
         "--sync-period", "3", "--eval-episodes", "50", "--no-progress"]


@pytest.mark.slow
def test_launcher_runs_one_job_over_two_processes(tmp_path):
    cmd = ["-m", "jaxrl_pim.cli", "launch", "--processes", "2", "--devices-per-process", "2",
           "--", *SMALL, "--json", "r.json", "--save-q", "q.npy"]
    with _processes() as procs:
        p = _start(procs, cmd, 1, tmp_path / "launch", tmp_path)
        _wait(p, tmp_path / "launch")
    out = (tmp_path / "launch.out").read_text().splitlines()
    err = (tmp_path / "launch.err").read_text().splitlines()
    assert any(line.startswith("[0] ") and "updates/s" in line for line in out)
    assert not any(line.startswith("[1] ") and "updates/s" in line for line in out)
    assert any(line.startswith("[1] process 1 of 2: done") for line in err)
    assert not any("Gloo" in line for line in out + err), [x for x in out + err if "Gloo" in x]
    report = json.loads((tmp_path / "r.json").read_text())
    res = report["results"]
    assert res["processes"] == 2 and res["devices"] == 4 and res["dataset_rows"] == 4003
    assert res["dropped_rows"] == 3 and res["updates"] == 4000 * 6
    assert report["system"]["process_count"] == 2
    assert sorted(f.name for f in tmp_path.iterdir()) == [
        "launch.err", "launch.out", "q.npy", "r.json"]
    # the same run in this process, on one device: the int32 table bit for bit
    assert main([*SMALL, "--devices", "1", "--save-q", str(tmp_path / "q1.npy")]) == 0
    q2, q1 = np.load(tmp_path / "q.npy"), np.load(tmp_path / "q1.npy")
    assert q2.shape == (500, 6) and np.abs(q1).max() > 0.5
    np.testing.assert_array_equal(q2, q1)


def test_launcher_stops_the_others_when_one_fails(tmp_path):
    sleeper = [sys.executable, "-c", "import time; print('up', flush=True); time.sleep(120)"]
    failer = [sys.executable, "-c", "import sys, time; time.sleep(1); print('bad', "
              "file=sys.stderr); sys.exit(3)"]
    with open(tmp_path / "o", "wb") as out, open(tmp_path / "e", "wb") as err:
        t0 = time.monotonic()
        rc = launch.supervise([sleeper, failer], [dict(os.environ)] * 2, stdout=out,
                              stderr=err, grace_s=2.0)
        elapsed = time.monotonic() - t0
    assert rc == 3 and elapsed < 20
    assert (tmp_path / "o").read_text() == "[0] up\n"
    err_lines = (tmp_path / "e").read_text().splitlines()
    assert err_lines == ["[1] bad", "jaxrl-pim launch: error: process 1 exited with status 3; "
                         "stopped the other 1 process"]


def test_launcher_rejects_what_it_cannot_run():
    with pytest.raises(ValueError, match="launch runs one of tabular, marl"):
        launch.launch(["actorq"], 2)
    with pytest.raises(ValueError, match="sets --coordinator"):
        launch.launch(["tabular", "--process-id", "1"], 2)
    with pytest.raises(ValueError, match="--processes must be >= 1"):
        launch.launch(["tabular"], 0)


# --------------------------------------------------------------------------------------------
# Flags and faults


def test_process_flags_are_checked_before_joining(capsys):
    assert distributed.cluster_tasks({}) == 1
    assert distributed.cluster_tasks({"SLURM_STEP_NUM_TASKS": "4"}) == 4
    assert distributed.cluster_tasks({"SLURM_NTASKS": "4"}) == 1  # an allocation, not a step
    assert distributed.cluster_tasks({"OMPI_COMM_WORLD_SIZE": "2"}) == 2
    assert distributed.parse_coordinator("10.0.0.1:1234") == ("10.0.0.1", 1234)
    for flags, match in [(("h:1", 2, None), "go together"), (("h", 2, 0), "HOST:PORT"),
                         (("h:0", 2, 0), "HOST:PORT"), (("h:1", 2, 2), "--process-id must lie"),
                         (("h:1", 0, 0), "--num-processes must be >= 1")]:
        with pytest.raises(ValueError, match=match):
            distributed.check_flags(*flags)
    assert main([*SMALL, "--coordinator", "nohost", "--num-processes", "2",
                 "--process-id", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("jaxrl-pim tabular: error: --coordinator")


# what the coordination service prints when another process died (abridged)
FATAL_REPORT = (
    "E1122 19:54:08.085998    8703 coordination_service.cc:1549] Use error polling to "
    "propagate the following error to all tasks: UNAVAILABLE: The following tasks are "
    "unhealthy (stopped sending heartbeats):\n1\nThe tasks have crashed. Check the task logs.\n"
    "F1122 19:54:08.086540    8714 client.h:80] Terminating process because the JAX "
    "distributed service detected fatal errors. This most likely indicates that another task "
    "died. absl::Status: UNAVAILABLE: The following tasks are unhealthy (stopped sending "
    "heartbeats):\n1\nThe tasks have crashed. Check the task logs.\n\n"
    "RPC: /xla.coordination.CoordinationService/PollForError\n"
    "*** Check failure stack trace: ***\n"
    "    @     0x7fa4e2640634  absl::log_internal::LogMessage::SendToLog()\n"
)
FAKE_PROCESS = """
import os, sys, time
from jaxrl_pim.cli.launch import fold_fatal_reports
fold_fatal_reports("prog")
print("table line", flush=True)
print("[Gloo] Rank 0 is connected to 1 peer ranks. Expected number of connected peer ranks "
      "is : 1", flush=True)
# two threads' gloo messages interleaved (seen under load)
print("[Gloo] Rank [Gloo] Rank 2 is connected to 3 peer ranks. Expected number of connected "
      "peer ranks is : 3", flush=True)
print("3 is connected to 3 peer ranks. Expected number of connected peer ranks is : 3",
      flush=True)
print("[Gloo] Rank 3[Gloo] Rank 2 is connected to 3 peer ranks. Expected number of connected "
      "peer ranks is : 3", flush=True)
print(" is connected to 3 peer ranks. Expected number of connected peer ranks is : 3",
      flush=True)
print("[Gloo] Rank [Gloo] Rank 32 is connected to  is connected to 33 peer ranks.  peer ranks. "
      "Expected number of connected peer ranks is : Expected number of connected peer ranks "
      "is : 33", flush=True)
print("the 3 peer ranks line of a user stays", flush=True)
print("before", file=sys.stderr, flush=True)
os.write(2, b"W1122 19:54:19.423572    8892 preemption_sync_manager.cc:147] Failed to "
            b"retrieve preemption notice\\n")
time.sleep(4)  # a service warning with no fatal report after it is shown as it was
print("after", file=sys.stderr, flush=True)
os.write(2, open(sys.argv[1], "rb").read())
os._exit(134)
"""


def _settled_lines(path: Path, lines: int, timeout_s: float = 15.0) -> list[str]:
    """``path``'s lines once it holds ``lines`` of them (or ``timeout_s`` has passed), read
    again half a second later so that a line written after them is seen too."""
    deadline = time.monotonic() + timeout_s
    while len(path.read_text().splitlines()) < lines and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(0.5)
    return path.read_text().splitlines()


def test_relay_folds_the_fatal_report_into_one_line(tmp_path):
    with _processes() as procs:
        (tmp_path / "report.txt").write_text(FATAL_REPORT)
        p = _start(procs, ["-c", textwrap.dedent(FAKE_PROCESS), "report.txt"], 1,
                   tmp_path / "fake", tmp_path)
        assert p.wait(timeout=60) == 134
        # the relay writes its line when the process's pipes close
        err = _settled_lines(tmp_path / "fake.err", 4)
    assert (tmp_path / "fake.out").read_text() == ("table line\n"
                                                   "the 3 peer ranks line of a user stays\n")
    assert err == [
        "before",
        "W1122 19:54:19.423572    8892 preemption_sync_manager.cc:147] Failed to retrieve "
        "preemption notice",
        "after",
        "prog: error: another process of the run died or cannot be reached (jax distributed "
        "service: UNAVAILABLE: The following tasks are unhealthy (stopped sending "
        "heartbeats): 1)",
    ]


#: what a survivor's stderr held in a CI run: the command's own error, then the service's
#: account of the same lost peer from its C++ threads (a blank line inside it)
SERVICE_AFTER_OWN_ERROR = """
import os, sys
from jaxrl_pim.cli.launch import fold_fatal_reports
fold_fatal_reports("prog")
print("before", file=sys.stderr, flush=True)
os.write(2, b"prog: error: lost contact with another process of the run (UNKNOWN: Gloo "
            b"all-reduce failed: Read error [127.0.0.1]:17134: Connection reset by peer)\\n")
os.write(2, b"W1129 13:49:02.151319    8128 preemption_sync_manager.cc:147] Failed to retrieve "
            b"preemption notice from coordination service: UNAVAILABLE: recvmsg:Connection "
            b"reset by peer\\nAdditional GRPC error information from remote target "
            b"coordination_service while calling /xla.coordination.CoordinationService/"
            b"GetKeyValue:\\n:UNKNOWN:Error received from peer  {grpc_status:14}. This is only "
            b"expected if one of the tasks is unhealthy.\\n\\n"
            b"E1129 13:49:02.151341    8128 preemption_sync_manager.cc:159] Failed to cancel "
            b"preemption barrier\\n"
            b"E1129 13:49:02.151364    8128 coordination_service_agent.cc:289] Polled an error "
            b"from coordination service\\n")
os._exit(1)
"""


def test_relay_drops_the_service_messages_after_the_commands_own_error(tmp_path):
    with _processes() as procs:
        p = _start(procs, ["-c", textwrap.dedent(SERVICE_AFTER_OWN_ERROR)], 1,
                   tmp_path / "fake", tmp_path)
        assert p.wait(timeout=60) == 1
        err = _settled_lines(tmp_path / "fake.err", 2, timeout_s=5.0)
    assert err == ["before", "prog: error: lost contact with another process of the run "
                   "(UNKNOWN: Gloo all-reduce failed: Read error [127.0.0.1]:17134: Connection "
                   "reset by peer)"]


#: a process that records every write to its stderr (on stdout) and then fails; its streams
#: unbuffered, as on a machine with PYTHONUNBUFFERED set
ONE_WRITE = """
import os
from jaxrl_pim.cli import launch
real = os.write
def write(fd, data):
    if fd == 2:
        real(1, repr(data).encode() + b"\\n")
    return real(fd, data)
os.write = write
launch.fail("prog", "lost contact (reset)", status=3)
"""


def test_fail_writes_its_line_in_one_write():
    # under PYTHONUNBUFFERED, print() wrote the text and its newline apart, and a C++ thread's
    # message landed between them on the survivor's one line (seen in a CI run); a process of
    # its own, so that no other thread sees os.write replaced
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(ONE_WRITE)],
                          env={**subprocess_env(), "PYTHONUNBUFFERED": "1"},
                          capture_output=True, timeout=60)
    assert proc.returncode == 3
    assert proc.stdout.decode().splitlines() == [repr(b"prog: error: lost contact (reset)\n")]
    assert proc.stderr == b"prog: error: lost contact (reset)\n"


HEARTBEAT_S = 5
MARGIN_S = 20


@pytest.mark.slow
@pytest.mark.parametrize("victim", [1, 0])
def test_killed_process_stops_the_other_with_one_line(tmp_path, victim):
    port = launch.free_port()
    (tmp_path / "r.json").write_text("earlier report\n")
    long_run = ["-m", "jaxrl_pim.cli", "tabular", "--env", "taxi", "--cores", "8",
                "--transitions", "4000", "--episodes", "1000000", "--sync-period", "10",
                "--eval-episodes", "10", "--no-progress", "--heartbeat-timeout", str(HEARTBEAT_S),
                "--coordinator", f"127.0.0.1:{port}", "--num-processes", "2",
                "--json", "r.json", "--save-q", "q.npy"]
    survivor = 1 - victim
    with _processes() as procs:
        ps = [_start(procs, [*long_run, "--process-id", str(i)], 2, tmp_path / f"p{i}",
                     tmp_path) for i in range(2)]
        deadline = time.monotonic() + TIMEOUT_S
        while not all("training" in (tmp_path / f"p{i}.err").read_text() for i in range(2)):
            assert all(p.poll() is None for p in ps), "a process ended before training"
            assert time.monotonic() < deadline, "no process reached training"
            time.sleep(0.2)
        time.sleep(1.5)  # into compilation or the sync rounds (a kill in either stops both)
        assert ps[survivor].poll() is None
        ps[victim].send_signal(signal.SIGKILL)
        t0 = time.monotonic()
        rc = ps[survivor].wait(timeout=HEARTBEAT_S + MARGIN_S)
        elapsed = time.monotonic() - t0
    assert rc != 0 and elapsed < HEARTBEAT_S + MARGIN_S
    # The relay process writes the error line once the survivor's pipes close, so it may
    # reach the file after the survivor has ended: wait for it (a loaded machine is slower).
    want = 3 if survivor == 0 else 2
    err = _settled_lines(tmp_path / f"p{survivor}.err", want)
    if survivor == 0:  # process 0 alone states the run's size first
        assert err[0].startswith("jaxrl-pim tabular: 8 lanes x 500 rows"), err
        err = err[1:]
    assert err[0].startswith(f"process {survivor} of 2: lanes")
    assert len(err) == 2, err  # the marker, then exactly one line
    assert err[1].startswith("jaxrl-pim tabular: error: ")
    assert "died or cannot be reached" in err[1] or "lost contact" in err[1]
    # nothing written before is lost, and nothing partial is left
    assert (tmp_path / "r.json").read_text() == "earlier report\n"
    assert sorted(f.name for f in tmp_path.iterdir()) == [
        "p0.err", "p0.out", "p1.err", "p1.out", "r.json"]
