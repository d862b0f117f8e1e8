"""An import stores nothing the write API would refuse: each row is checked by the write API's own models
(AgentUpsert, StateReport, PoiUpsert, MemoryCreate, PlanRequest/PlanItem), and a bad row refuses the whole
file with a 422 naming the row and the field, leaving what is stored as it was.

Each document below was accepted before and broke a later read (or, for a 70-bit integer, the import itself).
"""

from __future__ import annotations

import base64
import copy
import struct
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from backend.config import Settings
from backend.scripted import ScriptedLLM
from backend.transfer import demo
from tests.conftest import make_client
from tests.transfer.test_transfer import exported, populate

Doc = dict[str, Any]


@pytest.fixture
def lived_in(settings: Settings, scripted: ScriptedLLM) -> Iterator[TestClient]:
    with make_client(settings, scripted, load_demo_world=True) as client:
        populate(client)
        yield client


def _agent(**fields: Any) -> Callable[[Doc], None]:
    def change(doc: Doc) -> None:
        doc["agents"][1].update(fields)

    return change


def _poi(**fields: Any) -> Callable[[Doc], None]:
    def change(doc: Doc) -> None:
        doc["pois"][2].update(fields)

    return change


def _memory(**fields: Any) -> Callable[[Doc], None]:
    def change(doc: Doc) -> None:
        doc["memories"][1].update(fields)

    return change


def _nan_embedding(doc: Doc) -> None:
    doc["memories"][0]["embedding"] = base64.b64encode(struct.pack("<3f", 0.1, float("nan"), 0.2)).decode()


def _plan_item(doc: Doc) -> None:
    doc["plans"][0]["items"][0]["start"] = 99


def _state(doc: Doc) -> None:
    doc["agents"][1].update(state="wandering_in_poi", state_day=1, state_time_of_day=9.0, position="here")


CASES: list[tuple[str, Callable[[Doc], None], str]] = [
    ("language xx", _agent(language="xx"), "agents[1].language"),
    ("council role king", _agent(council_role="king"), "agents[1].council_role"),
    ("wake hour 99", _agent(wake_hour=99), "agents[1].wake_hour"),
    ("sleep hour -5", _agent(sleep_hour=-5), "agents[1].sleep_hour"),
    ("awake 30 minutes", _agent(wake_hour=7, sleep_hour=7.5), "agents[1].sleep_hour"),
    ("position a string", _state, "agents[1].position"),
    ("position x a string", _agent(position={"x": "far", "y": 0, "z": 0}), "agents[1].position.x"),
    ("position 1e308", _agent(position={"x": 1e308, "y": 0, "z": 0}), "agents[1].position.x"),
    ("state day 0", _agent(state="cooldown", state_day=0, state_time_of_day=1.0), "agents[1].state_day"),
    ("poi x -1e308", _poi(x=-1e308), "pois[2].x"),
    ("empty poi name", _poi(name=""), "pois[2].name"),
    ("importance 2**70", _memory(importance=2**70), "memories[1].importance"),
    ("importance 11", _memory(importance=11), "memories[1].importance"),
    ("memory type dream", _memory(type="dream"), "memories[1].type"),
    ("memory day 0", _memory(created_day=0), "memories[1].created_day"),
    (
        "accessed at hour 1e308",
        _memory(last_accessed_time_of_day=1e308),
        "memories[1].last_accessed_time_of_day",
    ),
    ("NaN embedding", _nan_embedding, "memories[0].embedding"),
    ("plan item at hour 99", _plan_item, "plans[0].items[0].start"),
    ("turn index 2**70", lambda doc: doc["turns"][0].update(turn_index=2**70), "turns[0].turn_index"),
    (
        "state event day 0",
        lambda doc: doc["agent_state_events"][0].update(day=0),
        "agent_state_events[0].day",
    ),
]


@pytest.mark.parametrize(("change", "field"), [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_a_row_the_write_api_would_refuse_refuses_the_whole_import(
    lived_in: TestClient, change: Callable[[Doc], None], field: str
) -> None:
    before = exported(lived_in)
    doc = copy.deepcopy(lived_in.get("/v1/world/export").json())
    doc["agents"] = doc["agents"][:1] + [{**doc["agents"][1], "id": "newcomer"}] + doc["agents"][1:]
    change(doc)
    response = lived_in.post("/v1/world/import", json=doc)
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "invalid_input"
    assert error["details"]["field"] == field
    section = field.split("[")[0]
    assert error["details"]["section"] == section and field.startswith(
        f"{section}[{error['details']['index']}]"
    )
    assert field in error["message"]
    assert exported(lived_in) == before  # nothing stored changed: not the newcomer, not the other rows


def test_the_refused_row_is_named_by_its_id_too(lived_in: TestClient) -> None:
    doc = lived_in.get("/v1/world/export").json()
    doc["agents"][3]["wake_hour"] = 99
    error = lived_in.post("/v1/world/import", json=doc).json()["error"]
    assert error["details"]["id"] == doc["agents"][3]["id"]
    assert repr(doc["agents"][3]["id"]) in error["message"]


@pytest.mark.parametrize("town", demo.bundled_names())
def test_every_bundled_town_still_imports(client: TestClient, town: str) -> None:
    response = client.post("/v1/world/import", json=demo.bundled_world(town))
    assert response.status_code == 200, response.text
    assert response.json()["imported"]["agents"] == len(demo.bundled_town(town).agents)
