"""Several processes on one database (issue 23): two apps, each with its own caches, over one SQLite file (and
one PostgreSQL database when MACHI_TEST_POSTGRES_URL is set). What one writes, the other's next read sees."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import nullcontext
from typing import Any

import pytest
from fastapi.testclient import TestClient

from backend.config import Settings
from backend.memory.cache import IndexCache
from backend.memory.models import MemoryCreate
from backend.scripted import ScriptedLLM
from tests.conftest import make_client
from tests.memory.agents import add_agent, post_memory
from tests.memory.helpers import call, service

URL = "/v1/agents/aoi/memories"
POSTGRES = os.environ.get("MACHI_TEST_POSTGRES_URL")
#: Rank by importance alone, so a rating decides the order.
BY_IMPORTANCE = {"recency": 0.0, "importance": 1.0, "relevance": 0.0}


@pytest.fixture
def pair(
    settings: Settings, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[TestClient, TestClient]]:
    """Two apps ("processes") on one database; the one-server-per-database lock is lifted for them."""
    monkeypatch.setattr("backend.app.hold_database", lambda *args, **kwargs: nullcontext())
    shared = settings.model_copy(update={"database_url": database_url})
    with make_client(shared, ScriptedLLM(seed=0)) as first:
        add_agent(first)
        with make_client(shared, ScriptedLLM(seed=0)) as second:
            yield first, second


def retrieve(client: TestClient, query: str, **body: Any) -> list[dict[str, Any]]:
    response = client.post(f"{URL}/retrieve", json={"query": query, "k": 10, **body})
    assert response.status_code == 200, response.text
    return response.json()["results"]  # type: ignore[no-any-return]


def contents(results: list[dict[str, Any]]) -> list[str]:
    return [found["memory"]["content"] for found in results]


def cache(client: TestClient) -> IndexCache:
    return service(client).cache


def test_a_memory_stored_through_one_process_is_found_through_the_other(
    pair: tuple[TestClient, TestClient],
) -> None:
    a, b = pair
    post_memory(a, type="observation", content="カフェでヒカリと話した", importance=4)
    assert contents(retrieve(b, "カフェ")) == ["カフェでヒカリと話した"]  # b loads its index
    post_memory(a, type="observation", content="図書館でソラと本を読んだ", importance=4)
    assert "図書館でソラと本を読んだ" in contents(retrieve(b, "図書館"))
    assert cache(b).loads == 1 and cache(b).refreshes == 1  # the new row read, not the whole stream


def test_a_rating_through_one_process_changes_the_others_ranking(pair: tuple[TestClient, TestClient]) -> None:
    a, b = pair
    post_memory(a, type="observation", content="公園で散歩した", importance=9)
    (quiet,) = call(
        a,
        service(a).add_for,
        "default",
        {"aoi": [MemoryCreate(type="observation", content="駅前で写真を撮った")]},
        rated_later=True,  # provisional, no rating job: the rating below is the only one
    )["aoi"]
    assert quiet.importance_source == "provisional" and quiet.importance < 9
    assert contents(retrieve(a, "散歩", weights=BY_IMPORTANCE))[0] == "公園で散歩した"
    call(b, service(b).rater.set_importances, ("default", "aoi"), [(quiet, 10)], "model")
    assert contents(retrieve(a, "散歩", weights=BY_IMPORTANCE))[0] == "駅前で写真を撮った"
    assert cache(a).loads == 1


def test_a_memory_deleted_through_one_process_is_gone_from_the_other(
    pair: tuple[TestClient, TestClient],
) -> None:
    a, b = pair
    doomed = post_memory(a, type="observation", content="海辺で歌を聞いた", importance=5)
    post_memory(a, type="observation", content="海辺で絵を描いた", importance=5)
    assert len(retrieve(b, "海辺")) == 2
    assert a.delete(f"{URL}/{doomed['id']}").status_code == 204
    assert contents(retrieve(b, "海辺")) == ["海辺で絵を描いた"]
    # The index itself forgot it (retrieve above also drops a row it cannot fetch; recall reads the index).
    recalled = call(b, service(b).recall, "default", "aoi", "海辺")
    assert [memory.content for memory in recalled] == ["海辺で絵を描いた"]
    assert cache(b).loads == 1  # the deletion was learnt from the ids, not by reloading


def test_unchanged_stamps_cause_no_reload_and_own_writes_no_refresh(
    pair: tuple[TestClient, TestClient],
) -> None:
    a, b = pair
    post_memory(a, type="observation", content="神社でユイと話した", importance=5)
    for _ in range(3):
        assert retrieve(b, "神社")  # each marks the memory accessed: b's own writes
    post_memory(b, type="observation", content="神社で宿題をした", importance=5)
    assert len(retrieve(b, "神社")) == 2
    assert (cache(b).loads, cache(b).refreshes) == (1, 0)
    retrieve(a, "神社")  # a loads: no write of b's is missing from it
    assert (cache(a).loads, cache(a).refreshes) == (1, 0)


def test_a_world_import_through_one_process_reloads_the_others_index(
    pair: tuple[TestClient, TestClient],
) -> None:
    a, b = pair
    post_memory(a, type="observation", content="パン屋でケーキを食べた", importance=5)
    doc = a.get("/v1/world/export").json()
    assert retrieve(b, "パン屋")
    post_memory(a, type="observation", content="パン屋でレンと話した", importance=5)
    assert a.post("/v1/world/import", json=doc).status_code == 200  # back to the one memory
    assert contents(retrieve(b, "パン屋")) == ["パン屋でケーキを食べた"]
    assert cache(b).loads == 2
