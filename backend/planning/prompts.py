"""What a plan call is built from (facts) and how it is asked (messages)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from backend.gametime import format_clock
from backend.llm.base import Message
from backend.memory.models import VISITOR_TAG, Memory
from backend.planning.models import Plan
from backend.world.models import Agent, PointOfInterest

if TYPE_CHECKING:
    from backend.memory.service import MemoryService

#: How much of an agent's past goes into a plan prompt.
DEFAULT_REFLECTIONS = 3
DEFAULT_IMPORTANT = 5
IMPORTANT_FROM = 6

#: The reply's fields in words: a JSON example's placeholders ("...") are what a small model copies.
#: No example values either: SmolLM2 shown "13.5 means 13:30" wrote 13.5 into every item, and given an end
#: hour it wrote the day's last hour into the first item. Items follow each other and say how long they
#: take (at most MAX_ITEM_HOURS, in the schema), so no item can take the whole day and none can overlap.
#: Places are listed in the user message (the grammar allows only their ids), not in a field's line, where
#: a small model took them for the words to copy into `activity`.
SYSTEM = (
    "You plan one day for a character who lives in a small town, from {window}.\n"
    "Reply with a JSON object with one field:\n"
    "- items: the day's activities in the order they happen, each with these fields:\n"
    "- poi_id: where it happens: the id of one of the places listed\n"
    "- activity: what the character does there, a short phrase in {language}, in keeping with the character\n"
    "- hours: how many hours it takes, as a number; the next activity begins when it ends"
)


def build_facts(
    previous: Plan | None,
    memory: MemoryService,
    agent: Agent,
    pois: list[PointOfInterest],
    *,
    day: int,
    window: tuple[float, float],
    home: str | None,
    reason: str | None,
    kept: list[dict[str, Any]],
    intentions: list[str] | None = None,
) -> dict[str, Any]:
    """The structured context of a plan call: persona, places, yesterday (`previous`: its plan), and what
    matters lately."""
    # A day's plan is made from the character's own memories: a visitor's words (marked) never set its day.
    reflections = _own(memory.recent(agent.world_id, agent.id, limit=20, types=["reflection"]))
    yesterday = [m for m in reflections if m.created_day == day - 1] or [
        m for m in reflections if m.created_day < day
    ]
    important = _own(
        memory.recent(agent.world_id, agent.id, limit=DEFAULT_IMPORTANT, min_importance=IMPORTANT_FROM)
    )
    return {
        "language": agent.language,
        "agent_id": agent.id,
        "name": agent.name,
        "persona": {
            "name": agent.name,
            "age": agent.age,
            "traits": list(agent.traits),
            "backstory": agent.backstory,
            "speaking_style": agent.speaking_style,
        },
        "home_poi": home,
        "wake_hour": agent.wake_hour,
        "sleep_hour": agent.sleep_hour,
        "day": day,
        "window": {"start": window[0], "end": window[1]},
        "pois": [{"id": p.id, "name": p.name, "kind": p.kind, "description": p.description} for p in pois],
        "reason": reason,
        "kept_items": kept,
        "yesterday_reflections": [m.content for m in yesterday[:DEFAULT_REFLECTIONS]],
        "yesterday_plan": list(previous.items) if previous else [],
        "important_memories": [m.content for m in important],
        "important_dated": [
            {"content": m.content, "day": m.created_day, "time_of_day": m.created_time_of_day}
            for m in important
        ],
        "intentions": list(intentions or []),
    }


def build_messages(facts: dict[str, Any]) -> list[Message]:
    """The chat messages for a plan call, rendered from `facts`."""
    window = facts["window"]
    language = "Japanese" if facts["language"] == "ja" else "English"
    system = SYSTEM.format(
        window=f"{format_clock(window['start'])} to {format_clock(window['end'])}", language=language
    )
    persona = facts["persona"]
    lines = [
        f"Character: {persona['name']}" + (f", {persona['age']} years old" if persona["age"] else ""),
        f"Traits: {', '.join(persona['traits']) or '-'}",
        f"Backstory: {persona['backstory'] or '-'}",
        f"Home: {facts['home_poi'] or '-'}; wakes {format_clock(facts['wake_hour'])}, "
        f"sleeps {format_clock(facts['sleep_hour'])}",
        f"Day {facts['day']}.",
        "Places:",
        *[f"- {p['id']}: {p['name']} ({p['kind']}) {p['description']}".rstrip() for p in facts["pois"]],
    ]
    lines += _section("Yesterday's reflections", facts["yesterday_reflections"])
    lines += _section("Yesterday's plan", [_item_line(it) for it in facts["yesterday_plan"]])
    lines += _section(
        "On the character's mind today (keep each appointment at its time and place)",
        facts.get("intentions") or [],
    )
    lines += _section("Important recent memories", facts["important_memories"])
    if facts["kept_items"]:
        lines += _section("Already done today (keep)", [_item_line(it) for it in facts["kept_items"]])
    if facts["reason"]:
        lines.append(f"The plan must change because: {facts['reason']}")
    lines.append(f"Plan {format_clock(window['start'])}-{format_clock(window['end'])}.")
    return [{"role": "system", "content": system}, {"role": "user", "content": "\n".join(lines)}]


#: What a plan must be, said with the reason when one is beyond repair (the re-ask).
PLAN_RULES = (
    "answer again with a complete plan: the activities in the order they happen, at the places listed, "
    "each taking some hours, together covering the whole day"
)


def _section(title: str, entries: list[str]) -> list[str]:
    return [f"{title}:", *[f"- {entry}" for entry in entries]] if entries else []


def _item_line(item: dict[str, Any]) -> str:
    span = f"{format_clock(item['start'])}-{format_clock(item['end'])}"
    return f"{span} {item.get('poi_id')}: {item.get('activity')}"


def _own(memories: list[Memory]) -> list[Memory]:
    """The memories that did not come from a visitor's words (VISITOR_TAG)."""
    return [m for m in memories if VISITOR_TAG not in (m.tags or ())]
