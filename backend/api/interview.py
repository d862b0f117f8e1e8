"""POST /v1/agents/{agent_id}/interview: ask an agent a question; it answers from memory, changing nothing."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path

from backend.api.deps import InterviewDep, WorldDep
from backend.ids import ID_RULE, Id
from backend.interview.schemas import InterviewRequest, InterviewResult

router = APIRouter(prefix="/v1/agents", tags=["interview"])

AgentId = Annotated[Id, Path(description=f"the agent's id: {ID_RULE}")]


@router.post("/{agent_id}/interview", response_model=InterviewResult)
async def interview(
    agent_id: AgentId, body: InterviewRequest, service: InterviewDep, world: WorldDep
) -> InterviewResult:
    """The agent answers `question` in character from its memories (retrieved, not marked accessed) and what
    it knows of people the question names: one model call (purpose `interview`, in /v1/llm-calls). Nothing
    it remembers changes. A failed or late model (INTERVIEW_DEADLINE_S) gives an in-character "I don't
    remember" with `fallback: true`. 404 unknown agent, 422 empty or oversized question."""
    return await service.interview(world, agent_id, body)
