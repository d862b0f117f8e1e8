"""The memory write path: deduplicate, embed, insert, evict past the caps, keep the index in step, publish.

`MemoryWriter.write` is the one way memories (stored by callers, reflections, insights) reach the database.
Everything that touches one agent's rows runs under that agent's writer lock; the database work runs in a
worker thread, and the events go out afterwards on the event loop thread (subscribers are not thread-safe).
Several agents' rows can be written at once (both speakers remember a line): their locks taken in key order,
one transaction for every agent's rows and jobs.
"""

from __future__ import annotations

import asyncio
import logging
from contextlib import AsyncExitStack
from dataclasses import dataclass, field

import numpy as np

from backend.errors import LLMError
from backend.gametime import game_minutes
from backend.llm.base import Embedder
from backend.memory import embedding, hygiene
from backend.memory.cache import IndexCache
from backend.memory.index import AgentIndex, IndexRow
from backend.memory.models import VISITOR_TAG, Key, Memory
from backend.memory.notify import MemoryEvents
from backend.memory.repo import FollowUp, MemoryRepo
from backend.memory.settings import MemorySettings

log = logging.getLogger(__name__)


@dataclass
class Batch:
    """One agent's rows to store, with the follow-up that adds jobs about them to the transaction."""

    key: Key
    rows: list[Memory]
    follow_up: FollowUp | None = None
    written: hygiene.Deduplicated = field(default_factory=hygiene.Deduplicated)
    vectors: np.ndarray | None = None


