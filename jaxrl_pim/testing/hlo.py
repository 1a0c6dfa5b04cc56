"""Reading a compiled XLA program's text (``jax.jit(f).lower(...).compile().as_text()``):
its computations, its ``while`` bodies and what a computation calls, for tests that count
what a hot loop holds (fusions, conditionals, dots)."""

from __future__ import annotations

import re

__all__ = ["computations", "reached_from", "while_bodies"]

#: an instruction's reference to another computation
_CALLS = re.compile(r"(?:body|condition|to_apply|calls)=%?([\w.\-]+)")


def while_bodies(hlo_text: str) -> list[str]:
    """The names of the body computations of every ``while`` of the module, in text order."""
    return [m.group(1) for m in re.finditer(r" while\(.*?body=%?([\w.\-]+)", hlo_text)]


def reached_from(comps: dict[str, list[str]], name: str) -> set[str]:
    """``name`` and every computation of ``comps`` it calls, directly or not (fusions,
    reductions' ``to_apply``, loops' bodies and conditions)."""
    reached, todo = set(), [name]
    while todo:
        c = todo.pop()
        if c in reached or c not in comps:
            continue
        reached.add(c)
        todo += [m for ln in comps[c] for m in _CALLS.findall(ln)]
    return reached


def computations(hlo_text: str) -> tuple[dict[str, list[str]], str | None]:
    """The computations of a compiled HLO module's text (name -> instruction lines) and the
    name of its innermost ``while`` body (one that reaches no other loop), or None."""
    comps: dict[str, list[str]] = {}
    name = None
    for line in hlo_text.splitlines():
        head = re.match(r"^(?:ENTRY )?%?([\w.\-]+) .*\{\s*$", line)
        if head:
            name = head.group(1)
            comps[name] = []
        elif line.startswith("}"):
            name = None
        elif name is not None and line.strip():
            comps[name].append(line.strip())

    def holds_while(c: str) -> bool:
        return any(" while(" in ln for ln in comps[c])

    inner = [b for b in while_bodies(hlo_text)
             if b in comps and not any(holds_while(c) for c in reached_from(comps, b))]
    return comps, (inner[-1] if inner else None)
