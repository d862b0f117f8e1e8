"""The services publish what happened: state reports, plans, memories (through the real API)."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from backend.events import Event
from backend.scripted import ScriptedLLM
from tests.conftest import drain


def _world(client: TestClient) -> None:
    client.put(
        "/v1/pois/cafe",
        json={"name": "中央カフェ", "kind": "cafe", "description": "", "position": {"x": 1, "y": 0, "z": 2}},
    )
    client.put(
        "/v1/pois/home",
        json={"name": "葵の家", "kind": "home", "description": "", "position": {"x": 0, "y": 0, "z": 0}},
    )
    response = client.put(
        "/v1/agents/aoi",
        json={"name": "葵", "language": "ja", "traits": ["明るい"], "backstory": "", "speaking_style": "",
              "home_poi": "home", "wake_hour": 7, "sleep_hour": 22},
    )  # fmt: skip
    assert response.status_code in (200, 201), response.text


def _listen(client: TestClient, *types: str) -> list[Event[Any]]:
    heard: list[Event[Any]] = []
    client.app.state.events.subscribe(heard.append, types=list(types))  # type: ignore[attr-defined]
    return heard


def test_state_report_publishes_agent_state_and_the_arrival_memory(client: TestClient) -> None:
    _world(client)
    heard = _listen(client, "agent.state", "memory.created")
    body = {
        "state": "wandering_in_poi",
        "location_name": "中央カフェ",
        "position": {"x": 1, "y": 0, "z": 2},
        "day": 1,
        "time_of_day": 9.5,
    }
    assert client.post("/v1/agents/aoi/state", json=body).status_code == 200
    kinds = [e.type for e in heard]
    assert kinds[0] == "agent.state" and "memory.created" in kinds
    assert heard[0].payload.location_name == "中央カフェ" and heard[0].payload.position == {
        "x": 1,
        "y": 0,
        "z": 2,
    }


def test_plans_publish_plan_updated_and_a_replan_moves_emotion(
    client: TestClient, scripted: ScriptedLLM
) -> None:
    _world(client)
    heard = _listen(client, "plan.updated")
    assert client.post("/v1/agents/aoi/plan", json={"day": 1}).status_code == 200
    assert (
        client.post(
            "/v1/agents/aoi/plan", json={"day": 1, "time_of_day": 12, "reason": "雨が降ってきた"}
        ).status_code
        == 200
    )
    drain(client)
    assert [e.payload.reason for e in heard] == [None, "雨が降ってきた"]
    assert heard[1].payload.items
    emotion_calls = scripted.calls("emotion")
    assert len(emotion_calls) == 1 and "雨が降ってきた" in emotion_calls[0].options.facts["cause"]


def test_plan_made_on_demand_by_plan_now_is_published(client: TestClient) -> None:
    _world(client)
    heard = _listen(client, "plan.updated")
    assert client.get("/v1/agents/aoi/plan/now", params={"day": 2, "time_of_day": 10}).status_code == 200
    assert [e.payload.day for e in heard] == [2]
