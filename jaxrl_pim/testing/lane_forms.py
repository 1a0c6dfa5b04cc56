"""Alternative forms of the lane kernel's Q-learning step, for the form study of
``benchmarks/tabular_scaling.py`` (section ``forms``).

Every form computes what :func:`jaxrl_pim.tabular.lanes.run_episodes` computes for
Q-learning over time-major rows (``seq`` / ``str`` orders, float tables, no random draws),
with the same float operations in the same order, so the tables agree bit for bit; they
differ only in what XLA is asked to emit for one scan step:

================  =========================================================================
form              the step
================  =========================================================================
``library``       :func:`~jaxrl_pim.tabular.lanes.run_episodes` itself (flat lane-major
                  table, unsigned indices, one ``A``-wide row gather for the bootstrap, a
                  ``reduce`` max).
``control``       the library's step written in this module's episode loop (separates the
                  loop's cost from the step's).
``signed``        signed int32 indices (JAX adds a negative-index wrap, a compare and a
                  select per index: the library's form before the study).
``in_bounds``     unsigned indices and ``mode="promise_in_bounds"`` gathers and scatter.
``unrolled_max``  the row gather, then the max over ``A`` as ``A - 1`` elementwise maxima.
``scalar_boot``   ``A`` scalar gathers for the bootstrap row instead of one row gather.
``entry_major``   tables ``[S * A, L]``: entry ``e`` of lane ``l`` at ``e * L + l`` (the
                  layout of the GPU / TPU kernels).
``fused_row``     ``sa``, ``s'`` and the terminal flag decoded from one uint32 word per row
                  (unsigned, ``promise_in_bounds``).

Forms other than ``library`` and ``signed`` use unsigned indices.
================  =========================================================================

Use::

    form = FORMS["entry_major"]
    data = visiting_rows(to_lane_data(chunks, spec), spec.sampling, stride)  # [m, L]
    rows = form.prepare(spec, data)
    q = form.run(spec, q, rows, num_episodes)       # q [L, S, A] float32
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxrl_pim.tabular import rules
from jaxrl_pim.tabular.lanes import LaneData, LaneDraws, LaneSpec, lane_update, run_episodes
from jaxrl_pim.testing.hlo import computations


class LaneForm(NamedTuple):
    """A form of the lane step: ``prepare(spec, data) -> rows`` once per run (``data`` a
    time-major :class:`LaneData` ``[m, L]``), ``run(spec, q, rows, num_episodes) -> q``
    (``q`` ``[L, S, A]`` float32, every lane ``num_episodes`` passes over its rows)."""

    prepare: Callable[[LaneSpec, LaneData], Any]
    run: Callable[[LaneSpec, jax.Array, Any, int], jax.Array]
    description: str


def check_spec(spec: LaneSpec) -> None:
    """ValueError unless ``spec`` is Q-learning over time-major rows with float tables."""
    if spec.algo != "q" or spec.sampling not in ("seq", "str") or spec.fmt.is_fixed_point:
        raise ValueError("the lane forms cover Q-learning with seq/str order and float tables;"
                         f" got algo={spec.algo!r}, sampling={spec.sampling!r}, "
                         f"format={spec.fmt.name!r}")


def _boot_chain(spec: LaneSpec, columns: list[jax.Array]) -> jax.Array:
    """``max`` over the ``A`` bootstrap values ``[L]`` each, as elementwise maxima."""
    boot = columns[0]
    for c in columns[1:]:
        boot = jnp.maximum(boot, c)
    return jnp.maximum(boot, jnp.zeros_like(boot)) if spec.compat_max0 else boot


def _new_value(spec: LaneSpec, q_tm1: jax.Array, boot: jax.Array, r: jax.Array,
               term: jax.Array) -> jax.Array:
    return rules.td_update_float(q_tm1, r, 1 - term.astype(jnp.float32), boot, spec.alpha,
                                 spec.gamma)


def _episodes(step, q_flat: jax.Array, rows: Any, num_episodes: int) -> jax.Array:
    def episode(qf, _):
        qf, _ = jax.lax.scan(step, qf, rows)
        return qf, None

    q_flat, _ = jax.lax.scan(episode, q_flat, None, length=num_episodes)
    return q_flat


def _run_library(spec, q, rows, num_episodes):
    num_lanes = q.shape[0]
    draws = LaneDraws(jax.random.split(jax.random.key(0), num_lanes),
                      jnp.zeros((num_lanes,), jnp.uint32), jnp.int32(0))
    return run_episodes(spec, q, rows, draws, num_episodes)[0]


def _lane_major(variant: str):
    """Forms over the library's flat lane-major table ``[L * S * A]``."""

    def run(spec, q, rows, num_episodes):
        num_lanes, num_s, num_a = q.shape
        itype = jnp.int32 if variant == "signed" else jnp.uint32
        lanes = jnp.arange(num_lanes, dtype=itype)
        base = lanes * itype(num_s * num_a)
        row_base = lanes * itype(num_s)
        mode = "promise_in_bounds" if variant == "in_bounds" else None

        def step(qf, row):
            flat = base + row.sa.astype(itype)
            q_tm1 = qf.at[flat].get(mode=mode)
            if variant == "scalar_boot":
                first = base + row.s2.astype(itype) * itype(num_a)
                boot = _boot_chain(spec, [qf[first + itype(a)] for a in range(num_a)])
                new = _new_value(spec, q_tm1, boot, row.r, row.term)
            else:
                q_t = qf.reshape(-1, num_a).at[row_base + row.s2.astype(itype)].get(mode=mode)
                if variant == "unrolled_max":
                    boot = _boot_chain(spec, [q_t[:, a] for a in range(num_a)])
                    new = _new_value(spec, q_tm1, boot, row.r, row.term)
                else:
                    zero = jnp.zeros_like(q_tm1)
                    new = lane_update(spec, q_tm1, q_t, row.r, row.term, zero, zero)
            return qf.at[flat].set(new.astype(qf.dtype), unique_indices=True, mode=mode), None

        return _episodes(step, q.reshape(-1), rows, num_episodes).reshape(q.shape)

    return run


