"""Facts of the tabular learners that need no JAX: the int32 fixed-point scale, the PIM
LCG's seed, the lane kernels' names and which table sizes the packed-row kernels take.

A leaf module (it imports nothing from the package): :mod:`jaxrl_pim.tabular.config`
validates a workload with these, and the modules that compute with them
(:mod:`~jaxrl_pim.tabular.formats`, :mod:`~jaxrl_pim.tabular.sampling`, the kernels) re-export
them, so each exists once and neither side imports the other. The option names
(``ALGOS``, ``FORMATS``, ``SAMPLINGS``, ``RNGS``) live in :mod:`jaxrl_pim.choices`.
"""

from __future__ import annotations

#: int32 fixed-point scale: Q, rewards, alpha and gamma are stored as ``round(x * SCALE)``.
SCALE = 10_000
#: Largest number of lanes an exact int32 mean supports.
MAX_INT_MEAN_LANES = 65_536
#: The PIM LCG's seed (SwiftRL's).
LCG_SEED = 42
#: Lane kernels (see :mod:`jaxrl_pim.tabular.pallas_select`); ``TabularConfig.kernel`` also
#: takes ``"auto"``.
KERNEL_NAMES = ("scan", "pallas_lane", "pallas_onehot", "pallas_tpu")


def pack_bits(num_states: int, num_actions: int) -> tuple[int, int]:
    """Bits of ``sa`` and of ``s'`` in a packed row word: ``(bits(S*A - 1), bits(S - 1))``."""
    sa_bits = max(1, (num_states * num_actions - 1).bit_length())
    return sa_bits, max(1, (num_states - 1).bit_length())


def packable(num_states: int, num_actions: int) -> bool:
    """Whether ``sa``, ``s'`` and the terminal flag fit one 32-bit word (31 bits + 1)."""
    sa_bits, s_bits = pack_bits(num_states, num_actions)
    return sa_bits + s_bits <= 31


def kernel_fits(name: str, num_states: int, num_actions: int) -> bool:
    """Whether kernel ``name`` handles tables of this size (the packed-row kernels need
    ``sa`` and ``s'`` in 31 bits; ``auto`` and the others handle any size)."""
    if name in ("pallas_lane", "pallas_tpu"):
        return packable(num_states, num_actions)
    return True
