"""All SQL on the `llmcall` table (the trace of every model call): written by the tracer, read by the API.

Statements are written against `LLMCall`'s own columns, so no column list is copied here.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import func, insert, select, update
from sqlalchemy.engine import Engine
from sqlmodel import Session, col

from backend.llm.models import LLMCall

__all__ = ["Engine", "calls", "call_or_oldest", "insert_call", "mark_invalid", "stats_rows"]

_INSERT = insert(LLMCall)
#: Filters `calls` accepts: query name -> the column it compares with.
FILTERS = {
    "agent_id": col(LLMCall.agent_id),
    "purpose": col(LLMCall.purpose),
    "session_id": col(LLMCall.session_id),
    "council_id": col(LLMCall.council_id),
}


def insert_call(engine: Engine, call: LLMCall) -> int | None:
    """Store one trace row and give `call` its id."""
    # A Core insert: several per turn, and the ORM's unit of work costs more than the row itself.
    values = call.model_dump(exclude={"id"})
    with engine.begin() as conn:
        result = conn.execute(_INSERT, values)  # one statement object: compiled once, cached
        key = result.inserted_primary_key
        call.id = int(key[0]) if key is not None else None
    return call.id


def mark_invalid(engine: Engine, call_id: int, error: str) -> None:
    """Mark a stored call as failed with `error` (its reply did not validate)."""
    with engine.begin() as conn:
        conn.execute(update(LLMCall).where(col(LLMCall.id) == call_id).values(ok=False, error=error))


def calls(
    session: Session,
    world_id: str,
    filters: dict[str, str | None],
    *,
    errors_only: bool,
    limit: int,
    offset: int,
) -> Sequence[LLMCall]:
    """A world's calls, newest first; `filters` maps names of FILTERS to a value (None: any)."""
    query = select(LLMCall).where(col(LLMCall.world_id) == world_id)
    for name, value in filters.items():
        if value is not None:
            query = query.where(FILTERS[name] == value)
    if errors_only:
        query = query.where(col(LLMCall.ok) == False)  # noqa: E712 - SQL expression
    query = query.order_by(col(LLMCall.id).desc()).offset(offset).limit(limit)
    return session.execute(query).scalars().all()


def stats_rows(session: Session, world_id: str, since: datetime, limit: int) -> Sequence[Any]:
    """(purpose, ok, latency_ms, repaired, error, prompt_tokens, prompt_tokens_counted, completion_tokens)
    of a world's newest `limit` calls since `since`."""
    return session.execute(
        select(
            col(LLMCall.purpose),
            col(LLMCall.ok),
            col(LLMCall.latency_ms),
            col(LLMCall.repaired),
            col(LLMCall.error),
            col(LLMCall.prompt_tokens),
            col(LLMCall.prompt_tokens_counted),
            col(LLMCall.completion_tokens),
        )
        .where(col(LLMCall.world_id) == world_id, col(LLMCall.created_at) >= since)
        .order_by(col(LLMCall.id).desc())
        .limit(limit)
    ).all()


def call_or_oldest(session: Session, call_id: int) -> tuple[LLMCall | None, int | None]:
    """The call with `call_id` (any world), and the oldest id still kept (None when the table is empty)."""
    row = session.get(LLMCall, call_id)
    oldest = None if row is not None else session.execute(select(func.min(LLMCall.id))).scalar_one()
    return row, oldest
