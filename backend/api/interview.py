"""POST /v1/agents/{agent_id}/interview: ask an agent a question; it answers from memory, changing nothing."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Request

from backend.api.deps import WorldDep
from backend.ids import ID_RULE, Id
from backend.interview.schemas import InterviewRequest, InterviewResult
from backend.interview.service import InterviewService

router = APIRouter(prefix="/v1/agents", tags=["interview"])

AgentId = Annotated[Id, Path(description=f"the agent's id: {ID_RULE}")]


def get_service(request: Request) -> InterviewService:
    """The app's InterviewService, made on first use."""
    state = request.app.state
    service: InterviewService | None = getattr(state, "interview", None)
    if service is None:
        service = InterviewService(
            engine=state.engine, llm=state.llm, memory=state.memory, settings=state.settings
        )
        state.interview = service
    return service


@router.post("/{agent_id}/interview", response_model=InterviewResult)
async def interview(
    agent_id: AgentId, body: InterviewRequest, request: Request, world: WorldDep
) -> InterviewResult:
    """The agent answers `question` in character from its memories (retrieved, not marked accessed) and what
    it knows of people the question names: one model call (purpose `interview`, in /v1/llm-calls). Nothing
    it remembers changes. A failed or late model (INTERVIEW_DEADLINE_S) gives an in-character "I don't
    remember" with `fallback: true`. 404 unknown agent, 422 empty or oversized question."""
    return await get_service(request).interview(world, agent_id, body)
