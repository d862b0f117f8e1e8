"""The per-(world, agent) index cache: loaded lazily from the database, and fresh on every read even when
other processes (API servers, `machi worker`) write the same agent's memories.

Freshness across processes. Every write of an agent's memories (insert, rating, dedup merge, access time,
embedding, deletion, eviction) raises the agent's revision in `memorystamp` in the same transaction and
stamps the rows it inserts or changes with it (`Memory.rev`); a deletion also records its revision as
`deleted_rev`, and a world import raises the world's own stamp row. Each `get` asks for the stamp (one
primary-key lookup, as `AgentCache` asks for `updated_at`) and then:
- unchanged: the index as it is (no other query);
- moved on: reads only the rows with `rev` above the index's (`ix_memory_world_agent_rev`) and applies them
  (`AgentIndex.apply`: new ids appended, importance / access time / a missing vector of held ones updated);
  past a deletion it also reads the agent's ids (no vectors, no texts) and drops the held ones that went;
- the world replaced, the revision lower than held, or a row that cannot be placed: a full reload.
This process's own writes apply their change to the index directly and then `advance` it to the write's
revision when it held the one before, so they cost no read; if another writer came in between, the next
`get` reads the few rows since (applying is idempotent, and per-row revisions keep an older read from
undoing a newer own rating).

Access times bump the revision too. Every retrieval marks its winners accessed, so another process serving
the same agent does one small read (the k rows touched) on its next retrieval; in exchange every process
ranks with the same recency. The cost is small because that read happens anyway in practice: after each
turn the worker stores the agent's ratings, which bump it. The touch's stamp update shares the UPDATE's
transaction, so it adds one statement, not a commit.

Writers for one agent in this process (load, refresh, insert) are serialised by a per-agent asyncio lock, so
ids reach an index in increasing order and a load never races an insert into a duplicate row; across
processes the stamp row's lock (taken first by every write) orders them, so ids grow with revisions. The
arrays themselves are guarded by `AgentIndex.lock` (a thread lock) because scoring and updates run in worker
threads.
"""

from __future__ import annotations

import asyncio
import logging

from backend.llm.base import Embedder
from backend.memory.index import AgentIndex
from backend.memory.models import Key
from backend.memory.repo import MemoryRepo, Stamp

log = logging.getLogger(__name__)

#: An index with more tombstones than this share is dropped and rebuilt from the database on next use.
MAX_DEAD_SHARE = 0.25


class IndexCache:
    def __init__(self, repo: MemoryRepo, embedder: Embedder) -> None:
        self.repo = repo
        self.embedder = embedder
        self._indexes: dict[Key, AgentIndex] = {}
        self._locks: dict[Key, asyncio.Lock] = {}
        self.loads = 0  # full loads from the database (for tests and the curious)
        self.refreshes = 0  # reads of the rows another process wrote

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
        if index is not None and _sparse(index):
            self.drop(key)

    async def get(self, key: Key) -> AgentIndex:
        """The agent's index as of the database now: loaded the first time, brought up to date with what other
        processes wrote since (module docstring)."""
        index = self._indexes.get(key)
        if index is not None and _current(index, await asyncio.to_thread(self.repo.stamp, key)):
            return index
        async with self.writer_lock(key):
            stamp = await asyncio.to_thread(self.repo.stamp, key)
            index = self._indexes.get(key)
            if index is not None and not _current(index, stamp):
                caught_up = await asyncio.to_thread(self._catch_up, key, index, stamp)
                index = index if caught_up else None
            if index is None:
                index = self._indexes[key] = await self._load(key, stamp)
        return index

    def _catch_up(self, key: Key, index: AgentIndex, stamp: Stamp) -> bool:
        """Apply what was written since the index's revision; False when only a full reload will do."""
        since = index.rev
        if stamp.world_rev != index.world_rev or stamp.rev < since:
            return False
        rows, _ = self.repo.index_rows(key, self.embedder.identity, self.embedder.dim, since=since)
        live = self.repo.live_ids(key) if stamp.deleted_rev > since else None
        with index.lock:
            if not index.apply(rows):
                return False
            if live is not None:
                index.keep_only(live)
            index.rev = max(index.rev, stamp.rev)
        self.refreshes += 1
        return not _sparse(index)

    async def _load(self, key: Key, stamp: Stamp) -> AgentIndex:
        """Read the agent's index. Memories without a vector of the current embedder are held without one
        (found by their words) until the `memory.embed` job embeds them (embedding.py): a load never waits
        for the embedder."""
        rows, _ = await asyncio.to_thread(
            self.repo.index_rows, key, self.embedder.identity, self.embedder.dim
        )
        index = AgentIndex(self.embedder.dim, capacity=max(64, len(rows)))
        index.rev, index.world_rev = stamp.rev, stamp.world_rev
        await asyncio.to_thread(index.append, rows)
        self.loads += 1
        return index


def _current(index: AgentIndex, stamp: Stamp) -> bool:
    return index.rev == stamp.rev and index.world_rev == stamp.world_rev


def _sparse(index: AgentIndex) -> bool:
    return index.dead > max(64, index.size * MAX_DEAD_SHARE)
