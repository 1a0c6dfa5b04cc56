"""Environment names read on the host before anything is built, in a module that imports no
jax: the form of a MuJoCo Playground task name (:mod:`jaxrl_pim.envs.playground`, which
re-exports these as ``PREFIX``, ``is_playground_name`` and ``parse_name``), so that a config
(:class:`jaxrl_pim.actorq.config.ActorQD4PGConfig`) checks it without loading jax or
Playground."""

from __future__ import annotations

PLAYGROUND_PREFIX = "playground/"
"""Names of MuJoCo Playground tasks start with this (``"playground/CartpoleBalance"``)."""


def is_playground_name(name: object) -> bool:
    """Whether ``name`` asks for a MuJoCo Playground task (``"playground/..."``)."""
    return isinstance(name, str) and name.startswith(PLAYGROUND_PREFIX)


def parse_playground_name(name: str) -> tuple[str, int | None]:
    """``"playground/<EnvName>[@<max_steps>]"`` -> ``(EnvName, max_steps or None)``.

    Checks only the form (no import of ``mujoco_playground``); raises ``ValueError``.
    """
    if not is_playground_name(name):
        raise ValueError(f"not a Playground task name (expected {PLAYGROUND_PREFIX!r}"
                         f"<EnvName>): {name!r}")
    rest = name[len(PLAYGROUND_PREFIX):]
    env_name, sep, limit = rest.partition("@")
    if not env_name or "/" in env_name:
        raise ValueError(f"bad Playground task name {name!r}; expected "
                         f"{PLAYGROUND_PREFIX!r}<EnvName>, e.g. 'playground/CartpoleBalance'")
    max_steps = None
    if sep:
        if not limit.isdigit() or int(limit) < 1:
            raise ValueError(f"bad time limit in {name!r}: '@{limit}' must be '@<positive int>'")
        max_steps = int(limit)
    return env_name, max_steps


__all__ = ["PLAYGROUND_PREFIX", "is_playground_name", "parse_playground_name"]
