"""The tests as a house: test modules import shared helpers from ``tests.support`` only,
never from another test module (also not in the code they run in subprocesses), and the
library does not import the tests."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
LIBRARY = TESTS.parent / "jaxrl_pim"
ALLOWED = "tests.support"


def _allowed(module: str) -> bool:
    return module == ALLOWED or module.startswith(ALLOWED + ".")


def _tests_modules(node: ast.AST) -> list[str]:
    """The ``tests`` modules that one import statement names (``import tests.x`` and
    ``from tests.x import y``; ``from tests import x`` names ``tests.x``)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name.split(".")[0] == "tests"]
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        if node.module == "tests":
            return [f"tests.{a.name}" for a in node.names]
        if node.module.split(".")[0] == "tests":
            return [node.module]
    return []


def _string(node: ast.AST) -> str | None:
    """The text of a string literal; an f-string's replacement fields read as ``_``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "_" for v in node.values)
    return None


def forbidden_imports(source: str, filename: str = "<source>") -> list[str]:
    """``line: module`` for each import of a ``tests`` module other than ``tests.support``,
    in ``source`` and in every string in it that parses as Python (subprocess code)."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        found += [f"{node.lineno}: {m}" for m in _tests_modules(node) if not _allowed(m)]
        text = _string(node)
        if text is not None and "tests" in text:
            try:
                inner = ast.parse(text)
            except SyntaxError:
                continue
            found += [f"{node.lineno}: {m} (in a string)" for n in ast.walk(inner)
                      for m in _tests_modules(n) if not _allowed(m)]
    return found


def test_the_checker_finds_imports_of_test_modules():
    src = ("import tests.tabular.test_trainer\n"
           "from tests.actorq.test_rules import project_reference\n"
           "from tests import conftest\n"
           "from tests.support.tabular import random_dataset\n"
           "import tests.support\n"
           "CODE = 'from tests.rl.test_learning import check_learning'\n"
           "CODE = ('from tests.rl.test_networks import x\\n' f'x({a!r})')\n"
           "TEXT = 'not python: tests.x'\n")
    assert forbidden_imports(src) == ["1: tests.tabular.test_trainer",
                                      "2: tests.actorq.test_rules", "3: tests.conftest",
                                      "6: tests.rl.test_learning (in a string)",
                                      "7: tests.rl.test_networks (in a string)"]


def test_no_test_module_imports_another_test_module():
    files = sorted(set(TESTS.rglob("*.py")) - {Path(__file__).resolve()})  # its examples
    assert len(files) > 50
    problems = [f"{path.relative_to(TESTS.parent)}:{p}" for path in files
                for p in forbidden_imports(path.read_text(), str(path))]
    assert not problems, "import shared helpers from tests.support:\n" + "\n".join(problems)


def test_the_library_does_not_import_the_tests():
    problems = []
    for path in sorted(LIBRARY.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if _tests_modules(node):
                problems.append(f"{path.relative_to(LIBRARY.parent)}:{node.lineno}")
    assert not problems, problems


DESIGN = TESTS.parent / "docs" / "design.md"
#: the design's table of long modules: rows ``| `path` | lines | why |`` under this heading
LONG_MODULES_HEADING = "## Modules over 400 lines, and why"
LONG = 400


def _long_module_rows(text: str) -> dict[str, str]:
    """``{path: lines cell}`` of the design's long-module table (paths relative to
    ``jaxrl_pim/``)."""
    section = text.split(LONG_MODULES_HEADING, 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and cells[0].startswith("`") and cells[0].endswith("`"):
            rows[cells[0].strip("`")] = cells[1]
    return rows


def test_the_design_lists_every_long_module_with_its_size():
    """docs/design.md's long-module table is the code's: exactly the library's modules over
    400 lines, each with its size as the hundreds it is in (``700-799``)."""
    rows = _long_module_rows(DESIGN.read_text())
    sizes = {str(p.relative_to(LIBRARY)): len(p.read_text().splitlines())
             for p in sorted(LIBRARY.rglob("*.py"))}
    long = {path for path, n in sizes.items() if n > LONG}
    assert set(rows) == long, (f"listed but not over {LONG} lines: {sorted(set(rows) - long)}; "
                               f"over {LONG} lines but not listed: {sorted(long - set(rows))}")
    for path, cell in rows.items():
        band = f"{sizes[path] // 100 * 100}-{sizes[path] // 100 * 100 + 99}"
        assert cell == band, f"{path}: the table says {cell} lines, the file has {sizes[path]}"
