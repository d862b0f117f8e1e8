"""GET /v1/llm-calls: the trace of every model call, newest first."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request
from pydantic import BaseModel

from backend.api.deps import MAX_OFFSET, MAX_ROW_ID, SessionDep, WorldDep
from backend.conversation.repo import fallback_counts
from backend.errors import NotFound
from backend.gametime import utcnow
from backend.llm import repo
from backend.llm.scheduler import find_scheduler
from backend.llm.trace import INVALID_PREFIX

router = APIRouter(prefix="/v1/llm-calls", tags=["llm"])
#: Newest traced calls the stats read at most (a busy day holds far more; the window's tail is enough).
STATS_ROWS = 20_000


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
    #: The prompt as Machi counted it when fitting it to the model's context window.
    prompt_tokens_counted: int | None = None
    completion_tokens: int | None
    streamed: bool
    repaired: bool = False
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
    offset: int = Query(0, ge=0, le=MAX_OFFSET),
) -> LLMCallList:
    filters = {"agent_id": agent_id, "purpose": purpose, "session_id": session_id, "council_id": council_id}
    rows = repo.calls(session, world, filters, errors_only=errors_only, limit=limit, offset=offset)
    return LLMCallList(calls=[LLMCallPublic.model_validate(r, from_attributes=True) for r in rows])


class PurposeStats(BaseModel):
    purpose: str
    calls: int
    errors: int
    #: Replies that parsed only after repair (code fences or prose around the JSON).
    repaired: int = 0
    #: Replies that failed validation (each was re-asked, or given up on after the re-ask).
    invalid_replies: int = 0
    latency_p50_ms: float
    latency_p95_ms: float
    latency_mean_ms: float
    #: Tokens over the window, as the provider reported them (the prompt's own count where it did not).
    prompt_tokens: int = 0
    completion_tokens: int = 0


class LLMStats(BaseModel):
    window_s: int
    #: The one queue in front of the provider (shared by every world: the GPU is).
    queue: dict[str, Any] | None
    #: Per purpose, from this world's traced calls in the window.
    purposes: list[PurposeStats]
    #: This world's turns in the window, and how many got a fallback line.
    turns: int
    fallback_turns: int


@router.get("/stats", response_model=LLMStats)
def call_stats(
    request: Request, session: SessionDep, world: WorldDep, window_s: int = Query(3600, ge=1, le=30 * 86_400)
) -> LLMStats:
    """Queue depth and waits per priority, fallbacks, and per-purpose counts, errors and latency."""
    since = utcnow() - timedelta(seconds=window_s)
    rows = repo.stats_rows(session, world, since, STATS_ROWS)
    by_purpose: dict[str, list[tuple[bool, float, bool, bool, int, int]]] = {}
    for purpose, ok, latency, repaired, error, prompt, counted, completion in rows:
        invalid = bool(error) and str(error).startswith(INVALID_PREFIX)
        tokens = (int(prompt or counted or 0), int(completion or 0))
        by_purpose.setdefault(purpose, []).append((ok, latency, bool(repaired), invalid, *tokens))
    counted = fallback_counts(session, world, since)
    scheduler = find_scheduler(request.app.state.llm)
    return LLMStats(
        window_s=window_s,
        queue=scheduler.snapshot() if scheduler is not None else None,
        purposes=[_purpose_stats(p, calls) for p, calls in sorted(by_purpose.items())],
        turns=sum(counted.values()),
        fallback_turns=counted.get(True, 0),
    )


def _purpose_stats(purpose: str, calls: list[tuple[bool, float, bool, bool, int, int]]) -> PurposeStats:
    latencies = sorted(call[1] for call in calls)

    def at(q: float) -> float:
        return round(latencies[min(len(latencies) - 1, int(q * len(latencies)))], 2)

    return PurposeStats(
        purpose=purpose,
        calls=len(calls),
        errors=sum(1 for call in calls if not call[0]),
        repaired=sum(1 for call in calls if call[2]),
        invalid_replies=sum(1 for call in calls if call[3]),
        latency_p50_ms=at(0.5),
        latency_p95_ms=at(0.95),
        latency_mean_ms=round(sum(latencies) / len(latencies), 2),
        prompt_tokens=sum(call[4] for call in calls),
        completion_tokens=sum(call[5] for call in calls),
    )


@router.get("/{call_id}", response_model=LLMCallDetail)
def get_call(
    call_id: Annotated[int, Path(ge=1, le=MAX_ROW_ID)], session: SessionDep, world: WorldDep
) -> LLMCallDetail:
    row, oldest = repo.call_or_oldest(session, call_id)
    if row is None or row.world_id != world:
        if row is None and oldest is not None and call_id < oldest:  # ids only grow: it was there once
            raise NotFound(
                f"LLM call {call_id} is no longer kept: older calls are pruned (the trace keeps those "
                "younger than LLM_CALL_RETENTION_DAYS, and the newest LLM_CALL_RETENTION_ROWS)",
                details={"pruned": True},
            )
        raise NotFound(f"no LLM call {call_id} in world {world!r}")
    return LLMCallDetail.model_validate(row, from_attributes=True)
