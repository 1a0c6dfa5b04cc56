"""jaxrl_pim: memory-bound reinforcement-learning workloads mapped onto accelerators.

Sub-packages: ``envs`` (worlds that step), ``data`` (offline experience), ``tabular``
(SwiftRL on vmapped lanes), ``marl`` (multi-agent replay), ``quant`` (quantizers),
``actorq`` (actor-learner RL with quantized actors). This top level only re-exports.
"""

__version__ = "0.1.0"
