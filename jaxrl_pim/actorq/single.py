"""Single-program ActorQ: K actors vmapped on the learner's device, everything jitted.

``make_train(config) -> train(key) -> (state, metrics)`` is pure and jittable (vmap it over
seeds). One iteration = one step of each of the ``num_actors * envs_per_actor``
environments with the actors' (quantized) policy, the emitted n-step transitions added to
replay, a full-precision learner update every ``train_frequency`` iterations once
``learning_starts`` steps are collected, and every ``actor_update_period`` iterations a
broadcast: the learner's policy is quantized (``broadcast.actor_params``) and becomes the
actors' policy. The actors compute in ``config.actor_compute`` made concrete for the device
and the ``num_actors * envs_per_actor`` rows of a call (``broadcast.actors_compute``); int8
actors computing natively or emulated run the fast int8 path (``broadcast.fast_int8_params``,
its products in int32 or in float32: ``broadcast.int8_products``), its
static activation scales calibrated at each broadcast on the environments' current
observations and :data:`CALIBRATION_ROWS` observations sampled from replay.

``run_timed`` drives the same iteration from the host in jitted chunks and records the wall
clock, for time-to-reward curves (compile time is measured separately and excluded): it is
:func:`jaxrl_pim.runner.run` of an :class:`ActorQLearner`, the adapter of this trainer.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl_pim import runner
from jaxrl_pim.actorq.actor import EnvCarry, env_step, evaluate, init_carry
from jaxrl_pim.actorq.agent import Agent, EnvInfo
from jaxrl_pim.actorq.broadcast import actor_params, actors_compute, fast_int8_params, int8_products
from jaxrl_pim.actorq.config import ActorQConfig
from jaxrl_pim.actorq.replay import Replay, ReplayState, make_replay
from jaxrl_pim.checkpoint import Restored, fingerprint
from jaxrl_pim.envs.factory import make_with_info
from jaxrl_pim.replay import NStepTransition

#: Replay observations (with the environments' current ones) calibrating an int8 broadcast.
CALIBRATION_ROWS = 256


class RunState(NamedTuple):
    """Whole-system state of a single-program run."""

    learner: Any  # full-precision learner state (DQNState / D4PGState)
    actor_params: Any  # the actors' current (quantized) policy
    carry: EnvCarry  # [N] environments
    replay: ReplayState
    key: jax.Array
    iteration: jax.Array  # int32


class System(NamedTuple):
    """The pieces of a run, for users who drive the loop themselves."""

    config: ActorQConfig
    info: EnvInfo
    agent: Agent
    replay: Replay
    init: Callable[[jax.Array], RunState]
    iteration: Callable[[RunState], tuple[RunState, dict[str, jax.Array]]]
    evaluate: Callable[[Any, jax.Array], jax.Array]


def transition_example(info: EnvInfo, agent: Agent) -> NStepTransition:
    """One zero transition (no batch axis) shaping the replay storage."""
    return NStepTransition(
        obs=jnp.zeros((info.obs_dim,), jnp.float32),
        action=agent.action_example,
        reward=jnp.zeros((), jnp.float32),
        discount=jnp.zeros((), jnp.float32),
        next_obs=jnp.zeros((info.obs_dim,), jnp.float32),
    )


def make_learner(config: ActorQConfig, info: EnvInfo) -> tuple[Agent, Replay, Callable]:
    """``(agent, replay, learn)`` of a run, shared by both deployments.

    ``learn(learner, replay_state, key) -> (learner, replay_state, loss)`` samples a batch,
    takes one learner update and, with prioritized replay, writes the new priorities.
    """
    agent = config.make_agent(info)
    replay = make_replay(config.buffer_capacity, transition_example(info, agent),
                         *config.replay_exponents())

    def learn(learner, rstate, key):
        idx, batch, weights = replay.sample(rstate, key, config.batch_size)
        learner, td_abs, m = agent.update(learner, batch, weights)
        if config.prioritized:
            rstate = replay.update_priorities(rstate, idx, td_abs)
        return learner, rstate, m["loss"]

    return agent, replay, learn


def make_system(config: ActorQConfig) -> System:
    """Build the environment, agent, replay and the pure ``init`` / ``iteration`` functions."""
    env, env_params, info = make_with_info(config.env_name)
    agent, replay, learn = make_learner(config, info)
    n_envs = config.steps_per_iteration
    n = config.n_step
    first_update_it = max(config.learning_starts, config.batch_size) // n_envs + n - 1
    compute = actors_compute(config, n_envs)
    products = int8_products(config.precision, compute)

    def broadcast(learner: Any, obs: jax.Array) -> Any:
        """The actors' parameters for the learner's policy (``obs``: calibration rows)."""
        held = actor_params(agent.policy_params(learner), config.precision, compute)
        return held if products is None else fast_int8_params(agent.greedy, held, obs, products)

    step_one = lambda p, c, k, e: env_step(
        env, env_params, agent, config.gamma, config.reward_scale, p, c, k, e
    )
    step_all = jax.vmap(step_one, in_axes=(None, 0, 0, None))

    def init(key: jax.Array) -> RunState:
        k_learn, k_env, k_run = jax.random.split(key, 3)
        learner = agent.init(k_learn)
        carry = jax.vmap(lambda k: init_carry(env, env_params, agent, n, k))(
            jax.random.split(k_env, n_envs)
        )
        return RunState(
            learner=learner,
            actor_params=broadcast(learner, carry.obs),
            carry=carry,
            replay=replay.init(),
            key=k_run,
            iteration=jnp.zeros((), jnp.int32),
        )

    def no_learn(learner, rstate, key):
        del key
        return learner, rstate, jnp.zeros((), jnp.float32)

    def iteration(state: RunState) -> tuple[RunState, dict[str, jax.Array]]:
        key, k_act, k_learn = jax.random.split(state.key, 3)
        it = state.iteration
        explore = config.exploration(it * n_envs)
        carry, out = step_all(state.actor_params, state.carry, jax.random.split(k_act, n_envs),
                              explore)
        rstate = replay.add(state.replay, out.transition, out.valid)
        do_learn = (it >= first_update_it) & (it % config.train_frequency == 0)
        learner, rstate, loss = jax.lax.cond(do_learn, learn, no_learn, state.learner, rstate,
                                             k_learn)
        refresh = (it + 1) % config.actor_update_period == 0

        def refreshed() -> Any:
            if products is None:
                return broadcast(learner, carry.obs)
            k_cal = jax.random.fold_in(k_learn, 1)  # the other streams stay as they were
            sampled = replay.sample(rstate, k_cal, CALIBRATION_ROWS)[1].obs
            return broadcast(learner, jnp.concatenate([carry.obs, sampled]))

        a_params = jax.lax.cond(refresh, refreshed, lambda: state.actor_params)
        new = RunState(learner, a_params, carry, rstate, key, it + 1)
        metrics = {
            "episode_return": out.episode_return,  # [N], valid where episode_done
            "episode_done": out.episode_done,  # [N]
            "loss": loss,
            "learned": do_learn,
        }
        return new, metrics

    def evaluate_fn(params: Any, key: jax.Array) -> jax.Array:
        return evaluate(env, env_params, agent, info, params, key, config.eval_episodes)

    return System(config, info, agent, replay, init, iteration, evaluate_fn)


def make_train(
    config: ActorQConfig, callback: Callable[..., None] | None = None, report_every: int = 500
) -> Callable[[jax.Array], tuple[RunState, dict[str, jax.Array]]]:
    """``train(key) -> (state, metrics)`` running ``config.num_iterations`` iterations.

    ``metrics`` are per iteration: ``episode_return`` / ``episode_done`` ``[T, N]``,
    ``loss`` and ``learned`` ``[T]``. ``callback(step, total, metrics)`` (e.g.
    ``progress.RichProgress``) is called through ``jax.debug.callback`` every
    ``report_every`` iterations when given.
    """
    system = make_system(config)
    total = config.num_iterations

    def body(state, _):
        state, m = system.iteration(state)
        if callback is not None:
            def report():
                jax.debug.callback(callback, state.iteration, total, {"loss": m["loss"]})

            jax.lax.cond(state.iteration % report_every == 0, report, lambda: None)
        return state, m

    def train(key: jax.Array) -> tuple[RunState, dict[str, jax.Array]]:
        state = system.init(key)
        return jax.lax.scan(body, state, None, length=total)

    return train


def episode_returns(metrics: dict[str, Any]) -> np.ndarray:
    """Completed-episode returns in time order from ``[T, N]`` metrics (host-side)."""
    done = np.asarray(metrics["episode_done"])
    ret = np.asarray(metrics["episode_return"])
    return ret[done]


class Curve(NamedTuple):
    """Reward over wall-clock time: one point per chunk."""

    time_s: np.ndarray  # seconds since the start of training (compile excluded)
    env_steps: np.ndarray
    avg_return: np.ndarray  # mean of the last ``return_window`` completed episodes (nan: none)


def checkpoint_fingerprint(config: ActorQConfig, seed: Any, num_chunks: int,
                           mode: str = "single") -> dict[str, Any]:
    """What a checkpoint must match to be resumed (:func:`jaxrl_pim.checkpoint.fingerprint`): the
    whole config, the seed, the chunking (the compiled chunk program) and the deployment."""
    return fingerprint(config, seed=seed, num_chunks=num_chunks, mode=mode)


def _nan_to_none(values: list[float]) -> list[float | None]:
    return [None if not np.isfinite(v) else float(v) for v in values]


def curve_points(times: list[float], steps: list[int], avgs: list[float | None]) -> Curve:
    """A :class:`Curve` of points as a checkpoint's meta record holds them (None: nan)."""
    return Curve(np.asarray(times, np.float64), np.asarray(steps, np.int64),
                 np.asarray([float("nan") if v is None else v for v in avgs], np.float64))


