"""What every ``jaxrl-pim`` command shares: the parser and help formatter, the check of the
checkpoint options and of every output path (before any work), config errors in the
command's own flag names, when to show a progress bar, and stopping on SIGTERM / Ctrl-C at
any stage.

Imports nothing heavier than the standard library, so registering a command's options costs
no jax import.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import signal
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn, TextIO

#: Seconds after SIGTERM or Ctrl-C before the watchdog ends a process whose main thread has
#: not stopped: an XLA computation or a blocking call does not return to Python (where the
#: signal handler runs) before it is done, so this bounds how long a stop can take.
STOP_GRACE_S = 3.0


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Help that appends each option's default as ``(default: ...)`` unless the help text
    already says it (write ``(default: ...)`` yourself where the value needs words, e.g.
    ``None``); the help text itself states the unit."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if "(default" in text:
            return text
        return super()._get_help_string(action)


#: Every sub-command's one-line summary (``jaxrl-pim --help`` and the command's own help).
SUMMARIES: dict[str, str] = {
    "tabular": "offline tabular Q-learning / SARSA on vmapped lanes (SwiftRL)",
    "actorq": "actor-learner DQN/D4PG with quantized (int8/fp16) actors",
    "ptq": "post-training quantization study (fp32/fp16/int8 and a bit sweep)",
    "qat": "quantization-aware training study (QAT vs PTQ at the same bits)",
    "marl": "train MADDPG / MATD3 / MASAC on cooperative navigation or predator-prey",
    "launch": "run a command as several local processes of one jax.distributed run",
}


def config_defaults(config_class: type, **command_defaults: Any) -> dict[str, Any]:
    """The defaults of a command's options that set fields of ``config_class`` (a dataclass):
    every field's own default (fields with a default factory or none are left out), with the
    command's ``command_defaults`` (named in its ``COMMAND_DEFAULTS`` with the reason) over
    them. Reads the class only, so a command's parser is built without jax."""
    import dataclasses

    fields = {f.name: f.default for f in dataclasses.fields(config_class)
              if f.default is not dataclasses.MISSING}
    return {**fields, **command_defaults}


def add_command(subparsers: argparse._SubParsersAction, name: str, func: Any, *,
                description: str, help_formatter: bool = True,
                **kwargs: Any) -> argparse.ArgumentParser:
    """Add the sub-command ``name`` whose entry point is ``func`` (the module's ``main(args)
    -> int``): its one-line help is its summary in :data:`SUMMARIES`, its
    options' help appends their defaults (:class:`HelpFormatter`) unless ``help_formatter``
    is False (a command whose help texts state every default themselves). Returns its
    parser."""
    if help_formatter:
        kwargs["formatter_class"] = HelpFormatter
    parser = subparsers.add_parser(name, help=SUMMARIES[name], description=description,
                                   **kwargs)
    parser.set_defaults(func=func)
    return parser


class CommandParser(argparse.ArgumentParser):
    """The parser of ``jaxrl-pim`` and of each command: an option it does not know is reported
    as ``unrecognized arguments: --name`` even where argparse would first take the option's
    value for a sub-command (``marl --checkpoint-dir X`` is not ``invalid choice: 'X'``)."""

    _seen: Sequence[str] = ()

    def parse_known_args(self, args: Sequence[str] | None = None,
                         namespace: argparse.Namespace | None = None) -> Any:
        self._seen = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(args, namespace)

    def unknown_options(self, args: Sequence[str]) -> list[str]:
        """The option names among ``args`` that this parser does not take (before ``--``
        and before a sub-command's name; an unambiguous prefix of an option is known)."""
        choices: set[str] = set()
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                choices.update(action.choices)
        known = list(self._option_string_actions)
        out = []
        for arg in args:
            if arg == "--" or arg in choices:
                break
            if not arg.startswith("-") or len(arg) < 2 or re.fullmatch(r"-[\d.e+-]+", arg):
                continue
            name = arg.split("=", 1)[0]
            if name in known or (self.allow_abbrev and name.startswith("--") and any(
                    k.startswith(name) for k in known)):
                continue
            out.append(name)
        return out

    def error(self, message: str) -> NoReturn:
        if "invalid choice" in message:
            unknown = self.unknown_options(self._seen)
            if unknown:
                message = f"unrecognized arguments: {' '.join(unknown)}"
        super().error(message)


def _nearest_existing(path: Path) -> Path:
    """``path`` or its nearest ancestor that exists."""
    here = path
    while not here.exists() and here != here.parent:
        here = here.parent
    return here


