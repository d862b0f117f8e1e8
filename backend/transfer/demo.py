"""The worlds bundled with Machi (`towns/NAME.json`, format in `towns/README.md`).

The demo town (`demo`) is loaded on first start into an empty world; `machi world load NAME` wipes a world and
loads any bundled town, and a benchmark gets one as a world document for `POST /v1/world/import` from
`bundled_world(NAME)`. A town's `relationships` become person memories, so who knows whom at the start is in
the database like everything an agent learns later.
"""

from __future__ import annotations

import json
import logging
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from backend.errors import NotFound
from backend.ids import Id
from backend.memory.models import PersonMemory
from backend.storage.db import session_scope
from backend.transfer import repo
from backend.transfer.check import parse_document
from backend.transfer.document import FORMAT, VERSION
from backend.world import repo as world_repo
from backend.world.models import DEFAULT_WORLD
from backend.world.schemas import AgentUpsert, PoiUpsert

if TYPE_CHECKING:
    from fastapi import FastAPI

    from backend.storage.db import Session

log = logging.getLogger(__name__)

TOWNS_DIR = Path(__file__).with_name("towns")
DEMO_TOWN = "demo"
DEMO_FILE = TOWNS_DIR / f"{DEMO_TOWN}.json"


class TownPoi(PoiUpsert):
    id: Id


class TownAgent(AgentUpsert):
    id: Id


class TownRelationship(BaseModel):
    """What agent `from` knows of agent `to` when the world starts, in `from`'s language."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    from_: Id = Field(alias="from")
    to: Id
    summary: str = Field(min_length=1, max_length=1000)
    notes: list[str] = Field(default_factory=list, max_length=12)


class Town(BaseModel):
    """A bundled town: places, personas and who knows whom, validated like API input."""

    model_config = ConfigDict(extra="forbid")

    format: Literal["machi-town"]
    version: Literal[1]
    description: str = ""
    #: Roles a scenario gives to agents or places ("party_host": "hikari", "party_place": "cafe-1"): for
    #: benchmarks, not loaded.
    cast: dict[str, str] = Field(default_factory=dict)
    pois: list[TownPoi]
    agents: list[TownAgent]
    relationships: list[TownRelationship] = Field(default_factory=list)

    @model_validator(mode="after")
    def _consistent(self) -> Town:
        pois = _unique("pois", [poi.id for poi in self.pois])
        agents = _unique("agents", [agent.id for agent in self.agents])
        for agent in self.agents:
            if agent.home_poi is not None and agent.home_poi not in pois:
                raise ValueError(f"agent {agent.id!r}: home_poi {agent.home_poi!r} is not in pois")
        pairs = [(rel.from_, rel.to) for rel in self.relationships]
        _unique("relationships", [f"{a}->{b}" for a, b in pairs])
        for a, b in pairs:
            if a not in agents or b not in agents or a == b:
                raise ValueError(f"relationship {a!r} -> {b!r} must join two different agents of the town")
        for role, cast_id in self.cast.items():
            if cast_id not in agents and cast_id not in pois:
                raise ValueError(f"cast {role!r}: {cast_id!r} is neither an agent nor a place of the town")
        return self


def _unique(section: str, ids: list[str]) -> set[str]:
    seen = set(ids)
    if len(seen) != len(ids):
        repeated = sorted({i for i in ids if ids.count(i) > 1})
        raise ValueError(f"{section}: repeated id(s) {', '.join(repeated)}")
    return seen


def _read(path: Path) -> Town:
    return Town.model_validate(json.loads(path.read_text(encoding="utf-8")))


@cache
def demo_world(path: Path = DEMO_FILE) -> Town:
    """The parsed demo town (a broken file fails loudly at start-up: it ships with the code)."""
    return _read(path)


def bundled_names() -> list[str]:
    """The names of the bundled towns (`demo`, `town25`, ...)."""
    return sorted(path.stem for path in TOWNS_DIR.glob("*.json"))


def bundled_town(name: str) -> Town:
    """The bundled town called `name`.

    Raises:
        NotFound: no such town; the message and `details["available"]` list the bundled names.
    """
    names = bundled_names()
    if name not in names:
        raise NotFound(
            f"no bundled world {name!r}; bundled: {', '.join(names)}",
            details={"field": "name", "available": names},
        )
    return demo_world(TOWNS_DIR / f"{name}.json")


def bundled_world(name: str, world_id: str = DEFAULT_WORLD) -> dict[str, Any]:
    """The bundled town `name` as a Machi world document (for `POST /v1/world/import`, `import_world`)."""
    return world_document(bundled_town(name), world_id)


def world_document(town: Town, world_id: str = DEFAULT_WORLD) -> dict[str, Any]:
    """A town as a world document: its agents, places, and relationships as `people` rows."""
    agents = {agent.id: agent for agent in town.agents}
    people = [
        {
            "agent_id": rel.from_,
            "other_id": rel.to,
            "other_name": agents[rel.to].name,
            "language": agents[rel.from_].language,
            "summary": rel.summary,
            "notes": list(rel.notes),
        }
        for rel in town.relationships
    ]
    pois = [
        {"id": p.id, "name": p.name, "kind": p.kind, "description": p.description, **p.position.model_dump()}
        for p in town.pois
    ]
    return {
        "format": FORMAT,
        "version": VERSION,
        "world_id": world_id,
        "agents": [agent.model_dump() for agent in town.agents],
        "pois": pois,
        "people": people,
    }


def load_town(session: Session, world_id: str = DEFAULT_WORLD, town: Town | None = None) -> dict[str, int]:
    """Add a town's places, agents and relationships to `world_id` (rows with the same keys are replaced)."""
    town = town or demo_world()
    rows = parse_document(world_document(town, world_id))
    repo.merge_rows(session, world_id, [*rows["pois"], *rows["agents"]])
    repo.replace_people(session, world_id, [row for row in rows["people"] if isinstance(row, PersonMemory)])
    repo.mark(session, world_id, demo=True)
    return {"agents": len(town.agents), "pois": len(town.pois), "people": len(town.relationships)}


def needs_demo(session: Session, world_id: str = DEFAULT_WORLD) -> bool:
    """True for a world never set up before (no demo loaded, nothing imported) with no agent of its own."""
    return repo.never_set_up(session, world_id) and not world_repo.has_agents(session, world_id)


async def ensure_demo_world(app: FastAPI) -> None:
    """Start-up step: load the demo world once, when LOAD_DEMO_WORLD is on and the default world is empty."""
    if not app.state.settings.load_demo_world:
        return
    # Several processes may start at once on a new database: one loads the town, the others then find it.
    async with app.state.flights.hold("startup:demo-world"):
        with session_scope(app.state.engine) as session:
            if not needs_demo(session):
                return
            counts = load_town(session)
    log.info("demo world loaded: %(agents)d agents, %(pois)d points of interest", counts)
