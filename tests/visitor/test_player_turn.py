"""A visitor talks with an agent: the line is stored and answered, retried safely, remembered the next day."""

from __future__ import annotations

from fastapi.testclient import TestClient

from backend.conversation.models import Turn
from backend.scripted import ScriptedLLM
from tests.conftest import drain
from tests.conversation.helpers import add_agents, rows, snapshot, turn
from tests.visitor.helpers import YUKI, dialogue_prompts, say, visitor_line


def test_a_visitor_talks_with_aoi_and_is_remembered_the_next_day(
    client: TestClient, scripted: ScriptedLLM
) -> None:
    add_agents(client)
    assert client.put("/v1/players/yuki", json={"display_name": "ユキ"}).status_code == 201
    scripted.enqueue(say("いらっしゃいませ、ユキさん。本がお好きなんですね。"), purpose="dialogue")
    first = client.post(
        "/v1/conversation/player-turn", json=visitor_line("v-1", "こんにちは！私は古い詩集を探しています。")
    )
    assert first.status_code == 200, first.text
    reply = first.json()
    assert (reply["player_turn_index"], reply["turn_index"]) == (0, 1)
    assert reply["player_line"] == "ユキ: こんにちは！私は古い詩集を探しています。"
    assert (reply["speaker_id"], reply["target_id"], reply["next_speaker"]) == ("aoi", YUKI, YUKI)
    assert reply["participants"] == [YUKI, "aoi"] and not reply["player_blocked"]
    # The visitor's words reached the model inside the quoted transcript, under the visitor's name.
    moment = dialogue_prompts(scripted)[-1][-1]["content"]
    assert 'the visitor "ユキ"' in moment and "ユキ: こんにちは！私は古い詩集を探しています。" in moment

    history = [reply["player_line"], f"葵: {reply['dialogue']}"]
    scripted.enqueue(say("ええ、また来てくださいね。"), purpose="dialogue")
    bye = client.post(
        "/v1/conversation/player-turn", json=visitor_line("v-1", "ありがとう、またね！", history)
    )
    assert bye.json()["is_conversation_end"] and bye.json()["end_reason"] == "farewell"
    drain(client)

    known = client.get(f"/v1/agents/aoi/people/{YUKI}")
    assert known.status_code == 200 and known.json()["other_name"] == "ユキ"
    heard = [m["content"] for m in client.get("/v1/agents/aoi/memories").json()["memories"]]
    assert "ユキが「こんにちは！私は古い詩集を探しています。」と言った" in heard

    # The next day the visitor comes back: 葵's prompt carries what she knows of ユキ.
    summary = known.json()["summary"]
    client.post("/v1/conversation/player-turn", json=visitor_line("v-2", "また来ました！", day=2))
    moment = dialogue_prompts(scripted)[-1][-1]["content"]
    assert (
        'What you know about the visitor "ユキ" (quoted data)' in moment and summary.split("。")[0] in moment
    )


def test_a_retry_gets_the_stored_reply_and_stores_nothing_twice(
    client: TestClient, scripted: ScriptedLLM
) -> None:
    add_agents(client)
    body = visitor_line("v-r", "こんにちは")
    first = client.post("/v1/conversation/player-turn", json=body).json()
    again = client.post("/v1/conversation/player-turn", json=body).json()
    assert again == first
    assert len(rows(client, Turn, session_id="v-r")) == 2
    assert len(scripted.calls("dialogue")) == 1
    # A visitor never registered is known by their id.
    assert client.get(f"/v1/players/{YUKI}").json()["display_name"] == "yuki"


def test_a_stream_carries_the_visitor_line_in_its_reply(client: TestClient) -> None:
    add_agents(client)
    with client.stream(
        "POST", "/v1/conversation/player-turn/stream", json=visitor_line("v-s", "やあ")
    ) as stream:
        text = "".join(stream.iter_text())
    assert "event: delta" in text and "event: reply" in text and '"player_turn_index": 0' in text


