"""The library's side of ``benchmarks/e2e_frameworks.py``: one training run of a spec with
jaxrl_pim's own trainers (MADDPG / MATD3 / MASAC from ``jaxrl_pim.marl``, DQN / PPO from
``jaxrl_pim.rl``), printed as one result line (``benchmarks/peers/protocol.py``).

MARL: the warm-up (``ceil(learning_starts / (episode_length * num_envs))`` episodes, env steps
and buffer writes only) and the ``measured_episodes`` after it (update rounds on) are two
compiled calls, both compiled before either runs (``compile_s``); ``seeds > 1`` vmaps the
seeds in one call (``vmapped_seeds``), as many of them as the memory holds
(``jaxrl_pim.marl.plan.memory_plan``; ``seeds_asked`` keeps the number asked for). RL: one
compiled ``train`` of ``total_timesteps`` (learning starts inside it), timed whole after
compiling; with ``profile`` in the spec (PPO, one seed) also its rollout phase alone
(``protocol.rollout_phase``: ``ActorCritic.rollout``, the function ``make_train`` runs).
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import protocol  # noqa: E402

MARL_FIELDS = ("num_envs", "episode_length", "batch_size", "buffer_capacity",
               "learning_starts", "update_every", "lr", "gamma", "tau", "sampling_mode")


def run_marl(spec: dict, launch: float) -> dict:
    """One MARL run of ``spec`` (see the module docstring)."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    from jaxrl_pim.marl import MARLConfig, make_init, make_train_from, random_policy_return

    over = {k: spec[k] for k in MARL_FIELDS if k in spec and not spec.get("defaults")}
    if "hidden" in spec and not spec.get("defaults"):
        over["hidden"] = tuple(spec["hidden"])
    cfg = MARLConfig(algo=spec["algo"], env="spread", num_agents=spec["agents"], **over)
    asked = seeds = int(spec.get("seeds", 1))
    if seeds > 1:  # vmapped seeds: as many as the memory holds (each has its own buffer)
        from jaxrl_pim.marl.plan import memory_plan

        seeds = max(1, min(seeds, memory_plan(cfg, seeds).max_seeds))
    warm = math.ceil(cfg.learning_starts / (cfg.episode_length * cfg.num_envs))
    meas = int(spec["measured_episodes"])
    keys = jnp.stack([jax.random.PRNGKey(s) for s in range(seeds)])
    init = make_init(cfg)
    warm_fn = make_train_from(cfg, warm)
    meas_fn = make_train_from(cfg, meas, start_episode=warm)  # the static schedule's place
    if seeds > 1:
        init, warm_fn, meas_fn = jax.vmap(init), jax.vmap(warm_fn), jax.vmap(meas_fn)
    else:
        keys = keys[0]
    state = jax.jit(init)(keys)
    jax.block_until_ready(state)
    startup = time.time() - launch
    t0 = time.perf_counter()
    warm_c = jax.jit(warm_fn, donate_argnums=0).lower(state).compile()
    meas_c = jax.jit(meas_fn, donate_argnums=0).lower(state).compile()
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    state, _ = warm_c(state)
    jax.block_until_ready(state)
    warm_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    state, metrics = meas_c(state)
    jax.block_until_ready(state)
    meas_s = time.perf_counter() - t0
    ret = np.asarray(metrics["episode_return"])[..., 0].reshape(seeds, meas)  # team 0
    tail = max(1, meas // 10)
    rand = float(random_policy_return(cfg, jax.random.PRNGKey(123),
                                      int(spec.get("random_episodes", 20)))[0])
    steps_per_ep = cfg.episode_length * cfg.num_envs
    return {
        "framework": "jaxrl_pim", "versions": protocol.versions("jaxrl_pim", "jax", "jaxlib"),
        "threads": protocol.threads(), "seeds": seeds, "vmapped_seeds": seeds > 1,
        "seeds_asked": asked, "defaults": bool(spec.get("defaults")), "startup_s": startup,
        "compile_s": compile_s, "warmup_env_steps": warm * steps_per_ep * seeds,
        "warmup_s": warm_s,
        "measured_env_steps": meas * steps_per_ep * seeds, "measured_s": meas_s,
        "steps_per_s": meas * steps_per_ep * seeds / meas_s, "episodes": warm + meas,
        "update_rounds": int(np.asarray(state.num_updates).reshape(-1)[0]),
        "final_return": float(ret[:, -tail:].mean()), "random_return": rand,
        "return_convention": "jaxrl_pim spread: undiscounted episode return per agent "
                             "(mean over the agents; shared team reward), last 10 % of the "
                             "measured episodes; random: Gumbel-softmax of zero logits",
        "config": {k: getattr(cfg, k) for k in ("algo", "num_agents", *MARL_FIELDS)},
    }


def run_rl(spec: dict, launch: float) -> dict:
    """One DQN / PPO run of ``spec`` (see the module docstring)."""
    import dataclasses

    import gymnax_random
    import jax
    import jax.numpy as jnp
    import numpy as np

    from jaxrl_pim.rl import LEARNERS, DQNConfig, PPOConfig

    cls = {"dqn": DQNConfig, "ppo": PPOConfig}[spec["algo"]]
    names = {f.name for f in dataclasses.fields(cls)}
    over = {} if spec.get("defaults") else {k: v for k, v in spec.items() if k in names}
    if "hidden" in over:
        over["hidden"] = tuple(over["hidden"])
    cfg = cls(env_name=spec["env"], total_timesteps=spec["total_timesteps"],
              **{k: v for k, v in over.items() if k not in ("env_name", "total_timesteps")})
    seeds = int(spec.get("seeds", 1))
    train = LEARNERS[spec["algo"]].make_train(cfg)
    keys = jnp.stack([jax.random.PRNGKey(s) for s in range(seeds)])
    startup = time.time() - launch
    (state, metrics), compile_s, run_s = protocol.compile_and_run(train, keys, seeds)
    phases = None
    if spec.get("profile") and spec["algo"] == "ppo" and seeds == 1:
        from jaxrl_pim.envs.factory import make
        from jaxrl_pim.rl import actor_critic

        env, env_params = make(cfg.env_name)
        ac = actor_critic.make_actor_critic(cfg.env_name, cfg.hidden, cfg.activation)
        # the rollout make_train runs at each update, on the trained state
        rollout = jax.jit(lambda st: ac.rollout(env, env_params, cfg.num_steps, cfg.gamma,
                                                st.params, st))
        phases = protocol.rollout_phase(rollout, state, run_s, cfg.num_updates)
    ret = np.asarray(metrics["episode_return"]).reshape(seeds, -1)
    finals = [protocol.tail_mean(list(r)) for r in ret]
    finals = [f for f in finals if f is not None]
    steps = cfg.total_timesteps * seeds
    return {
        "framework": "jaxrl_pim", "versions": protocol.versions("jaxrl_pim", "jax", "jaxlib"),
        "threads": protocol.threads(), "seeds": seeds, "vmapped_seeds": seeds > 1,
        "defaults": bool(spec.get("defaults")), "startup_s": startup, "compile_s": compile_s,
        "warmup_env_steps": 0, "warmup_s": 0.0, "measured_env_steps": steps,
        "measured_s": run_s, "steps_per_s": steps / run_s, "episodes": None,
        "final_return": float(np.mean(finals)) if finals else None,
        "random_return": gymnax_random.random_return(spec["env"],
                                                     int(spec.get("random_episodes", 20))),
        "return_convention": "gymnax: undiscounted training-episode return (exploration on), "
                             "last 10 % of the iterations that finished an episode",
        "config": dataclasses.asdict(cfg), "phases": phases,
    }


def main(argv: list[str] | None = None) -> int:
    spec, launch = protocol.parse(argv)
    run = run_marl if spec["kind"] == "marl" else run_rl
    protocol.emit(run(spec, launch))
    return 0


if __name__ == "__main__":
    sys.exit(main())
