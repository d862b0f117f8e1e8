"""Memory triggers: how a turn retrieves, chosen from the partner's last line without a model call.

The regular expressions live in `triggers.json` (Japanese and English, three kinds):

- "past": the partner asks about an earlier time (前に, あの時, 覚えてる, remember, last time ...). Relevance
  counts double and only observations and reflections are searched (plans are about the future).
- "recent": the partner asks what the agent did lately (今日何した, 最近何してた, what did you do today ...).
  The agent's latest observations, oldest of them first (time order), not scored by relevance.
- "knowledge": the partner asks to be taught or told (教えて, って何, どうやって, how do, what is ...).
  Reflections (what the agent has concluded) are retrieved first with relevance counting double; when fewer
  than k exist, observations and plans fill the rest by the normal score.
- no match: the normal retrieval.

Text is NFKC-normalised and lower-cased before matching (full-width ＲＥＭＥＭＢＥＲ, half-width kana). A line
matching several kinds takes the first in the file's "precedence" (past, recent, knowledge): an explicit
reference to an earlier time ("この前何してたの?") is not answered with today's memories, and a question
about the past or the day is about the agent's own memories more than about knowledge.
"""

from __future__ import annotations

import asyncio
import functools
import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeVar, cast

import numpy as np

from backend.gametime import game_minutes
from backend.memory import stream
from backend.memory.models import Memory, Recalled, ScoredMemory, Search
from backend.memory.retrieval import minmax, recency_normalised
from backend.text import normalise

if TYPE_CHECKING:
    from backend.memory.service import MemoryService

T = TypeVar("T")

Kind = Literal["past", "recent", "knowledge"]
KINDS: tuple[Kind, ...] = ("past", "recent", "knowledge")
TRIGGERS_FILE = Path(__file__).with_name("triggers.json")
#: How much more relevance counts for "past" and "knowledge" retrieval than the configured weight.
RELEVANCE_BOOST = 2.0


@dataclass(frozen=True)
class TriggerSet:
    precedence: tuple[Kind, ...]
    patterns: dict[Kind, tuple[re.Pattern[str], ...]]


@functools.cache
def load(path: Path = TRIGGERS_FILE) -> TriggerSet:
    """The compiled trigger file. Raises ValueError naming a bad kind or pattern."""
    data = json.loads(path.read_text(encoding="utf-8"))
    precedence = tuple(data.get("precedence", KINDS))
    if sorted(precedence) != sorted(KINDS):
        raise ValueError(f"{path}: precedence must list {', '.join(KINDS)}")
    patterns: dict[Kind, tuple[re.Pattern[str], ...]] = {}
    for kind in KINDS:
        try:
            patterns[kind] = tuple(re.compile(p) for p in data.get(kind, []))
        except re.error as exc:
            raise ValueError(f"{path}: bad {kind} pattern {exc.pattern!r}: {exc}") from exc
    return TriggerSet(cast(tuple[Kind, ...], precedence), patterns)


def matching(text: str, triggers: TriggerSet | None = None) -> list[Kind]:
    """Every kind whose patterns match the text, in precedence order."""
    triggers = triggers or load()
    normal = normalise(text)
    return [k for k in triggers.precedence if any(p.search(normal) for p in triggers.patterns[k])]


def classify(text: str | None) -> Kind | None:
    """The trigger kind of a line ("past", "recent", "knowledge"), or None for an ordinary line."""
    if not text:
        return None
    found = matching(text)
    return found[0] if found else None


@dataclass(frozen=True)
class TurnAsk:
    """What a turn retrieves for: the query text, the partner's last line (it picks the kind), the turn's game
    time and how many memories (None: the RETRIEVAL_K setting); with `before_id`, only memories formed before
    (`MemoryService.watermark`)."""

    query: str
    partner_line: str | None = None
    day: int | None = None
    time_of_day: float | None = None
    k: int | None = None
    before_id: int | None = None


