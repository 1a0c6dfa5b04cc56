"""Animated GIFs of particle-world episodes (matplotlib, imported when called).

:func:`render_gif` draws one or more episodes recorded by
:func:`jaxrl_pim.marl.policies.rollout_positions` side by side, one frame per time step:
every agent, landmark, prey and obstacle a circle of its true radius in world units (equal
axis scales), agents coloured by team (spread agents and predators blue, prey green),
landmarks light grey, obstacles dark grey. The animation is written with matplotlib's Pillow
writer to a temporary file renamed onto the target (:func:`jaxrl_pim.report.atomic_save`),
so an interrupted render leaves an earlier GIF at that path as it was.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from jaxrl_pim.report import atomic_save

__all__ = ["TEAM_COLOURS", "render_gif"]

TEAM_COLOURS = ("#3b6fb6", "#3aa655", "#c7772e", "#8e5bb5")
"""Agent colours by team index (spread agents / predators, prey, further teams)."""

_LANDMARK = {"landmark": "#b8b8b8", "obstacle": "#4a4a4a"}


def render_gif(episodes: Sequence[dict[str, Any]], path: str | Path, *,
               titles: Sequence[str] | None = None, fps: int = 6, dpi: int = 90,
               extent: float | None = None) -> Path:
    """Write the episodes (dicts of ``rollout_positions``) side by side as a GIF at ``path``.

    ``titles``: one per panel (default: the env name and the episode's returns); ``fps``:
    frames per second; ``dpi``: resolution of the 3-inch panels; ``extent``: half-width of
    the square view in world units (default: fits every position of every episode, at least
    1.2). Episodes of different lengths hold their last frame. Returns the path written.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.animation import FuncAnimation, PillowWriter
    from matplotlib.patches import Circle

    if not episodes:
        raise ValueError("render_gif needs at least one episode")
    path = Path(path)
    if path.suffix.lower() != ".gif":
        raise ValueError(f"the animation is written as a GIF: {str(path)!r} does not end in "
                         ".gif")
    if extent is None:
        reach = [np.abs(np.concatenate([e["agents"].reshape(-1, 2),
                                        e["landmarks"].reshape(-1, 2)])).max()
                 for e in episodes]
        extent = max(1.2, min(3.0, float(max(reach)) + 0.2))
    frames = max(e["agents"].shape[0] for e in episodes)
    fig, axes = plt.subplots(1, len(episodes), figsize=(3 * len(episodes), 3.2),
                             squeeze=False)
    panels = []
    for i, (ax, ep) in enumerate(zip(axes[0], episodes, strict=True)):
        ax.set_xlim(-extent, extent)
        ax.set_ylim(-extent, extent)
        ax.set_aspect("equal")
        ax.set_xticks([])
        ax.set_yticks([])
        if titles is not None:
            title = titles[i]
        else:
            ret = ", ".join(f"{n} {r:.1f}" for n, r in zip(ep["team_names"], ep["returns"],
                                                          strict=True))
            title = f"{ep['env']}: {ret}"
        ax.set_title(title, fontsize=8)
        lm_colour = _LANDMARK[ep.get("landmark_kind", "landmark")]
        lms = [ax.add_patch(Circle(tuple(p), r, color=lm_colour, zorder=1))
               for p, r in zip(ep["landmarks"][0], ep["landmark_radius"], strict=True)]
        ags = [ax.add_patch(Circle(tuple(p), r, color=TEAM_COLOURS[int(t) % len(TEAM_COLOURS)],
                                   alpha=0.85, zorder=2))
               for p, r, t in zip(ep["agents"][0], ep["agent_radius"], ep["agent_team"],
                                  strict=True)]
        step = ax.text(0.02, 0.02, "", transform=ax.transAxes, fontsize=7)
        panels.append((ep, lms, ags, step))
    fig.tight_layout()

    def draw(f: int) -> list[Any]:
        changed = []
        for ep, lms, ags, step in panels:
            t = min(f, ep["agents"].shape[0] - 1)
            for c, p in zip(lms, ep["landmarks"][t], strict=True):
                c.center = tuple(p)
            for c, p in zip(ags, ep["agents"][t], strict=True):
                c.center = tuple(p)
            step.set_text(f"t = {t}")
            changed += [*lms, *ags, step]
        return changed

    anim = FuncAnimation(fig, draw, frames=frames, blit=False)
    try:  # a temporary file renamed onto path: an interrupted render keeps the old GIF
        atomic_save(path, lambda tmp: anim.save(tmp, writer=PillowWriter(fps=fps), dpi=dpi))
    finally:
        plt.close(fig)
    return path
