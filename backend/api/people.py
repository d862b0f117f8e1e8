"""GET /v1/agents/{agent_id}/people and .../people/{other_id}: what an agent remembers of others."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path

from backend.api.deps import MemoryDep, SessionDep, WorldDep
from backend.errors import NotFound
from backend.ids import ID_RULE, Id, ParticipantId
from backend.memory.models import PersonList, PersonMemory, PersonPublic
from backend.world.service import get_agent

router = APIRouter(prefix="/v1/agents/{agent_id}/people", tags=["memory"])
AgentId = Annotated[Id, Path(description=f"the agent's id: {ID_RULE}")]
OtherId = Annotated[
    ParticipantId, Path(description=f"the other agent's id ({ID_RULE}), or a player's (`player:` and an id)")
]


def public(row: PersonMemory) -> PersonPublic:
    return PersonPublic.model_validate(row, from_attributes=True)


@router.get("", response_model=PersonList)
def list_people(agent_id: AgentId, session: SessionDep, world: WorldDep, memory: MemoryDep) -> PersonList:
    """Everyone the agent has talked with, most recently met first."""
    agent = get_agent(session, world, agent_id)
    return PersonList(
        agent_id=agent.id, people=[public(r) for r in memory.people.everyone((world, agent.id))]
    )


@router.get("/{other_id}", response_model=PersonPublic)
def get_person(
    agent_id: AgentId, other_id: OtherId, session: SessionDep, world: WorldDep, memory: MemoryDep
) -> PersonPublic:
    """What the agent knows of one agent or player. 404 when the agent has never talked with them."""
    agent = get_agent(session, world, agent_id)
    row = memory.people.get((world, agent.id), other_id)
    if row is None:
        raise NotFound(f"agent {agent_id!r} has no memory of {other_id!r}", details={"other_id": other_id})
    return public(row)
