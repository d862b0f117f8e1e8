"""All SQL on the `llmcall` table (the trace of every model call): written by the tracer, read by the API.

Statements are written against `LLMCall`'s own columns, so no column list is copied here.

The trace holds at most LLM_CALL_RETENTION_ROWS rows at every moment, not only after the hourly pruning
(backend/storage/retention.py, which also prunes by age): `insert_call` with a `RowCap` deletes, in the
insert's own transaction, every row whose id is at least the limit below the new row's, a tenth of the limit
(at most PRUNE_BATCH rows) ahead, so one insert in that many deletes anything. Ids only grow (SQLite gives the
largest plus one, and the newest row is never deleted; PostgreSQL's sequence grows), so the rows left lie
within the limit's last ids. No COUNT(*): the newest id (an index lookup) is read once per process, when its
first insert deletes what is past the limit in batches. On PostgreSQL the inserts take a transaction-level
advisory lock, so ids are committed in their order: otherwise a row whose insert began earlier could commit
after a later insert's delete had passed its id, and stay past the limit. SQLite has one writer at a time.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, delete, func, insert, select, text, update
from sqlalchemy.engine import Engine
from sqlmodel import Session, col

from backend.llm.models import LLMCall

__all__ = ["Engine", "RowCap", "calls", "call_or_oldest", "insert_call", "mark_invalid", "stats_rows"]

_INSERT = insert(LLMCall)
_ID = col(LLMCall.id)
#: Rows deleted per transaction when a process's first insert catches up with the limit.
PRUNE_BATCH = 500
#: The PostgreSQL advisory lock of trace inserts: "MACH" and 3 (1: the server lock, 2: the migration).
INSERT_LOCK_KEYS = {"a": 0x4D414348, "b": 3}
#: Filters `calls` accepts: query name -> the column it compares with.
FILTERS = {
    "agent_id": col(LLMCall.agent_id),
    "purpose": col(LLMCall.purpose),
    "session_id": col(LLMCall.session_id),
    "council_id": col(LLMCall.council_id),
}


@dataclass
class RowCap:
    """One process's bound on the trace's rows (LLM_CALL_RETENTION_ROWS; 0: none), and what it knows is gone."""

    keep: int
    #: Every row with an id up to this is gone (None: not known yet in this process).
    cut: int | None = None
    catching_up: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def margin(self) -> int:
        """How far ahead of the limit a delete reaches: a delete every `margin` inserts, not every one."""
        return min(PRUNE_BATCH, self.keep // 10)

    def due(self, new_id: int) -> int | None:
        """The id up to which rows must go now that `new_id` is stored (None: nothing to delete)."""
        if not self.keep or (self.cut is not None and new_id - self.keep <= self.cut):
            return None
        return new_id - self.keep + self.margin

    def passed(self, cut: int) -> None:
        self.cut = cut if self.cut is None else max(self.cut, cut)


def insert_call(engine: Engine, call: LLMCall, cap: RowCap | None = None) -> int | None:
    """Store one trace row and give `call` its id; with `cap`, the table stays within `cap.keep` rows."""
    # A Core insert: several per turn, and the ORM's unit of work costs more than the row itself.
    values = call.model_dump(exclude={"id"})
    if cap is not None and cap.keep and cap.cut is None:
        _catch_up(engine, cap)
    cut = None
    with engine.begin() as conn:
        if cap is not None and cap.keep:
            _lock(conn)
        result = conn.execute(_INSERT, values)  # one statement object: compiled once, cached
        key = result.inserted_primary_key
        call.id = int(key[0]) if key is not None else None
        cut = cap.due(call.id) if cap is not None and call.id is not None else None
        if cut is not None:
            conn.execute(delete(LLMCall).where(_ID <= cut))
    if cap is not None and cut is not None:
        cap.passed(cut)  # once committed: a rolled-back delete deleted nothing
    return call.id


def _lock(conn: Connection) -> None:
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(:a, :b)"), INSERT_LOCK_KEYS)


def _catch_up(engine: Engine, cap: RowCap) -> None:
    """Before a process's first insert: delete, in batches, the rows past the limit that insert will leave."""
    with cap.catching_up:
        if cap.cut is not None:  # another thread of this process did it meanwhile
            return
        with engine.connect() as conn:
            newest = conn.execute(select(func.max(_ID))).scalar()
        cut = 0 if newest is None else cap.due(int(newest) + 1) or 0
        while cut > 0:
            with engine.begin() as conn:
                _lock(conn)
                batch = select(_ID).where(_ID <= cut).order_by(_ID).limit(PRUNE_BATCH)
                gone = conn.execute(delete(LLMCall).where(_ID.in_(batch))).rowcount
            if gone < PRUNE_BATCH:
                break
        cap.passed(cut)


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
