"""All SQL for the `emotionrecord` table: an agent's evaluations, newest last."""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, delete
from sqlalchemy import select as core_select
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from backend.emotion.models import EmotionRecord
from backend.storage import rows

_RECORDS = EmotionRecord.__table__  # type: ignore[attr-defined]
#: The newest evaluation of an agent (read on every turn): built once. Newest is the highest id (the order
#: of insertion), for every reader: the current emotion and the agent's detail.
_NEWEST = (
    core_select(_RECORDS)
    .where(_RECORDS.c.world_id == bindparam("world_id"), _RECORDS.c.agent_id == bindparam("agent_id"))
    .order_by(_RECORDS.c.id.desc())
    .limit(1)
)


def newest(bind: Session | Engine, world_id: str, agent_id: str) -> EmotionRecord | None:
    """The agent's newest evaluation as stored (no decay), in the caller's session or on a connection."""
    return rows.first(bind, _NEWEST, {"world_id": world_id, "agent_id": agent_id}, EmotionRecord)


def history(engine: Engine, world_id: str, agent_id: str, limit: int) -> list[EmotionRecord]:
    """The agent's newest `limit` evaluations, newest first."""
    with Session(engine) as session:
        return list(
            session.exec(
                select(EmotionRecord)
                .where(EmotionRecord.world_id == world_id, EmotionRecord.agent_id == agent_id)
                .order_by(col(EmotionRecord.id).desc())
                .limit(limit)
            ).all()
        )


def build(values: dict[str, Any]) -> EmotionRecord:
    """A record not yet stored, from its column values."""
    return rows.build(EmotionRecord, values)


def insert(engine: Engine, record: EmotionRecord, *, keep: int | None = None) -> None:
    """Store the record; with `keep`, also cut the agent's history back to its newest `keep` (one DELETE)."""
    with Session(engine, expire_on_commit=False) as session:
        session.add(record)
        if keep is not None:
            _prune(session, record.world_id, record.agent_id, keep)
        session.commit()


def _prune(session: Session, world_id: str, agent_id: str, keep: int) -> None:
    mine = (col(EmotionRecord.world_id) == world_id, col(EmotionRecord.agent_id) == agent_id)
    cutoff = (
        select(EmotionRecord.id)
        .where(*mine)
        .order_by(col(EmotionRecord.id).desc())
        .offset(keep)
        .limit(1)
        .scalar_subquery()
    )
    session.execute(delete(EmotionRecord).where(*mine, col(EmotionRecord.id) <= cutoff))


def forget_agent(session: Session, world_id: str, agent_id: str) -> int:
    """Delete the agent's evaluations (not committed). Returns how many went."""
    query = delete(EmotionRecord).where(
        col(EmotionRecord.world_id) == world_id, col(EmotionRecord.agent_id) == agent_id
    )
    return int(session.execute(query).rowcount)  # type: ignore[attr-defined]
