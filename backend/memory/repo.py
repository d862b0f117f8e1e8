"""All SQL of the memory concept's tables (Memory, PersonMemory): `MemoryRepo`, one per engine.

Every query filters by world and agent. Its methods are synchronous; callers run them in a worker thread
(`asyncio.to_thread`). Hot statements are Core, built once against the models' own table objects
(`Memory.__table__`, `PersonMemory.__table__`), so no column list is repeated here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any, NamedTuple

import numpy as np
from sqlalchemy import Integer, and_, bindparam, case, delete, func, insert, or_, update
from sqlalchemy import select as core_select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.orm import defer
from sqlmodel import Session, col, select

from backend.gametime import from_game_minutes, game_minutes, utcnow
from backend.memory.index import IndexRow
from backend.memory.models import (
    VISITOR_TAG,
    WORLD_STAMP,
    Key,
    Memory,
    MemoryStamp,
    PersonMemory,
    visitor_tags,
)
from backend.storage import rows as table_rows
from backend.world.models import Agent

#: The transaction a caller holds (a turn reads everything it needs in one; a write adds its jobs to it).
Transaction = Session
#: Adds rows (jobs) to the transaction of freshly inserted memories, given the session and them with their ids.
FollowUp = Callable[[Transaction, list[Memory]], object]

_MEMORY = Memory.__table__  # type: ignore[attr-defined]
_PEOPLE = PersonMemory.__table__  # type: ignore[attr-defined]
_STAMP = MemoryStamp.__table__  # type: ignore[attr-defined]
#: What dedup matching reads of its candidates (the rest, the vector above all, is read for the one matched).
_MATCHED_ON = (
    _MEMORY.c.id, _MEMORY.c.type, _MEMORY.c.tags, _MEMORY.c.created_day, _MEMORY.c.created_time_of_day,
    _MEMORY.c.session_id, _MEMORY.c.content,
)  # fmt: skip


def new_memory(values: dict[str, Any]) -> Memory:
    """A new Memory holding `values`, every other field at its default (see storage/rows.build)."""
    return table_rows.build(Memory, values)


class Stamp(NamedTuple):
    """An agent's memory revisions as stored (memory/cache.py): all zero before its first stamped write."""

    rev: int = 0
    deleted_rev: int = 0
    world_rev: int = 0  # replacements of the whole world (import)


