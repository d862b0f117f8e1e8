"""A turn's actions in the schema: each type's target an enum of the ids the prompt offers, the list bounded."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from backend.action.targets import ActionTargets, action_choice_for, offered_targets
from backend.action.validate import validate_actions
from backend.conversation.schemas import turn_reply_for
from backend.llm.base import json_schema_for, parse_reply
from backend.llm.grammar import json_schema_to_gbnf
from backend.world.facts import WorldFacts
from tests.llm.gbnf_matcher import accepts

TARGETS = ActionTargets(places=("cafe", "shrine"), people=("hikari", "player:yuki"), gestures=("wave", "bow"))
FACTS = WorldFacts(
    pois={"cafe": "中央カフェ", "shrine": "神社", "library": "図書館"},
    agents=frozenset({"aoi", "hikari", "ren"}),
    gestures=("wave", "bow"),
    participants=frozenset({"aoi", "hikari", "player:yuki"}),
)


def _reply(*actions: dict[str, Any]) -> str:
    body = {
        "dialogue": "行こう。",
        "emotion": "happy",
        "is_conversation_end": False,
        "actions": list(actions),
    }
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"))


def _variants() -> dict[str, dict[str, Any]]:
    """The schema's action shapes by type, as providers get them."""
    items = json_schema_for(turn_reply_for(None, TARGETS))["properties"]["actions"]["items"]["anyOf"]
    by_type: dict[str, dict[str, Any]] = {}
    for variant in items:
        kind = variant["properties"]["type"]
        for name in kind.get("enum", [kind.get("const")]):
            by_type[name] = variant["properties"]
    return by_type


def test_each_type_names_only_the_offered_ids_and_the_list_is_bounded() -> None:
    schema = json_schema_for(turn_reply_for("ja", TARGETS))
    assert schema["properties"]["actions"]["maxItems"] == 2
    assert '"const"' not in json.dumps(schema)  # one-value enums: every structured-output dialect takes them
    variants = _variants()
    assert variants["go_to"]["target"]["enum"] == ["cafe", "shrine"]
    for kind in ("follow", "look_at", "give"):
        assert variants[kind]["target"]["enum"] == ["hikari", "player:yuki"]
    assert variants["gesture"]["target"]["enum"] == ["wave", "bow"]
    assert "target" not in variants["end_conversation"]
    assert variants["give"]["item"]["maxLength"] == 60
    # Nothing in an action is unbounded text: the whole field has a ceiling a small model cannot run past.
    assert all(
        "enum" in prop or "const" in prop or "maxLength" in prop
        for props in variants.values()
        for prop in props.values()
    )


def test_a_sentence_as_target_is_refused_by_the_schema_model() -> None:
    shapes: TypeAdapter[Any] = TypeAdapter(action_choice_for(TARGETS))
    assert shapes.validate_python({"type": "go_to", "target": "shrine"})
    for sentence in (
        {"type": "go_to", "target": "I want to go to the cafe with Hikari"},
        {"type": "follow", "target": "ひかりについて行く"},
        {"type": "gesture", "target": "waves happily at her friend"},
        {"type": "go_to", "target": "library"},  # a real place the prompt did not offer
    ):
        with pytest.raises(ValidationError):
            shapes.validate_python(sentence)


def test_the_grammar_cannot_write_a_free_text_target() -> None:
    grammar = json_schema_to_gbnf(json_schema_for(turn_reply_for(None, TARGETS)))
    assert accepts(grammar, _reply({"type": "go_to", "target": "cafe"}, {"type": "gesture", "target": "bow"}))
    assert accepts(grammar, _reply({"type": "give", "target": "player:yuki", "item": "お茶"}))
    assert not accepts(grammar, _reply({"type": "go_to", "target": "the cafe by the station"}))
    assert not accepts(grammar, _reply({"type": "gesture", "target": "cafe"}))
    three = [{"type": "gesture", "target": "wave"}] * 3
    assert not accepts(grammar, _reply(*three))


def test_the_schema_is_built_once_per_set_of_ids() -> None:
    same = ActionTargets(("cafe", "shrine"), ("hikari", "player:yuki"), ("wave", "bow"))
    assert turn_reply_for(None, same) is turn_reply_for(None, TARGETS)
    other = ActionTargets(("cafe",), ("hikari",), ("wave",))
    assert turn_reply_for(None, other) is not turn_reply_for(None, TARGETS)


def test_a_type_with_nothing_to_name_is_left_out() -> None:
    shapes: TypeAdapter[Any] = TypeAdapter(action_choice_for(ActionTargets((), ("hikari",), ("wave",))))
    with pytest.raises(ValidationError):
        shapes.validate_python({"type": "go_to", "target": "cafe"})
    assert shapes.validate_python({"type": "end_conversation"})


def test_a_provider_that_ignores_the_schema_keeps_its_line_and_any_real_id_still_counts() -> None:
    # Validation stays kind: the line survives, and validate.py keeps what the world has (the library, which
    # the schema did not offer, is still a real place) and drops the sentence with a reason.
    text = _reply({"type": "go_to", "target": "library"}, {"type": "go_to", "target": "the cafe over there"})
    reply = parse_reply(text, turn_reply_for(None, TARGETS))
    assert reply.dialogue == "行こう。"
    kept, dropped = validate_actions(reply.actions, known=FACTS, speaker_id="aoi")  # type: ignore[attr-defined]
    assert [(a.type, a.target) for a in kept] == [("go_to", "library")]
    assert [d["action"]["target"] for d in dropped] == ["the cafe over there"]


def test_offered_targets_are_the_worlds_places_and_gestures_and_the_others_present() -> None:
    targets = offered_targets(FACTS, ["hikari", "player:yuki"])
    assert targets.places == ("cafe", "shrine", "library")
    assert targets.people == ("hikari", "player:yuki")
    assert targets.gestures == ("wave", "bow")