def _run_entry_major(spec, q, rows, num_episodes):
    num_lanes, num_s, num_a = q.shape
    lanes = jnp.arange(num_lanes, dtype=jnp.uint32)
    stride = jnp.uint32(num_lanes)

    def step(qf, row):
        flat = row.sa.astype(jnp.uint32) * stride + lanes
        first = row.s2.astype(jnp.uint32) * (jnp.uint32(num_a) * stride) + lanes
        boot = _boot_chain(spec, [qf[first + jnp.uint32(a) * stride] for a in range(num_a)])
        new = _new_value(spec, qf[flat], boot, row.r, row.term)
        return qf.at[flat].set(new.astype(qf.dtype), unique_indices=True), None

    q_t = q.reshape(num_lanes, num_s * num_a).T.reshape(-1)  # entry-major [S * A * L]
    q_t = _episodes(step, q_t, rows, num_episodes)
    return q_t.reshape(num_s * num_a, num_lanes).T.reshape(q.shape)


#: Bits of the fused row word: ``sa`` in the low 16, ``s'`` in the next 15, the flag on top.
_SA_BITS, _S2_BITS = 16, 15


class FusedRows(NamedTuple):
    """Rows of the ``fused_row`` form: ``word`` uint32 ``[m, L]``, ``r`` float32 ``[m, L]``."""

    word: jax.Array
    r: jax.Array


def _prepare_fused(spec: LaneSpec, data: LaneData) -> FusedRows:
    if spec.num_states * spec.num_actions > 2**_SA_BITS or spec.num_states > 2**_S2_BITS:
        raise ValueError("fused_row packs s*A+a in 16 bits and s' in 15 bits; "
                         f"{spec.num_states} states x {spec.num_actions} actions do not fit")
    word = (data.sa.astype(jnp.uint32)
            | (data.s2.astype(jnp.uint32) << _SA_BITS)
            | (data.term.astype(jnp.uint32) << (_SA_BITS + _S2_BITS)))
    return FusedRows(word, data.r)


