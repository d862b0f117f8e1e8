"""Agents, points of interest and Unity's state reports (the world's bookkeeping; SQL in repo.py).

What joins an agent with other concepts' state (its plan item and emotion in the detail, its mind removed
with it, an arrival remembered) is composed by the caller above world (api/agents.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from backend.errors import NotFound
from backend.events import AGENT_STATE, AgentStatePayload, EventBus
from backend.gametime import utcnow
from backend.world import repo
from backend.world.models import Agent, AgentStateEvent, PointOfInterest, WorldMeta
from backend.world.schemas import (
    DEFAULT_GESTURES,
    AgentDetail,
    AgentPublic,
    AgentUpsert,
    PoiPublic,
    PoiUpsert,
    Position,
    StateAccepted,
    StateReport,
)

if TYPE_CHECKING:
    from backend.storage.db import Engine, Session

#: State events kept per agent; older ones are pruned as new reports arrive.
STATE_HISTORY = 50
#: Routine arrivals are minor events; a fixed rating avoids a model call per footstep.
ARRIVAL_IMPORTANCE = 2


def get_agent(session: Session, world_id: str, agent_id: str) -> Agent:
    """The agent, or NotFound naming it (or the world, when that is what is unknown)."""
    agent = repo.agent(session, world_id, agent_id)
    if agent is None:
        raise agent_not_found(session, world_id, agent_id, {"agent_id": agent_id})
    return agent


def agent_not_found(session: Session, world_id: str, agent_id: str, details: dict[str, Any]) -> NotFound:
    """The 404 of an agent lookup that failed. In a world with nothing in it (most often a world name
    mistyped in X-Machi-World or ?world=) it says that the world is unknown and names the worlds there are,
    rather than blaming the agent id."""
    census = repo.world_census(session)
    if world_id in census or not census:
        return NotFound(f"no agent {agent_id!r} in world {world_id!r}", details=details)
    known = ", ".join(repr(name) for name in census)
    return NotFound(
        f"world {world_id!r} is unknown (it has no agents or places); the worlds here: {known}. Name one "
        f"(the X-Machi-World header, or ?world=), or create {agent_id!r} in this world with "
        f"PUT /v1/agents/{agent_id}",
        details={**details, "world": world_id, "known_worlds": list(census)},
    )


def agent_not_found_in(engine: Engine, world_id: str, agent_id: str, details: dict[str, Any]) -> NotFound:
    """`agent_not_found` for a caller holding an engine, not a session."""
    with repo.session(engine) as session:
        return agent_not_found(session, world_id, agent_id, details)


def get_poi(session: Session, world_id: str, poi_id: str) -> PointOfInterest:
    poi = repo.poi(session, world_id, poi_id)
    if poi is None:
        raise NotFound(f"no point of interest {poi_id!r} in world {world_id!r}", details={"poi_id": poi_id})
    return poi


def list_agents(session: Session, world_id: str) -> list[Agent]:
    return repo.agents(session, world_id)


def list_pois(session: Session, world_id: str) -> list[PointOfInterest]:
    return repo.pois(session, world_id)


def upsert_agent(session: Session, world_id: str, agent_id: str, body: AgentUpsert) -> tuple[Agent, bool]:
    """Create or replace an agent's persona (its reported state is kept). Returns (agent, created)."""
    if body.home_poi is not None:
        get_poi(session, world_id, body.home_poi)
    agent = repo.agent(session, world_id, agent_id)
    created = agent is None
    if agent is None:
        agent = Agent(world_id=world_id, id=agent_id, name=body.name)
    for key, value in body.model_dump().items():
        setattr(agent, key, value)
    agent.updated_at = utcnow()
    repo.touch_facts(session, world_id)  # its name and id are world facts (world/facts.py)
    repo.save(session, agent)
    return agent, created


def delete_agent(session: Session, agent: Agent) -> int:
    """Remove the agent and its state history, committing the caller's transaction: what other concepts keep
    of the agent is deleted in it first (api/agents.py), so all of it goes at once or none does. Returns how
    many state events went."""
    removed = repo.forget_state_events(session, agent.world_id, agent.id)
    repo.touch_facts(session, agent.world_id)
    repo.remove(session, agent)
    return removed


