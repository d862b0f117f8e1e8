"""Importance rating (`Rater`) and the two kinds of reflection (`Reflector`).

1. Conversation reflection (purpose `reflection`): after a conversation, a first-person summary plus an
   importance, stored as a `reflection` citing the conversation's observations. A conversation's end asks
   for it in its one end-of-conversation call (afterthought.py), which stores it with `store_conversation`.
2. Threshold reflection (purposes `questions` then `insight`, Generative Agents): when the summed importance of
   the observations stored since the agent's last insight reaches `reflection_threshold`, ask for the 3 most
   salient questions, retrieve for each, and store up to 5 insights; an insight citing an id that was not
   shown to the model, or that does not exist for this agent, is dropped.

The counter needs no extra state: it is the sum over observations with an id above the latest insight's,
read from the database, so a restart loses nothing.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import Field, create_model

from backend.errors import LLMError
from backend.gametime import format_clock
from backend.llm.base import LLM, PRIORITY_BACKGROUND, GenerateOptions
from backend.memory import prompts
from backend.memory.cache import IndexCache
from backend.memory.models import AgentLookup, Key, Memory, Search, visitor_tags
from backend.memory.notify import MemoryEvents
from backend.memory.repo import MemoryRepo, new_memory
from backend.memory.retriever import Retriever
from backend.memory.settings import MemorySettings
from backend.memory.writer import Batch, MemoryWriter
from backend.text import keywords

log = logging.getLogger(__name__)

#: How many recent observations the salient-questions prompt shows (as in Generative Agents).
RECENT_FOR_QUESTIONS = 100
#: After a failed automatic reflection, wait for this share of the threshold in new importance before retrying.
RETRY_SHARE = 0.2


@dataclass
class ThresholdState:
    """Per-agent bookkeeping that only has to live as long as the process, and only for this process.

    `running` is this process's reflection under way (another process's is the jobs' single-flight to stop);
    `failed_at` only spaces out this process's retries after a failed attempt, so another process that
    retries once on its own costs one call, never a wrong memory. Whether to reflect at all is read from the
    database each time (`importance_since_last_insight`), so it sees every process's memories.
    """

    running: set[Key] = field(default_factory=set)
    #: key -> the importance sum when an automatic attempt last produced nothing.
    failed_at: dict[Key, float] = field(default_factory=dict)


def _options(purpose: str, key: Key, language: str, facts: dict[str, Any], **extra: Any) -> GenerateOptions:
    return GenerateOptions(
        purpose=purpose,
        world_id=key[0],
        agent_id=key[1],
        language=language,
        priority=PRIORITY_BACKGROUND,
        facts=facts,
        **extra,
    )


async def rate_importance(llm: LLM, key: Key, row: Memory, name: str, language: str) -> int | None:
    """The model's 1-10 rating of a memory, or None when the call failed (it is traced)."""
    facts = {"agent_name": name, "language": language, "memory": row.content, "type": row.type}
    try:
        reply = await llm.generate_json(
            prompts.importance_messages(facts),
            prompts.ImportanceRating,
            options=_options("importance", key, language, facts, session_id=row.session_id),
        )
    except LLMError as exc:
        log.warning("importance rating of memory %s failed, keeping provisional: %s", row.id, exc)
        return None
    return reply.importance


@functools.lru_cache(maxsize=32)
def ratings_for(count: int) -> type[prompts.ImportanceRatings]:
    """The ImportanceRatings sent to rate `count` memories: its schema asks for exactly that many.

    Only the schema is exact; a reply with another count still validates and `rate_importances` then rates
    the memories one by one, as before.
    """
    base = prompts.ImportanceRatings
    ratings = Field(min_length=1, max_length=16, json_schema_extra={"minItems": count, "maxItems": count})
    field = (list[Annotated[int, Field(ge=1, le=10)]], ratings)
    return create_model("ImportanceRatings", __base__=base, __doc__=base.__doc__, ratings=field)


async def rate_importances(
    llm: LLM, key: Key, rows: list[Memory], name: str, language: str
) -> list[int] | None:
    """The model's 1-10 ratings of several memories in one call, in order; None when the call failed or the
    reply does not hold exactly one rating per memory (the caller then rates them one at a time)."""
    facts = {
        "agent_name": name,
        "language": language,
        "memories": [row.content for row in rows],
        "types": [row.type for row in rows],
    }
    try:
        reply = await llm.generate_json(
            prompts.importance_batch_messages(facts),
            ratings_for(len(rows)),
            options=_options("importance", key, language, facts, session_id=rows[0].session_id),
        )
    except LLMError as exc:
        log.warning("rating %d memories in one call failed: %s", len(rows), exc)
        return None
    if len(reply.ratings) != len(rows):
        log.warning(
            "asked for %d ratings, the model gave %d: rating one by one", len(rows), len(reply.ratings)
        )
        return None
    return list(reply.ratings)


#: Memories rated in one model call (a longer list makes small local models lose count).
RATE_BATCH = 16


