"""What every benchmark script shares: the output convention and the results-file writer.

Each script in ``benchmarks/`` is run as ``python benchmarks/<name>.py [--quick] [--out DIR
| --publish]`` and follows one convention:

* ``--out DIR`` (default: a fresh folder ``out/<name>-<UTC time>/`` at the repository root,
  which git ignores) receives ``<name>[_quick].json`` and its ``.md`` table / ``.png`` plots;
  an existing results file there is never overwritten.
* ``--publish`` writes into the committed place instead, ``benchmarks/results/<device>/``
  (``cpu``, ``h100``, ``h200``, ``tpu-v5-lite``, ... from :func:`device_dir`), replacing the
  committed files of that name: the only way a committed result changes. It starts only on an
  idle machine (:func:`wait_until_idle`, in :func:`start` and :func:`record`).
* ``--quick`` runs reduced sizes (minutes) and names its files ``*_quick.*``.
* ``--smoke`` runs test sizes (seconds; the numbers mean nothing) and names its files
  ``*_smoke.*``: what the test suite runs to check that every script works end to end and
  writes a results file that passes the provenance checks. Never published.

A script defines ``summarize(report) -> dict`` at module level (no side effects on import)
so ``benchmarks/make_docs.py --check`` can recompute every committed summary, and writes its
file with :func:`write` (``jaxrl_pim.results_file.write_results`` under the hood). When its
Markdown table is a function of the stored report, it defines ``render_markdown(report) ->
str`` too and passes it as ``markdown=``: ``--check`` then also regenerates the ``.md`` from
the JSON file. Scripts import this module as ``harness`` (the script's folder is first on
``sys.path`` when it runs).

The measurement layer (use these; ``tests/benchmarks/test_layer.py`` checks that no script
writes its own): :func:`start` (options, XLA:CPU workarounds, provenance record),
:func:`mode_of` (the size mode), :func:`add_budget` and :class:`Budget`
(``--budget-s``), :func:`best_seconds` and :func:`seconds` (timers, on :mod:`jaxrl_pim.timing`),
:func:`copy_bandwidth` (the copy-bandwidth probe), :func:`device_time_per_call` (a
call's device-side time: K calls inside one jitted loop, dispatch excluded; :func:`looped`),
:func:`fmt` (the one number format of the ``.md`` tables), :func:`md_table` (a Markdown
table from rows) and :func:`write` with ``show=True`` (the results file, then its table on
standard output).

Every value a script derives from another run (another results file) is recomputed from that
file's records and the file is named in the results; nothing is copied from an earlier run
of the script itself. A time extrapolated from fewer episodes than the quoted workload is
marked in its record (``extrapolated_from_episodes``), and a summary key holding an
extrapolated or estimated value says so in its name.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import gc
import math
import os
import re
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from jaxrl_pim import provenance, results_file

ROOT = Path(__file__).resolve().parents[1]
#: ``jax.default_backend()`` names of accelerators (anything else is a CPU host).
ACCELERATORS = ("gpu", "cuda", "rocm", "tpu")
RESULTS = ROOT / "benchmarks" / "results"
SCRATCH = ROOT / "out"


def accelerator_folders(results: Path) -> list[str]:
    """The results folders of accelerators under ``results`` (every folder but ``cpu``;
    ``h100``, ``h200``, ...), sorted; what a ``gpu/<name>`` entry stands for."""
    if not results.is_dir():
        return []
    return sorted(p.name for p in results.iterdir() if p.is_dir() and p.name != "cpu")


def device_dir(backend: str | None = None, device_kind: str | None = None) -> str:
    """Folder name for a device: ``cpu``; ``h100`` / ``h200`` / ``a100`` for NVIDIA parts;
    a lower-case slug of the device kind otherwise (``tpu-v5-lite``). Defaults to jax's
    first device."""
    if backend is None or device_kind is None:
        import jax

        backend = backend or jax.default_backend()
        device_kind = device_kind or jax.devices()[0].device_kind
    if backend == "cpu":
        return "cpu"
    match = re.search(r"\b([A-Z]{1,3}\d{2,4}[A-Z]?)\b", device_kind)
    if "NVIDIA" in device_kind.upper() and match:
        return match.group(1).lower()
    return re.sub(r"[^a-z0-9]+", "-", device_kind.lower()).strip("-") or backend


def parser(doc: str | None) -> argparse.ArgumentParser:
    """An argument parser with the shared options (``--quick``, ``--out``, ``--publish``);
    the script's module docstring is its description."""
    p = argparse.ArgumentParser(
        description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    size = p.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true",
                      help="reduced sizes (minutes); files are named *_quick.* "
                           "(default: off, the full study)")
    size.add_argument("--smoke", action="store_true",
                      help="test sizes (seconds, numbers meaningless); files are named "
                           "*_smoke.* and cannot be published (default: off)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--out", type=Path, default=None, metavar="DIR",
                       help="folder for the results files (default: a fresh folder "
                            "out/<name>-<UTC time>/ that git ignores)")
    where.add_argument("--publish", action="store_true",
                       help="write into benchmarks/results/<device>/, replacing the "
                            "committed files of this name (default: off)")
    return p


