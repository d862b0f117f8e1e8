"""Scripted writer for the morning revision of intentions (`IntentionsReply`, backend/intention/prompts.py):
yesterday's lines that still matter (said from today), then the events the character heard of and likes,
each with its time and place; nothing when nothing in particular is on its mind."""

from __future__ import annotations

from typing import Any

from backend.intention.appointment import find_hour, rebase
from backend.scripted import news
from backend.scripted.engine import WriterContext


def _still_ahead(text: str, today: int) -> bool:
    """A line whose day word points before today is over (昨日の...)."""
    return not any(word in text for word in ("昨日", "yesterday"))


def _heard_line(ctx: WriterContext, item: dict[str, Any], today: int) -> str:
    origin = str(item.get("origin_name") or "")
    said = rebase(str(item.get("text") or ""), int(item.get("written_day") or today), today, ctx.language)
    first = (news.sentences(said) or [said])[0].rstrip("。.!！")
    if ctx.ja:
        return (
            f"{origin}が{first}ので、行ってみる"
            if first.endswith(tuple("るうくすつぬむぶぐ"))
            else f"{origin}の話（{first}）に行ってみる"
        )
    return f"Go to {origin}'s event: {first}"


def write_intentions(ctx: WriterContext) -> dict[str, Any]:
    facts = ctx.facts
    today = int(facts.get("day") or 1)
    me = str(facts.get("agent_id") or "")
    lines = [str(line) for line in facts.get("previous") or [] if _still_ahead(str(line), today)]
    for item in facts.get("heard_items") or []:
        text = str(item.get("text") or "")
        if news.is_invitation(text) and find_hour(text) is not None and news.likes(ctx.seed, me, text):
            lines.append(_heard_line(ctx, item, today))
    lines = list(dict.fromkeys(line for line in lines if line.strip()))
    limit = int(facts.get("max_lines") or 4)
    return {"intentions": lines[:limit]}


WRITERS = {"IntentionsReply": write_intentions}
