"""Agents, points of interest and state reports over HTTP, including bad input and world isolation."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, func, select

from backend.emotion.models import EmotionRecord
from backend.planning.models import Plan
from backend.world.models import AgentStateEvent
from backend.world.service import STATE_HISTORY
from tests.conftest import drain

PERSONA = {
    "name": "葵",
    "language": "ja",
    "age": 22,
    "traits": ["読書好き", "好奇心旺盛"],
    "backstory": "文学を学ぶ学生。",
    "speaking_style": "丁寧",
    "wake_hour": 7,
    "sleep_hour": 23,
}


def put_poi(client: TestClient, poi_id: str, name: str, x: float = 0, **headers: str) -> None:
    body = {"name": name, "kind": "cafe", "position": {"x": x, "y": 0, "z": 1}}
    assert client.put(f"/v1/pois/{poi_id}", json=body, headers=headers).status_code in (200, 201)


def report(
    client: TestClient, place: str | None, t: float, state: str = "wandering_in_poi"
) -> dict[str, Any]:
    body = {"state": state, "location_name": place, "day": 1, "time_of_day": t, "position": {"x": 1, "z": 2}}
    response = client.post("/v1/agents/aoi/state", json=body)
    assert response.status_code == 200, response.text
    return response.json()


def memories(client: TestClient, agent: str = "aoi", types: list[str] | None = None) -> list[Any]:
    return client.app.state.memory.recent("default", agent, limit=100, types=types)  # type: ignore[attr-defined]


def test_create_update_get_list_agents(client: TestClient) -> None:
    created = client.put("/v1/agents/aoi", json=PERSONA)
    assert created.status_code == 201 and created.json()["name"] == "葵"
    updated = client.put("/v1/agents/aoi", json={**PERSONA, "traits": ["無口"], "language": "en"})
    assert updated.status_code == 200
    detail = client.get("/v1/agents/aoi").json()
    assert detail["traits"] == ["無口"] and detail["language"] == "en" and detail["age"] == 22
    assert detail["state"] is None and detail["current_plan_item"] is None and detail["emotion"] is None
    client.put("/v1/agents/hikari", json={**PERSONA, "name": "ひかり"})
    assert [a["id"] for a in client.get("/v1/agents").json()] == ["aoi", "hikari"]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"wake_hour": 23, "sleep_hour": 7}, "wake_hour"),
        ({"wake_hour": 8, "sleep_hour": 8}, "wake_hour"),
        ({"sleep_hour": 25}, "sleep_hour"),
        ({"name": ""}, "name"),
        ({"name": "あ" * 101}, "name"),
        ({"language": "fr"}, "language"),
        ({"traits": [f"t{i}" for i in range(21)]}, "traits"),
        ({"traits": ["長" * 51]}, "traits"),
        ({"backstory": "x" * 5000}, "backstory"),
        ({"unknown_key": 1}, "unknown_key"),
    ],
)
def test_bad_personas_are_422_naming_the_field(
    client: TestClient, change: dict[str, Any], field: str
) -> None:
    response = client.put("/v1/agents/aoi", json={**PERSONA, **change})
    assert response.status_code == 422
    assert field in response.json()["error"]["message"]
    assert client.get("/v1/agents/aoi").status_code == 404


def test_persona_without_name_is_422(client: TestClient) -> None:
    body = {k: v for k, v in PERSONA.items() if k != "name"}
    response = client.put("/v1/agents/aoi", json=body)
    assert response.status_code == 422 and response.json()["error"]["details"][0]["field"] == "name"


def test_unknown_agent_and_poi_are_404(client: TestClient) -> None:
    assert client.get("/v1/agents/ghost").status_code == 404
    assert client.delete("/v1/agents/ghost").status_code == 404
    state = {"state": "talking", "day": 1, "time_of_day": 3}
    assert client.post("/v1/agents/ghost/state", json=state).status_code == 404
    assert client.get("/v1/pois/nowhere").status_code == 404
    missing_home = client.put("/v1/agents/aoi", json={**PERSONA, "home_poi": "nowhere"})
    assert missing_home.status_code == 404 and "nowhere" in missing_home.json()["error"]["message"]


def test_pois_put_get_list_and_bad_input(client: TestClient) -> None:
    put_poi(client, "cafe", "中央カフェ", x=3)
    put_poi(client, "park", "公園")
    put_poi(client, "cafe", "中央カフェ2", x=4)
    assert client.get("/v1/pois/cafe").json()["position"] == {"x": 4.0, "y": 0.0, "z": 1.0}
    assert [p["name"] for p in client.get("/v1/pois").json()] == ["中央カフェ2", "公園"]
    no_position = client.put("/v1/pois/x", json={"name": "x"})
    assert no_position.status_code == 422 and "position" in no_position.json()["error"]["message"]
    assert client.put("/v1/pois/bad id!", json={"name": "x", "position": {"x": 0, "z": 0}}).status_code == 422


def test_state_reports_store_latest_and_arrivals_become_observations(client: TestClient) -> None:
    client.put("/v1/agents/aoi", json=PERSONA)
    first = report(client, "中央カフェ", 9.0)
    assert first["arrived"] is True and first["observation_id"] is not None
    assert report(client, "中央カフェ", 9.5, "talking")["arrived"] is False
    assert report(client, None, 10.0, "moving_to_poi")["arrived"] is False
    assert report(client, "公園", 10.5)["arrived"] is True
    drain(client)
    observed = [m.content for m in memories(client, types=["observation"])]
    assert observed == ["葵は公園に着いた。", "葵は中央カフェに着いた。"]
    detail = client.get("/v1/agents/aoi").json()
    assert detail["state"] == "wandering_in_poi" and detail["location_name"] == "公園"
    assert detail["position"] == {"x": 1.0, "y": 0.0, "z": 2.0} and detail["state_time_of_day"] == 10.5
    history = client.get("/v1/agents/aoi/states").json()
    assert [h["state"] for h in history] == [
        "wandering_in_poi",
        "moving_to_poi",
        "talking",
        "wandering_in_poi",
    ]


def test_state_history_is_pruned(client: TestClient) -> None:
    client.put("/v1/agents/aoi", json=PERSONA)
    for index in range(STATE_HISTORY + 7):
        report(client, None, index * 0.1, "cooldown")
    with Session(client.app.state.engine) as session:  # type: ignore[attr-defined]
        count = session.exec(select(func.count()).select_from(AgentStateEvent)).one()
    assert count == STATE_HISTORY
    newest = client.get("/v1/agents/aoi/states", params={"limit": 1}).json()[0]
    assert newest["time_of_day"] == pytest.approx((STATE_HISTORY + 6) * 0.1)


@pytest.mark.parametrize(
    "body",
    [
        {"state": "flying", "day": 1, "time_of_day": 3},
        {"state": "talking", "day": -1, "time_of_day": 3},
        {"state": "talking", "day": 1, "time_of_day": 24},
        {"state": "talking", "day": 1},
    ],
)
def test_bad_state_reports_are_422(client: TestClient, body: dict[str, Any]) -> None:
    client.put("/v1/agents/aoi", json=PERSONA)
    assert client.post("/v1/agents/aoi/state", json=body).status_code == 422
    assert client.get("/v1/agents/aoi").json()["state"] is None


def test_detail_shows_current_plan_item_and_newest_emotion(client: TestClient) -> None:
    put_poi(client, "cafe", "中央カフェ")
    client.put("/v1/agents/aoi", json=PERSONA)
    client.post("/v1/agents/aoi/plan", json={"day": 1})
    report(client, "中央カフェ", 12.25)
    engine = client.app.state.engine  # type: ignore[attr-defined]
    with Session(engine) as session:
        session.add(EmotionRecord(agent_id="aoi", values={"joy": 40.0}, label="安らぎ", day=1, time_of_day=8))
        session.add(EmotionRecord(agent_id="aoi", values={"joy": 80.0}, label="喜び", day=1, time_of_day=12))
        session.commit()
    detail = client.get("/v1/agents/aoi").json()
    plan = client.get("/v1/agents/aoi/plan", params={"day": 1}).json()["items"]
    expected = next(item for item in plan if item["start"] <= 12.25 < item["end"])
    assert detail["current_plan_item"] == expected
    assert detail["emotion"]["label"] == "喜び" and detail["emotion"]["values"] == {"joy": 80.0}


def test_delete_agent_removes_memories_plans_and_states(client: TestClient) -> None:
    client.put("/v1/agents/aoi", json=PERSONA)
    client.put("/v1/agents/hikari", json={**PERSONA, "name": "ひかり"})
    client.post("/v1/agents/aoi/plan", json={"day": 1})
    client.post("/v1/agents/hikari/plan", json={"day": 1})
    report(client, "中央カフェ", 9)
    drain(client)
    with Session(client.app.state.engine) as session:  # type: ignore[attr-defined]
        # A re-created agent must not wake up in its predecessor's mood.
        session.add(EmotionRecord(agent_id="aoi", values={"joy": 80.0}, label="喜び", day=1, time_of_day=9))
        session.commit()
    response = client.delete("/v1/agents/aoi")
    assert response.status_code == 200
    assert response.json()["removed"] == {
        "memories": 2,
        "jobs": 0,
        "plans": 1,
        "emotions": 1,
        "state_events": 1,
    }
    assert client.get("/v1/agents/aoi").status_code == 404
    assert memories(client) == []
    with Session(client.app.state.engine) as session:  # type: ignore[attr-defined]
        assert [p.agent_id for p in session.exec(select(Plan))] == ["hikari"]
        assert session.exec(select(AgentStateEvent)).all() == []
        assert session.exec(select(EmotionRecord)).all() == []
    assert len(memories(client, "hikari")) == 1


def test_agents_and_pois_are_isolated_per_world(client: TestClient) -> None:
    other = {"X-Machi-World": "other"}
    client.put("/v1/agents/aoi", json=PERSONA)
    put_poi(client, "cafe", "中央カフェ")
    assert client.get("/v1/agents", headers=other).json() == []
    assert client.get("/v1/pois", headers=other).json() == []
    assert client.get("/v1/agents/aoi", headers=other).status_code == 404
    client.put("/v1/agents/aoi", json={**PERSONA, "name": "別の葵"}, headers=other)
    assert client.get("/v1/agents/aoi").json()["name"] == "葵"
    client.delete("/v1/agents/aoi", headers=other)
    assert client.get("/v1/agents/aoi").status_code == 200


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("GET", "/v1/agents/aoi", None),
        ("GET", "/v1/agents/aoi/memories", None),
        ("POST", "/v1/conversation/turn", {"agent_id": "aoi", "target_id": "hikari", "session_id": "s", "time_of_day": 9}),
        ("POST", "/v1/conversation/player-turn", {"agent_id": "aoi", "player_id": "player:yuki", "session_id": "s", "text": "hi", "time_of_day": 9}),
    ],
    ids=["agent", "memories", "turn", "player-turn"],
)  # fmt: skip
def test_an_agent_asked_for_in_an_unknown_world_is_told_the_world_is_unknown(
    client: TestClient, method: str, path: str, body: dict[str, Any] | None
) -> None:
    """A mistyped world read as "no agent 'aoi' in world 'expo2025'": the agent id was never the problem."""
    assert (
        client.put("/v1/agents/aoi", json=PERSONA, headers={"X-Machi-World": "expo2026"}).status_code == 201
    )
    reply = client.request(method, path, json=body, headers={"X-Machi-World": "expo2025"})
    assert reply.status_code == 404, reply.text
    error = reply.json()["error"]
    assert "world 'expo2025' is unknown" in error["message"] and "'expo2026'" in error["message"]
    assert error["details"]["known_worlds"] == ["expo2026"]
    known = client.request(method, path, json=body, headers={"X-Machi-World": "expo2026"})
    assert "is unknown" not in known.text