def add_file_tag(p: argparse.ArgumentParser, tags: tuple[str, ...]) -> None:
    """``--file-tag TAG``: name the results file ``<name>_<TAG>[_quick].json``, for a second
    invocation of one script with other parts selected (the GPU suite runs a script's
    headline parts and, if time is left, its optional parts as separate files). The script
    lists its tags in a module-level ``FILE_TAGS`` so ``make_docs.py --check`` accepts the
    name."""
    p.add_argument("--file-tag", choices=tags, default=None,
                   help="write <name>_<TAG>.json instead of <name>.json (default: none)")


def add_parts(p: argparse.ArgumentParser, choices: Sequence[str], smoke: str,
              flag: str = "--parts") -> None:
    """``--parts NAME ...`` (or ``flag``, e.g. ``--sections``): which of the script's parts
    run; the others are absent from the results file. Default None: all (the script picks
    its ``--smoke`` subset, which ``smoke`` describes for the help)."""
    p.add_argument(flag, nargs="+", choices=choices, default=None,
                   help=f"{flag[2:]} to run; the others are absent from the file (default: "
                        f"all; --smoke: {smoke})")


def output_path(args: argparse.Namespace, name: str) -> Path:
    """Where ``<name>[_<file tag>][_quick].json`` goes under the convention above; refuses
    (ValueError) to overwrite an existing file unless ``--publish`` was given."""
    if getattr(args, "file_tag", None):
        name = f"{name}_{args.file_tag}"
    stem = name
    if getattr(args, "quick", False):
        stem = f"{name}_quick"
    if getattr(args, "smoke", False):
        stem = f"{name}_smoke"
        if getattr(args, "publish", False):
            raise ValueError("--smoke results are never published; use --out DIR")
    if getattr(args, "publish", False):
        folder = RESULTS / device_dir()
        state = provenance.git_state(ROOT / "benchmarks")
        if state["dirty"] or state["commit"] is None:
            print("warning: publishing from "
                  + ("outside a git checkout" if state["commit"] is None else
                     "uncommitted code (" + ", ".join(state["dirty_paths"][:5]) + ")")
                  + ": make_docs.py --check will reject this results file; commit first",
                  file=sys.stderr, flush=True)
    elif args.out is not None:
        folder = Path(args.out)
    else:
        stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%d-%H%M%S")
        folder = SCRATCH / f"{name}-{stamp}"
    path = folder / f"{stem}.json"
    if path.exists() and not getattr(args, "publish", False):
        raise ValueError(f"{path} exists; choose another --out folder (or --publish to "
                         "replace the committed results)")
    folder.mkdir(parents=True, exist_ok=True)
    return path


def write(
    path: Path,
    *,
    run: provenance.RunRecord,
    config: Any,
    results: dict[str, Any],
    timing_s: dict[str, Any],
    summarize: results_file.Summarize,
    markdown: str | Callable[[dict[str, Any]], str] | None = None,
    show: bool = False,
) -> dict[str, Any]:
    """Write the results file whole (``jaxrl_pim.results_file.write_results``) and say where.

    ``markdown`` is the ``.md`` table's text, or a function of the stored report (the
    script's ``render_markdown``) that makes it; with ``show`` that table is also printed."""
    out = results_file.write_results(path, run=run, config=config, results=results,
                                     timing_s=timing_s, summarize=summarize,
                                     markdown=markdown)
    print(f"wrote {path}" + (" and its .md table" if markdown is not None else ""))
    if show and callable(markdown):
        print(markdown(out))
    return out


