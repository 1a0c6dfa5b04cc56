"""The GPU suite's archive: what comes back from the device, and how it is filed here.

The device tool returns at most :data:`MAX_RETURNED_FILES` files from ``$OUT``, named in
letters, digits, ``.``, ``_`` and ``-``, at most :data:`MAX_RETURNED_DEPTH` folders down.
``benchmarks/gpu_suite.py`` packs the filed results and the logs into one archive there
(:func:`pack`) and ``--unpack`` files it into ``benchmarks/results/<device>/`` unchanged
(:func:`unpack`), refusing anything but an accelerator's full or quick results.
"""

from __future__ import annotations

import os
import re
import tarfile
from pathlib import Path

from benchmarks import harness

MAX_RETURNED_FILES = 8
RETURNED_NAME = re.compile(r"^[A-Za-z0-9._-]+$")
MAX_RETURNED_DEPTH = 2


def returned_file_problems(folder: Path) -> list[str]:
    """What the device tool would not bring back from ``folder``: more than
    :data:`MAX_RETURNED_FILES` files, a name outside letters, digits, ``.``, ``_`` and ``-``,
    a file more than :data:`MAX_RETURNED_DEPTH` folders down, or anything but a plain file
    or folder."""
    out, files = [], []
    for p in sorted(folder.rglob("*")):
        rel = p.relative_to(folder)
        if any(not RETURNED_NAME.match(part) for part in rel.parts):
            out.append(f"{rel}: a name outside [A-Za-z0-9._-]")
        if p.is_symlink() or not (p.is_file() or p.is_dir()):
            out.append(f"{rel}: not a plain file or folder")
        elif p.is_file():
            files.append(rel)
            if len(rel.parts) - 1 > MAX_RETURNED_DEPTH:
                out.append(f"{rel}: more than {MAX_RETURNED_DEPTH} folders down")
    if len(files) > MAX_RETURNED_FILES:
        out.append(f"{len(files)} files, more than {MAX_RETURNED_FILES}")
    return out


def pack(out: Path, archive_dir: Path, device_folder: str, stem: str, table: str) -> Path:
    """One archive ``<stem>-<device>.tar.gz`` in ``archive_dir`` holding the filed results
    (``benchmarks/results/<device>/``) and the logs under ``out``, and the summary table
    beside it (``<stem>-<device>.md``): two files."""
    archive_dir.mkdir(parents=True, exist_ok=True)
    path = archive_dir / f"{stem}-{device_folder}.tar.gz"
    tmp = path.with_name(path.name + ".tmp")
    with tarfile.open(tmp, "w:gz") as tar:
        for sub in ("benchmarks", "logs"):
            if (out / sub).exists():
                tar.add(out / sub, arcname=sub)
    os.replace(tmp, path)
    path.with_name(f"{stem}-{device_folder}.md").write_text(table)
    return path


def unpack(archive: Path, root: Path = harness.ROOT) -> list[Path]:
    """File a returned archive's results into ``root/benchmarks/results/<device>/`` exactly as
    the device wrote them (bytes unchanged; files of the same name are replaced). Refuses
    (ValueError) members outside ``benchmarks/results/<device>/``, a ``cpu`` folder and
    ``_smoke`` files: only an accelerator's full or quick results are filed."""
    written = []
    with tarfile.open(archive, "r:gz") as tar:
        members = [m for m in tar.getmembers() if m.isfile()]
        chosen = []
        for m in members:
            parts = Path(m.name).parts
            if parts[:1] == ("logs",):
                continue
            if (len(parts) != 4 or parts[:2] != ("benchmarks", "results") or ".." in parts
                    or not RETURNED_NAME.match(parts[2]) or not RETURNED_NAME.match(parts[3])):
                raise ValueError(f"{archive}: member {m.name!r} is not a results file under "
                                 "benchmarks/results/<device>/")
            if parts[2] == "cpu":
                raise ValueError(f"{archive}: holds CPU results ({m.name}); the GPU suite "
                                 "files only accelerator numbers")
            if "_smoke" in parts[3]:
                raise ValueError(f"{archive}: holds a --smoke file ({m.name}); test sizes "
                                 "are never filed")
            chosen.append((m, root.joinpath(*parts)))
        if not chosen:
            raise ValueError(f"{archive}: no results files under benchmarks/results/<device>/")
        for m, dest in chosen:
            dest.parent.mkdir(parents=True, exist_ok=True)
            data = tar.extractfile(m)
            assert data is not None
            tmp = dest.with_name(dest.name + ".tmp")
            tmp.write_bytes(data.read())
            os.replace(tmp, dest)
            written.append(dest)
    return written
