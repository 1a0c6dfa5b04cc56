"""Reading a compiled XLA program's text (``jax.jit(f).lower(...).compile().as_text()``):
its computations and its innermost loop body, for tests that count what a hot loop holds
(fusions, conditionals, dots)."""

from __future__ import annotations

import re

__all__ = ["computations"]


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
    refs = {c: {m for ln in lines
                for m in re.findall(r"(?:body|condition|to_apply|calls)=%?([\w.\-]+)", ln)
                if m in comps} for c, lines in comps.items()}

    def reaches_while(c: str, seen: set[str]) -> bool:
        if c in seen:
            return False
        seen.add(c)
        return (any(" while(" in ln for ln in comps[c])
                or any(reaches_while(r, seen) for r in refs[c]))

    bodies = [m.group(1) for lines in comps.values() for ln in lines
              for m in [re.search(r"body=%?([\w.\-]+)", ln)] if m and " while(" in ln]
    inner = [b for b in bodies if b in comps and not reaches_while(b, set())]
    return comps, (inner[-1] if inner else None)
