"""Compiling for the MARL learner tests (``test_trainer``, ``test_learner_replay``).

The learner tests check program logic on tiny shapes, where XLA:CPU compilation dominates the
wall time (several seconds per training program, milliseconds to run it). ``compile_logic``
compiles with XLA's backend optimisation level 0: the same HLO program, with less LLVM
optimisation of the generated machine code, in about half the compile time. Every comparison
in these tests is between programs compiled the same way; the learning-quality tests
(``test_learning.py``) use the default compiler settings.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax

from tests.support import FAST_COMPILE

LOGIC_OPTIONS = FAST_COMPILE


def compile_logic(fn: Callable[..., Any], *args: Any) -> Callable[..., Any]:
    """``jax.jit(fn)`` lowered for ``args`` and compiled with :data:`LOGIC_OPTIONS`.

    The result is called with arguments of the same shapes and dtypes as ``args``.
    """
    return jax.jit(fn).lower(*args).compile(compiler_options=LOGIC_OPTIONS)
