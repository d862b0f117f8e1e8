"""MemoryService: the memory concept's surface for routes and other concepts, composed of its parts.

The work is done by small objects wired in create_app (backend/app.py): `MemoryWriter` (the write path),
`Retriever` (ranking and a turn's retrieval), `Rater` and `Reflector` (importance and reflections),
`PersonBook` (person memory), `Afterthoughts` (the end-of-conversation call) and `RatingJob`. This class
holds them and answers in the callers' terms (world id and agent id); none of the parts knows it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from backend.errors import NotFound
from backend.jobs.models import Job
from backend.jobs.runner import JobRunner
from backend.memory import jobs as memory_jobs
from backend.memory.afterthought import Afterthoughts
from backend.memory.cache import IndexCache
from backend.memory.embedding import Embeddings
from backend.memory.models import (
    NEWS_TAG,
    Key,
    Memory,
    MemoryCreate,
    PersonMemory,
    Recalled,
    ScoredMemory,
    Search,
)
from backend.memory.person import PersonBook
from backend.memory.reflection import Rater, Reflector
from backend.memory.repo import MemoryRepo, Transaction, new_memory
from backend.memory.retriever import Retriever
from backend.memory.settings import MemorySettings
from backend.memory.tags import memory_tags
from backend.memory.triggers import TurnAsk
from backend.memory.writer import Batch, MemoryWriter
from backend.tasks import TaskRunner
from backend.world.cache import AgentCache
from backend.world.models import Agent
from backend.world.service import agent_not_found_in

__all__ = ["MemoryCreate", "MemoryParts", "MemoryService", "ScoredMemory"]


@dataclass(frozen=True)
class MemoryParts:
    """The memory concept's objects, built and wired once in create_app."""

    repo: MemoryRepo
    cache: IndexCache
    writer: MemoryWriter
    retriever: Retriever
    rater: Rater
    reflector: Reflector
    people: PersonBook
    afterthoughts: Afterthoughts
    rating: memory_jobs.RatingJob
    embeddings: Embeddings