class Rater:
    """Rates memories' importance with the model and stores the ratings (database, index, events)."""

    def __init__(self, llm: LLM, repo: MemoryRepo, cache: IndexCache, events: MemoryEvents) -> None:
        self.llm = llm
        self.repo = repo
        self.cache = cache
        self.events = events

    async def rate(self, key: Key, rows: list[Memory], name: str, language: str) -> list[int]:
        """Rate memories, up to `RATE_BATCH` per model call (one memory alone gets the single-memory prompt;
        a batch whose reply does not fit is rated one by one). Returns the ids the model failed to rate
        (traced; their provisional values stay)."""
        failed: list[int] = []
        for start in range(0, len(rows), RATE_BATCH):
            chunk = rows[start : start + RATE_BATCH]
            values: list[int | None] | None = None
            if len(chunk) > 1:
                batch = await rate_importances(self.llm, key, chunk, name, language)
                values = list(batch) if batch is not None else None
            if values is None:
                values = [await rate_importance(self.llm, key, row, name, language) for row in chunk]
            rated = [(row, v) for row, v in zip(chunk, values, strict=True) if v is not None]
            failed += [row.id or 0 for row, v in zip(chunk, values, strict=True) if v is None]
            await self.set_importances(key, rated, "model")
        return failed

    async def set_importances(self, key: Key, ratings: list[tuple[Memory, int]], source: str) -> None:
        """Store ratings of provisional memories (see MemoryRepo.set_importances), in the index too."""
        if not ratings:
            return
        ids, rev = await asyncio.to_thread(self.repo.set_importances, key, ratings, source)
        stored = set(ids)
        # A memory whose id now names another row (a world import meanwhile) kept its importance: skipped.
        rated = [(row, value) for row, value in ratings if row.id in stored]
        values = {row.id or 0: value for row, value in rated}
        index = self.cache.peek(key)
        if index is not None:
            with index.lock:
                index.set_importance(values.keys(), [float(v) for v in values.values()], rev)
                index.advance(rev)
        if not rated:
            return
        for row, value in rated:
            row.importance, row.importance_source = value, source
        self.events.updated([row for row, _ in rated])


