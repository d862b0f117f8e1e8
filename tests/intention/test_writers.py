"""The scripted writers carry content: a line says what a memory says, a plan keeps an event it likes."""

from __future__ import annotations

import random
from typing import Any

from backend.llm.base import GenerateOptions
from backend.scripted.engine import WriterContext
from backend.scripted.news import likes
from backend.scripted.writers.dialogue import write_turn
from backend.scripted.writers.plan import write_plan

POIS = [{"id": "park", "name": "Park", "kind": "park"}, {"id": "cafe", "name": "Café", "kind": "cafe"},
        {"id": "home_ren", "name": "Ren's place", "kind": "home"}]  # fmt: skip


def _timed(items: list[dict[str, Any]], start: float) -> list[dict[str, Any]]:
    """The reply's items laid out in order from the window's start (the schema asks for hours)."""
    out = []
    for item in items:
        out.append({**item, "start": start, "end": start + item["hours"]})
        start += item["hours"]
    return out


def _ctx(facts: dict[str, Any], language: str = "ja", seed: int = 0) -> WriterContext:
    return WriterContext(facts, random.Random(seed), [], GenerateOptions(language=language), None)


def test_a_line_says_what_a_memory_says() -> None:
    facts = {
        "speaker": {"id": "aoi", "name": "葵", "speaking_style": ""},
        "partner": {"id": "hikari", "name": "ひかり"},
        "memories": ["蓮が「工房で新しい椅子を作っているんだ、もうすぐ完成するよ」と言った"],
        "history": ["ひかり: おはよう、葵！"],
        "partner_last_line": "おはよう、葵！",
        "turn_index": 1,
        "max_turns": 8,
        "time_of_day": 9.0,
    }
    line = write_turn(_ctx(facts))["dialogue"]
    assert "蓮が「工房で新しい椅子を作っているんだ" in line


def test_the_english_planner_keeps_an_event_from_an_important_memory() -> None:
    memory = 'Grace told me: "Come to my party at the Park tomorrow at 7pm!"'
    facts = {
        "agent_id": "oliver", "language": "en", "day": 2, "home_poi": "home_ren", "pois": POIS,
        "window": {"start": 7.0, "end": 23.0}, "persona": {"traits": []},
        "important_dated": [{"content": memory, "day": 1, "time_of_day": 10.0}],
    }  # fmt: skip
    items = _timed(write_plan(_ctx(facts, "en"))["items"], 7.0)
    at_seven = [it for it in items if it["start"] <= 19.0 < it["end"]]
    assert (at_seven[0]["poi_id"] == "park") is likes(0, "oliver", memory)
    # The intentions' appointment is kept whatever the character's taste: it means to go.
    facts["intentions"] = ["Go to Grace's party at the Park today at 7pm"]
    items = _timed(write_plan(_ctx(facts, "en"))["items"], 7.0)
    assert [it["poi_id"] for it in items if it["start"] <= 19.0 < it["end"]] == ["park"]