#: Longest file or folder name (bytes) where the file system does not say (``NAME_MAX``).
NAME_MAX = 255


def _check_names(path: Path, flag: str) -> None:
    """Every name in ``path`` fits the file system (``NAME_MAX`` bytes, as ``pathconf`` of
    the nearest existing folder says)."""
    try:
        most = os.pathconf(_nearest_existing(path.parent), "PC_NAME_MAX")
    except (OSError, ValueError):
        most = NAME_MAX
    for part in path.parts:
        size = len(os.fsencode(part))
        if size > most:
            raise ValueError(f"{flag}: the name {part[:24]}... is {size} bytes, over the "
                             f"{most} the file system allows; give a shorter name")


def _check_can_create(folder: Path, path: Path, flag: str) -> None:
    """A file can be created in ``folder``: ``os.access`` first (cheap), then a real probe,
    a temporary file made and removed at once. The probe is the truth that permission bits
    are not: as root ``os.access`` says yes to ``/proc`` and ``/sys`` (where nothing can be
    created) and to read-only network mounts; a list of such places would miss the next one."""
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ValueError(f"{flag} {path}: the folder {folder} is not writable")
    import tempfile

    try:
        fd, probe = tempfile.mkstemp(prefix=".jaxrl-pim-probe.", dir=folder)
    except OSError as err:
        raise ValueError(f"{flag} {path}: no file can be created in {folder} "
                         f"({err.strerror or type(err).__name__}); choose another folder"
                         ) from None
    os.close(fd)
    os.unlink(probe)


def _check_parents(path: Path, flag: str) -> None:
    """The folders above ``path`` can hold it: the nearest existing one is a folder where a
    file can be created (the missing ones below it are created)."""
    above = _nearest_existing(path.parent if path.parent != path else path)
    if not above.is_dir():
        raise ValueError(f"{flag} {path}: {above} is a file, not a folder")
    _check_can_create(above, path, flag)


def check_output_file(path: str | os.PathLike[str] | None, flag: str) -> None:
    """Refuses (ValueError, one line naming ``flag``) an output file path that cannot be
    written: a name longer than the file system allows, anything but a regular file at the
    path (a folder, a symbolic link, a FIFO, a device: :func:`jaxrl_pim.checks.special_file`,
    what :func:`jaxrl_pim.report.atomic_save` refuses), a parent that is a file, a folder
    where no file can be created (not writable, ``/proc``, ``/sys``). None (the option not
    given) passes. Called before any work, so a bad path never costs a run's results."""
    if path is None:
        return
    from jaxrl_pim.checks import check_replaceable

    path = Path(path)
    _check_names(path, flag)
    try:
        try:
            check_replaceable(path)
        except (IsADirectoryError, ValueError) as err:
            raise ValueError(f"{flag} {err}") from None
        _check_parents(path, flag)
    except OSError as err:  # e.g. a path longer than PATH_MAX
        raise ValueError(f"{flag} {path}: {err.strerror or type(err).__name__}") from None


def check_output_folder(path: str | os.PathLike[str] | None, flag: str) -> None:
    """Refuses (ValueError, one line naming ``flag``) an output folder that cannot be used:
    a name longer than the file system allows, a file at its path, a parent that is a file,
    a folder (or the nearest existing one above it) where no file can be created. None
    passes."""
    if path is None:
        return
    path = Path(path)
    _check_names(path, flag)
    try:
        if path.exists():
            if not path.is_dir():
                raise ValueError(f"{flag} {path}: is a file, not a folder")
            if not os.access(path, os.W_OK | os.X_OK):
                raise ValueError(f"{flag} {path}: the folder is not writable")
            _check_can_create(path, path, flag)
            return
        _check_parents(path, flag)
    except OSError as err:
        raise ValueError(f"{flag} {path}: {err.strerror or type(err).__name__}") from None


