"""All SQL for the world's tables: agents, points of interest, state events, world facts.

Functions take the caller's session (a route's, a job's) and leave the transaction to it unless they say
they commit.
"""

from __future__ import annotations

from sqlalchemy import func
from sqlmodel import Session, select

from backend.world.models import Agent, PointOfInterest


def world_census(session: Session) -> dict[str, dict[str, int]]:
    """Every world that has agents or points of interest: name -> {"agents": n, "pois": n}."""
    census: dict[str, dict[str, int]] = {}
    for table, key in ((Agent, "agents"), (PointOfInterest, "pois")):
        for world_id, count in session.exec(select(table.world_id, func.count()).group_by(table.world_id)):
            census.setdefault(world_id, {"agents": 0, "pois": 0})[key] = count
    return dict(sorted(census.items()))