def require_baseline(module: str) -> Any:
    """Import ``module`` (an opponent of a speed benchmark: ``flashbax``, ``jaxmarl``), or stop
    with an error naming the ``bench`` extra that installs it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise SystemExit(
            f"{module} is needed for this benchmark's baseline ({err}); install the "
            f"'bench' extra: python3 -m pip install -e \".[bench]\"") from err


# ---------------------------------------------------------------------------------------------
# The measurement layer.

MODES = ("full", "quick", "smoke")


#: Environment variable: the 1-minute load a ``--publish`` run waits for (a number), or
#: ``off``; default :func:`idle_load`.
IDLE_LOAD_ENV = "JAXRL_PIM_IDLE_LOAD"
#: Seconds a ``--publish`` run waits for an idle machine before it gives up.
IDLE_WAIT_S = 300.0


def idle_load(cpus: int | None = None) -> float:
    """The 1-minute load below which a machine of ``cpus`` cores (default: this one's) counts
    as idle for a published measurement: a quarter of its cores, at least 0.5 (0.5 on the
    2-core development machine: nothing else running beside the run)."""
    return max(0.5, 0.25 * (cpus or os.cpu_count() or 1))


def wait_until_idle(limit: float | None = None, wait_s: float = IDLE_WAIT_S,
                    load: Callable[[], float] = lambda: os.getloadavg()[0],
                    sleep: Callable[[float], Any] = time.sleep, poll_s: float = 5.0) -> float:
    """Wait until the 1-minute load is below ``limit`` (default :data:`IDLE_LOAD_ENV`, else
    :func:`idle_load`; ``off`` waits for nothing), polling every ``poll_s`` seconds for at
    most ``wait_s``; one line on stderr while it waits. Returns the load it started at;
    raises SystemExit with one line when the machine stays busy, so nothing is published
    from a loaded machine (the results file records the load at its start and end)."""
    setting = os.environ.get(IDLE_LOAD_ENV, "").strip().lower()
    if limit is None and setting == "off":
        return load()
    if limit is None:
        limit = float(setting) if setting else idle_load()
    waited, now = 0.0, load()
    if now >= limit:
        print(f"waiting for an idle machine: 1-minute load {now:.2f}, publishing below "
              f"{limit:.2f} (at most {wait_s:.0f} s; {IDLE_LOAD_ENV} sets the bound)",
              file=sys.stderr, flush=True)
    while now >= limit:
        if waited >= wait_s:
            raise SystemExit(f"not published: the 1-minute load stayed at or above {limit:.2f} "
                             f"for {wait_s:.0f} s (now {now:.2f}); stop what else runs and "
                             "publish again")
        sleep(poll_s)
        waited += poll_s
        now = load()
    return now


def start(p: argparse.ArgumentParser, argv: list[str] | None, script: str,
          cpu_workarounds: bool = True) -> tuple[argparse.Namespace, provenance.RunRecord, str]:
    """The opening of a script's ``main``: parse the options, apply the XLA:CPU workarounds
    (:func:`jaxrl_pim.xla_env.apply_cpu_workarounds`, before anything compiles; unless
    ``cpu_workarounds`` is false), with ``--publish`` wait for an idle machine
    (:func:`wait_until_idle`), and start the run's provenance record (``script`` is the
    script's ``__file__``, named in the command when ``argv`` is given). Returns ``(args,
    run, mode)``."""
    from jaxrl_pim.xla_env import apply_cpu_workarounds

    args = p.parse_args(argv)
    if cpu_workarounds:
        apply_cpu_workarounds()
    return args, record(args, None if argv is None else [script, *argv]), mode_of(args)


def record(args: argparse.Namespace, command: list[str] | None = None) -> provenance.RunRecord:
    """The run's provenance record (``command``: the script and its options when called with
    ``argv``, else ``sys.argv``), started after :func:`wait_until_idle` when the run
    publishes, so the load it records at its start is the idle machine's."""
    if getattr(args, "publish", False):
        wait_until_idle()
    return provenance.RunRecord(command)


