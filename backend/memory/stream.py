"""The memory stream in the database: plain synchronous functions, each taking an engine.

Every query filters by world and agent. The service runs these in a worker thread (`asyncio.to_thread`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from sqlalchemy import and_, bindparam, delete, func, or_, update
from sqlalchemy.engine import Engine
from sqlalchemy.orm import defer
from sqlmodel import Session, col, select

from backend.gametime import from_game_minutes, game_minutes, utcnow
from backend.memory.index import IndexRow
from backend.memory.models import Memory
from backend.storage.rows import insert_all

#: Adds rows (jobs) to the transaction of freshly inserted memories, given the session and them with their ids.
FollowUp = Callable[[Session, list[Memory]], object]


def insert(engine: Engine, groups: Sequence[tuple[Sequence[Memory], FollowUp | None]]) -> None:
    """Store every group's rows in one transaction and give them their ids; a group's `follow_up(session,
    rows)` adds jobs about its rows to the same transaction."""
    rows = [row for group, _ in groups for row in group]
    if not rows:
        return
    with Session(engine, expire_on_commit=False) as session:
        insert_all(session, rows)  # every column has a Python-side default: the rows need no reload
        for group, follow_up in groups:
            if follow_up is not None and group:
                follow_up(session, list(group))  # the rows have their ids, which the jobs name
        session.commit()


def by_ids(
    engine: Engine, world_id: str, agent_id: str, ids: Sequence[int], *, embedding: bool = True
) -> dict[int, Memory]:
    """The agent's memories with these ids. `embedding=False` leaves the vector out (reading it then raises):
    retrieval answers with records, not vectors, and the vectors are most of a row's bytes."""
    if not ids:
        return {}
    query = _BY_IDS if embedding else _BY_IDS_WITHOUT_VECTOR
    with Session(engine, expire_on_commit=False) as session:
        rows = session.exec(query, params=_ids_params(world_id, agent_id, ids)).all()
    return {row.id: row for row in rows if row.id is not None}


def next_id(engine: Engine) -> int:
    """One past the largest memory id stored (ids grow with creation, across every world and agent)."""
    with Session(engine) as session:
        return int(session.exec(select(func.max(Memory.id))).one() or 0) + 1


def existing_ids(engine: Engine, world_id: str, agent_id: str, ids: Sequence[int]) -> set[int]:
    if not ids:
        return set()
    with engine.connect() as conn:
        found = conn.execute(_EXISTING_IDS, _ids_params(world_id, agent_id, ids)).scalars()
        return {int(i) for i in found}


# Built once (retrieval and ratings run these all the time): the agent's memories with given ids.
_WITH_IDS = (
    col(Memory.world_id) == bindparam("world_id"),
    col(Memory.agent_id) == bindparam("agent_id"),
    col(Memory.id).in_(bindparam("ids", expanding=True)),
)
_BY_IDS = select(Memory).where(*_WITH_IDS)
_BY_IDS_WITHOUT_VECTOR = _BY_IDS.options(defer(Memory.embedding, raiseload=True))  # type: ignore[arg-type]
_EXISTING_IDS = select(Memory.id).where(*_WITH_IDS)


def _ids_params(world_id: str, agent_id: str, ids: Sequence[int]) -> dict[str, Any]:
    return {"world_id": world_id, "agent_id": agent_id, "ids": list(ids)}


def unrated_lines(engine: Engine, world_id: str, agent_id: str, older_than_s: float) -> list[Memory]:
    """The agent's conversation-line observations still provisional after `older_than_s` seconds: lines of a
    conversation that never ended (its end-of-conversation reflection rates the others)."""
    from datetime import timedelta

    query = (
        select(Memory)
        .where(
            Memory.world_id == world_id,
            Memory.agent_id == agent_id,
            Memory.type == "observation",
            Memory.importance_source == "provisional",
            col(Memory.session_id).is_not(None),
            col(Memory.created_at) < utcnow() - timedelta(seconds=older_than_s),
        )
        .options(defer(Memory.embedding))  # type: ignore[arg-type]
    )
    with Session(engine, expire_on_commit=False) as session:
        return list(session.exec(query.order_by(col(Memory.id)).limit(64)).all())


