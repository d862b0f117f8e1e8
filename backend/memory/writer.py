"""The memory write path: deduplicate, embed, insert, evict past the caps, keep the index in step, publish.

Everything that touches one agent's rows runs under that agent's writer lock; the database work runs in a
worker thread, and the events go out afterwards on the event loop thread (subscribers are not thread-safe).
`store_many` writes several agents' rows at once (both speakers remember a line): their locks taken in key
order, one transaction for every agent's rows and jobs.
"""

from __future__ import annotations

import asyncio
import logging
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from backend.errors import LLMError
from backend.gametime import game_minutes
from backend.memory import hygiene, stream
from backend.memory.cache import Key
from backend.memory.index import AgentIndex, IndexRow
from backend.memory.models import Memory
from backend.memory.stream import FollowUp

if TYPE_CHECKING:
    from backend.memory.service import MemoryService

log = logging.getLogger(__name__)


@dataclass
class Batch:
    """One agent's rows to store, with the follow-up that adds jobs about them to the transaction."""

    key: Key
    rows: list[Memory]
    follow_up: FollowUp | None = None
    plan: hygiene.DedupPlan = field(default_factory=hygiene.DedupPlan)
    vectors: np.ndarray | None = None


async def store(
    service: MemoryService, key: Key, rows: list[Memory], follow_up: FollowUp | None = None
) -> hygiene.DedupPlan:
    """The write path. Events go out on the loop thread once the lock is released.

    `follow_up(session, stored_rows)` may add job rows: they are committed in the same transaction as the memories
    (so a crash cannot keep the memories and lose the jobs about them).
    """
    return (await store_many(service, [Batch(key, rows, follow_up)]))[0]


async def store_many(service: MemoryService, batches: list[Batch]) -> list[hygiene.DedupPlan]:
    """`store` for several agents at once (a conversation line is remembered by both speakers): one planning
    hop, one embedding call and one transaction for all of them. Holds every agent's writer lock, taken in key
    order (so two writers of overlapping agents cannot deadlock). Returns each batch's plan, in order."""
    async with AsyncExitStack() as held:
        for key in sorted({batch.key for batch in batches}):
            await held.enter_async_context(service.cache.writer_lock(key))
        plans = await asyncio.to_thread(
            lambda: [hygiene.plan(service.engine, b.key, b.rows, service.settings) for b in batches]
        )
        fresh = [row for plan in plans for row in plan.fresh]
        vectors = await _embed(service, fresh)
        start = 0
        for batch, plan in zip(batches, plans, strict=True):
            batch.plan = plan
            if vectors is not None:
                batch.vectors = vectors[start : start + len(plan.fresh)]
            start += len(plan.fresh)
        evicted = await asyncio.to_thread(_commit, service, batches)
    for batch, gone in zip(batches, evicted, strict=True):
        service.cache.drop_if_sparse(batch.key)
        service.events.created(batch.plan.fresh)
        for merge in batch.plan.merges:
            service.events.merged(merge.into, merge.dropped)
        service.events.updated(batch.plan.stored_targets())
        for kind_ids in gone.values():
            service.events.evicted(*batch.key, kind_ids)
    return plans


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


def _commit(service: MemoryService, batches: list[Batch]) -> list[dict[str, list[int]]]:
    """Insert every batch's fresh rows and their follow-up jobs in one transaction; then per batch write merges
    back, evict past the caps and keep the index in step. Returns each batch's evicted ids by type."""
    stream.insert(service.engine, [(batch.plan.fresh, batch.follow_up) for batch in batches])
    return [_settle(service, batch) for batch in batches]


def _settle(service: MemoryService, batch: Batch) -> dict[str, list[int]]:
    """After the insert: merges written back, eviction past the caps, the index brought in step."""
    key, stored, vectors = batch.key, batch.plan.fresh, batch.vectors
    targets = batch.plan.stored_targets()
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
