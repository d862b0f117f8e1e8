"""GET /v1/conversations and /v1/conversations/{session_id}."""

from __future__ import annotations

from fastapi.testclient import TestClient

from backend.scripted import ScriptedLLM
from tests.conversation.helpers import EMMA, LIAM, add_agents, turn


def test_list_filter_and_detail(client: TestClient, scripted: ScriptedLLM) -> None:
    add_agents(client)
    add_agents(client, EMMA, LIAM)
    scripted.enqueue(
        {"dialogue": "うーん…", "emotion": "sad", "is_conversation_end": False}, purpose="dialogue"
    )
    first = client.post(
        "/v1/conversation/turn", json=turn("aoi", "hikari", "s-a", [], day=3, time_of_day=9.25)
    ).json()
    history = [f"葵: {first['dialogue']}"]
    client.post("/v1/conversation/turn", json=turn("hikari", "aoi", "s-a", history, day=3, time_of_day=9.5))
    client.post("/v1/conversation/turn", json=turn("emma", "liam", "s-b", [], location_name="Park"))
    client.post("/v1/conversation/end", json={"session_id": "s-a", "reason": "distance"})

    everything = client.get("/v1/conversations").json()["conversations"]
    assert {c["session_id"] for c in everything} == {"s-a", "s-b"}
    only_aoi = client.get("/v1/conversations", params={"agent_id": "aoi"}).json()["conversations"]
    assert [c["session_id"] for c in only_aoi] == ["s-a"]
    assert len(client.get("/v1/conversations", params={"limit": 1}).json()["conversations"]) == 1

    detail = client.get("/v1/conversations/s-a").json()
    assert detail["participants"] == [
        {"id": "aoi", "name": "葵", "kind": "agent", "left": False},
        {"id": "hikari", "name": "ひかり", "kind": "agent", "left": False},
    ]
    assert detail["location_name"] == "中央カフェ"
    assert (detail["start_day"], detail["start_time_of_day"]) == (3, 9.25)
    assert (detail["end_day"], detail["end_time_of_day"], detail["end_reason"]) == (3, 9.5, "distance")
    assert [(t["speaker_id"], t["emotion"], t["fallback"]) for t in detail["turns"]] == [
        ("aoi", "sad", False),
        ("hikari", detail["turns"][1]["emotion"], False),
    ]
    assert detail["turns"][0]["dialogue"] == "うーん…"


def test_unknown_conversation_is_404_and_bad_limit_422(client: TestClient) -> None:
    assert client.get("/v1/conversations/nope").status_code == 404
    assert client.get("/v1/conversations", params={"limit": 0}).status_code == 422
