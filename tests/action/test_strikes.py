"""Invalid action lists in a row turn a conversation's actions off; the others keep theirs."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from fastapi.testclient import TestClient

from backend.action.strikes import ActionStrikes
from backend.scripted import ScriptedLLM
from tests.conversation.helpers import add_agents, turn
from tests.visitor.helpers import dialogue_prompts


def _line(text: str, *actions: dict[str, Any]) -> dict[str, Any]:
    return {"dialogue": text, "emotion": "neutral", "is_conversation_end": False, "actions": list(actions)}


SENTENCE = {"type": "go_to", "target": "I will walk over to the cafe now"}


def _asked_with_actions(scripted: ScriptedLLM) -> bool:
    """Whether the last dialogue call asked for actions (its schema and its prompt)."""
    call = scripted.calls("dialogue")[-1]
    in_schema = "actions" in (call.schema or {}).get("properties", {})
    in_prompt = "- actions:" in dialogue_prompts(scripted)[-1][0]["content"]
    assert in_schema == in_prompt
    return in_schema


def test_three_invalid_lists_in_a_row_turn_that_conversations_actions_off(
    client: TestClient, scripted: ScriptedLLM, caplog: pytest.LogCaptureFixture
) -> None:
    add_agents(client)
    history: list[str] = []
    lines = ["こんにちは。", "元気？", "カフェへ行こう。"]
    with caplog.at_level(logging.WARNING, logger="backend.action.strikes"):
        for index, text in enumerate(lines):
            scripted.enqueue(_line(text, SENTENCE), purpose="dialogue")
            speaker, partner = ("aoi", "hikari") if index % 2 == 0 else ("hikari", "aoi")
            reply = client.post("/v1/conversation/turn", json=turn(speaker, partner, "s-1", history)).json()
            assert reply["dialogue"] == text and reply["actions"] == []  # the line kept, the action dropped
            assert _asked_with_actions(scripted)
            history.append(f"{'葵' if speaker == 'aoi' else 'ひかり'}: {text}")
    assert sum("actions off for conversation s-1" in r.getMessage() for r in caplog.records) == 1
    client.post("/v1/conversation/turn", json=turn("hikari", "aoi", "s-1", history))
    assert not _asked_with_actions(scripted)
    # Another conversation is still asked with actions.
    client.post("/v1/conversation/turn", json=turn("aoi", "hikari", "s-2", []))
    assert _asked_with_actions(scripted)


def test_a_valid_list_resets_the_count() -> None:
    strikes = ActionStrikes(limit=3)
    for invalid in (True, True, False, True, True):
        assert not strikes.record("s", invalid=invalid)
    assert not strikes.off("s")
    assert strikes.record("s", invalid=True) and strikes.off("s")
    assert not strikes.record("s", invalid=True)  # logged once


def test_zero_never_turns_actions_off_and_the_sessions_kept_are_bounded() -> None:
    never = ActionStrikes(limit=0)
    for _ in range(10):
        never.record("s", invalid=True)
    assert not never.off("s")
    bounded = ActionStrikes(limit=1, kept=2)
    for session in ("a", "b", "c"):
        bounded.record(session, invalid=True)
    assert not bounded.off("a") and bounded.off("b") and bounded.off("c")
