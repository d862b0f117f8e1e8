"""The action vocabulary and action outcomes over HTTP, on the real app with a SQLite database."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session

from backend.action.validate import validate_actions
from backend.world.facts import read_world_facts
from backend.world.schemas import DEFAULT_GESTURES
from tests.conftest import drain

AOI = {"name": "葵", "language": "ja"}
REN = {"name": "蓮", "language": "ja"}
EMMA = {"name": "Emma", "language": "en"}


@pytest.fixture
def town(client: TestClient) -> TestClient:
    """Two places, three agents (two Japanese, one English) in the default world."""
    for poi_id, name in [("cafe", "中央カフェ"), ("park", "公園")]:
        body = {"name": name, "kind": "place", "position": {"x": 0, "z": 0}}
        assert client.put(f"/v1/pois/{poi_id}", json=body).status_code == 201
    for agent_id, persona in [("aoi", AOI), ("ren", REN), ("emma", EMMA)]:
        assert client.put(f"/v1/agents/{agent_id}", json=persona).status_code == 201
    return client


def report(client: TestClient, agent_id: str, **body: Any) -> Any:
    body = {"day": 2, "time_of_day": 10.5, **body}
    return client.post(f"/v1/agents/{agent_id}/action-result", json=body)


def memories(client: TestClient, agent_id: str) -> list[str]:
    listed = client.get(f"/v1/agents/{agent_id}/memories", params={"type": "observation"})
    assert listed.status_code == 200, listed.text
    return [m["content"] for m in listed.json()["memories"]]


def test_vocabulary_has_the_default_gestures_until_the_world_declares_its_own(client: TestClient) -> None:
    first = client.get("/v1/world/actions").json()
    assert first["version"] == 1 and first["gestures_declared"] is False
    assert first["types"] == ["go_to", "follow", "give", "gesture", "look_at", "end_conversation"]
    assert first["gestures"] == list(DEFAULT_GESTURES)
    put = client.put("/v1/world/gestures", json={"gestures": ["Wave_01", "bow", "Wave_01"]})
    assert put.status_code == 200, put.text
    assert put.json()["gestures"] == ["Wave_01", "bow"] and put.json()["gestures_declared"] is True
    assert client.get("/v1/world/actions").json()["gestures"] == ["Wave_01", "bow"]
    # another world keeps the default; null gives this one the default back
    other = client.get("/v1/world/actions", headers={"X-Machi-World": "town2"}).json()
    assert other["gestures"] == list(DEFAULT_GESTURES)
    assert client.put("/v1/world/gestures", json={"gestures": None}).json()["gestures_declared"] is False
    assert client.get("/v1/world/actions").json()["gestures"] == list(DEFAULT_GESTURES)
    assert client.put("/v1/world/gestures", json={"gestures": []}).json()["gestures"] == []


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"gestures": ["wave hand"]}, "'wave hand' is not a gesture name"),
        ({"gestures": ["x" * 33]}, "has 33 characters"),
        ({"gestures": [""]}, "is not a gesture name"),
        ({"gestures": ["手を振る"]}, "is not a gesture name"),
        ({"gestures": [f"g{i}" for i in range(33)]}, "at most 32"),
        ({}, "Field required"),
        ({"gestures": ["wave"], "extra": 1}, "Extra inputs"),
    ],
)
def test_bad_gesture_names_are_refused(client: TestClient, body: dict[str, Any], says: str) -> None:
    response = client.put("/v1/world/gestures", json=body)
    assert response.status_code == 422
    assert says in response.text
    assert client.get("/v1/world/actions").json()["gestures_declared"] is False  # nothing stored


def test_world_facts_read_the_world_and_its_declared_gestures(town: TestClient) -> None:
    app: Any = town.app
    with Session(app.state.engine) as session:
        facts = read_world_facts(session, "default", participants=["player:guest"])
    assert dict(facts.pois) == {"cafe": "中央カフェ", "park": "公園"}
    assert facts.agents == {"aoi", "ren", "emma"} and facts.gestures == DEFAULT_GESTURES
    town.put("/v1/world/gestures", json={"gestures": ["salute"]})
    with Session(app.state.engine) as session:
        facts = read_world_facts(session, "default", participants=["player:guest"])
    raw = [{"type": "gesture", "target": "wave"}, {"type": "gesture", "target": "salute"},
           {"type": "look_at", "target": "player:guest"}]  # fmt: skip
    kept, dropped = validate_actions(raw, known=facts, speaker_id="aoi")
    assert [(a.type, a.target) for a in kept] == [("gesture", "salute"), ("look_at", "player:guest")]
    assert dropped == [{"action": raw[0], "reason": "no gesture 'wave'"}]


def test_outcomes_become_japanese_memories(town: TestClient) -> None:
    gave_text = "蓮にりんごを渡そうとしたが、できなかった（手がふさがっていた）。"
    cases = [
        ({"type": "go_to", "target": "cafe"}, "done", {}, "中央カフェに行った。"),
        ({"type": "give", "target": "ren", "item": "りんご"}, "failed",
         {"detail": "手がふさがっていた", "session_id": "aoi-ren-1"}, gave_text),
        ({"type": "follow", "target": "player:guest-7"}, "interrupted", {},
         "guest-7について行こうとしたが、途中で中断された。"),
        ({"type": "gesture", "target": "wave"}, "done", {}, "手を振った。"),
    ]  # fmt: skip
    for action, outcome, extra, expected in cases:
        response = report(town, "aoi", action=action, outcome=outcome, **extra)
        assert response.status_code == 201, response.text
        assert response.json()["content"] == expected and response.json()["memory_id"] > 0
    drain(town)
    by_content = {m["content"]: m for m in town.get("/v1/agents/aoi/memories").json()["memories"]}
    assert set(by_content) == {expected for *_, expected in cases}
    went = by_content["中央カフェに行った。"]
    assert went["type"] == "observation" and went["created_day"] == 2
    assert went["location_name"] == "中央カフェ"
    assert by_content[gave_text]["session_id"] == "aoi-ren-1"
    # rated in the background like any observation (no provisional importance left)
    assert {m["importance_source"] for m in by_content.values()} == {"model"}
    assert memories(town, "ren") == []  # only the reporting agent remembers it


def test_outcomes_become_english_memories_that_retrieval_finds(town: TestClient) -> None:
    looked = report(town, "emma", action={"type": "look_at", "target": "aoi"}, outcome="done")
    assert looked.json()["content"] == "I looked at 葵."
    gave = report(town, "emma", action={"type": "give", "target": "ren", "item": "a red umbrella"},
                  outcome="failed", detail="Ren had walked away")  # fmt: skip
    expected = "I tried to give a red umbrella to 蓮, but couldn't (Ren had walked away)."
    assert gave.json()["content"] == expected
    went = report(town, "emma", action={"type": "go_to", "target": "park"}, outcome="interrupted")
    assert went.json()["content"] == "I started to go to 公園, but was interrupted."
    left = report(town, "emma", action={"type": "end_conversation"}, outcome="done")
    assert left.json()["content"] == "I ended the conversation."
    drain(town)
    assert len(memories(town, "emma")) == 4
    hits = town.post(
        "/v1/agents/emma/memories/retrieve",
        json={"query": "red umbrella", "k": 1, "weights": {"recency": 0, "importance": 0, "relevance": 1}},
    ).json()
    assert hits["results"][0]["memory"]["content"].startswith("I tried to give a red umbrella")


@pytest.mark.parametrize(
    ("agent_id", "action", "status", "says"),
    [
        ("nobody", {"type": "go_to", "target": "cafe"}, 404, "no agent 'nobody'"),
        ("aoi", {"type": "go_to", "target": "library"}, 422, "no point of interest 'library'"),
        ("aoi", {"type": "follow", "target": "hikari"}, 422, "no agent 'hikari'"),
        ("aoi", {"type": "look_at", "target": "aoi"}, 422, "names the reporting agent itself"),
        ("aoi", {"type": "gesture", "target": "dance"}, 422, "no gesture 'dance'"),
        ("aoi", {"type": "give", "target": "ren"}, 422, "give needs an item"),
        ("aoi", {"type": "go_to"}, 422, "go_to needs a target"),
        ("aoi", {"type": "end_conversation", "target": "ren"}, 422, "end_conversation takes no target"),
        ("aoi", {"type": "go_to", "target": "cafe", "item": "x"}, 422, "item goes with give only"),
        ("aoi", {"type": "give", "target": "ren", "item": "x" * 61}, 422, "at most 60 characters"),
        ("aoi", {"type": "fly", "target": "cafe"}, 422, "go_to"),
        ("aoi", {"type": "go_to", "target": "a/b"}, 422, "'/'"),
    ],
)
def test_unknown_agents_and_actions_are_refused_and_remembered_by_nobody(
    town: TestClient, agent_id: str, action: dict[str, Any], status: int, says: str
) -> None:
    response = report(town, agent_id, action=action, outcome="done")
    assert response.status_code == status, response.text
    assert says in response.text
    assert memories(town, "aoi") == []


def test_bad_outcome_fields_are_refused(town: TestClient) -> None:
    action = {"type": "go_to", "target": "cafe"}
    for body, says in [
        ({"outcome": "maybe"}, "outcome"),
        ({"outcome": "done", "time_of_day": 24}, "time_of_day"),
        ({"outcome": "done", "day": 0}, "day"),
        ({"outcome": "failed", "detail": "x" * 201}, "detail"),
        ({"outcome": "done", "session_id": "a b"}, "session_id"),
    ]:
        response = report(town, "aoi", action=action, **body)
        assert response.status_code == 422 and says in response.text, (body, response.text)
