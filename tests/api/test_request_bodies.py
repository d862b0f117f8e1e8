"""What a request body that the server cannot take is told: JSON without its Content-Type, a body that is not
an object, keys in camelCase; each a 422 naming the field and what to send instead, nothing stored."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from backend.conversation.models import Turn
from tests.conversation.helpers import add_agents, rows
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
