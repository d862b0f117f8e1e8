"""Conversation API for Unity: turns (plain and streamed), end reports, and transcripts."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import JSONResponse, StreamingResponse

from backend.api.deps import SessionDep, WorldDep
from backend.conversation import store
from backend.conversation.models import Conversation
from backend.conversation.schemas import (
    ConversationDetail,
    ConversationList,
    ConversationSummary,
    EndRequest,
    EndResult,
    Participant,
    TurnPublic,
    TurnRequest,
    TurnResult,
)
from backend.conversation.service import ConversationService
from backend.conversation.stream import turn_events
from backend.ids import StoredSessionId

router = APIRouter(tags=["conversation"])

#: Looked up, not chosen: any stored session id reads back (see backend/ids.py).
SessionPath = Annotated[StoredSessionId, Path(description="the conversation's session_id")]


def get_service(request: Request) -> ConversationService:
    """The app's one ConversationService (it tracks background work per session), made on first use."""
    state = request.app.state
    service: ConversationService | None = getattr(state, "conversation", None)
    if service is None:
        service = ConversationService(
            engine=state.engine,
            llm=state.llm,
            memory=state.memory,
            tasks=state.tasks,
            settings=state.settings,
            emotion=getattr(state, "emotion", None),
            events=getattr(state, "events", None),
            jobs=getattr(state, "jobs", None),
        )
        state.conversation = service
    return service


@router.post("/v1/conversation/turn", response_model=TurnResult)
async def take_turn(body: TurnRequest, request: Request, world: WorldDep) -> JSONResponse:
    """One line from `agent_id` to `target_id`. A retry (same session_id and history length) gets the
    stored reply, byte for byte. 404 unknown agent/target, 409 ended conversation, 422 bad fields."""
    reply = await get_service(request).take_turn(world, body)
    return JSONResponse(reply)


@router.post("/v1/conversation/turn/stream")
async def stream_turn(body: TurnRequest, request: Request, world: WorldDep) -> StreamingResponse:
    """The same turn as server-sent events: `delta` {text} while the model writes, then `reply` (the
    full reply) or `error`. Bad input is refused with the plain turn's status codes before streaming."""
    service = get_service(request)
    prepared = await service.prepare(world, body)
    return StreamingResponse(
        turn_events(service, prepared),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


@router.post("/v1/conversation/end", response_model=EndResult)
async def end_conversation(body: EndRequest, request: Request, world: WorldDep) -> EndResult:
    """Unity ended the conversation (distance, interrupted...). Idempotent; reflections happen once."""
    return await get_service(request).end(world, body)


def _summary(conv: Conversation, names: dict[str, str]) -> dict[str, Any]:
    return {
        "session_id": conv.session_id,
        "participants": [Participant(id=a, name=names.get(a)) for a in (conv.agent_a, conv.agent_b)],
        "location_name": conv.location_name,
        "start_day": conv.start_day,
        "start_time_of_day": conv.start_time_of_day,
        "end_day": conv.end_day,
        "end_time_of_day": conv.end_time_of_day,
        "ended": conv.ended,
        "end_reason": conv.end_reason,
        "turn_count": conv.turn_count,
        "language": conv.language,
        "updated_at": conv.updated_at,
    }


@router.get("/v1/conversations", response_model=ConversationList)
def list_conversations(
    session: SessionDep,
    world: WorldDep,
    agent_id: str | None = Query(None, max_length=64),
    limit: int = Query(50, ge=1, le=500),
) -> ConversationList:
    """Conversations, most recently active first; with `agent_id`, only those it took part in."""
    rows = store.list_conversations(session, world, agent_id, limit)
    names = store.names(session, world, {a for c in rows for a in (c.agent_a, c.agent_b)})
    return ConversationList(conversations=[ConversationSummary(**_summary(c, names)) for c in rows])


@router.get("/v1/conversations/{session_id}", response_model=ConversationDetail)
def get_conversation(session_id: SessionPath, session: SessionDep, world: WorldDep) -> ConversationDetail:
    """One conversation with every turn (emotion and fallback flag included). 404 if unknown."""
    conv = store.get_conversation_row(session, world, session_id)
    names = store.names(session, world, {conv.agent_a, conv.agent_b})
    turns = [
        TurnPublic.model_validate(t, from_attributes=True)
        for t in store.conversation_turns(session, world, session_id)
    ]
    return ConversationDetail(
        **_summary(conv, names), turns=turns, transcript=list(conv.transcript or []), reflected=conv.reflected
    )
