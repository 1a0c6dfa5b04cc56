"""Broadcast path: quantized actor parameters equal the unpacked learner parameters, the
shared-memory transport round-trips, corrupted payloads are rejected."""

from __future__ import annotations

import multiprocessing as mp

import jax
import numpy as np
import pytest

from jaxrl_pim.actorq.algorithms import make_agent
from jaxrl_pim.actorq.broadcast import (
    Wire,
    actor_params,
    broadcast_sizes,
    decode,
    deserialize,
    encode,
)
from jaxrl_pim.actorq.config import ActorQDQNConfig, default_config
from jaxrl_pim.actorq.single import make_system
from jaxrl_pim.actorq.transport import ParamClient, ParamServer
from jaxrl_pim.envs import make_with_info
from jaxrl_pim.quant import QTensor, fast_int8
from jaxrl_pim.quant.compute import dequantized


def _tree_equal(a, b) -> bool:
    la, lb = jax.tree.leaves(a), jax.tree.leaves(b)
    return jax.tree.structure(a) == jax.tree.structure(b) and all(
        np.array_equal(np.asarray(x), np.asarray(y)) for x, y in zip(la, lb, strict=True)
    )


@pytest.fixture(scope="module")
def policy():
    cfg = default_config("dqn", hidden=(32, 32))
    _, _, info = make_with_info(cfg.env_name)
    agent = make_agent(cfg, info)
    return agent.policy_params(jax.jit(agent.init)(jax.random.PRNGKey(3)))


@pytest.mark.parametrize("compute", ["native", "float32"])
@pytest.mark.parametrize("precision", ["fp32", "fp16", "int8"])
def test_wire_roundtrip_equals_device_path(policy, precision, compute):
    wire, meta = encode(policy, precision)
    on_actor = decode(wire, meta, compute)
    device = jax.jit(actor_params, static_argnums=(1, 2))(policy, precision, compute)
    assert _tree_equal(on_actor, device)
    kernels = [x for x in jax.tree.leaves(on_actor, is_leaf=lambda x: isinstance(x, QTensor))
               if isinstance(x, QTensor) or x.dtype == np.float16]
    if compute == "native" and precision != "fp32":
        # every 2-D kernel stays low precision: int8 codes + scale, or float16 values
        assert len(kernels) == 3
        for k in kernels:
            dt = k.codes.dtype if isinstance(k, QTensor) else k.dtype
            assert dt == (np.int8 if precision == "int8" else np.float16)
    else:
        assert not kernels
    err = max(float(np.max(np.abs(np.asarray(a) - np.asarray(b))))
              for a, b in zip(jax.tree.leaves(dequantized(on_actor)), jax.tree.leaves(policy),
                              strict=True))
    if precision == "fp32":
        assert err == 0.0
    else:
        amax = max(float(np.max(np.abs(np.asarray(x)))) for x in jax.tree.leaves(policy))
        assert 0.0 < err <= amax / (127 if precision == "int8" else 1000)
    # the dequantized tree is the fake-quantized policy whatever the compute mode
    assert _tree_equal(dequantized(on_actor), decode(wire, meta, "float32"))


def test_broadcast_sizes(policy):
    sizes = broadcast_sizes(policy)
    n = sizes["params"]
    assert sizes["fp32"] == 4 * n == sizes["fp32_unpacked"]
    assert sizes["fp16"] == 2 * n
    n_leaves = len(jax.tree.leaves(policy))
    assert sizes["int8"] == n + 4 * n_leaves  # one byte per weight + a float32 scale per tensor
    assert sizes["fp32"] / sizes["int8"] > 3.9


def test_bad_checksum_raises(policy):
    wire, meta = encode(policy, "int8")
    bad = bytearray(wire.payload)
    bad[5] ^= 0x01
    with pytest.raises(ValueError, match="checksum"):
        deserialize(Wire(bytes(bad), wire.scales, wire.checksum), meta)
    with pytest.raises(ValueError, match="checksum"):
        deserialize(Wire(wire.payload, wire.scales[:-4], wire.checksum), meta)


def test_shared_memory_transport_roundtrip(policy):
    ctx = mp.get_context("spawn")
    wire, meta = encode(policy, "int8")
    server = ParamServer(ctx, wire.nbytes)
    try:
        client = ParamClient(server.name, server.lock)
        assert client.pull() is None  # nothing published yet
        assert server.publish(wire) == 1
        got = client.pull()
        assert got == wire and client.version == 1
        assert client.pull() is None  # no new version
        assert _tree_equal(decode(got, meta), decode(wire, meta))
        wire2, _ = encode(jax.tree.map(lambda x: 0.5 * x, policy), "int8")
        server.publish(wire2)
        assert client.pull() == wire2
        with pytest.raises(ValueError, match="exceeds"):
            server.publish(Wire(wire.payload + b"x" * 64, wire.scales, 0))
        client.close()
    finally:
        server.close()


