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

from backend.gametime import from_game_minutes, game_minutes, utcnow
from backend.memory.models import Key, Memory
from backend.memory.repo import MemoryRepo
from backend.memory.settings import MemorySettings
from backend.memory.tags import memory_tags
from backend.text import jaccard, normalise

log = logging.getLogger(__name__)
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
class Deduplicated:
    """Incoming rows sorted out: those to insert, and those merged into a memory already there."""

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


def deduplicate(repo: MemoryRepo, key: Key, rows: Sequence[Memory], settings: MemorySettings) -> Deduplicated:
    """Split incoming rows into rows to store and merges. Run under the agent's writer lock."""
    result = Deduplicated()
    for row in rows:
        tags_of(row)
    if not settings.dedup:
        result.fresh, result.rows = list(rows), list(rows)
        return result
    pool = _candidates(repo, key, rows, settings)
    for row in rows:
        target = _match(row, pool, settings)
        if target is None:
            result.fresh.append(row)
            result.rows.append(row)
            pool.append(_candidate(row, row))
            continue
        if target.row is None:
            target.row = repo.by_ids(key, [target.id or 0])[target.id or 0]
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


def _candidates(
    repo: MemoryRepo, key: Key, rows: Sequence[Memory], settings: MemorySettings
) -> list[Candidate]:
    """Stored memories that could absorb one of the rows (read without their vectors)."""
    kinds = {row.type for row in rows} & set(DEDUP_TYPES)
    if not kinds:
        return []
    pool = DEDUP_REFLECTION_POOL if "reflection" in kinds else None
    observed = [row for row in rows if row.type == "observation"]
    days = None
    if observed:
        window_days = int(settings.dedup_window_hours // 24) + 1
        created = [row.created_day for row in observed]
        days = (min(created) - window_days, max(created) + window_days)
    found = repo.dedup_candidates(key, pool, days, {row.session_id for row in observed})
    return [_stored(values) for values in found]


def _stored(v: dict[str, Any]) -> Candidate:
    minutes = game_minutes(v["created_day"], v["created_time_of_day"])
    tags = frozenset(v["tags"] or [])
    return Candidate(v["id"], v["type"], tags, minutes, v["session_id"], normalise(v["content"]))


def _match(row: Memory, pool: list[Candidate], settings: MemorySettings) -> Candidate | None:
    if row.type not in DEDUP_TYPES:
        return None
    text = normalise(row.content)
    minutes = game_minutes(row.created_day, row.created_time_of_day)
    window = settings.dedup_window_hours * 60
    threshold = (
        settings.dedup_observation_jaccard if row.type == "observation" else settings.dedup_reflection_jaccard
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
        if not same and (similarity < threshold or shared < settings.dedup_min_shared):
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


def evict_over_cap(
    repo: MemoryRepo, key: Key, kind: str, settings: MemorySettings, keep: Sequence[int] = ()
) -> tuple[list[int], int]:
    """Delete the least important, least recently accessed memories of a type past its cap. Returns their ids
    and the revision of the deletion (0: none)."""
    cap = settings.cap(kind)
    if cap is None:
        return [], 0
    extra = max(1, int(cap * settings.evict_batch))
    count, ids, rev = repo.evict(key, kind, cap, extra, settings.evict_protect, keep)
    if count - len(ids) > cap:
        log.warning(
            "%s/%s holds %d %s memories over its cap of %d: the rest are protected (importance >= %d)",
            *key, count - len(ids), kind, cap, settings.evict_protect,
        )  # fmt: skip
    return ids, rev
