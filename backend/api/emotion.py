"""GET /v1/agents/{agent_id}/emotion and .../emotion/history."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query

from backend.api.deps import EmotionDep, SessionDep, WorldDep
from backend.emotion.schemas import EmotionHistory, EmotionState
from backend.ids import ID_RULE, Id
from backend.world.service import get_agent

router = APIRouter(prefix="/v1/agents", tags=["emotion"])

AgentId = Annotated[Id, Path(description=f"the agent's id: {ID_RULE}")]


@router.get("/{agent_id}/emotion", response_model=EmotionState)
def current_emotion(
    agent_id: AgentId,
    session: SessionDep,
    world: WorldDep,
    emotion: EmotionDep,
    day: int | None = Query(None, ge=1, description="game day to decay the state to (with time_of_day)"),
    time_of_day: float | None = Query(None, ge=0, lt=24),
) -> EmotionState:
    """The agent's emotion now: its newest evaluation drifted toward its baseline, or the baseline itself."""
    agent = get_agent(session, world, agent_id)
    if day is None and time_of_day is None and agent.state_day is not None:
        day, time_of_day = agent.state_day, agent.state_time_of_day
    if time_of_day is not None and day is None:
        day = 1
    return emotion.current(agent, day=day, time_of_day=time_of_day)


@router.get("/{agent_id}/emotion/history", response_model=EmotionHistory)
def emotion_history(
    agent_id: AgentId,
    session: SessionDep,
    world: WorldDep,
    emotion: EmotionDep,
    limit: int = Query(50, ge=1, le=500),
) -> EmotionHistory:
    """Evaluations, newest first."""
    agent = get_agent(session, world, agent_id)
    return EmotionHistory(agent_id=agent.id, history=emotion.history(agent, limit))
