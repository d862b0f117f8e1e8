"""Memory embeddings: what is embedded for a memory, and the `memory.embed` job that embeds what the current
embedder has not (a large batch just stored, an embedder that failed, a changed embedder, an import).

What is embedded: a memory's text after the text of the memory before it in the same episode (index.py
`same_episode`: same type and conversation, formed within an hour), so "Melanie: Yes, last Saturday!" is found
by "When did Melanie go camping?" through the line it answers. The index ranks by the vector; BM25 reads the
memory's own words.

The job works per world, one agent's oldest unembedded memories at a time, `BATCH` per embedding call, and
commits each batch with the embedder's identity (`Memory.embedder`), so a job killed half-way leaves every
finished batch stored and its next run (the lease runs out, another runner claims it) goes on from the
first memory still unembedded. Until a memory is embedded, retrieval finds it by its words; turns never wait.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from backend.errors import LLMError
from backend.gametime import game_minutes
from backend.jobs import repo as job_store
from backend.jobs.models import Job, new_job
from backend.llm.base import Embedder
from backend.memory.cache import IndexCache
from backend.memory.index import same_episode
from backend.memory.models import Memory
from backend.memory.repo import FollowUp, MemoryRepo, Transaction

log = logging.getLogger(__name__)

EMBED = "memory.embed"
#: Memories per embedding call and per commit.
BATCH = 64
#: A write of at most this many new memories embeds them before it returns (a turn's lines are searchable by
#: meaning at once); a larger one leaves them to the job (10,000 memories posted in batches of 1,000 are
#: stored in seconds and embedded by the worker in minutes).
INLINE_MAX = 32
#: Batches one job run embeds before it hands over to a fresh job (so a long re-embed shares the runner).
BATCHES_PER_RUN = 16
#: Seconds the embedding progress (GET /health) is kept before it is counted again.
PROGRESS_TTL_S = 2.0


def _place(row: Memory) -> tuple[str, str | None, float]:
    return row.type, row.session_id, game_minutes(row.created_day, row.created_time_of_day)


def passages(rows: Sequence[Memory], before: Memory | None) -> list[str]:
    """The text to embed for each of an agent's consecutive memories (module docstring); `before` is the
    memory just before the first (None: none)."""
    out = []
    previous = before
    for row in rows:
        joined = previous is not None and same_episode(_place(previous), _place(row))
        out.append(f"{previous.content} {row.content}" if joined and previous is not None else row.content)
        previous = row
    return out


def embed_key(world_id: str) -> str:
    return f"{EMBED}:{world_id}"


def _keep_pending(pending: dict[str, object], new: dict[str, object]) -> dict[str, object]:
    return pending  # one pending job embeds whatever is unembedded when it runs


def add_job(session: Transaction, world_id: str) -> list[Job]:
    """Add the world's `memory.embed` job to the caller's transaction (or keep the pending one)."""
    job = new_job(world_id, EMBED, {}, dedupe_key=embed_key(world_id))
    return job_store.add(session, [job], merge=_keep_pending)


def with_job(world_id: str, then: FollowUp | None) -> FollowUp:
    """A MemoryWriter follow-up: the embed job when some of the rows are unembedded, then `then`'s jobs."""

    def add(session: Transaction, rows: list[Memory]) -> None:
        if any(row.embedder is None for row in rows):
            add_job(session, world_id)
        if then is not None:
            then(session, rows)

    return add


@dataclass(frozen=True)
class Progress:
    """How far the memories are embedded by the current embedder (GET /health `embeddings`)."""

    embedder: str
    ready: int
    total: int
    worlds_pending: list[str]

    def public(self) -> dict[str, object]:
        return {
            "embedder": self.embedder,
            "ready": self.ready,
            "total": self.total,
            "pending": self.total - self.ready,
            "worlds_pending": self.worlds_pending,
        }


