"""No function of the host layer is longer than 80 lines (its ``def`` line through the end of
its body, read with ``ast``; methods and nested functions count on their own, and inside their
parent): the commands (``jaxrl_pim/cli/``, at most 40 lines: option parsing and glue, each
step named), the runner and the checkpoint folder, the learners' adapters (tabular, MARL, a
group of seeds, every ActorQ module), the replay buffers and the MARL update round. The jitted
trainers (``make_train`` of the trainer modules) and the Pallas kernels are not in the list: a
traced program reads best as one function."""

from __future__ import annotations

import ast
from pathlib import Path

LIBRARY = Path(__file__).resolve().parents[1] / "jaxrl_pim"
LIMIT = 80
#: files and folders (every ``*.py`` below them) under ``jaxrl_pim/``
CHECKED = ("cli", "runner.py", "checkpoint.py", "tabular/runner.py", "marl/checkpoint.py",
           "marl/seeds.py", "actorq", "replay", "marl/learner.py")
#: entries of :data:`CHECKED` held to a tighter limit than :data:`LIMIT`
TIGHTER = {"cli": 40}


def checked_files() -> list[Path]:
    """The ``*.py`` files of :data:`CHECKED`, each once, in order."""
    files: list[Path] = []
    for name in CHECKED:
        path = LIBRARY / name
        assert path.exists(), f"{name} is gone: update CHECKED"
        files += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    return list(dict.fromkeys(files))


def limit_of(path: Path) -> int:
    """The line limit of ``path``: the tightest of the :data:`TIGHTER` entries it is in, else
    :data:`LIMIT`."""
    return min([limit for name, limit in TIGHTER.items()
                if path == LIBRARY / name or (LIBRARY / name) in path.parents], default=LIMIT)


def long_functions(path: Path, limit: int = LIMIT) -> list[str]:
    """``file:line name (N lines)`` of every function of ``path`` over ``limit`` lines."""
    tree = ast.parse(path.read_text(), str(path))
    where = path.relative_to(LIBRARY.parent) if path.is_relative_to(LIBRARY.parent) else path
    return [f"{where}:{node.lineno} {node.name} "
            f"({node.end_lineno - node.lineno + 1} lines)"
            for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and node.end_lineno - node.lineno + 1 > limit]


def test_the_length_check_counts_the_def_line_through_the_body(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(79))
    short, long = tmp_path / "short.py", tmp_path / "long.py"
    short.write_text(f"def f():\n{body}\n")  # 80 lines
    long.write_text(f"@decorated\ndef g():\n{body}\n    return x0\n")  # 81 lines, def on
    assert long_functions(short, 80) == [] and len(long_functions(long, 80)) == 1


def test_no_function_of_the_host_layer_is_longer_than_80_lines():
    problems = [p for path in checked_files() for p in long_functions(path, limit_of(path))]
    assert not problems, "\n".join(problems)


def test_the_commands_are_held_to_40_lines():
    assert limit_of(LIBRARY / "cli" / "tabular.py") == 40
    assert limit_of(LIBRARY / "runner.py") == LIMIT == 80
    assert all(name in CHECKED for name in TIGHTER)
