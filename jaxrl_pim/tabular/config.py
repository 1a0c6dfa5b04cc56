"""The tabular workload: one :class:`TabularConfig` for the trainer, the PIM cost model and
the reference implementations, and the sync-round arithmetic.

Pure host code: importing this module loads no JAX (the PIM cost model and the Numba
references read the same config without loading the trainer); the constants it checks
against come from :mod:`jaxrl_pim.choices` and :mod:`jaxrl_pim.tabular.constants`. The
methods that return JAX objects (:attr:`TabularConfig.format`,
:meth:`TabularConfig.lane_spec`, :meth:`TabularConfig.resolved_kernel`) import the trainer's
modules when called.

Sync rounds: a run of ``num_episodes`` episodes goes in ``num_rounds = ceil(num_episodes /
sync_period)`` rounds of ``sync_period`` episodes, the last one shorter when ``sync_period``
does not divide ``num_episodes``. :func:`episodes_in_rounds` is the one place that says how
many episodes a range of rounds runs; the trainer, the runner, the cost model and the
references all ask it.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from jaxrl_pim import choices
from jaxrl_pim.checks import check_bool, check_choice, check_float, check_int
from jaxrl_pim.tabular.constants import (
    KERNEL_NAMES,
    LCG_SEED,
    MAX_INT_MEAN_LANES,
    SCALE,
    kernel_fits,
)

# the option names live in jaxrl_pim.choices (the command checks them before importing jax)
ALGOS = choices.TABULAR_ALGOS
FORMATS = choices.FORMATS
SAMPLINGS = choices.SAMPLINGS
RNGS = choices.RNGS
KERNELS = ("auto", *KERNEL_NAMES)
INT32_MAX = 2**31 - 1


@dataclasses.dataclass(frozen=True)
class TabularConfig:
    """Offline tabular learning on ``num_cores`` lanes (validated at construction).

    The one description of a tabular workload: the trainer runs it, the PIM cost model
    (:func:`jaxrl_pim.pim.estimate`) costs it and the references
    (:mod:`jaxrl_pim.testing.tabular_numpy`, :mod:`jaxrl_pim.testing.tabular_numba`) replay it.

    Attributes:
      num_states, num_actions: MDP size (S, A); S < 2**31, A <= 255.
      algo: ``"q"`` (Q-learning, true max bootstrap) or ``"sarsa"``.
      sampling: ``"seq"``, ``"ran"`` or ``"str"`` (see :mod:`jaxrl_pim.tabular.sampling`).
      dtype: Q-table format, one of ``fp32``, ``int32``, ``fp16``, ``bf16``. int32 needs
        ``alpha * 10,000`` to round to at least 1 and ``gamma * 10,000`` below 10,000.
      num_cores: lanes C (PIM cores). In independent mode: agents K.
      sync_period: episodes between lane averages (tau).
      num_episodes: episodes; one episode = one pass over a lane's chunk.
      alpha, gamma: learning rate and discount.
      epsilon: SARSA exploration rate for ``a'``.
      stride: ``k`` of ``str`` sampling.
      rng: ``"jax"`` (threefry PRNG) or ``"lcg"`` (the PIM generator, seed ``lcg_seed``).
      independent: one lane per agent with its own dataset and no averaging.
      compat_max0: Q-learning bootstraps with ``max(0, max Q)`` like the published C code.
      kernel: ``"auto"`` (a fused Pallas kernel on GPU/TPU when it compiles there,
        ``lax.scan`` elsewhere; see :mod:`jaxrl_pim.tabular.pallas_select`), ``"scan"``,
        ``"pallas_lane"`` (lane per GPU thread), ``"pallas_onehot"`` (one-hot GPU kernel) or
        ``"pallas_tpu"``. On CPU the Pallas kernels run in interpret mode: for tests.
      unroll: steps per ``lax.scan`` iteration in the scan path (speed only).
      lanes_per_block: lanes one Pallas program handles (speed only); 0 (default) picks
        about ``lanes / 128`` per program (the loop over rows is sequential, so more programs
        keep more of the GPU busy: on an H100, 2,000 FrozenLake lanes ran 5.7x faster in the
        one-hot kernel with 8 lanes per program than with 128), at most 128 for
        ``pallas_onehot`` and 32 (one warp) for ``pallas_lane``; ``pallas_tpu`` rounds it up
        to a multiple of 128.
    """

    num_states: int
    num_actions: int
    algo: str = "q"
    sampling: str = "seq"
    dtype: str = "fp32"
    num_cores: int = 2000
    sync_period: int = 50
    num_episodes: int = 2000
    alpha: float = 0.1
    gamma: float = 0.95
    epsilon: float = 0.1
    stride: int = 4
    rng: str = "jax"
    lcg_seed: int = LCG_SEED
    independent: bool = False
    compat_max0: bool = False
    kernel: str = "auto"
    unroll: int = 1
    lanes_per_block: int = 0

    def __post_init__(self) -> None:
        check_int("num_states", self.num_states, 1, INT32_MAX)
        check_int("num_actions", self.num_actions, 1, 255)
        check_choice("algo", self.algo, ALGOS)
        check_choice("sampling", self.sampling, SAMPLINGS)
        check_choice("dtype", self.dtype, FORMATS)
        check_int("num_cores", self.num_cores, 1)
        check_int("sync_period", self.sync_period, 1)
        check_int("num_episodes", self.num_episodes, 1)
        check_float("alpha", self.alpha, 0.0, 1.0, lo_open=True)
        check_float("gamma", self.gamma, 0.0, 1.0)
        check_float("epsilon", self.epsilon, 0.0, 1.0)
        check_int("stride", self.stride, 1)
        check_choice("rng", self.rng, RNGS)
        check_int("lcg_seed", self.lcg_seed, 0, 2**32 - 1)
        check_bool("independent", self.independent)
        check_bool("compat_max0", self.compat_max0)
        check_choice("kernel", self.kernel, KERNELS)
        if not kernel_fits(self.kernel, self.num_states, self.num_actions):
            raise ValueError(
                f"kernel={self.kernel!r} packs s*A+a and s' into 31 bits; num_states="
                f"{self.num_states} x num_actions={self.num_actions} does not fit: use "
                "kernel='scan' or 'pallas_onehot'")
        check_int("unroll", self.unroll, 1, 64)
        check_int("lanes_per_block", self.lanes_per_block, 0)
        if self.compat_max0 and self.algo != "q":
            raise ValueError("compat_max0 applies to Q-learning only (algo='q')")
        if self.dtype == "int32":
            if round(self.alpha * SCALE) < 1:
                raise ValueError(f"dtype int32 needs alpha * {SCALE} to round to >= 1; got "
                                 f"alpha={self.alpha}")
            if round(self.gamma * SCALE) >= SCALE:
                raise ValueError(f"dtype int32 needs gamma < 1 at scale {SCALE} so Q stays "
                                 f"bounded; got gamma={self.gamma}")
            if not self.independent:
                check_int("num_cores", self.num_cores, 1, MAX_INT_MEAN_LANES)

    @property
    def num_rounds(self) -> int:
        """Sync rounds ``ceil(num_episodes / sync_period)`` (the last possibly shorter)."""
        return -(-self.num_episodes // self.sync_period)

    @property
    def format(self) -> Any:
        """The Q-table :class:`~jaxrl_pim.tabular.formats.NumericFormat` (loads jax; typed
        ``Any`` because this module may not import the trainer's modules, which import it)."""
        from jaxrl_pim.tabular import formats

        return formats.get_format(self.dtype)

    def lane_spec(self) -> Any:
        """The static facts the lane kernel needs, a
        :class:`~jaxrl_pim.tabular.lanes.LaneSpec` (loads jax)."""
        from jaxrl_pim.tabular.lanes import LaneSpec

        return LaneSpec(
            self.num_states, self.num_actions, self.algo, self.sampling, self.format,
            self.alpha, self.gamma, self.epsilon, self.rng, self.compat_max0, self.unroll,
        )

    def resolved_kernel(self, backend: str | None = None, probe: bool = False) -> str:
        """The kernel that runs on ``backend`` (one of ``KERNEL_NAMES``; loads jax).

        ``auto`` means, on GPUs, ``pallas_lane`` then ``pallas_onehot``, on TPUs
        ``pallas_tpu``; with ``probe`` (as ``make_train`` does) each only if it compiles
        there for this variant (a failure warns), and the scan path last or elsewhere.
        """
        if self.kernel != "auto":
            return self.kernel
        import jax

        from jaxrl_pim.tabular.pallas_select import choose_kernel

        return choose_kernel(self.lane_spec(), backend or jax.default_backend(), probe)


def episodes_in_rounds(config: TabularConfig, start: int, stop: int) -> int:
    """Episodes that sync rounds ``start .. stop - 1`` run (0-based; the run's last round
    runs ``num_episodes - (num_rounds - 1) * sync_period`` episodes; rounds outside
    ``0 .. num_rounds - 1`` run none). Round ``r`` starts at episode
    ``episodes_in_rounds(config, 0, r)``."""
    start = min(max(int(start), 0), config.num_rounds)
    stop = min(max(int(stop), start), config.num_rounds)
    e, tau = config.num_episodes, config.sync_period
    return min(stop * tau, e) - min(start * tau, e)


def round_lengths(config: TabularConfig) -> list[int]:
    """Episodes of each sync round, ``[num_rounds]``: ``episodes_in_rounds(config, r, r + 1)``."""
    return [episodes_in_rounds(config, r, r + 1) for r in range(config.num_rounds)]
