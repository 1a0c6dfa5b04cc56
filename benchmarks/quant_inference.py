"""Quantized actor inference on the default device: fp32 / bf16 / fp16 / int8, and the broadcast.

The ActorQ actors' networks (``jaxrl_pim.rl.networks``: the DQN Q-network of CartPole at
64 x 64, 1,024 x 1,024 and the paper's 3 x 2,048, and the D4PG actor of Pendulum at 256 x
256) evaluated on a batch of observations (1 row, the actors' 8 -- the environments per
actor of ActorQ's time-to-reward run --, 64 and 1,024 rows) in one jitted call, in each
precision:

* ``fp32``: the network as trained;
* ``bf16``: every parameter and the observations cast to bfloat16 (flax computes in the
  promoted dtype, so the matmuls are bf16 x bf16);
* ``fp16``: the library's actor path (``actorq.broadcast.actor_params(..., "fp16")`` and
  ``quant.compute.policy_apply``: float16 kernels, float16 x float16 -> float32 matmuls);
* ``int8``: the library's int8 path (int8 kernel codes + scale, activations quantized per
  row, ``int8 x int8 -> int32`` dot_general);
* ``int8_fast``: the fast int8 path (``jaxrl_pim.quant.fast_int8``): weights int8 per output
  channel, prepared once in the device's layout (``fast_int8.default_options``: ``(out, in)``,
  padded to multiples of 16, one-row batches padded to two on CPU), static activation scales
  calibrated on 256 observations, the first and last layers in float32;
* ``int8_emulated``: the same prepared policy with the int8 codes multiplied as float32 values
  (``products="float32"``, what ``actor_compute="emulated"`` runs: the int8 outputs bit for bit
  up to a fan-in of 1,040, on the float units);
* ``int8_qwix``: qwix's int8 post-training quantization of the same module (weights per
  output channel, dynamic activations); absent when qwix is not installed.

Two times per call, both best of ``repeats`` after a compiling call:

* device-side (``device_seconds_per_call``, ``harness.device_time_per_call``): ``K`` calls
  inside ONE jitted program (``jax.lax.fori_loop`` with a static trip count, a while loop in the
  HLO), each call's observations ``x + 0 * out[:, :1]`` of the previous call's output, which
  XLA neither folds (``0 * y`` is not ``0`` for floats) nor hoists out of the loop, and the
  parameters passed through an optimization barrier with them on every trip (work on the
  parameters alone, such as converting int8 kernels, is redone per call as in one call);
  the time is ``(T(K) - T(K0)) / (K - K0)`` with ``K0 <= 16`` and ``K`` sized so the
  difference lasts ``loop_s / 4`` to about ``loop_s`` (one compile per size tried): what the
  device takes per forward pass, without Python dispatch or any per-program cost (for
  kernels shorter than their launch, the loop's launches bound it); the run's first row is
  timed twice and the first discarded (the device warming up);
* dispatch-included (``seconds_per_call``, ``jaxrl_pim.timing.time_per_call``): a Python
  loop of asynchronous jitted calls lasting ``loop_s``, blocked at its end, as an actor calls
  it. At batch 1 on a GPU it is launch latency, about the same for every network.

XLA:CPU multiplies int8 matrices quickly only through its YNNPACK dot path, which the
project's workaround flag (``--xla_cpu_experimental_ynn_fusion_type=``, set by
``harness.start``) turns off. On CPU the inference table is measured under the process's flags
(``variant`` ``workaround``) and again in a child process with ``...=individual_dot``
(``ynn_dots``: YNNPACK's dots on, its other fusions off, as in ActorQ's actor processes);
``--no-ynn-dots`` leaves the second out.

Broadcast (DQN at the paper size and at 1,024 x 1,024, fp32 / fp16 / int8): the host-side
pack (quantize, serialise, CRC32), deserialize, the load onto the device
(``actorq.broadcast.load``: copy + dequantize what is not kept low-precision) and the
device-side path of single-program runs (``actor_params`` jitted on the device); bytes per
broadcast, and the load's bytes over its time against the device's host-to-device copy rate
measured in the same run (``jax.device_put`` of the fp32 payload's size).

    python benchmarks/quant_inference.py [--publish]   # on the device to measure
    python benchmarks/quant_inference.py --quick       # batches 1, 8 and 1,024, 2 networks
    python benchmarks/quant_inference.py --smoke       # test sizes (seconds)
    # the GPU suite's part (every row of the paper's comparison, batches 1, 8 and 1,024):
    python benchmarks/quant_inference.py --precisions fp32 bf16 int8_fast int8_emulated int8_qwix \
        --batches 1 8 1024

Summary: per precision, the dispatch-included speed-up over fp32 at the paper's actor for
each batch (``<precision>_speedup_vs_fp32_paper_b<batch>``, fp32 time / this precision's, the
meaning it always had) and the fastest precision per batch by that time; the paper-size
broadcast's bytes ratio and load / total times. Records with device-side times add
``<precision>_device_speedup_vs_fp32_paper_b<batch>`` (fp32 device-side time / this
precision's), ``fastest_precision_device_paper_b<batch>`` and, for the other networks,
``<precision>_device_speedup_vs_fp32_<network>_b<batch>``, and over every network and batch
``<precision>_device_speedup_vs_fp32_median`` and ``..._worst``. ``int8_qwix`` runs wherever qwix
imports (in the default precisions; a network it fails on is an ``error`` record). Those keys
describe the process's own variant; the ``ynn_dots`` child's records give the same keys
prefixed ``ynn_dots_``.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as python benchmarks/<name>.py: the package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import numpy as np

from benchmarks import harness

PRECISIONS = ("fp32", "bf16", "fp16", "int8", "int8_fast", "int8_emulated", "int8_qwix")
BROADCAST_PRECISIONS = ("fp32", "fp16", "int8")
PAPER_HIDDEN = (2048, 2048, 2048)
PAPER_NET = "dqn-2048x2048x2048"

SIZES: dict[str, dict[str, Any]] = {
    "full": {"networks": [("dqn", (64, 64)), ("d4pg", (256, 256)), ("dqn", (1024, 1024)),
                          ("dqn", PAPER_HIDDEN)],
             "batches": [1, 8, 64, 1024], "repeats": 7, "loop_s": 0.2,
             "broadcast_hidden": [PAPER_HIDDEN, (1024, 1024)], "broadcast_repeats": 7},
    "quick": {"networks": [("dqn", (64, 64)), ("dqn", PAPER_HIDDEN)], "batches": [1, 8, 1024],
              "repeats": 3, "loop_s": 0.1, "broadcast_hidden": [PAPER_HIDDEN],
              "broadcast_repeats": 3},
    "smoke": {"networks": [("dqn", (16,))], "batches": [1], "repeats": 1, "loop_s": 0.01,
              "broadcast_hidden": [(16,)], "broadcast_repeats": 1},
}
#: The child process's XLA flag on CPU: YNNPACK's dots on, its other fusion types off.
YNN_DOTS_FLAG = "--xla_cpu_experimental_ynn_fusion_type=individual_dot"
#: Calibration observations of the fast int8 path's static activation scales.
CALIBRATION_ROWS = 256
#: Observation and output sizes of the networks' tasks (CartPole: 4 -> 2 Q-values; Pendulum:
#: 3 -> 1 action).
TASKS = {"dqn": (4, 2), "d4pg": (3, 1)}


def net_name(algo: str, hidden: tuple[int, ...]) -> str:
    """``dqn-64x64``-style name of a network."""
    return f"{algo}-" + "x".join(str(h) for h in hidden)


def build(algo: str, hidden: tuple[int, ...]) -> tuple[Any, Any, int]:
    """``(module, params, obs_dim)`` of an ActorQ actor network, initialised with seed 0."""
    import jax
    import jax.numpy as jnp

    from jaxrl_pim.rl.networks import D4PGActor, q_network

    obs_dim, out = TASKS[algo]
    module = q_network(hidden, out) if algo == "dqn" else D4PGActor(hidden, out)
    params = jax.jit(module.init)(jax.random.PRNGKey(0), jnp.zeros((1, obs_dim)))
    return module, params, obs_dim


def policy_fn(module: Any, params: Any, precision: str, obs: Any) -> tuple[Any, Any, Any]:
    """``(fn, held, obs)``: a jitted ``fn(held, obs)`` computing in ``precision``, the
    parameters it holds and the observations in its input dtype."""
    import jax
    import jax.numpy as jnp

    from jaxrl_pim.actorq.broadcast import actor_params
    from jaxrl_pim.quant.compute import policy_apply

    if precision == "bf16":
        held = jax.tree.map(lambda x: jnp.asarray(x, jnp.bfloat16), params)
        return jax.jit(module.apply), held, jnp.asarray(obs, jnp.bfloat16)
    if precision in ("int8_fast", "int8_emulated"):
        from jaxrl_pim.quant import fast_int8

        calib = jax.random.normal(jax.random.PRNGKey(2), (CALIBRATION_ROWS, obs.shape[-1]))
        ranges = fast_int8.calibrate(module.apply, params, calib)
        products = "int32" if precision == "int8_fast" else "float32"
        held = fast_int8.prepare(params, ranges, **fast_int8.default_options(products=products))
        return jax.jit(functools.partial(fast_int8.apply, module)), held, obs
    if precision == "int8_qwix":
        from jaxrl_pim.quant.qwix_backend import qwix_ptq_model, qwix_quantize_params

        qmodule = qwix_ptq_model(module)
        held = qwix_quantize_params(qmodule, params["params"], obs)
        return jax.jit(qmodule.apply), held, obs
    held = actor_params(params, precision, "native")
    return jax.jit(lambda p, x: policy_apply(module, p, x)), held, obs


def xla_variant() -> str:
    """This process's variant: on CPU ``"ynn_dots"`` when its XLA flags keep int8 dots on
    YNNPACK's path (``fast_int8.int8_dots_fast``), else ``"workaround"``; ``"default"`` on
    other backends."""
    import jax

    from jaxrl_pim.quant.fast_int8 import int8_dots_fast

    if jax.default_backend() != "cpu":
        return "default"
    return "ynn_dots" if int8_dots_fast("cpu") else "workaround"


def inference(size: dict[str, Any], precisions: list[str]) -> list[dict[str, Any]]:
    """One record per network, batch and precision (an ``error`` record when a precision
    fails on this backend), each naming this process's :func:`xla_variant`."""
    import jax

    from jaxrl_pim.timing import time_per_call

    variant = xla_variant()
    rows = []
    for algo, hidden in size["networks"]:
        module, params, obs_dim = build(algo, tuple(hidden))
        n_params = int(sum(np.size(x) for x in jax.tree.leaves(params)))
        for batch in size["batches"]:
            obs = jax.random.normal(jax.random.PRNGKey(1), (batch, obs_dim))
            for p in precisions:
                rec: dict[str, Any] = {"network": net_name(algo, tuple(hidden)), "algo": algo,
                                       "hidden": list(hidden), "params": n_params,
                                       "batch": batch, "precision": p, "variant": variant}
                try:
                    fn, held, x = policy_fn(module, params, p, obs)
                    rec.update(time_per_call(fn, held, x, repeats=size["repeats"],
                                             loop_s=size["loop_s"]))
                    for _ in range(1 if rows else 2):  # the first row twice: a warm-up
                        rec.update(harness.device_time_per_call(
                            fn, held, x, repeats=size["repeats"], loop_s=size["loop_s"],
                            upper_s=rec["seconds_per_call"]))
                except Exception as err:  # noqa: BLE001 - a precision a backend rejects
                    rec["error"] = f"{type(err).__name__}: {str(err).splitlines()[0][:200]}"
                    print(f"[inference] {rec['network']} b{batch} {p}: FAILED {rec['error']}",
                          flush=True)
                    rows.append(rec)
                    continue
                rec["ms_per_call"] = rec["seconds_per_call"] * 1e3
                rec["us_per_row"] = rec["seconds_per_call"] * 1e6 / batch
                rec["device_us_per_call"] = rec["device_seconds_per_call"] * 1e6
                print(f"[inference] {variant} {rec['network']} b{batch} {p}: device-side "
                      f"{rec['device_us_per_call']:.4g} us ({rec['device_calls']} calls in one "
                      f"program), dispatch included {rec['ms_per_call'] * 1e3:.4g} us",
                      flush=True)
                rows.append(rec)
    return rows