class MemoryWriter:
    """Stores memories: the write path of the module docstring."""

    def __init__(
        self,
        repo: MemoryRepo,
        cache: IndexCache,
        embedder: Embedder,
        events: MemoryEvents,
        settings: MemorySettings,
    ) -> None:
        self.repo = repo
        self.cache = cache
        self.embedder = embedder
        self.events = events
        self.settings = settings

    async def write(self, batches: list[Batch]) -> list[hygiene.Deduplicated]:
        """Store each batch's rows: one dedup hop, one embedding call and one transaction for all of them.
        Holds every agent's writer lock, taken in key order (so two writers of overlapping agents cannot
        deadlock). Returns each batch's outcome, in order: `.rows` has one memory per row given (the stored
        row or the existing memory it merged into), `.fresh` the rows actually inserted.

        A batch's `follow_up(session, stored_rows)` may add job rows: they are committed in the same
        transaction as the memories (so a crash cannot keep the memories and lose the jobs about them)."""
        async with AsyncExitStack() as held:
            for key in sorted({batch.key for batch in batches}):
                await held.enter_async_context(self.cache.writer_lock(key))
            written = await asyncio.to_thread(
                lambda: [hygiene.deduplicate(self.repo, b.key, b.rows, self.settings) for b in batches]
            )
            fresh = [outcome.fresh for outcome in written]
            vectors = await self._embed(await asyncio.to_thread(self._passages, batches, fresh), fresh)
            start = 0
            for batch, outcome in zip(batches, written, strict=True):
                batch.written = outcome
                batch.follow_up = embedding.with_job(batch.key[0], batch.follow_up)
                if vectors is not None:
                    batch.vectors = vectors[start : start + len(outcome.fresh)]
                start += len(outcome.fresh)
            evicted = await asyncio.to_thread(self._commit, batches)
        for batch, gone in zip(batches, evicted, strict=True):
            self._publish(batch, gone)
        return written

    def _publish(self, batch: Batch, gone: dict[str, list[int]]) -> None:
        self.cache.drop_if_sparse(batch.key)
        self.events.created(batch.written.fresh)
        for merge in batch.written.merges:
            self.events.merged(merge.into, merge.dropped)
        self.events.updated(batch.written.stored_targets())
        for kind_ids in gone.values():
            self.events.evicted(*batch.key, kind_ids)

    def _passages(self, batches: list[Batch], fresh: list[list[Memory]]) -> list[str]:
        """What to embed for each fresh row, in order: its text after the one before it in its episode
        (embedding.passages), the agent's newest stored memory being the one before a batch's first."""
        if sum(len(rows) for rows in fresh) > embedding.INLINE_MAX:
            return []  # left to the embed job
        texts: list[str] = []
        for batch, rows in zip(batches, fresh, strict=True):
            if rows:
                texts += embedding.passages(rows, self.repo.last(batch.key))
        return texts

    async def _embed(self, texts: list[str], fresh: list[list[Memory]]) -> np.ndarray | None:
        """Embed the fresh rows (their `texts`); None when none are, this time: a large write, or the embedder
        failed (the rows stay unembedded, and their batch's follow-up adds the embed job)."""
        rows = [row for batch in fresh for row in batch]
        if not rows or not texts:
            return None
        try:
            vectors: np.ndarray = await self.embedder.embed(texts)
        except LLMError as exc:
            log.warning("embedding failed, storing %d memories without vectors: %s", len(rows), exc)
            return None
        identity = self.embedder.identity
        for row, vector in zip(rows, vectors, strict=True):
            row.embedding = np.asarray(vector, dtype=np.float32).tobytes()
            row.embedder = identity
        return vectors

    def _under_cap(self, index: AgentIndex | None, kind: str, added: int) -> bool:
        """Whether the loaded index (which holds every memory of the agent) shows the type under its cap even
        with the rows just added, so the eviction's count query can be skipped."""
        cap = self.settings.cap(kind)
        if cap is None:
            return True
        if index is None:
            return False
        with index.lock:
            return index.count(kind) + added <= cap

    def _commit(self, batches: list[Batch]) -> list[dict[str, list[int]]]:
        """Insert every batch's fresh rows and their follow-up jobs in one transaction; then per batch write
        merges back, evict past the caps and keep the index in step. Returns each batch's evicted ids by type."""
        revs = self.repo.insert([(batch.written.fresh, batch.follow_up) for batch in batches])
        return [self._settle(batch, revs.get(batch.key, 0)) for batch in batches]

    def _settle(self, batch: Batch, inserted: int) -> dict[str, list[int]]:
        """After the insert (revision `inserted`, 0: none): merges written back, eviction past the caps, the
        index brought in step."""
        key, stored, vectors = batch.key, batch.written.fresh, batch.vectors
        targets = batch.written.stored_targets()
        revs = [inserted, self.repo.save_merged(key, targets)]
        new_ids = [row.id or 0 for row in stored]
        index = self.cache.peek(key)
        # Another process's rows since the index's revision would be missing from its counts.
        counted = index if index is not None and index.rev == inserted - 1 else None
        evicted = {}
        for kind in sorted({row.type for row in stored}):
            if not self._under_cap(counted, kind, sum(row.type == kind for row in stored)):
                evicted[kind], rev = hygiene.evict_over_cap(self.repo, key, kind, self.settings, keep=new_ids)
                revs.append(rev)
        if index is not None and not _bring_in_step(index, stored, vectors, targets, evicted, revs):
            self.cache.drop(key)
        return evicted


def _bring_in_step(
    index: AgentIndex,
    stored: list[Memory],
    vectors: np.ndarray | None,
    targets: list[Memory],
    evicted: dict[str, list[int]],
    revs: list[int],
) -> bool:
    """The loaded index after a write (revisions `revs`, 0: none): the new rows appended, merge targets
    updated, evicted rows removed. False when the rows do not fit the index (it must be reloaded)."""
    entries = [
        IndexRow(
            row.id or 0,
            float(row.importance),
            game_minutes(row.last_accessed_day, row.last_accessed_time_of_day),
            row.type,
            row.content,
            None if vectors is None else vectors[i],
            row.rev,
            game_minutes(row.created_day, row.created_time_of_day),
            row.session_id,
            VISITOR_TAG in (row.tags or ()),
        )
        for i, row in enumerate(stored)
    ]
    with index.lock:
        if not index.apply(entries):
            return False
        for row in targets:
            index.set_importance([row.id or 0], [float(row.importance)], row.rev)
            index.touch([row.id or 0], game_minutes(row.last_accessed_day, row.last_accessed_time_of_day))
        for ids in evicted.values():
            index.remove(ids)
        for rev in sorted(rev for rev in revs if rev):
            index.advance(rev)
    return True
