"""The ``sweep`` section of ``benchmarks/tabular_gpu.py``: the ``pallas_lane`` kernel's two
speed knobs, lanes per program (``lanes_per_block``) x prefetch depth
(``pallas_gpu.DEFAULT_PREFETCH``, the register queue; set for the trace of each point), on
the frozenlake inputs; the point with the smallest summed run time over the swept variants
is the device's best (summary ``sweep_best_*``, next to the defaults' ``sweep_default_*``).
The script's docstring describes the section; this module runs it (with the script's
``measure``), summarises it and draws its table.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable, Iterator
from typing import Any


@contextlib.contextmanager
def prefetch_depth(depth: int) -> Iterator[None]:
    """Trace the ``pallas_lane`` kernel with ``depth`` steps of prefetch (the module default
    is read when the kernel is traced, so every trace inside this block uses it)."""
    from jaxrl_pim.tabular import pallas_gpu

    old = pallas_gpu.DEFAULT_PREFETCH
    pallas_gpu.DEFAULT_PREFETCH = depth
    try:
        yield
    finally:
        pallas_gpu.DEFAULT_PREFETCH = old


def lowers_for_cuda(variant: str, lanes: int, rows_per_lane: int, lanes_per_block: int,
                    prefetch: int) -> bool | str:
    """Whether the ``pallas_lane`` kernel at this sweep point lowers for ``cuda`` (checked
    on any host: Pallas builds the Triton IR inside JAX); True or the first error line."""
    import functools

    import jax
    import jax.numpy as jnp

    from jaxrl_pim.tabular import TabularConfig
    from jaxrl_pim.tabular.lanes import LaneDraws
    from jaxrl_pim.tabular.pallas_gpu import run_episodes_lane

    algo, sampling, dtype = variant.split("-")
    spec = TabularConfig(16, 4, algo=algo, sampling=sampling, dtype=dtype).lane_spec()
    q = jax.ShapeDtypeStruct((lanes, 16, 4), spec.fmt.storage)
    rows = jax.ShapeDtypeStruct((rows_per_lane, lanes, 2), jnp.int32)
    run = functools.partial(run_episodes_lane, spec, num_episodes=2, interpret=False,
                            platform="gpu", lanes_per_block=lanes_per_block, prefetch=prefetch)
    try:
        draws = LaneDraws(jax.random.split(jax.random.key(0), lanes),
                          jnp.zeros((lanes,), jnp.uint32), jnp.int32(0))
        traced = jax.jit(run).trace(q, rows, draws)
        text = traced.lower(lowering_platforms=("cuda",)).as_text()
    except Exception as err:  # noqa: BLE001 - a rejected lowering is the result
        return f"{type(err).__name__}: {str(err).splitlines()[0][:200] if str(err) else ''}"
    return True if "triton" in text else "no Triton call in the lowered module"


def sweep(m: dict, chunks, episodes: int, repeats: int,
          stop: Callable[[int, int], bool] | None = None, *, measure: Callable,
          lowers: Callable = lowers_for_cuda) -> list[dict]:
    """The lanes-per-program x prefetch-depth grid of ``pallas_lane`` on ``chunks`` (the
    sizes in ``m``, ``tabular_gpu.MODES``), each point's record from ``measure`` (the
    script's; ``lowers``: the check of each point on a CPU host).

    Point by point, the library's default point first, every swept variant at each point, so
    that a run cut short by ``stop(points_done, points)`` (asked before each point after the
    first; the ``--budget-s`` check) holds whole points, the defaults among them."""
    import jax

    from jaxrl_pim.tabular.pallas_gpu import DEFAULT_PREFETCH, lane_block

    lanes = int(chunks.shape[0])
    default_bl = lane_block(0, 16 * 4, lanes)
    points = sorted(itertools.product(m["sweep_lanes_per_block"], m["sweep_prefetch"]),
                    key=lambda p: p != (default_bl, DEFAULT_PREFETCH))
    out = []
    for i, (bl, depth) in enumerate(points):
        if i and stop is not None and stop(i, len(points)):
            break
        for variant in m["sweep_variants"]:
            kw = dict(num_states=16, num_actions=4, num_cores=lanes,
                      sync_period=m["sync"], num_episodes=episodes, lanes_per_block=bl)
            with prefetch_depth(depth):
                rec, _ = measure("sweep", "frozenlake", variant, "pallas_lane", kw, chunks,
                                 repeats)
            rec.update(lanes_per_block=bl, prefetch=depth,
                       is_default=bl == default_bl and depth == DEFAULT_PREFETCH)
            if jax.default_backend() == "cpu":
                rec["lowers_for_cuda"] = lowers(variant, lanes, int(chunks.shape[1]), bl,
                                                depth)
            out.append(rec)
    return out


def sweep_summary(rows: list[dict]) -> dict[str, Any]:
    """The sweep's best point (smallest run time summed over the swept variants; points
    where any variant failed or did not run are out) and the library defaults' point, as
    summary keys."""
    totals: dict[tuple[int, int], list[float]] = {}
    for r in rows:
        totals.setdefault((r["lanes_per_block"], r["prefetch"]), []).append(r.get("run_s"))
    whole = max((len(v) for v in totals.values()), default=0)  # every swept variant ran
    ok = {k: sum(v) for k, v in totals.items()
          if len(v) == whole and all(t is not None for t in v)}
    defaults = next((r for r in rows if r.get("is_default")), None)
    out: dict[str, Any] = {"sweep_best_lanes_per_block": None, "sweep_best_prefetch": None,
                           "sweep_best_run_s_sum": None,
                           "sweep_default_lanes_per_block": None if defaults is None else
                           defaults["lanes_per_block"],
                           "sweep_default_prefetch": None if defaults is None else
                           defaults["prefetch"],
                           "sweep_default_run_s_sum": None}
    if ok:
        best = min(ok, key=ok.get)
        out.update(sweep_best_lanes_per_block=best[0], sweep_best_prefetch=best[1],
                   sweep_best_run_s_sum=ok[best])
    if defaults is not None:
        out["sweep_default_run_s_sum"] = ok.get((defaults["lanes_per_block"],
                                                 defaults["prefetch"]))
    return out


def sweep_table(rows: list[dict]) -> list[str]:
    lines = ["### sweep", "", "| variant | lanes per program | prefetch | default | compile s | "
             "run s | ns/step | lowers for cuda |", "|" + "---|" * 8]
    for r in rows:
        cuda = r.get("lowers_for_cuda")
        cuda = "" if cuda is None else ("yes" if cuda is True else f"no: {cuda[:60]}")
        head = (f"| {r['variant']} | {r['lanes_per_block']} | {r['prefetch']} | "
                f"{'yes' if r.get('is_default') else ''} | ")
        if r.get("error"):
            lines.append(head + f"failed: {r['error'][:80]} | | | {cuda} |")
            continue
        lines.append(head + f"{r['compile_s']:.1f} | {r['run_s']:.4g} | "
                     f"{r['ns_per_dependent_step']:.1f} | {cuda} |")
    return lines + [""]
