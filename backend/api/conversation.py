"""Conversation API for Unity: turns (plain and streamed), end reports, and transcripts."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query
from fastapi.responses import JSONResponse, StreamingResponse

from backend.api.deps import AgentsDep, ConversationDep, SessionDep, VisitorsDep, WorldDep
from backend.api.errors import error_body
from backend.conversation import repo
from backend.conversation.models import Conversation
from backend.conversation.people import read_people
from backend.conversation.schemas import (
    ConversationDetail,
    ConversationList,
    ConversationSummary,
    EndRequest,
    EndResult,
    Participant,
    PlayerTurnRequest,
    PlayerTurnResult,
    TurnPublic,
    TurnRequest,
    TurnResult,
)
from backend.conversation.stream import Event, turn_events
from backend.conversation.visitor import VisitorLine, with_line
from backend.errors import MachiError
from backend.ids import StoredSessionId, is_player
from backend.world.cache import AgentCache

log = logging.getLogger(__name__)

router = APIRouter(tags=["conversation"])

#: Looked up, not chosen: any stored session id reads back (see backend/ids.py).
SessionPath = Annotated[StoredSessionId, Path(description="the conversation's session_id")]


@router.post("/v1/conversation/turn", response_model=TurnResult)
async def take_turn(body: TurnRequest, service: ConversationDep, world: WorldDep) -> JSONResponse:
    """One line from `agent_id` to `target_id`. A retry (same session_id and history length) gets the
    stored reply, byte for byte. 404 unknown agent/target, 409 ended conversation, 422 bad fields."""
    reply = await service.take_turn(world, body)
    return JSONResponse(reply)


@router.post("/v1/conversation/turn/stream")
async def stream_turn(body: TurnRequest, service: ConversationDep, world: WorldDep) -> StreamingResponse:
    """The same turn as server-sent events: `delta` {text} while the model writes, then `reply` (the
    full reply) or `error`. Bad input is refused with the plain turn's status codes before streaming."""
    prepared = await service.prepare(world, body)
    return StreamingResponse(
        _sse(turn_events(service, prepared), body.session_id),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


@router.post("/v1/conversation/player-turn", response_model=PlayerTurnResult)
async def player_turn(body: PlayerTurnRequest, visitors: VisitorsDep, world: WorldDep) -> JSONResponse:
    """A visitor's line to `agent_id`, and the agent's reply (streamed: /player-turn/stream). The line is
    checked (PLAYER_MAX_CHARS: 422; the rate limits: 429 naming the limit, with Retry-After; moderation: a
    held-back line gets an in-character deflection), stored at index len(history), and answered as a turn
    at the next index. A retry with the same history gets the stored reply."""
    return JSONResponse(await visitors.take(world, body))


@router.post("/v1/conversation/player-turn/stream")
async def stream_player_turn(
    body: PlayerTurnRequest, visitors: VisitorsDep, world: WorldDep
) -> StreamingResponse:
    """The visitor's turn with the agent's reply as server-sent events (as /turn/stream); the `reply`
    event carries the PlayerTurnResult."""
    prepared, said = await visitors.prepare(world, body)
    events = _with_line(turn_events(visitors.service, prepared), said)
    return StreamingResponse(
        _sse(events, body.session_id),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


async def _with_line(events: AsyncIterator[Event], said: VisitorLine) -> AsyncIterator[Event]:
    async for event, data in events:
        yield event, with_line(data, said) if event == "reply" else data


@router.post("/v1/conversation/end", response_model=EndResult)
async def end_conversation(body: EndRequest, service: ConversationDep, world: WorldDep) -> EndResult:
    """Unity ended the conversation (distance, interrupted...). Idempotent; reflections happen once."""
    return await service.end(world, body)


def sse(event: str, data: dict[str, Any]) -> str:
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


async def _sse(events: AsyncIterator[Event], session_id: str) -> AsyncIterator[str]:
    """The streamed turn's events as server-sent events; an error once the stream has begun is an `error`
    event in the error envelope (a status code can no longer be sent)."""
    try:
        async for event, data in events:
            yield sse(event, data)
    except MachiError as exc:
        yield sse("error", error_body(exc.code, exc.message, exc.details))
    except Exception:  # noqa: BLE001 - the stream has begun; an error event is all Unity can still get
        log.exception("streamed turn %s failed", session_id)
        yield sse("error", error_body("internal_error", "the turn could not be stored; retry it"))


def _names(session: Any, agents: AgentCache, world: str, ids: set[str]) -> dict[str, str]:
    """The participants' display names (agents' rows, a deleted agent has none; players' names)."""
    return {who: person.name for who, person in read_people(session, agents, world, sorted(ids)).items()}


def _summary(conv: Conversation, names: dict[str, str]) -> dict[str, Any]:
    gone = set(conv.left or [])
    return {
        "session_id": conv.session_id,
        "participants": [
            Participant(
                id=who, name=names.get(who), kind="player" if is_player(who) else "agent", left=who in gone
            )
            for who in repo.participants(conv)
        ],
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
    agents: AgentsDep,
    world: WorldDep,
    agent_id: str | None = Query(None, max_length=64),
    limit: int = Query(50, ge=1, le=500),
) -> ConversationList:
    """Conversations, most recently active first; with `agent_id`, only those it took part in."""
    rows = repo.list_conversations(session, world, agent_id, limit)
    names = _names(session, agents, world, {a for c in rows for a in repo.participants(c)})
    return ConversationList(conversations=[ConversationSummary(**_summary(c, names)) for c in rows])


@router.get("/v1/conversations/{session_id}", response_model=ConversationDetail)
def get_conversation(
    session_id: SessionPath, session: SessionDep, agents: AgentsDep, world: WorldDep
) -> ConversationDetail:
    """One conversation with every turn (emotion and fallback flag included). 404 if unknown."""
    conv = repo.get_conversation(session, world, session_id)
    names = _names(session, agents, world, set(repo.participants(conv)))
    turns = [
        TurnPublic.model_validate(t, from_attributes=True)
        for t in repo.conversation_turns(session, world, session_id)
    ]
    return ConversationDetail(
        **_summary(conv, names), turns=turns, transcript=list(conv.transcript or []), reflected=conv.reflected
    )
