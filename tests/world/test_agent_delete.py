"""Deleting an agent takes its pending background work with it: an agent re-created under the same id starts
with an empty mind, not with an observation or a reflection of its predecessor's conversation.

The cause was the job table: a conversation line's observation job (and a finished conversation's reflection
job) names the participants by id, and one still pending when the agent was deleted (the runner busy, or
a restart) ran after the re-creation and wrote into the new agent's memories.
"""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from backend.conversation.jobs import OBSERVE, REFLECT
from backend.jobs.models import LIVE
from backend.memory.jobs import RATE
from backend.memory.models import Memory
from backend.scripted import ScriptedLLM
from tests.conversation.helpers import AOI, add_agents, rows, turn
from tests.reliability.helpers import jobs, wait_until


def _hold_jobs(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Stop the job runner, so jobs stay pending as a busy runner or a crash leaves them; returns it."""
    runner = client.app.state.jobs  # type: ignore[attr-defined]
    client.portal.call(runner.stop)
    monkeypatch.setattr(runner, "submit", lambda _jobs: None)
    monkeypatch.setattr(runner, "submit_after", lambda _first, _then: None)
    return runner


def _live(client: TestClient) -> list[Any]:
    return [job for job in jobs(client) if job.status in LIVE]


def test_a_recreated_agent_inherits_nothing_from_jobs_pending_at_its_deletion(
    client: TestClient, scripted: ScriptedLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    add_agents(client)
    runner = _hold_jobs(client, monkeypatch)
    # Two lines about different things (two near-identical lines would merge into one memory: hygiene.py).
    scripted.enqueue(
        {
            "dialogue": "おはよう、葵！今日は新しい豆が入ったよ。",
            "emotion": "happy",
            "is_conversation_end": False,
        },
        {
            "dialogue": "図書館で詩集を借りてきたところです。",
            "emotion": "relaxed",
            "is_conversation_end": False,
        },
        purpose="dialogue",
    )
    first = client.post("/v1/conversation/turn", json=turn("hikari", "aoi", "s-gone", []))
    answer = turn("aoi", "hikari", "s-gone", [f"ひかり: {first.json()['dialogue']}"])
    assert client.post("/v1/conversation/turn", json=answer).status_code == 200
    assert client.post("/v1/conversation/end", json={"session_id": "s-gone"}).status_code == 200
    assert {job.kind for job in _live(client)} >= {OBSERVE, REFLECT}

    removed = client.delete("/v1/agents/aoi").json()["removed"]
    assert removed["jobs"] == 1  # aoi's reflection; the lines' observation job is hikari's too and stays
    assert client.put("/v1/agents/aoi", json={k: v for k, v in AOI.items() if k != "id"}).status_code == 201
    client.portal.call(runner.start)  # the held jobs run now, after the re-creation
    wait_until(lambda: not _live(client), what="the held jobs")

    assert rows(client, Memory, agent_id="aoi") == []
    heard = rows(client, Memory, agent_id="hikari", session_id="s-gone", type="observation")
    assert len(heard) == 2  # hikari keeps what was said to it and what it said
    assert not any(job.payload.get("agent_id") == "aoi" for job in jobs(client, kind=REFLECT, status="done"))


def test_deleting_an_agent_drops_its_pending_rating_job(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    add_agents(client)
    _hold_jobs(client, monkeypatch)
    arrival = {"state": "wandering_in_poi", "location_name": "図書館", "day": 1, "time_of_day": 9.0}
    assert client.post("/v1/agents/aoi/state", json=arrival).status_code == 200
    assert [job.payload["agent_id"] for job in jobs(client, kind=RATE)] == ["aoi"]
    assert client.delete("/v1/agents/aoi").json()["removed"]["jobs"] == 1
    assert jobs(client, kind=RATE) == []
