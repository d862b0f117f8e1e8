"""Memory hygiene: merging near-duplicates and keeping each agent's memories under a cap per type.

Deduplication (before a row is stored):
- An observation merges into an earlier observation of the same agent whose game creation time is within
  `memory_dedup_window_hours` (24) of its own, whose tags have Jaccard >= `memory_dedup_observation_jaccard`
  (0.5), and which belongs to the same conversation (same `session_id`; both None for perceptions). Lines of
  two different conversations are two events even when they read alike ("two chats at the café"), and every
  line of a conversation stays available to its end-of-conversation reflection unless it repeats another.
- A reflection merges into one of the agent's DEDUP_REFLECTION_POOL (200) newest reflections whose tags have
  Jaccard >= `memory_dedup_reflection_jaccard` (0.6), whatever their ages and sessions (only the newest, so
  storing a reflection costs the same after a month of play as on the first day).
- The two must also share at least `memory_dedup_min_shared` (3) tags. Short tag sets make Jaccard coarse:
  "カフェでヒカリと話した" {カフェ, ヒカリ, 話し} and "ヒカリがカフェで笑っていた" {カフェ, ヒカリ, 笑っ} reach 0.5 on
  one place and one person. A wrong merge loses a memory for good, a missed one only costs space (the cap
  bounds it), so the rule errs towards keeping both.
- Memories whose normalised texts are equal merge whatever their tags (a repeated perception).
- Plans never merge (the planning concept replaces them itself).
- The most similar candidate wins (ties: the newest). Rows of the same batch can merge into each other.

A merge keeps the existing memory's content and tags unchanged (appending would grow one memory without bound
under repeated perceptions, and its embedding would no longer match its text); the incoming text is logged and
not stored. The kept memory takes the higher importance (an incoming provisional value does not count: it is a
placeholder, not a rating), its last access moves to the incoming memory's game time (never backwards), and a
reflection also gains the incoming reflection's evidence ids. The caller gets the kept memory back.

Caps (after a row is stored): when an agent holds more than `memory_cap_<type>` memories of a type, the least
important go first, and among equal importance the least recently accessed (game time), then the oldest id.
One eviction removes the excess plus `memory_evict_batch` of the cap, so the next inserts need none. Memories
with importance >= `memory_evict_protect` (8) are never evicted, nor are the rows just stored: when everything
left is protected, the cap is exceeded rather than losing them (logged as a warning).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Integer, bindparam, delete, func, update
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from backend.config import Settings
from backend.gametime import from_game_minutes, game_minutes, utcnow
from backend.memory import stream
from backend.memory.models import Memory
from backend.memory.tags import memory_tags
from backend.text import jaccard, normalise

log = logging.getLogger(__name__)
Key = tuple[str, str]
DEDUP_TYPES = ("observation", "reflection")
#: How many of an agent's newest reflections a new reflection is compared with.
DEDUP_REFLECTION_POOL = 200


@dataclass
class Candidate:
    """What matching needs of a memory that could absorb an incoming one."""

    id: int | None
    type: str
    tags: frozenset[str]
    minutes: float
    session_id: str | None
    text: str  # normalised content
    row: Memory | None = None  # loaded (or, for a row of the same batch, the row itself) once matched


@dataclass
class Merge:
    into: Memory  # the memory kept
    dropped: Memory  # the incoming row, not stored


@dataclass
class DedupPlan:
    fresh: list[Memory] = field(default_factory=list)  # rows to insert
    merges: list[Merge] = field(default_factory=list)
    rows: list[Memory] = field(default_factory=list)  # aligned with the input: the row or the one kept

    def stored_targets(self) -> list[Memory]:
        """Memories already in the database that a merge changed (each once)."""
        seen: dict[int, Memory] = {}
        for merge in self.merges:
            if merge.into.id is not None:
                seen[merge.into.id] = merge.into
        return list(seen.values())


def tags_of(row: Memory) -> list[str]:
    """The row's tags, extracted from its content when it has none."""
    if not row.tags:
        row.tags = memory_tags(row.content)
    return list(row.tags)


