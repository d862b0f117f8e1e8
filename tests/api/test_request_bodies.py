"""What a request body that the server cannot take is told: JSON without its Content-Type, a body that is not
an object, keys in camelCase; each a 422 naming the field and what to send instead, nothing stored."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from backend.conversation.models import Turn
from backend.memory.models import Memory
from tests.conversation.helpers import add_agents, rows, turn
from tests.visitor.helpers import visitor_line


@pytest.mark.parametrize(
    "headers",
    [{}, {"Content-Type": "text/plain"}, {"Content-Type": "application/x-www-form-urlencoded"}],
    ids=["none", "text", "form"],
)
def test_json_without_its_content_type_is_told_to_send_the_header(
    client: TestClient, headers: dict[str, str]
) -> None:
    """Plain `curl -d` and `UnityWebRequest.Post(url, string)` send JSON the server reads as text."""
    add_agents(client)
    body = json.dumps(visitor_line("v-ct", "こんにちは"), ensure_ascii=False).encode()
    reply = client.post("/v1/conversation/player-turn", content=body, headers=headers)
    assert reply.status_code == 422, reply.text
    [problem] = reply.json()["error"]["details"]
    assert problem["field"] == "body" and "Content-Type: application/json" in problem["message"]
    assert "Content-Type: application/json" in reply.json()["error"]["message"]
    assert rows(client, Turn) == []
    sent = client.post(
        "/v1/conversation/player-turn", content=body, headers={"Content-Type": "application/json"}
    )
    assert sent.status_code == 200, sent.text


def test_a_json_body_that_is_not_an_object_is_told_to_send_one(client: TestClient) -> None:
    twice = json.dumps(json.dumps(visitor_line("v-2x", "hi")))  # serialized twice: a JSON string
    reply = client.post(
        "/v1/conversation/player-turn", content=twice, headers={"Content-Type": "application/json"}
    )
    assert reply.status_code == 422
    message = reply.json()["error"]["details"][0]["message"]
    assert "must be a JSON object" in message and "not a string" in message


def test_a_time_of_day_as_hh_mm_is_read_as_hours(client: TestClient) -> None:
    add_agents(client)
    reply = client.post("/v1/conversation/turn", json=turn("aoi", "hikari", "s-930", [], time_of_day="9:30"))
    assert reply.status_code == 200, reply.text
    assert [t.time_of_day for t in rows(client, Turn, session_id="s-930")] == [9.5]
    report = {"state": "wandering_in_poi", "location_name": "図書館", "day": 1, "time_of_day": "14:45"}
    assert client.post("/v1/agents/aoi/state", json=report).status_code == 200
    assert client.get("/v1/agents/aoi").json()["state_time_of_day"] == 14.75


@pytest.mark.parametrize("value", ["half past nine", "9時半", "25:00"])
def test_a_time_of_day_that_is_no_hour_names_the_field_and_the_forms(client: TestClient, value: str) -> None:
    add_agents(client)
    reply = client.post("/v1/conversation/turn", json=turn("aoi", "hikari", "s-bad", [], time_of_day=value))
    assert reply.status_code == 422
    [problem] = reply.json()["error"]["details"]
    assert problem["field"] == "time_of_day"
    if ":" not in value:
        assert "9.5 for 9:30" in problem["message"] and '"HH:MM"' in problem["message"]
    assert rows(client, Turn) == []


def test_history_lines_sent_as_objects_are_told_the_line_format(client: TestClient) -> None:
    add_agents(client)
    lines = [{"speaker": "葵", "text": "こんにちは"}]
    reply = client.post("/v1/conversation/turn", json=turn("hikari", "aoi", "s-obj", lines))
    assert reply.status_code == 422
    [problem] = reply.json()["error"]["details"]
    assert problem["field"] == "history.0"
    assert '"Name: line"' in problem["message"] and 'send "葵: こんにちは"' in problem["message"]
    assert rows(client, Turn) == []


@pytest.mark.parametrize(
    ("path", "body", "key", "field"),
    [
        ("/v1/conversation/player-turn", {**visitor_line("v-cc", "hi"), "locationName": "図書館"}, "locationName", "location_name"),
        ("/v1/conversation/turn", {**turn("aoi", "hikari", "s-cc", []), "TimeOfDay": 9.0}, "TimeOfDay", "time_of_day"),
        ("/v1/agents/aoi/memories", {"type": "observation", "content": "雨が降った", "timeOfDay": 9.0}, "timeOfDay", "time_of_day"),
        ("/v1/agents/aoi/state", {"state": "talking", "day": 1, "time_of_day": 9.0, "position": {"X": 1, "z": 2}}, "position.X", "x"),
    ],
    ids=["optional-field", "pascal-case", "memory", "nested"],
)  # fmt: skip
def test_a_key_in_camel_case_is_refused_naming_the_snake_case_key(
    client: TestClient, path: str, body: dict[str, object], key: str, field: str
) -> None:
    """Such a key was ignored: the value was lost without a word (or the field reported missing)."""
    add_agents(client)
    reply = client.post(path, json=body)
    assert reply.status_code == 422, reply.text
    problems = reply.json()["error"]["details"]
    assert [p["field"] for p in problems] == [key]
    assert f"send '{field}'" in problems[0]["message"]
    assert rows(client, Turn) == [] and rows(client, Memory) == []
