"""BenchMARL's side of ``benchmarks/e2e_frameworks.py`` (run with ``.peers/benchmarl``'s
python): MADDPG or MASAC on its PettingZoo ``simple_spread`` task (``simple_spread_v3``,
25-step episodes, one env, CPU), BenchMARL's own ``Experiment`` loop, printed as one result
line (``benchmarks/peers/protocol.py``).

Schedule mapping (``ExperimentConfig``): ``off_policy_collected_frames_per_batch =
update_every`` (one iteration per update period), ``off_policy_n_optimizer_steps = 1`` (one
update round per iteration), ``off_policy_train_batch_size = batch_size``,
``off_policy_memory_size = buffer_capacity``, ``off_policy_init_random_frames =
learning_starts``, one env, ``lr``, ``gamma``, ``polyak_tau = tau``; per-agent actors and
critics (``share_policy_params = False``, ``share_param_critic = False``) of 2x64 ReLU layers;
evaluation, loggers, JSON output and checkpoints off. BenchMARL's MADDPG acts on continuous
actions only (the task's ``continuous_actions``); MASAC uses the discrete ones, as the
library. BenchMARL starts optimiser steps from its first iteration (the random-action frames
only choose the collector's policy), so its warm-up includes updates. With ``defaults``:
BenchMARL's own experiment, algorithm and model defaults but for the number of frames,
evaluation and logging. Iteration times come from callbacks (batch collected, training ended);
the warm-up is the iterations whose frames lie within the random frames. Returns: the sum over
agents of the episode's rewards (frames' rewards summed per 25-step episode).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import protocol  # noqa: E402
from benchmarl.experiment.callback import Callback  # noqa: E402


class Clock(Callback):
    """Times each collected batch and sums its rewards (module level: the experiment pickles
    its callbacks)."""

    def __init__(self) -> None:
        super().__init__()
        self.marks: list[tuple[float, float]] = []  # (time, reward sum of the batch)
        self.ends: list[float] = []  # end of each group's training, per iteration

    def on_train_end(self, training_td, group: str) -> None:
        self.ends.append(time.perf_counter())

    def on_batch_collected(self, batch) -> None:
        total = 0.0
        for group in self.experiment.group_map:
            total += float(batch.get(("next", group, "reward")).sum())
        self.marks.append((time.perf_counter(), total))


def main(argv: list[str] | None = None) -> int:
    spec, launch = protocol.parse(argv)
    import numpy as np
    import torch
    from benchmarl.algorithms import MaddpgConfig, MasacConfig
    from benchmarl.environments import PettingZooTask
    from benchmarl.experiment import Experiment, ExperimentConfig
    from benchmarl.models.mlp import MlpConfig

    if protocol.threads():
        torch.set_num_threads(protocol.threads())
    defaults = bool(spec.get("defaults"))
    length, n = int(spec["episode_length"]), int(spec["agents"])
    warm_frames = int(spec["learning_starts"])
    per_batch = int(spec["update_every"])
    meas_frames = int(spec["measured_episodes"]) * length
    cfg = ExperimentConfig.get_from_yaml()
    cfg.sampling_device = cfg.train_device = cfg.buffer_device = "cpu"
    cfg.evaluation, cfg.render, cfg.loggers, cfg.create_json = False, False, [], False
    cfg.checkpoint_interval, cfg.checkpoint_at_end = 0, False
    cfg.save_folder = tempfile.mkdtemp(prefix="benchmarl-")
    algo_cls = {"maddpg": MaddpgConfig, "masac": MasacConfig}[spec["algo"]]
    algo = algo_cls.get_from_yaml()
    model = MlpConfig.get_from_yaml()
    critic = MlpConfig.get_from_yaml()
    if defaults:
        per_batch = cfg.off_policy_collected_frames_per_batch
        warm_frames = cfg.off_policy_init_random_frames
    else:
        cfg.off_policy_collected_frames_per_batch = per_batch
        cfg.off_policy_n_envs_per_worker = 1
        cfg.off_policy_n_optimizer_steps = 1
        cfg.off_policy_train_batch_size = int(spec["batch_size"])
        cfg.off_policy_memory_size = int(spec["buffer_capacity"])
        cfg.off_policy_init_random_frames = warm_frames
        cfg.lr, cfg.gamma = float(spec["lr"]), float(spec["gamma"])
        cfg.polyak_tau = float(spec["tau"])
        cfg.share_policy_params = False
        if hasattr(algo, "share_param_critic"):
            algo.share_param_critic = False
        for m in (model, critic):
            m.num_cells = [int(h) for h in spec["hidden"]]
            m.activation_class = torch.nn.ReLU
    # whole iterations: warm-up frames rounded up, then the measured frames
    warm_iters = -(-warm_frames // per_batch)
    meas_iters = max(1, -(-meas_frames // per_batch))
    cfg.max_n_frames = (warm_iters + meas_iters) * per_batch
    cfg.max_n_iters = None
    task = PettingZooTask.SIMPLE_SPREAD.get_from_yaml()
    task.config.update({"N": n, "max_cycles": length})
    cfg.prefer_continuous_actions = spec["algo"] == "maddpg"

    clock = Clock()
    experiment = Experiment(task=task, algorithm_config=algo, model_config=model,
                            critic_model_config=critic, seed=0, config=cfg,
                            callbacks=[clock])
    startup = time.time() - launch
    t0 = time.perf_counter()
    experiment.run()
    t_end = time.perf_counter()
    # the warm-up ends when the last warm-up iteration's last group has trained
    groups = len(experiment.group_map)
    t_warm = clock.ends[warm_iters * groups - 1] if warm_iters else t0
    ep_per_batch = per_batch / length
    meas_rewards = [m[1] / ep_per_batch for m in clock.marks[warm_iters:]]

    from pettingzoo.mpe import simple_spread_v3

    renv = simple_spread_v3.parallel_env(N=n, max_cycles=length,
                                         continuous_actions=spec["algo"] == "maddpg")
    rand = []
    for i in range(int(spec.get("random_episodes", 20))):
        renv.reset(seed=1000 + i)
        for a in renv.agents:
            renv.action_space(a).seed(1000 + i)
        total = 0.0
        for _ in range(length):
            _, rew, _, _, _ = renv.step({a: renv.action_space(a).sample() for a in renv.agents})
            total += float(sum(rew.values()))
        rand.append(total)
    protocol.emit({
        "framework": "benchmarl",
        "versions": protocol.versions("benchmarl", "torchrl", "tensordict", "torch",
                                      "pettingzoo", "numpy"),
        "threads": torch.get_num_threads(), "seeds": 1, "vmapped_seeds": False,
        "defaults": defaults, "startup_s": startup, "compile_s": None,
        "warmup_env_steps": warm_iters * per_batch, "warmup_s": t_warm - t0,
        "measured_env_steps": (experiment.n_iters_performed - warm_iters) * per_batch,
        "measured_s": t_end - t_warm, "episodes": experiment.total_frames // length,
        "update_rounds": experiment.n_iters_performed * cfg.off_policy_n_optimizer_steps,
        "final_return": protocol.tail_mean(meas_rewards),
        "random_return": float(np.mean(rand)),
        "return_convention": "pettingzoo simple_spread_v3 (local_ratio 0.5): the sum over "
                             "agents of the undiscounted episode reward (per 25-step episode "
                             "of the collected batches), last 10 % of the measured "
                             "iterations; random: uniform actions",
        "config": {"algo": spec["algo"], "agents": n,
                   "frames_per_batch": cfg.off_policy_collected_frames_per_batch,
                   "n_optimizer_steps": cfg.off_policy_n_optimizer_steps,
                   "train_batch_size": cfg.off_policy_train_batch_size,
                   "memory_size": cfg.off_policy_memory_size,
                   "init_random_frames": cfg.off_policy_init_random_frames,
                   "max_n_frames": cfg.max_n_frames, "lr": cfg.lr, "gamma": cfg.gamma,
                   "polyak_tau": cfg.polyak_tau, "share_policy_params": cfg.share_policy_params,
                   "num_cells": list(model.num_cells),
                   "continuous_actions": cfg.prefer_continuous_actions},
    })
    return 0


if __name__ == "__main__":
    sys.exit(main())
