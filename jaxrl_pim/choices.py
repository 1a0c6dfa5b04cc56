"""The names the options of the library and of ``jaxrl-pim`` take, in a module that imports
nothing (no jax, no numpy).

The modules that use a name re-export it from here (``jaxrl_pim.marl.config.ALGOS`` is
:data:`MARL_ALGOS`, ``jaxrl_pim.replay.LAYOUTS`` is :data:`LAYOUTS`, ...), so each list exists
once; the commands import this module to parse and check their options before jax (1-2 s)
or JaxMARL (10 s and more on a cold start) is imported: a misspelt name or a count of zero
is refused within a second.
"""

from __future__ import annotations

# --- replay (jaxrl_pim.replay)

LAYOUTS: tuple[str, ...] = ("per_agent", "interleaved", "packed", "compact")
"""Replay memory layouts (:func:`jaxrl_pim.replay.make_buffer`)."""

SAMPLERS: tuple[str, ...] = ("uniform", "neighbor", "prioritized", "info_prioritized")
"""Mini-batch index samplers (:mod:`jaxrl_pim.replay.samplers`)."""

# --- particle worlds (jaxrl_pim.envs.mpe) and JaxMARL (jaxrl_pim.envs.jaxmarl_adapter)

TAG_PRESETS: dict[int, tuple[int, int, int]] = {
    3: (3, 1, 2),
    6: (6, 2, 2),
    12: (12, 4, 4),
    24: (24, 8, 8),
    48: (48, 16, 16),
}
"""Predator-prey sizes: preset (number of predators) -> ``(predators, prey, obstacles)``.

3 and 24 are the published configurations (obs 16/14 and 98/96); the others keep one
prey per three predators and ``max(2, prey)`` obstacles.
"""

JAXMARL_PREFIX = "jaxmarl:"
"""``env`` names of JaxMARL environments start with this (``jaxmarl:MPE_simple_spread_v3``)."""

JAXMARL_SUPPORTED: tuple[str, ...] = (
    "MPE_simple_v3",
    "MPE_simple_tag_v3",
    "MPE_simple_world_comm_v3",
    "MPE_simple_spread_v3",
    "MPE_simple_crypto_v3",
    "MPE_simple_speaker_listener_v4",
    "MPE_simple_push_v3",
    "MPE_simple_adversary_v3",
    "MPE_simple_reference_v3",
    "MPE_simple_facmac_v1",
    "MPE_simple_facmac_3a_v1",
    "MPE_simple_facmac_6a_v1",
    "MPE_simple_facmac_9a_v1",
)
"""Registered JaxMARL environments the adapter takes (flat observations, fixed-length
episodes, ``Discrete`` or ``Box(0, 1)`` actions): JaxMARL 0.2's ``MPE_*`` family (a test
checks each against ``jaxmarl.registered_envs`` where JaxMARL is installed)."""

# --- multi-agent learners (jaxrl_pim.marl)

MARL_ALGOS: tuple[str, ...] = ("maddpg", "matd3", "masac")
"""MARL learners (``MARLConfig.algo``)."""

MARL_ENVS: tuple[str, ...] = ("spread", "tag")
"""The library's own particle worlds (``MARLConfig.env``; or ``jaxmarl:NAME``)."""

SAMPLING_MODES: tuple[str, ...] = ("faithful", "fast")
"""``faithful``: own mini-batch indices per agent; ``fast``: one shared index set."""

POLICIES: tuple[str, ...] = ("greedy", "sample", "random")
"""Policies :func:`jaxrl_pim.marl.policies.evaluate` runs: ``greedy`` (softmax of the logits,
no noise), ``sample`` (Gumbel-softmax, as in training), ``random`` (Gumbel-softmax of zero
logits: uniformly random discrete actions, the untrained policy's distribution)."""

LONG_RUN_TRANSITIONS = 100_000
"""Runs storing at least this many transitions count as long (the command estimates them)."""

# --- tabular learners (jaxrl_pim.tabular)

TABULAR_ALGOS: tuple[str, ...] = ("q", "sarsa")
"""Tabular update rules (``TabularConfig.algo``)."""

FORMATS: tuple[str, ...] = ("fp32", "int32", "fp16", "bf16")
"""Q-table number formats (:mod:`jaxrl_pim.tabular.formats`)."""

SAMPLINGS: tuple[str, ...] = ("seq", "ran", "str")
"""Row orders of a lane's chunk per episode: in order, uniform with replacement, stride."""

RNGS: tuple[str, ...] = ("jax", "lcg")
"""Random numbers of ``ran`` sampling and SARSA: JAX threefry or the PIM LCG."""

# --- quantization studies (jaxrl_pim.studies)

STUDY_TASKS: tuple[str, ...] = (
    "ppo-cartpole", "dqn-cartpole", "a2c-cartpole", "ppo-acrobot", "dqn-acrobot",
    "dqn-mountaincar", "ddpg-pendulum", "ppo-pendulum", "ddpg-mountaincarcontinuous",
)
"""The registered study tasks' names (``jaxrl-pim ptq/qat --tasks``), in the order of
:data:`jaxrl_pim.studies.TASKS` (a test checks that they are its keys)."""

# --- actor-learner RL (jaxrl_pim.actorq)

ACTORQ_ALGOS: tuple[str, ...] = ("dqn", "d4pg")
"""ActorQ learners: DQN (discrete actions), D4PG (continuous actions)."""

PRECISIONS: tuple[str, ...] = ("fp32", "fp16", "int8")
"""Actor policy precisions."""

MODES: tuple[str, ...] = ("single", "ray", "processes")
"""Where the actors run: one jitted program, Ray actors, local OS processes."""

COMPUTES: tuple[str, ...] = ("auto", "native", "emulated", "float32")
"""Actor arithmetic: the fastest that computes the quantized policy on the device (measured),
the precision's own matmuls, int8 codes multiplied on the float units, or dequantized
float32."""

DQN_ENVS: tuple[str, ...] = ("CartPole-v1", "Acrobot-v1", "MountainCar-v0")
"""gymnax tasks with tuned DQN defaults (any discrete-action task with flat observations is
accepted)."""

D4PG_ENVS: tuple[str, ...] = ("Pendulum-v1",)
"""gymnax tasks with tuned D4PG defaults."""

GYMNAX_ENVS: tuple[str, ...] = (
    "Pendulum-v1", "CartPole-v1", "MountainCar-v0", "MountainCarContinuous-v0", "Acrobot-v1",
    "Catch-bsuite", "DeepSea-bsuite", "DiscountingChain-bsuite", "MemoryChain-bsuite",
    "UmbrellaChain-bsuite", "MNISTBandit-bsuite", "SimpleBandit-bsuite", "Asterix-MinAtar",
    "Breakout-MinAtar", "Freeway-MinAtar", "Seaquest-MinAtar", "SpaceInvaders-MinAtar",
    "BernoulliBandit-misc", "GaussianBandit-misc", "FourRooms-misc", "MetaMaze-misc",
    "PointRobot-misc", "Reacher-misc", "Swimmer-misc", "Pong-misc", "FrozenLake-misc",
)
"""The environments gymnax 1.0 registers when it is imported (a test checks the list against
``gymnax.registered_envs``), for the commands' name check before jax: the configs check the
name against the live registry (and the observation and action spaces) once jax is loaded."""
