"""A reply's actions: offered in words, checked against the world, dropped when they name unknown things."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlmodel import Session

from backend.conversation.models import Turn
from backend.scripted import ScriptedLLM
from backend.world.models import PointOfInterest
from tests.conversation.helpers import add_agents, rows, turn
from tests.visitor.helpers import YUKI, dialogue_prompts, visitor_line


def _cafe(client: TestClient) -> None:
    with Session(client.app.state.engine) as session:  # type: ignore[attr-defined]
        session.add(PointOfInterest(id="cafe", name="中央カフェ"))
        session.add(PointOfInterest(id="park", name="公園"))
        session.commit()


def test_actions_naming_unknown_things_are_dropped_and_the_rest_sent(
    client: TestClient, scripted: ScriptedLLM
) -> None:
    add_agents(client)
    _cafe(client)
    scripted.enqueue(
        {
            "dialogue": "公園に行きましょう！",
            "emotion": "happy",
            "is_conversation_end": False,
            "actions": [
                {"type": "go_to", "target": "park"},
                {"type": "go_to", "target": "moon_base"},
                {"type": "gesture", "target": "backflip"},
                {"type": "follow", "target": "nobody"},
            ],
        },
        purpose="dialogue",
    )
    reply = client.post("/v1/conversation/turn", json=turn("aoi", "hikari", "a-1", [])).json()
    assert reply["actions"] == [{"type": "go_to", "target": "park", "item": None}]
    stored = rows(client, Turn, session_id="a-1")[0]
    dropped = {d["action"]["target"]: d["reason"] for d in stored.dropped_actions or []}
    assert set(dropped) == {"moon_base", "backflip", "nobody"}
    assert all(reason for reason in dropped.values())
    detail = client.get("/v1/conversations/a-1").json()
    assert len(detail["turns"][0]["dropped_actions"]) == 3
    # The prompt offered the world's real ids, in words, and asked for the field.
    system, moment = (m["content"] for m in dialogue_prompts(scripted)[-1])
    assert "- actions:" in system and "park (公園)" in moment and "hikari (ひかり)" in moment


def test_a_give_to_a_visitor_is_kept_and_end_conversation_ends(
    client: TestClient, scripted: ScriptedLLM
) -> None:
    add_agents(client)
    scripted.enqueue(
        {"dialogue": "この本をどうぞ。", "emotion": "happy", "is_conversation_end": False,
         "actions": [{"type": "give", "target": YUKI, "item": "詩集"}, {"type": "gesture", "target": "bow"}]},
        purpose="dialogue",
    )  # fmt: skip
    reply = client.post(
        "/v1/conversation/player-turn", json=visitor_line("a-2", "おすすめの本はありますか？")
    ).json()
    assert [(a["type"], a["target"], a["item"]) for a in reply["actions"]] == [
        ("give", YUKI, "詩集"), ("gesture", "bow", None),
    ]  # fmt: skip
    history = [reply["player_line"], f"葵: {reply['dialogue']}"]
    scripted.enqueue(
        {"dialogue": "それでは、失礼します。", "emotion": "neutral", "is_conversation_end": False,
         "actions": [{"type": "end_conversation"}]},
        purpose="dialogue",
    )  # fmt: skip
    last = client.post("/v1/conversation/player-turn", json=visitor_line("a-2", "ありがとう", history)).json()
    assert last["is_conversation_end"] and last["end_reason"] == "model"


def test_a_fallback_or_deflection_carries_no_actions(client: TestClient, scripted: ScriptedLLM) -> None:
    add_agents(client)
    scripted.enqueue(RuntimeError("model down"), purpose="dialogue")
    reply = client.post("/v1/conversation/turn", json=turn("aoi", "hikari", "a-3", [])).json()
    assert reply["fallback"] and reply["actions"] == []
    blocked = client.post("/v1/conversation/player-turn", json=visitor_line("a-4", "死ね")).json()
    assert blocked["deflected"] and blocked["actions"] == []


def test_with_actions_off_the_prompt_and_schema_ask_for_none(settings, scripted: ScriptedLLM) -> None:  # type: ignore[no-untyped-def]
    from backend.app import create_app

    with TestClient(
        create_app(settings.model_copy(update={"actions_in_turns": False}), llm=scripted)
    ) as client:
        add_agents(client)
        reply = client.post("/v1/conversation/turn", json=turn("aoi", "hikari", "a-5", [])).json()
        assert reply["actions"] == []
        call = scripted.calls("dialogue")[-1]
        assert call.schema is not None and "actions" not in call.schema["properties"]
        assert "- actions:" not in call.messages[0]["content"]
