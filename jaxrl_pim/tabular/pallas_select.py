"""The lane kernels by name, and what ``kernel="auto"`` picks on a backend.

=================  ==========================================================================
name               what it is
=================  ==========================================================================
``scan``           :func:`jaxrl_pim.tabular.lanes.run_episodes`: portable ``lax.scan``, every
                   backend (the reference the kernels are tested against).
``pallas_lane``    :mod:`jaxrl_pim.tabular.pallas_gpu`: one lane per GPU thread, indexed
                   ``O(A)`` table access, one launch per sync round (Pallas Triton).
``pallas_onehot``  :mod:`jaxrl_pim.tabular.pallas_lanes`: a block of lanes per program, tables
                   as ``[lanes, S*A]`` tiles read and written by one-hot selection, one launch
                   per episode (Pallas Triton).
``pallas_tpu``     :mod:`jaxrl_pim.tabular.pallas_tpu`: lanes on the TPU's 128-wide vector
                   axis, one-hot access over ``[S*A, 128]`` tables in VMEM (Mosaic TPU).
=================  ==========================================================================

``auto`` tries, on NVIDIA / AMD GPUs, ``pallas_lane`` then ``pallas_onehot``; on TPUs
``pallas_tpu``; each only if a one-time probe compile of that kernel for the variant succeeds
on the backend (a failure warns and moves on), and the scan path last. Elsewhere (CPU) it is
the scan path: the Pallas kernels run there only in interpret mode, for tests.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxrl_pim.tabular import pallas_gpu, pallas_tpu
from jaxrl_pim.tabular.constants import (  # jax-free (the config checks them), re-exported
    KERNEL_NAMES,
    kernel_fits,
)
from jaxrl_pim.tabular.lanes import LaneData, LaneDraws, LaneSpec, run_episodes
from jaxrl_pim.tabular.pallas_lanes import run_episodes_pallas

GPU_BACKENDS = ("gpu", "cuda", "rocm")


class LaneKernel(NamedTuple):
    """A lane kernel as the trainer uses it.

    Attributes:
      prepare: ``(spec, data) -> rows``, once per run, from :class:`LaneData` (time-major
        ``[m, L]`` for ``seq``/``str``, lane-major ``[L, m]`` for ``ran``).
      run: ``(spec, q, rows, draws, num_episodes, lanes_per_block) -> (q, lcg_state)``
        (``draws`` a :class:`LaneDraws`; see :func:`jaxrl_pim.tabular.lanes.run_episodes`).
      time_major: the prepared rows have lanes on axis 1 for every sampling (otherwise only
        for ``seq``/``str``, lanes on axis 0 for ``ran``).
    """

    prepare: Callable[[LaneSpec, LaneData], Any]
    run: Callable[..., tuple[jax.Array, jax.Array]]
    time_major: bool


def _scan(spec, q, data, draws, num_episodes, lanes_per_block=0, **_):
    del lanes_per_block  # a vectorised axis: no blocks
    return run_episodes(spec, q, data, draws, num_episodes)


KERNELS: dict[str, LaneKernel] = {
    "scan": LaneKernel(lambda spec, data: data, _scan, False),
    "pallas_lane": LaneKernel(pallas_gpu.prepare_rows, pallas_gpu.run_episodes_lane, True),
    "pallas_onehot": LaneKernel(lambda spec, data: data, run_episodes_pallas, False),
    "pallas_tpu": LaneKernel(pallas_tpu.prepare_rows, pallas_tpu.run_episodes_tpu, True),
}


def canonical_name(name: str) -> str:
    """``name`` if it is a kernel's name (ValueError for unknown names)."""
    if name not in KERNELS:
        raise ValueError(f"kernel must be one of {', '.join(KERNEL_NAMES)}; got {name!r}")
    return name


def get_kernel(name: str) -> LaneKernel:
    """The :class:`LaneKernel` called ``name``."""
    return KERNELS[canonical_name(name)]


def auto_candidates(backend: str) -> tuple[str, ...]:
    """The kernels ``auto`` tries on ``backend``, in order, before the scan path."""
    if backend in GPU_BACKENDS:
        return ("pallas_lane", "pallas_onehot")
    if backend == "tpu":
        return ("pallas_tpu",)
    return ()


@functools.cache
def kernel_compiles(name: str, spec: LaneSpec, backend: str) -> bool:
    """Whether kernel ``name`` for ``spec`` compiles on ``backend`` (probed once, cached;
    a failure warns with the first line of the error). Always False on ``cpu``."""
    name = canonical_name(name)
    if name == "scan":
        return True
    if backend == "cpu" or not kernel_fits(name, spec.num_states, spec.num_actions):
        return False
    num_lanes, m = 2, 4
    q = jnp.zeros((num_lanes, spec.num_states, spec.num_actions), spec.fmt.storage)
    idx = jnp.zeros((m, num_lanes), jnp.int32)
    r = jnp.zeros((m, num_lanes), jnp.int32 if spec.fmt.is_fixed_point else jnp.float32)
    data = LaneData(idx, idx, r, jnp.zeros((m, num_lanes), bool))
    if spec.sampling == "ran":
        data = LaneData(*(x.T for x in data))
    kernel = KERNELS[name]
    rows = kernel.prepare(spec, data)
    draws = LaneDraws(jax.random.split(jax.random.key(0), num_lanes),
                      jnp.zeros((num_lanes,), jnp.uint32), jnp.int32(0))
    try:
        fn = jax.jit(functools.partial(kernel.run, spec, num_episodes=2, lanes_per_block=2,
                                       interpret=False, platform=backend))
        fn.lower(q, rows, draws).compile()
        return True
    except Exception as err:  # noqa: BLE001 - any lowering failure means "try the next one"
        warnings.warn(
            f"Pallas kernel {name!r} does not compile on {backend} ({type(err).__name__}: "
            f"{str(err).splitlines()[0][:200] if str(err) else ''}); trying the next kernel",
            RuntimeWarning, stacklevel=2)
        return False


def choose_kernel(spec: LaneSpec, backend: str, probe: bool = False) -> str:
    """What ``kernel="auto"`` means for ``spec`` on ``backend``: the first of
    :func:`auto_candidates` that fits (and, with ``probe``, compiles), else ``"scan"``."""
    for name in auto_candidates(backend):
        if not kernel_fits(name, spec.num_states, spec.num_actions):
            continue
        if not probe or kernel_compiles(name, spec, backend):
            return name
    if probe and auto_candidates(backend):
        warnings.warn(f"no Pallas lane kernel compiles on {backend}; using the lax.scan path",
                      RuntimeWarning, stacklevel=2)
    return "scan"