def mode_of(args: argparse.Namespace) -> str:
    """The size mode the options select: ``"smoke"``, ``"quick"`` or ``"full"``."""
    if getattr(args, "smoke", False):
        return "smoke"
    return "quick" if getattr(args, "quick", False) else "full"


def add_budget(p: argparse.ArgumentParser, what: str = "piece of work") -> None:
    """``--budget-s SECONDS``: no further ``what`` starts once that many seconds have passed
    (the GPU suite sets it so a script writes its file before its time is up)."""
    p.add_argument("--budget-s", type=float, default=None,
                   help=f"seconds after which no further {what} starts (what was not run is "
                        "named in the file; default: none)")


class Budget:
    """Seconds left of ``--budget-s`` (None: no limit), counted from construction."""

    def __init__(self, seconds: float | None) -> None:
        self.start, self.seconds = time.perf_counter(), seconds

    def left(self) -> float:
        """Seconds left (``inf`` without a limit)."""
        if self.seconds is None:
            return math.inf
        return self.seconds - (time.perf_counter() - self.start)

    def spent(self) -> bool:
        """Whether no further piece of work may start."""
        return self.left() <= 0


def best_seconds(call: Callable[[Any], Any], inputs: Sequence[Any], warmup: int = 2) -> float:
    """Best wall seconds of ``call(x)`` (its result blocked) over ``inputs[warmup:]``, after
    ``warmup`` calls on the first inputs (compile, first donation): the best-of timer of
    :func:`jaxrl_pim.timing.time_call`, fed one input per call."""
    from jaxrl_pim.timing import time_call

    if len(inputs) <= warmup:
        raise ValueError(f"best_seconds needs more than {warmup} inputs, got {len(inputs)}")
    it = iter(inputs)
    return time_call(lambda: call(next(it)), repeats=len(inputs) - warmup, warmup=warmup)


def seconds(call: Callable[[], Any]) -> float:
    """Wall seconds of one ``call()``, its result blocked (for runs whose every round is
    recorded; :func:`jaxrl_pim.timing.time_call` with one repeat and no warm-up)."""
    from jaxrl_pim.timing import time_call

    return time_call(call, repeats=1, warmup=0)