def check_outputs(args: argparse.Namespace, *, files: Mapping[str, str] = {},  # noqa: B006
                  folders: Mapping[str, str] = {}) -> None:  # noqa: B006
    """Checks every output path of a command before any work: ``files`` and ``folders`` map
    a flag (``--json``) to the attribute of ``args`` that holds its value (``json``). Give
    every output flag of the command and its ``--checkpoint`` folder: besides each path's
    own check (:func:`check_output_file`, :func:`check_output_folder`) no two outputs may be
    the same path (the later write would replace the earlier), and none may lie inside an
    output folder (a checkpoint folder and its steps are the checkpoints': a report written
    there would meet a step of that name, or be found among them)."""
    given: list[tuple[str, Path, bool]] = []
    for flag, attr in files.items():
        check_output_file(getattr(args, attr, None), flag)
        if getattr(args, attr, None) is not None:
            given.append((flag, Path(getattr(args, attr)), False))
    for flag, attr in folders.items():
        check_output_folder(getattr(args, attr, None), flag)
        if getattr(args, attr, None) is not None:
            given.append((flag, Path(getattr(args, attr)), True))
    real = [(flag, path, Path(os.path.abspath(path)).resolve(), folder)
            for flag, path, folder in given]
    for i, (flag, path, here, _) in enumerate(real):
        for other, _, there, _ in real[:i]:
            if here == there:
                raise ValueError(f"{flag} {path} is also the path of {other}: give each output "
                                 "its own path")
    for flag, path, here, _ in real:
        for other, other_path, there, folder in real:
            if folder and there in here.parents:
                raise ValueError(f"{flag} {path} lies inside the {other} folder {other_path}: "
                                 "write it outside that folder")


def check_ranges(values: Mapping[str, tuple[Any, int | None, int | None]]) -> None:
    """Each flag's integer ``value`` within ``[lo, hi]`` (``flag -> (value, lo, hi)``; a bound
    None is open, a value None is an option not given and passes): a ValueError naming the
    flag otherwise (:func:`jaxrl_pim.checks.check_int`)."""
    from jaxrl_pim.checks import check_int

    for flag, (value, lo, hi) in values.items():
        if value is not None:
            check_int(flag, value, lo, hi)


def check_seed(seed: int, count: int = 1, flag: str = "--seed") -> None:
    """``seed`` .. ``seed + count - 1`` are distinct PRNG seeds, within ``0 ..``
    :data:`jaxrl_pim.checks.MAX_SEED` (what ``jax.random.PRNGKey`` tells apart); a ValueError
    naming ``flag`` otherwise."""
    from jaxrl_pim.checks import MAX_SEED

    top = MAX_SEED - (max(count, 1) - 1)
    if not 0 <= seed <= top:
        more = f" (with --seeds {count}: seed + {count - 1} too)" if count > 1 else ""
        raise ValueError(f"{flag} must be in 0 .. {top}, a 32-bit PRNG seed{more}; got {seed}")


def check_fits_memory(flag: str, needed: int, what: str) -> None:
    """Refuses (one line naming ``flag``) a run whose ``what`` needs ``needed`` bytes, more
    than the memory a run may fill (:func:`jaxrl_pim.marl.plan.available_memory` times its
    ``MEMORY_FRACTION``), before anything is allocated. Arithmetic only: nothing compiles.
    Below 64 MiB nothing is asked (every machine that runs jax has that)."""
    if needed < 64 << 20:
        return
    from jaxrl_pim.marl import plan

    available, source = plan.available_memory()
    usable = int(available * plan.MEMORY_FRACTION)
    if needed > usable:
        raise ValueError(f"{flag}: {what} needs {plan.human_bytes(needed)} but "
                         f"{plan.human_bytes(usable)} ({int(plan.MEMORY_FRACTION * 100)} % of "
                         f"{plan.human_bytes(available)}, {source}) is available; give a "
                         f"smaller {flag}")


#: Keys of a checkpoint's fingerprint besides its ``config`` (the run's identity, written by
#: the commands) -> the flags that set them: a fingerprint difference names the flag.
IDENTITY_FLAGS = {"seed": "--seed", "num_seeds": "--seeds", "env": "--env",
                  "transitions": "--transitions", "agents": "--agents",
                  "dataset_sha256": "--dataset", "terminal_states": "--terminal-states",
                  "algo": "--algo", "sampling": "--sampling", "dtype": "--dtype",
                  "rng": "--rng"}


def in_flag_names(message: str, flags: Mapping[str, str]) -> str:
    """``message`` with each config field named by the flag the user typed: ``flags`` maps a
    field (``num_episodes``) to its flag (``--episodes``); whole words only, not a part of a
    dotted path or of a flag (``--num_envs`` stays). ``field=value`` becomes ``flag value``.
    A checkpoint's fingerprint difference (``config.batch_size: saved 32, this run 16``, or
    an identity key of :data:`IDENTITY_FLAGS` such as ``num_seeds``) is named by the flag
    (``--batch-size: saved 32, this run 16``), a value one side lacks (None) as ``not
    given``."""
    keyed = {**IDENTITY_FLAGS, **flags}
    for field, flag in keyed.items():
        name = re.escape(field)
        message = re.sub(rf"(?<![\w.-])(?:config\.)?{name}(?=: saved )", flag, message)
    if ": saved " in message:
        message = re.sub(r"\b(saved|this run) None\b", r"\1 not given", message)
    for field, flag in flags.items():
        name = re.escape(field)
        message = re.sub(rf"(?<![\w.-]){name}=(?=\S)", f"{flag} ", message)
        message = re.sub(rf"(?<![\w.-]){name}(?!\w|\.\w)", flag, message)
    return message


