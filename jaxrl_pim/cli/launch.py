"""``jaxrl-pim launch`` and the command-line side of multi-process runs.

* :func:`add_arguments` gives a command ``--coordinator HOST:PORT --num-processes N
  --process-id I`` (and ``--heartbeat-timeout``); :func:`initialize_from_args` joins the run
  through :func:`jaxrl_pim.distributed.initialize`, or, with no flags, joins when it was
  started as one task of several (a SLURM ``srun`` step, an Open MPI ``mpirun``). Otherwise
  the run stays one process and nothing changes.
* Faults: when a process dies, the others stop rather than hang. The coordination service
  notices the missing heartbeats within ``--heartbeat-timeout`` seconds (at once when process
  0, which hosts the service, is gone) and terminates the survivors; its C++ fatal report (a
  dozen lines and a stack trace) is folded into one line by :func:`fold_fatal_reports`, a
  small process that relays stdout and stderr. A collective that reports the closed
  connection first raises ``jax.errors.JaxRuntimeError``, which the command turns into one
  line and exit status 1 (:func:`fail`). Only process 0 writes files, each atomically, so a
  stopped run leaves earlier files as they were and no partial ones.
* ``jaxrl-pim launch --processes N [--devices-per-process D] -- tabular ...`` (:func:`launch`)
  starts N local processes on 127.0.0.1 with a free port, each with D host CPU devices,
  prefixes their output with ``[i]``, and when one fails stops the others and exits non-zero
  (:func:`supervise`).

This module imports jax only inside the functions of :mod:`jaxrl_pim.distributed`, so the
launcher and the relay start quickly and ``XLA_FLAGS`` can still be set before jax loads.
"""

from __future__ import annotations

import argparse
import os
import re
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any, BinaryIO, NoReturn

from jaxrl_pim.cli._common import Stopped, add_command, check_ranges, install_stop_handlers
from jaxrl_pim.distributed import (
    HEARTBEAT_TIMEOUT_S,
    Processes,
    check_flags,
    cluster_tasks,
    initialize,
)
from jaxrl_pim.xla_env import CPU_WORKAROUND_FLAGS, with_flags

