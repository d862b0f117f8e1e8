"""Agents, points of interest and Unity's state reports (the world's bookkeeping)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import delete
from sqlmodel import Session, col, select

from backend.conversation import jobs as conversation_jobs
from backend.emotion.models import EmotionRecord
from backend.errors import NotFound
from backend.events import AGENT_STATE, AgentStatePayload, EventBus
from backend.gametime import utcnow
from backend.memory import jobs as memory_jobs
from backend.planning.models import Plan
from backend.world.models import Agent, AgentStateEvent, PointOfInterest
from backend.world.schemas import (
    AgentDetail,
    AgentPublic,
    AgentUpsert,
    EmotionNow,
    PoiPublic,
    PoiUpsert,
    Position,
    StateAccepted,
    StateReport,
)

if TYPE_CHECKING:
    from backend.memory.service import MemoryService

#: State events kept per agent; older ones are pruned as new reports arrive.
STATE_HISTORY = 50
#: Routine arrivals are minor events; a fixed rating avoids a model call per footstep.
ARRIVAL_IMPORTANCE = 2


def get_agent(session: Session, world_id: str, agent_id: str) -> Agent:
    """The agent, or NotFound naming it."""
    agent = session.get(Agent, (world_id, agent_id))
    if agent is None:
        raise NotFound(f"no agent {agent_id!r} in world {world_id!r}", details={"agent_id": agent_id})
    return agent


def get_poi(session: Session, world_id: str, poi_id: str) -> PointOfInterest:
    poi = session.get(PointOfInterest, (world_id, poi_id))
    if poi is None:
        raise NotFound(f"no point of interest {poi_id!r} in world {world_id!r}", details={"poi_id": poi_id})
    return poi


def list_agents(session: Session, world_id: str) -> list[Agent]:
    return list(session.exec(select(Agent).where(Agent.world_id == world_id).order_by(col(Agent.id))))


def list_pois(session: Session, world_id: str) -> list[PointOfInterest]:
    query = select(PointOfInterest).where(PointOfInterest.world_id == world_id)
    return list(session.exec(query.order_by(col(PointOfInterest.id))))


def upsert_agent(session: Session, world_id: str, agent_id: str, body: AgentUpsert) -> tuple[Agent, bool]:
    """Create or replace an agent's persona (its reported state is kept). Returns (agent, created)."""
    if body.home_poi is not None:
        get_poi(session, world_id, body.home_poi)
    agent = session.get(Agent, (world_id, agent_id))
    created = agent is None
    if agent is None:
        agent = Agent(world_id=world_id, id=agent_id, name=body.name)
    for key, value in body.model_dump().items():
        setattr(agent, key, value)
    agent.updated_at = utcnow()
    session.add(agent)
    session.commit()
    session.refresh(agent)
    return agent, created


def delete_agent(session: Session, memory: MemoryService, world_id: str, agent_id: str) -> dict[str, int]:
    """Remove an agent with its memories, plans, emotion history, state history and pending jobs.

    The jobs go in the transaction that removes the agent: one still pending (a busy runner, a restart) ran
    after an agent was re-created under the same id and gave it its predecessor's observations.
    """
    agent = get_agent(session, world_id, agent_id)
    removed = {"memories": memory.delete_agent(world_id, agent_id)}
    removed["jobs"] = conversation_jobs.forget_agent(session, world_id, agent_id) + memory_jobs.forget_agent(
        session, world_id, agent_id
    )
    for name, table in (("plans", Plan), ("emotions", EmotionRecord), ("state_events", AgentStateEvent)):
        query = delete(table).where(
            col(table.world_id) == world_id,
            col(table.agent_id) == agent_id,
        )
        removed[name] = session.execute(query).rowcount  # type: ignore[attr-defined]
    session.delete(agent)
    session.commit()
    return removed


def upsert_poi(session: Session, world_id: str, poi_id: str, body: PoiUpsert) -> tuple[PointOfInterest, bool]:
    poi = session.get(PointOfInterest, (world_id, poi_id))
    created = poi is None
    if poi is None:
        poi = PointOfInterest(world_id=world_id, id=poi_id, name=body.name)
    poi.name, poi.kind, poi.description = body.name, body.kind, body.description
    poi.x, poi.y, poi.z = body.position.x, body.position.y, body.position.z
    session.add(poi)
    session.commit()
    session.refresh(poi)
    return poi, created


def delete_poi(session: Session, world_id: str, poi_id: str) -> None:
    session.delete(get_poi(session, world_id, poi_id))
    session.commit()


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