@contextlib.contextmanager
def flag_names(flags: Mapping[str, str]) -> Iterator[None]:
    """Re-raises a ValueError of the block (a config's check) with its fields named by the
    command's flags (:func:`in_flag_names`)."""
    try:
        yield
    except ValueError as err:
        raise ValueError(in_flag_names(str(err), flags)) from None


def add_json_argument(group: Any, help: str, *, path: bool = False) -> None:
    """Adds ``--json PATH`` to ``group`` (a parser or an argument group): where the command
    writes its JSON report, ``None`` when not given; a ``Path`` with ``path``, else the
    string. ``help`` says what the report holds and its default."""
    group.add_argument("--json", type=Path if path else None, default=None, metavar="PATH",
                       help=help)


def add_progress_argument(group: Any, help: str) -> None:
    """Adds ``--progress`` / ``--no-progress`` to ``group``: ``None`` when not given, for
    :func:`show_progress` to decide from the command's streams; ``help`` names them."""
    group.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                       help=help)


def add_checkpoint_arguments(parser: argparse.ArgumentParser, *, folder: str, unit: str,
                             period: str, resume: str) -> None:
    """Adds the "checkpoints" group of ``parser``: ``--checkpoint DIR``, ``--checkpoint-every
    UNIT`` and ``--resume``, the checkpoint options every training command takes (checked by
    :func:`check_checkpoint_arguments`). ``folder``, ``period`` and ``resume`` are the help
    texts (each saying its default), ``unit`` the metavar of the period (``ROUNDS``,
    ``EPISODES``, ``STEPS``)."""
    group = parser.add_argument_group(
        "checkpoints", "save the run as it goes and continue it after a crash or a kill")
    group.add_argument("--checkpoint", type=Path, default=None, metavar="DIR", help=folder)
    group.add_argument("--checkpoint-every", type=int, default=None, metavar=unit, help=period)
    group.add_argument("--resume", action="store_true", help=resume)


def check_checkpoint_arguments(args: argparse.Namespace) -> None:
    """Refuses ``--resume`` or ``--checkpoint-every`` without ``--checkpoint DIR``, a period
    below 1, and a ``--checkpoint`` path that cannot be a writable folder
    (:func:`check_output_folder`): the one check of the checkpoint options every training
    command takes."""
    if args.checkpoint is None:
        if args.resume:
            raise ValueError("--resume needs --checkpoint DIR (the folder to resume from)")
        if args.checkpoint_every is not None:
            raise ValueError("--checkpoint-every needs --checkpoint DIR")
    if args.checkpoint_every is not None and args.checkpoint_every < 1:
        raise ValueError(f"--checkpoint-every must be >= 1, got {args.checkpoint_every}")
    if args.resume and args.checkpoint is not None and not Path(args.checkpoint).is_dir():
        raise ValueError(f"--resume: the checkpoint folder {args.checkpoint} does not exist "
                         "(drop --resume to start a new run there)")
    check_output_folder(args.checkpoint, "--checkpoint")


def quiet_absl() -> None:
    """Show absl's log records (orbax logs through absl) from ERROR up only: a command's own
    one-line warnings and errors say what happened, and orbax's WARNING lines (half a dozen
    around a damaged checkpoint) only bury them. Does nothing where absl is not installed."""
    try:
        from absl import logging as absl_logging
    except ImportError:
        return
    absl_logging.set_verbosity(absl_logging.ERROR)


def show_progress(flag: bool | None, *streams: TextIO) -> bool:
    """``--progress`` / ``--no-progress`` when given; otherwise whether every one of
    ``streams`` (default: stderr, where the bar is drawn) is a terminal."""
    if flag is not None:
        return bool(flag)
    return all(stream.isatty() for stream in (streams or (sys.stderr,)))


