"""Retrieval: ranking an agent's cached index for a query, and a turn's retrieval as its partner's line asks.

One ranking path (`Retriever.rank`) serves every caller: it scores the index (ranking.py), marks the
winners accessed (`_mark_accessed`, the one place that does, in the index and the database) unless the search
says it is a look and not a use, and reads their texts from the index, all in one worker-thread hop. A caller
that needs the rows fetches them afterwards (`rows`). How each kind of turn retrieves is in triggers.py.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from backend.errors import LLMError
from backend.gametime import from_game_minutes, game_minutes
from backend.llm.base import Embedder
from backend.memory import ranking, timewords
from backend.memory.cache import IndexCache
from backend.memory.fused import Fusion
from backend.memory.index import AgentIndex
from backend.memory.models import VISITOR_TAG, Key, Memory, Recalled, ScoredMemory, Search
from backend.memory.repo import MemoryRepo
from backend.memory.retrieval import minmax, recency_normalised
from backend.memory.settings import MemorySettings
from backend.memory.triggers import RELEVANCE_BOOST, TurnAsk, classify
from backend.text import search_terms

log = logging.getLogger(__name__)

#: Query vectors kept per process (384 floats each: 256 of them are 400 KB).
QUERY_VECTORS_KEPT = 256


@dataclass(frozen=True)
class Hit:
    """One retrieved memory: its id and text (from the index), its score and the components; the row
    itself only where the retrieval had it in hand (the latest observations)."""

    id: int
    content: str
    score: float
    recency: float
    importance: float
    relevance: float
    time: float = 0.0
    memory: Memory | None = None
    #: Whether it came from a visitor's words (VISITOR_TAG).
    visitor: bool = False

    @property
    def recalled(self) -> Recalled:
        return Recalled(self.id, self.content, self.visitor)


class Retriever:
    """Ranks one agent's memories at a time; built once, shared by every caller."""

    def __init__(
        self, repo: MemoryRepo, cache: IndexCache, embedder: Embedder, settings: MemorySettings
    ) -> None:
        self.repo = repo
        self.cache = cache
        self.embedder = embedder
        self.settings = settings
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()  # query -> vector (`_query_vector`)

    async def rank(self, key: Key, query: str, search: Search) -> list[Hit]:
        """The k best memories for `query` by the weighted score, best first (see the module docstring)."""
        index = await self.cache.get(key)
        mode = search.relevance or self.settings.relevance
        query_vector = await self._query_vector(query) if mode != "keyword" else None
        if query_vector is None and mode != "keyword":
            mode = "keyword"  # the embedder failed: the words still work
        query_tokens = search_terms(query) if mode != "embedding" else set()
        weights = self.settings.weights_with(search.weights)
        fusion = self._fusion(search)

        def run() -> list[Hit]:
            with index.lock:  # re-entrant: `rank` takes it too; the texts are read under the same hold
                window = self._window(index, query, search) if fusion is not None else None
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
                    fusion=fusion,
                    window=window,
                )
                texts = ranking.contents(index, ranked)
            self._mark_accessed(key, touched, now)
            return [
                Hit(i, text, score, rec, imp, rel, time, visitor=i in index.visitor)
                for (i, score, rec, imp, rel, time), text in zip(ranked, texts, strict=True)
            ]

        return await asyncio.to_thread(run)

    def _fusion(self, search: Search) -> Fusion | None:
        """Fused scoring's knobs for this search (a `decay` per game minute given: the same half-life; a `time`
        weight given: that one), or None for the seed's scoring."""
        fusion = self.settings.fusion
        if fusion is None:
            return None
        time_weight = (search.weights or {}).get("time")
        if time_weight is not None:
            fusion = replace(fusion, time_weight=float(time_weight))
        if search.decay is not None:
            half_life = float(np.log(0.5) / np.log(search.decay)) if search.decay < 1.0 else 0.0
            fusion = replace(fusion, half_life_minutes=half_life)
        return fusion

    def _window(self, index: AgentIndex, query: str, search: Search) -> timewords.Window | None:
        """The game days the query names ("昨日", "last week"), counted from the query's day."""
        today = search.day or from_game_minutes(index.latest_minutes())[0]
        return timewords.window(query, today, self.settings.day_one_weekday)

    async def rows(self, key: Key, hits: Sequence[Hit]) -> list[ScoredMemory]:
        """The hits as ScoredMemory, their rows fetched (without vectors) unless in hand; a row gone since is
        left out."""
        wanted = [hit.id for hit in hits if hit.memory is None]
        fetched = await asyncio.to_thread(self.repo.by_ids, key, wanted, embedding=False)
        return [
            ScoredMemory(row, hit.score, hit.recency, hit.importance, hit.relevance, hit.time)
            for hit in hits
            if (row := hit.memory or fetched.get(hit.id)) is not None
        ]

    async def for_turn(self, key: Key, ask: TurnAsk) -> list[Hit]:
        """Retrieve for a turn as the partner's last line asks (see triggers.py); only memories formed before
        `ask.before_id` when given."""
        kind, k = classify(ask.partner_line), ask.k or self.settings.retrieval_k
        if kind == "recent":
            found = await self.latest(key, k=k, day=ask.day, time_of_day=ask.time_of_day)
            hits = [Hit(s.memory.id or 0, s.memory.content, s.score, s.recency, s.importance, s.relevance,
                        memory=s.memory, visitor=VISITOR_TAG in (s.memory.tags or ())) for s in found]  # fmt: skip
            return [hit for hit in hits if ask.before_id is None or hit.id < ask.before_id]
        plain = Search(k, day=ask.day, time_of_day=ask.time_of_day, before_id=ask.before_id)
        boosted = replace(plain, weights={"relevance": self.settings.weights.relevance * RELEVANCE_BOOST})
        if kind == "past":
            return await self.rank(key, ask.query, replace(boosted, types=["observation", "reflection"]))
        if kind == "knowledge":
            found_hits = await self.rank(key, ask.query, replace(boosted, types=["reflection"]))
            if len(found_hits) < k:
                rest = replace(plain, k=k - len(found_hits), types=["observation", "plan"])
                found_hits += await self.rank(key, ask.query, rest)
            return found_hits
        return await self.rank(key, ask.query, plain)

    async def latest(
        self, key: Key, *, k: int, day: int | None, time_of_day: float | None, touch: bool = True
    ) -> list[ScoredMemory]:
        """The k latest observations (up to the given game time), oldest first, marked accessed (with `touch`).

        Wrapped as ScoredMemory so callers handle every kind alike: `recency` is the normalised recency of
        each (newest 1.0), `importance` its normalised importance, `relevance` 0, and `score` the recency.
        """
        # Memories stamped after the query's game time have not happened yet for this turn.
        until = (day, time_of_day or 0.0) if day is not None else None
        page, _ = await asyncio.to_thread(
            lambda: self.repo.page(key, types=["observation"], limit=k, until=until)
        )
        rows = list(reversed(page))
        if not rows:
            return []
        created = np.array([game_minutes(r.created_day, r.created_time_of_day) for r in rows])
        now = game_minutes(day, time_of_day or 0.0) if day is not None else float(created.max())
        recency = recency_normalised(now - created, self.settings.retrieval_decay)
        importance = minmax(np.array([float(r.importance) for r in rows]))
        if touch:
            ids = [r.id for r in rows if r.id is not None]
            await asyncio.to_thread(self._mark_accessed, key, ids, now)
        return [
            ScoredMemory(row, float(rec), float(rec), float(imp), 0.0)
            for row, rec, imp in zip(rows, recency, importance, strict=True)
        ]

    async def recall_ids(self, key: Key, ids: Sequence[int]) -> list[Recalled]:
        """The memories of `ids` that still exist, in the order given, their texts read from the index."""
        index = await self.cache.get(key)

        def read() -> list[Recalled]:
            with index.lock:
                positions = index.positions(ids)
                texts = {int(index.ids[pos]): index.contents[int(pos)] for pos in positions}
            return [
                Recalled(memory_id, texts[memory_id], memory_id in index.visitor)
                for memory_id in ids
                if memory_id in texts
            ]

        return await asyncio.to_thread(read)

    def _mark_accessed(self, key: Key, ids: Sequence[int], minutes: float) -> None:
        """Retrieved memories count as accessed at game time `minutes`: in the loaded index (never moving an
        access time backwards) and in the database. Runs in a worker thread."""
        if not ids:
            return
        index = self.cache.peek(key)
        if index is not None:
            with index.lock:
                index.touch(ids, minutes)
        rev = self.repo.touch(key, ids, minutes)
        if index is not None:
            with index.lock:
                index.advance(rev)

    async def _query_vector(self, query: str) -> np.ndarray | None:
        """The query's vector; the last QUERY_VECTORS_KEPT are kept (a conversation's standing query, the
        partner's name and the place, is asked again on every turn of it). A pure cache: no state."""
        vector = self._vectors.get(query)
        if vector is not None:
            self._vectors.move_to_end(query)
            return vector
        try:
            vector = (await self.embedder.embed([query], kind="query"))[0]
        except LLMError as exc:
            log.warning("query embedding failed, using keyword relevance: %s", exc)
            return None
        self._vectors[query] = vector
        if len(self._vectors) > QUERY_VECTORS_KEPT:
            self._vectors.popitem(last=False)
        return vector