def agent_detail(session: Session, agent: Agent) -> AgentDetail:
    """Persona, last state, the plan item for the last reported time, and the newest emotion."""
    from backend.planning.service import current_item_of_stored_plan

    detail = AgentDetail.model_validate(agent_public(agent).model_dump())
    if agent.state_day is not None and agent.state_time_of_day is not None:
        detail.current_plan_item = current_item_of_stored_plan(
            session, agent.world_id, agent.id, agent.state_day, agent.state_time_of_day
        )
    emotion = session.exec(
        select(EmotionRecord)
        .where(EmotionRecord.world_id == agent.world_id, EmotionRecord.agent_id == agent.id)
        .order_by(col(EmotionRecord.created_at).desc(), col(EmotionRecord.id).desc())
        .limit(1)
    ).first()
    if emotion is not None:
        detail.emotion = EmotionNow(
            label=emotion.label,
            values=emotion.values,
            cause=emotion.cause,
            day=emotion.day,
            time_of_day=emotion.time_of_day,
        )
    return detail


def _position(raw: dict[str, Any] | None) -> Position | None:
    return Position.model_validate(raw) if raw else None


async def report_state(
    session: Session,
    memory: MemoryService,
    world_id: str,
    agent_id: str,
    report: StateReport,
    *,
    events: EventBus | None = None,
) -> StateAccepted:
    """Store Unity's report as the latest state, keep a short history, and note arrivals as memories."""
    from backend.memory.service import MemoryCreate

    agent = get_agent(session, world_id, agent_id)
    previous = agent.location_name
    position = report.position.model_dump() if report.position else None
    agent.state, agent.state_day, agent.state_time_of_day = report.state, report.day, report.time_of_day
    if report.location_name is not None:
        agent.location_name = report.location_name
    if position is not None:
        agent.position = position
    agent.updated_at = utcnow()
    session.add(agent)
    session.add(
        AgentStateEvent(
            world_id=world_id,
            agent_id=agent_id,
            state=report.state,
            location_name=report.location_name,
            position=position,
            day=report.day,
            time_of_day=report.time_of_day,
        )
    )
    session.commit()
    _prune_history(session, world_id, agent_id)
    if events is not None:
        events.publish(
            AGENT_STATE,
            world_id,
            AgentStatePayload(
                agent_id=agent_id,
                state=report.state,
                location_name=agent.location_name,
                position=position,
                day=report.day,
                time_of_day=report.time_of_day,
            ),
        )
    arrived = bool(report.location_name) and report.location_name != previous
    observation_id = None
    if arrived:
        assert report.location_name is not None
        content = _arrival_text(agent, report.location_name)
        item = MemoryCreate(
            type="observation",
            content=content,
            importance=ARRIVAL_IMPORTANCE,
            location_name=report.location_name,
            tags=["arrival", report.location_name],
            day=report.day,
            time_of_day=report.time_of_day,
        )
        observation_id = (await memory.add(world_id, agent_id, item)).id
    return StateAccepted(
        agent_id=agent_id,
        state=report.state,
        location_name=agent.location_name,
        arrived=arrived,
        observation_id=observation_id,
    )


def _arrival_text(agent: Agent, place: str) -> str:
    if agent.language == "en":
        return f"{agent.name} arrived at {place}."
    return f"{agent.name}は{place}に着いた。"


def _prune_history(session: Session, world_id: str, agent_id: str) -> None:
    keep = session.exec(
        select(AgentStateEvent.id)
        .where(AgentStateEvent.world_id == world_id, AgentStateEvent.agent_id == agent_id)
        .order_by(col(AgentStateEvent.id).desc())
        .limit(STATE_HISTORY)
    ).all()
    if len(keep) < STATE_HISTORY:
        return
    session.execute(
        delete(AgentStateEvent).where(
            col(AgentStateEvent.world_id) == world_id,
            col(AgentStateEvent.agent_id) == agent_id,
            col(AgentStateEvent.id) < min(k for k in keep if k is not None),
        )
    )
    session.commit()


def state_history(
    session: Session, world_id: str, agent_id: str, limit: int = STATE_HISTORY
) -> list[AgentStateEvent]:
    get_agent(session, world_id, agent_id)
    query = (
        select(AgentStateEvent)
        .where(AgentStateEvent.world_id == world_id, AgentStateEvent.agent_id == agent_id)
        .order_by(col(AgentStateEvent.id).desc())
        .limit(limit)
    )
    return list(session.exec(query))
