"""The package's import graph, read from the source with ``ast``: no cycles, and the host wing
(``jaxrl_pim.cli``) imported by nothing outside it.

Every ``import`` and ``from ... import`` counts, at module level and inside functions (an
import inside a function is a cycle waiting for the first call). ``from X import Y`` is an
edge to ``X.Y`` when that is a module, otherwise to ``X``.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "jaxrl_pim"


def module_name(path: Path, root: Path = PACKAGE) -> str:
    """``jaxrl_pim/a/b.py`` -> ``jaxrl_pim.a.b``; ``jaxrl_pim/a/__init__.py`` -> ``jaxrl_pim.a``."""
    parts = [root.name, *path.relative_to(root).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> the package's modules it imports (anywhere in its source)."""
    files = {module_name(p, root): p for p in sorted(root.rglob("*.py"))}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        is_package = path.name == "__init__.py"
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: from the module's own package upwards
                    here = name.split(".") if is_package else name.split(".")[:-1]
                    here = here[: len(here) - (node.level - 1)]
                    base = ".".join([*here, base] if base else here)
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in files else base
                           for a in node.names]
            else:
                continue
            edges.update(t for t in targets if t in files and t != name)
        graph[name] = edges
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as a path ``[a, b, ..., a]``, or None when it has none."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_cycle_finder_finds_cycles():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"b2"}, "b2": {"b"}}) == ["b", "b2", "b"]


def test_the_graph_sees_module_and_function_level_imports(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from . import leaf\n")
    (pkg / "sub" / "leaf.py").write_text("def f():\n    from pkg.top import g\n")
    (pkg / "top.py").write_text("import pkg.sub\nfrom pkg.sub import leaf\n")
    graph = import_graph(pkg)
    assert graph == {"pkg": set(), "pkg.sub": {"pkg.sub.leaf"}, "pkg.sub.leaf": {"pkg.top"},
                     "pkg.top": {"pkg.sub", "pkg.sub.leaf"}}
    assert find_cycle(graph) == ["pkg.sub", "pkg.sub.leaf", "pkg.top", "pkg.sub"]
    # and the real graph holds the edges the commands rely on
    real = import_graph()
    assert "jaxrl_pim.cli.tabular" in real["jaxrl_pim.cli"]  # inside a registrar function
    assert "jaxrl_pim.tabular.runner" in real["jaxrl_pim.cli.tabular"]
    assert "jaxrl_pim.cli.launch" in real["jaxrl_pim.cli.tabular"]


def test_the_package_has_no_import_cycle():
    cycle = find_cycle(import_graph())
    assert cycle is None, " -> ".join(cycle)


def test_only_the_host_wing_imports_it():
    offenders = sorted(
        f"{name} imports {target}"
        for name, targets in import_graph().items()
        if not (name == "jaxrl_pim.cli" or name.startswith("jaxrl_pim.cli."))
        for target in targets
        if target == "jaxrl_pim.cli" or target.startswith("jaxrl_pim.cli.")
    )
    assert not offenders, offenders
