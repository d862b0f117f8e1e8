"""The streamed turn: deltas concatenate to the final dialogue; same storage as the plain turn."""

from __future__ import annotations

import json
from typing import Any

from fastapi.testclient import TestClient

from backend.conversation.models import Turn
from backend.errors import LLMUnavailable
from backend.scripted import ScriptedLLM
from tests.conversation.helpers import EMMA, LIAM, add_agents, rows, turn


def events(client: TestClient, body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    with client.stream("POST", "/v1/conversation/turn/stream", json=body) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        text = "".join(response.iter_text())
    out = []
    for block in text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        out.append((lines["event"], json.loads(lines["data"])))
    return out


def _after_last_reset(evs: list[tuple[str, dict[str, Any]]]) -> str:
    start = max((i for i, (name, _) in enumerate(evs) if name == "reset"), default=-1) + 1
    return "".join(data["text"] for name, data in evs[start:] if name == "delta")


def test_deltas_concatenate_to_the_final_dialogue(client: TestClient, scripted: ScriptedLLM) -> None:
    add_agents(client)
    evs = events(client, turn("aoi", "hikari", "s-stream", ["ひかり: 今日は天気がいいね"]))
    names = [name for name, _ in evs]
    assert names[-1] == "reply" and names.count("delta") >= 2 and "reset" not in names
    reply = evs[-1][1]
    assert "".join(data["text"] for name, data in evs if name == "delta") == reply["dialogue"]
    assert rows(client, Turn, session_id="s-stream")[0].reply == reply
    assert scripted.calls("dialogue")[0].options.purpose == "dialogue"


def test_escapes_and_whitespace_stream_exactly(client: TestClient, scripted: ScriptedLLM) -> None:
    add_agents(client, EMMA, LIAM)
    raw = '{"dialogue": "  She said \\"hi\\" \\u2014 twice \\ud83d\\ude00  ", "emotion": "joy", "is_conversation_end": false}'
    scripted.enqueue(raw, purpose="dialogue")
    evs = events(client, turn("emma", "liam", "s-esc", []))
    reply = evs[-1][1]
    assert reply["dialogue"] == 'She said "hi" — twice 😀' and reply["emotion"] == "happy"
    assert "".join(d["text"] for n, d in evs if n == "delta") == reply["dialogue"]


def test_goodbye_added_by_the_server_arrives_as_a_last_delta(
    client: TestClient, scripted: ScriptedLLM
) -> None:
    add_agents(client)
    scripted.enqueue(
        {"dialogue": "今日は楽しかった", "emotion": "happy", "is_conversation_end": False}, purpose="dialogue"
    )
    evs = events(client, turn("hikari", "aoi", "s-sbye", ["葵: またね"]))
    reply = evs[-1][1]
    assert reply["end_reason"] == "farewell" and reply["dialogue"] != "今日は楽しかった"
    assert "".join(d["text"] for n, d in evs if n == "delta") == reply["dialogue"]


def test_failure_mid_stream_resets_to_the_fallback(client: TestClient, scripted: ScriptedLLM) -> None:
    add_agents(client)
    scripted.enqueue('{"dialogue": "えっと。それは', purpose="dialogue")  # cut off: invalid JSON
    scripted.enqueue(LLMUnavailable("down", retryable=False), purpose="dialogue")  # the re-ask fails
    evs = events(client, turn("aoi", "hikari", "s-reset", []))
    names = [name for name, _ in evs]
    reply = evs[-1][1]
    assert reply["fallback"] and "reset" in names and names[-1] == "reply"
    shown = "".join(d["text"] for n, d in evs[: names.index("reset")] if n == "delta")
    assert shown == "えっと。"  # what Unity showed before the model failed (a checked sentence at a time)
    assert _after_last_reset(evs) == reply["dialogue"]


def test_invalid_streamed_json_is_re_asked(client: TestClient, scripted: ScriptedLLM) -> None:
    add_agents(client)
    scripted.enqueue('{"dialogue": "あの', purpose="dialogue")
    scripted.enqueue(
        {"dialogue": "あのね、聞いて。", "emotion": "happy", "is_conversation_end": False}, purpose="dialogue"
    )
    evs = events(client, turn("aoi", "hikari", "s-reask", []))
    reply = evs[-1][1]
    assert not reply["fallback"] and reply["dialogue"] == "あのね、聞いて。"
    assert "".join(d["text"] for n, d in evs if n == "delta") == reply["dialogue"]  # "あの" + "ね、聞いて。"
    assert len(scripted.calls("dialogue")) == 2


def test_stream_retry_replays_the_stored_turn(client: TestClient, scripted: ScriptedLLM) -> None:
    add_agents(client)
    body = turn("aoi", "hikari", "s-sretry", [])
    plain = client.post("/v1/conversation/turn", json=body).json()
    evs = events(client, body)
    assert evs == [("delta", {"text": plain["dialogue"]}), ("reply", plain)]
    assert len(scripted.calls("dialogue")) == 1


def test_stream_bad_input_gets_plain_status_codes(client: TestClient) -> None:
    add_agents(client)
    assert client.post("/v1/conversation/turn/stream", json=turn("aoi", "ghost", "s", [])).status_code == 404
    assert client.post("/v1/conversation/turn/stream", json=turn("aoi", "aoi", "s", [])).status_code == 422
