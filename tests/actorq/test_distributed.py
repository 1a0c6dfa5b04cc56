"""Distributed ActorQ end to end with the local-process transport: 2 actor processes, real
shared-memory/queue transport (the Ray transport: ``test_ray.py``)."""

from __future__ import annotations

import jax
import pytest

from jaxrl_pim.actorq.algorithms import make_agent
from jaxrl_pim.actorq.broadcast import encode
from jaxrl_pim.actorq.config import default_config
from jaxrl_pim.actorq.distributed import (
    ACTOR_PHASES,
    REPORT_FIELDS,
    DistributedRun,
    LearnerState,
    run_distributed,
)
from jaxrl_pim.envs import make_with_info
from jaxrl_pim.runner import Outcome


def test_two_actor_processes_return_experience_and_pull_int8_broadcasts():
    cfg = default_config("dqn", "CartPole-v1", precision="int8", num_actors=2,
                         total_timesteps=400, actor_update_period=25, learning_starts=50,
                         batch_size=16, buffer_capacity=1_000, hidden=(16,))
    result = run_distributed(cfg, DistributedRun(0, transport="processes", final_eval=False))
    assert isinstance(result, Outcome) and result.final_eval_return is None
    assert set(result.report) == set(REPORT_FIELDS)
    assert isinstance(result.state, LearnerState) and result.done == result.env_steps
    out = result.as_dict()
    # experience from both actors reached the learner's replay
    assert out["env_steps"] >= cfg.total_timesteps
    assert out["replay_size"] == out["env_steps"]
    assert out["experience_bytes"] > 0
    assert set(out["actors"]) == {0, 1}
    for rep in out["actors"].values():
        assert rep["rollouts"] >= 1 and rep["steps"] == 25 * rep["rollouts"]
        assert set(rep["timing_s"]) == set(ACTOR_PHASES)
    # the learner trained and re-broadcast; actors pulled new versions
    assert out["learner_updates"] > 0 and out["broadcasts"] > 1
    assert sum(rep["refreshes"] for rep in out["actors"].values()) >= 1
    # every transition the actors sent was received or still queued at the end
    assert out["transitions_lost"] == 0
    assert out["transitions_requested"] == out["transitions_received"] + out[
        "transitions_unused"]
    assert out["transitions_received"] == out["env_steps"]
    # what travelled per broadcast is the packed int8 policy
    _, _, info = make_with_info(cfg.env_name)
    agent = make_agent(cfg, info)
    wire, _ = encode(agent.policy_params(agent.init(jax.random.PRNGKey(0))), "int8")
    assert out["broadcast_bytes"] == wire.nbytes
    assert out["curve"].time_s.shape == out["curve"].env_steps.shape


def test_run_spec_is_validated_before_any_actor_starts():
    assert DistributedRun().transport == "ray" and DistributedRun().seed == 0
    for bad, match in [(dict(transport="mpi"), "transport"),
                       (dict(transport="processes", ray_address="auto"), "ray_address"),
                       (dict(message_timeout_s=0.0), "message_timeout_s"),
                       (dict(checkpoint_every=0), "checkpoint_every")]:
        with pytest.raises(ValueError, match=match):
            DistributedRun(**bad)
    assert "transitions_lost_total" in REPORT_FIELDS
