"""MemoryService: the memory stream's one entry point (HTTP routes and other concepts call this).

Stores memories (embedding them, rating importance in the background), retrieves by recency, importance and
relevance over a cached per-agent matrix, and writes reflections (see reflection.py).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence

import numpy as np
from sqlalchemy.engine import Engine
from sqlmodel import Session

from backend.config import Settings
from backend.errors import LLMError, NotFound
from backend.events import EventBus
from backend.jobs.models import Job
from backend.jobs.runner import JobRunner
from backend.llm.base import LLM, Embedder
from backend.memory import jobs as memory_jobs
from backend.memory import person, ranking, reflection, stream, triggers, writer
from backend.memory.cache import IndexCache, Key
from backend.memory.models import (
    NEWS_TAG,
    Memory,
    MemoryCreate,
    PersonMemory,
    Recalled,
    ScoredMemory,
    Search,
)
from backend.memory.notify import MemoryEvents
from backend.memory.tags import memory_tags
from backend.memory.triggers import TurnAsk
from backend.storage.rows import build
from backend.tasks import TaskRunner
from backend.text import token_set
from backend.world.cache import AgentCache
from backend.world.models import Agent

__all__ = ["MemoryCreate", "MemoryService", "ScoredMemory"]
log = logging.getLogger(__name__)

#: Memories rated in one model call (a longer list makes small local models lose count).
RATE_BATCH = 16


class MemoryService:
    """Built once in create_app's lifespan and kept at `app.state.memory`."""

    def __init__(
        self,
        *,
        engine: Engine,
        embedder: Embedder,
        llm: LLM,
        settings: Settings,
        tasks: TaskRunner,
        events: EventBus | None = None,
        jobs: JobRunner | None = None,
        agents: AgentCache | None = None,
    ) -> None:
        self.engine = engine
        #: Agent rows shared with the conversation service (checked against `updated_at` on each read).
        self.agents = agents if agents is not None else AgentCache()
        # With a job runner, importance ratings are persisted jobs (see memory/jobs.py); without one (a
        # service built alone in a test), they run as plain background tasks.
        self.jobs = jobs
        self.embedder = embedder
        self.llm = llm
        self.settings = settings
        self.tasks = tasks
        self.cache = IndexCache(engine, embedder)
        self.reflections = reflection.ThresholdState()
        self.events = MemoryEvents(events)
        self.people = person.PersonBook(engine=engine, llm=llm, settings=settings, agents=self.agents)

    # --- agents ---
    def require_agent(self, world_id: str, agent_id: str) -> Agent:
        """The agent row. Raises NotFound when the world has no such agent."""
        agent = self.agents.read_one(self.engine, world_id, agent_id)
        if agent is None:
            raise NotFound(f"no agent {agent_id!r} in world {world_id!r}", details={"agent_id": agent_id})
        return agent

    # --- writing ---
    async def add(
        self, world_id: str, agent_id: str, item: MemoryCreate, *, session_id: str | None = None
    ) -> Memory:
        """Store one memory now; with no importance it gets a provisional one, rated in the background."""
        return (await self.add_many(world_id, agent_id, [item], session_id=session_id))[0]

    async def add_many(
        self, world_id: str, agent_id: str, items: Sequence[MemoryCreate], *, session_id: str | None = None
    ) -> list[Memory]:
        """Store memories in one transaction; then rate provisional ones and check the reflection threshold.

        Returns one memory per item, in order: the stored one, or the existing memory a near-duplicate was
        merged into (see hygiene.py). Storing may evict the agent's least important memories past the cap.
        """
        return (await self.add_for(world_id, {agent_id: items}, session_id=session_id))[agent_id]

    async def add_for(
        self,
        world_id: str,
        items: Mapping[str, Sequence[MemoryCreate]],
        *,
        session_id: str | None = None,
        rated_later: bool = False,
    ) -> dict[str, list[Memory]]:
        """`add_many` for several agents in one write (one transaction for all): a conversation line that both
        speakers remember. Returns each agent's memories, as `add_many` does.

        `rated_later`: no rating of their own (a conversation's lines: its end-of-conversation reflection
        rates them, see `rate_lines`; a line of a conversation that never ends is picked up by the agent's
        next rating job once older than LINE_RATING_GRACE_S)."""
        created: list[Job] = []
        batches = []
        for agent_id, agent_items in items.items():
            key = (world_id, agent_id)
            rows = [self._row(world_id, agent_id, item, session_id) for item in agent_items]
            follow_up = (
                memory_jobs.rating_follow_up(key, created, self.settings.importance_batch_s)
                if self.jobs is not None and not rated_later
                else None
            )
            batches.append(writer.Batch(key, rows, follow_up))
        plans = await writer.store_many(self, batches)
        if rated_later:
            pass
        elif self.jobs is not None:
            self.jobs.submit(created)
        else:
            for batch, plan in zip(batches, plans, strict=True):
                stored = plan.fresh
                pending = [row for row in stored if row.importance_source == "provisional"]
                if any(row.type == "observation" for row in stored):
                    self.tasks.spawn(self._after_insert(batch.key, pending, stored[-1]), name="memory-rate")
        return {batch.key[1]: plan.rows for batch, plan in zip(batches, plans, strict=True)}

    def _row(self, world_id: str, agent_id: str, item: MemoryCreate, session_id: str | None) -> Memory:
        rated = item.importance is not None
        return build(
            Memory,
            {
                "world_id": world_id,
                "agent_id": agent_id,
                "type": item.type,
                "content": item.content,
                "importance": item.importance
                if item.importance is not None
                else self.settings.importance_provisional,
                "importance_source": "caller" if rated else "provisional",
                "location_name": item.location_name,
                "tags": item.tags if item.tags is not None else memory_tags(item.content),
                "evidence_ids": list(item.evidence_ids),
                "session_id": session_id,
                "created_day": item.day,
                "created_time_of_day": item.time_of_day,
                "last_accessed_day": item.day,
                "last_accessed_time_of_day": item.time_of_day,
            },
        )

    async def store_rows(self, key: Key, rows: list[Memory]) -> list[Memory]:
        """Deduplicate, embed, insert and index prepared rows (also used for reflections), then apply the cap.

        Returns one memory per row: the stored row or the existing memory it merged into.
        """
        return (await writer.store(self, key, rows)).rows

    async def _after_insert(self, key: Key, pending: list[Memory], last: Memory) -> None:
        agent = await asyncio.to_thread(self.agents.read_one, self.engine, *key)
        language = agent.language if agent else "ja"
        name = agent.name if agent else key[1]
        await self.rate(key, pending, name, language)
        await self.maybe_reflect(*key, day=last.created_day, time_of_day=last.created_time_of_day, auto=True)

    async def rate(self, key: Key, rows: list[Memory], name: str, language: str) -> list[int]:
        """Rate memories, up to `RATE_BATCH` per model call (one memory alone gets the single-memory prompt;
        a batch whose reply does not fit is rated one by one). Returns the ids the model failed to rate
        (traced; their provisional values stay)."""
        failed: list[int] = []
        for start in range(0, len(rows), RATE_BATCH):
            chunk = rows[start : start + RATE_BATCH]
            values: list[int | None] | None = None
            if len(chunk) > 1:
                batch = await reflection.rate_importances(self.llm, key, chunk, name, language)
                values = list(batch) if batch is not None else None
            if values is None:
                values = [
                    await reflection.rate_importance(self.llm, key, row, name, language) for row in chunk
                ]
            rated = [(row, v) for row, v in zip(chunk, values, strict=True) if v is not None]
            failed += [row.id or 0 for row, v in zip(chunk, values, strict=True) if v is None]
            await self._set_importances(key, rated)
        return failed

    async def rate_lines(self, key: Key, session_id: str, ids: Sequence[int], importance: int) -> None:
        """Give a conversation's still-provisional line observations its reflection's importance (no call)."""
        rows = await asyncio.to_thread(stream.by_ids, self.engine, *key, list(ids), embedding=False)
        todo = [
            row
            for row in rows.values()
            if row.importance_source == "provisional"
            and row.session_id == session_id
            and NEWS_TAG not in row.tags
        ]
        await self._set_importances(key, [(row, importance) for row in todo])

    async def _set_importances(self, key: Key, ratings: list[tuple[Memory, int]]) -> None:
        if not ratings:
            return
        stored = set(await asyncio.to_thread(stream.set_importances, self.engine, *key, ratings, "model"))
        # A memory whose id now names another row (a world import meanwhile) kept its importance: skipped.
        rated = [(row, value) for row, value in ratings if row.id in stored]
        if not rated:
            return
        values = {row.id or 0: value for row, value in rated}
        index = self.cache.peek(key)
        if index is not None:
            with index.lock:
                index.set_importance(values.keys(), [float(v) for v in values.values()])
        for row, value in rated:
            row.importance, row.importance_source = value, "model"
        self.events.updated([row for row, _ in rated])

    def delete(self, world_id: str, agent_id: str, memory_id: int) -> None:
        """Delete one memory. Raises NotFound when the agent has no such memory in this world."""
        if stream.remove(self.engine, world_id, agent_id, [memory_id]) == 0:
            raise NotFound(f"agent {agent_id!r} has no memory {memory_id}", details={"memory_id": memory_id})
        key = (world_id, agent_id)
        index = self.cache.peek(key)
        if index is not None:
            with index.lock:
                index.remove([memory_id])
            self.cache.drop_if_sparse(key)

    def invalidate_world(self, world_id: str) -> None:
        """Forget cached matrices and reflection bookkeeping of a world whose rows were replaced (import)."""
        for key in [key for key in list(self.cache._indexes) if key[0] == world_id]:
            self.cache.drop(key)
        for key in [key for key in list(self.reflections.failed_at) if key[0] == world_id]:
            self.reflections.failed_at.pop(key, None)

    def delete_agent(self, world_id: str, agent_id: str) -> int:
        """Drop all of an agent's memories and its cached matrix. Returns how many memories went."""
        self.cache.drop((world_id, agent_id))
        person.forget_agent(self.engine, world_id, agent_id)
        return stream.remove(self.engine, world_id, agent_id)

    # --- reading ---
    def recent(
        self,
        world_id: str,
        agent_id: str,
        *,
        limit: int = 10,
        types: list[str] | None = None,
        min_importance: int | None = None,
    ) -> list[Memory]:
        """The newest memories (game time), newest first."""
        rows, _ = stream.page(
            self.engine, world_id, agent_id, types=types, min_importance=min_importance, limit=limit
        )
        return rows

    def page(
        self, world_id: str, agent_id: str, *, types: list[str] | None, q: str | None, limit: int, offset: int
    ) -> tuple[list[Memory], int]:
        return stream.page(self.engine, world_id, agent_id, types=types, q=q, limit=limit, offset=offset)

    async def retrieve(
        self,
        world_id: str,
        agent_id: str,
        query: str,
        *,
        k: int | None = None,
        weights: dict[str, float | None] | None = None,
        day: int | None = None,
        time_of_day: float | None = None,
        types: list[str] | None = None,
        decay: float | None = None,
        relevance: str | None = None,
    ) -> list[ScoredMemory]:
        """The k best memories for `query` by the weighted score; the retrieved ones count as accessed now.

        `day`/`time_of_day` give the game time of the query (default: the agent's latest memory time).
        `weights` may name recency, importance and relevance; missing ones come from settings.
        """
        return await self.retrieve_as(
            world_id, agent_id, query, Search(k, weights, day, time_of_day, types, decay, relevance)
        )

    async def retrieve_as(
        self, world_id: str, agent_id: str, query: str, search: Search
    ) -> list[ScoredMemory]:
        """`retrieve` with its options in one `Search`."""
        ranked, _ = await self._search((world_id, agent_id), query, search, texts=False)
        ids = [r[0] for r in ranked]
        rows = await asyncio.to_thread(stream.by_ids, self.engine, world_id, agent_id, ids, embedding=False)
        return [
            ScoredMemory(rows[memory_id], score, rec, imp, rel)
            for memory_id, score, rec, imp, rel in ranked
            if memory_id in rows
        ]

    async def recall(
        self, world_id: str, agent_id: str, query: str, search: Search | None = None
    ) -> list[Recalled]:
        """The ids and texts of what `retrieve` finds, best first, taken from the index: no row is fetched (a
        turn's prompt needs only the text). The retrieved memories count as accessed now, as with `retrieve`."""
        ranked, texts = await self._search((world_id, agent_id), query, search or Search(), texts=True)
        return [Recalled(int(row[0]), text) for row, text in zip(ranked, texts, strict=True)]

    async def _search(
        self, key: Key, query: str, search: Search, *, texts: bool
    ) -> tuple[list[tuple[int, float, float, float, float]], list[str]]:
        """Rank the agent's index for `query`, mark the chosen rows accessed (index and database) unless
        `search.touch` is False, and with `texts` read their texts from the index: one worker-thread hop."""
        index = await self.cache.get(key)
        mode = search.relevance or self.settings.relevance
        query_vector = await self._query_vector(query) if mode != "keyword" else None
        if query_vector is None and mode != "keyword":
            mode = "keyword"  # the embedder failed: keyword overlap still works
        query_tokens = token_set(query) if mode != "embedding" else set()
        weights = ranking.weights_from(self.settings, search.weights)

        def rank() -> tuple[list[tuple[int, float, float, float, float]], list[str]]:
            with index.lock:  # re-entrant: `rank` takes it too; the texts are read under the same hold
                ranked, touched, now = ranking.rank(
                    index,
                    mode,
                    query_vector,
                    query_tokens,
                    search.k or self.settings.retrieval_k,
                    weights,
                    search.decay or self.settings.retrieval_decay,
                    (search.day, search.time_of_day),
                    search.types,
                    touch=search.touch,
                    before_id=search.before_id,
                )
                found = ranking.contents(index, ranked) if texts else []
            stream.touch(self.engine, key[0], key[1], touched, now)
            return ranked, found

        return await asyncio.to_thread(rank)

    async def _query_vector(self, query: str) -> np.ndarray | None:
        try:
            return (await self.embedder.embed([query]))[0]
        except LLMError as exc:
            log.warning("query embedding failed, using keyword relevance: %s", exc)
            return None

    # --- reflections ---
    async def reflect_on_conversation(
        self,
        world_id: str,
        agent_id: str,
        *,
        session_id: str,
        partner_name: str,
        transcript: list[str],
        evidence_ids: list[int],
        day: int,
        time_of_day: float,
        language: str,
    ) -> Memory | None:
        """Summarise a finished conversation as a first-person reflection citing its observations.

        Returns None when the model fails (the failure is traced); never raises LLMError.
        """
        return await reflection.conversation(
            self,
            (world_id, agent_id),
            session_id=session_id,
            partner_name=partner_name,
            transcript=transcript,
            evidence_ids=evidence_ids,
            day=day,
            time_of_day=time_of_day,
            language=language,
        )

    async def maybe_reflect(
        self, world_id: str, agent_id: str, *, day: int, time_of_day: float, auto: bool = False
    ) -> list[Memory]:
        """Run the threshold reflection if the importance since the last one has reached the threshold."""
        return await reflection.maybe_reflect(self, (world_id, agent_id), day, time_of_day, auto=auto)

    async def reflect_now(
        self, world_id: str, agent_id: str, *, day: int | None = None, time_of_day: float | None = None
    ) -> list[Memory]:
        """Run the threshold reflection now, whatever the sum (POST /reflect). Returns the new insights."""
        return await reflection.threshold_reflection(self, (world_id, agent_id), day, time_of_day)

    # --- conversation turns (see triggers.py and person.py) ---
    async def retrieve_for_turn(self, world_id: str, agent_id: str, ask: TurnAsk) -> list[ScoredMemory]:
        """Retrieval shaped by what the partner's last line asks for (past / recent / knowledge), no model call.
        See `triggers.retrieve_for_turn` for what each kind does."""
        return await triggers.retrieve_for_turn(self, world_id, agent_id, ask)

    async def recall_ids(self, world_id: str, agent_id: str, ids: Sequence[int]) -> list[Recalled]:
        """The memories of `ids` that still exist, in the order given, their texts read from the index."""
        index = await self.cache.get((world_id, agent_id))

        def read() -> list[Recalled]:
            with index.lock:
                positions = index.positions(ids)
                texts = {int(index.ids[pos]): index.contents[int(pos)] for pos in positions}
            return [Recalled(memory_id, texts[memory_id]) for memory_id in ids if memory_id in texts]

        return await asyncio.to_thread(read)

    def watermark(self) -> int:
        """One past the newest memory id: `Search(before_id=...)` then finds only what was remembered by now."""
        return stream.next_id(self.engine)

    async def recall_for_turn(self, world_id: str, agent_id: str, ask: TurnAsk) -> list[Recalled]:
        """`retrieve_for_turn` as the memories' ids and texts, read from the index (no row fetch): a turn's prompt."""
        return await triggers.recall_for_turn(self, world_id, agent_id, ask)

    async def update_person_memory(
        self,
        world_id: str,
        agent_id: str,
        *,
        other_id: str,
        other_name: str,
        transcript: list[str],
        session_id: str | None,
        day: int,
        time_of_day: float,
        language: str,
    ) -> PersonMemory:
        """Fold a finished conversation into what the agent knows of `other_id` (see person.py).

        Never raises LLMError: on a model failure the summary, traits and notes stay as they were.
        """
        return await self.people.update(
            (world_id, agent_id),
            other_id=other_id,
            other_name=other_name,
            transcript=transcript,
            session_id=session_id,
            day=day,
            time_of_day=time_of_day,
            language=language,
        )

    def person_context(
        self, world_id: str, agent_id: str, other_id: str, *, session: Session | None = None
    ) -> str | None:
        """A short text on what the agent knows of `other_id` for the next turn's prompt, or None.
        `session`: read in the caller's session (a turn reads everything it needs in one)."""
        return person.context(self.engine, world_id, agent_id, other_id, session=session)
