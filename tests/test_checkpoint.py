"""jaxrl_pim.checkpoint: orbax checkpoints of pytrees with typed PRNG keys, kept atomically."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl_pim.checkpoint import Checkpoints, Damaged


class State(NamedTuple):
    w: jax.Array
    key: jax.Array
    step: jax.Array
    legacy_key: jax.Array


def make_state(seed: int) -> State:
    return State(w=jnp.arange(6.0).reshape(2, 3) * seed, key=jax.random.key(seed),
                 step=jnp.int32(seed), legacy_key=jax.random.PRNGKey(seed))


def test_round_trip_keeps_values_dtypes_and_keys(tmp_path):
    ckpt = Checkpoints(tmp_path / "run", fingerprint={"lr": 0.1, "hidden": (64, 64)}, keep=2)
    state = make_state(3)
    ckpt.save(10, state, meta={"episodes": 10})
    template = jax.eval_shape(make_state, 0)
    restored, meta = ckpt.restore(template)
    assert meta == {"episodes": 10}
    np.testing.assert_array_equal(restored.w, state.w)
    assert restored.step.dtype == jnp.int32 and int(restored.step) == 3
    # the typed key draws exactly what the saved one draws
    assert jax.dtypes.issubdtype(restored.key.dtype, jax.dtypes.prng_key)
    np.testing.assert_array_equal(jax.random.uniform(restored.key, (4,)),
                                  jax.random.uniform(state.key, (4,)))
    np.testing.assert_array_equal(restored.legacy_key, state.legacy_key)
    ckpt.close()


def test_a_restored_state_reuses_the_fresh_runs_compiled_program(tmp_path):
    # orbax reads arrays back committed to their device; jit keys its caches on that, so a
    # resumed run compiled its program a second time (and missed the on-disk cache)
    step = jax.jit(lambda s: s._replace(w=s.w + 1.0, step=s.step + 1,
                                        key=jax.random.split(s.key)[0]))
    state = step(make_state(2))
    with Checkpoints(tmp_path) as ckpt:
        ckpt.save(1, state)
        restored, _ = ckpt.restore(jax.eval_shape(make_state, 0))
    assert not any(leaf.committed for leaf in jax.tree.leaves(restored))
    np.testing.assert_array_equal(step(restored).w, step(state).w)
    assert step._cache_size() == 1


def test_keeps_the_newest(tmp_path):
    with Checkpoints(tmp_path, keep=2) as ckpt:
        assert ckpt.latest() is None
        for step in (1, 2, 3):
            ckpt.save(step, make_state(step))
        assert ckpt.steps() == [2, 3]
        restored, _ = ckpt.restore(jax.eval_shape(make_state, 0), step=2)
        assert int(restored.step) == 2
        with pytest.raises(FileNotFoundError):
            ckpt.restore(jax.eval_shape(make_state, 0), step=1)


def test_rejects_other_configuration_and_shapes(tmp_path):
    with Checkpoints(tmp_path, fingerprint={"algo": "maddpg", "hidden": [64, 64]}) as ckpt:
        ckpt.save(1, make_state(1))
    with Checkpoints(tmp_path, fingerprint={"algo": "matd3", "hidden": [64, 64]}) as other:
        with pytest.raises(ValueError, match="algo: saved 'maddpg', this run 'matd3'"):
            other.restore(jax.eval_shape(make_state, 0))
    with Checkpoints(tmp_path, fingerprint={"algo": "maddpg", "hidden": (64, 64)}) as same:
        bad = jax.eval_shape(lambda: make_state(0)._replace(w=jnp.zeros((3, 3))))
        with pytest.raises(ValueError, match="does not match|expected"):
            same.restore(bad)


def test_kill_during_saves_leaves_complete_checkpoints(tmp_path):
    """SIGKILL a process that saves in a loop: every checkpoint left restores whole, but the
    newest when the kill came between orbax's rename and the file list (then it is Damaged,
    never read)."""
    code = textwrap.dedent(f"""
        import jax.numpy as jnp
        from jaxrl_pim.checkpoint import Checkpoints
        ckpt = Checkpoints({str(tmp_path)!r}, keep=3)
        print("ready", flush=True)
        for step in range(10_000):
            ckpt.save(step, {{"w": jnp.full((256, 256), step, jnp.float32)}})
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "JAX_PLATFORMS": "cpu"})
    try:
        assert proc.stdout.readline().strip() == "ready"
        with Checkpoints(tmp_path) as watch:
            deadline = 0
            while (watch.latest() or 0) < 3 and deadline < 600:
                deadline += 1
                subprocess.run(["sleep", "0.1"], check=True)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    with Checkpoints(tmp_path, keep=3) as ckpt:
        steps = ckpt.steps()
        assert steps, "no complete checkpoint left"
        whole = []
        for step in steps:
            try:
                restored, _ = ckpt.restore(
                    {"w": jax.ShapeDtypeStruct((256, 256), jnp.float32)}, step=step)
            except Damaged as err:  # killed after orbax's rename, before the file list
                assert step == steps[-1] and "no file list" in str(err), err
                continue
            assert float(restored["w"][0, 0]) == step and float(restored["w"][-1, -1]) == step
            whole.append(step)
        assert whole, "no checkpoint restores whole"


def test_listing_retries_when_a_writer_prunes_a_step_meanwhile(tmp_path, monkeypatch):
    """A reader listing the folder while another process drops an old step: orbax's reload
    fails with FileNotFoundError on the step that vanished; the listing is read again."""
    with Checkpoints(tmp_path, keep=3) as ckpt:
        ckpt.save(0, {"w": jnp.zeros(2)})
        ckpt.save(1, {"w": jnp.ones(2)})
        reload = ckpt._manager.reload
        failures = iter([FileNotFoundError("0/_CHECKPOINT_METADATA")])

        def flaky_reload():
            err = next(failures, None)
            if err is not None:
                raise err
            reload()

        monkeypatch.setattr(ckpt._manager, "reload", flaky_reload)
        assert ckpt.steps() == [0, 1]
        monkeypatch.setattr(ckpt._manager, "reload",
                            lambda: (_ for _ in ()).throw(FileNotFoundError("gone")))
        with pytest.raises(FileNotFoundError):
            ckpt.steps()  # a folder that keeps failing is an error, not an endless loop