def copy_bandwidth(nbytes: int, repeats: int = 5) -> dict[str, float]:
    """Read + write bytes per second of copying ``nbytes`` into existing memory (no fresh
    allocation, whose page faults would be counted otherwise): NumPy ``copyto`` and an XLA
    copy into a donated buffer, best of ``repeats`` each; ``best_B_per_s`` is the larger.
    Returns ``{"bytes", "numpy_copyto_B_per_s", "xla_copy_B_per_s", "best_B_per_s"}``."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    from jaxrl_pim.timing import time_call

    n = max(1, nbytes // 4)
    arrays = {"src": np.ones(n, np.float32)}
    arrays["dst"] = np.empty_like(arrays["src"])
    t_np = time_call(lambda: np.copyto(arrays["dst"], arrays["src"]), repeats=repeats,
                     warmup=1)
    arrays = {"x": jnp.ones((n,), jnp.float32)}  # the NumPy pair is freed first
    copy = jax.jit(lambda v, out: out.at[...].set(v * 1.0), donate_argnums=1)
    arrays["out"] = jax.block_until_ready(copy(arrays["x"], jnp.zeros_like(arrays["x"])))

    def again() -> Any:
        arrays["out"] = copy(arrays["x"], arrays["out"])
        return arrays["out"]

    t_xla = time_call(again, repeats=repeats, warmup=0)
    arrays.clear()
    gc.collect()
    res = {"bytes": 4 * n, "numpy_copyto_B_per_s": 8 * n / t_np,
           "xla_copy_B_per_s": 8 * n / t_xla}
    res["best_B_per_s"] = max(res["numpy_copyto_B_per_s"], res["xla_copy_B_per_s"])
    return res


def fmt(x: Any, spec: str = ".3g", missing: str = "", scale: float = 1.0) -> str:
    """One cell of a results table: ``missing`` for None, ``yes`` / ``no`` for a bool,
    ``format(x * scale, spec)`` for a number, ``str(x)`` otherwise."""
    if x is None:
        return missing
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int | float):
        return format(x * scale if scale != 1.0 else x, spec)
    return str(x)


def md_table(header: Sequence[str], rows: Iterable[Sequence[Any]],
             align: Sequence[str] | None = None) -> list[str]:
    """The lines of a Markdown table: ``header``, a separator (``align`` per column: ``""``
    left as written, ``":"`` right, default all ``""``) and one line per row (cells as
    given, already formatted)."""
    seps = ["---" + (a or "") for a in (align or [""] * len(header))]
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(seps) + "|"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return out


# ---------------------------------------------------------------- device-side time per call

#: Largest K0 (the short program whose time is subtracted) and K of the device-side timer.
K0_MAX, K_MAX = 16, 1 << 20
#: The most ``K`` of the device-side timer grows in one step (its program's time grows about
#: as much: a bad estimate of the time per call costs at most this factor).
K_GROWTH = 16


def looped(fn: Any, k: int) -> Any:
    """A jitted ``program(held, x)`` calling ``fn(held, x)`` ``k`` times in one
    ``lax.fori_loop``, each call's observations ``x + 0 * out[:, :1]`` of the previous
    output (a float ``0 *`` XLA keeps), returning the last observations. The parameters
    pass an optimization barrier with the observations on every trip, so work on them alone
    (an int8 kernel's conversion) is redone per call as in one call, not hoisted."""
    import jax

    def program(held: Any, x: Any) -> Any:
        def body(_: Any, xi: Any) -> Any:
            h, xi = jax.lax.optimization_barrier((held, xi))  # no hoisting of weight work
            out = fn(h, xi)
            return xi + 0 * out.reshape(out.shape[0], -1)[:, :1].astype(xi.dtype)

        return jax.lax.fori_loop(0, k, body, x)

    return jax.jit(program)


def device_time_per_call(fn: Any, held: Any, x: Any, *, repeats: int, loop_s: float,
                         upper_s: float) -> dict[str, Any]:
    """Device-side seconds per call of ``fn(held, x)``: ``(T(K) - T(K0)) / (K - K0)``, each
    ``T`` the best of ``repeats`` runs of a :func:`looped` program. ``upper_s`` (a time per
    call at least the device's: the dispatch-included one) sizes ``K0``; ``K`` starts at
    ``loop_s * K0 / T(K0)`` and grows (one compile each) until ``T(K) - T(K0)`` is
    ``loop_s / 4`` or more, the last estimate of the time per call aiming it at ``loop_s``;
    ``T(K0)`` is retimed beside each ``T(K)`` (a hiccup in its first timing, larger than
    ``T(K)``, would leave no difference to size ``K`` from), and ``K`` grows at most
    :data:`K_GROWTH` times a step."""
    import jax

    from jaxrl_pim.timing import time_call

    k0 = int(min(K0_MAX, max(1, loop_s / (16 * max(upper_s, 1e-9)))))
    t = time.perf_counter()
    short = looped(fn, k0)
    jax.block_until_ready(short(held, x))
    compile_s = time.perf_counter() - t
    t_k0 = time_call(lambda: short(held, x), repeats=max(1, repeats), warmup=0)
    k = int(min(K_MAX, max(4 * k0, loop_s * k0 / max(t_k0, 1e-9))))
    while True:
        long = looped(fn, k)
        t_k = time_call(lambda long=long: long(held, x), repeats=1, warmup=1)  # sizes K
        t_k0 = min(t_k0, time_call(lambda: short(held, x), repeats=1, warmup=0))
        if t_k - t_k0 >= loop_s / 4 or k >= K_MAX:
            break
        aim = loop_s * (k - k0) / (t_k - t_k0) if t_k > t_k0 else K_MAX
        k = int(min(K_MAX, K_GROWTH * k, max(4 * k, aim)))
    t_k = min(t_k, time_call(lambda: long(held, x), repeats=max(1, repeats), warmup=0))
    per = (t_k - t_k0) / (k - k0)
    return {"device_seconds_per_call": per if per > 0 else t_k / k,
            "device_calls": k, "device_calls_short": k0, "device_program_s": t_k,
            "device_short_program_s": t_k0, "device_compile_s": compile_s}
