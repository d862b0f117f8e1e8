"""EMOTION_FROM_TURN: the speaker's feeling rides on its own turn reply, applied without an emotion call."""

from __future__ import annotations

from backend.config import Settings
from backend.conversation.schemas import turn_reply_for
from backend.llm.base import json_schema_for
from backend.scripted import ScriptedLLM
from tests.conftest import drain, make_client
from tests.conversation.helpers import add_agents, turn


def test_the_turn_schema_asks_for_a_wheel_word_in_the_speakers_language() -> None:
    ja = json_schema_for(turn_reply_for("ja"))["properties"]["feeling"]
    en = json_schema_for(turn_reply_for("en"))["properties"]["feeling"]
    assert "恍惚" in ja["enum"] and "平静" in ja["enum"] and "joy" not in ja["enum"]
    assert "rage" in en["enum"] and "calm" in en["enum"]
    assert "feeling" not in json_schema_for(turn_reply_for(None))["properties"]


def test_the_speakers_feeling_moves_its_state_without_an_emotion_call(
    settings: Settings, scripted: ScriptedLLM
) -> None:
    scripted.enqueue(
        {"dialogue": "もう、ひどいよ！", "emotion": "angry", "is_conversation_end": False, "feeling": "激怒"},
        purpose="dialogue",
    )
    with make_client(settings, scripted) as client:
        add_agents(client)
        before = client.get("/v1/agents/aoi/emotion").json()
        reply = client.post("/v1/conversation/turn", json=turn("aoi", "hikari", "s-f", [])).json()
        drain(client)
        aoi = client.get("/v1/agents/aoi/emotion").json()
        hikari = client.get("/v1/agents/hikari/emotion").json()
    assert reply["dialogue"] == "もう、ひどいよ！"
    assert "feeling" in scripted.calls("dialogue")[0].messages[0]["content"]
    assert scripted.calls("emotion") == []
    # One bounded step (EMOTION_MAX_STEP 35) toward rage's band, caused by the conversation.
    assert aoi["evaluated"] is True
    assert aoi["values"]["anger"] == before["values"]["anger"] + settings.emotion_max_step
    assert "ひかり" in aoi["cause"]
    assert hikari["evaluated"] is False  # the listener is updated by its own reply


def test_a_word_off_the_wheel_gets_the_speaker_evaluated(settings: Settings, scripted: ScriptedLLM) -> None:
    scripted.enqueue(
        {"dialogue": "こんにちは！", "emotion": "happy", "is_conversation_end": False, "feeling": "うれしい"},
        purpose="dialogue",
    )
    with make_client(settings, scripted) as client:
        add_agents(client)
        client.post("/v1/conversation/turn", json=turn("aoi", "hikari", "s-g", []))
        drain(client)
    assert [call.options.agent_id for call in scripted.calls("emotion")] == ["aoi"]


def test_without_emotion_from_turn_both_participants_are_evaluated(
    settings: Settings, scripted: ScriptedLLM
) -> None:
    with make_client(settings, scripted, emotion_from_turn=False) as client:
        add_agents(client)
        client.post("/v1/conversation/turn", json=turn("aoi", "hikari", "s-h", []))
        drain(client)
    assert "feeling" not in scripted.calls("dialogue")[0].messages[0]["content"]
    assert sorted(call.options.agent_id for call in scripted.calls("emotion")) == ["aoi", "hikari"]
