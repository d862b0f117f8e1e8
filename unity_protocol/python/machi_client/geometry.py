"""Flat 2D geometry for the headless world: the ground plane (Unity x, z), circular obstacles, sight."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

Vec = tuple[float, float]


@dataclass(frozen=True)
class Obstacle:
    """A circle that blocks sight (a tree, a kiosk, a wall corner), like a collider on Unity's obstacle layer."""

    x: float
    z: float
    radius: float


def distance(a: Vec, b: Vec) -> float:
    return math.hypot(b[0] - a[0], b[1] - a[1])


def step_towards(pos: Vec, target: Vec, max_step: float) -> Vec:
    """Move at most `max_step` metres straight towards `target`."""
    gap = distance(pos, target)
    if gap <= max_step or gap == 0:
        return target
    t = max_step / gap
    return (pos[0] + (target[0] - pos[0]) * t, pos[1] + (target[1] - pos[1]) * t)


def heading_to(pos: Vec, target: Vec, fallback: float) -> float:
    """The angle (radians) from `pos` towards `target`; `fallback` when they coincide."""
    if distance(pos, target) < 1e-9:
        return fallback
    return math.atan2(target[1] - pos[1], target[0] - pos[0])


def in_view(pos: Vec, heading: float, other: Vec, view_angle_deg: float) -> bool:
    """Is `other` inside the cone of `view_angle_deg` centred on `heading` (Unity's Vector3.Angle test)?"""
    if distance(pos, other) < 1e-9:
        return True
    bearing = math.atan2(other[1] - pos[1], other[0] - pos[0])
    off = abs((bearing - heading + math.pi) % (2 * math.pi) - math.pi)
    return math.degrees(off) <= view_angle_deg / 2


def blocked(a: Vec, b: Vec, obstacles: list[Obstacle]) -> bool:
    """Does any obstacle cut the segment a-b (the raycast between two agents' eyes)?"""
    ax, az = a
    dx, dz = b[0] - ax, b[1] - az
    length2 = dx * dx + dz * dz
    for ob in obstacles:
        t = 0.0 if length2 == 0 else max(0.0, min(1.0, ((ob.x - ax) * dx + (ob.z - az) * dz) / length2))
        if math.hypot(ax + t * dx - ob.x, az + t * dz - ob.z) < ob.radius:
            return True
    return False


def scatter_obstacles(rng: random.Random, anchors: list[Vec], count: int, clearance: float) -> list[Obstacle]:
    """`count` obstacles around the points of interest, none within `clearance` of one (seeded layout)."""
    if not anchors:
        return []
    xs, zs = [p[0] for p in anchors], [p[1] for p in anchors]
    obstacles: list[Obstacle] = []
    for _ in range(count * 20):
        if len(obstacles) >= count:
            break
        radius = rng.uniform(1.0, 3.0)
        spot = (rng.uniform(min(xs) - 10, max(xs) + 10), rng.uniform(min(zs) - 10, max(zs) + 10))
        if all(distance(spot, p) > clearance + radius for p in anchors):
            obstacles.append(Obstacle(spot[0], spot[1], radius))
    return obstacles