class Reflector:
    """Writes reflections: a finished conversation's, and the threshold reflection's insights."""

    def __init__(
        self,
        llm: LLM,
        repo: MemoryRepo,
        writer: MemoryWriter,
        retriever: Retriever,
        agents: AgentLookup,
        settings: MemorySettings,
    ) -> None:
        self.llm = llm
        self.repo = repo
        self.writer = writer
        self.retriever = retriever
        self.agents = agents
        self.settings = settings
        self.state = ThresholdState()

    def forget_world(self, world_id: str) -> None:
        """Drop the bookkeeping of a world whose rows were replaced (import)."""
        for key in [key for key in list(self.state.failed_at) if key[0] == world_id]:
            self.state.failed_at.pop(key, None)

    async def conversation(
        self,
        key: Key,
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
        """Store the end-of-conversation reflection for one participant. None when the model fails.
        `location_name`: where the conversation took place (None: the agent's last reported place)."""
        agent = await asyncio.to_thread(self.agents, *key)
        facts = {
            "agent_name": agent.name if agent else key[1],
            "partner_name": partner_name,
            "language": language,
            "transcript": list(transcript),
            "day": day,
            "clock": format_clock(time_of_day),
            "location_name": location_name or (agent.location_name if agent else None),
        }
        try:
            reply = await self.llm.generate_json(
                prompts.conversation_messages(facts),
                prompts.ConversationReflection,
                options=_options("reflection", key, language, facts, session_id=session_id),
            )
        except LLMError as exc:
            log.warning("conversation reflection for %s/%s failed: %s", *key, exc)
            return None
        return await self.store_conversation(
            key, reply.summary, reply.importance, evidence_ids, day, time_of_day,
            session_id=session_id, location_name=location_name,
        )  # fmt: skip

    async def store_conversation(
        self,
        key: Key,
        summary: str,
        importance: int,
        evidence_ids: list[int],
        day: int,
        time_of_day: float,
        *,
        session_id: str,
        location_name: str | None = None,
    ) -> Memory:
        """Store a conversation reflection the model wrote (here, or in the end-of-conversation call of
        afterthought.py), citing those of `evidence_ids` that still exist, at the conversation's place."""
        known = await asyncio.to_thread(self.repo.existing_ids, key, evidence_ids)
        cited = [i for i in evidence_ids if i in known]
        # A reflection on a talk with a visitor (its lines are marked) is marked too: it retells their words.
        marks = await asyncio.to_thread(self.repo.visitor_tags, key, cited)
        row = _reflection_row(
            key, summary, importance, cited, day, time_of_day, origin="conversation", session_id=session_id,
            marks=marks, location_name=location_name,
        )  # fmt: skip
        [written] = await self.writer.write([Batch(key, [row])])
        return written.rows[0]

    async def maybe_reflect(
        self, key: Key, day: int, time_of_day: float, *, auto: bool = False
    ) -> list[Memory]:
        """Reflect when the importance since the last insight has reached the threshold; else []."""
        total, _ = await asyncio.to_thread(self.repo.importance_since_last_insight, key)
        threshold = self.settings.reflection_threshold
        if total < threshold:
            return []
        failed = self.state.failed_at.get(key)
        if auto and failed is not None and total < failed + threshold * RETRY_SHARE:
            return []
        made = await self.reflect_now(key, day, time_of_day)
        if made:
            self.state.failed_at.pop(key, None)
        else:
            self.state.failed_at[key] = total
        return made

    async def reflect_now(self, key: Key, day: int | None, time_of_day: float | None) -> list[Memory]:
        """Questions -> retrieval per question -> insights citing ids. Returns the stored insights."""
        if key in self.state.running:
            return []  # another reflection for this agent is under way
        self.state.running.add(key)
        try:
            return await self._reflect(key, day, time_of_day)
        finally:
            self.state.running.discard(key)

    async def _recent(self, key: Key) -> list[Memory]:
        """The observations the questions are asked about: those since the last insight, else the latest."""
        _, since = await asyncio.to_thread(self.repo.importance_since_last_insight, key)
        recent = await asyncio.to_thread(self.repo.observations_after, key, since, RECENT_FOR_QUESTIONS)
        if not recent:
            recent = await asyncio.to_thread(self.repo.observations_after, key, 0, RECENT_FOR_QUESTIONS)
        return recent

    async def _reflect(self, key: Key, day: int | None, time_of_day: float | None) -> list[Memory]:
        agent = await asyncio.to_thread(self.agents, *key)
        language, name = (agent.language, agent.name) if agent else ("ja", key[1])
        recent = await self._recent(key)
        if not recent:
            return []
        if day is None:
            day, time_of_day = recent[-1].created_day, recent[-1].created_time_of_day
        base = {"agent_name": name, "language": language}
        facts = {**base, "memories": [_brief(m) for m in recent]}
        try:
            asked = await self.llm.generate_json(
                prompts.questions_messages(facts),
                prompts.SalientQuestions,
                options=_options("questions", key, language, facts),
            )
            shown = await self._evidence_for(key, asked.questions, day, time_of_day) or recent
            facts = {**base, "questions": asked.questions, "memories": [_brief(m) for m in shown]}
            reply = await self.llm.generate_json(
                prompts.insight_messages(facts),
                prompts.InsightList,
                options=_options("insight", key, language, facts),
            )
        except LLMError as exc:
            log.warning("threshold reflection for %s/%s failed: %s", *key, exc)
            return []
        return await self._store_insights(key, reply.insights, shown, day, time_of_day or 0.0)

    async def _evidence_for(
        self, key: Key, questions: list[str], day: int, time_of_day: float | None
    ) -> list[Memory]:
        seen: dict[int, Memory] = {}
        for question in questions:
            hits = await self.retriever.rank(key, question, Search(day=day, time_of_day=time_of_day))
            for hit in await self.retriever.rows(key, hits):
                if hit.memory.id is not None:
                    seen.setdefault(hit.memory.id, hit.memory)
        return list(seen.values())

    async def _store_insights(
        self, key: Key, insights: list[prompts.Insight], shown: list[Memory], day: int, time_of_day: float
    ) -> list[Memory]:
        shown_ids = {m.id for m in shown if m.id is not None}
        cited = {i for insight in insights for i in insight.evidence_ids}
        known = shown_ids & await asyncio.to_thread(self.repo.existing_ids, key, sorted(cited))
        # The model read every shown memory: an insight written with a visitor's words in view is marked.
        marks = visitor_tags(m.tags for m in shown)
        rows = []
        for insight in insights:
            if not set(insight.evidence_ids) <= known:
                log.info(
                    "dropping an insight citing unknown memories %s",
                    sorted(set(insight.evidence_ids) - known),
                )
                continue
            rows.append(
                _reflection_row(
                    key,
                    insight.content,
                    insight.importance,
                    insight.evidence_ids,
                    day,
                    time_of_day,
                    origin="insight",
                    marks=marks,
                )  # fmt: skip
            )
        if not rows:
            return []
        # Only insights stored as new memories count: one that merged into an existing reflection is not new.
        [written] = await self.writer.write([Batch(key, rows)])
        return list(written.fresh)


def _reflection_row(
    key: Key,
    content: str,
    importance: int,
    evidence: list[int],
    day: int,
    time_of_day: float,
    *,
    origin: str,
    session_id: str | None = None,
    marks: Sequence[str] = (),
    location_name: str | None = None,
) -> Memory:
    return new_memory(
        {
            "world_id": key[0],
            "agent_id": key[1],
            "type": "reflection",
            "content": content.strip(),
            "importance": importance,
            "importance_source": "model",
            "tags": [*keywords(content), *marks],
            "evidence_ids": list(dict.fromkeys(evidence)),
            "session_id": session_id,
            "location_name": location_name,
            "created_day": day,
            "created_time_of_day": time_of_day,
            "last_accessed_day": day,
            "last_accessed_time_of_day": time_of_day,
            "origin": origin,
        }
    )


def _brief(memory: Memory) -> dict[str, Any]:
    return {"id": memory.id, "content": memory.content, "type": memory.type}
