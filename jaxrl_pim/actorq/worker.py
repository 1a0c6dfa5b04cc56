"""One actor of the distributed deployments, independent of how it talks to the learner.

An :class:`ActorWorker` owns ``envs_per_actor`` environments and the policy it last
received. ``set_policy(version, wire)`` checks and rebuilds a broadcast ("deserialize":
CRC32, views of the int8 codes / fp16 values and scales) and copies it to the device
("load": int8 kernels stay int8 codes + scale for int8 matmuls, the rest is dequantized; see
:func:`jaxrl_pim.actorq.broadcast.load`). ``rollout()`` runs ``actor_update_period`` steps of
every environment in one jitted scan ("inference", the paper's "step") and returns the
n-step transitions as NumPy arrays, one batch per refresh period. The transports
(:mod:`jaxrl_pim.actorq.ray_pool`, :mod:`jaxrl_pim.actorq.process_pool`) add the "pull"
(fetching the broadcast's bytes) and move batches to the learner.

Environment keys: ``fold_in(PRNGKey(seed), 1000 + actor_id)``, then ``fold_in(.,
incarnation)`` for an actor restarted after a failure (a fresh stream, not a replay of the
one that died).

The actor computes in ``config.actor_compute`` made concrete for its device and its
``envs_per_actor`` rows per call (``broadcast.actors_compute``). An int8 actor computing
natively or emulated runs the fast int8 path (:mod:`jaxrl_pim.quant.fast_int8`, as
single-program actors do): a broadcast carries no activation ranges, so at each ``set_policy``
the actor calibrates the static activation scales on states it visited itself -- its
environments' current observations and the observations of its last rollout's
:data:`CALIBRATION_ROWS` most recent n-step transitions, the rows the learner's replay receives
(single-program actors calibrate on replay rows); before the first rollout, the current
observations repeated -- and prepares the kernels once; that work is timed as part of "load".
Actor processes run XLA:CPU with one Eigen thread and YNNPACK's dot path on
(``--xla_cpu_experimental_ynn_fusion_type=individual_dot``, where int8 products are fast) and
its other fusion types off (the project's workaround, :mod:`jaxrl_pim.xla_env`): the one place
the project narrows the workaround, since an actor process runs only its policy and its
environments.
"""

from __future__ import annotations

import functools
import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl_pim.actorq.actor import env_step, init_carry
from jaxrl_pim.actorq.algorithms import make_agent
from jaxrl_pim.actorq.broadcast import (
    BroadcastMeta,
    Wire,
    actors_compute,
    deserialize,
    fast_int8_params,
    int8_products,
    load,
)
from jaxrl_pim.actorq.config import ActorQConfig
from jaxrl_pim.envs.factory import make_with_info
from jaxrl_pim.xla_env import CPU_WORKAROUND_FLAGS, with_flags

#: Actor phases timed by every transport (seconds, summed over the actor's life).
ACTOR_PHASES = ("inference", "send", "pull", "deserialize", "load")

#: Visited observations an int8 actor keeps to calibrate the fast path at each broadcast
#: (at most; fewer when a rollout has fewer), besides its environments' current ones.
CALIBRATION_ROWS = 256

#: Environment of an actor process: CPU only, one Eigen thread (actors share the host's
#: cores), YNNPACK's dots on and its other fusion types off. (Every token of ``XLA_FLAGS``
#: must start with ``--``: XLA stops reading at the first that does not.)
ACTOR_ENV = {
    "JAX_PLATFORMS": "cpu",
    "XLA_FLAGS": with_flags("--xla_cpu_multi_thread_eigen=false "
                            "--xla_cpu_experimental_ynn_fusion_type=individual_dot",
                            *CPU_WORKAROUND_FLAGS),
}


