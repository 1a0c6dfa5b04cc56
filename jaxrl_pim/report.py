"""Run reports: the JSON schema shared by every CLI run and benchmark (design contract 8).

A report is ``{"system", "config", "results", "timing_s"}`` plus, for benchmarks, a
``summary`` with the headline numbers. Files are written atomically (temporary name, then
rename) so an interrupted run never destroys an earlier result.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import os
import platform
import tempfile
from pathlib import Path
from typing import Any

import jax
import numpy as np


def system_info() -> dict[str, Any]:
    """Hardware and software facts for a report: CPU, device kind/count, versions."""
    devices = jax.devices()
    import jaxlib

    return {
        "hostname": platform.node(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpu": _cpu_name(),
        "cpu_count": os.cpu_count(),
        "backend": jax.default_backend(),
        "device_kind": devices[0].device_kind,
        "device_count": len(devices),
        "jax": jax.__version__,
        "jaxlib": jaxlib.__version__,
        "numpy": np.__version__,
        "time_utc": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    }


def device_label() -> str:
    """Short device description, e.g. ``'cpu: 2 x cpu'`` or ``'gpu: 1 x NVIDIA H100 ...'``."""
    devices = jax.devices()
    return f"{jax.default_backend()}: {len(devices)} x {devices[0].device_kind}"


def to_jsonable(obj: Any) -> Any:
    """Convert dataclasses, NumPy/JAX arrays and scalars into plain JSON values."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray | jax.Array):
        arr = np.asarray(obj)
        return arr.item() if arr.ndim == 0 else arr.tolist()
    if isinstance(obj, float) and not np.isfinite(obj):
        return None
    if obj is None or isinstance(obj, str | int | float | bool):
        return obj
    return repr(obj)


def make_report(
    config: Any,
    results: dict[str, Any],
    timing_s: dict[str, float],
    summary: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Assemble a report dict following the shared schema."""
    report = {
        "system": system_info(),
        "config": to_jsonable(config),
        "results": to_jsonable(results),
        "timing_s": to_jsonable(timing_s),
    }
    if summary is not None:
        report["summary"] = to_jsonable(summary)
    return report


def write_json(path: str | os.PathLike[str], data: Any) -> Path:
    """Write ``data`` as indented JSON atomically (temp file + rename); returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(to_jsonable(data), fh, indent=2)
            fh.write("\n")
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def atomic_save(path: str | os.PathLike[str], writer: Any) -> Path:
    """Call ``writer(tmp_path)`` and rename the result onto ``path``; nothing is lost on error.

    The temporary name keeps ``path``'s suffix so writers such as ``np.save`` do not append one.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=path.suffix, dir=path.parent)
    os.close(fd)
    try:
        writer(tmp)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()
