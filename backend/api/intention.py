"""An agent's mind beyond the moment: its intentions and the whisper that changes them."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from backend.api.agents import AgentId
from backend.api.deps import IntentionsDep, MemoryDep, SessionDep, WorldDep
from backend.intention.repo import told_rows
from backend.intention.schemas import IntentionsPublic, ToldList, ToldPublic, WhisperRequest, WhisperResult
from backend.intention.service import public
from backend.memory.models import MAX_DAY

router = APIRouter(prefix="/v1", tags=["intention"])


@router.post("/agents/{agent_id}/whisper", response_model=WhisperResult)
async def whisper(
    agent_id: AgentId, body: WhisperRequest, world: WorldDep, memory: MemoryDep, intentions: IntentionsDep
) -> WhisperResult:
    """Put a thought in the agent's mind (the Generative Agents paper's inner voice): stored as its own
    high-importance memory (WHISPER_IMPORTANCE) and made the first line of its intentions, so the next turn
    and plan carry it and it tells each partner once. 404 unknown agent, 422 empty or over 160 characters."""
    agent = memory.require_agent(world, agent_id)
    memory_id, row = await intentions.whisper(
        world, agent, body.text, day=body.day, time_of_day=body.time_of_day
    )
    return WhisperResult(
        agent_id=agent_id, memory_id=memory_id, intentions=public(agent_id, row, body.day, agent.language)
    )


@router.get("/agents/{agent_id}/intentions", response_model=IntentionsPublic)
def get_intentions(
    agent_id: AgentId,
    world: WorldDep,
    memory: MemoryDep,
    intentions: IntentionsDep,
    day: Annotated[
        int | None, Query(ge=1, le=MAX_DAY, description="say relative days (明日) from this day")
    ] = None,
) -> IntentionsPublic:
    """What is on the agent's mind, newest first (empty when nothing is)."""
    agent = memory.require_agent(world, agent_id)
    return intentions.get(world, agent, day)


@router.get("/agents/{agent_id}/told", response_model=ToldList)
def get_told(agent_id: AgentId, world: WorldDep, memory: MemoryDep, session: SessionDep) -> ToldList:
    """Who the agent told what (its own intentions and news it passed on), and what it heard from whom."""
    memory.require_agent(world, agent_id)
    rows = told_rows(session, world, agent_id)
    told = [ToldPublic.model_validate(r, from_attributes=True) for r in rows if r.teller_id == agent_id]
    heard = [ToldPublic.model_validate(r, from_attributes=True) for r in rows if r.listener_id == agent_id]
    return ToldList(agent_id=agent_id, told=told, heard=heard)