def test_single_program_actors_hold_unpacked_learner_params():
    cfg = ActorQDQNConfig(precision="int8", num_actors=2, actor_update_period=5,
                          total_timesteps=100, hidden=(8,), buffer_capacity=64, batch_size=8,
                          learning_starts=8, eps_decay_steps=0, actor_compute="float32")
    system = make_system(cfg)
    state = jax.jit(system.init)(jax.random.PRNGKey(0))
    initial = system.agent.policy_params(state.learner)
    assert _tree_equal(state.actor_params, decode(*encode(initial, "int8"), "float32"))
    step = jax.jit(system.iteration)
    for _ in range(10):  # refreshes after iterations 5 and 10
        state, _ = step(state)
    learner = system.agent.policy_params(state.learner)
    assert int(state.learner.step) > 0 and not _tree_equal(learner, initial)
    assert _tree_equal(state.actor_params, decode(*encode(learner, "int8"), "float32"))
    assert not _tree_equal(state.actor_params, learner)  # int8, not the fp32 weights
    held = state.actor_params
    for _ in range(2):  # mid-period: actors keep the old copy while the learner moves on
        state, _ = step(state)
    assert _tree_equal(state.actor_params, held)
    assert not _tree_equal(system.agent.policy_params(state.learner), learner)


def test_single_program_native_int8_actors_run_the_fast_path():
    cfg = ActorQDQNConfig(precision="int8", actor_compute="native", num_actors=2,
                          actor_update_period=5, total_timesteps=100, hidden=(16, 16),
                          buffer_capacity=64, batch_size=8, learning_starts=8,
                          eps_decay_steps=0)
    system = make_system(cfg)
    state = jax.jit(system.init)(jax.random.PRNGKey(0))
    step = jax.jit(system.iteration)
    for _ in range(10):  # refreshed after iteration 10, calibrated on replay observations
        state, _ = step(state)
    held = state.actor_params
    assert isinstance(held, fast_int8.Prepared)
    assert [layer.kind for layer in held.layers.values()] == ["fp32", "int8", "fp32"]
    learner = system.agent.policy_params(state.learner)
    codes = decode(*encode(learner, "int8"), "native")["params"]["Dense_1"]["kernel"].codes
    np.testing.assert_array_equal(np.asarray(held.layers["Dense_1"].kernel)[:16, :16],
                                  np.asarray(codes).T)  # the broadcast's codes, (out, in)
    assert float(held.layers["Dense_1"].inv_in_scale) > 0


def test_process_actor_calibrates_the_fast_path_on_states_it_visited():
    """An actor process's int8 actor (``ActorWorker``) runs the fast path; its static input
    scale of the middle layer is ``max|relu(obs W0 + b0)| / 127`` over its environments'
    current observations and the last rollout's most recent ones (NumPy reference)."""
    from jaxrl_pim.actorq.worker import CALIBRATION_ROWS, ActorWorker

    cfg = ActorQDQNConfig(precision="int8", actor_compute="native", num_actors=1,
                          envs_per_actor=4, actor_update_period=80, hidden=(16, 16),
                          eps_decay_steps=0)
    _, _, info = make_with_info(cfg.env_name)
    agent = make_agent(cfg, info)
    learner = agent.policy_params(jax.jit(agent.init)(jax.random.PRNGKey(5)))
    wire, meta = encode(learner, "int8")
    worker = ActorWorker(cfg, 0, seed=1, meta=meta)
    worker.set_policy(0, wire)
    assert isinstance(worker.params, fast_int8.Prepared)
    assert [layer.kind for layer in worker.params.layers.values()] == ["fp32", "int8", "fp32"]
    out = worker.rollout()
    worker.set_policy(1, wire)  # calibrated again, now on the rollout's states
    held = dequantized(decode(wire, meta, "native"))["params"]
    seen = np.concatenate([out["transition"][0][-CALIBRATION_ROWS:],
                           np.asarray(worker.carry.obs)])
    assert len(seen) == CALIBRATION_ROWS + cfg.envs_per_actor
    hidden = np.maximum(seen @ np.asarray(held["Dense_0"]["kernel"], np.float64)
                        + np.asarray(held["Dense_0"]["bias"]), 0.0)
    np.testing.assert_allclose(1.0 / float(worker.params.layers["Dense_1"].inv_in_scale),
                               np.abs(hidden).max() / 127.0, rtol=1e-5)
    assert worker.rollout()["steps"] == 80 * 4