def set_importances(
    engine: Engine, world_id: str, agent_id: str, ratings: Sequence[tuple[Memory, int]], source: str
) -> list[int]:
    """Store ratings of the agent's provisional memories in one transaction. Returns the ids rated.

    A rating lands only on the memory the model read: same id, world and agent, same text, still provisional.
    A world import (or an agent's deletion and re-creation) can give the id to another memory while a rating
    job waits on the model; that memory keeps its importance.
    """
    rated = []
    with engine.begin() as conn:
        for row, value in ratings:
            params = {
                "memory_id": row.id,
                "of_world": world_id,
                "of_agent": agent_id,
                "read_content": row.content,
                "value": value,
                "source": source,
            }
            if conn.execute(_SET_IMPORTANCE, params).rowcount:
                rated.append(int(row.id or 0))
    return rated


_SET_IMPORTANCE = (
    update(Memory)
    .where(
        col(Memory.id) == bindparam("memory_id"),
        col(Memory.world_id) == bindparam("of_world"),
        col(Memory.agent_id) == bindparam("of_agent"),
        col(Memory.content) == bindparam("read_content"),
        col(Memory.importance_source) == "provisional",
    )
    .values(importance=bindparam("value"), importance_source=bindparam("source"))
)


def touch(engine: Engine, world_id: str, agent_id: str, ids: Sequence[int], minutes: float) -> None:
    """Mark memories accessed at game time `minutes`: one UPDATE ... WHERE id IN (...)."""
    if not ids:
        return
    day, time_of_day = from_game_minutes(minutes)
    with Session(engine) as session:
        session.exec(
            update(Memory)
            .where(
                col(Memory.world_id) == world_id,
                col(Memory.agent_id) == agent_id,
                col(Memory.id).in_(list(ids)),
            )
            .values(last_accessed_day=day, last_accessed_time_of_day=time_of_day, last_accessed_at=utcnow())
        )
        session.commit()


def remove(engine: Engine, world_id: str, agent_id: str, ids: Sequence[int] | None = None) -> int:
    """Delete some of an agent's memories (or all when `ids` is None). Returns how many went."""
    statement = delete(Memory).where(col(Memory.world_id) == world_id, col(Memory.agent_id) == agent_id)
    if ids is not None:
        statement = statement.where(col(Memory.id).in_(list(ids)))
    with Session(engine) as session:
        result = session.exec(statement)
        session.commit()
        return int(result.rowcount or 0)


def page(
    engine: Engine,
    world_id: str,
    agent_id: str,
    *,
    types: Sequence[str] | None = None,
    q: str | None = None,
    min_importance: int | None = None,
    limit: int = 50,
    offset: int = 0,
    until: tuple[int, float] | None = None,
) -> tuple[list[Memory], int]:
    """Newest first (game time, then id), with the total matching count; `until` = (day, time) created by."""
    filters: list[Any] = [Memory.world_id == world_id, Memory.agent_id == agent_id]
    if types:
        filters.append(col(Memory.type).in_(list(types)))
    if q:
        # autoescape: % and _ in the text are themselves, not LIKE wildcards that match everything.
        filters.append(
            or_(
                col(Memory.content).contains(q, autoescape=True),
                col(Memory.location_name).contains(q, autoescape=True),
            )
        )
    if min_importance is not None:
        filters.append(col(Memory.importance) >= min_importance)
    if until is not None:
        day, time_of_day = until
        filters.append(
            or_(
                col(Memory.created_day) < day,
                and_(col(Memory.created_day) == day, col(Memory.created_time_of_day) <= time_of_day),
            )
        )
    with Session(engine, expire_on_commit=False) as session:
        total = session.exec(select(func.count()).select_from(Memory).where(*filters)).one()
        rows = session.exec(
            select(Memory)
            .where(*filters)
            .order_by(
                col(Memory.created_day).desc(), col(Memory.created_time_of_day).desc(), col(Memory.id).desc()
            )
            .offset(offset)
            .limit(limit)
        ).all()
    return list(rows), int(total)


