"""Scripted replies for the memory concept: importance ratings, conversation reflections, salient questions
and insights. Composed from the facts the prompts were built from (see backend/memory/prompts.py)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from backend.memory.topics import topics
from backend.scripted import news
from backend.scripted.engine import WriterContext
from backend.text import normalise

#: Words that make a memory poignant or mundane (substring match on normalised text).
_POIGNANT = (
    "喧嘩",
    "告白",
    "別れ",
    "合格",
    "不合格",
    "事故",
    "誕生日",
    "結婚",
    "泣",
    "怒",
    "約束",
    "秘密",
    "初めて",
    "病気",
    "fight",
    "confess",
    "break up",
    "accident",
    "birthday",
    "married",
    "cried",
    "promise",
    "secret",
    "first time",
)
_MUNDANE = (
    "歯磨き",
    "朝ごはん",
    "朝食",
    "散歩",
    "掃除",
    "歩いた",
    "寝た",
    "起きた",
    "座った",
    "brushed",
    "breakfast",
    "walked",
    "cleaned",
    "slept",
    "woke",
    "sat ",
)


def _rating(ctx: WriterContext, memory: str, kind: str | None) -> int:
    text = normalise(memory)
    if news.is_invitation(memory):  # an event at a time: worth remembering (and acting on)
        value = ctx.rng.randint(8, 9)
    elif any(word in text for word in _POIGNANT):
        value = ctx.rng.randint(7, 9)
    elif any(word in text for word in _MUNDANE):
        value = ctx.rng.randint(1, 3)
    else:
        value = ctx.rng.randint(3, 6)
    return min(10, value + 1) if kind == "reflection" else value


def rate_importance(ctx: WriterContext) -> dict[str, Any]:
    return {"importance": _rating(ctx, str(ctx.facts.get("memory", "")), ctx.facts.get("type"))}


def rate_importances(ctx: WriterContext) -> dict[str, Any]:
    """One rating per listed memory, in order (the batch prompt's `memories` and `types`)."""
    memories = [str(text) for text in ctx.facts.get("memories", [])] or [""]  # the schema wants one at least
    kinds = list(ctx.facts.get("types", [None] * len(memories)))
    return {"ratings": [_rating(ctx, text, kind) for text, kind in zip(memories, kinds, strict=False)]}


def _topic(lines: list[str], ja: bool, names: tuple[str, ...]) -> str:
    spoken = " ".join(line.split(":", 1)[-1] for line in lines)
    found = topics(spoken, limit=3, exclude=names)
    return found[0] if found else ("いろいろなこと" if ja else "all sorts of things")


def conversation_reflection(ctx: WriterContext) -> dict[str, Any]:
    partner = ctx.facts.get("partner_name", "")
    lines = [str(line) for line in ctx.facts.get("transcript", [])]
    topic = _topic(lines, ctx.ja, (str(partner), str(ctx.facts.get("agent_name", ""))))
    place = ctx.facts.get("location_name")
    if ctx.ja:
        where = f"{place}で" if place else ""
        feeling = ctx.pick(["楽しい時間だった。", "少し考えさせられた。", "また話したいと思った。"])
        summary = f"{where}{partner}と話した。{topic}のことが話題になって、{feeling}"
    else:
        where = f" at {place}" if place else ""
        feeling = ctx.pick(
            ["It was a nice time.", "It gave me something to think about.", "I want to talk again."]
        )
        summary = f"I talked with {partner}{where}. We spoke about {topic}. {feeling}"
    # Small talk is mundane however long it runs (the paper's scale: 1 brushing teeth, 10 a break-up); a
    # conversation with an invitation to an event in it matters more.
    importance = 2 + min(2, len(lines) // 4) + ctx.rng.randint(0, 1)
    if any(news.is_invitation(line) for line in lines):
        importance += 3
    return {"summary": summary, "importance": min(10, importance)}


def _subjects(memories: list[dict[str, Any]], limit: int) -> list[str]:
    """What the memories are about, as whole words (topics.py: no time words, fillers or word fragments)."""
    counts: Counter[str] = Counter()
    for memory in memories:
        counts.update(set(topics(str(memory.get("content", "")), limit=6)))
    return [word for word, _ in counts.most_common(limit)]


def salient_questions(ctx: WriterContext) -> dict[str, Any]:
    subjects = _subjects(list(ctx.facts.get("memories", [])), 3)
    if ctx.ja:
        forms = [
            "{s}について、私はどう感じているのだろう?",
            "{s}は私にとってどんな意味があるのだろう?",
            "最近の{s}のことで、何が一番大切だったのだろう?",
        ]
        fallback = "最近、私にとって一番大切なことは何だろう?"
    else:
        forms = [
            "How do I feel about {s}?",
            "What does {s} mean to me?",
            "What mattered most about {s} lately?",
        ]
        fallback = "What has mattered most to me lately?"
    questions = [forms[i % len(forms)].format(s=s) for i, s in enumerate(subjects)] or [fallback]
    return {"questions": questions}


def insights(ctx: WriterContext) -> dict[str, Any]:
    """One insight per subject the memories share, never one the character has already written down.

    A reflection is itself a memory, so the next reflection's prompt shows it; restating it word for word
    would add nothing (and the echo check refuses a reply that repeats a line of its prompt).
    """
    memories = [m for m in ctx.facts.get("memories", []) if isinstance(m.get("id"), int)]
    known = {normalise(str(m.get("content", ""))) for m in memories}
    out = []
    for subject in _subjects(memories, 5):
        cited = [m["id"] for m in memories if subject in normalise(str(m.get("content", "")))][:5]
        fresh = [text for text in _insight_forms(subject, ctx.ja) if normalise(text) not in known]
        if not cited or not fresh:
            continue
        out.append({"content": ctx.pick(fresh), "evidence_ids": cited, "importance": min(10, 4 + len(cited))})
    return {"insights": out}


def _insight_forms(subject: str, ja: bool) -> list[str]:
    if ja:
        return [
            f"{subject}は私の毎日にとって大切な存在だ。",
            f"私は{subject}のことをよく考えている。",
            f"{subject}と関わる時間が私を支えている。",
        ]
    return [
        f"{subject} is an important part of my days.",
        f"I often think about {subject}.",
        f"Time spent around {subject} keeps me going.",
    ]


WRITERS = {
    "ImportanceRating": rate_importance,
    "ImportanceRatings": rate_importances,
    "ConversationReflection": conversation_reflection,
    "SalientQuestions": salient_questions,
    "InsightList": insights,
}