class MemoryService:
    """Built once in create_app's lifespan and kept at `app.state.memory`."""

    def __init__(
        self,
        parts: MemoryParts,
        *,
        settings: MemorySettings,
        agents: AgentCache,
        tasks: TaskRunner,
        jobs: JobRunner | None = None,
    ) -> None:
        self.repo, self.cache, self.writer = parts.repo, parts.cache, parts.writer
        self.retriever, self.rater, self.reflector = parts.retriever, parts.rater, parts.reflector
        self.people, self.afterthoughts, self.rating = parts.people, parts.afterthoughts, parts.rating
        #: The `memory.embed` job, the start-up check and the progress (embedding.py).
        self.embeddings = parts.embeddings
        self.settings = settings
        #: Agent rows shared with the conversation service (checked against `updated_at` on each read).
        self.agents = agents
        self.tasks = tasks
        # With a job runner, importance ratings are persisted jobs (see memory/jobs.py); without one (a
        # service built alone in a test), they run as plain background tasks.
        self.jobs = jobs

    # --- agents ---
    def require_agent(self, world_id: str, agent_id: str) -> Agent:
        """The agent row. Raises NotFound when the world has no such agent."""
        agent = self.agents.read_one(self.repo.engine, world_id, agent_id)
        if agent is None:
            raise agent_not_found_in(self.repo.engine, world_id, agent_id, {"agent_id": agent_id})
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
            rows = [self._row(key, item, session_id) for item in agent_items]
            follow_up = (
                memory_jobs.rating_follow_up(key, created, self.settings.importance_batch_s)
                if self.jobs is not None and not rated_later
                else None
            )
            batches.append(Batch(key, rows, follow_up))
        written = await self.writer.write(batches)
        self.embeddings.written()
        if rated_later:
            pass
        elif self.jobs is not None:
            self.jobs.submit(created)
        else:
            for batch, outcome in zip(batches, written, strict=True):
                stored = outcome.fresh
                pending = [row for row in stored if row.importance_source == "provisional"]
                if any(row.type == "observation" for row in stored):
                    self.tasks.spawn(self._after_insert(batch.key, pending, stored[-1]), name="memory-rate")
        return {batch.key[1]: outcome.rows for batch, outcome in zip(batches, written, strict=True)}

    def _row(self, key: Key, item: MemoryCreate, session_id: str | None) -> Memory:
        rated = item.importance is not None
        return new_memory(
            {
                "world_id": key[0],
                "agent_id": key[1],
                "type": item.type,
                "content": item.content,
                "importance": item.importance if rated else self.settings.importance_provisional,
                "importance_source": "caller" if rated else "provisional",
                "location_name": item.location_name,
                "tags": item.tags if item.tags is not None else memory_tags(item.content),
                "evidence_ids": list(item.evidence_ids),
                "session_id": session_id or item.session_id,
                "created_day": item.day,
                "created_time_of_day": item.time_of_day,
                "last_accessed_day": item.day,
                "last_accessed_time_of_day": item.time_of_day,
            }
        )

    async def _after_insert(self, key: Key, pending: list[Memory], last: Memory) -> None:
        agent = await asyncio.to_thread(self.agents.read_one, self.repo.engine, *key)
        language = agent.language if agent else "ja"
        name = agent.name if agent else key[1]
        await self.rater.rate(key, pending, name, language)
        await self.reflector.maybe_reflect(key, last.created_day, last.created_time_of_day, auto=True)

    async def rate_lines(self, key: Key, session_id: str, ids: Sequence[int], importance: int) -> None:
        """Give a conversation's still-provisional line observations its reflection's importance (no call)."""
        rows = await asyncio.to_thread(self.repo.by_ids, key, list(ids), embedding=False)
        todo = [
            row
            for row in rows.values()
            if row.importance_source == "provisional"
            and row.session_id == session_id
            and NEWS_TAG not in row.tags
        ]
        await self.rater.set_importances(key, [(row, importance) for row in todo], "model")

    async def run_rating(self, job: Job) -> None:
        """The `memory.rate` job handler (see memory/jobs.py)."""
        await self.rating.run(job)

    def delete(self, world_id: str, agent_id: str, memory_id: int) -> None:
        """Delete one memory. Raises NotFound when the agent has no such memory in this world."""
        key = (world_id, agent_id)
        removed, rev = self.repo.remove(key, [memory_id])
        if removed == 0:
            raise NotFound(f"agent {agent_id!r} has no memory {memory_id}", details={"memory_id": memory_id})
        index = self.cache.peek(key)
        if index is not None:
            with index.lock:
                index.remove([memory_id])
                index.advance(rev)
            self.cache.drop_if_sparse(key)

    def invalidate_world(self, world_id: str) -> None:
        """Forget cached matrices and reflection bookkeeping of a world whose rows were replaced (import)."""
        self.cache.drop_world(world_id)
        self.reflector.forget_world(world_id)

    def delete_agent(self, world_id: str, agent_id: str) -> int:
        """Drop all of an agent's memories and its cached matrix. Returns how many memories went."""
        key = (world_id, agent_id)
        self.cache.drop(key)
        self.people.forget_agent(key)
        return self.repo.remove(key)[0]

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
        key = (world_id, agent_id)
        return self.repo.page(key, types=types, min_importance=min_importance, limit=limit)[0]

    def page(
        self, world_id: str, agent_id: str, *, types: list[str] | None, q: str | None, limit: int, offset: int
    ) -> tuple[list[Memory], int]:
        return self.repo.page((world_id, agent_id), types=types, q=q, limit=limit, offset=offset)

    async def retrieve(
        self,
        world_id: str,
        agent_id: str,
        query: str,
        search: Search | None = None,
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

        The options come in `search`, or else one by one: `day`/`time_of_day` give the game time of the query
        (default: the agent's latest memory time); `weights` may name recency, importance and relevance
        (missing ones come from settings).
        """
        search = search or Search(k, weights, day, time_of_day, types, decay, relevance)
        key = (world_id, agent_id)
        return await self.retriever.rows(key, await self.retriever.rank(key, query, search))

    async def recall(
        self, world_id: str, agent_id: str, query: str, search: Search | None = None
    ) -> list[Recalled]:
        """The ids and texts of what `retrieve` finds, best first, taken from the index: no row is fetched (a
        turn's prompt needs only the text). The retrieved memories count as accessed now, as with `retrieve`."""
        hits = await self.retriever.rank((world_id, agent_id), query, search or Search())
        return [hit.recalled for hit in hits]

    async def retrieve_for_turn(self, world_id: str, agent_id: str, ask: TurnAsk) -> list[ScoredMemory]:
        """Retrieval shaped by what the partner's last line asks for (past / recent / knowledge), no model
        call; see triggers.py for what each kind does."""
        key = (world_id, agent_id)
        return await self.retriever.rows(key, await self.retriever.for_turn(key, ask))

    async def recall_for_turn(self, world_id: str, agent_id: str, ask: TurnAsk) -> list[Recalled]:
        """`retrieve_for_turn` as the memories' ids and texts, read from the index (no row fetch): a turn's
        prompt."""
        return [hit.recalled for hit in await self.retriever.for_turn((world_id, agent_id), ask)]

    async def latest(
        self,
        world_id: str,
        agent_id: str,
        *,
        k: int,
        day: int | None,
        time_of_day: float | None,
        touch: bool = True,
    ) -> list[ScoredMemory]:
        """The k latest observations up to the game time, oldest first (see `Retriever.latest`)."""
        return await self.retriever.latest(
            (world_id, agent_id), k=k, day=day, time_of_day=time_of_day, touch=touch
        )

    async def recall_ids(self, world_id: str, agent_id: str, ids: Sequence[int]) -> list[Recalled]:
        """The memories of `ids` that still exist, in the order given, their texts read from the index."""
        return await self.retriever.recall_ids((world_id, agent_id), ids)

    def watermark(self) -> int:
        """One past the newest memory id: `Search(before_id=...)` then finds only what was remembered by now."""
        return self.repo.next_id()

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
        location_name: str | None = None,
    ) -> Memory | None:
        """Summarise a finished conversation (at `location_name`) as a first-person reflection citing its
        observations.

        Returns None when the model fails (the failure is traced); never raises LLMError.
        """
        return await self.reflector.conversation(
            (world_id, agent_id),
            session_id=session_id,
            partner_name=partner_name,
            transcript=transcript,
            evidence_ids=evidence_ids,
            day=day,
            time_of_day=time_of_day,
            language=language,
            location_name=location_name,
        )

    async def maybe_reflect(
        self, world_id: str, agent_id: str, *, day: int, time_of_day: float, auto: bool = False
    ) -> list[Memory]:
        """Run the threshold reflection if the importance since the last one has reached the threshold."""
        return await self.reflector.maybe_reflect((world_id, agent_id), day, time_of_day, auto=auto)

    async def reflect_now(
        self, world_id: str, agent_id: str, *, day: int | None = None, time_of_day: float | None = None
    ) -> list[Memory]:
        """Run the threshold reflection now, whatever the sum (POST /reflect). Returns the new insights."""
        return await self.reflector.reflect_now((world_id, agent_id), day, time_of_day)

    # --- person memory (see person.py) ---
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
        self, world_id: str, agent_id: str, other_id: str, *, session: Transaction | None = None
    ) -> str | None:
        """A short text on what the agent knows of `other_id` for the next turn's prompt, or None.
        `session`: read in the caller's session (a turn reads everything it needs in one)."""
        return self.people.context((world_id, agent_id), other_id, session=session)
