"""Bad turn requests are refused with a status naming the field, and change nothing stored."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from backend.scripted import ScriptedLLM
from tests.conftest import drain
from tests.conversation.helpers import EMMA, add_agents, snapshot, turn

CASES: list[tuple[str, dict[str, Any], int, str]] = [
    ("unknown agent", turn("ghost", "hikari", "s", []), 404, "agent_id"),
    ("unknown target", turn("aoi", "ghost", "s", []), 404, "target_id"),
    ("talking to itself", turn("aoi", "aoi", "s", []), 422, "target_id"),
    ("empty session_id", turn("aoi", "hikari", "", []), 422, "session_id"),
    ("blank session_id", turn("aoi", "hikari", "   ", []), 422, "session_id"),
    ("time_of_day 24", turn("aoi", "hikari", "s", [], time_of_day=24), 422, "time_of_day"),
    ("time_of_day negative", turn("aoi", "hikari", "s", [], time_of_day=-0.5), 422, "time_of_day"),
    ("65 history lines", turn("aoi", "hikari", "s", ["ひかり: やあ"] * 65), 422, "history"),
    ("a 2001-char line", turn("aoi", "hikari", "s", ["ok", "ひ" * 2001]), 422, "history.1"),
    ("missing time_of_day", {k: v for k, v in turn("aoi", "hikari", "s", []).items() if k != "time_of_day"}, 422,
     "time_of_day"),
]  # fmt: skip


def _field(body: dict[str, Any]) -> str:
    details = body["error"]["details"]
    return details[0]["field"] if isinstance(details, list) else details["field"]


@pytest.mark.parametrize(("name", "body", "status", "field"), CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("path", ["/v1/conversation/turn", "/v1/conversation/turn/stream"])
def test_bad_turn_is_refused_and_changes_nothing(
    client: TestClient,
    scripted: ScriptedLLM,
    path: str,
    name: str,
    body: dict[str, Any],
    status: int,
    field: str,
) -> None:
    add_agents(client)
    client.post("/v1/conversation/turn", json=turn("aoi", "hikari", "s-existing", []))
    drain(client)
    before = snapshot(client)
    calls = len(scripted.history)
    response = client.post(path, json=body)
    assert response.status_code == status, response.text
    assert _field(response.json()) == field
    assert snapshot(client) == before
    assert len(scripted.history) == calls  # no model call either


def test_64_lines_of_2000_chars_are_accepted(client: TestClient) -> None:
    add_agents(client)
    history = [("葵: " if i % 2 else "ひかり: ") + "あ" * 1990 for i in range(63)] + ["ひかり: ねえ"]
    response = client.post("/v1/conversation/turn", json=turn("aoi", "hikari", "s-long", history))
    assert response.status_code == 200 and response.json()["turn_index"] == 64
    assert response.json()["end_reason"] == "max_turns"


def test_other_speaker_for_a_stored_turn_index_is_409(client: TestClient) -> None:
    add_agents(client)
    add_agents(client, EMMA)
    client.post("/v1/conversation/turn", json=turn("aoi", "hikari", "s-who", []))
    drain(client)
    before = snapshot(client)
    # (hikari answering with the same short history is told its history is behind: tests/conversation/test_pair.py)
    response = client.post("/v1/conversation/turn", json=turn("emma", "aoi", "s-who", []))
    assert response.status_code == 409 and response.json()["error"]["details"]["field"] == "agent_id"
    assert snapshot(client) == before
