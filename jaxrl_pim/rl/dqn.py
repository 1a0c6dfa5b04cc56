"""DQN on gymnax, fully jitted: replay in JAX arrays, target network, epsilon-greedy.

This is the library's one DQN: :func:`dqn_loss` (per-transition :func:`td_target`, optional
:func:`advantage_learning_target`, Huber TD loss with optional importance weights) is also
the loss of ActorQ's DQN learner (:mod:`jaxrl_pim.actorq.dqn`), and the replay is the
library's ring buffer + uniform sampler (:func:`make_replay`, :mod:`jaxrl_pim.replay`).

Each iteration steps ``num_envs`` environments once with an epsilon-greedy action (epsilon
decays linearly from ``eps_start`` to ``eps_end`` over ``exploration_fraction`` of training;
with ``explore_hold = k > 1`` an exploratory random action is held for ``k`` steps, the
temporally-extended epsilon-greedy that lets MountainCar's random phase reach the goal),
writes the transitions into the ring buffer and, once ``learning_starts`` transitions are
stored, takes one Adam step on a Huber TD loss every ``train_frequency`` iterations. The
target network is a hard copy refreshed every ``target_update_interval`` iterations. Time
limits are bootstrapped (only natural terminations cut the target), using the observation the
step reached rather than the auto-reset one. ``anneal_lr`` decays the Adam step size linearly
to 0 over the updates, so the final network is a settled policy rather than a snapshot of a
moving one; ``normalize_obs`` maps bounded observations onto [-1, 1] before the network;
``advantage_learning = alpha > 0`` uses the gap-increasing target of
:func:`advantage_learning_target`.

``make_policy(config).apply(state.params, obs)`` returns the Q-values ``[..., num_actions]``
(read as Boltzmann logits by the PTQ study; the greedy action is their argmax).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from jaxrl_pim.envs.factory import make
from jaxrl_pim.replay import (
    Buffer,
    BufferState,
    NStepTransition,
    Sampler,
    make_ring_buffer,
    uniform,
)
from jaxrl_pim.rl import common
from jaxrl_pim.rl.configs import DQNConfig  # the learner's config, re-exported
from jaxrl_pim.rl.networks import MLP, ParametricPolicy


def make_replay(capacity: int, obs_dim: int, action_shape: tuple[int, ...] = (),
                action_dtype: Any = jnp.int32) -> tuple[Buffer, Sampler]:
    """The learners' replay: a ring buffer of ``capacity`` one-step :class:`NStepTransition`
    rows (``obs [obs_dim]``, ``action action_shape``, ``reward``, ``discount = gamma`` or 0
    after a termination, ``next_obs``) and uniform sampling with replacement."""
    example = NStepTransition(
        obs=jnp.zeros((obs_dim,), jnp.float32),
        action=jnp.zeros(action_shape, action_dtype),
        reward=jnp.zeros((), jnp.float32),
        discount=jnp.zeros((), jnp.float32),
        next_obs=jnp.zeros((obs_dim,), jnp.float32),
    )
    return make_ring_buffer(capacity, example), uniform()


def one_step(obs: jax.Array, action: jax.Array, reward: jax.Array, next_obs: jax.Array,
             terminated: jax.Array, gamma: float) -> NStepTransition:
    """One-step transitions of a vectorised env step (every field ``[num_envs, ...]``):
    ``discount = gamma`` where the episode goes on or was cut by the time limit, 0 where it
    terminated; ``next_obs`` is the observation the step reached (before any auto-reset)."""
    return NStepTransition(obs, action, reward, gamma * (1.0 - terminated.astype(jnp.float32)),
                           next_obs)


def sample_uniform(buffer: Buffer, sampler: Sampler, state: BufferState, key: jax.Array,
                   batch_size: int) -> NStepTransition:
    """A uniform batch ``[batch_size, ...]`` (with replacement) of the stored transitions."""
    idx, _, _ = sampler.sample(sampler.init(), key, state.size, state.insert_pos, batch_size)
    return buffer.gather(state, idx)


def step_and_store(env: Any, env_params: Any, buffer: Buffer, key: jax.Array, env_state: Any,
                   obs: jax.Array, stats: common.EpisodeStats, buf: BufferState,
                   action: jax.Array, gamma: float
                   ) -> tuple[common.StepOut, common.EpisodeStats, jax.Array, BufferState]:
    """Step every env once with ``action`` ``[num_envs, ...]`` from ``obs`` and store the
    one-step transitions (:func:`one_step`) in ``buf``.

    Returns ``(out, stats, finished, buf)``: the :class:`~jaxrl_pim.rl.common.StepOut`, the
    updated episode statistics, the finished returns ``[num_envs]`` (0 where not done) and
    the buffer with the new rows.
    """
    out = common.vmap_step(env, env_params, key, env_state, action)
    stats, finished = common.update_stats(stats, out.reward, out.done)
    buf = buffer.add(buf, one_step(obs, action, out.reward, out.final_obs, out.terminated,
                                   gamma))
    return out, stats, finished, buf


def huber(x: jax.Array, delta: float = 1.0) -> jax.Array:
    """Elementwise Huber loss: ``0.5 x^2`` for ``|x| <= delta``, linear beyond."""
    ax = jnp.abs(x)
    quad = jnp.minimum(ax, delta)
    return 0.5 * quad**2 + delta * (ax - quad)


def td_target(r_t: jax.Array, discount_t: jax.Array, q_t: jax.Array) -> jax.Array:
    """Q-learning target for one transition: ``r_t + discount_t * max_a q_t[a]``.

    ``q_t`` is the target network's ``[num_actions]`` values at the next state;
    ``discount_t`` is ``gamma`` (0 where the episode terminated). Batch with ``jax.vmap``.
    """
    if q_t.ndim != 1:
        raise ValueError(f"q_t must be [num_actions], got shape {q_t.shape}")
    return r_t + discount_t * jnp.max(q_t)


def advantage_learning_target(target: jax.Array, q_s: jax.Array, action: jax.Array,
                              alpha: float) -> jax.Array:
    """Advantage-learning target ``target - alpha * (max_b q_s[b] - q_s[action])``.

    Bellemare et al. (2016), "Increasing the action gap": subtracting a fraction ``alpha`` of
    the action's advantage at the current state (under the target network, ``q_s``
    ``[B, num_actions]``) leaves the greedy action's value and the optimal policy unchanged
    and widens the gaps to the other actions by about ``1 / (1 - alpha)``, so the greedy
    choice survives small errors in the Q-values (approximation, or quantized weights).
    ``target`` and ``action`` are ``[B]``; returns ``[B]``.
    """
    q_a = jnp.take_along_axis(q_s, action[:, None].astype(jnp.int32), axis=-1)[:, 0]
    return target - alpha * (jnp.max(q_s, axis=-1) - q_a)


def dqn_loss(
    q_apply: Callable[[Any, jax.Array], jax.Array],
    params: Any,
    target_params: Any,
    batch: NStepTransition,
    weights: jax.Array | None = None,
    advantage_learning: float = 0.0,
) -> tuple[jax.Array, jax.Array]:
    """DQN loss on a batch; returns ``(loss, td [B])``.

    ``target = reward + discount * max_a Q_target(next_obs, a)`` per transition
    (:func:`td_target`; n-step when the batch holds n-step returns), optionally widened by
    :func:`advantage_learning_target`; ``td = target - Q(obs, action)`` with the target held
    fixed; ``loss = mean(weights * huber(td))`` (``weights`` ``[B]``: importance weights of a
    prioritized replay; None = 1). ``q_apply(params, obs [B, obs_dim]) -> [B, num_actions]``;
    pass quantization-aware ``params`` already transformed. The learner of
    :func:`make_train` and ActorQ's DQN learner both use it.
    """
    q_next = q_apply(target_params, batch.next_obs)
    target = jax.vmap(td_target)(batch.reward, batch.discount, q_next)
    if advantage_learning:
        target = advantage_learning_target(target, q_apply(target_params, batch.obs),
                                           batch.action, advantage_learning)
    q = q_apply(params, batch.obs)
    q_a = jnp.take_along_axis(q, batch.action[:, None].astype(jnp.int32), axis=-1)[:, 0]
    td = jax.lax.stop_gradient(target) - q_a
    per = huber(td)
    loss = jnp.mean(per) if weights is None else jnp.mean(weights * per)
    return loss, td


class DQNState(NamedTuple):
    """Final training state; ``params`` are the online Q-network's parameters."""

    params: Any
    target_params: Any
    opt_state: Any
    buffer: BufferState  # ring buffer of NStepTransition rows (make_replay)
    env_state: Any
    obs: jax.Array
    stats: common.EpisodeStats
    key: jax.Array
    held_action: jax.Array  # [num_envs] exploratory action being held
    hold_left: jax.Array  # [num_envs] steps it is still held (0: not exploring)


