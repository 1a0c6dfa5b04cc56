"""How far a projection moves when each unverified cost of the model varies over a stated
plausible range, and what a projection's largest phase depends on. Pure host code (no JAX).

Every parameter of the UPMEM presets is one of four kinds:

* **checked** against a released measurement or the hardware's documentation: the clock and
  core count (SwiftRL's setup), the pipeline rule and the int32, float and double ADD costs
  (PrIM's released profiles, ``tests/test_pim.py``), WRAM and DMA block sizes (UPMEM SDK),
  one tasklet (SwiftRL's released binary). Not varied.
* **as read** from a paper's figure with no released measurement behind it: the emulated
  multiply and divide costs, the MRAM latencies and per-byte cost, the host transfer rates.
  Varied from half to twice their value (:data:`FACTORS`).
* **assumed** with no source: the compare and conversion costs. Varied from a third to three
  times.
* **calibrated** on a published figure: the kernel overhead and the host's averaging are
  fitted again at every point (their figures keep them pinned); the host-call latency, whose
  value no measurement confirms, is varied from a third to three times its fitted value with
  the other two fitted again (its FrozenLake share then becomes a prediction).

One parameter moves at a time (:data:`UNCERTAIN`); :func:`presets_at` gives the fitted presets
at one end of one range and :func:`bands` the range of any prediction over every end.

What a projection depends on: :func:`phase_terms` splits each phase of
:func:`~jaxrl_pim.pim.model.estimate` into the parameters its seconds come from (the names
:data:`UNCERTAIN` uses), :func:`largest_phase` names the largest phase and its main
parameter, and :func:`projection_notes` writes the lines ``--pim-estimate`` prints under its
table.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from typing import Any

from jaxrl_pim.pim.model import (
    TRANSFER_PHASES,
    OpCosts,
    PIMSystem,
    Transfer,
    dma_per_update,
    estimate,
    update_instructions,
)
from jaxrl_pim.pim.presets import (
    CALIBRATED,
    SWIFTRL_BASE,
    SYSTEMS,
    UPMEM_BASE,
    calibrated_presets,
)
from jaxrl_pim.tabular.config import TabularConfig


def _transfer_terms(t: Transfer, num_dpus: int, bytes_per_dpu: float,
                    dpus_per_rank: int) -> dict[str, float]:
    """:func:`transfer_seconds` split into its latency term (``host_latency_s``) and its
    bytes term (``<mode>_bytes_per_s``), seconds."""
    if num_dpus <= 0 or bytes_per_dpu <= 0:
        return {}
    n = num_dpus if t.mode == "serial" else 1
    moved = (num_dpus if t.mode == "serial" else min(num_dpus, dpus_per_rank)) * bytes_per_dpu
    return {"host_latency_s": n * t.calls * t.latency_s,
            f"{t.mode}_bytes_per_s": moved / t.bytes_per_s}


def _add(into: dict[str, float], terms: Mapping[str, float], scale: float = 1.0) -> None:
    for k, v in terms.items():
        into[k] = into.get(k, 0.0) + scale * v


def phase_terms(config: TabularConfig, num_rows: int,
                system: PIMSystem) -> dict[str, dict[str, float]]:
    """Each phase of :func:`estimate` split into the parameters its seconds come from:
    ``{phase: {parameter: seconds}}``, the terms of a phase summing to its seconds.

    kernel: ``ops.<operation>`` (that operation's instructions per update, every use of it),
    ``update_overhead_instructions``, ``dma_latency_cycles`` (read and write fixed costs) and
    ``dma_cycles_per_byte``; with several tasklets only the side (compute or DMA) that sets the
    cycles. Transfers and sync: ``host_latency_s`` (the calls' latencies), ``serial_bytes_per_s``
    / ``parallel_bytes_per_s`` / ``broadcast_bytes_per_s`` (the bytes at each mode's rate) and
    ``host_average_s_per_entry`` (the host's averaging). The names are those
    :mod:`~jaxrl_pim.pim.sensitivity` varies. Instructions are linear in the operation
    costs, so an operation's share is its count (the instructions added by one more
    instruction per use) times its cost."""
    est = estimate(config, num_rows, system)
    w = est.work
    seconds_per_cycle = w["updates_per_dpu"] / system.frequency_hz
    prec = system.literal_precision
    base = sum(update_instructions(config, system.ops, prec).values())
    per_op = {}
    for f in dataclasses.fields(OpCosts):
        cost = getattr(system.ops, f.name)
        more = dataclasses.replace(system.ops, **{f.name: cost + 1.0})
        count = sum(update_instructions(config, more, prec).values()) - base
        if count and cost:
            per_op[f"ops.{f.name}"] = count * cost
    if system.update_overhead_instructions:
        per_op["update_overhead_instructions"] = system.update_overhead_instructions
    t = system.tasklets
    issue = max(system.pipeline_depth / t, 1.0)
    dma = dma_per_update(config, system)
    fixed, per_byte = dma["fixed_cycles"], dma["cycles"] - dma["fixed_cycles"]
    kernel: dict[str, float] = {}
    compute_side = t == 1 or w["compute_cycles_per_update"] >= per_byte + fixed / t
    if compute_side:
        _add(kernel, per_op, issue * seconds_per_cycle)
    if t == 1 or not compute_side:
        _add(kernel, {"dma_latency_cycles": fixed / t, "dma_cycles_per_byte": per_byte},
             seconds_per_cycle)
    used, r = w["dpus_used"], system.dpus_per_rank
    t_in = _transfer_terms(system.transfer_in, used, w["bytes_in_per_dpu"], r)
    t_out = _transfer_terms(system.transfer_out, used, w["bytes_out_per_dpu"], r)
    sync: dict[str, float] = {}
    rounds = w["sync_rounds"]
    _add(sync, _transfer_terms(system.sync_gather, used, w["bytes_out_per_dpu"], r), rounds)
    _add(sync, _transfer_terms(system.sync_broadcast, used, w["table_bytes"], r), rounds)
    if rounds and w["sync_average_s_per_round"]:
        sync["host_average_s_per_entry"] = rounds * w["sync_average_s_per_round"]
    return {"transfer_in": t_in, "kernel": kernel, "sync": sync, "transfer_out": t_out}


def largest_phase(config: TabularConfig, num_rows: int, system: PIMSystem) -> dict[str, Any]:
    """The phase that takes the most of :func:`estimate`'s total and the parameter it depends
    on most: ``phase``, ``share`` (of the total), ``parameter`` (a :func:`phase_terms` name)
    and ``parameter_share`` (of the phase)."""
    est = estimate(config, num_rows, system)
    phase = max(("transfer_in", "kernel", "sync", "transfer_out"), key=est.share)
    terms = phase_terms(config, num_rows, system)[phase]
    name = max(terms, key=terms.get) if terms else ""
    seconds = getattr(est, phase)
    return {"phase": phase, "share": est.share(phase), "parameter": name,
            "parameter_share": terms.get(name, 0.0) / seconds if seconds else 0.0}


#: The factor range of each kind of unverified parameter (low, high), on the preset's value.
FACTORS: dict[str, tuple[float, float]] = {"as read": (0.5, 2.0), "assumed": (1 / 3, 3.0),
                                           "calibrated": (1 / 3, 3.0)}


@dataclasses.dataclass(frozen=True)
class Uncertain:
    """One unverified parameter and its plausible range.

    Attributes:
      name: the parameter (``ops.<operation>``, ``dma_latency_cycles`` for the read and write
        fixed costs, ``dma_cycles_per_byte``, ``<mode>_bytes_per_s`` for every transfer of that
        mode, ``host_latency_s`` for every phase's call latency).
      kind: ``"as read"``, ``"assumed"`` or ``"calibrated"`` (its range from :data:`FACTORS`).
      reason: where the value comes from and why it is not checked.
    """

    name: str
    kind: str
    reason: str

    @property
    def low(self) -> float:
        """The range's low end, a factor on the preset's value."""
        return FACTORS[self.kind][0]

    @property
    def high(self) -> float:
        """The range's high end, a factor on the preset's value."""
        return FACTORS[self.kind][1]


_READ = "PrIM's arithmetic-throughput figure as read; no released profile"
UNCERTAIN: tuple[Uncertain, ...] = (
    Uncertain("ops.fp64_mul", "as read", f"{_READ} (double MUL 0.53 MOPS)"),
    Uncertain("ops.fp_mul", "as read", f"{_READ} (float MUL 1.91 MOPS)"),
    Uncertain("ops.int_mul", "as read", f"{_READ} (int32 MUL 10.27 MOPS)"),
    Uncertain("ops.int_div", "as read", f"{_READ} (int32 DIV 11.27 MOPS)"),
    Uncertain("ops.fp64_compare", "assumed", "assumed to cost a double add; not measured"),
    Uncertain("ops.fp_compare", "assumed", "assumed to cost a float add; not measured"),
    Uncertain("ops.cvt_int_fp", "assumed", "assumed 20 instructions; not measured"),
    Uncertain("ops.cvt_fp_fp", "assumed", "assumed 20 instructions; not measured"),
    Uncertain("dma_latency_cycles", "as read",
              "PrIM's MRAM read and write latencies (77, 61 cycles) as read"),
    Uncertain("dma_cycles_per_byte", "as read",
              "PrIM's 0.5 cycles per byte as read (SwiftRL's Table 1 gives the same rate)"),
    Uncertain("serial_bytes_per_s", "as read", "PrIM's serial CPU-DPU rate as read"),
    Uncertain("parallel_bytes_per_s", "as read", "PrIM's parallel per-rank rates as read"),
    Uncertain("broadcast_bytes_per_s", "as read", "PrIM's broadcast per-rank rate as read"),
    Uncertain("host_latency_s", "calibrated",
              "fitted on FrozenLake Q-STR-INT32's transfer-in share; no host call measured"),
)

#: How the parameters :data:`UNCERTAIN` does not vary are known, by name.
KNOWN: dict[str, str] = {
    "ops.int_add": "checked: PrIM's released INT32 ADD profile",
    "ops.fp_add": "checked: PrIM's released FLOAT ADD profile",
    "ops.fp64_add": "checked: PrIM's released DOUBLE ADD profile",
    "ops.load": "native: one instruction", "ops.store": "native: one instruction",
    "ops.int_compare": "native: one instruction",
    "update_overhead_instructions": "calibrated on the 2,000-agent kernel time",
    "host_average_s_per_entry": "calibrated on Taxi Q-SEQ-INT32's sync share",
}


def scaled(system: PIMSystem, name: str, factor: float) -> PIMSystem:
    """``system`` with the parameter ``name`` (an :class:`Uncertain` name) times ``factor``."""
    if name.startswith("ops."):
        op = name[4:]
        ops = dataclasses.replace(system.ops, **{op: getattr(system.ops, op) * factor})
        return dataclasses.replace(system, ops=ops)
    if name == "dma_latency_cycles":
        return dataclasses.replace(
            system, dma_latency_cycles=system.dma_latency_cycles * factor,
            dma_write_latency_cycles=system.dma_write_latency_cycles * factor)
    if name == "dma_cycles_per_byte":
        return dataclasses.replace(system, dma_cycles_per_byte=system.dma_cycles_per_byte * factor)
    if name == "host_latency_s":
        return dataclasses.replace(system, **{
            p: dataclasses.replace(t, latency_s=t.latency_s * factor)
            for p in TRANSFER_PHASES if (t := getattr(system, p))})
    if name.endswith("_bytes_per_s"):
        mode = name[:-len("_bytes_per_s")]
        return dataclasses.replace(system, **{
            p: dataclasses.replace(t, bytes_per_s=t.bytes_per_s * factor)
            for p in TRANSFER_PHASES if (t := getattr(system, p)).mode == mode})
    raise ValueError(f"unknown parameter {name!r}")


@functools.cache
def presets_at(name: str, factor: float) -> dict[str, PIMSystem]:
    """Every preset with ``name`` times ``factor`` and the calibration fitted again (for
    ``host_latency_s``: the latency held at ``factor`` times its fitted value, the other two
    fitted). ``hbm-pim`` and ``ideal`` are bounds with their own assumptions: unchanged."""
    if name == "host_latency_s":
        _, fitted = calibrated_presets(host_latency_s=factor * CALIBRATED["host_latency_s"])
    else:
        _, fitted = calibrated_presets(scaled(SWIFTRL_BASE, name, factor),
                                       scaled(UPMEM_BASE, name, factor))
    return {**SYSTEMS, **fitted}


def bands(predict: Callable[[Mapping[str, PIMSystem]], Mapping[str, float | None]],
          ) -> dict[str, dict[str, Any] | None]:
    """Every prediction's range over every end of every :data:`UNCERTAIN` range, one
    parameter at a time. ``predict`` maps the presets by name to named values; each name gets
    ``value`` (at the presets), ``low`` and ``high`` (over all ends and the value),
    ``by_parameter`` (parameter -> ``[at its low end, at its high end]``) and ``widest`` (the
    parameter that moves it most), or None where the value is None."""
    base = predict(SYSTEMS)
    ends = {u.name: (predict(presets_at(u.name, u.low)), predict(presets_at(u.name, u.high)))
            for u in UNCERTAIN}
    out: dict[str, dict[str, Any] | None] = {}
    for key, value in base.items():
        if value is None:
            out[key] = None
            continue
        by = {p: [lo[key], hi[key]] for p, (lo, hi) in ends.items()}
        every = [v for pair in by.values() for v in pair] + [value]
        widest = max(by, key=lambda p: abs(by[p][1] - by[p][0]))
        if max(every) - min(every) <= 1e-9 * abs(value):
            widest = None  # no range moves it
        out[key] = {"value": value, "low": min(every), "high": max(every), "by_parameter": by,
                    "widest": widest}
    return out


def band(predict: Callable[[Mapping[str, PIMSystem]], float | None]) -> dict[str, Any] | None:
    """One prediction's range, as :func:`bands` gives it (``predict`` maps the presets by
    name to one value)."""
    return bands(lambda systems: {"x": predict(systems)})["x"]


def _value(system: PIMSystem, name: str) -> float | None:
    """The preset's value of an :data:`UNCERTAIN` parameter (None: no transfer of that mode)."""
    if name.startswith("ops."):
        return getattr(system.ops, name[4:])
    if name.endswith("_bytes_per_s"):
        rates = [getattr(system, p).bytes_per_s for p in TRANSFER_PHASES
                 if getattr(system, p).mode == name[:-len("_bytes_per_s")]]
        return rates[0] if rates else None
    if name == "host_latency_s":
        return system.transfer_in.latency_s
    return getattr(system, name)


def ranges(system: PIMSystem = SYSTEMS["swiftrl"]) -> list[dict[str, Any]]:
    """Each :data:`UNCERTAIN` parameter with its kind, reason and range on ``system`` (values
    in the parameter's unit: instructions, cycles, bytes per second, seconds; a rate of a
    mode with several phases is the first phase's)."""
    out = []
    for u in UNCERTAIN:
        value = _value(system, u.name)
        out.append({"parameter": u.name, "kind": u.kind, "reason": u.reason, "value": value,
                    "low": None if value is None else value * u.low,
                    "high": None if value is None else value * u.high})
    return out


def parameter_status(name: str) -> str:
    """How a :func:`~jaxrl_pim.pim.model.phase_terms` parameter of the UPMEM presets is
    known: checked, native, calibrated, or unverified with its range."""
    if name in KNOWN:
        return KNOWN[name]
    for u in UNCERTAIN:
        if u.name == name:
            lo, hi = FACTORS[u.kind]
            return f"{u.kind}, unverified: varied x{lo:.2g} to x{hi:.2g} in the sensitivity study"
    return "a preset assumption (pim.SOURCES)"


def projection_notes(config: TabularConfig, num_rows: int, system: PIMSystem,
                     measured_on: str) -> list[str]:
    """The lines a projection prints under its table: what the measured column ran on, the
    DPUs used of the system's, instructions and cycles per update, and the largest phase with
    the parameter it depends on most (and how that parameter is known)."""
    w = estimate(config, num_rows, system).work
    big = largest_phase(config, num_rows, system)
    status = (parameter_status(big["parameter"])
              if system.name in ("swiftrl", "upmem", "upmem-v1b")
              else "a preset assumption (pim.SOURCES)")
    return [
        f"measured: this run, {measured_on}; projected: the cost model, no PIM hardware",
        f"DPUs used: {w['dpus_used']:,} of {system.num_dpus:,} "
        f"({w['lanes_per_dpu']} lane(s) per DPU)",
        f"per update: {w['instructions_per_update']:,.1f} instructions, "
        f"{w['cycles_per_update']:,.1f} cycles ({w['compute_cycles_per_update']:,.1f} compute, "
        f"{w['dma_cycles_per_update']:,.1f} DMA; {system.tasklets} tasklet(s))",
        f"largest phase: {big['phase']} ({big['share']:.0%} of the total), "
        f"{big['parameter_share']:.0%} of it from {big['parameter']} ({status})",
    ]