def join_curves(pieces: list[Curve]) -> Curve:
    """The :class:`Curve` of consecutive pieces."""
    return Curve(*(np.concatenate(parts) for parts in zip(*pieces, strict=True)))


def curve_meta(curve: Curve) -> dict[str, list[Any]]:
    """``times``, ``steps`` and ``avgs`` (nan as None) of ``curve``, for a meta record."""
    return {"times": curve.time_s.tolist(), "steps": curve.env_steps.tolist(),
            "avgs": _nan_to_none(curve.avg_return.tolist())}


class ActorQLearner(runner.SegmentedLearner):
    """Single-program ActorQ as a :class:`jaxrl_pim.runner.Learner` (one object per run):
    units are iterations, run in jitted chunks of ``chunk`` iterations (segments are whole
    chunks), the state a :class:`RunState`; a checkpoint holds the state and, in its meta
    record, the curve so far (one :class:`Curve` point per chunk), the completed episodes'
    returns and the training clock. ``callback(chunks done, num_chunks, {"return": ...})``
    follows every chunk.

    The chunk program is compiled on the first segment, followed by one throwaway chunk (so
    first-execution costs stay off the clock); ``compile_s`` and ``train_s`` (the chunks
    alone, continued across a resume) are kept apart.
    """

    unit = "iteration"
    total_name = "num_iterations"

    def __init__(self, config: ActorQConfig, key: jax.Array, num_chunks: int = 20,
                 callback: Callable[..., None] | None = None, *, seed: Any = None,
                 mode: str = "single") -> None:
        self.chunk = max(1, config.num_iterations // num_chunks)
        self.n_chunks = config.num_iterations // self.chunk
        super().__init__(self.n_chunks * self.chunk, curve_points([], [], []))
        self.config, self.key, self.callback = config, key, callback
        self.seed, self.mode, self.num_chunks = seed, mode, num_chunks
        self.system = make_system(config)
        self._init = jax.jit(self.system.init)
        self.train_s = 0.0
        self.returns: list[float] = []
        self.resumed_from: int | None = None
        self.checkpointed = False  # the report times the saves of a run with checkpoints

    def fingerprint(self) -> dict[str, Any]:
        seed = self.seed if self.seed is not None else np.asarray(
            jax.random.key_data(self.key)).tolist()
        return checkpoint_fingerprint(self.config, seed, self.num_chunks, self.mode)

    def every(self, steps: int | None) -> int:
        """Iterations between checkpoints for ``steps`` environment steps (default
        :func:`jaxrl_pim.runner.default_every` of the run's steps), rounded up to whole
        chunks."""
        cfg = self.config
        if steps is None:
            steps = runner.default_every(cfg.total_timesteps, cfg.steps_per_iteration)
        if not isinstance(steps, int) or steps < 1:
            raise ValueError(f"checkpoint_every must be >= 1 environment steps, got {steps!r}")
        return self.chunk * max(1, -(-steps // (self.chunk * cfg.steps_per_iteration)))

    def init(self) -> RunState:
        return jax.block_until_ready(self._init(self.key))

    def template(self, step: int) -> RunState:
        del step
        return jax.eval_shape(self.system.init, self.key)

    def load(self, restored: Restored) -> tuple[RunState, Curve]:
        meta = restored.meta
        self.train_s = float(meta["train_s"])
        self.returns = list(meta["returns"])
        self.resumed_from = int(meta["chunks_done"]) * self.chunk
        return restored.tree, curve_points(meta["times"], meta["steps"], meta["avgs"])

    def compile(self, state: RunState, start: int, n: int) -> Any:
        system, chunk = self.system, self.chunk

        def run_chunk(state):
            return jax.lax.scan(lambda s, _: system.iteration(s), state, None, length=chunk)

        program = jax.jit(run_chunk, donate_argnums=0).lower(state).compile()
        # one throwaway chunk: first-execution costs (allocations, thread pools) stay off the
        # clock, so the first of several runs in a process is not penalised
        jax.block_until_ready(program(self._init(jax.random.fold_in(self.key, 2))))
        return program

    def program_key(self, start: int, n: int) -> int:
        return self.chunk  # one chunk program runs every segment

    def execute(self, program: Any, state: RunState, start: int, iterations: int,
                ) -> tuple[RunState, Curve, None]:
        window = self.config.return_window
        per_chunk = self.chunk * self.config.steps_per_iteration
        times: list[float] = []
        avgs: list[float] = []
        for _ in range(iterations // self.chunk):
            t1 = time.perf_counter()
            state, m = program(state)
            m = jax.block_until_ready(m)
            self.train_s += time.perf_counter() - t1
            self.returns.extend(episode_returns(m).tolist())
            times.append(self.train_s)
            avgs.append(float(np.mean(self.returns[-window:])) if self.returns
                        else float("nan"))
            if self.callback is not None:
                done = start // self.chunk + len(times)
                self.callback(done, self.n_chunks, {"return": avgs[-1]})
        first = start // self.chunk + 1
        steps = [c * per_chunk for c in range(first, first + len(times))]
        return state, curve_points(times, steps, avgs), None

    def join(self, pieces: list[Curve]) -> Curve:
        return join_curves(pieces)

    def snapshot(self, state: RunState, iterations: int) -> tuple[RunState, dict[str, Any]]:
        return state, {"chunks_done": iterations // self.chunk, "train_s": self.train_s,
                       **curve_meta(self.curve()), "returns": self.returns}

    def report(self, outcome: runner.Outcome) -> dict[str, Any]:
        """The :func:`run_timed` fields; evaluates the final greedy quantized policy."""
        t2 = time.perf_counter()
        final_eval = float(jax.jit(self.system.evaluate)(outcome.state.actor_params,
                                                         jax.random.fold_in(self.key, 1)))
        eval_s = time.perf_counter() - t2
        timing = {"compile": outcome.timing_s["start"] + self.compile_s,
                  "train": self.train_s, "eval": eval_s}
        if self.checkpointed:
            timing["checkpoint"] = outcome.timing_s["checkpoint"]
        return {"curve": self.curve(), "timing_s": timing,
                "episode_returns": np.asarray(self.returns),
                "final_eval_return": final_eval, "resumed_from": self.resumed_from}


def run_timed(
    config: ActorQConfig,
    key: jax.Array,
    num_chunks: int = 20,
    callback: Callable[..., None] | None = None,
    *,
    checkpoints: Any = None,
    checkpoint_every: int | None = None,
    resume: bool = False,
) -> runner.Outcome:
    """Run single-program ActorQ from the host in ``num_chunks`` jitted chunks, timing each
    (:func:`jaxrl_pim.runner.run` of an :class:`ActorQLearner`).

    Returns a :class:`jaxrl_pim.runner.Outcome`: the final ``state`` (:class:`RunState`),
    ``start`` and ``done`` (iterations), ``checkpoints_written``, ``curve`` (:class:`Curve`,
    one point per chunk, the chunks before a resume included), ``timing_s`` (``compile``,
    ``train``, ``eval``, and ``checkpoint`` with checkpoints) and the report fields
    ``episode_returns`` (float64 ``[E]``, every completed episode), ``final_eval_return``
    (greedy quantized policy) and ``resumed_from`` (iterations restored, or None).

    Checkpoints: with ``checkpoints`` (a :class:`jaxrl_pim.checkpoint.Checkpoints` folder) the
    whole :class:`RunState` (learner, actors' policy, environments, replay, PRNG key) and the
    curve so far are saved atomically every ``checkpoint_every`` environment steps, rounded up
    to whole chunks (default :func:`jaxrl_pim.runner.default_every` of ``total_timesteps``,
    about 10 % of the run), and after the last chunk; the step
    of a checkpoint is the number of iterations done. ``resume=True`` continues from the
    newest checkpoint (a finished run is returned from its final checkpoint without training
    again); the resumed run's final state equals an uninterrupted run's bit for bit, because
    the iteration is a pure function of the state and the chunk program is the same. Without
    ``resume`` a folder that already holds checkpoints is refused (ValueError). The clock of
    a resumed run continues from the checkpoint's (the time lost since it is not counted).
    """
    learner = ActorQLearner(config, key, num_chunks, callback)
    learner.checkpointed = checkpoints is not None
    every = None if checkpoints is None else learner.every(checkpoint_every)
    return runner.run(learner, checkpoints, every=every, resume=resume)