class MemoryRepo:
    """The memory tables of one database."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    # --- writing ---
    def insert(self, groups: Sequence[tuple[Sequence[Memory], FollowUp | None]]) -> dict[Key, int]:
        """Store every group's rows in one transaction and give them their ids and revision; a group's
        `follow_up(session, rows)` adds jobs about its rows to the same transaction. Returns each agent's
        revision of the transaction."""
        memories = [row for group, _ in groups for row in group]
        if not memories:
            return {}
        with Session(self.engine, expire_on_commit=False) as session:
            revs = {
                key: bump(session.connection(), key)
                for key in sorted({(r.world_id, r.agent_id) for r in memories})
            }
            for row in memories:
                row.rev = revs[(row.world_id, row.agent_id)]
            table_rows.insert_all(session, memories)  # every column has a Python-side default: no reload
            for group, follow_up in groups:
                if follow_up is not None and group:
                    follow_up(session, list(group))  # the rows have their ids, which the jobs name
            session.commit()
        return revs

    def in_transaction(self, work: Callable[[Transaction], object]) -> None:
        """Run `work(session)` (adding jobs, say) in one transaction of its own, and commit it."""
        with Session(self.engine) as session:
            work(session)
            session.commit()

    def set_importances(
        self, key: Key, ratings: Sequence[tuple[Memory, int]], source: str
    ) -> tuple[list[int], int]:
        """Store ratings of the agent's provisional memories in one transaction. Returns the ids rated and
        the transaction's revision.

        A rating lands only on the memory the model read: same id, world and agent, same text, still
        provisional. A world import (or an agent's deletion and re-creation) can give the id to another memory
        while a rating job waits on the model; that memory keeps its importance.
        """
        rated = []
        with self.engine.begin() as conn:
            rev = bump(conn, key)
            for row, value in ratings:
                params = {
                    "rev": rev,
                    "memory_id": row.id,
                    "of_world": key[0],
                    "of_agent": key[1],
                    "read_content": row.content,
                    "value": value,
                    "source": source,
                }
                if conn.execute(_SET_IMPORTANCE, params).rowcount:
                    rated.append(int(row.id or 0))
        return rated, rev

    def touch(self, key: Key, ids: Sequence[int], minutes: float) -> int:
        """Mark memories accessed at game time `minutes`: one UPDATE ... WHERE id IN (...). Returns the
        revision (0: nothing to mark)."""
        if not ids:
            return 0
        day, time_of_day = from_game_minutes(minutes)
        with self.engine.begin() as conn:
            rev = bump(conn, key)
            conn.execute(
                update(_MEMORY)
                .where(
                    _MEMORY.c.world_id == key[0], _MEMORY.c.agent_id == key[1], _MEMORY.c.id.in_(list(ids))
                )
                .values(
                    last_accessed_day=day,
                    last_accessed_time_of_day=time_of_day,
                    last_accessed_at=utcnow(),
                    rev=rev,
                )
            )
        return rev

    def remove(self, key: Key, ids: Sequence[int] | None = None) -> tuple[int, int]:
        """Delete some of an agent's memories (or all when `ids` is None). Returns how many went and the
        revision."""
        statement = delete(_MEMORY).where(_MEMORY.c.world_id == key[0], _MEMORY.c.agent_id == key[1])
        if ids is not None:
            statement = statement.where(_MEMORY.c.id.in_(list(ids)))
        with self.engine.begin() as conn:
            rev = bump(conn, key, deleted=True)
            return int(conn.execute(statement).rowcount or 0), rev

    def save_embeddings(self, key: Key, vectors: dict[int, bytes], embedder: str) -> int:
        """Store embeddings of the agent's memories, made by `embedder`. Returns the revision (0: none given)."""
        if not vectors:
            return 0
        with self.engine.begin() as conn:
            rev = bump(conn, key)
            params = [
                {"memory_id": i, "blob": blob, "rev": rev, "embedder": embedder}
                for i, blob in vectors.items()
            ]
            conn.execute(_SAVE_EMBEDDING, params)
        return rev

    def unembedded(self, world_id: str, embedder: str, limit: int) -> list[Memory]:
        """Up to `limit` memories of the world not embedded by `embedder` (none yet, or another), one agent's
        (the first such agent's, in id order), oldest first; without their vectors."""
        stale = _stale(embedder)
        first = core_select(_MEMORY.c.agent_id).where(_MEMORY.c.world_id == world_id, stale)
        with Session(self.engine) as session:
            agent = session.execute(first.order_by(_MEMORY.c.id).limit(1)).scalar()
            if agent is None:
                return []
            query = (
                select(Memory)
                .where(Memory.world_id == world_id, Memory.agent_id == agent, stale)
                .options(defer(Memory.embedding))  # type: ignore[arg-type]
                .order_by(col(Memory.id))
                .limit(limit)
            )
            return list(session.exec(query).all())

    def stream(self, key: Key, first_id: int, last_id: int) -> list[Memory]:
        """The agent's memories from the one before `first_id` to `last_id`, in id order (no vectors): the
        episode context of the memories in that range."""
        c = _MEMORY.c
        mine = and_(c.world_id == key[0], c.agent_id == key[1])
        before = core_select(func.max(c.id)).where(mine, c.id < first_id).scalar_subquery()
        query = (
            select(Memory)
            .where(Memory.world_id == key[0], Memory.agent_id == key[1])
            .where(col(Memory.id) >= func.coalesce(before, first_id), col(Memory.id) <= last_id)
            .options(defer(Memory.embedding))  # type: ignore[arg-type]
            .order_by(col(Memory.id))
        )
        with Session(self.engine) as session:
            return list(session.exec(query).all())

    def last(self, key: Key) -> Memory | None:
        """The agent's newest memory (by id), without its vector."""
        query = (
            select(Memory)
            .where(Memory.world_id == key[0], Memory.agent_id == key[1])
            .options(defer(Memory.embedding))  # type: ignore[arg-type]
            .order_by(col(Memory.id).desc())
            .limit(1)
        )
        with Session(self.engine) as session:
            return session.exec(query).first()

    def embedding_counts(self, embedder: str) -> tuple[int, int, list[str]]:
        """(memories embedded by `embedder`, all memories, the worlds holding one that is not)."""
        c = _MEMORY.c
        ready = func.sum(case((c.embedder == embedder, 1), else_=0))
        with self.engine.connect() as conn:
            total, done = conn.execute(core_select(func.count(), ready)).one()
            worlds = conn.execute(core_select(c.world_id).where(_stale(embedder)).distinct()).scalars().all()
        return int(done or 0), int(total or 0), list(worlds)

    def save_merged(self, key: Key, memories: Sequence[Memory]) -> int:
        """Write back what a dedup merge changed in the agent's stored memories: one executemany. Returns the
        revision (0: nothing to write), which the rows take."""
        if not memories:
            return 0
        with self.engine.begin() as conn:
            rev = bump(conn, key)
            for row in memories:
                row.rev = rev
            conn.execute(_SAVE_MERGED, [_merged_values(row) for row in memories])
        return rev

    def stamp(self, key: Key) -> Stamp:
        """The agent's revisions (one primary-key lookup of at most two rows: the agent's and its world's)."""
        params = {"world_id": key[0], "agent_id": key[1]}
        with self.engine.connect() as conn:
            found = conn.execute(_STAMPS, params).all()
        agent = next((row for row in found if row.agent_id != WORLD_STAMP), None)
        world = next((row.rev for row in found if row.agent_id == WORLD_STAMP), 0)
        return Stamp(agent.rev, agent.deleted_rev, world) if agent else Stamp(world_rev=world)

    def live_ids(self, key: Key) -> np.ndarray:
        """The ids of every memory the agent has, ascending (an index behind a deletion keeps only these)."""
        c = _MEMORY.c
        query = core_select(c.id).where(c.world_id == key[0], c.agent_id == key[1]).order_by(c.id)
        with self.engine.connect() as conn:
            return np.fromiter(conn.execute(query).scalars(), dtype=np.int64)

    def evict(
        self, key: Key, kind: str, cap: int, excess_extra: int, protect: int, keep: Sequence[int]
    ) -> tuple[int, list[int], int]:
        """Past `cap` memories of a type, delete the excess plus `excess_extra`: the least important, then the
        least recently accessed (game time), then the oldest id; never one of importance >= `protect` or in
        `keep`. Returns the type's count before, the ids deleted and the revision (0: none deleted)."""
        of_kind = (_MEMORY.c.world_id == key[0], _MEMORY.c.agent_id == key[1], _MEMORY.c.type == kind)
        with self.engine.begin() as conn:
            count = int(
                conn.execute(core_select(func.count()).select_from(_MEMORY).where(*of_kind)).scalar_one()
            )
            if count <= cap:
                return count, [], 0
            chosen = core_select(_MEMORY.c.id).where(
                *of_kind, _MEMORY.c.importance < protect, _MEMORY.c.id.not_in(list(keep))
            )
            chosen = chosen.order_by(
                _MEMORY.c.importance,
                _MEMORY.c.last_accessed_day,
                _MEMORY.c.last_accessed_time_of_day,
                _MEMORY.c.id,
            ).limit(count - cap + excess_extra)
            ids = [int(i) for i in conn.execute(chosen).scalars() if i is not None]
            rev = bump(conn, key, deleted=True) if ids else 0
            if ids:
                conn.execute(delete(_MEMORY).where(_MEMORY.c.id.in_(ids)))
        return count, ids, rev

    # --- reading ---
    def by_ids(self, key: Key, ids: Sequence[int], *, embedding: bool = True) -> dict[int, Memory]:
        """The agent's memories with these ids. `embedding=False` leaves the vector out (reading it then raises):
        retrieval answers with records, not vectors, and the vectors are most of a row's bytes."""
        if not ids:
            return {}
        query = _BY_IDS if embedding else _BY_IDS_WITHOUT_VECTOR
        with Session(self.engine, expire_on_commit=False) as session:
            found = session.exec(query, params=_ids_params(key, ids)).all()
        return {row.id: row for row in found if row.id is not None}

    def next_id(self) -> int:
        """One past the largest memory id stored (ids grow with creation, across every world and agent)."""
        with self.engine.connect() as conn:
            return int(conn.execute(core_select(func.max(_MEMORY.c.id))).scalar_one() or 0) + 1

    def existing_ids(self, key: Key, ids: Sequence[int]) -> set[int]:
        if not ids:
            return set()
        with self.engine.connect() as conn:
            return {int(i) for i in conn.execute(_EXISTING_IDS, _ids_params(key, ids)).scalars()}

    def tags_of(self, key: Key, ids: Sequence[int]) -> dict[int, list[str]]:
        """The tags of the agent's memories of `ids` (those that exist)."""
        if not ids:
            return {}
        with self.engine.connect() as conn:
            rows = conn.execute(_TAGS_OF_IDS, _ids_params(key, ids)).all()
        return {int(memory_id): list(tags or []) for memory_id, tags in rows}

    def visitor_tags(self, key: Key, ids: Sequence[int]) -> list[str]:
        """The tags that mark a memory made from these (`models.visitor_tags`): [] when none of them came
        from a visitor's words."""
        return visitor_tags(self.tags_of(key, ids).values())

    def unrated_lines(self, key: Key, older_than_s: float) -> list[Memory]:
        """The agent's conversation-line observations still provisional after `older_than_s` seconds: lines of
        a conversation that never ended (its end-of-conversation reflection rates the others)."""
        query = (
            select(Memory)
            .where(
                Memory.world_id == key[0],
                Memory.agent_id == key[1],
                Memory.type == "observation",
                Memory.importance_source == "provisional",
                col(Memory.session_id).is_not(None),
                col(Memory.created_at) < utcnow() - timedelta(seconds=older_than_s),
            )
            .options(defer(Memory.embedding))  # type: ignore[arg-type]
        )
        with Session(self.engine, expire_on_commit=False) as session:
            return list(session.exec(query.order_by(col(Memory.id)).limit(64)).all())

    def page(
        self,
        key: Key,
        *,
        types: Sequence[str] | None = None,
        q: str | None = None,
        min_importance: int | None = None,
        limit: int = 50,
        offset: int = 0,
        until: tuple[int, float] | None = None,
    ) -> tuple[list[Memory], int]:
        """Newest first (game time, then id), with the total matching count; `until` = (day, time) created by."""
        filters = _page_filters(key, types, q, min_importance, until)
        newest_first = (
            col(Memory.created_day).desc(),
            col(Memory.created_time_of_day).desc(),
            col(Memory.id).desc(),
        )
        with Session(self.engine, expire_on_commit=False) as session:
            total = session.exec(select(func.count()).select_from(Memory).where(*filters)).one()
            found = session.exec(
                select(Memory).where(*filters).order_by(*newest_first).offset(offset).limit(limit)
            ).all()
        return list(found), int(total)

    def importance_since_last_insight(self, key: Key) -> tuple[float, int]:
        """Summed importance of observations stored after the agent's latest insight, and that insight's id."""
        mine = (_MEMORY.c.world_id == key[0], _MEMORY.c.agent_id == key[1])
        last = func.coalesce(
            core_select(func.max(_MEMORY.c.id))
            .where(*mine, _MEMORY.c.type == "reflection", _MEMORY.c.origin == "insight")  # the type index
            .scalar_subquery(),
            0,
        )
        statement = core_select(func.coalesce(func.sum(_MEMORY.c.importance), 0), last).where(
            *mine, _MEMORY.c.type == "observation", _MEMORY.c.id > last
        )
        with self.engine.connect() as conn:
            total, since = conn.execute(statement).one()
        return float(total), int(since)

    def observations_after(self, key: Key, after_id: int, limit: int) -> list[Memory]:
        """The latest `limit` observations with id > after_id, oldest first."""
        with Session(self.engine, expire_on_commit=False) as session:
            found = session.exec(
                select(Memory)
                .where(
                    Memory.world_id == key[0],
                    Memory.agent_id == key[1],
                    Memory.type == "observation",
                    col(Memory.id) > after_id,
                )
                .order_by(col(Memory.id).desc())
                .limit(limit)
            ).all()
        return list(reversed(found))

    def index_rows(
        self, key: Key, embedder: str, dim: int, since: int | None = None
    ) -> tuple[list[IndexRow], list[int]]:
        """Everything the index needs, in id order (only the rows written after revision `since`, when given);
        also the ids whose stored embedding is missing or another embedder's (they get no vector)."""
        c = _MEMORY.c
        columns = (c.id, c.importance, c.last_accessed_day, c.last_accessed_time_of_day, c.type, c.content)
        when = (c.created_day, c.created_time_of_day, c.session_id, c.embedder, c.tags)
        statement = core_select(*columns, c.embedding, c.rev, *when).where(
            c.world_id == key[0], c.agent_id == key[1]
        )
        if since is not None:
            statement = statement.where(c.rev > since)
        with self.engine.connect() as conn:
            result = conn.execute(statement.order_by(c.id)).all()
        found, stale = [], []
        for memory_id, importance, day, tod, kind, content, blob, rev, *made in result:
            created_day, created_tod, session_id, made_by, tags = made
            vector = np.frombuffer(blob, dtype=np.float32) if blob and made_by == embedder else None
            if vector is None or vector.shape[0] != dim:
                vector = None
                stale.append(memory_id)
            minutes = game_minutes(day, tod)
            created = game_minutes(created_day, created_tod)
            found.append(
                IndexRow(
                    memory_id,
                    float(importance),
                    minutes,
                    kind,
                    content,
                    vector,
                    int(rev or 0),
                    created,
                    session_id,
                    VISITOR_TAG in (tags or ()),
                )
            )
        return found, stale

    def dedup_candidates(
        self, key: Key, reflection_pool: int | None, days: tuple[int, int] | None, sessions: set[str | None]
    ) -> list[dict[str, Any]]:
        """Stored memories that could absorb incoming ones (the columns matching reads): the newest `reflection_pool`
        reflections (None: none), and the observations created within `days` (first, last) in one of
        `sessions` (None in it: the session-less ones)."""
        agent = {"world_id": key[0], "agent_id": key[1]}
        queries: list[tuple[Any, dict[str, Any]]] = []
        if reflection_pool is not None:
            queries.append((_REFLECTIONS, {**agent, "pool": reflection_pool}))
        if days is not None:
            span = {**agent, "first_day": days[0], "last_day": days[1]}
            named = sorted(s for s in sessions if s is not None)
            if named:
                queries.append((_OBSERVATIONS_OF, {**span, "sessions": named}))
            if None in sessions:
                queries.append((_OBSERVATIONS_WITHOUT_SESSION, span))
        with self.engine.connect() as conn:
            return [
                dict(found) for query, params in queries for found in conn.execute(query, params).mappings()
            ]

    # --- a conversation's memories (its aftermath: a job run again after a crash, its reflection's evidence) ---
    def has_observation(self, key: Key, session_id: str, content: str) -> bool:
        """Whether this line of the conversation is already among the agent's observations."""
        c = _MEMORY.c
        query = core_select(c.id).where(
            c.session_id == session_id,
            c.world_id == key[0],
            c.agent_id == key[1],
            c.type == "observation",
            c.content == content,
        )
        with self.engine.connect() as conn:
            return conn.execute(query.limit(1)).first() is not None

    def conversation_reflection(self, key: Key, session_id: str) -> Memory | None:
        """The agent's stored reflection on this conversation, if any."""
        query = select(Memory).where(
            Memory.session_id == session_id,
            Memory.world_id == key[0],
            Memory.agent_id == key[1],
            col(Memory.origin) == "conversation",
        )
        with Session(self.engine, expire_on_commit=False) as session:
            return session.exec(query).first()

    def observation_ids(self, key: Key, session_id: str) -> list[int]:
        """The agent's observations from this conversation, in id order (the reflection's evidence)."""
        c = _MEMORY.c
        # Filter on session_id alone in SQL: with world_id/agent_id in the WHERE too, SQLite (no ANALYZE stats)
        # picks the low-selectivity world_id index and scans every memory of the world.
        query = (
            core_select(c.id, c.world_id, c.agent_id, c.type).where(c.session_id == session_id).order_by(c.id)
        )
        with self.engine.connect() as conn:
            found = conn.execute(query).all()
        return [int(i) for i, world, agent, kind in found if (world, agent, kind) == (*key, "observation")]

    # --- person memory ---
    def person(self, key: Key, other_id: str, *, session: Transaction | None = None) -> PersonMemory | None:
        """The agent's record of `other_id`, read in `session` when given (a turn reads all it needs in one)."""
        params = {"world_id": key[0], "agent_id": key[1], "other_id": other_id}
        bind = session if session is not None else self.engine
        return table_rows.first(bind, _ONE_PERSON, params, PersonMemory)

    def people(self, key: Key) -> list[PersonMemory]:
        """Everyone the agent remembers, most recently met first."""
        with Session(self.engine, expire_on_commit=False) as session:
            found = session.exec(
                select(PersonMemory)
                .where(PersonMemory.world_id == key[0], PersonMemory.agent_id == key[1])
                .order_by(
                    col(PersonMemory.last_met_day).desc(),
                    col(PersonMemory.last_met_time_of_day).desc(),
                    col(PersonMemory.id).desc(),
                )
            ).all()
        return list(found)

    def forget_people(self, key: Key) -> int:
        """Drop what a deleted agent knew of people (others keep their memories of it)."""
        statement = delete(_PEOPLE).where(_PEOPLE.c.world_id == key[0], _PEOPLE.c.agent_id == key[1])
        with self.engine.begin() as conn:
            return int(conn.execute(statement).rowcount or 0)

    def save_person(self, row: PersonMemory) -> PersonMemory:
        """Insert or update the record with one Core statement (the ORM's merge read it twice more)."""
        row.updated_at = utcnow()
        values = table_rows.values_of(row)
        with self.engine.begin() as conn:
            if row.id is None:
                row.id = int(conn.execute(_INSERT_PERSON, values).scalar_one())
            else:
                conn.execute(_UPDATE_PERSON, {**values, "person_id": row.id})
        return row


def bump(conn: Connection, key: Key, *, deleted: bool = False) -> int:
    """Raise the agent's revision in the caller's transaction and return it. A write runs it before touching
    any memory row: the stamp row's lock then orders one agent's writers (ids grow with revisions)."""
    dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
    new = _STAMP.c.rev + 1
    statement = dialect.insert(_STAMP).values(
        world_id=key[0], agent_id=key[1], rev=1, deleted_rev=1 if deleted else 0
    )
    statement = statement.on_conflict_do_update(
        index_elements=[_STAMP.c.world_id, _STAMP.c.agent_id],
        set_={"rev": new, "deleted_rev": new if deleted else _STAMP.c.deleted_rev},
    )
    return int(conn.execute(statement.returning(_STAMP.c.rev)).scalar_one())


def replace_world(session: Transaction, world_id: str) -> None:
    """Note in the caller's transaction that every memory of the world is being replaced (an import): every
    process's index of one of its agents reloads in full."""
    bump(session.connection(), (world_id, WORLD_STAMP))


def relationship_counts(session: Transaction, world_id: str) -> tuple[int, int]:
    """The world's agents, and the ordered pairs of them (A, B) in which A has a person memory of B."""
    agent_ids = select(Agent.id).where(Agent.world_id == world_id)
    agents = session.exec(select(func.count()).select_from(Agent).where(Agent.world_id == world_id)).one()
    pairs = session.exec(
        select(func.count())
        .select_from(PersonMemory)
        .where(
            PersonMemory.world_id == world_id,
            col(PersonMemory.agent_id) != col(PersonMemory.other_id),
            col(PersonMemory.agent_id).in_(agent_ids),
            col(PersonMemory.other_id).in_(agent_ids),
        )
    ).one()
    return int(agents), int(pairs)


def _merged_values(row: Memory) -> dict[str, Any]:
    return {
        "memory_id": row.id,
        "new_importance": row.importance,
        "new_source": row.importance_source,
        "accessed_day": row.last_accessed_day,
        "accessed_time": row.last_accessed_time_of_day,
        "accessed_at": row.last_accessed_at,
        "evidence": list(row.evidence_ids),
        "rev": row.rev,
    }


def _ids_params(key: Key, ids: Sequence[int]) -> dict[str, Any]:
    return {"world_id": key[0], "agent_id": key[1], "ids": list(ids)}


def _page_filters(
    key: Key,
    types: Sequence[str] | None,
    q: str | None,
    min_importance: int | None,
    until: tuple[int, float] | None,
) -> list[Any]:
    filters: list[Any] = [Memory.world_id == key[0], Memory.agent_id == key[1]]
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
    return filters


# Built once (retrieval, ratings and every stored memory run these all the time).
_WITH_IDS = (
    col(Memory.world_id) == bindparam("world_id"),
    col(Memory.agent_id) == bindparam("agent_id"),
    col(Memory.id).in_(bindparam("ids", expanding=True)),
)
_BY_IDS = select(Memory).where(*_WITH_IDS)
_BY_IDS_WITHOUT_VECTOR = _BY_IDS.options(defer(Memory.embedding, raiseload=True))  # type: ignore[arg-type]
_EXISTING_IDS = select(Memory.id).where(*_WITH_IDS)
_TAGS_OF_IDS = select(Memory.id, Memory.tags).where(*_WITH_IDS)
_SET_IMPORTANCE = (
    update(_MEMORY)
    .where(
        _MEMORY.c.id == bindparam("memory_id"),
        _MEMORY.c.world_id == bindparam("of_world"),
        _MEMORY.c.agent_id == bindparam("of_agent"),
        _MEMORY.c.content == bindparam("read_content"),
        _MEMORY.c.importance_source == "provisional",
    )
    .values(importance=bindparam("value"), importance_source=bindparam("source"), rev=bindparam("rev"))
)
_SAVE_EMBEDDING = (
    update(_MEMORY)
    .where(_MEMORY.c.id == bindparam("memory_id"))
    .values(embedding=bindparam("blob"), rev=bindparam("rev"), embedder=bindparam("embedder"))
)


def _stale(embedder: str) -> Any:
    """Memories whose vector is not `embedder`'s (none yet, or another embedder's)."""
    return or_(_MEMORY.c.embedder.is_(None), _MEMORY.c.embedder != embedder)


_SAVE_MERGED = (
    update(_MEMORY)
    .where(_MEMORY.c.id == bindparam("memory_id"))
    .values(
        importance=bindparam("new_importance"),
        importance_source=bindparam("new_source"),
        last_accessed_day=bindparam("accessed_day"),
        last_accessed_time_of_day=bindparam("accessed_time"),
        last_accessed_at=bindparam("accessed_at"),
        evidence_ids=bindparam("evidence", type_=_MEMORY.c.evidence_ids.type),
        rev=bindparam("rev"),
    )
)
#: An agent's stamp row and its world's.
_STAMPS = core_select(_STAMP.c.agent_id, _STAMP.c.rev, _STAMP.c.deleted_rev).where(
    _STAMP.c.world_id == bindparam("world_id"),
    or_(_STAMP.c.agent_id == bindparam("agent_id"), _STAMP.c.agent_id == WORLD_STAMP),
)
_OF_AGENT = (_MEMORY.c.world_id == bindparam("world_id"), _MEMORY.c.agent_id == bindparam("agent_id"))
# The newest reflections only: a repeated insight repeats a recent one, and the whole history would make every
# new reflection cost more the longer the world runs.
_REFLECTIONS = (
    core_select(*_MATCHED_ON)
    .where(*_OF_AGENT, _MEMORY.c.type == "reflection")
    .order_by(_MEMORY.c.id.desc())
    .limit(bindparam("pool", type_=Integer))
)
# An observation only merges with one of the same conversation (or, without one, with another session-less
# one): asking for just those keeps the query small however long the stream grows.
_IN_DAYS = (_MEMORY.c.created_day >= bindparam("first_day"), _MEMORY.c.created_day <= bindparam("last_day"))
_OBSERVATIONS_OF = core_select(*_MATCHED_ON).where(
    *_OF_AGENT,
    _MEMORY.c.type == "observation",
    _MEMORY.c.session_id.in_(bindparam("sessions", expanding=True)),
    *_IN_DAYS,
)
_OBSERVATIONS_WITHOUT_SESSION = core_select(*_MATCHED_ON).where(
    *_OF_AGENT, _MEMORY.c.type == "observation", _MEMORY.c.session_id.is_(None), *_IN_DAYS
)
#: One person memory (read on every turn).
_ONE_PERSON = core_select(_PEOPLE).where(
    _PEOPLE.c.world_id == bindparam("world_id"),
    _PEOPLE.c.agent_id == bindparam("agent_id"),
    _PEOPLE.c.other_id == bindparam("other_id"),
)
_INSERT_PERSON = insert(_PEOPLE).returning(_PEOPLE.c.id)
_UPDATE_PERSON = update(_PEOPLE).where(_PEOPLE.c.id == bindparam("person_id"))
