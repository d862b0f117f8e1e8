"""A visitor's line is limited in length (422) and rate, per visitor and per world (429): each names its limit."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from backend.app import create_app
from backend.config import Settings
from backend.conversation.models import Turn
from backend.scripted import ScriptedLLM
from tests.conversation.helpers import add_agents, rows
from tests.visitor.helpers import visitor_line


@pytest.fixture
def limited(settings: Settings, scripted: ScriptedLLM) -> Iterator[TestClient]:
    tight = settings.model_copy(
        update={"player_max_chars": 20, "player_lines_per_minute": 2, "world_player_lines_per_minute": 3}
    )
    with TestClient(create_app(tight, llm=scripted)) as client:
        add_agents(client)
        yield client


def test_a_line_over_player_max_chars_is_422_naming_the_limit(limited: TestClient) -> None:
    reply = limited.post("/v1/conversation/player-turn", json=visitor_line("v-l", "あ" * 21))
    assert reply.status_code == 422
    error = reply.json()["error"]
    assert error["details"]["limit"] == "PLAYER_MAX_CHARS" and error["details"]["field"] == "text"
    assert "PLAYER_MAX_CHARS=20" in error["message"]
    assert rows(limited, Turn) == []  # nothing stored
    assert (
        limited.post("/v1/conversation/player-turn", json=visitor_line("v-l", "あ" * 20)).status_code == 200
    )


def _talk(client: TestClient, session_id: str, player: str, lines: int) -> list[int]:
    history: list[str] = []
    codes = []
    for n in range(lines):
        body = visitor_line(session_id, f"質問{n}です", history, player_id=player)
        reply = client.post("/v1/conversation/player-turn", json=body)
        codes.append(reply.status_code)
        if reply.status_code == 200:
            history += [reply.json()["player_line"], f"葵: {reply.json()['dialogue']}"]
    return codes


def test_too_many_lines_from_one_visitor_is_429_naming_the_limit(limited: TestClient) -> None:
    assert _talk(limited, "v-rate", "player:fast", 2) == [200, 200]
    reply = limited.post(
        "/v1/conversation/player-turn", json=visitor_line("v-rate2", "もう一つ", player_id="player:fast")
    )
    assert reply.status_code == 429
    error = reply.json()["error"]
    assert error["code"] == "too_many_requests" and error["details"]["limit"] == "PLAYER_LINES_PER_MINUTE"
    assert "PLAYER_LINES_PER_MINUTE=2" in error["message"] and int(reply.headers["Retry-After"]) >= 1
    assert rows(limited, Turn, session_id="v-rate2") == []


def test_a_retry_is_not_counted_again(limited: TestClient) -> None:
    body = visitor_line("v-retry", "こんにちは", player_id="player:patient")
    for _ in range(4):  # the first stores; the rest are retries answered from storage
        assert limited.post("/v1/conversation/player-turn", json=body).status_code == 200


def test_all_visitors_of_a_world_share_the_world_limit(limited: TestClient) -> None:
    assert _talk(limited, "v-w1", "player:a", 2) == [200, 200]
    assert _talk(limited, "v-w2", "player:b", 2) == [200, 429]
    reply = limited.post(
        "/v1/conversation/player-turn", json=visitor_line("v-w3", "こんにちは", player_id="player:c")
    )
    assert (
        reply.status_code == 429
        and reply.json()["error"]["details"]["limit"] == "WORLD_PLAYER_LINES_PER_MINUTE"
    )
    # Another world has its own count.
    other = limited.post(
        "/v1/conversation/player-turn",
        json=visitor_line("v-w4", "やあ", player_id="player:c"),
        headers={"X-Machi-World": "other"},
    )
    assert other.status_code == 404  # no agents there: the limit did not refuse it


def test_a_history_with_no_room_for_the_line_is_422_before_anything_is_stored(client: TestClient) -> None:
    """The agent's turn holds the history and the visitor's line: 64 lines leave no room, and nothing of the
    request is stored (it was a 500 after the visitor's line had been committed)."""
    add_agents(client)
    history = [f"ユキ: 質問{n}" if n % 2 == 0 else f"葵: 答え{n}" for n in range(64)]
    reply = client.post("/v1/conversation/player-turn", json=visitor_line("v-64", "こんにちは", history))
    assert reply.status_code == 422, reply.text
    error = reply.json()["error"]
    assert error["details"][0]["field"] == "history"
    assert "at most 63" in error["message"] and "another session_id" in error["message"]
    assert rows(client, Turn) == []
    fits = client.post("/v1/conversation/player-turn", json=visitor_line("v-63", "こんにちは", history[:63]))
    assert fits.status_code == 200 and fits.json()["player_turn_index"] == 63
