"""Save and restore a MARL :class:`~jaxrl_pim.marl.trainer.TrainState` (npz of pytree leaves).

The file holds every leaf of the state (networks, optimiser moments, replay buffers, sampler
priorities, env state, RNG key, counters) as ``leaf_00000 ...`` plus the run's config as JSON.
It is written to a temporary name and renamed (``report.atomic_save``), so an interrupted save
never destroys the previous checkpoint. Restoring checks the config and every leaf's shape and
dtype against a freshly built state of the same config, so a checkpoint from another run
configuration is rejected with a message instead of silently mis-loading.

Resume: ``state = load(path, config)`` then ``make_train_from(config, remaining)(state)``; on
the same backend the result is bit-identical to the uninterrupted run.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import jax
import numpy as np

from jaxrl_pim.envs.mpe import TAG_PRESETS
from jaxrl_pim.marl.config import MARLConfig
from jaxrl_pim.marl.trainer import TrainState, make_init
from jaxrl_pim.report import atomic_save

# Config fields that may differ between the saved run and the resumed one.
_RESUMABLE_FIELDS = ("num_episodes",)


def _config_json(config: MARLConfig) -> str:
    d = dataclasses.asdict(config)
    return json.dumps({k: v for k, v in d.items() if k not in _RESUMABLE_FIELDS},
                      sort_keys=True)


def _world(d: dict) -> dict:
    """``d`` with the predator-prey composition resolved, so a preset (``num_agents=3``) and
    the same sizes given in full compare equal; files written before ``num_prey`` /
    ``num_obstacles`` existed read as presets."""
    d = dict(d)
    prey, obstacles = d.get("num_prey"), d.get("num_obstacles")
    if d.get("env") == "tag":
        if prey is None and d.get("num_agents") in TAG_PRESETS:
            _, prey, obstacles = TAG_PRESETS[d["num_agents"]]
        elif prey is not None and obstacles is None:
            obstacles = max(2, prey)
    d["num_prey"], d["num_obstacles"] = prey, obstacles
    return d


def save(path: str | os.PathLike[str], state: TrainState, config: MARLConfig) -> Path:
    """Write ``state`` (of a run with ``config``) to ``path`` atomically; returns the path."""
    leaves = jax.tree.leaves(state)
    arrays = {f"leaf_{i:05d}": np.asarray(x) for i, x in enumerate(leaves)}
    arrays["__config__"] = np.asarray(_config_json(config))

    def writer(tmp: str) -> None:
        with open(tmp, "wb") as fh:
            np.savez(fh, **arrays)

    return atomic_save(path, writer)


def load(path: str | os.PathLike[str], config: MARLConfig) -> TrainState:
    """Read a checkpoint written by :func:`save` for a run with ``config``.

    Raises FileNotFoundError if ``path`` does not exist and ValueError if it was written for
    another configuration (names the first differing field) or its arrays do not match.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"checkpoint {str(path)!r} does not exist")
    template = jax.eval_shape(make_init(config), jax.random.PRNGKey(0))
    leaves_t, treedef = jax.tree.flatten(template)
    try:
        data = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as err:
        raise ValueError(f"{str(path)!r} is not a readable checkpoint: {err}") from None
    with data:
        if "__config__" not in data:
            raise ValueError(f"{str(path)!r} is not a MARL checkpoint (no __config__ entry)")
        saved = _world(json.loads(str(data["__config__"])))
        want = _world(json.loads(_config_json(config)))
        for k in sorted(set(saved) | set(want)):
            if saved.get(k) != want.get(k):
                raise ValueError(
                    f"checkpoint {str(path)!r} was written with {k}={saved.get(k)!r}, "
                    f"but this run has {k}={want.get(k)!r}"
                )
        names = sorted(n for n in data.files if n.startswith("leaf_"))
        if len(names) != len(leaves_t):
            raise ValueError(
                f"checkpoint {str(path)!r} holds {len(names)} arrays, expected {len(leaves_t)}"
            )
        leaves = []
        for i, (name, t) in enumerate(zip(names, leaves_t, strict=True)):
            arr = data[name]
            if arr.shape != t.shape or arr.dtype != t.dtype:
                raise ValueError(
                    f"checkpoint {str(path)!r} leaf {i} has shape {arr.shape} {arr.dtype}, "
                    f"expected {t.shape} {t.dtype}"
                )
            leaves.append(jax.numpy.asarray(arr))
    return jax.tree.unflatten(treedef, leaves)
