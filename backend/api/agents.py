"""Agents, points of interest and Unity's state reports: `/v1/agents`, `/v1/pois`."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Response

from backend.api.deps import ConversationDep, EventsDep, MemoryDep, SessionDep, WorldDep
from backend.conversation import jobs as conversation_jobs
from backend.emotion import repo as emotion_repo
from backend.errors import InvalidInput
from backend.ids import ID_RULE, Id
from backend.intention import repo as intention_repo
from backend.intention import service as intention
from backend.memory import jobs as memory_jobs
from backend.memory.models import MemoryCreate
from backend.planning import repo as plan_repo
from backend.planning.service import current_item_of_stored_plan
from backend.storage.db import Session
from backend.world import service
from backend.world.models import Agent
from backend.world.schemas import (
    AgentDetail,
    AgentPublic,
    AgentUpsert,
    EmotionNow,
    PoiPublic,
    PoiUpsert,
    StateAccepted,
    StateReport,
)

router = APIRouter(prefix="/v1", tags=["world"])

AgentId = Annotated[Id, Path(description=f"the agent's id: {ID_RULE}")]
PoiId = Annotated[Id, Path(description=f"the point of interest's id: {ID_RULE}")]


@router.get("/agents", response_model=list[AgentPublic])
def list_agents(session: SessionDep, world: WorldDep) -> list[AgentPublic]:
    return [service.agent_public(agent) for agent in service.list_agents(session, world)]


@router.put("/agents/{agent_id}", response_model=AgentDetail)
def put_agent(
    agent_id: AgentId, body: AgentUpsert, session: SessionDep, world: WorldDep, response: Response
) -> AgentDetail:
    """Create an agent or replace its persona (201 when created). Works while the server runs."""
    agent, created = service.upsert_agent(session, world, agent_id, body)
    response.status_code = 201 if created else 200
    return _detail(session, agent)


@router.get("/agents/{agent_id}", response_model=AgentDetail)
def get_agent(agent_id: AgentId, session: SessionDep, world: WorldDep) -> AgentDetail:
    """Persona, last reported state, current plan item, newest emotion and intentions."""
    agent = service.get_agent(session, world, agent_id)
    detail = _detail(session, agent)
    mind = intention_repo.read(session, world, agent_id)
    detail.intentions = intention.public(agent_id, mind, agent.state_day, agent.language).text
    return detail


@router.delete("/agents/{agent_id}")
def delete_agent(
    agent_id: AgentId, session: SessionDep, world: WorldDep, memory: MemoryDep
) -> dict[str, Any]:
    """Remove the agent with its memories, plans, emotions, state history, intentions and pending jobs (an agent
    re-created under the same id starts with an empty mind)."""
    agent = service.get_agent(session, world, agent_id)
    removed = {"memories": memory.delete_agent(world, agent_id)}
    # One transaction: the jobs go with the agent (one still pending ran after an agent was re-created under
    # the same id and gave it its predecessor's observations), and so do its plans and emotions.
    removed["jobs"] = conversation_jobs.forget_agent(session, world, agent_id) + memory_jobs.forget_agent(
        session, world, agent_id
    )
    removed["plans"] = plan_repo.forget_agent(session, world, agent_id)
    removed["emotions"] = emotion_repo.forget_agent(session, world, agent_id)
    removed["state_events"] = service.delete_agent(session, agent)
    intention_repo.forget_agent(session, world, agent_id)
    return {"deleted": agent_id, "removed": removed}


@router.post("/agents/{agent_id}/state", response_model=StateAccepted)
async def post_state(
    agent_id: AgentId,
    body: StateReport,
    session: SessionDep,
    world: WorldDep,
    memory: MemoryDep,
    events: EventsDep,
    conversation: ConversationDep,
) -> StateAccepted:
    """Unity reports what the agent is doing; arriving somewhere new becomes an observation memory. With
    `talking` and a `partner_id`, a model that reads prompts ahead starts on this agent's opening line."""
    if body.partner_id == agent_id:
        raise InvalidInput(
            "partner_id names the reporting agent itself: send the agent it has just met",
            details={"field": "partner_id", "value": agent_id},
        )
    if body.partner_id is not None:  # an unknown partner is a 404 before anything is stored
        service.get_agent(session, world, body.partner_id)
    agent, accepted = service.report_state(session, world, agent_id, body, events=events)
    if accepted.arrived and body.location_name:
        accepted.observation_id = (await memory.add(world, agent_id, _arrival(agent, body))).id
    if body.partner_id is not None:
        conversation.read_ahead_opening(world, agent_id, body)
    return accepted


@router.get("/agents/{agent_id}/states")
def get_states(
    agent_id: AgentId,
    session: SessionDep,
    world: WorldDep,
    limit: Annotated[int, Query(ge=1, le=service.STATE_HISTORY)] = 20,
) -> list[dict[str, Any]]:
    """The agent's recent state reports, newest first."""
    events = service.state_history(session, world, agent_id, limit)
    return [event.model_dump(mode="json", exclude={"world_id"}) for event in events]


@router.get("/pois", response_model=list[PoiPublic])
def list_pois(session: SessionDep, world: WorldDep) -> list[PoiPublic]:
    return [service.poi_public(poi) for poi in service.list_pois(session, world)]


@router.put("/pois/{poi_id}", response_model=PoiPublic)
def put_poi(
    poi_id: PoiId, body: PoiUpsert, session: SessionDep, world: WorldDep, response: Response
) -> PoiPublic:
    poi, created = service.upsert_poi(session, world, poi_id, body)
    response.status_code = 201 if created else 200
    return service.poi_public(poi)


@router.get("/pois/{poi_id}", response_model=PoiPublic)
def get_poi(poi_id: PoiId, session: SessionDep, world: WorldDep) -> PoiPublic:
    return service.poi_public(service.get_poi(session, world, poi_id))


@router.delete("/pois/{poi_id}")
def delete_poi(poi_id: PoiId, session: SessionDep, world: WorldDep) -> dict[str, str]:
    service.delete_poi(session, world, poi_id)
    return {"deleted": poi_id}


def _detail(session: Session, agent: Agent) -> AgentDetail:
    """Persona, last state, the plan item for the last reported time, and the newest emotion as evaluated
    (its own day and time; `GET .../emotion` gives it decayed to a moment)."""
    detail = service.agent_detail(agent)
    if agent.state_day is not None and agent.state_time_of_day is not None:
        detail.current_plan_item = current_item_of_stored_plan(
            session, agent.world_id, agent.id, agent.state_day, agent.state_time_of_day
        )
    record = emotion_repo.newest(session, agent.world_id, agent.id)
    if record is not None:
        detail.emotion = EmotionNow(label=record.label, values=record.values, cause=record.cause,
                                    day=record.day, time_of_day=record.time_of_day)  # fmt: skip
    return detail


def _arrival(agent: Agent, report: StateReport) -> MemoryCreate:
    """Arriving somewhere new, as the agent's observation (a fixed minor importance: no model call)."""
    place = report.location_name or ""
    return MemoryCreate(
        type="observation",
        content=service.arrival_text(agent, place),
        importance=service.ARRIVAL_IMPORTANCE,
        location_name=place,
        tags=["arrival", place],
        day=report.day,
        time_of_day=report.time_of_day,
    )
