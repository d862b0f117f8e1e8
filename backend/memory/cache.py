"""The per-(world, agent) index cache: loaded lazily from the database, kept in step with every write.

Writers for one agent (load, insert) are serialised by a per-agent asyncio lock, so ids reach an index in
increasing order and a load never races an insert into a duplicate row. The arrays themselves are guarded by
`AgentIndex.lock` (a thread lock) because scoring and updates run in worker threads.
"""

from __future__ import annotations

import asyncio
import logging

import numpy as np

from backend.errors import LLMError
from backend.llm.base import Embedder
from backend.memory.index import AgentIndex
from backend.memory.models import Key
from backend.memory.repo import MemoryRepo

log = logging.getLogger(__name__)

#: An index with more tombstones than this share is dropped and rebuilt from the database on next use.
MAX_DEAD_SHARE = 0.25


class IndexCache:
    def __init__(self, repo: MemoryRepo, embedder: Embedder) -> None:
        self.repo = repo
        self.embedder = embedder
        self._indexes: dict[Key, AgentIndex] = {}
        self._locks: dict[Key, asyncio.Lock] = {}

    def writer_lock(self, key: Key) -> asyncio.Lock:
        """The lock every writer of this agent's memories holds (see module docstring)."""
        lock = self._locks.get(key)
        if lock is None:
            lock = self._locks[key] = asyncio.Lock()
        return lock

    def peek(self, key: Key) -> AgentIndex | None:
        return self._indexes.get(key)

    def drop(self, key: Key) -> None:
        self._indexes.pop(key, None)

    def drop_world(self, world_id: str) -> None:
        """Forget every cached index of a world (its rows were replaced)."""
        for key in [key for key in list(self._indexes) if key[0] == world_id]:
            self.drop(key)

    def drop_if_sparse(self, key: Key) -> None:
        index = self._indexes.get(key)
        if index is not None and index.dead > max(64, index.size * MAX_DEAD_SHARE):
            self.drop(key)

    async def get(self, key: Key) -> AgentIndex:
        """The agent's index, loading it from the database the first time."""
        index = self._indexes.get(key)
        if index is not None:
            return index
        async with self.writer_lock(key):
            index = self._indexes.get(key)
            if index is None:
                index = await self._load(key)
                self._indexes[key] = index
        return index

    async def _load(self, key: Key) -> AgentIndex:
        rows, stale = await asyncio.to_thread(self.repo.index_rows, key, self.embedder.dim)
        if stale:
            # Memories stored while the embedder was down, or under another embedder: embed them now.
            by_id = {row.id: row for row in rows}
            try:
                vectors = await self.embedder.embed([by_id[i].content for i in stale])
            except LLMError as exc:
                log.warning("cannot embed %d memories of %s/%s: %s", len(stale), *key, exc)
            else:
                for memory_id, vector in zip(stale, vectors, strict=True):
                    by_id[memory_id].vector = vector
                blobs = {
                    i: np.asarray(v, dtype=np.float32).tobytes() for i, v in zip(stale, vectors, strict=True)
                }
                await asyncio.to_thread(self.repo.save_embeddings, blobs)
        index = AgentIndex(self.embedder.dim, capacity=max(64, len(rows)))
        await asyncio.to_thread(index.append, rows)
        return index
