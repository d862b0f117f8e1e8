"""Ending a conversation: idempotent end reports, one reflection per participant, 409 afterwards."""

from __future__ import annotations

from fastapi.testclient import TestClient

from backend.conversation.models import Conversation
from backend.memory.models import Memory
from backend.scripted import ScriptedLLM
from tests.conftest import drain
from tests.conversation.helpers import add_agents, rows, snapshot, turn


def _two_turns(client: TestClient, session_id: str) -> list[str]:
    first = client.post("/v1/conversation/turn", json=turn("aoi", "hikari", session_id, [])).json()
    history = [f"葵: {first['dialogue']}"]
    second = client.post("/v1/conversation/turn", json=turn("hikari", "aoi", session_id, history)).json()
    return [*history, f"ひかり: {second['dialogue']}"]


def test_end_is_idempotent_and_reflects_once_per_participant(
    client: TestClient, scripted: ScriptedLLM
) -> None:
    add_agents(client)
    history = _two_turns(client, "s-end")
    answers = [
        client.post("/v1/conversation/end", json={"session_id": "s-end", "reason": reason}).json()
        for reason in ("distance", "distance", "interrupted")
    ]
    drain(client)
    assert [a["already_ended"] for a in answers] == [False, True, True]
    assert all(a["end_reason"] == "distance" for a in answers)  # the first report wins
    reflections = rows(client, Memory, session_id="s-end", type="reflection")
    assert sorted(m.agent_id for m in reflections) == ["aoi", "hikari"]
    assert len(scripted.calls("reflection")) == 2
    conv = rows(client, Conversation, session_id="s-end")[0]
    assert conv.ended and conv.reflected and conv.transcript == history
    # Each reflection cites the participant's own observations of this conversation.
    for memory in reflections:
        observed = rows(client, Memory, session_id="s-end", type="observation", agent_id=memory.agent_id)
        assert observed and set(memory.evidence_ids) == {m.id for m in observed}


def test_reply_that_ends_and_a_later_end_report_reflect_once(
    client: TestClient, scripted: ScriptedLLM
) -> None:
    add_agents(client)
    reply = client.post(
        "/v1/conversation/turn", json=turn("aoi", "hikari", "s-bye", ["ひかり: じゃあね"])
    ).json()
    assert reply["end_reason"] == "farewell"
    again = client.post("/v1/conversation/end", json={"session_id": "s-bye", "reason": "distance"}).json()
    drain(client)
    assert again["already_ended"] and again["end_reason"] == "farewell"
    assert sorted(m.agent_id for m in rows(client, Memory, session_id="s-bye", type="reflection")) == [
        "aoi",
        "hikari",
    ]


def test_turn_after_end_is_409_but_a_retry_of_a_stored_turn_still_answers(client: TestClient) -> None:
    add_agents(client)
    body = turn("aoi", "hikari", "s-409", [])
    first = client.post("/v1/conversation/turn", json=body)
    client.post("/v1/conversation/end", json={"session_id": "s-409", "reason": "interrupted"})
    drain(client)
    before = snapshot(client)
    late = client.post("/v1/conversation/turn", json=turn("hikari", "aoi", "s-409", ["葵: やあ"]))
    assert late.status_code == 409 and late.json()["error"]["details"]["field"] == "session_id"
    retry = client.post("/v1/conversation/turn", json=body)
    assert retry.status_code == 200 and retry.content == first.content
    assert snapshot(client) == before


def test_end_of_unknown_session_is_404_and_bad_reason_422(client: TestClient) -> None:
    assert (
        client.post("/v1/conversation/end", json={"session_id": "nope", "reason": "distance"}).status_code
        == 404
    )
    bad = client.post("/v1/conversation/end", json={"session_id": "", "reason": "distance"})
    assert bad.status_code == 422 and bad.json()["error"]["details"][0]["field"] == "session_id"