def plan(engine: Engine, key: Key, rows: Sequence[Memory], settings: Settings) -> DedupPlan:
    """Split incoming rows into rows to store and merges. Run under the agent's writer lock."""
    result = DedupPlan()
    for row in rows:
        tags_of(row)
    if not settings.memory_dedup:
        result.fresh, result.rows = list(rows), list(rows)
        return result
    pool = _candidates(engine, key, rows, settings)
    for row in rows:
        target = _match(row, pool, settings)
        if target is None:
            result.fresh.append(row)
            result.rows.append(row)
            pool.append(_candidate(row, row))
            continue
        if target.row is None:
            target.row = stream.by_ids(engine, *key, [target.id or 0])[target.id or 0]
        absorb(target.row, row)
        result.merges.append(Merge(target.row, row))
        result.rows.append(target.row)
    return result


def _candidate(row: Memory, loaded: Memory | None = None) -> Candidate:
    return Candidate(
        row.id,
        row.type,
        frozenset(row.tags or []),
        game_minutes(row.created_day, row.created_time_of_day),
        row.session_id,
        normalise(row.content),
        loaded,
    )


_MEMORY = Memory.__table__  # type: ignore[attr-defined]
_COLUMNS = [_MEMORY.c[name] for name in ("id", "type", "tags", "created_day", "created_time_of_day",
                                         "session_id", "content")]  # fmt: skip
_OF_AGENT = (_MEMORY.c.world_id == bindparam("world_id"), _MEMORY.c.agent_id == bindparam("agent_id"))
# Built once (they run for every stored memory). The newest reflections only: a repeated insight repeats a
# recent one, and the whole history would make every new reflection cost more the longer the world runs.
_REFLECTIONS = (
    select(*_COLUMNS)
    .where(*_OF_AGENT, _MEMORY.c.type == "reflection")
    .order_by(_MEMORY.c.id.desc())
    .limit(bindparam("pool", type_=Integer))
)
# An observation only merges with one of the same conversation (or, without one, with another session-less
# one): asking for just those keeps the query small however long the stream grows.
_IN_DAYS = (_MEMORY.c.created_day >= bindparam("first_day"), _MEMORY.c.created_day <= bindparam("last_day"))
_OBSERVATIONS_OF = select(*_COLUMNS).where(
    *_OF_AGENT,
    _MEMORY.c.type == "observation",
    _MEMORY.c.session_id.in_(bindparam("sessions", expanding=True)),
    *_IN_DAYS,
)
_OBSERVATIONS_WITHOUT_SESSION = select(*_COLUMNS).where(
    *_OF_AGENT, _MEMORY.c.type == "observation", _MEMORY.c.session_id.is_(None), *_IN_DAYS
)


