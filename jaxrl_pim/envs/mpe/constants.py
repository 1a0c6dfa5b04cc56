"""The particle worlds' size limits and presets, in a module that imports no jax, so that a
config (:class:`jaxrl_pim.marl.config.MARLConfig`) checks its world sizes without loading the
worlds; :mod:`jaxrl_pim.envs.mpe.scenarios` and :mod:`jaxrl_pim.envs.mpe` re-export them."""

from __future__ import annotations

from jaxrl_pim import choices

MAX_AGENTS = 4096
"""Largest team size (agents, predators, prey or obstacles) a scenario accepts."""

TAG_PRESETS = choices.TAG_PRESETS  # in jaxrl_pim.choices (the command's option names)
"""Predator-prey sizes: preset (number of predators) -> ``(predators, prey, obstacles)``
(:data:`jaxrl_pim.choices.TAG_PRESETS`)."""

__all__ = ["MAX_AGENTS", "TAG_PRESETS"]
