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


def _check_parents(path: Path, flag: str) -> None:
    """The folders above ``path`` can hold it: the nearest existing one is a folder and
    writable (the missing ones below it are created)."""
    above = _nearest_existing(path.parent if path.parent != path else path)
    if not above.is_dir():
        raise ValueError(f"{flag} {path}: {above} is a file, not a folder")
    if not os.access(above, os.W_OK | os.X_OK):
        raise ValueError(f"{flag} {path}: the folder {above} is not writable")


def check_output_file(path: str | os.PathLike[str] | None, flag: str) -> None:
    """Refuses (ValueError, one line naming ``flag``) an output file path that cannot be
    written: a folder where the file is wanted, a parent that is a file, a folder that is not
    writable. None (the option not given) passes. Called before any work, so a bad path never
    costs a run's results."""
    if path is None:
        return
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{flag} {path}: is a folder; give a file name")
    _check_parents(path, flag)


def check_output_folder(path: str | os.PathLike[str] | None, flag: str) -> None:
    """Refuses (ValueError, one line naming ``flag``) an output folder that cannot be used:
    a file at its path, a parent that is a file, a folder (or the nearest existing one above
    it) that is not writable. None passes."""
    if path is None:
        return
    path = Path(path)
    if path.exists():
        if not path.is_dir():
            raise ValueError(f"{flag} {path}: is a file, not a folder")
        if not os.access(path, os.W_OK | os.X_OK):
            raise ValueError(f"{flag} {path}: the folder is not writable")
        return
    _check_parents(path, flag)


def check_outputs(args: argparse.Namespace, *, files: Mapping[str, str] = {},  # noqa: B006
                  folders: Mapping[str, str] = {}) -> None:  # noqa: B006
    """Checks every output path of a command before any work: ``files`` and ``folders`` map
    a flag (``--json``) to the attribute of ``args`` that holds its value (``json``)."""
    for flag, attr in files.items():
        check_output_file(getattr(args, attr, None), flag)
    for flag, attr in folders.items():
        check_output_folder(getattr(args, attr, None), flag)


def in_flag_names(message: str, flags: Mapping[str, str]) -> str:
    """``message`` with each config field named by the flag the user typed: ``flags`` maps a
    field (``num_episodes``) to its flag (``--episodes``); whole words only, and not a part
    of a dotted path (``config.batch_size`` in a fingerprint difference stays)."""
    for field, flag in flags.items():
        message = re.sub(rf"(?<![\w.-]){re.escape(field)}(?!\w|\.\w)", flag, message)
    return message


@contextlib.contextmanager
def flag_names(flags: Mapping[str, str]) -> Iterator[None]:
    """Re-raises a ValueError of the block (a config's check) with its fields named by the
    command's flags (:func:`in_flag_names`)."""
    try:
        yield
    except ValueError as err:
        raise ValueError(in_flag_names(str(err), flags)) from None


def add_checkpoint_arguments(parser: argparse.ArgumentParser | argparse._ArgumentGroup, *,
                             folder: str, unit: str, period: str, resume: str) -> None:
    """Adds ``--checkpoint DIR``, ``--checkpoint-every UNIT`` and ``--resume``, the checkpoint
    options every training command takes (checked by :func:`check_checkpoint_arguments`).
    ``folder``, ``period`` and ``resume`` are the help texts (each saying its default),
    ``unit`` the metavar of the period (``ROUNDS``, ``EPISODES``, ``STEPS``)."""
    parser.add_argument("--checkpoint", type=Path, default=None, metavar="DIR", help=folder)
    parser.add_argument("--checkpoint-every", type=int, default=None, metavar=unit, help=period)
    parser.add_argument("--resume", action="store_true", help=resume)


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
    in progress (their targets stay as they were), and end the process at once."""
    report_stop(prog, signum)
    writer = sys.modules.get("jaxrl_pim.report")  # loaded by any command that writes
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
    signal (through ``signal.set_wakeup_fd``, written by the C-level handler even while the
    main thread waits in XLA or in a blocking call) and, if the process is still running
    ``grace_s`` seconds later, ends it the same way. Outside the main thread this does
    nothing. The previous handlers are restored on exit.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {signum: signal.getsignal(signum) for signum in _STOP_SIGNALS}
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    old_wakeup = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    saved = dict(_stopping)
    _stopping.update({"prog": prog, "reported": False, "raise": raise_stop})
    done = threading.Event()

    def watchdog() -> None:
        try:
            while data := os.read(read_fd, 64):
                caught = [b for b in data if b in _STOP_SIGNALS]
                if not caught:
                    continue
                if done.wait(grace_s):  # the command stopped by itself in time
                    return
                _exit_stopped(prog, caught[-1])
        finally:
            os.close(read_fd)

    thread = threading.Thread(target=watchdog, name="jaxrl-pim-stop", daemon=True)
    thread.start()
    install_stop_handlers()
    try:
        yield
    finally:
        done.set()
        for signum, handler in previous.items():
            signal.signal(signum, handler if handler is not None else signal.SIG_DFL)
        signal.set_wakeup_fd(old_wakeup)
        os.close(write_fd)  # the watchdog reads end of file and ends
        thread.join(timeout=1.0)
        _stopping.clear()
        _stopping.update(saved)
