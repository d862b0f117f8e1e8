"""GET /v1/llm-calls: the trace of every model call, newest first."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from fastapi import APIRouter, Query
from pydantic import BaseModel
from sqlmodel import col, select

from backend.api.deps import SessionDep, WorldDep
from backend.errors import NotFound
from backend.llm.models import LLMCall

router = APIRouter(prefix="/v1/llm-calls", tags=["llm"])


class LLMCallPublic(BaseModel):
    id: int
    world_id: str
    purpose: str
    stage: str | None
    round: int | None
    agent_id: str | None
    session_id: str | None
    council_id: str | None
    provider: str
    model: str
    schema_name: str | None
    ok: bool
    error: str | None
    latency_ms: float
    prompt_tokens: int | None
    completion_tokens: int | None
    streamed: bool
    created_at: datetime


class LLMCallDetail(LLMCallPublic):
    messages: list[dict[str, Any]]
    raw_reply: str | None


class LLMCallList(BaseModel):
    calls: list[LLMCallPublic]


@router.get("", response_model=LLMCallList)
def list_calls(
    session: SessionDep,
    world: WorldDep,
    agent_id: str | None = Query(None, max_length=64),
    purpose: str | None = Query(None, max_length=32),
    session_id: str | None = Query(None, max_length=128),
    council_id: str | None = Query(None, max_length=64),
    errors_only: bool = False,
    limit: int = Query(50, ge=1, le=500),
    offset: int = Query(0, ge=0),
) -> LLMCallList:
    query = select(LLMCall).where(LLMCall.world_id == world)
    for column, value in (
        (LLMCall.agent_id, agent_id),
        (LLMCall.purpose, purpose),
        (LLMCall.session_id, session_id),
        (LLMCall.council_id, council_id),
    ):
        if value is not None:
            query = query.where(column == value)
    if errors_only:
        query = query.where(LLMCall.ok == False)  # noqa: E712 - SQL expression
    rows = session.exec(query.order_by(col(LLMCall.id).desc()).offset(offset).limit(limit)).all()
    return LLMCallList(calls=[LLMCallPublic.model_validate(r, from_attributes=True) for r in rows])


@router.get("/{call_id}", response_model=LLMCallDetail)
def get_call(call_id: int, session: SessionDep, world: WorldDep) -> LLMCallDetail:
    row = session.get(LLMCall, call_id)
    if row is None or row.world_id != world:
        raise NotFound(f"no LLM call {call_id} in world {world!r}")
    return LLMCallDetail.model_validate(row, from_attributes=True)