#: Sub-commands that accept the process flags (what ``launch`` can start).
COMMANDS: tuple[str, ...] = ("tabular", "marl")
_DEVICE_COUNT_FLAG = "--xla_force_host_platform_device_count"
#: The most local processes (and host CPU devices per process) ``launch`` starts: far above
#: any host's cores, low enough that a mistyped count is refused rather than forked.
MAX_PROCESSES = 4096


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--coordinator``, ``--num-processes``, ``--process-id`` and ``--heartbeat-timeout``."""
    group = parser.add_argument_group(
        "processes and hosts",
        "run as one of several processes (give all three, the same coordinator everywhere); "
        "with none, an srun step or mpirun of several tasks is detected")
    group.add_argument("--coordinator", default=None, metavar="HOST:PORT",
                       help="address of process 0, which hosts the coordination service")
    group.add_argument("--num-processes", type=int, default=None, metavar="N",
                       help="processes in the run")
    group.add_argument("--process-id", type=int, default=None, metavar="I",
                       help="this process's index, 0 .. N-1")
    group.add_argument("--heartbeat-timeout", type=int, default=HEARTBEAT_TIMEOUT_S,
                       metavar="S", help="seconds without heartbeats before a process counts "
                       "as dead and the others stop")


def initialize_from_args(args: argparse.Namespace, prog: str) -> Processes:
    """Join the run the flags of :func:`add_arguments` (or the cluster) describe.

    Returns ``Processes(0, 1)`` and does nothing for a single-process run. Otherwise it checks
    the flags, routes output through :func:`fold_fatal_reports`, then initialises
    ``jax.distributed`` and takes SIGTERM back from its preemption notifier, so that SIGTERM
    (what :func:`supervise` sends) still stops the process.
    """
    flags = (args.coordinator, args.num_processes, args.process_id)
    check_flags(*flags, args.heartbeat_timeout)
    if all(v is None for v in flags) and cluster_tasks() <= 1:
        return Processes(0, 1)
    fold_fatal_reports(prog)
    procs = initialize(*flags, heartbeat_timeout_s=args.heartbeat_timeout)
    install_stop_handlers()
    return procs


def fail(prog: str, message: str, status: int = 1) -> NoReturn:
    """Print ``{prog}: error: {message}`` on one line and exit at once with ``status``.

    Skips the exit-time handshake of ``jax.distributed`` (which would wait for the dead peer).
    """
    sys.stdout.flush()
    sys.stderr.flush()
    # one write of the whole line: print() writes the text and its newline apart when Python's
    # streams are unbuffered (PYTHONUNBUFFERED), and the coordination service's C++ threads,
    # which write to the same stderr, could land a message between them
    os.write(2, f"{prog}: error: {message}\n".encode())
    os._exit(status)


# --------------------------------------------------------------------------------------------
# One line instead of the coordination service's fatal report

_GLOG = re.compile(rb"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ ([\w.]+):\d+\] ")
_SERVICE_FILES = (b"coordination_service", b"preemption_sync_manager", b"client.h",
                  b"distributed")
_FATAL = b"Terminating process because the JAX distributed service detected fatal errors"
_HOLD_S = 3.0  # a service message not followed by a fatal one within this time is shown
# gloo's "[Gloo] Rank i is connected to n peer ranks. Expected number of connected peer ranks
# is : n", written piece by piece (one write per streamed value) from several threads, so two
# messages interleave at any piece boundary, on one line or split over two ("[Gloo] Rank
# [Gloo] Rank 32 is connected to  is connected to 33 peer ranks.  peer ranks. ..."): a line
# made only of those pieces, numbers and spaces is gloo's
_GLOO_PIECES = re.compile(rb"\[Gloo\] Rank |is connected to|peer ranks\.|Expected number of "
                          rb"connected peer ranks is :|\d+|\s+")
_GLOO_WORDS = (b"[Gloo]", b"is connected to", b"peer ranks")


def _is_gloo_noise(line: bytes) -> bool:
    """True for a line made only of the pieces of gloo's connection messages (above)."""
    return (any(w in line for w in _GLOO_WORDS)
            and not _GLOO_PIECES.sub(b"", line))


def fold_fatal_reports(prog: str) -> None:
    """Route this process's stdout and stderr (file descriptors 1 and 2) through a relay
    process that shows them unchanged, except that the coordination service's fatal report
    (a dozen lines and a C++ stack trace, printed when another process died) becomes one line
    ``{prog}: error: another process of the run died or cannot be reached (...)``, the
    service's messages after the command's own one-line error (:func:`fail`) are dropped, and
    so are gloo's "Rank i is connected to n peer ranks" lines. The relay ends with this
    process.
    """
    err_r, err_w = os.pipe()
    out_r, out_w = os.pipe()
    to_out, to_err = os.dup(1), os.dup(2)
    code = ("import sys; from jaxrl_pim.cli.launch import _relay; "
            "_relay(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))")
    try:
        subprocess.Popen([sys.executable, "-c", code, prog, str(out_r), str(to_out)],
                         stdin=err_r, stdout=to_err, stderr=to_err, pass_fds=(out_r, to_out))
    finally:
        for fd in (err_r, out_r, to_out, to_err):
            os.close(fd)
    for fd, (stream, target) in ((out_w, (sys.stdout, 1)), (err_w, (sys.stderr, 2))):
        stream.flush()
        os.dup2(fd, target)
        os.close(fd)