def _run_fused(spec, q, rows, num_episodes):
    num_lanes, num_s, num_a = q.shape
    lanes = jnp.arange(num_lanes, dtype=jnp.uint32)
    base = lanes * jnp.uint32(num_s * num_a)
    row_base = lanes * jnp.uint32(num_s)

    def step(qf, row):
        word, r = row
        sa = word & jnp.uint32(2**_SA_BITS - 1)
        s2 = (word >> _SA_BITS) & jnp.uint32(2**_S2_BITS - 1)
        term = (word >> (_SA_BITS + _S2_BITS)) != 0
        flat = base + sa
        q_t = qf.reshape(-1, num_a).at[row_base + s2].get(mode="promise_in_bounds")
        zero = jnp.zeros((num_lanes,), jnp.float32)
        new = lane_update(spec, qf.at[flat].get(mode="promise_in_bounds"), q_t, r, term,
                          zero, zero)
        return qf.at[flat].set(new.astype(qf.dtype), unique_indices=True,
                               mode="promise_in_bounds"), None

    return _episodes(step, q.reshape(-1), rows, num_episodes).reshape(q.shape)


def _same_rows(spec: LaneSpec, data: LaneData) -> LaneData:
    return data


FORMS: dict[str, LaneForm] = {
    "library": LaneForm(_same_rows, _run_library,
                        "the library's run_episodes (flat lane-major table, unsigned indices, "
                        "one A-wide row gather, reduce max)"),
    "control": LaneForm(_same_rows, _lane_major("control"),
                        "the library's step in the study's episode loop"),
    "signed": LaneForm(_same_rows, _lane_major("signed"),
                       "signed int32 indices (a negative-index wrap per index; the library's "
                       "form before the study)"),
    "in_bounds": LaneForm(_same_rows, _lane_major("in_bounds"),
                          "unsigned indices, promise_in_bounds gathers and scatter"),
    "unrolled_max": LaneForm(_same_rows, _lane_major("unrolled_max"),
                             "row gather, max over A as elementwise maxima"),
    "scalar_boot": LaneForm(_same_rows, _lane_major("scalar_boot"),
                            "A scalar gathers for the bootstrap row"),
    "entry_major": LaneForm(_same_rows, _run_entry_major,
                            "entry-major tables [S*A, L] (the GPU/TPU kernels' layout)"),
    "fused_row": LaneForm(_prepare_fused, _run_fused,
                          "sa, s' and the terminal flag decoded from one uint32 word per row "
                          "(unsigned, promise_in_bounds)"),
}


def run_form(name: str, spec: LaneSpec, q: jax.Array, data: LaneData,
             num_episodes: int) -> jax.Array:
    """Prepare ``data`` and run form ``name`` (convenience for tests; not jitted)."""
    check_spec(spec)
    form = FORMS[name]
    return form.run(spec, q, form.prepare(spec, data), num_episodes)


_SKIP = ("parameter", "get-tuple-element", "tuple", "constant", "bitcast")


def _opcode(line: str) -> str | None:
    op = re.search(r"=\s*\S+\s+([\w\-]+)\(", line)
    return op.group(1) if op else None


def innermost_loop_body(hlo_text: str) -> list[str]:
    """The instructions of the innermost ``while`` body of a compiled HLO module's text (the
    scan step), without parameters, tuple plumbing, constants and bitcasts, and without
    metadata: one line per operation XLA runs each step (fusions, scatters, ...)."""
    comps, inner = computations(hlo_text)
    if inner is None:
        return []
    return [re.sub(r",\s*metadata=\{.*?\}", "", ln) for ln in comps[inner]
            if _opcode(ln) not in (None, *_SKIP)]


def innermost_loop_opcodes(hlo_text: str) -> dict[str, int]:
    """Opcode counts of the innermost ``while`` body with the fused computations it calls
    expanded (parameters, tuple plumbing, constants and bitcasts left out): the element-wise
    work XLA emits for one scan step, e.g. ``{"gather": 2, "select": 2, ...}``."""
    comps, inner = computations(hlo_text)
    counts: dict[str, int] = {}

    def visit(name: str) -> None:
        for ln in comps[name]:
            op = _opcode(ln)
            called = re.search(r"calls=%?([\w.\-]+)", ln)
            if op == "fusion" and called and called.group(1) in comps:
                visit(called.group(1))
            elif op is not None and op not in _SKIP:
                counts[op] = counts.get(op, 0) + 1

    if inner is not None:
        visit(inner)
    return dict(sorted(counts.items()))
