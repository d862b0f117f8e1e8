"""Bad input gets a 4xx naming the field; a failed importance rating keeps the memory and is traced."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from backend.errors import LLMTimeout
from backend.scripted import ScriptedLLM
from tests.conftest import drain
from tests.memory.agents import add_agent, post_memory

URL = "/v1/agents/aoi/memories"
GOOD = {"type": "observation", "content": "カフェでヒカリと話した"}


@pytest.fixture
def aoi(client: TestClient) -> TestClient:
    add_agent(client)
    return client


def fields(response: Any) -> set[str]:
    assert response.status_code == 422, response.text
    return {problem["field"] for problem in response.json()["error"]["details"]}


def test_unknown_agent_is_404_everywhere(client: TestClient) -> None:
    assert client.post("/v1/agents/ghost/memories", json=GOOD).status_code == 404
    assert client.get("/v1/agents/ghost/memories").status_code == 404
    assert client.post("/v1/agents/ghost/memories/retrieve", json={"query": "x"}).status_code == 404
    assert client.post("/v1/agents/ghost/reflect", json={}).status_code == 404
    assert client.delete("/v1/agents/ghost/memories/1").status_code == 404
    assert client.post("/v1/agents/ghost/memories", json=GOOD).json()["error"]["code"] == "not_found"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"content": ""}, "content"),
        ({"content": "   "}, "content"),
        ({"importance": 0}, "importance"),
        ({"importance": 11}, "importance"),
        ({"type": "dream"}, "type"),
        ({"day": 0}, "day"),
        ({"time_of_day": 25}, "time_of_day"),
        ({"mood": "happy"}, "mood"),
    ],
)
def test_bad_single_memory_names_the_field(aoi: TestClient, change: dict[str, Any], field: str) -> None:
    assert fields(aoi.post(URL, json={**GOOD, **change})) == {field}
    assert aoi.get(URL).json()["total"] == 0


def test_bad_item_in_a_batch_names_its_position_and_stores_nothing(aoi: TestClient) -> None:
    body = {"memories": [GOOD, {**GOOD, "importance": 42}]}
    assert fields(aoi.post(URL, json=body)) == {"memories.1.importance"}
    assert aoi.get(URL).json()["total"] == 0


@pytest.mark.timeout(300)  # the worker's embed job embeds the thousand (about 30 s of one core)
def test_batch_over_1000_is_refused_and_1000_is_accepted(aoi: TestClient) -> None:
    item = {**GOOD, "importance": 2}
    assert fields(aoi.post(URL, json={"memories": [item] * 1001})) == {"memories"}
    assert fields(aoi.post(URL, json={"memories": []})) == {"memories"}
    # Two game days apart, so none is a duplicate of another (identical texts within 24 h would merge).
    stored = post_memory(aoi, memories=[{**item, "day": 2 * i + 1} for i in range(1000)])
    assert len(stored["memories"]) == 1000 and aoi.get(URL).json()["total"] == 1000
    drain(aoi, timeout=300)  # a thousand memories embedded and rated: slow on a busy 2-core machine


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"query": "x", "k": 0}, "k"),
        ({"query": "x", "k": -3}, "k"),
        ({"query": "x", "k": 101}, "k"),
        ({"query": "x", "weights": {"recency": -1}}, "weights.recency"),
        ({"query": "x", "relevance": "vibes"}, "relevance"),
    ],
)
def test_bad_retrieval_names_the_field(aoi: TestClient, body: dict[str, Any], field: str) -> None:
    assert fields(aoi.post(f"{URL}/retrieve", json=body)) == {field}


def test_empty_query_names_the_query_field(aoi: TestClient) -> None:
    assert fields(aoi.post(f"{URL}/retrieve", json={"query": ""})) == {"query"}


def test_failed_rating_keeps_the_provisional_memory_and_is_traced(
    aoi: TestClient, scripted: ScriptedLLM
) -> None:
    # Every attempt (first try and retries) times out.
    scripted.enqueue(*[LLMTimeout("model too slow")] * 5, purpose="importance")
    stored = post_memory(aoi, **GOOD)
    drain(aoi)
    row = aoi.get(URL).json()["memories"][0]
    assert row["id"] == stored["id"]
    assert (row["importance"], row["importance_source"]) == (3, "provisional")
    calls = aoi.get("/v1/llm-calls", params={"purpose": "importance"}).json()["calls"]
    assert calls and all(not c["ok"] and "llm_timeout" in c["error"] for c in calls)
    # Retrieval still works with the provisional value.
    hits = aoi.post(f"{URL}/retrieve", json={"query": "カフェ"}).json()["results"]
    assert hits[0]["memory"]["id"] == stored["id"]


def test_garbage_rating_keeps_the_provisional_value(aoi: TestClient, scripted: ScriptedLLM) -> None:
    scripted.enqueue(*['{"importance": 99}'] * 8, purpose="importance")
    post_memory(aoi, **GOOD)
    drain(aoi)
    row = aoi.get(URL).json()["memories"][0]
    assert (row["importance"], row["importance_source"]) == (3, "provisional")
