"""Memory triggers: how a turn retrieves, chosen from the partner's last line without a model call
(`Retriever.for_turn` runs the retrieval each kind asks for).

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

import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, cast

from backend.text import normalise

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
