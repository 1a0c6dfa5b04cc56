"""Independent reference implementations, for the tests and the benchmarks.

Plain NumPy / Python versions of what the library computes in JAX, written for clarity and
not speed, so that the JAX code can be checked against them and the benchmarks can time the
original algorithms side by side:

* :mod:`.tabular_numpy`: offline tabular Q-learning / SARSA over lanes (every variant).
* :mod:`.tabular_numba`: the same algorithms as fast Numba CPU baselines (imports numba, an
  optional dependency; nothing imports it by default).
* :mod:`.mpe_numpy`: the multi-agent particle worlds, one entity at a time, in float64.
* :mod:`.maddpg_numpy_sampler`: the original MADDPG list-of-tuples replay sampler.
* :mod:`.lane_forms`: alternative forms of the tabular lane step (Q-learning), for the
  form study of ``benchmarks/tabular_scaling.py``.
"""
