"""The demo world shipped with Machi (`demo_world.json`): loaded on first start into an empty world."""

from __future__ import annotations

import json
import logging
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field
from sqlmodel import Session, select

from backend.gametime import utcnow
from backend.storage.db import session_scope
from backend.world.models import DEFAULT_WORLD, Agent, PointOfInterest, WorldMeta
from backend.world.schemas import ID_PATTERN, AgentUpsert, PoiUpsert

if TYPE_CHECKING:
    from fastapi import FastAPI

log = logging.getLogger(__name__)

DEMO_FILE = Path(__file__).with_name("demo_world.json")


class DemoPoi(PoiUpsert):
    id: str = Field(pattern=ID_PATTERN)


class DemoAgent(AgentUpsert):
    id: str = Field(pattern=ID_PATTERN)


class DemoWorld(BaseModel):
    """The demo file: points of interest and personas, validated like API input."""

    format: str = "machi-demo-world"
    version: int = 1
    pois: list[DemoPoi]
    agents: list[DemoAgent]


@cache
def demo_world(path: Path = DEMO_FILE) -> DemoWorld:
    """The parsed demo file (a broken file fails loudly at start-up: it ships with the code)."""
    return DemoWorld.model_validate(json.loads(path.read_text(encoding="utf-8")))


def load_demo(
    session: Session, world_id: str = DEFAULT_WORLD, demo: DemoWorld | None = None
) -> dict[str, int]:
    """Add the demo places and agents to `world_id` (existing rows with the same ids are replaced)."""
    demo = demo or demo_world()
    for poi in demo.pois:
        pos = poi.position
        session.merge(
            PointOfInterest(
                world_id=world_id,
                id=poi.id,
                name=poi.name,
                kind=poi.kind,
                description=poi.description,
                x=pos.x,
                y=pos.y,
                z=pos.z,
            )
        )
    for persona in demo.agents:
        data: dict[str, Any] = persona.model_dump()
        session.merge(Agent(world_id=world_id, **data))
    meta = session.get(WorldMeta, world_id) or WorldMeta(world_id=world_id)
    meta.demo_loaded_at = utcnow()
    session.add(meta)
    return {"pois": len(demo.pois), "agents": len(demo.agents)}


def needs_demo(session: Session, world_id: str = DEFAULT_WORLD) -> bool:
    """True for a world never set up before (no demo loaded, nothing imported) with no agent of its own."""
    if session.get(WorldMeta, world_id) is not None:
        return False
    return session.exec(select(Agent.id).where(Agent.world_id == world_id).limit(1)).first() is None


async def ensure_demo_world(app: FastAPI) -> None:
    """Start-up step: load the demo world once, when LOAD_DEMO_WORLD is on and the default world is empty."""
    if not app.state.settings.load_demo_world:
        return
    with session_scope(app.state.engine) as session:
        if not needs_demo(session):
            return
        counts = load_demo(session)
    log.info("demo world loaded: %(agents)d agents, %(pois)d points of interest", counts)
