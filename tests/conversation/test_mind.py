"""A turn and the rest of the mind: emotion (never waited for), person memory, retrieval triggers, events."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from backend.config import Settings
from backend.events import Event
from backend.scripted import ScriptedLLM
from tests.conftest import drain, make_client
from tests.conversation.helpers import add_agents, turn
from tests.gated import GatedLLM
from tests.reliability.helpers import wait_until

HAPPY = {"joy": 90, "trust": 40, "fear": 0, "surprise": 10, "sadness": 0, "disgust": 0, "anger": 0,
         "anticipation": 40, "label": "恍惚"}  # fmt: skip
GRUMPY = {"joy": 0, "trust": 5, "fear": 0, "surprise": 0, "sadness": 10, "disgust": 30, "anger": 85,
          "anticipation": 0, "label": "激怒"}  # fmt: skip


def test_turn_completes_while_emotion_evaluation_is_blocked(settings: Settings) -> None:
    llm = GatedLLM("emotion")
    # The separate evaluation after each line (a turn's own feeling needs no call: see test_feeling.py).
    with make_client(settings.model_copy(update={"emotion_from_turn": False}), llm) as client:
        add_agents(client)
        first = client.post("/v1/conversation/turn", json=turn("aoi", "hikari", "s-e", [])).json()
        assert first["fallback"] is False and first["dialogue"]
        # The evaluation starts after the reply (a background task): wait for it to reach the gate.
        wait_until(lambda: llm.waiting >= 1, what="the emotion evaluation to start")
        assert client.get("/v1/agents/aoi/emotion").json()["evaluated"] is False

        # Release the gate with a strong reading: the NEXT turn's prompt and reply read the new state.
        llm.enqueue(HAPPY, purpose="emotion")
        llm.enqueue(HAPPY, purpose="emotion")
        llm.open_gate(client)
        drain(client)
        second = client.post(
            "/v1/conversation/turn",
            json=turn("aoi", "hikari", "s-e", [f"葵: {first['dialogue']}", "ひかり: うん！"]),
        ).json()
    # One evaluation moves joy one step (EMOTION_MAX_STEP) toward HAPPY's 90; joy is then the strongest
    # emotion, so the model's "ecstasy" still fits and is kept.
    assert second["emotion_state"]["label"] == "恍惚"
    assert second["emotion_state"]["values"]["joy"] < HAPPY["joy"]
    prompt = llm.calls("dialogue")[-1].messages[-1]["content"]
    assert "恍惚" in prompt


def test_invalid_model_emotion_takes_the_state_preset(settings: Settings, scripted: ScriptedLLM) -> None:
    with make_client(settings, scripted, emotion_from_turn=False) as client:  # the state from evaluations
        _invalid_emotion_takes_the_state_preset(client, scripted)


def _invalid_emotion_takes_the_state_preset(client: TestClient, scripted: ScriptedLLM) -> None:
    add_agents(client)
    scripted.enqueue(GRUMPY, purpose="emotion")
    scripted.enqueue(GRUMPY, purpose="emotion")
    client.post("/v1/conversation/turn", json=turn("aoi", "hikari", "s-v", []))
    drain(client)
    scripted.enqueue(
        {"dialogue": "……別に。", "emotion": "grumbly", "is_conversation_end": False}, purpose="dialogue"
    )
    reply = client.post(
        "/v1/conversation/turn", json=turn("aoi", "hikari", "s-v", ["葵: やあ", "ひかり: どうしたの？"])
    ).json()
    assert reply["emotion_state"]["label"] and "vrm_emotion" not in reply["emotion_state"]
    assert client.get("/v1/agents/aoi/emotion").json()["vrm_emotion"] == "angry"  # the resting face
    assert reply["emotion"] == "angry"  # "grumbly" is no preset: the face follows the state
    # A preset the model names is kept even when the state says otherwise.
    scripted.enqueue(
        {"dialogue": "なんてね！", "emotion": "happy", "is_conversation_end": False}, purpose="dialogue"
    )
    reply = client.post(
        "/v1/conversation/turn",
        json=turn("aoi", "hikari", "s-v", ["葵: やあ", "ひかり: どうしたの？", "葵: ……", "ひかり: え？"]),
    ).json()
    assert reply["emotion"] == "happy"


def _talk(client: TestClient, session_id: str, day: int) -> None:
    history: list[str] = []
    speakers = [("aoi", "hikari", "葵"), ("hikari", "aoi", "ひかり")]
    for index in range(8):
        me, other, name = speakers[index % 2]
        reply = client.post(
            "/v1/conversation/turn", json=turn(me, other, session_id, history, day=day)
        ).json()
        history.append(f"{name}: {reply['dialogue']}")
        if reply["is_conversation_end"]:
            break
    client.post("/v1/conversation/end", json={"session_id": session_id, "reason": "distance"})
    drain(client)


def test_person_memory_after_two_conversations_feeds_the_next_prompt(
    client: TestClient, scripted: ScriptedLLM
) -> None:
    add_agents(client)
    _talk(client, "s-p1", day=1)
    first = client.get("/v1/agents/aoi/people/hikari").json()
    _talk(client, "s-p2", day=2)
    second = client.get("/v1/agents/aoi/people/hikari").json()
    assert first["interaction_count"] == 1 and second["interaction_count"] == 2
    assert second["summary"]
    assert client.get("/v1/agents/hikari/people").json()  # both sides remember
    client.post("/v1/conversation/turn", json=turn("aoi", "hikari", "s-p3", [], day=3))
    prompt = scripted.calls("dialogue")[-1].messages[-1]["content"]
    assert "What you know about ひかり" in prompt


def test_asking_about_today_retrieves_latest_observations_in_order(
    client: TestClient, scripted: ScriptedLLM
) -> None:
    add_agents(client)
    for hour, text in (
        (9, "朝に公園を散歩した"),
        (11, "図書館で本を借りた"),
        (13, "中央カフェでケーキを食べた"),
    ):
        client.post("/v1/agents/aoi/memories", json={"type": "observation", "content": text, "importance": 3,
                                                      "day": 1, "time_of_day": hour})  # fmt: skip
    client.post("/v1/conversation/turn", json=turn("aoi", "hikari", "s-t", ["ひかり: 今日何した？"]))
    call = scripted.calls("dialogue")[-1]
    memories = call.options.facts["memories"]
    assert all(any(key in m for m in memories) for key in ("公園", "図書館", "ケーキ"))
    prompt = call.messages[-1]["content"]  # the model reads them in the order they happened
    order = [prompt.index(key) for key in ("公園", "図書館", "ケーキ")]
    assert order == sorted(order)


def test_turns_and_endings_are_published_to_the_world(client: TestClient) -> None:
    add_agents(client)
    heard: list[Event[Any]] = []
    client.app.state.events.subscribe(heard.append, types=["conversation.turn", "conversation.ended"])  # type: ignore[attr-defined]
    client.post("/v1/conversation/turn", json=turn("aoi", "hikari", "s-ev", []))
    client.post("/v1/conversation/end", json={"session_id": "s-ev", "reason": "distance"})
    client.post("/v1/conversation/end", json={"session_id": "s-ev", "reason": "distance"})
    assert [e.type for e in heard] == ["conversation.turn", "conversation.ended"]
    assert heard[0].payload.agent_id == "aoi" and heard[1].payload.reason == "distance"
