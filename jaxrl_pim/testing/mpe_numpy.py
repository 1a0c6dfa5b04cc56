"""Plain NumPy (float64, one entity at a time) port of the original particle-world rules.

Written from the published description of the multi-agent particle environments, as an
independent reference for ``jaxrl_pim.envs.mpe``: every entity is a Python object, forces
are accumulated pair by pair in loops, and nothing is vectorised, so a mistake in the
stacked-array implementation (an axis, a sign, an off-by-one in the "other agents" order)
shows up as a mismatch.

Scope: the two scenarios the library implements, simple_spread (cooperative navigation) and
simple_tag (predator-prey). ``integration`` picks the order of the Euler update:
``"original"`` (velocity, then position) or ``"mpe2"`` (position, then velocity).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass
class Body:
    """One disc in the plane."""

    pos: np.ndarray
    vel: np.ndarray
    size: float
    movable: bool
    collide: bool
    accel: float = 5.0
    max_speed: float | None = None
    predator: bool = False


class World:
    """A list of agents and a list of landmarks with the particle-world update rule."""

    def __init__(self, agents: list[Body], landmarks: list[Body], integration: str = "original",
                 dt: float = 0.1, damping: float = 0.25, contact_force: float = 100.0,
                 contact_margin: float = 1e-3) -> None:
        self.agents = agents
        self.landmarks = landmarks
        self.integration = integration
        self.dt = dt
        self.damping = damping
        self.contact_force = contact_force
        self.contact_margin = contact_margin

    def entities(self) -> list[Body]:
        return self.agents + self.landmarks

    def _contact(self, a: Body, b: Body) -> np.ndarray | None:
        """Force on ``a`` due to ``b`` (``None`` if either does not collide)."""
        if not (a.collide and b.collide):
            return None
        dx = a.pos[0] - b.pos[0]
        dy = a.pos[1] - b.pos[1]
        dist = math.sqrt(dx * dx + dy * dy)
        overlap = -(dist - (a.size + b.size)) / self.contact_margin
        # softplus written out: log(1 + e^x), stable for large |x|
        soft = max(overlap, 0.0) + math.log1p(math.exp(-abs(overlap)))
        magnitude = self.contact_force * soft * self.contact_margin / dist
        return np.array([dx * magnitude, dy * magnitude])

    def step(self, actions: list[np.ndarray]) -> None:
        """Apply one 5-entry action vector per agent and advance every movable body by dt."""
        ents = self.entities()
        total = [np.zeros(2) for _ in ents]
        for i, (agent, act) in enumerate(zip(self.agents, actions, strict=True)):
            push = np.array([act[1] - act[2], act[3] - act[4]], dtype=np.float64)
            total[i] = total[i] + push * agent.accel
        for i in range(len(ents)):
            for j in range(i + 1, len(ents)):
                f = self._contact(ents[i], ents[j])
                if f is None:
                    continue
                if ents[i].movable:
                    total[i] = total[i] + f
                if ents[j].movable:
                    total[j] = total[j] - f
        for i, body in enumerate(ents):
            if not body.movable:
                continue
            if self.integration == "mpe2":
                body.pos = body.pos + body.vel * self.dt
            v = body.vel * (1.0 - self.damping) + total[i] * self.dt
            if body.max_speed is not None:
                s = math.hypot(v[0], v[1])
                if s > body.max_speed:
                    v = v / s * body.max_speed
            body.vel = v
            if self.integration == "original":
                body.pos = body.pos + body.vel * self.dt


def _touching(a: Body, b: Body) -> bool:
    return math.dist(a.pos, b.pos) < a.size + b.size


# ----------------------------------------------------------------------------- spread


def spread_world(agent_pos, agent_vel, landmark_pos, integration: str = "original") -> World:
    agents = [Body(np.array(p, float), np.array(v, float), 0.15, True, True, accel=5.0)
              for p, v in zip(agent_pos, agent_vel, strict=True)]
    landmarks = [Body(np.array(p, float), np.zeros(2), 0.05, False, False)
                 for p in landmark_pos]
    return World(agents, landmarks, integration)


def spread_obs(world: World) -> list[np.ndarray]:
    out = []
    for me in world.agents:
        parts = [me.vel, me.pos]
        parts += [lm.pos - me.pos for lm in world.landmarks]
        others = [o for o in world.agents if o is not me]
        parts += [o.pos - me.pos for o in others]
        parts += [np.zeros(2) for _ in others]  # silent agents: zero communication
        out.append(np.concatenate(parts))
    return out


def spread_rewards(world: World, convention: str = "original",
                   local_ratio: float = 0.5) -> list[float]:
    cover = 0.0
    for lm in world.landmarks:
        cover -= min(math.dist(a.pos, lm.pos) for a in world.agents)
    if convention == "original":
        per_agent = []
        for me in world.agents:
            r = cover
            for other in world.agents:  # includes ``me`` itself: distance 0 < 0.3
                if _touching(other, me):
                    r -= 1.0
            per_agent.append(r)
        shared = sum(per_agent)
        return [shared] * len(world.agents)
    out = []
    for me in world.agents:
        local = -float(sum(_touching(o, me) for o in world.agents if o is not me))
        out.append((1.0 - local_ratio) * cover + local_ratio * local)
    return out


# ----------------------------------------------------------------------------- tag


def tag_world(pred_pos, pred_vel, prey_pos, prey_vel, obstacle_pos,
              integration: str = "original") -> World:
    agents = [Body(np.array(p, float), np.array(v, float), 0.075, True, True, accel=3.0,
                   max_speed=1.0, predator=True)
              for p, v in zip(pred_pos, pred_vel, strict=True)]
    agents += [Body(np.array(p, float), np.array(v, float), 0.05, True, True, accel=4.0,
                    max_speed=1.3)
               for p, v in zip(prey_pos, prey_vel, strict=True)]
    landmarks = [Body(np.array(p, float), np.zeros(2), 0.2, False, True) for p in obstacle_pos]
    return World(agents, landmarks, integration)


def tag_obs(world: World) -> tuple[list[np.ndarray], list[np.ndarray]]:
    preds, prey = [], []
    for me in world.agents:
        parts = [me.vel, me.pos]
        parts += [lm.pos - me.pos for lm in world.landmarks]
        others = [o for o in world.agents if o is not me]
        parts += [o.pos - me.pos for o in others]
        parts += [o.vel for o in others if not o.predator]
        (preds if me.predator else prey).append(np.concatenate(parts))
    return preds, prey


def boundary_penalty(x: float) -> float:
    """Prey penalty for one coordinate's absolute value."""
    if x < 0.9:
        return 0.0
    if x < 1.0:
        return (x - 0.9) * 10.0
    return min(math.exp(2.0 * x - 2.0), 10.0)


def tag_rewards(world: World) -> tuple[list[float], list[float]]:
    preds = [a for a in world.agents if a.predator]
    prey = [a for a in world.agents if not a.predator]
    caught = sum(_touching(p, g) for g in prey for p in preds)
    pred_r = [10.0 * caught for _ in preds]
    prey_r = []
    for g in prey:
        r = -10.0 * sum(_touching(p, g) for p in preds)
        r -= sum(boundary_penalty(abs(c)) for c in g.pos)
        prey_r.append(r)
    return pred_r, prey_r
