"""Whether a results file still describes the present code: the sources a run depends on.

Two questions, one module:

* **Which files does a script's result depend on?** :func:`imported_sources` lists the
  ``jaxrl_pim`` modules a running process has imported (``benchmarks/learning.py`` records
  their SHA-256, :func:`source_hashes`, in its results file); :func:`static_sources` reads the
  same from the code without running it: the script and every ``benchmarks.*`` and
  ``jaxrl_pim.*`` module it imports, transitively (imports inside functions included, so the
  list errs on the side of more files).
* **Did any of them change since the run?** :func:`stale_sources` compares recorded hashes
  with the files now; :func:`changed_since` asks git which of the files differ between a
  commit and the working tree. The GPU suite uses the second (``gpu_suite.py --freshness``,
  on the development machine, where git is): a part whose filed result was run at a commit
  with none of its sources changed since, and with the same options, is fresh and is not run
  again unless ``--force`` is given.
"""

from __future__ import annotations

import ast
import hashlib
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Top-level packages whose modules count as sources (the library and the benchmarks).
PACKAGES = ("jaxrl_pim", "benchmarks")


def source_hashes(paths: Iterable[str], root: Path = ROOT) -> dict[str, str | None]:
    """SHA-256 of each file (``paths`` relative to ``root``); None for a missing file."""
    out: dict[str, str | None] = {}
    for rel in paths:
        path = root / rel
        out[rel] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None
    return out


def imported_sources(script: Path, root: Path = ROOT) -> list[str]:
    """``script`` and every ``jaxrl_pim`` module this process has imported so far, relative
    to ``root`` (an installed copy elsewhere is left out)."""
    files = {str(Path(script).resolve().relative_to(root))}
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if name.split(".")[0] == "jaxrl_pim" and path:
            try:
                files.add(str(Path(path).resolve().relative_to(root)))
            except ValueError:
                continue
    return sorted(files)


def stale_sources(recorded: dict[str, str | None], root: Path = ROOT) -> list[str]:
    """The files of ``recorded`` (path -> SHA-256) whose content differs now, or that are
    gone."""
    now = source_hashes(sorted(recorded), root)
    return [rel for rel, digest in recorded.items() if now[rel] != digest]


def _module_file(name: str, root: Path) -> Path | None:
    """The file of module ``name`` (dotted) under ``root``: a module or a package's
    ``__init__.py``; None when it is not one of :data:`PACKAGES`' files."""
    if name.split(".")[0] not in PACKAGES:
        return None
    base = root.joinpath(*name.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def _imports(path: Path, root: Path) -> set[str]:
    """Dotted names ``path`` imports (absolute, and relative ones resolved), with each
    ``from X import y`` also giving ``X.y`` (a submodule when one exists); imports under
    ``if TYPE_CHECKING:`` are left out."""
    package = ".".join(path.relative_to(root).with_suffix("").parts)
    if path.name == "__init__.py":
        package = package.removesuffix(".__init__")
    else:
        package = package.rpartition(".")[0]
    tree = ast.parse(path.read_text(), str(path))
    typing_only = {id(n) for block in ast.walk(tree) if isinstance(block, ast.If)
                   and "TYPE_CHECKING" in ast.unparse(block.test)
                   for stmt in block.body for n in ast.walk(stmt)}
    names: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:  # ``if TYPE_CHECKING:`` imports never run
            continue
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[:len(parts) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            names.add(base)
            names.update(f"{base}.{a.name}" for a in node.names)
    return names


def static_sources(script: Path, root: Path = ROOT) -> list[str]:
    """``script`` and every module of :data:`PACKAGES` it imports, transitively, read from
    the code (no import runs), as paths relative to ``root``. A package's ``__init__.py``
    counts when any of its modules is imported (Python runs it)."""
    todo, seen = [Path(script).resolve()], set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for name in _imports(path, root):
            parts = name.split(".")
            for i in range(1, len(parts) + 1):  # the packages on the way run too
                found = _module_file(".".join(parts[:i]), root)
                if found is not None and found not in seen:
                    todo.append(found)
    return sorted(str(p.relative_to(root)) for p in seen)


def changed_since(commit: str, paths: Iterable[str], root: Path = ROOT) -> list[str] | None:
    """Which of ``paths`` differ between ``commit`` and the working tree (git's view,
    uncommitted edits included); None when git cannot tell (no git, unknown commit)."""
    paths = sorted(paths)
    try:
        proc = subprocess.run(["git", "diff", "--name-only", commit, "--", *paths], cwd=root,
                              capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0:
        return None
    return sorted(line for line in proc.stdout.splitlines() if line.strip())
