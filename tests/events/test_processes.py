"""Two Machi apps (two processes' worth) on one database: a WebSocket on one hears what the other did.

Runs on a SQLite file with PROCESS_ROLE=api, and on PostgreSQL when MACHI_TEST_POSTGRES_URL is set."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from starlette.testclient import WebSocketTestSession

from backend.config import Settings
from backend.scripted import ScriptedLLM
from tests.conftest import make_client

PERSONA = {
    "name": "葵",
    "language": "ja",
    "age": 22,
    "traits": ["読書好き"],
    "backstory": "文学を学ぶ学生。",
    "speaking_style": "丁寧",
    "wake_hour": 7,
    "sleep_hour": 23,
}


@pytest.fixture(params=["sqlite", "postgresql"])
def shared(request: pytest.FixtureRequest, settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """Settings of processes sharing one database (the one-server lock lifted: several may run)."""
    monkeypatch.setattr("backend.app.hold_database", lambda *_a, **_k: contextlib.nullcontext())
    if request.param == "sqlite":
        return settings.model_copy(update={"process_role": "api"})
    return settings.model_copy(update={"database_url": request.getfixturevalue("pg_url")})


@pytest.fixture
def two_apps(shared: Settings) -> Iterator[tuple[TestClient, TestClient]]:
    with make_client(shared, ScriptedLLM(seed=0)) as a, make_client(shared, ScriptedLLM(seed=1)) as b:
        yield a, b


def _report(client: TestClient, place: str, world: str = "default") -> None:
    body = {"state": "moving_to_poi", "location_name": place, "day": 1, "time_of_day": 9.0}
    response = client.post("/v1/agents/aoi/state", json=body, headers={"X-Machi-World": world})
    assert response.status_code == 200, response.text


def _places(ws: WebSocketTestSession, count: int, world: str = "default") -> list[str]:
    """The next `count` messages' places, each checked to be about aoi in `world`."""
    places = []
    for _ in range(count):
        message = ws.receive_json()
        assert message["type"] == "agent.state" and message["world_id"] == world
        assert message["payload"]["agent_id"] == "aoi"
        places.append(message["payload"]["location_name"])
    return places


@pytest.mark.timeout(60)  # a lost event would leave receive_json waiting
def test_a_websocket_hears_an_event_caused_on_another_process(
    two_apps: tuple[TestClient, TestClient],
) -> None:
    a, b = two_apps
    assert a.app.state.event_relay is not None and b.app.state.event_relay is not None  # type: ignore[attr-defined]
    for world in ("default", "elsewhere"):
        created = a.put("/v1/agents/aoi", json=PERSONA, headers={"X-Machi-World": world})
        assert created.status_code in (200, 201), created.text
    with (
        b.websocket_connect("/v1/events?types=agent.state", headers={"X-Machi-World": "default"}) as on_b,
        b.websocket_connect("/v1/events?types=agent.state&world=elsewhere") as elsewhere_on_b,
        a.websocket_connect("/v1/events?types=agent.state") as on_a,
    ):
        _report(a, "中央カフェ")
        _report(a, "駅", world="elsewhere")
        _report(a, "図書館")
        _report(a, "港", world="elsewhere")
        # b hears what a's requests caused, a its own (not echoed back by the relay): in order, once each.
        assert _places(on_b, 2) == ["中央カフェ", "図書館"]
        assert _places(on_a, 2) == ["中央カフェ", "図書館"]
        assert _places(elsewhere_on_b, 2, world="elsewhere") == ["駅", "港"]
        # b's own request: heard on b once, and on a.
        _report(b, "公園")
        assert _places(on_b, 1) == ["公園"]
        assert _places(on_a, 1) == ["公園"]
    counts = dict(
        re.findall(r'^machi_events_relayed_total\{way="(\w+)"\} (\S+)$', b.get("/metrics").text, re.M)
    )
    assert float(counts["received"]) >= 4 and float(counts["sent"]) >= 1 and float(counts["dropped"]) == 0
