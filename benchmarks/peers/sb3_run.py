"""Stable-Baselines3's side of ``benchmarks/e2e_frameworks.py`` (run with ``.peers/sb3``'s
python): DQN or PPO on gymnasium's CartPole-v1 / Acrobot-v1, configured to the spec's schedule
(same network sizes, batch, update frequency, number of envs), printed as one result line
(``benchmarks/peers/protocol.py``).

Mapping: DQN ``train_freq=1`` (one gradient step per vectorised step of ``num_envs`` envs, as
the library's ``train_frequency=1``), ``target_update_interval`` (the library's iterations
times ``num_envs``: SB3 counts env steps), ``learning_starts``, ``buffer_size``,
``batch_size``, the epsilon schedule and gradient clip of the spec; PPO
``n_steps``, ``n_epochs``, ``batch_size = num_envs * num_steps / num_minibatches``, a linearly
annealed learning rate (the library's ``anneal_lr``), tanh 2x64 actor and critic. With
``defaults`` the algorithm's own constructor defaults on one env. The warm-up is the steps
before ``learning_starts`` (DQN; PPO learns from the first rollout); final return: the mean of
the last 10 % of the training episodes (``VecMonitor``).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import protocol  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    spec, launch = protocol.parse(argv)
    import gymnasium as gym
    import numpy as np
    import torch
    from stable_baselines3 import DQN, PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.logger import Logger

    if protocol.threads():
        torch.set_num_threads(protocol.threads())
    defaults = bool(spec.get("defaults"))
    n_envs = 1 if defaults else int(spec["num_envs"])
    env = make_vec_env(spec["env"], n_envs=n_envs, seed=0)
    net = [int(h) for h in spec["hidden"]]
    if spec["algo"] == "dqn":
        kw = {} if defaults else dict(
            learning_rate=spec["lr"], buffer_size=spec["buffer_capacity"],
            learning_starts=spec["learning_starts"], batch_size=spec["batch_size"],
            gamma=spec["gamma"], train_freq=spec["train_frequency"], gradient_steps=1,
            # the library counts iterations (one step of every env), SB3 env steps
            target_update_interval=spec["target_update_interval"] * n_envs,
            exploration_fraction=spec["exploration_fraction"],
            exploration_initial_eps=spec["eps_start"], exploration_final_eps=spec["eps_end"],
            max_grad_norm=spec["max_grad_norm"], policy_kwargs={"net_arch": net})
        model = DQN("MlpPolicy", env, seed=0, device="cpu", **kw)
        learning_starts = model.learning_starts
    else:
        lr = float(spec["lr"])
        kw = {} if defaults else dict(
            learning_rate=lambda frac: lr * frac, n_steps=spec["num_steps"],
            batch_size=spec["num_envs"] * spec["num_steps"] // spec["num_minibatches"],
            n_epochs=spec["update_epochs"], gamma=spec["gamma"], gae_lambda=spec["gae_lambda"],
            clip_range=spec["clip_eps"], ent_coef=spec["ent_coef"], vf_coef=spec["vf_coef"],
            max_grad_norm=spec["max_grad_norm"],
            policy_kwargs={"net_arch": {"pi": net, "vf": net},
                           "activation_fn": torch.nn.Tanh})
        model = PPO("MlpPolicy", env, seed=0, device="cpu", **kw)
        learning_starts = 0

    class Clock(BaseCallback):
        """Marks when learning starts and collects the finished episodes' returns."""

        def __init__(self) -> None:
            super().__init__()
            self.mark: tuple[float, int] | None = None
            self.returns: list[float] = []

        def _on_step(self) -> bool:
            if self.mark is None and self.num_timesteps >= learning_starts:
                self.mark = (time.perf_counter(), self.num_timesteps)
            for info in self.locals.get("infos", []):
                if "episode" in info:
                    self.returns.append(float(info["episode"]["r"]))
            return True

    clock = Clock()
    # no log folder: SB3's default logger makes an empty SB3-<time> folder in the temp
    # folder on every run
    model.set_logger(Logger(folder=None, output_formats=[]))
    total = int(spec["total_timesteps"])
    startup = time.time() - launch
    t0 = time.perf_counter()
    if learning_starts == 0:  # PPO: learning on from the first step
        clock.mark = (t0, 0)
    model.learn(total_timesteps=total, callback=clock)
    t1 = time.perf_counter()
    mark_t, mark_steps = clock.mark or (t0, 0)
    done_steps = model.num_timesteps

    genv = gym.make(spec["env"])
    rng = np.random.default_rng(123)
    rand = []
    for i in range(int(spec.get("random_episodes", 20))):
        genv.reset(seed=1000 + i)
        ret, over = 0.0, False
        while not over:
            _, r, term, trunc, _ = genv.step(int(rng.integers(genv.action_space.n)))
            ret += float(r)
            over = term or trunc
        rand.append(ret)
    protocol.emit({
        "framework": "stable-baselines3",
        "versions": protocol.versions("stable_baselines3", "torch", "gymnasium", "numpy"),
        "threads": torch.get_num_threads(), "seeds": 1, "vmapped_seeds": False,
        "defaults": defaults, "startup_s": startup, "compile_s": None,
        "warmup_env_steps": mark_steps, "warmup_s": mark_t - t0,
        "measured_env_steps": done_steps - mark_steps, "measured_s": t1 - mark_t,
        "episodes": len(clock.returns), "final_return": protocol.tail_mean(clock.returns),
        "random_return": float(np.mean(rand)),
        "return_convention": "gymnasium: undiscounted training-episode return (exploration "
                             "on), last 10 % of the training episodes",
        "config": {"algo": spec["algo"], "env": spec["env"], "n_envs": n_envs,
                   **kw},
    })
    return 0


if __name__ == "__main__":
    sys.exit(main())
