"""Protocol version 1 clients: two-agent requests as they were sent before visitors and groups still work."""

from __future__ import annotations

from fastapi.testclient import TestClient

from backend.scripted import ScriptedLLM
from tests.conftest import drain
from tests.conversation.helpers import add_agents, turn

#: The reply fields of protocol version 1's TurnResult (the new ones only come after them).
V1_FIELDS = [
    "dialogue", "emotion", "is_conversation_end", "end_reason", "session_id", "turn_index", "fallback",
    "speaker_id", "target_id", "emotion_state", "history_fixes",
]  # fmt: skip
V1 = {"X-Machi-Protocol": "1"}


def test_a_version_1_conversation_of_two_agents_runs_as_before(
    client: TestClient, scripted: ScriptedLLM
) -> None:
    add_agents(client)
    scripted.enqueue({"dialogue": "こんにちは、ひかりさん。", "emotion": "happy", "is_conversation_end": False},
                     purpose="dialogue")  # fmt: skip
    first = client.post("/v1/conversation/turn", json=turn("aoi", "hikari", "c-1", []), headers=V1)
    assert first.status_code == 200 and first.headers["X-Machi-Protocol"] == "2"
    reply = first.json()
    assert list(reply)[: len(V1_FIELDS)] == V1_FIELDS  # old fields first and unchanged; new ones appended
    assert (reply["dialogue"], reply["emotion"], reply["turn_index"]) == (
        "こんにちは、ひかりさん。",
        "happy",
        0,
    )
    assert reply["participants"] == ["aoi", "hikari"] and reply["next_speaker"] == "hikari"
    assert reply["left"] == [] and reply["actions"] == [] and reply["deflected"] is False
    # A retry is the stored reply, byte for byte.
    again = client.post("/v1/conversation/turn", json=turn("aoi", "hikari", "c-1", []), headers=V1)
    assert again.content == first.content
    # The partner's goodbye ends it for both, as before (no one "leaves" a conversation of two).
    history = ["葵: こんにちは、ひかりさん。"]
    scripted.enqueue(
        {"dialogue": "またね、葵！", "emotion": "happy", "is_conversation_end": True}, purpose="dialogue"
    )
    bye = client.post("/v1/conversation/turn", json=turn("hikari", "aoi", "c-1", history), headers=V1).json()
    assert bye["is_conversation_end"] and bye["end_reason"] == "farewell" and bye["left"] == []
    assert bye["next_speaker"] is None and bye["participants"] == []
    drain(client)
    detail = client.get("/v1/conversations/c-1", headers=V1).json()
    assert detail["reflected"] and [p["id"] for p in detail["participants"]] == ["aoi", "hikari"]
    for agent in ("aoi", "hikari"):
        kinds = {m["type"] for m in client.get(f"/v1/agents/{agent}/memories", headers=V1).json()["memories"]}
        assert kinds == {"observation", "reflection"}


def test_a_third_agent_cannot_enter_a_version_1_pair(client: TestClient) -> None:
    add_agents(client)
    client.post("/v1/conversation/turn", json=turn("aoi", "hikari", "c-2", []), headers=V1)
    other = client.post("/v1/conversation/turn", json=turn("hikari", "emma", "c-2", ["葵: やあ"]), headers=V1)
    assert other.status_code in (404, 409)  # emma does not exist here; a known outsider is a 409 (test_group)
