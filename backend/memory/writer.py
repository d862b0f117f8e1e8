"""The memory write path: deduplicate, embed, insert, evict past the caps, keep the index in step, publish.

Everything that touches one agent's rows runs under that agent's writer lock; the database work runs in a
worker thread, and the events go out afterwards on the event loop thread (subscribers are not thread-safe).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
from sqlmodel import Session

from backend.errors import LLMError
from backend.gametime import game_minutes
from backend.memory import hygiene, stream
from backend.memory.cache import Key
from backend.memory.index import AgentIndex, IndexRow
from backend.memory.models import Memory

if TYPE_CHECKING:
    from backend.memory.service import MemoryService

log = logging.getLogger(__name__)
#: Adds rows (jobs) to the transaction of freshly inserted memories, given the session and them with their ids.
FollowUp = Callable[[Session, list[Memory]], object]


async def store(
    service: MemoryService, key: Key, rows: list[Memory], follow_up: FollowUp | None = None
) -> hygiene.DedupPlan:
    """The write path. Events go out on the loop thread once the lock is released.

    `follow_up(session, stored_rows)` may add job rows: they are committed in the same transaction as the memories
    (so a crash cannot keep the memories and lose the jobs about them).
    """
    async with service.cache.writer_lock(key):
        plan = await asyncio.to_thread(hygiene.plan, service.engine, key, rows, service.settings)
        vectors = await _embed(service, plan.fresh)
        evicted = await asyncio.to_thread(_commit, service, key, plan, vectors, follow_up)
    service.cache.drop_if_sparse(key)
    service.events.created(plan.fresh)
    for merge in plan.merges:
        service.events.merged(merge.into, merge.dropped)
    service.events.updated(plan.stored_targets())
    for kind_ids in evicted.values():
        service.events.evicted(*key, kind_ids)
    return plan


async def _embed(service: MemoryService, rows: list[Memory]) -> np.ndarray | None:
    if not rows:
        return None
    try:
        vectors: np.ndarray = await service.embedder.embed([row.content for row in rows])
    except LLMError as exc:
        # Keep the memories; the index embeds them again when it next loads.
        log.warning("embedding failed, storing %d memories without vectors: %s", len(rows), exc)
        return None
    for row, vector in zip(rows, vectors, strict=True):
        row.embedding = np.asarray(vector, dtype=np.float32).tobytes()
    return vectors


def _under_cap(service: MemoryService, index: AgentIndex | None, kind: str, added: int) -> bool:
    """Whether the loaded index (which holds every memory of the agent) shows the type under its cap even
    with the rows just added, so the eviction's count query can be skipped."""
    cap = hygiene.cap_for(service.settings, kind)
    if cap is None:
        return True
    if index is None:
        return False
    with index.lock:
        return index.count(kind) + added <= cap


def _commit(
    service: MemoryService,
    key: Key,
    plan: hygiene.DedupPlan,
    vectors: np.ndarray | None,
    follow_up: FollowUp | None,
) -> dict[str, list[int]]:
    """Insert, write merges back, evict past the caps; keep the index in step. Returns evicted ids by type."""
    stored = stream.insert(service.engine, plan.fresh, follow_up) if plan.fresh else []
    targets = plan.stored_targets()
    if targets:
        hygiene.save_merged(service.engine, targets)
    new_ids = [row.id or 0 for row in stored]
    index = service.cache.peek(key)
    evicted = {
        kind: hygiene.evict_over_cap(service.engine, key, kind, service.settings, keep=new_ids)
        for kind in sorted({row.type for row in stored})
        if not _under_cap(service, index, kind, sum(row.type == kind for row in stored))
    }
    if index is None:
        return evicted
    entries = [
        IndexRow(
            row.id or 0,
            float(row.importance),
            game_minutes(row.last_accessed_day, row.last_accessed_time_of_day),
            row.type,
            row.content,
            None if vectors is None else vectors[i],
        )
        for i, row in enumerate(stored)
    ]
    with index.lock:
        index.append(entries)
        for row in targets:
            index.set_importance([row.id or 0], [float(row.importance)])
            index.touch([row.id or 0], game_minutes(row.last_accessed_day, row.last_accessed_time_of_day))
        for ids in evicted.values():
            index.remove(ids)
    return evicted
