"""griffe extension for the API reference: docstrings written with reStructuredText roles
render as Markdown code.

The docstrings use Sphinx-style roles (``:class:`~jaxrl_pim.tabular.TabularConfig```) and
``::`` before literal blocks. Markdown shows those characters as they are, so this extension
rewrites each docstring before it is rendered: a role becomes inline code of its target (the
last dotted component with ``~``), and a ``::`` that ends a line becomes ``:`` (the indented
block after it is already a Markdown code block).
"""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(?:class|func|meth|mod|data|attr|exc|obj|const):`(~?)([^`]+)`")
LITERAL = re.compile(r"(?<=\S)::$", re.M)


def markdown(text: str) -> str:
    """``text`` with reStructuredText roles as inline code and ``::`` line ends as ``:``."""

    def role(m: re.Match[str]) -> str:
        target = m.group(2).strip()
        if m.group(1):
            target = target.rsplit(".", 1)[-1]
        return f"`{target}`"

    text = ROLE.sub(role, text)
    text = re.sub(r"^[ \t]*::[ \t]*$", "", text, flags=re.M)
    return LITERAL.sub(":", text)


class RstToMarkdown(griffe.Extension):
    """Rewrite every docstring with :func:`markdown` once the package is loaded."""

    def on_object(self, *, obj: griffe.Object, loader: Any, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = markdown(obj.docstring.value)