def _relay(prog: str, out_in: int, out_fd: int, err_in: int = 0, err_fd: int = 1) -> None:
    """The relay's loop (its own process; see :func:`fold_fatal_reports`): copies ``out_in``
    to ``out_fd`` and ``err_in`` to ``err_fd`` line by line until both reach end of file."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # it ends with the process it serves
    errors = _ErrorLines(prog, err_fd)
    pending = {out_in: b"", err_in: b""}  # each input's partial last line
    while pending:
        ready, _, _ = select.select(list(pending), [], [], errors.wait_s())
        if not ready:  # a held message with no fatal report after it: show it
            errors.show_held()
            continue
        for fd in ready:
            for line in _read_lines(fd, pending):
                if _is_gloo_noise(line):
                    continue
                if fd == out_in:
                    _emit(out_fd, [line])
                else:
                    errors.add(line)
    errors.finish()


def _emit(fd: int, lines: list[bytes]) -> None:
    """Write ``lines`` to ``fd`` whole."""
    data = b"".join(lines)
    while data:
        data = data[os.write(fd, data):]


def _read_lines(fd: int, pending: dict[int, bytes]) -> list[bytes]:
    """The whole lines ``fd`` completes with its next read (``pending[fd]`` keeps the partial
    last one); at end of file its partial last line, if any, and ``fd`` leaves ``pending``."""
    chunk = os.read(fd, 65536)
    if not chunk:
        rest = pending.pop(fd)
        return [rest] if rest else []
    *lines, pending[fd] = (pending[fd] + chunk).split(b"\n")
    return [line + b"\n" for line in lines]


class _ErrorLines:
    """The relay's stderr side: each line shown on ``fd`` as it comes, except that a
    coordination-service message is held back for ``_HOLD_S`` seconds (and dropped when a
    fatal report follows, or replaced by the command's own one-line error), a service message
    after the command's own error is dropped (the command has said what happened), and the
    fatal report is folded into one line at the end (:meth:`finish`)."""

    def __init__(self, prog: str, fd: int) -> None:
        self.prog, self.fd = prog, fd
        self.own_error = f"{prog}: error: ".encode()
        self.held: list[bytes] = []  # a coordination-service message, held back for _HOLD_S
        self.held_since = 0.0
        self.fatal: list[bytes] | None = None  # the status lines of a fatal report
        self.said = False  # the command's own one-line error has come
        self.dropping = False  # inside a service message that came after it

    def wait_s(self) -> float | None:
        """Seconds until the held message is shown (None: nothing to wait for)."""
        if self.held and self.fatal is None:
            return max(0.0, self.held_since + _HOLD_S - time.monotonic())
        return None

    def show_held(self) -> None:
        """Show the held message now."""
        _emit(self.fd, self.held)
        self.held = []

    def add(self, line: bytes) -> None:
        """One line of stderr: shown, held, or taken into the fatal report."""
        if self.fatal is not None:
            if len(self.fatal) < 2 and not line.startswith((b"***", b"RPC:", b"    @")):
                self.fatal.append(line)
            return
        glog = _GLOG.match(line)
        service = glog is not None and glog.group(1).startswith(_SERVICE_FILES)
        if glog is not None:
            self.dropping = service and self.said
        if _FATAL in line:
            self.fatal = [line.split(b"absl::Status: ", 1)[-1]]
            self.held = []
        elif line.startswith(self.own_error):
            self.said = True
            if self.held:
                self.held = [line]  # our own one-line error replaces the service's messages
            else:
                _emit(self.fd, [line])
        elif self.dropping:
            pass  # a service message (or its continuation lines) after our own error
        elif service:
            if not self.held:
                self.held_since = time.monotonic()
            self.held.append(line)
        elif self.held:
            self.held.append(line)
        else:
            _emit(self.fd, [line])

    def finish(self) -> None:
        """At end of file: the fatal report as one line (none after the command's own error),
        else the held message."""
        if self.fatal is not None and self.said:
            return
        if self.fatal is not None:
            status = " ".join(b" ".join(self.fatal).decode(errors="replace").split())
            status = status.split(". ")[0]
            _emit(self.fd, [f"{self.prog}: error: another process of the run died or cannot "
                            f"be reached (jax distributed service: {status[:300]})\n".encode()])
        elif self.held:
            _emit(self.fd, self.held)


# --------------------------------------------------------------------------------------------
# The local launcher


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that is free on ``host`` right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def process_environment(
    devices_per_process: int, environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment of one launched process: ``devices_per_process`` host CPU devices
    (replacing any device count in ``XLA_FLAGS``), the CPU workaround flags, the CPU platform
    unless ``JAX_PLATFORMS`` is set, unbuffered Python output."""
    env = dict(os.environ if environ is None else environ)
    flags = [f for f in env.get("XLA_FLAGS", "").split()
             if f.split("=", 1)[0] != _DEVICE_COUNT_FLAG]
    env["XLA_FLAGS"] = with_flags(" ".join(flags), f"{_DEVICE_COUNT_FLAG}={devices_per_process}",
                                  *CPU_WORKAROUND_FLAGS)
    env.setdefault("JAX_PLATFORMS", "cpu")
    env["PYTHONUNBUFFERED"] = "1"
    return env


def supervise(
    argvs: Sequence[Sequence[str]],
    envs: Sequence[Mapping[str, str]],
    *,
    stdout: BinaryIO | None = None,
    stderr: BinaryIO | None = None,
    grace_s: float = 5.0,
    prog: str = "jaxrl-pim launch",
) -> int:
    """Run one process per ``argvs[i]`` (environment ``envs[i]``), prefix each output line
    with ``[i] ``, and wait. When one exits non-zero, stop the others (SIGTERM, SIGKILL
    after ``grace_s``), print one line and return that exit status (1 for a signal); 0
    when all succeed. Ctrl-C or SIGTERM (inside the ``jaxrl-pim`` command) stops all and
    returns 128 + the signal number (130 for a plain ``KeyboardInterrupt``)."""
    group = _Processes(stdout if stdout is not None else sys.stdout.buffer,
                       stderr if stderr is not None else sys.stderr.buffer, grace_s)
    failure: tuple[int, int] | None = None
    try:
        for i, (argv, env) in enumerate(zip(argvs, envs, strict=True)):
            group.start(i, argv, env)
        failure = group.first_failure()
        if failure is not None:
            group.stop_all()
    except KeyboardInterrupt as stop:
        group.stop_all()
        group.join_readers()
        print(f"{prog}: interrupted; stopped all processes", file=sys.stderr, flush=True)
        return stop.status if isinstance(stop, Stopped) else 130
    group.join_readers()
    if failure is None:
        return 0
    return group.report_failure(prog, *failure)


class _Processes:
    """The processes :func:`supervise` runs, each one's stdout and stderr relayed to
    ``stdout`` and ``stderr`` line by line (whole lines, one writer at a time) with its
    ``[i] `` prefix."""

    def __init__(self, stdout: BinaryIO, stderr: BinaryIO, grace_s: float) -> None:
        self.stdout, self.stderr, self.grace_s = stdout, stderr, grace_s
        self.lock = threading.Lock()
        self.procs: list[subprocess.Popen] = []
        self.readers: list[threading.Thread] = []

    def start(self, i: int, argv: Sequence[str], env: Mapping[str, str]) -> None:
        """Start process ``i`` and the threads that relay its output."""
        p = subprocess.Popen(list(argv), env=dict(env), stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.procs.append(p)
        for stream, sink in ((p.stdout, self.stdout), (p.stderr, self.stderr)):
            t = threading.Thread(target=self._pump, args=(stream, sink, f"[{i}] ".encode()),
                                 daemon=True)
            t.start()
            self.readers.append(t)

    def _pump(self, stream: BinaryIO, sink: BinaryIO, prefix: bytes) -> None:
        for line in iter(stream.readline, b""):
            with self.lock:
                sink.write(prefix + line if line.endswith(b"\n") else prefix + line + b"\n")
                sink.flush()
        stream.close()

    def first_failure(self) -> tuple[int, int] | None:
        """Wait until a process exits non-zero or all have ended: ``(index, returncode)`` of
        the one that failed, None when all succeeded."""
        while any(p.poll() is None for p in self.procs):
            for i, p in enumerate(self.procs):
                if p.poll() not in (None, 0):
                    return i, p.returncode
            time.sleep(0.05)
        # all ended: one may have failed in the last round
        return next(((i, p.returncode) for i, p in enumerate(self.procs) if p.returncode),
                    None)

    def stop_all(self) -> None:
        """SIGTERM to every running process, SIGKILL to those still running ``grace_s``
        later."""
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        deadline = time.monotonic() + self.grace_s
        for p in self.procs:
            try:
                p.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def join_readers(self) -> None:
        """Wait (``grace_s`` at most each) for the relaying threads to pass the last lines."""
        for t in self.readers:
            t.join(timeout=self.grace_s)

    def report_failure(self, prog: str, index: int, status: int) -> int:
        """Print the one line saying which process failed; returns the exit status."""
        how = f"status {status}" if status > 0 else f"signal {-status}"
        others = len(self.procs) - 1
        with self.lock:
            self.stderr.write(f"{prog}: error: process {index} exited with {how}; stopped the "
                              f"other {others} process{'es' if others != 1 else ''}\n".encode())
            self.stderr.flush()
        return status if 0 < status < 256 else 1


def launch(
    command: Sequence[str],
    processes: int,
    devices_per_process: int | None = None,
    *,
    host: str = "127.0.0.1",
    port: int | None = None,
    grace_s: float = 5.0,
) -> int:
    """Run ``jaxrl-pim <command>`` as ``processes`` local processes of one run (see module
    docstring); returns the exit status. ``devices_per_process`` defaults to the host's
    cores divided among the processes (at least 1)."""
    command = list(command)
    if command[:1] == ["--"]:
        command = command[1:]
    if not command or command[0] not in COMMANDS:
        raise ValueError(f"launch runs one of {', '.join(COMMANDS)} (after --); "
                         f"got {' '.join(command) or 'nothing'}")
    taken = {"--coordinator", "--num-processes", "--process-id"}
    if any(a.split("=", 1)[0] in taken for a in command):
        raise ValueError("launch sets --coordinator, --num-processes and --process-id itself")
    if processes < 1:
        raise ValueError(f"--processes must be >= 1, got {processes}")
    if devices_per_process is None:
        devices_per_process = max(1, (os.cpu_count() or 1) // processes)
    if devices_per_process < 1:
        raise ValueError(f"--devices-per-process must be >= 1, got {devices_per_process}")
    check_ranges({"--processes": (processes, 1, MAX_PROCESSES),
                  "--devices-per-process": (devices_per_process, 1, MAX_PROCESSES),
                  "--port": (port, 1, 65535)})  # before the processes name --coordinator
    address = f"{host}:{port or free_port(host)}"
    argvs = [[sys.executable, "-m", "jaxrl_pim.cli", *command, "--coordinator", address,
              "--num-processes", str(processes), "--process-id", str(i)]
             for i in range(processes)]
    env = process_environment(devices_per_process)
    return supervise(argvs, [env] * processes, grace_s=grace_s)


def register(subparsers: Any) -> None:
    """Add the ``launch`` sub-command."""
    p = add_command(
        subparsers, "launch", main, help_formatter=False,
        description="Start N local processes of one multi-process run on 127.0.0.1 (a free "
        "port), each with D host CPU devices; prefix their output with [i]; if one fails, "
        "stop the others and exit non-zero. Example: jaxrl-pim launch --processes 2 -- "
        "tabular --cores 8 --episodes 10")
    p.add_argument("--processes", type=int, required=True, metavar="N",
                   help="processes to start")
    p.add_argument("--devices-per-process", type=int, default=None, metavar="D",
                   help="host CPU devices per process (default: cores / N, at least 1)")
    p.add_argument("--port", type=int, default=None,
                   help="coordinator port on 127.0.0.1 (default: a free one)")
    p.add_argument("command", nargs=argparse.REMAINDER,
                   help=f"-- then the sub-command and its options ({', '.join(COMMANDS)})")


def main(args: argparse.Namespace) -> int:
    """Run ``jaxrl-pim launch`` with the parsed options; returns the exit status."""
    return launch(args.command, args.processes, args.devices_per_process, port=args.port)
