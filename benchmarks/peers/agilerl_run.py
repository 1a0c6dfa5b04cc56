"""AgileRL's side of ``benchmarks/e2e_frameworks.py`` (run with ``.peers/agilerl``'s python):
MADDPG or MATD3 on mpe2's ``simple_spread_v3`` (discrete actions, 25-step episodes, one env),
printed as one result line (``benchmarks/peers/protocol.py``).

The loop is AgileRL's own off-policy multi-agent training loop as its trainer
(``agilerl.training.train_multi_agent_off_policy``) runs it for a population of one agent
with no mutations and no tournament: ``PzDummyVecEnv``, ``get_action``, ``ReplayBuffer`` /
``Sampler``, ``agent.learn`` every ``learn_step`` env steps once the buffer holds a batch and
more than ``learning_delay`` transitions; its periodic evaluation is left out (not part of the
schedule). Schedule mapping: ``batch_size``, ``memory size = buffer_capacity``,
``learning_delay = learning_starts``, ``learn_step = update_every`` (env steps, as AgileRL
counts them with one env), ``lr_actor = lr_critic = lr``, ``gamma``, ``tau``, 2x64 networks
(an encoder of one 64-unit layer into a 64-unit latent, a head of one 64-unit layer). With
``defaults``: the algorithm's constructor defaults (learn_step 5, batch 64, its networks) and
no learning delay. The warm-up (until learning starts) and the measured episodes after it are
timed apart; returns are AgileRL's score convention (the sum over agents of the episode's
rewards).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import protocol  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    spec, launch = protocol.parse(argv)
    import numpy as np
    import torch
    from agilerl.algorithms import MADDPG, MATD3
    from agilerl.components.data import MultiAgentTransition, transition_to_tensordict
    from agilerl.components.replay_buffer import ReplayBuffer
    from agilerl.components.sampler import Sampler
    from agilerl.vector import PzDummyVecEnv
    from mpe2 import simple_spread_v3

    if protocol.threads():
        torch.set_num_threads(protocol.threads())
    torch.manual_seed(0)
    defaults = bool(spec.get("defaults"))
    length = int(spec["episode_length"])
    env = PzDummyVecEnv(simple_spread_v3.parallel_env(
        N=int(spec["agents"]), max_cycles=length, continuous_actions=False))
    env.reset(seed=0)
    ids = list(env.agents)
    obs_spaces = [env.single_observation_space(a) for a in ids]
    act_spaces = [env.single_action_space(a) for a in ids]
    cls = {"maddpg": MADDPG, "matd3": MATD3}[spec["algo"]]
    if defaults:
        kw, delay, capacity = {}, 0, int(spec["buffer_capacity"])
    else:
        h = [int(x) for x in spec["hidden"]]
        kw = dict(batch_size=int(spec["batch_size"]), lr_actor=float(spec["lr"]),
                  lr_critic=float(spec["lr"]), learn_step=int(spec["update_every"]),
                  gamma=float(spec["gamma"]), tau=float(spec["tau"]),
                  net_config={"latent_dim": h[0],
                              "encoder_config": {"hidden_size": h[:1]},
                              "head_config": {"hidden_size": h[1:]}})
        delay, capacity = int(spec["learning_starts"]), int(spec["buffer_capacity"])
    agent = cls(obs_spaces, act_spaces, agent_ids=ids, device="cpu", **kw)
    memory = ReplayBuffer(max_size=capacity)
    sample = Sampler(memory=memory).sample
    agent.set_training_mode(True)
    startup = time.time() - launch

    def episode() -> tuple[float, int]:
        """One episode of AgileRL's loop: its summed score and the learn calls made."""
        obs, info = env.reset()
        score, learns = 0.0, 0
        for _ in range(length):
            action, raw = agent.get_action(obs=obs, infos=info)
            next_obs, reward, term, trunc, info = env.step(action)
            score += float(np.nansum([np.asarray(v).ravel() for v in reward.values()]))
            tr = transition_to_tensordict(MultiAgentTransition(
                obs=obs, action=raw, reward=reward, next_obs=next_obs, done=term))
            tr.batch_size = torch.Size([1])
            memory.add(tr)
            episode.step += 1
            if (episode.step % agent.learn_step == 0 and len(memory) >= agent.batch_size
                    and memory.counter > delay):
                agent.learn(sample(agent.batch_size))
                learns += 1
            obs = next_obs
        agent.reset_action_noise([0])
        return score, learns

    episode.step = 0
    t0 = time.perf_counter()
    warm, first_learn_s = 0, None
    while memory.counter <= max(delay, agent.batch_size - 1):
        episode()
        warm += 1
    t1 = time.perf_counter()
    scores, learns = [], 0
    for i in range(int(spec["measured_episodes"])):
        s = time.perf_counter()
        sc, n = episode()
        if i == 0:
            first_learn_s = time.perf_counter() - s
        scores.append(sc)
        learns += n
    t2 = time.perf_counter()

    rand_env = simple_spread_v3.parallel_env(N=int(spec["agents"]), max_cycles=length,
                                             continuous_actions=False)
    rand = []
    for i in range(int(spec.get("random_episodes", 20))):
        rand_env.reset(seed=1000 + i)
        total = 0.0
        for _ in range(length):
            acts = {a: rand_env.action_space(a).sample() for a in rand_env.agents}
            _, rew, _, _, _ = rand_env.step(acts)
            total += float(sum(rew.values()))
        rand.append(total)
    meas = int(spec["measured_episodes"])
    protocol.emit({
        "framework": "agilerl",
        "versions": protocol.versions("agilerl", "torch", "tensordict", "mpe2", "pettingzoo",
                                      "numpy"),
        "threads": torch.get_num_threads(), "seeds": 1, "vmapped_seeds": False,
        "defaults": defaults, "startup_s": startup, "compile_s": None,
        "first_episode_with_learning_s": first_learn_s,
        "warmup_env_steps": warm * length, "warmup_s": t1 - t0,
        "measured_env_steps": meas * length, "measured_s": t2 - t1,
        "episodes": warm + meas, "update_rounds": learns,
        "final_return": protocol.tail_mean(scores), "random_return": float(np.mean(rand)),
        "return_convention": "mpe2 simple_spread_v3 (local_ratio 0.5): AgileRL's score, the "
                             "sum over agents of the undiscounted episode reward, last 10 % "
                             "of the measured episodes; random: uniform discrete actions",
        "config": {"algo": spec["algo"], "agents": spec["agents"], "learning_delay": delay,
                   "memory_size": capacity, "learn_step": agent.learn_step,
                   "batch_size": agent.batch_size, **{k: v for k, v in kw.items()
                                                      if k not in ("learn_step",
                                                                   "batch_size")}},
    })
    return 0


if __name__ == "__main__":
    sys.exit(main())