def upsert_poi(session: Session, world_id: str, poi_id: str, body: PoiUpsert) -> tuple[PointOfInterest, bool]:
    poi = repo.poi(session, world_id, poi_id)
    created = poi is None
    if poi is None:
        poi = PointOfInterest(world_id=world_id, id=poi_id, name=body.name)
    poi.name, poi.kind, poi.description = body.name, body.kind, body.description
    poi.x, poi.y, poi.z = body.position.x, body.position.y, body.position.z
    repo.touch_facts(session, world_id)
    repo.save(session, poi)
    return poi, created


def delete_poi(session: Session, world_id: str, poi_id: str) -> None:
    poi = get_poi(session, world_id, poi_id)
    repo.touch_facts(session, world_id)
    repo.remove(session, poi)


def poi_public(poi: PointOfInterest) -> PoiPublic:
    return PoiPublic(
        id=poi.id,
        name=poi.name,
        kind=poi.kind,
        description=poi.description,
        position=Position(x=poi.x, y=poi.y, z=poi.z),
    )


def agent_public(agent: Agent) -> AgentPublic:
    data = agent.model_dump()
    data["position"] = _position(agent.position)
    return AgentPublic.model_validate(data)


def agent_detail(agent: Agent) -> AgentDetail:
    """Persona and last reported state; the caller adds the plan item and the emotion (api/agents.py)."""
    return AgentDetail.model_validate(agent_public(agent).model_dump())


def _position(raw: dict[str, Any] | None) -> Position | None:
    return Position.model_validate(raw) if raw else None


def report_state(
    session: Session, world_id: str, agent_id: str, report: StateReport, *, events: EventBus | None = None
) -> tuple[Agent, StateAccepted]:
    """Store Unity's report as the latest state and keep a short history; publish `agent.state`.

    Returns the agent and the answer; `arrived` says the agent reached a new place (the caller remembers
    it: `arrival_text`, ARRIVAL_IMPORTANCE), `observation_id` is left for the caller to fill.
    """
    agent = get_agent(session, world_id, agent_id)
    previous = agent.location_name
    position = report.position.model_dump() if report.position else None
    agent.state, agent.state_day, agent.state_time_of_day = report.state, report.day, report.time_of_day
    if report.location_name is not None:
        agent.location_name = report.location_name
    if position is not None:
        agent.position = position
    agent.updated_at = utcnow()
    event = AgentStateEvent(world_id=world_id, agent_id=agent_id, state=report.state,
                            location_name=report.location_name, position=position, day=report.day,
                            time_of_day=report.time_of_day)  # fmt: skip
    repo.add_state_event(session, agent, event)
    repo.prune_state_events(session, world_id, agent_id, STATE_HISTORY)
    if events is not None:
        payload = AgentStatePayload(agent_id=agent_id, state=report.state, location_name=agent.location_name,
                                    position=position, day=report.day, time_of_day=report.time_of_day)  # fmt: skip
        events.publish(AGENT_STATE, world_id, payload)
    arrived = bool(report.location_name) and report.location_name != previous
    accepted = StateAccepted(
        agent_id=agent_id, state=report.state, location_name=agent.location_name, arrived=arrived
    )
    return agent, accepted


def arrival_text(agent: Agent, place: str) -> str:
    """An arrival as the agent's observation, in its language."""
    if agent.language == "en":
        return f"{agent.name} arrived at {place}."
    return f"{agent.name}は{place}に着いた。"


def state_history(
    session: Session, world_id: str, agent_id: str, limit: int = STATE_HISTORY
) -> list[AgentStateEvent]:
    get_agent(session, world_id, agent_id)
    return repo.state_events(session, world_id, agent_id, limit)


def gestures(declared: list[str] | None) -> list[str]:
    """A world's gestures: as declared (`PUT /v1/world/gestures`), else DEFAULT_GESTURES."""
    return list(DEFAULT_GESTURES) if declared is None else list(declared)


def declare_gestures(session: Session, world_id: str, names: list[str] | None) -> list[str]:
    """Replace the world's gestures (None: back to the default) and commit. Returns the gestures now in use."""
    meta = repo.meta(session, world_id) or WorldMeta(world_id=world_id)
    meta.gestures = None if names is None else list(names)
    repo.touch_facts(session, world_id)
    repo.save(session, meta)
    return gestures(meta.gestures)