def _candidates(engine: Engine, key: Key, rows: Sequence[Memory], settings: Settings) -> list[Candidate]:
    """Stored memories that could absorb one of the rows (only the columns matching needs)."""
    kinds = {row.type for row in rows} & set(DEDUP_TYPES)
    if not kinds:
        return []
    agent = {"world_id": key[0], "agent_id": key[1]}
    queries: list[tuple[Any, dict[str, Any]]] = []
    if "reflection" in kinds:
        queries.append((_REFLECTIONS, {**agent, "pool": DEDUP_REFLECTION_POOL}))
    days = [row.created_day for row in rows if row.type == "observation"]
    if days:
        window_days = int(settings.memory_dedup_window_hours // 24) + 1
        span = {**agent, "first_day": min(days) - window_days, "last_day": max(days) + window_days}
        sessions = {row.session_id for row in rows if row.type == "observation"}
        named = sorted(s for s in sessions if s is not None)
        if named:
            queries.append((_OBSERVATIONS_OF, {**span, "sessions": named}))
        if None in sessions:
            queries.append((_OBSERVATIONS_WITHOUT_SESSION, span))
    with engine.connect() as conn:  # Core rows
        found = [found_row for query, params in queries for found_row in conn.execute(query, params).all()]
    return [
        Candidate(memory_id, kind, frozenset(tags or []), game_minutes(day, tod), session_id, normalise(text))
        for memory_id, kind, tags, day, tod, session_id, text in found
    ]


def _match(row: Memory, pool: list[Candidate], settings: Settings) -> Candidate | None:
    if row.type not in DEDUP_TYPES:
        return None
    text = normalise(row.content)
    minutes = game_minutes(row.created_day, row.created_time_of_day)
    window = settings.memory_dedup_window_hours * 60
    threshold = (
        settings.memory_dedup_observation_jaccard
        if row.type == "observation"
        else settings.memory_dedup_reflection_jaccard
    )
    best: tuple[float, float, int] | None = None
    chosen = None
    for position, cand in enumerate(pool):
        if cand.type != row.type:
            continue
        if row.type == "observation" and (
            cand.session_id != row.session_id or abs(cand.minutes - minutes) > window
        ):
            continue
        same = cand.text == text
        similarity = 1.0 if same else jaccard(row.tags, cand.tags)
        shared = len(cand.tags & set(row.tags))
        if not same and (similarity < threshold or shared < settings.memory_dedup_min_shared):
            continue
        rank = (similarity, cand.minutes, position)
        if best is None or rank > best:
            best, chosen = rank, cand
    return chosen


def absorb(kept: Memory, incoming: Memory) -> None:
    """Fold an incoming duplicate into the kept memory (see the module docstring)."""
    if incoming.importance_source != "provisional":
        if kept.importance_source == "provisional":  # a rating beats a placeholder
            kept.importance, kept.importance_source = incoming.importance, incoming.importance_source
        elif incoming.importance > kept.importance:
            kept.importance, kept.importance_source = incoming.importance, incoming.importance_source
    seen = game_minutes(incoming.created_day, incoming.created_time_of_day)
    if seen > game_minutes(kept.last_accessed_day, kept.last_accessed_time_of_day):
        kept.last_accessed_day, kept.last_accessed_time_of_day = from_game_minutes(seen)
    kept.last_accessed_at = utcnow()
    if kept.type == "reflection" and incoming.evidence_ids:
        kept.evidence_ids = list(dict.fromkeys([*kept.evidence_ids, *incoming.evidence_ids]))


def save_merged(engine: Engine, rows: Sequence[Memory]) -> None:
    """Write back what `absorb` changed in stored memories: one executemany of a statement built once."""
    if not rows:
        return
    values = [
        {
            "memory_id": row.id,
            "new_importance": row.importance,
            "new_source": row.importance_source,
            "accessed_day": row.last_accessed_day,
            "accessed_time": row.last_accessed_time_of_day,
            "accessed_at": row.last_accessed_at,
            "evidence": list(row.evidence_ids),
        }
        for row in rows
    ]
    with engine.begin() as conn:
        conn.execute(_SAVE_MERGED, values)


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
    )
)


def cap_for(settings: Settings, kind: str) -> int | None:
    value = getattr(settings, f"memory_cap_{kind}", None)
    return int(value) if value is not None else None


def evict_over_cap(
    engine: Engine, key: Key, kind: str, settings: Settings, keep: Sequence[int] = ()
) -> list[int]:
    """Delete the least important, least recently accessed memories of a type past its cap. Returns their ids."""
    cap = cap_for(settings, kind)
    if cap is None:
        return []
    base = (Memory.world_id == key[0], Memory.agent_id == key[1], Memory.type == kind)
    with Session(engine) as session:
        count = int(session.exec(select(func.count()).select_from(Memory).where(*base)).one())
        if count <= cap:
            return []
        excess = count - cap + max(1, int(cap * settings.memory_evict_batch))
        ids = list(
            session.exec(
                select(Memory.id)
                .where(
                    *base,
                    col(Memory.importance) < settings.memory_evict_protect,
                    col(Memory.id).not_in(list(keep)),
                )  # fmt: skip
                .order_by(
                    col(Memory.importance),
                    col(Memory.last_accessed_day),
                    col(Memory.last_accessed_time_of_day),
                    col(Memory.id),
                )
                .limit(excess)
            ).all()
        )
        if ids:
            session.exec(delete(Memory).where(col(Memory.id).in_(ids)))
            session.commit()
    if count - len(ids) > cap:
        log.warning(
            "%s/%s holds %d %s memories over its cap of %d: the rest are protected (importance >= %d)",
            *key, count - len(ids), kind, cap, settings.memory_evict_protect,
        )  # fmt: skip
    return [int(i) for i in ids if i is not None]
