"""rejax's side of ``benchmarks/e2e_frameworks.py`` and ``e2e_gpu.py`` (run with
``.peers/rejax``'s python, the same jax version as the project, or with ``--peer-site
rejax=DIR`` the parent's python with the ``pip --target`` folder DIR, which holds rejax and the
gymnax < 1.0 it needs, first on ``PYTHONPATH``: ``peers/sites.py``): DQN or PPO on gymnax's
CartPole-v1 / Acrobot-v1 configured to the spec's schedule, one jitted ``train`` (vmapped
over ``seeds`` seeds where the spec asks: rejax vmaps), printed as one result line
(``benchmarks/peers/protocol.py``).

Mapping: DQN 2x64 ReLU Q-network, ``num_envs``, ``buffer_size``, ``batch_size``,
``fill_buffer = learning_starts``, one gradient step per vectorised step (``num_epochs=1``), a
hard target copy every ``target_update_interval`` iterations (times ``num_envs`` env steps;
``polyak=0``), plain DQN
targets (``ddqn=False``), the spec's epsilon schedule; PPO tanh 2x64 actor and critic,
``num_envs``, ``num_steps``, ``num_epochs``, ``num_minibatches`` and the spec's coefficients
(rejax keeps the learning rate constant where the library anneals it; it clips gradients by
value, ``optax.clip``, where the library clips the global norm). With ``defaults`` rejax's own
defaults. rejax's periodic evaluation is switched off during training (it would be timed);
the final return is rejax's own evaluation of the trained policy afterwards (128 episodes,
DQN epsilon 0.005). With ``profile`` in the spec (PPO, one seed) also its rollout phase alone
(``protocol.rollout_phase``: rejax's ``collect_trajectories``).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import protocol  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    spec, launch = protocol.parse(argv)
    import gymnax_random
    import jax
    import jax.numpy as jnp
    import numpy as np
    from rejax import get_algo
    from rejax.evaluate import evaluate

    defaults = bool(spec.get("defaults"))
    total = int(spec["total_timesteps"])
    base = {"env": spec["env"], "total_timesteps": total, "eval_freq": total,
            "skip_initial_evaluation": True}
    if spec["algo"] == "dqn":
        kw = {} if defaults else dict(
            num_envs=spec["num_envs"], buffer_size=spec["buffer_capacity"],
            batch_size=spec["batch_size"], fill_buffer=spec["learning_starts"], num_epochs=1,
            # the library counts iterations (one step of every env), rejax env steps
            target_update_freq=spec["target_update_interval"] * spec["num_envs"],
            polyak=0.0, ddqn=False,
            learning_rate=spec["lr"], gamma=spec["gamma"], eps_start=spec["eps_start"],
            eps_end=spec["eps_end"], exploration_fraction=spec["exploration_fraction"],
            max_grad_norm=spec["max_grad_norm"], agent_kwargs={"activation": "relu"})
    else:
        kw = {} if defaults else dict(
            num_envs=spec["num_envs"], num_steps=spec["num_steps"],
            num_epochs=spec["update_epochs"], num_minibatches=spec["num_minibatches"],
            learning_rate=spec["lr"], gamma=spec["gamma"], gae_lambda=spec["gae_lambda"],
            clip_eps=spec["clip_eps"], ent_coef=spec["ent_coef"], vf_coef=spec["vf_coef"],
            max_grad_norm=spec["max_grad_norm"],
            agent_kwargs={"activation": "tanh", "hidden_layer_sizes": list(spec["hidden"])})
    algo = get_algo(spec["algo"])
    agent = algo.create(**base, **kw)
    agent = agent.replace(eval_callback=lambda a, ts, rng: jnp.zeros(()))  # not timed
    seeds = int(spec.get("seeds", 1))
    keys = jax.random.split(jax.random.PRNGKey(0), seeds)
    startup = time.time() - launch
    (ts, _), compile_s, run_s = protocol.compile_and_run(agent.train, keys, seeds)

    def final(ts_one):
        act = agent.make_act(ts_one)
        _, returns = evaluate(act, jax.random.PRNGKey(7), agent.env, agent.env_params, 128,
                              agent.env_params.max_steps_in_episode)
        return returns.mean()

    phases = None
    if spec.get("profile") and spec["algo"] == "ppo" and seeds == 1:
        # rejax's own rollout (train_iteration's first call), on the trained state; the
        # training ran ceil(total / (num_envs * num_steps)) iterations (eval_freq = total)
        updates = -(-total // (agent.num_envs * agent.num_steps))
        phases = protocol.rollout_phase(jax.jit(agent.collect_trajectories), ts, run_s,
                                        updates)
    one = ts if seeds == 1 else jax.tree.map(lambda x: x[0], ts)
    finals = [float(jax.jit(final)(one))]
    steps = total * seeds
    protocol.emit({
        "framework": "rejax",
        "versions": protocol.versions("rejax", "jax", "jaxlib", "gymnax", "flax", "optax"),
        "threads": protocol.threads(), "seeds": seeds, "vmapped_seeds": seeds > 1,
        "defaults": defaults, "startup_s": startup, "compile_s": compile_s,
        "warmup_env_steps": 0, "warmup_s": 0.0, "measured_env_steps": steps,
        "measured_s": run_s, "steps_per_s": steps / run_s, "episodes": None,
        "final_return": float(np.mean(finals)),
        "random_return": gymnax_random.random_return(spec["env"],
                                                     int(spec.get("random_episodes", 20))),
        "return_convention": "gymnax: rejax's evaluation of the trained policy (128 "
                             "episodes, seed 0's run), undiscounted",
        "config": {"algo": spec["algo"], **base, **kw}, "phases": phases,
    })
    return 0


if __name__ == "__main__":
    sys.exit(main())