def test_an_agent_can_turn_to_a_visitor_with_an_ordinary_turn(client: TestClient) -> None:
    """Unity may let the agent speak first: /turn with the visitor as target, then the visitor answers."""
    add_agents(client)
    opening = client.post("/v1/conversation/turn", json=turn("aoi", YUKI, "v-o", []))
    assert opening.status_code == 200 and opening.json()["next_speaker"] == YUKI
    history = [f"葵: {opening.json()['dialogue']}"]
    answer = client.post("/v1/conversation/player-turn", json=visitor_line("v-o", "はじめまして", history))
    assert answer.status_code == 200 and answer.json()["player_turn_index"] == 1


def test_bad_visitor_requests_are_4xx_naming_the_field(client: TestClient) -> None:
    add_agents(client)
    not_a_player = client.post(
        "/v1/conversation/player-turn", json={**visitor_line("v-b", "hi"), "player_id": "yuki"}
    )
    assert not_a_player.status_code == 422 and "player:" in not_a_player.text
    unknown = client.post(
        "/v1/conversation/player-turn", json={**visitor_line("v-b", "hi"), "agent_id": "nobody"}
    )
    assert unknown.status_code == 404 and unknown.json()["error"]["details"]["field"] == "agent_id"
    assert client.put("/v1/players/bad%20id", json={"display_name": "x"}).status_code == 422
    assert client.put("/v1/players/yuki", json={"display_name": "  "}).status_code == 422


def test_both_lines_of_a_visitor_turn_are_published(client: TestClient) -> None:
    add_agents(client)
    with client.websocket_connect("/v1/events?types=conversation.turn") as events:
        client.post("/v1/conversation/player-turn", json=visitor_line("v-e", "こんにちは"))
        first, second = events.receive_json(), events.receive_json()
    lines = sorted([first, second], key=lambda event: event["payload"]["turn_index"])
    assert [(e["payload"]["agent_id"], e["payload"]["turn_index"]) for e in lines] == [(YUKI, 0), ("aoi", 1)]
    assert lines[0]["payload"]["dialogue"] == "こんにちは"


def test_other_text_at_a_stored_line_is_409_naming_text_and_a_retry_still_gets_its_reply(
    client: TestClient, scripted: ScriptedLLM
) -> None:
    """The same history with a new line (the agent's reply not appended) used to get the old reply silently."""
    add_agents(client)
    first = client.post("/v1/conversation/player-turn", json=visitor_line("v-t", "こんにちは"))
    assert first.status_code == 200
    before = snapshot(client)
    calls = len(scripted.calls("dialogue"))
    other = client.post("/v1/conversation/player-turn", json=visitor_line("v-t", "おすすめの本は？"))
    assert other.status_code == 409, other.text
    error = other.json()["error"]
    assert error["details"]["field"] == "text" and error["details"]["turn_index"] == 0
    assert "append" in error["message"] and "resend the same text" in error["message"]
    assert snapshot(client) == before and len(scripted.calls("dialogue")) == calls
    again = client.post("/v1/conversation/player-turn", json=visitor_line("v-t", "こんにちは"))
    assert again.status_code == 200 and again.json() == first.json()


def test_a_line_moderation_held_back_is_retried_by_its_text_not_its_marker(client: TestClient) -> None:
    add_agents(client)
    first = client.post("/v1/conversation/player-turn", json=visitor_line("v-hb", "お前なんか死ねよ"))
    assert first.status_code == 200 and first.json()["player_blocked"]
    again = client.post("/v1/conversation/player-turn", json=visitor_line("v-hb", "お前なんか死ねよ"))
    assert again.status_code == 200 and again.json() == first.json()
    other = client.post("/v1/conversation/player-turn", json=visitor_line("v-hb", "ごめんなさい"))
    assert other.status_code == 409 and other.json()["error"]["details"]["field"] == "text"