class Stopped(KeyboardInterrupt):
    """Raised in the main thread on SIGTERM or SIGINT (Ctrl-C) where a command asked for it
    (``stop_on_signals(..., raise_stop=True)``); ``signum`` says which."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def status(self) -> int:
        """The exit status of a command stopped by this signal: 128 + the signal number."""
        return 128 + self.signum


_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
#: The command being run, whether it has reported its stop, and how it stops.
_stopping: dict[str, object] = {"prog": "jaxrl-pim", "reported": False, "raise": False}


def report_stop(prog: str, signum: int) -> None:
    """Print ``{prog}: stopped by SIGTERM`` (or SIGINT) once on stderr."""
    if not _stopping["reported"]:
        _stopping["reported"] = True
        print(f"{prog}: stopped by {signal.Signals(signum).name}", file=sys.stderr, flush=True)


def _exit_stopped(prog: str, signum: int) -> None:
    """Report the stop, flush what the command printed, remove the temporary files of writes
    and checkpoint saves in progress (their targets stay as they were), and end the process
    at once."""
    report_stop(prog, signum)
    # loaded by any command that writes / saves checkpoints
    for name in ("jaxrl_pim.report", "jaxrl_pim.checkpoint"):
        writer = sys.modules.get(name)
        if writer is not None:
            with contextlib.suppress(Exception):
                writer.remove_in_flight()
    with contextlib.suppress(Exception):  # a write the signal interrupted may hold stdout
        sys.stdout.flush()
    os._exit(128 + signum)


def _on_signal(signum: int, frame: object) -> None:
    if _stopping["raise"]:
        raise Stopped(signum)
    _exit_stopped(str(_stopping["prog"]), signum)


def install_stop_handlers() -> None:
    """(Re)install the SIGTERM / SIGINT handlers of :func:`stop_on_signals`. Call it again
    after a library installed its own (``jax.distributed``'s preemption notifier takes
    SIGTERM over). Does nothing outside the main thread."""
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in _STOP_SIGNALS:
        signal.signal(signum, _on_signal)


@contextlib.contextmanager
def stop_on_signals(prog: str, grace_s: float = STOP_GRACE_S,
                    raise_stop: bool = False) -> Iterator[None]:
    """SIGTERM and Ctrl-C stop the command at any stage, with exit status 128 + the signal
    number and one line ``{prog}: stopped by SIGTERM`` (or SIGINT) on stderr.

    By default the handler ends the process at once (``os._exit``, after flushing stdout):
    an exception raised from a signal handler can land inside a callback that C++ code
    (jaxlib) made into Python, where it cannot propagate and aborts the process instead.
    Nothing is left half-written by this: checkpoints and reports are written atomically
    (a run may be killed at any moment). With ``raise_stop`` the handler raises
    :class:`Stopped` in the main thread instead, for a command that must clean up (the
    launcher stops its processes) and runs only Python code.

    Python runs signal handlers only between bytecodes, so a watchdog thread also sees each
    signal (:class:`_Watchdog`) and, if the process is still running ``grace_s`` seconds
    later, ends it the same way. Outside the main thread this does nothing. The previous
    handlers are restored on exit.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {signum: signal.getsignal(signum) for signum in _STOP_SIGNALS}
    watchdog = _Watchdog(prog, grace_s)
    saved = dict(_stopping)
    _stopping.update({"prog": prog, "reported": False, "raise": raise_stop})
    watchdog.start()
    install_stop_handlers()
    try:
        yield
    finally:
        watchdog.done.set()
        for signum, handler in previous.items():
            signal.signal(signum, handler if handler is not None else signal.SIG_DFL)
        watchdog.close()
        _stopping.clear()
        _stopping.update(saved)


class _Watchdog:
    """The thread of :func:`stop_on_signals` that sees each signal through
    ``signal.set_wakeup_fd`` (written by the C-level handler even while the main thread waits
    in XLA or in a blocking call) and ends the process ``grace_s`` seconds later unless
    :attr:`done` is set by then. Made in the main thread: it takes over the wakeup fd."""

    def __init__(self, prog: str, grace_s: float) -> None:
        self.prog, self.grace_s = prog, grace_s
        self.read_fd, self.write_fd = os.pipe()
        os.set_blocking(self.write_fd, False)
        self.old_wakeup = signal.set_wakeup_fd(self.write_fd, warn_on_full_buffer=False)
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._watch, name="jaxrl-pim-stop", daemon=True)

    def start(self) -> None:
        """Start watching."""
        self.thread.start()

    def _watch(self) -> None:
        try:
            while data := os.read(self.read_fd, 64):
                caught = [b for b in data if b in _STOP_SIGNALS]
                if not caught:
                    continue
                if self.done.wait(self.grace_s):  # the command stopped by itself in time
                    return
                _exit_stopped(self.prog, caught[-1])
        finally:
            os.close(self.read_fd)

    def close(self) -> None:
        """Give the wakeup fd back and end the thread (it reads end of file)."""
        signal.set_wakeup_fd(self.old_wakeup)
        os.close(self.write_fd)
        self.thread.join(timeout=1.0)
