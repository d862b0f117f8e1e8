"""A reply's actions checked against the world: unknown places, people and gestures and self-targets are dropped."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from pydantic import BaseModel, Field

from backend.action.prompts import describe_actions
from backend.action.schemas import ActionChoice, ActionChoices, AgentAction, actions_field_schema
from backend.action.validate import validate_actions
from backend.llm.base import json_schema_for
from backend.world.facts import WorldFacts

KNOWN = WorldFacts(
    pois={"cafe": "中央カフェ", "park": "公園"},
    agents=frozenset({"aoi", "ren"}),
    gestures=("wave", "bow"),
).with_participants(["aoi", "player:guest-1"])


def check(*raw: dict[str, Any]) -> tuple[list[AgentAction], list[dict[str, Any]]]:
    return validate_actions(list(raw), known=KNOWN, speaker_id="aoi")


def test_valid_actions_are_kept_in_order() -> None:
    kept, dropped = check(
        {"type": "go_to", "target": "cafe"}, {"type": "give", "target": "ren", "item": "りんご"}
    )
    assert kept == [
        AgentAction(type="go_to", target="cafe"),
        AgentAction(type="give", target="ren", item="りんご"),
    ]
    assert dropped == []


def test_people_gestures_players_and_end_conversation_are_kept() -> None:
    for raw, expected in [
        ({"type": "follow", "target": "ren"}, AgentAction(type="follow", target="ren")),
        (
            {"type": "look_at", "target": "player:guest-1"},
            AgentAction(type="look_at", target="player:guest-1"),
        ),
        ({"type": "gesture", "target": "bow"}, AgentAction(type="gesture", target="bow")),
        ({"type": "end_conversation", "target": None}, AgentAction(type="end_conversation")),
        # a target given on end_conversation, or an item on go_to, is left out rather than refused
        ({"type": "end_conversation", "target": "ren"}, AgentAction(type="end_conversation")),
    ]:
        assert check(raw) == ([expected], []), raw


def test_a_place_named_by_its_name_counts_as_that_place() -> None:
    kept, _ = check({"type": "go_to", "target": "公園"})
    assert kept == [AgentAction(type="go_to", target="park")]


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ({"type": "go_to", "target": "library"}, "no place 'library'"),
        ({"type": "go_to"}, "go_to without a target"),
        ({"type": "follow", "target": "hikari"}, "no agent or player 'hikari'"),
        ({"type": "look_at", "target": "player:stranger"}, "no agent or player 'player:stranger'"),
        ({"type": "gesture", "target": "dance"}, "no gesture 'dance'"),
        ({"type": "follow", "target": "aoi"}, "names the speaker itself"),
        ({"type": "look_at", "target": "aoi"}, "names the speaker itself"),
        ({"type": "give", "target": "aoi", "item": "本"}, "names the speaker itself"),
        ({"type": "give", "target": "ren"}, "give without an item"),
        ({"type": "give", "target": "ren", "item": "  "}, "give without an item"),
        ({"type": "give", "target": "ren", "item": "x" * 61}, "at most 60"),
        ({"type": "dance", "target": "park"}, "unknown type 'dance'"),
        ({"target": "park"}, "not an action"),
    ],
)
def test_what_the_world_lacks_is_dropped_with_a_reason(raw: dict[str, Any], reason: str) -> None:
    kept, dropped = check(raw)
    assert kept == []
    assert len(dropped) == 1 and dropped[0]["action"] == raw and reason in dropped[0]["reason"]


def test_duplicates_and_more_than_two_are_dropped_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="backend.action.validate"):
        kept, dropped = check(
            {"type": "gesture", "target": "wave"},
            {"type": "gesture", "target": "wave"},
            {"type": "go_to", "target": "library"},
            {"type": "go_to", "target": "park"},
            {"type": "look_at", "target": "ren"},
        )
    assert kept == [AgentAction(type="gesture", target="wave"), AgentAction(type="go_to", target="park")]
    assert [d["reason"] for d in dropped] == [
        "the same action twice",
        "no place 'library' in this world",
        "more than 2 actions with one line",
    ]
    assert (
        sum("action dropped" in r.getMessage() for r in caplog.records if r.levelno == logging.WARNING) == 3
    )


def test_choices_parsed_from_a_reply_are_accepted_too() -> None:
    class Reply(BaseModel):
        actions: ActionChoices = Field(default_factory=list)

    reply = Reply.model_validate({"actions": [{"type": "go_to", "target": "cafe"}, "wave"]})
    assert reply.actions == [ActionChoice(type="go_to", target="cafe")]  # the string is no action
    assert Reply.model_validate({"actions": None}).actions == []
    kept, dropped = validate_actions(reply.actions, known=KNOWN, speaker_id="ren")
    assert kept == [AgentAction(type="go_to", target="cafe")] and dropped == []


def test_the_schema_asks_for_at_most_two_actions_from_the_vocabulary() -> None:
    field = actions_field_schema()
    assert field["type"] == "array" and field["maxItems"] == 2
    assert field["items"]["properties"]["type"]["enum"] == [
        "go_to", "follow", "give", "gesture", "look_at", "end_conversation"
    ]  # fmt: skip

    class Reply(BaseModel):
        actions: ActionChoices = Field(default_factory=list)

    strict = json_schema_for(Reply)["properties"]["actions"]["items"]
    assert strict["additionalProperties"] is False and strict["required"] == ["type", "target", "item"]


def test_the_prompt_lists_real_ids_and_says_to_leave_actions_empty() -> None:
    text = describe_actions(
        "en", pois=[("cafe", "Central Café")], gestures=["wave", "bow"], people=[("ren", "Ren")]
    )
    assert "cafe (Central Café)" in text and "ren (Ren)" in text and "wave, bow" in text
    assert "leave actions empty" in text and "{" not in text
    ja = describe_actions("ja", pois=[("cafe", "中央カフェ")], gestures=["wave"], people=[])
    assert "cafe（中央カフェ）" in ja and "wave（手を振る）" in ja and "空のまま" in ja
    assert "follow" not in ja and "give" not in ja  # nobody to name: no person actions offered
    assert "go_to" not in describe_actions("en", pois=[], gestures=[], people=[])