class Embeddings:
    """The `memory.embed` handler (module docstring), the start-up check and the progress."""

    def __init__(self, repo: MemoryRepo, cache: IndexCache, embedder: Embedder) -> None:
        self.repo = repo
        self.cache = cache
        self.embedder = embedder
        self._progress: tuple[float, Progress] | None = None  # (monotonic time, progress) read last
        #: world -> held while this process runs its embed job (in-flight work, not state).
        self._runs: dict[str, asyncio.Lock] = {}

    def progress(self) -> Progress:
        """The counts, read at most once per `PROGRESS_TTL_S` (a count over every memory; GET /health)."""
        now = time.monotonic()
        if self._progress is None or now - self._progress[0] > PROGRESS_TTL_S:
            identity = self.embedder.identity
            ready, total, worlds = self.repo.embedding_counts(identity)
            self._progress = (now, Progress(identity, ready, total, worlds))
        return self._progress[1]

    def written(self) -> None:
        """Memories were written: the next progress is counted afresh (not the one kept from before)."""
        self._progress = None

    def queue_stale(self) -> list[str]:
        """Add the embed job of every world holding a memory the current embedder has not embedded (start-up:
        a changed EMBEDDING_PROVIDER re-embeds everything; a crash's unembedded rows are picked up). Returns
        those worlds."""
        worlds = self.repo.embedding_counts(self.embedder.identity)[2]
        for world_id in worlds:
            self._again(world_id)
        return worlds

    async def run(self, job: Job) -> None:
        """Embed the world's unembedded memories, `BATCHES_PER_RUN` batches; more left: a new job is added.
        Raises LLMError when the embedder fails (the runner retries the job later).

        One run per world at a time in this process: a job added while another runs (a write meanwhile)
        waits for it, then embeds what is left, instead of embedding the same rows beside it."""
        async with self._runs.setdefault(job.world_id, asyncio.Lock()):
            for _ in range(BATCHES_PER_RUN):
                if not await self.embed_batch(job.world_id):
                    return
            await asyncio.to_thread(self._again, job.world_id)

    async def embed_batch(self, world_id: str) -> int:
        """Embed one batch of one agent's unembedded memories; returns how many (0: none left)."""
        identity = self.embedder.identity
        rows = await asyncio.to_thread(self.repo.unembedded, world_id, identity, BATCH)
        if not rows:
            return 0
        key = (world_id, rows[0].agent_id)
        stream = await asyncio.to_thread(self.repo.stream, key, rows[0].id or 0, rows[-1].id or 0)
        texts = _texts_of(stream, {row.id for row in rows})
        try:
            vectors = await self.embedder.embed([texts[row.id or 0] for row in rows])
        except LLMError:
            log.warning("embedding %d memories of %s/%s failed; the job will retry", len(rows), *key)
            raise
        blobs = {
            row.id or 0: np.asarray(v, dtype=np.float32).tobytes()
            for row, v in zip(rows, vectors, strict=True)
        }
        rev = await asyncio.to_thread(self.repo.save_embeddings, key, blobs, identity)
        self._apply(key, rows, vectors, rev)
        return len(rows)

    def _apply(self, key: tuple[str, str], rows: list[Memory], vectors: np.ndarray, rev: int) -> None:
        """Give this process's loaded index the new vectors (other processes read them at their next get)."""
        index = self.cache.peek(key)
        if index is None:
            return
        with index.lock:
            index.set_vectors([row.id or 0 for row in rows], vectors)
            index.advance(rev)

    def _again(self, world_id: str) -> None:
        """Add the world's embed job in a transaction of its own."""
        self.repo.in_transaction(functools.partial(add_job, world_id=world_id))


def _texts_of(stream: list[Memory], wanted: set[int | None]) -> dict[int, str]:
    """The passage of each wanted memory, from the agent's stream around them (`repo.stream`)."""
    texts = passages(stream, None)
    return {row.id or 0: text for row, text in zip(stream, texts, strict=True) if row.id in wanted}
