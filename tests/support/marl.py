"""Compiling for the MARL tests that check program logic rather than learning quality.

The learner tests (``test_trainer``, ``test_learner_replay``) and the command / checkpoint /
policy tests run tiny shapes, where XLA:CPU compilation dominates the wall time (several
seconds per training program, milliseconds to run it). Two ways to compile those programs
with XLA's backend optimisation level 0 (the same HLO program, with less LLVM optimisation of
the generated machine code, in about half the compile time and with the same IEEE
semantics):

* :func:`compile_logic` for a function the test jits itself;
* :func:`tests.support.fast_compilation` around library code that jits on its own
  (``jaxrl-pim marl``, ``marl.checkpoint.run``, ``marl.evaluate``): jax's
  ``jax_disable_most_optimizations`` for the programs compiled inside.

Every comparison in these tests is between programs compiled the same way; the
learning-quality tests (``test_learning.py``) and the SIGKILL / resume test
(``test_checkpoint.py``) use the default compiler settings.

``JAXMARL_TINY``: the tiny ``jaxrl-pim marl`` run on JaxMARL's spread that
``tests/marl/conftest.py`` trains once for the policy and ``marl evaluate`` tests.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax

from tests.support import FAST_COMPILE

__all__ = ["JAXMARL_ENV", "JAXMARL_GROUP", "JAXMARL_TINY", "LOGIC_OPTIONS", "compile_logic"]

LOGIC_OPTIONS = FAST_COMPILE

JAXMARL_ENV = "jaxmarl:MPE_simple_spread_v3"
#: ``jaxrl-pim marl`` options of a tiny run on JaxMARL's spread (3 episodes of 2 envs; update
#: rounds every 5 steps from step 8 on). Seed 0.
JAXMARL_TINY = ["marl", "--env", JAXMARL_ENV, "--episodes", "3", "--num-envs", "2",
                "--batch-size", "8", "--capacity", "64", "--learning-starts", "16",
                "--update-every", "5", "--no-progress"]
#: xdist group of the tests that use that run (one worker runs them, the run is trained once)
JAXMARL_GROUP = "marl-jaxmarl-run"


def compile_logic(fn: Callable[..., Any], *args: Any) -> Callable[..., Any]:
    """``jax.jit(fn)`` lowered for ``args`` and compiled with :data:`LOGIC_OPTIONS`.

    The result is called with arguments of the same shapes and dtypes as ``args``.
    """
    return jax.jit(fn).lower(*args).compile(compiler_options=LOGIC_OPTIONS)