def importance_since_last_insight(engine: Engine, world_id: str, agent_id: str) -> tuple[float, int]:
    """Summed importance of observations stored after the agent's latest insight, and that insight's id."""
    mine = (col(Memory.world_id) == world_id, col(Memory.agent_id) == agent_id)
    last = func.coalesce(
        select(func.max(Memory.id))
        .where(*mine, col(Memory.type) == "reflection", col(Memory.origin) == "insight")  # the type index
        .scalar_subquery(),
        0,
    )
    statement = select(func.coalesce(func.sum(Memory.importance), 0), last).where(
        *mine, col(Memory.type) == "observation", col(Memory.id) > last
    )
    with engine.connect() as conn:
        total, since = conn.execute(statement).one()
    return float(total), int(since)


def observations_after(
    engine: Engine, world_id: str, agent_id: str, after_id: int, limit: int
) -> list[Memory]:
    """The latest `limit` observations with id > after_id, oldest first."""
    with Session(engine, expire_on_commit=False) as session:
        rows = session.exec(
            select(Memory)
            .where(
                Memory.world_id == world_id,
                Memory.agent_id == agent_id,
                Memory.type == "observation",
                col(Memory.id) > after_id,
            )
            .order_by(col(Memory.id).desc())
            .limit(limit)
        ).all()
    return list(reversed(rows))


def index_rows(engine: Engine, world_id: str, agent_id: str, dim: int) -> tuple[list[IndexRow], list[int]]:
    """Everything the index needs, in id order; also the ids whose stored embedding is missing or stale."""
    columns = (
        Memory.id,
        Memory.importance,
        Memory.last_accessed_day,
        Memory.last_accessed_time_of_day,
        Memory.type,
        Memory.content,
        Memory.embedding,
    )
    with Session(engine) as session:
        result = session.exec(
            select(*columns)  # type: ignore[call-overload]
            .where(Memory.world_id == world_id, Memory.agent_id == agent_id)
            .order_by(col(Memory.id))
        ).all()
    rows, stale = [], []
    for memory_id, importance, day, tod, kind, content, blob in result:
        vector = np.frombuffer(blob, dtype=np.float32) if blob else None
        if vector is None or vector.shape[0] != dim:
            vector = None
            stale.append(memory_id)
        rows.append(IndexRow(memory_id, float(importance), game_minutes(day, tod), kind, content, vector))
    return rows, stale


def save_embeddings(engine: Engine, vectors: dict[int, bytes]) -> None:
    with Session(engine) as session:
        for memory_id, blob in vectors.items():
            session.exec(update(Memory).where(col(Memory.id) == memory_id).values(embedding=blob))
        session.commit()


# A conversation's memories (conversation/aftermath.py reads them: a job run again after a crash, and the
# evidence of its reflection).
def has_observation(engine: Engine, world_id: str, agent_id: str, session_id: str, content: str) -> bool:
    """Whether this line is already in the agent's memories (a job run again after a crash)."""
    query = select(Memory.id).where(
        Memory.session_id == session_id,
        Memory.world_id == world_id,
        Memory.agent_id == agent_id,
        Memory.type == "observation",
        Memory.content == content,
    )
    with Session(engine) as session:
        return session.exec(query).first() is not None


def conversation_reflection(engine: Engine, world_id: str, agent_id: str, session_id: str) -> Memory | None:
    """The agent's stored reflection on this conversation, if any (a job run again after a crash)."""
    query = select(Memory).where(
        Memory.session_id == session_id,
        Memory.world_id == world_id,
        Memory.agent_id == agent_id,
        col(Memory.origin) == "conversation",
    )
    with Session(engine, expire_on_commit=False) as session:
        return session.exec(query).first()


def observation_ids(engine: Engine, world_id: str, agent_id: str, session_id: str) -> list[int]:
    """The agent's observation memories from this conversation (the reflection's evidence)."""
    # Filter on session_id alone in SQL: with world_id/agent_id in the WHERE too, SQLite (no ANALYZE stats)
    # picks the low-selectivity world_id index and scans every memory of the world.
    query = select(Memory.id, Memory.world_id, Memory.agent_id, Memory.type).where(
        Memory.session_id == session_id
    )
    with Session(engine) as session:
        found = session.exec(query.order_by(col(Memory.id))).all()
    return [
        row[0]
        for row in found
        if row[0] is not None and (row[1], row[2], row[3]) == (world_id, agent_id, "observation")
    ]
