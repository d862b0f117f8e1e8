"""A world import replaces the rows background jobs were made for: the world's pending jobs go with them, and
a rating already waiting on the model lands only on the memory it read (same id, world, agent and text,
still provisional), never on whatever memory the import gave that id.
"""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session

from backend.config import Settings
from backend.conversation.jobs import OBSERVE
from backend.jobs.models import LIVE
from backend.memory.jobs import RATE
from backend.memory.models import Memory
from backend.scripted import ScriptedLLM
from tests.conftest import drain, make_client
from tests.conversation.helpers import turn
from tests.gated import GatedLLM
from tests.reliability.helpers import jobs, wait_until

PERSONAS = {"aoi": "葵", "hikari": "ひかり"}


def add_pair(client: TestClient, headers: dict[str, str] | None = None) -> None:
    for agent_id, name in PERSONAS.items():
        body = {"name": name, "backstory": "町の住人。", "speaking_style": "丁寧。"}
        assert client.put(f"/v1/agents/{agent_id}", json=body, headers=headers).status_code == 201


def memory_row(client: TestClient, memory_id: int) -> Memory | None:
    with Session(client.app.state.engine) as session:  # type: ignore[attr-defined]
        return session.get(Memory, memory_id)


def live(client: TestClient) -> list[Any]:
    return [job for job in jobs(client) if job.status in LIVE]


REPLACEMENTS = {
    # The import gives the id to another agent's memory, rated by its caller.
    "another agent's memory": {
        "agent_id": "hikari",
        "content": "ひかりは店を閉めた",
        "importance": 2,
        "importance_source": "caller",
    },
    # The same agent's memory under the same id, but not the one the model read; itself waiting for a rating.
    "the same agent's new memory": {
        "agent_id": "aoi",
        "content": "葵は駅で迷った",
        "importance": 3,
        "importance_source": "provisional",
    },
}


@pytest.mark.parametrize("replacement", list(REPLACEMENTS.values()), ids=list(REPLACEMENTS))
def test_a_rating_in_flight_during_an_import_leaves_the_memory_now_under_its_id_alone(
    settings: Settings, replacement: dict[str, Any]
) -> None:
    gated = GatedLLM("importance")
    gated.enqueue({"importance": 9}, purpose="importance")
    with make_client(settings, gated) as client:  # type: ignore[arg-type]
        add_pair(client)
        made = client.post(
            "/v1/agents/aoi/memories", json={"type": "observation", "content": "葵は本を借りた"}
        )
        memory_id = made.json()["id"]
        wait_until(lambda: gated.waiting == 1, what="the rating call to reach the model")

        doc = client.get("/v1/world/export").json()
        [row] = [m for m in doc["memories"] if m["id"] == memory_id]
        row.update(replacement)
        assert client.post("/v1/world/import", json=doc).status_code == 200
        gated.open_gate(client)
        drain(client)
        wait_until(lambda: not live(client), what="the rating job to finish")

        kept = memory_row(client, memory_id)
        assert kept is not None and kept.world_id == "default" and kept.agent_id == replacement["agent_id"]
        assert (kept.content, kept.importance) == (replacement["content"], replacement["importance"])
        assert kept.importance_source == replacement["importance_source"]
        listed = client.get(f"/v1/agents/{replacement['agent_id']}/memories").json()["memories"]
        assert [(m["id"], m["importance"]) for m in listed] == [(memory_id, replacement["importance"])]
    assert len(gated.calls("importance")) == 1  # the rating was made; it just found its memory gone


def test_an_import_cancels_the_worlds_pending_jobs_and_leaves_other_worlds_alone(
    settings: Settings, scripted: ScriptedLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = {"X-Machi-World": "other"}
    with make_client(settings, scripted) as client:
        add_pair(client)
        add_pair(client, other)
        doc = client.get("/v1/world/export").json()  # the world before any memory: what the import restores
        runner = client.app.state.jobs  # type: ignore[attr-defined]
        client.portal.call(runner.stop)  # jobs stay pending, as with a busy runner or a restart
        monkeypatch.setattr(runner, "submit", lambda _jobs: None)
        monkeypatch.setattr(runner, "submit_after", lambda _first, _then: None)
        for headers in ({}, other):
            body = {"type": "observation", "content": "葵は本を借りた"}
            assert client.post("/v1/agents/aoi/memories", json=body, headers=headers).status_code == 201
        assert client.post("/v1/conversation/turn", json=turn("aoi", "hikari", "s1", [])).status_code == 200
        assert {(job.world_id, job.kind) for job in live(client)} == {
            ("default", RATE),
            ("default", OBSERVE),
            ("other", RATE),
        }

        assert client.post("/v1/world/import", json=doc).status_code == 200
        assert [(job.world_id, job.kind) for job in live(client)] == [("other", RATE)]

        client.portal.call(runner.start)
        wait_until(lambda: not live(client), what="the other world's rating")
        assert client.get("/v1/agents/aoi/memories").json()["memories"] == []
        assert client.get("/v1/agents/hikari/memories").json()["memories"] == []
        [rated] = client.get("/v1/agents/aoi/memories", headers=other).json()["memories"]
        assert rated["importance_source"] == "model"