def ynn_dots_rows(mode: str, precisions: list[str], batches: list[int]) -> list[dict]:
    """:func:`inference`'s records from a child process of this script run with
    :data:`YNN_DOTS_FLAG` in place of the process's YNN setting (CPU only)."""
    import json
    import os
    import subprocess
    import tempfile

    from jaxrl_pim.xla_env import with_flags, without_flag

    flags = with_flags(without_flag(os.environ.get("XLA_FLAGS", ""), YNN_DOTS_FLAG),
                       YNN_DOTS_FLAG)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "rows.json"
        cmd = [sys.executable, str(Path(__file__).resolve()), "--child-rows", str(out),
               "--precisions", *precisions, "--batches", *map(str, batches)]
        cmd += {"full": [], "quick": ["--quick"], "smoke": ["--smoke"]}[mode]
        subprocess.run(cmd, env=dict(os.environ, XLA_FLAGS=flags), check=True)
        return json.loads(out.read_text())


def copy_rate(nbytes: int, repeats: int) -> dict[str, Any]:
    """Host-to-device bytes per second of ``jax.device_put`` of ``nbytes`` (best of
    ``repeats``)."""
    import jax

    from jaxrl_pim.timing import time_call

    host = np.ones(max(1, nbytes // 4), np.float32)
    best = time_call(lambda: jax.device_put(host), repeats=max(1, repeats), warmup=1)
    return {"bytes": int(host.nbytes), "seconds": best, "bytes_per_s": host.nbytes / best}


def broadcast(size: dict[str, Any]) -> list[dict[str, Any]]:
    """One record per broadcast network and precision (best of ``broadcast_repeats``)."""
    import jax

    from jaxrl_pim.actorq.broadcast import actor_params, deserialize, encode, load

    rows = []
    for hidden in size["broadcast_hidden"]:
        _, params, _ = build("dqn", tuple(hidden))
        for p in BROADCAST_PRECISIONS:
            device_path = jax.jit(lambda x, p=p: actor_params(x, p, "native"))
            jax.block_until_ready(device_path(params))
            best: dict[str, float] = {}
            for r in range(size["broadcast_repeats"] + 1):  # the first is a warm-up
                t0 = time.perf_counter()
                wire, meta = encode(params, p)
                t1 = time.perf_counter()
                qtree = deserialize(wire, meta)
                t2 = time.perf_counter()
                jax.block_until_ready(load(qtree, "native"))
                t3 = time.perf_counter()
                jax.block_until_ready(device_path(params))
                t4 = time.perf_counter()
                if r == 0:
                    continue
                for k, v in (("pack_ms", t1 - t0), ("deserialize_ms", t2 - t1),
                             ("load_ms", t3 - t2), ("device_quantize_ms", t4 - t3)):
                    best[k] = min(best.get(k, float("inf")), 1e3 * v)
            best["total_ms"] = best["pack_ms"] + best["deserialize_ms"] + best["load_ms"]
            rec = {"network": net_name("dqn", tuple(hidden)), "hidden": list(hidden),
                   "precision": p, "bytes": wire.nbytes, **best,
                   "load_bytes_per_s": wire.nbytes / (best["load_ms"] * 1e-3)}
            print(f"[broadcast] {rec['network']} {p}: {wire.nbytes:,} B, total "
                  f"{best['total_ms']:.3f} ms (load {best['load_ms']:.3f} ms)", flush=True)
            rows.append(rec)
    return rows


def _find(rows: list[dict], **match) -> dict | None:
    return next((r for r in rows if all(r.get(k) == v for k, v in match.items())
                 and not r.get("error")), None)


def _device_speedups(inf: list[dict], net: str, batch: int,
                     precisions: list[str]) -> dict[str, float | None]:
    """Per precision but fp32: fp32 device-side time / this precision's (None if missing)."""
    base = _find(inf, network=net, batch=batch, precision="fp32")
    out = {}
    for p in precisions:
        r = _find(inf, network=net, batch=batch, precision=p)
        if p != "fp32":
            out[p] = (base["device_seconds_per_call"] / r["device_seconds_per_call"]
                      if base and r else None)
    return out


def _inference_keys(inf: list[dict], cfg: dict[str, Any], paper: str | None,
                    pre: str) -> dict[str, Any]:
    """The speed-up keys of one variant's records, each prefixed ``pre``."""
    out: dict[str, Any] = {}
    device = any("device_seconds_per_call" in r for r in inf)  # False in records before it
    for batch in cfg["batches"]:
        base = _find(inf, network=paper, batch=batch, precision="fp32")
        times = {p: r["seconds_per_call"] for p in cfg["precisions"]
                 if (r := _find(inf, network=paper, batch=batch, precision=p))}
        for p in cfg["precisions"]:
            if p == "fp32":
                continue
            out[f"{p}_speedup_vs_fp32_paper_b{batch}"] = (
                base["seconds_per_call"] / times[p] if base and p in times else None)
        out[f"fastest_precision_paper_b{batch}"] = min(times, key=times.get) if times else None
        if device:
            dev = _device_speedups(inf, paper, batch, cfg["precisions"])
            out.update({f"{p}_device_speedup_vs_fp32_paper_b{batch}": v for p, v in dev.items()})
            times = {p: r["device_seconds_per_call"] for p in cfg["precisions"]
                     if (r := _find(inf, network=paper, batch=batch, precision=p))}
            out[f"fastest_precision_device_paper_b{batch}"] = (min(times, key=times.get)
                                                               if times else None)
    every: dict[str, list[float]] = {}  # per precision, over every network and batch
    for net in dict.fromkeys(r["network"] for r in inf) if device else ():
        for batch in cfg["batches"]:
            dev = _device_speedups(inf, net, batch, cfg["precisions"])
            for p, v in dev.items():
                if v is not None:
                    every.setdefault(p, []).append(v)
            if net != paper:
                out.update({f"{p}_device_speedup_vs_fp32_{net}_b{batch}": v
                            for p, v in dev.items()})
    for p, values in every.items():
        out[f"{p}_device_speedup_vs_fp32_median"] = float(np.median(values))
        out[f"{p}_device_speedup_vs_fp32_worst"] = min(values)
    return {pre + k: v for k, v in out.items()}


def summarize(report: dict[str, Any]) -> dict[str, Any]:
    """Headline numbers from the stored records (see the module docstring)."""
    res, cfg = report["results"], report["config"]
    inf = res["inference"]
    out: dict[str, Any] = {"device": res["device"], "mode": cfg["mode"]}
    paper = PAPER_NET if any(r["network"] == PAPER_NET for r in inf) else (
        inf[-1]["network"] if inf else None)
    out["paper_actor_network"] = paper
    main = cfg.get("variant")  # None in files before the variants: every record is its own
    for v in _variants(inf, main):
        rows = [r for r in inf if r.get("variant", main) == v]
        out.update(_inference_keys(rows, cfg, paper, "" if v == main else f"{v}_"))
    tag = lambda r: "" if r.get("variant", main) == main else f"{r['variant']}/"
    failed = sorted({f"{tag(r)}{r['network']}/b{r['batch']}/{r['precision']}"
                     for r in inf if r.get("error")})
    out["failed_runs"] = failed
    bc = res["broadcast"]
    big = bc[0]["network"] if bc else None
    fp32, int8 = _find(bc, network=big, precision="fp32"), _find(bc, network=big, precision="int8")
    out["broadcast_network"] = big
    out["broadcast_bytes_ratio_fp32_over_int8"] = (fp32["bytes"] / int8["bytes"]
                                                   if fp32 and int8 else None)
    for p in BROADCAST_PRECISIONS:
        r = _find(bc, network=big, precision=p)
        out[f"broadcast_{p}_total_ms"] = r["total_ms"] if r else None
        out[f"broadcast_{p}_load_ms"] = r["load_ms"] if r else None
    out["host_to_device_bytes_per_s"] = res["copy"]["bytes_per_s"]
    return out


def _variants(inf: list[dict], main: str | None) -> list[str | None]:
    """The variants of the records, the process's own (``main``) first."""
    return list(dict.fromkeys([main] + [r.get("variant", main) for r in inf]))


#: the tables' cells (milliseconds already): the layer's number format, 4 significant digits
_ms = functools.partial(harness.fmt, spec=".4g")


def _dispatch_row(inf: list[dict], r: dict[str, Any]) -> list[Any]:
    """A row of the table of records before the device-side timer."""
    head = [r["network"], r["batch"], r["precision"]]
    if r.get("error"):
        return head + [f"failed: {r['error'][:80]}", "", ""]
    base = _find(inf, network=r["network"], batch=r["batch"], precision="fp32")
    vs = "" if base is None else f"{base['seconds_per_call'] / r['seconds_per_call']:.2f}x"
    return head + [f"{r['ms_per_call']:.4g}", f"{r['us_per_row']:.4g}", vs]


def _device_row(inf: list[dict], r: dict[str, Any], variants: bool) -> list[Any]:
    """A row of the table: device-side and dispatch-included us per call (first the XLA
    variant when the file holds several)."""
    head = ([r["variant"]] if variants else []) + [r["network"], r["batch"], r["precision"]]
    if r.get("error"):
        return head + [f"failed: {r['error'][:80]}", "", "", "", ""]
    same = {"variant": r["variant"]} if variants else {}
    base = _find(inf, network=r["network"], batch=r["batch"], precision="fp32", **same)
    dev = r["device_seconds_per_call"]
    vs = "" if base is None else f"{base['device_seconds_per_call'] / dev:.2f}x"
    return head + [f"{dev * 1e6:.4g}", f"{r['seconds_per_call'] * 1e6:.4g}",
                   f"{dev * 1e6 / r['batch']:.4g}", vs, f"{r['device_calls']:,}"]


def _speedup_table(inf: list[dict], cfg: dict[str, Any], several: bool) -> list[str]:
    """One row per (variant, network, batch), one column per precision but fp32."""
    precisions = [p for p in cfg["precisions"] if p != "fp32"]
    rows = []
    for v in _variants(inf, cfg.get("variant")):
        recs = [r for r in inf if r.get("variant", cfg.get("variant")) == v]
        for net in dict.fromkeys(r["network"] for r in recs):
            for batch in cfg["batches"]:
                dev = _device_speedups(recs, net, batch, precisions)
                rows.append([v] * several + [net, batch] + [
                    "" if dev[p] is None else f"{dev[p]:.2f}x" for p in precisions])
    return harness.md_table(["XLA"] * several + ["network", "batch"] + precisions, rows)


def render_markdown(report: dict[str, Any]) -> str:
    """The inference table (device-side and dispatch-included time per call, speed-up over
    fp32; records before the device-side timer: the dispatch-included table they had) and
    the broadcast table."""
    res, cfg = report["results"], report["config"]
    inf = res["inference"]
    if any("device_seconds_per_call" in r for r in inf):
        several = len(_variants(inf, cfg.get("variant"))) > 1
        lines = [f"Device: {res['device']} ({cfg['mode']} sizes). Time per forward pass of "
                 "the network on a batch of observations, best of "
                 f"{cfg['sizes']['repeats']}: device-side = K calls in one jitted program "
                 "(a fori_loop, each call's input depending on the previous output), (T(K) - "
                 "T(K0)) / (K - K0); dispatch included = a Python loop of jitted calls; "
                 "vs fp32 = fp32 device-side time / this precision's.", ""]
        if several:
            lines[-2] += (" XLA: workaround = the project's XLA:CPU flags (YNNPACK fusions "
                          "off); ynn_dots = YNNPACK's dots on (a child process).")
        lines += ["Device-side speed-up over fp32 (fp32 time / this precision's) per network "
                  "and batch:", ""]
        lines += _speedup_table(inf, cfg, several)
        lines += ["", "Every record:", ""]
        lines += harness.md_table(
            ["XLA"] * several + [
                "network", "batch", "precision", "device-side us per call",
                "dispatch-included us per call", "device-side us per row", "vs fp32 (device)",
                "K"], (_device_row(inf, r, several) for r in inf))
    else:
        lines = [f"Device: {res['device']} ({cfg['mode']} sizes). Time per jitted call on a "
                 f"batch of observations: best of {cfg['sizes']['repeats']} loops of calls, "
                 "dispatch included; speed-up = fp32 time / this precision's time.", ""]
        lines += harness.md_table(
            ["network", "batch", "precision", "ms per call", "us per row", "vs fp32"],
            (_dispatch_row(inf, r) for r in inf))
    copy = res["copy"]
    lines += ["", f"Broadcast (best of {cfg['sizes']['broadcast_repeats']}); the device's "
              f"host-to-device copy rate measured in the same run: "
              f"{copy['bytes_per_s'] / 1e9:.3g} GB/s ({copy['bytes']:,} B).", ""]
    lines += harness.md_table(
        ["network", "precision", "bytes", "pack ms", "deserialize ms", "load ms", "total ms",
         "load GB/s", "device-side quantize ms"],
        ([r["network"], r["precision"], f"{r['bytes']:,}", _ms(r["pack_ms"]),
          _ms(r["deserialize_ms"]), _ms(r["load_ms"]), _ms(r["total_ms"]),
          f"{r['load_bytes_per_s'] / 1e9:.3g}", _ms(r["device_quantize_ms"])]
         for r in res["broadcast"]))
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Measure, write the results file, print the tables."""
    p = harness.parser(__doc__)
    p.add_argument("--precisions", nargs="+", choices=PRECISIONS, default=None,
                   help="precisions of the inference table (default: all; int8_qwix only "
                        "when qwix is installed)")
    p.add_argument("--batches", nargs="+", type=int, default=None,
                   help="batch sizes of the inference table (default: 1 8 64 1024; --quick "
                        "1 8 1024; --smoke 1)")
    p.add_argument("--no-ynn-dots", action="store_true",
                   help="on CPU, leave out the inference table's second run with YNNPACK's "
                        "int8 dots on (a child process)")
    p.add_argument("--child-rows", type=Path, default=None, help=argparse.SUPPRESS)
    args, run, mode = harness.start(p, argv, __file__)
    from jaxrl_pim import provenance
    size = SIZES[mode]
    if args.batches:
        if min(args.batches) < 1:
            raise SystemExit(f"--batches must be >= 1; got {args.batches}")
        size = {**size, "batches": list(args.batches)}
    precisions = list(args.precisions or PRECISIONS)
    if args.precisions is None:
        try:
            import qwix  # noqa: F401
        except ImportError:
            precisions.remove("int8_qwix")
            print("qwix is not installed: int8_qwix left out", file=sys.stderr)
    if args.child_rows is not None:  # the ynn_dots child: its records only
        args.child_rows.write_text(json.dumps(inference(size, precisions)))
        return 0
    path = harness.output_path(args, "quant_inference")
    timing: dict[str, float] = {}
    t0 = time.perf_counter()
    rows = inference(size, precisions)
    timing["inference"] = time.perf_counter() - t0
    variant = xla_variant()
    if variant == "workaround" and not args.no_ynn_dots:
        t0 = time.perf_counter()
        rows += ynn_dots_rows(mode, precisions, size["batches"])
        timing["inference_ynn_dots"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    bc = broadcast(size)
    largest = max((r["bytes"] for r in bc if r["precision"] == "fp32"), default=1 << 20)
    copy = copy_rate(largest, size["broadcast_repeats"])
    timing["broadcast"] = time.perf_counter() - t0
    config = {"mode": mode, "precisions": precisions, "batches": size["batches"],
              "sizes": size, "variant": variant}
    results = {"device": provenance.device_label(), "inference": rows, "broadcast": bc,
               "copy": copy}
    harness.write(path, run=run, config=config, results=results, timing_s=timing,
                  summarize=summarize, markdown=render_markdown, show=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