class ActorWorker:
    """The environments, policy and compiled rollout of one actor (see the module docstring).

    Args:
      config: the run's configuration (``envs_per_actor``, ``actor_update_period``, ...).
      actor_id: 0 .. ``num_actors - 1``.
      seed: the run's seed.
      meta: the broadcast layout (:class:`~jaxrl_pim.actorq.broadcast.BroadcastMeta`).
      incarnation: 0 for the first start, a different value after each restart.
    """

    def __init__(self, config: ActorQConfig, actor_id: int, seed: int, meta: BroadcastMeta,
                 incarnation: int = 0) -> None:
        self.config = config
        self.actor_id = actor_id
        self.meta = meta
        env, env_params, info = make_with_info(config.env_name)
        agent = make_agent(config, info)
        n_env, period = config.envs_per_actor, config.actor_update_period
        self.compute = actors_compute(config, n_env)
        products = int8_products(config.precision, self.compute)
        key = jax.random.fold_in(jax.random.PRNGKey(seed), 1000 + actor_id)
        if incarnation:
            key = jax.random.fold_in(key, incarnation)
        self.key, k_init = jax.random.split(key)
        self.carry = jax.vmap(lambda k: init_carry(env, env_params, agent, config.n_step, k))(
            jax.random.split(k_init, n_env))

        def step_all(params, carry, key, explore):
            step = lambda c, k: env_step(env, env_params, agent, config.gamma,
                                         config.reward_scale, params, c, k, explore)
            return jax.vmap(step)(carry, jax.random.split(key, n_env))

        def rollout(params, carry, key, explore):
            body = lambda c, k: step_all(params, c, k, explore)
            return jax.lax.scan(body, carry, jax.random.split(key, period))

        self._rollout = jax.jit(rollout)
        # the fast path's calibration rows: a fixed shape, so one compiled preparation
        rows = min(CALIBRATION_ROWS, period * n_env)
        self._seen = np.resize(np.asarray(self.carry.obs), (rows,) + self.carry.obs.shape[1:])
        # the fast int8 path's preparation (None: the actor is not on that path)
        self._prepare = None if products is None else jax.jit(
            functools.partial(fast_int8_params, agent.greedy, products=products))
        self._compiled: Any = None
        self.params: Any = None
        self.version = -1
        self.timing = dict.fromkeys(ACTOR_PHASES, 0.0)
        self.refreshes = 0
        self.rollouts = 0
        self.steps = 0

    def set_policy(self, version: int, wire: Wire) -> None:
        """Deserialize and load broadcast ``version`` (raises ValueError on a bad checksum).

        The first call also compiles the rollout (and, for an int8 actor on the fast path, its
        preparation; neither counted in the phase times).
        """
        t0 = time.perf_counter()
        qtree = deserialize(wire, self.meta)
        t1 = time.perf_counter()
        params = load(qtree, self.compute)
        if self._prepare is not None:
            params = self._prepare(params, jnp.concatenate([self._seen, self.carry.obs]))
        params = jax.block_until_ready(params)
        t2 = time.perf_counter()
        if self._compiled is None:
            explore = self.config.exploration(jnp.zeros((), jnp.float32))
            self._compiled = self._rollout.lower(params, self.carry, self.key, explore).compile()
        else:
            self.timing["deserialize"] += t1 - t0
            self.timing["load"] += t2 - t1
            self.refreshes += 1
        self.params, self.version = params, version

    def rollout(self) -> dict[str, Any]:
        """``actor_update_period`` steps of every environment with the current policy.

        Returns ``{"actor_id", "version", "steps", "transition" (tuple of NumPy arrays
        [steps, ...] in NStepTransition order), "valid" [steps] bool, "returns" (episodes
        completed in this batch, unscaled)}``.
        """
        if self._compiled is None:
            raise RuntimeError("rollout() before the first set_policy()")
        cfg = self.config
        period, n_env = cfg.actor_update_period, cfg.envs_per_actor
        self.key, k_roll = jax.random.split(self.key)
        explore = cfg.exploration(jnp.asarray(self.steps * cfg.num_actors, jnp.float32))
        t0 = time.perf_counter()
        self.carry, out = self._compiled(self.params, self.carry, k_roll, explore)
        out = jax.device_get(out)
        self.timing["inference"] += time.perf_counter() - t0
        n = period * n_env
        flat = lambda x: np.asarray(x).reshape((n,) + np.shape(x)[2:])
        if self._prepare is not None:
            self._seen = flat(out.transition.obs)[n - len(self._seen):]
        self.rollouts += 1
        self.steps += n
        return {
            "actor_id": self.actor_id,
            "version": self.version,
            "steps": n,
            "transition": tuple(flat(x) for x in out.transition),
            "valid": flat(out.valid),
            "returns": np.asarray(out.episode_return)[np.asarray(out.episode_done)],
        }

    def report(self) -> dict[str, Any]:
        """Phase times (s), refreshes, rollouts and steps so far."""
        return {"timing_s": dict(self.timing), "refreshes": self.refreshes,
                "rollouts": self.rollouts, "steps": self.steps}


class Lost:
    """A batch that never reached the learner: its actor failed while producing it."""

    def __init__(self, actor_id: int, steps: int, reason: str) -> None:
        self.actor_id, self.steps, self.reason = actor_id, steps, reason