def explore_action(
    greedy: jax.Array, random: jax.Array, start: jax.Array, held_action: jax.Array,
    hold_left: jax.Array, hold: int,
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Temporally-extended epsilon-greedy choice for one environment.

    While ``hold_left > 0`` the held random action is repeated. Otherwise, where ``start``
    (probability epsilon) a new random action ``random`` is taken and held for ``hold`` steps
    in all; else the ``greedy`` action. ``hold = 1`` is ordinary epsilon-greedy. Returns
    ``(action, held_action, hold_left)`` after this step (all int32 scalars).
    """
    holding = hold_left > 0
    new = ~holding & start
    action = jnp.where(holding, held_action, jnp.where(new, random, greedy))
    left = jnp.where(holding, hold_left - 1, jnp.where(new, hold - 1, 0))
    return action, jnp.where(holding | new, action, held_action), left


def _network(config: DQNConfig) -> tuple[Callable[[Any, jax.Array], jax.Array], MLP,
                                          dict[str, Any]]:
    """``(q_apply, net, spec)``: ``q_apply(params, obs [..., obs_dim]) -> [..., num_actions]``
    applies the MLP to the observation, first mapped onto [-1, 1] if ``normalize_obs``."""
    spec = common.env_info(config.env_name)
    net = MLP(config.hidden, spec.num_actions, config.activation, 1.0)
    scale = common.input_map(config.env_name, config.normalize_obs)
    return (lambda params, obs: net.apply(params, scale(obs))), net, spec


def make_policy(config: DQNConfig) -> ParametricPolicy:
    """Q-values as categorical logits; greedy action = argmax."""
    q_apply, _, _ = _network(config)
    return ParametricPolicy("categorical", q_apply, lambda q: jnp.argmax(q, axis=-1))


def make_train(
    config: DQNConfig, callback: Callable[..., None] | None = None
) -> Callable[[jax.Array], tuple[DQNState, dict[str, jax.Array]]]:
    """Build ``train(key) -> (state, metrics)``; pure, jittable and vmappable over keys.

    ``metrics`` arrays are ``[num_iterations]``: ``episode_return`` (mean return of episodes
    finished at that iteration, NaN if none), ``episodes``, ``loss`` (0 before learning
    starts) and ``epsilon``.
    """
    env, env_params = make(config.env_name)
    q_apply, net, spec = _network(config)
    n_iter = config.num_iterations
    start_iter = -(-config.learning_starts // config.num_envs)
    qat_start = int(config.qat.delay_fraction * n_iter) if config.qat else 0
    decay_iters = max(int(config.exploration_fraction * n_iter), 1)
    num_updates = max(-(-(n_iter - start_iter) // config.train_frequency), 1)
    lr = optax.linear_schedule(config.lr, 0.0, num_updates) if config.anneal_lr else config.lr
    tx = optax.chain(optax.clip_by_global_norm(config.max_grad_norm), optax.adam(lr))

    buffer, sampler = make_replay(config.buffer_capacity, spec.obs_dim)

    def loss_fn(params, target_params, batch, it):
        params = common.qat_params(params, config.qat, it, qat_start)
        return dqn_loss(q_apply, params, target_params, batch,
                        advantage_learning=config.advantage_learning)[0]

    def train(key: jax.Array) -> tuple[DQNState, dict[str, jax.Array]]:
        key, k_init, k_env = jax.random.split(key, 3)
        params = net.init(k_init, jnp.zeros((1, spec.obs_dim), jnp.float32))
        obs, env_state = common.vmap_reset(env, env_params, k_env, config.num_envs)
        carry = DQNState(
            params, params, tx.init(params), buffer.init(),
            env_state, obs, common.init_stats(config.num_envs), key,
            jnp.zeros((config.num_envs,), jnp.int32), jnp.zeros((config.num_envs,), jnp.int32),
        )
        choose = jax.vmap(explore_action, in_axes=(0, 0, 0, 0, 0, None))

        def iteration(st: DQNState, it):
            key, k_eps, k_rand, k_step, k_sample = jax.random.split(st.key, 5)
            frac = jnp.minimum(it / decay_iters, 1.0)
            eps = config.eps_start + frac * (config.eps_end - config.eps_start)
            q = q_apply(common.qat_params(st.params, config.qat, it, qat_start), st.obs)
            greedy = jnp.argmax(q, axis=-1)
            random = jax.random.randint(k_rand, greedy.shape, 0, spec.num_actions)
            start = jax.random.uniform(k_eps, greedy.shape) < eps
            action, held, left = choose(greedy.astype(jnp.int32), random, start,
                                        st.held_action, st.hold_left, config.explore_hold)
            out, stats, finished, buf = step_and_store(
                env, env_params, buffer, k_step, st.env_state, st.obs, st.stats, st.buffer,
                action, config.gamma)
            left = jnp.where(out.done, 0, left)  # a new episode starts without a held action

            def learn(args):
                params, opt_state = args
                batch = sample_uniform(buffer, sampler, buf, k_sample, config.batch_size)
                loss, grads = jax.value_and_grad(loss_fn)(params, st.target_params, batch, it)
                upd, opt_state = tx.update(grads, opt_state, params)
                return optax.apply_updates(params, upd), opt_state, loss

            do_learn = (it >= start_iter) & (it % config.train_frequency == 0)
            params, opt_state, loss = jax.lax.cond(
                do_learn, learn, lambda a: (a[0], a[1], jnp.zeros(())),
                (st.params, st.opt_state),
            )
            refresh = (it + 1) % config.target_update_interval == 0
            target_params = jax.tree.map(
                lambda o, t: jnp.where(refresh, o, t), params, st.target_params
            )
            metrics = {**common.episode_metrics(finished, out.done), "loss": loss,
                       "epsilon": eps}
            common.maybe_callback(callback, it + 1, n_iter, metrics)
            new = DQNState(params, target_params, opt_state, buf, out.env_state, out.obs,
                           stats, key, held, left)
            return new, metrics

        return jax.lax.scan(iteration, carry, jnp.arange(n_iter))

    return train
