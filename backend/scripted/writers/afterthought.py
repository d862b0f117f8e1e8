"""Scripted reply for the end-of-conversation call (`Afterthought`, backend/memory/afterthought.py): the
conversation reflection, what was learned about the partner (the summary kept within `max_chars`) and, when
the schema asks for one, the feeling once it is over. Composed from the call's facts by the writers that
answered the separate calls before (memory.py, person.py)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from backend.emotion.plutchik import CALM_LABEL, INTENSITY_LABELS
from backend.scripted.engine import WriterContext
from backend.scripted.writers.memory import conversation_reflection
from backend.scripted.writers.person import person_summary, person_update

#: The wheel's (emotion, band 0 mild / 1 basic) a finished conversation may leave; None is calm.
_AFTER = (("joy", 0), ("joy", 1), ("trust", 0), ("anticipation", 0), None)


def _feeling(ctx: WriterContext) -> str:
    picked = ctx.pick(_AFTER)
    if picked is None:
        return CALM_LABEL[ctx.language]
    name, band = picked
    return INTENSITY_LABELS[ctx.language][name][band]


def write_afterthought(ctx: WriterContext) -> dict[str, Any]:
    facts = {
        **ctx.facts,
        "partner_name": ctx.facts.get("partner_name", ""),
        "transcript": ctx.facts.get("transcript") or [],
    }
    facts.setdefault("other_name", facts["partner_name"])
    ctx = replace(ctx, facts=facts)
    reflected = conversation_reflection(ctx)
    learned = person_update(ctx)
    limit = int(facts.get("max_chars") or 400)
    summary = str(learned["summary"])
    if len(summary) > limit:
        traits = [*(facts.get("traits_noticed") or []), *learned["traits_noticed"]]
        squeezed = replace(
            ctx, facts={**facts, "summary": summary, "traits_noticed": traits, "max_chars": limit}
        )
        summary = str(person_summary(squeezed)["summary"])
    reply = {
        "reflection": reflected["summary"],
        "importance": reflected["importance"],
        "traits_noticed": learned["traits_noticed"],
        "notes": learned["notes"],
        "person_summary": summary,
    }
    if "feeling" in ((ctx.schema or {}).get("properties") or {}):
        reply["feeling"] = _feeling(ctx)
    return reply


WRITERS = {"Afterthought": write_afterthought}