async def retrieve_for_turn(
    service: MemoryService, world_id: str, agent_id: str, ask: TurnAsk
) -> list[ScoredMemory]:
    """Retrieve for a turn as the partner's last line asks (see the module docstring)."""
    kind, k = classify(ask.partner_line), ask.k or service.settings.retrieval_k
    if kind == "recent":
        return await latest(service, world_id, agent_id, k=k, day=ask.day, time_of_day=ask.time_of_day)
    return await _by_kind(partial(service.retrieve_as, world_id, agent_id), kind, ask, k, service)


async def recall_for_turn(
    service: MemoryService, world_id: str, agent_id: str, ask: TurnAsk
) -> list[Recalled]:
    """`retrieve_for_turn`, as the memories' ids and texts only (read from the index, no row fetch): a turn's
    prompt."""
    kind, k = classify(ask.partner_line), ask.k or service.settings.retrieval_k
    if kind == "recent":
        found = await latest(service, world_id, agent_id, k=k, day=ask.day, time_of_day=ask.time_of_day)
        recalled = [Recalled(int(scored.memory.id or 0), scored.memory.content) for scored in found]
        return [item for item in recalled if ask.before_id is None or item.id < ask.before_id]
    return await _by_kind(partial(service.recall, world_id, agent_id), kind, ask, k, service)


async def _by_kind(
    search: Callable[[str, Search], Awaitable[list[T]]],
    kind: Kind | None,
    ask: TurnAsk,
    k: int,
    service: MemoryService,
) -> list[T]:
    """The index search each kind asks for (`search` is the service's retrieve_as or recall for the agent)."""
    plain = Search(k, day=ask.day, time_of_day=ask.time_of_day, before_id=ask.before_id)
    boosted = replace(plain, weights={"relevance": service.settings.weight_relevance * RELEVANCE_BOOST})
    if kind == "past":
        return await search(ask.query, replace(boosted, types=["observation", "reflection"]))
    if kind == "knowledge":
        found = await search(ask.query, replace(boosted, types=["reflection"]))
        if len(found) < k:
            rest = replace(plain, k=k - len(found), types=["observation", "plan"])
            found += await search(ask.query, rest)
        return found
    return await search(ask.query, plain)


async def latest(
    service: MemoryService,
    world_id: str,
    agent_id: str,
    *,
    k: int,
    day: int | None,
    time_of_day: float | None,
    touch: bool = True,
) -> list[ScoredMemory]:
    """The k latest observations (up to the given game time), oldest first, marked accessed (with `touch`).

    Wrapped as ScoredMemory so callers handle every kind alike: `recency` is the normalised recency of each
    (newest 1.0), `importance` its normalised importance, `relevance` 0, and `score` the recency.
    """
    rows = await asyncio.to_thread(_latest_rows, service, world_id, agent_id, k, day, time_of_day)
    if not rows:
        return []
    created = np.array([game_minutes(r.created_day, r.created_time_of_day) for r in rows])
    now = game_minutes(day, time_of_day or 0.0) if day is not None else float(created.max())
    recency = recency_normalised(now - created, service.settings.retrieval_decay)
    importance = minmax(np.array([float(r.importance) for r in rows]))
    ids = [r.id for r in rows if r.id is not None]
    if touch:
        await asyncio.to_thread(stream.touch, service.engine, world_id, agent_id, ids, now)
        index = service.cache.peek((world_id, agent_id))
        if index is not None:
            with index.lock:
                index.touch(ids, now)
    return [
        ScoredMemory(row, float(rec), float(rec), float(imp), 0.0)
        for row, rec, imp in zip(rows, recency, importance, strict=True)
    ]


def _latest_rows(
    service: MemoryService, world_id: str, agent_id: str, k: int, day: int | None, time_of_day: float | None
) -> list[Memory]:
    # Memories stamped after the query's game time have not happened yet for this turn.
    until = (day, time_of_day or 0.0) if day is not None else None
    rows, _ = stream.page(service.engine, world_id, agent_id, types=["observation"], limit=k, until=until)
    return list(reversed(rows))
