"""Scripted replies for person memory: fold a conversation into what an agent knows of someone, and
recompress the running summary. Composed from the facts of backend/memory/person.py's prompts."""

from __future__ import annotations

from typing import Any

from backend.memory.topics import topics as find_topics
from backend.scripted.engine import WriterContext

#: (cue in the person's lines, trait in Japanese, trait in English)
_TRAIT_CUES = (
    ("!", "元気", "lively"),
    ("?", "好奇心旺盛", "curious"),
    ("ありがとう", "礼儀正しい", "polite"),
    ("thank", "礼儀正しい", "polite"),
    ("です", "丁寧", "courteous"),
    ("ね", "人懐っこい", "friendly"),
    ("好き", "素直", "open"),
    ("like", "素直", "open"),
)
_FALLBACK_TRAITS = (("穏やか", "calm"), ("優しい", "kind"), ("真面目", "earnest"))


def _their_lines(facts: dict[str, Any]) -> list[str]:
    """The lines the other person said ("Name: text"), or every line when none is marked with the name."""
    name = str(facts.get("other_name", ""))
    lines = [str(line) for line in facts.get("transcript", [])]
    theirs = [line.split(":", 1)[-1].strip() for line in lines if line.startswith(f"{name}:")]
    return theirs or [line.split(":", 1)[-1].strip() for line in lines]


def person_update(ctx: WriterContext) -> dict[str, Any]:
    other = str(ctx.facts.get("other_name", ""))
    said = _their_lines(ctx.facts)
    joined = " ".join(said)
    traits = [ja if ctx.ja else en for cue, ja, en in _TRAIT_CUES if cue in joined.lower()][:2]
    if not traits:
        ja, en = ctx.pick(_FALLBACK_TRAITS)
        traits = [ja if ctx.ja else en]
    names = (other, str(ctx.facts.get("agent_name", "")))
    topics = find_topics(joined, limit=3, exclude=names)
    if ctx.ja:
        notes = [f"{other}は{topic}の話をしていた" for topic in topics[:2]]
        topic = "、".join(topics) or "いろいろなこと"
        sentence = f"{ctx.facts.get('day', 1)}日目に{other}と{topic}について話した。"
    else:
        notes = [f"{other} talked about {topic}" for topic in topics[:2]]
        topic = ", ".join(topics) or "all sorts of things"
        sentence = f"On day {ctx.facts.get('day', 1)} I talked with {other} about {topic}."
    previous = str(ctx.facts.get("summary") or "").strip()
    # The same talk again (same day, partner, topics) adds nothing: the summary is kept as it was.
    summary = previous if sentence in previous else f"{previous} {sentence}".strip()
    return {"traits_noticed": list(dict.fromkeys(traits)), "notes": notes, "summary": summary[-2000:]}


def person_summary(ctx: WriterContext) -> dict[str, Any]:
    """The newest sentences that fit in max_chars, after a one-line gist of the person (no meeting count)."""
    other = str(ctx.facts.get("other_name", ""))
    limit = int(ctx.facts.get("max_chars", 400))
    traits = list(ctx.facts.get("traits_noticed") or [])[-2:]
    # No meeting count in the gist: the summary outlives it, and the record keeps the live count.
    if ctx.ja:
        ending = "人。" if traits and traits[-1].endswith("い") else "な人。"  # 優しい人, 元気な人
        gist = f"{other}は{'、'.join(traits)}{ending}" if traits else f"{other}とは顔なじみ。"
        parts = [p + "。" for p in str(ctx.facts.get("summary", "")).split("。") if p.strip()]
    else:
        gist = f"{other} is {' and '.join(traits)}." if traits else f"I know {other}."
        parts = [p.strip() + "." for p in str(ctx.facts.get("summary", "")).split(".") if p.strip()]
    kept: list[str] = []
    budget = max(limit // 2, limit - len(gist) - 1)
    for part in reversed(parts):
        if sum(len(p) for p in kept) + len(part) > budget:
            break
        kept.insert(0, part.strip())
    joiner = "" if ctx.ja else " "
    return {"summary": (gist + joiner + joiner.join(kept)).strip()[:limit]}


WRITERS = {"PersonUpdate": person_update, "PersonSummary": person_summary}
