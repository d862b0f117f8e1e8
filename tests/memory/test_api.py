"""The memory stream over HTTP: storing, listing, retrieval, isolation, deletion."""

from __future__ import annotations

import math
from typing import Any

import pytest
from fastapi.testclient import TestClient

from backend.config import Settings
from backend.scripted import ScriptedLLM
from backend.text import token_set
from tests.conftest import drain, make_client
from tests.memory.agents import add_agent, post_memory

URL = "/v1/agents/aoi/memories"


@pytest.fixture
def aoi(client: TestClient) -> TestClient:
    add_agent(client)
    return client


@pytest.fixture
def seed_aoi(settings: Settings, scripted: ScriptedLLM) -> Any:
    """葵 under the seed's scoring (RETRIEVAL_SCORING=seed: every component min-max normalised)."""
    with make_client(settings, scripted, retrieval_scoring="seed") as seeded:
        add_agent(seeded)
        yield seeded


def retrieve(client: TestClient, world: str | None = None, **body: Any) -> list[dict[str, Any]]:
    headers = {"X-Machi-World": world} if world else {}
    response = client.post(f"{URL}/retrieve", json=body, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()["results"]  # type: ignore[no-any-return]


def test_store_one_and_read_it_back(aoi: TestClient) -> None:
    stored = post_memory(
        aoi,
        type="observation",
        content="カフェでヒカリと話した",
        importance=6,
        location_name="カフェ",
        day=2,
        time_of_day=14.5,
    )
    assert stored["id"] > 0 and stored["importance"] == 6 and stored["importance_source"] == "caller"
    assert stored["created_day"] == 2 and stored["last_accessed_time_of_day"] == 14.5
    assert "ヒカリ" in stored["tags"]  # tags are extracted when not given
    listed = aoi.get(URL).json()
    assert listed["total"] == 1 and listed["memories"][0]["content"] == "カフェでヒカリと話した"


def test_listing_is_newest_first_paged_and_filtered(aoi: TestClient) -> None:
    for hour, kind in [(9, "observation"), (12, "plan"), (10, "observation"), (15, "reflection")]:
        post_memory(aoi, type=kind, content=f"{hour}時の出来事", importance=3, time_of_day=hour)
    page = aoi.get(URL, params={"limit": 2, "offset": 1}).json()
    assert [m["created_time_of_day"] for m in page["memories"]] == [12, 10]
    assert page["total"] == 4
    only = aoi.get(URL, params={"type": "observation"}).json()
    assert [m["created_time_of_day"] for m in only["memories"]] == [10, 9]
    assert aoi.get(URL, params={"q": "12時"}).json()["total"] == 1


@pytest.mark.parametrize("relevance", ["embedding", "keyword", "hybrid"])
def test_japanese_query_ranks_the_cafe_memory_first(aoi: TestClient, relevance: str) -> None:
    # Same time and importance (and the unrelated one is newer, winning ties): only relevance decides.
    post_memory(aoi, type="observation", content="カフェでヒカリと話した", importance=4, time_of_day=10)
    post_memory(aoi, type="observation", content="図書館で数学の宿題をした", importance=4, time_of_day=10)
    results = retrieve(aoi, query="カフェ", relevance=relevance, k=2)
    assert results[0]["memory"]["content"] == "カフェでヒカリと話した"
    assert results[0]["relevance"] == 1.0 and results[1]["relevance"] == 0.0


def test_retrieval_scores_match_the_formula_by_hand(seed_aoi: TestClient) -> None:
    aoi = seed_aoi
    texts = [("カフェでヒカリと話した", 8, 9.0), ("カフェで本を読んだ", 2, 11.0), ("公園を歩いた", 5, 12.0)]
    for content, importance, hour in texts:
        post_memory(aoi, type="observation", content=content, importance=importance, time_of_day=hour)
    results = retrieve(
        aoi,
        query="ヒカリとカフェ",
        relevance="keyword",
        day=1,
        time_of_day=13.0,
        weights={"recency": 1.0, "importance": 2.0, "relevance": 3.0},
        decay=0.995,
    )
    query = token_set("ヒカリとカフェ")
    raw_rel = [len(query & token_set(t)) / math.sqrt(len(query) * len(token_set(t))) for t, _, _ in texts]
    raw_rec = [0.995 ** ((13.0 - hour) * 60) for _, _, hour in texts]

    def norm(values: list[float]) -> list[float]:
        return [(v - min(values)) / (max(values) - min(values)) for v in values]

    rec, imp, rel = norm(raw_rec), norm([8, 2, 5]), norm(raw_rel)
    expected = {t: rec[i] + 2 * imp[i] + 3 * rel[i] for i, (t, _, _) in enumerate(texts)}
    got = {r["memory"]["content"]: r["score"] for r in results}
    assert got == pytest.approx(expected)
    assert [r["memory"]["content"] for r in results] == sorted(expected, key=lambda t: -expected[t])
    first = results[0]
    assert first["score"] == pytest.approx(
        first["recency"] + 2 * first["importance"] + 3 * first["relevance"]
    )


def test_retrieval_updates_last_access_in_game_time(seed_aoi: TestClient) -> None:
    aoi = seed_aoi
    post_memory(
        aoi, type="observation", content="カフェでヒカリと話した", importance=5, day=1, time_of_day=10
    )
    post_memory(aoi, type="observation", content="公園を歩いた", importance=5, day=1, time_of_day=10)
    hits = retrieve(aoi, query="カフェ", k=1, day=3, time_of_day=8.25)
    assert hits[0]["memory"]["last_accessed_day"] == 3  # the answer already shows the new access time
    rows = {m["content"]: m for m in aoi.get(URL).json()["memories"]}
    cafe = rows["カフェでヒカリと話した"]
    assert (cafe["last_accessed_day"], cafe["last_accessed_time_of_day"]) == (3, 8.25)
    assert rows["公園を歩いた"]["last_accessed_day"] == 1  # not retrieved, not touched
    # The touched memory is now the most recent: with recency alone it comes first.
    only_recency = retrieve(
        aoi, query="x", weights={"recency": 1, "importance": 0, "relevance": 0}, day=3, time_of_day=9
    )
    assert only_recency[0]["memory"]["content"] == "カフェでヒカリと話した"
    assert only_recency[0]["recency"] == 1.0 and only_recency[1]["recency"] == 0.0


def test_batch_insert_and_retrieval_agree_with_single_inserts(settings: Settings) -> None:
    items = [
        {"type": "observation", "content": c, "importance": i, "time_of_day": h}
        for c, i, h in [
            ("カフェでヒカリと話した", 4, 8),
            ("ヒカリにケーキをもらった", 7, 9),
            ("雨の中を帰った", 2, 10),
            ("図書館でソラに会った", 5, 11),
            ("カフェのケーキが美味しかった", 6, 12),
        ]
    ]
    outcomes = []
    for batch in (False, True):
        with make_client(
            settings.model_copy(update={"database_url": settings.database_url + str(batch)}), ScriptedLLM()
        ) as client:
            add_agent(client)
            if batch:
                stored = post_memory(client, memories=items)["memories"]
            else:
                stored = [post_memory(client, **item) for item in items]
            assert [m["content"] for m in stored] == [i["content"] for i in items]
            results = retrieve(client, query="ヒカリとケーキ", k=5, day=1, time_of_day=13)
            outcomes.append([(r["memory"]["content"], round(r["score"], 9)) for r in results])
            drain(client)
    assert outcomes[0] == outcomes[1]


def test_world_isolation(client: TestClient) -> None:
    add_agent(client, world="north")
    add_agent(client, world="south")
    post_memory(client, world="north", type="observation", content="北の村の祭り", importance=5)
    post_memory(client, world="south", type="observation", content="南の浜辺", importance=5)
    north = client.get(URL, headers={"X-Machi-World": "north"}).json()
    assert [m["content"] for m in north["memories"]] == ["北の村の祭り"]
    assert [r["memory"]["content"] for r in retrieve(client, world="south", query="祭り")] == ["南の浜辺"]
    north_id = north["memories"][0]["id"]
    assert client.delete(f"{URL}/{north_id}", headers={"X-Machi-World": "south"}).status_code == 404
    # The default world has no agent "aoi" at all.
    assert client.get(URL).status_code == 404


def test_delete_removes_from_listing_and_retrieval(aoi: TestClient) -> None:
    first = post_memory(aoi, type="observation", content="カフェでヒカリと話した", importance=5)
    post_memory(aoi, type="observation", content="カフェで本を読んだ", importance=5)
    assert len(retrieve(aoi, query="カフェ")) == 2
    assert aoi.delete(f"{URL}/{first['id']}").status_code == 204
    assert [r["memory"]["content"] for r in retrieve(aoi, query="カフェ")] == ["カフェで本を読んだ"]
    assert aoi.get(URL).json()["total"] == 1
    assert aoi.delete(f"{URL}/{first['id']}").status_code == 404


def test_model_rating_replaces_the_provisional_importance(aoi: TestClient, scripted: ScriptedLLM) -> None:
    scripted.enqueue({"importance": 9}, purpose="importance")
    stored = post_memory(aoi, type="observation", content="ヒカリに告白された")
    assert stored["importance_source"] == "provisional" and stored["importance"] == 3
    drain(aoi)
    row = aoi.get(URL).json()["memories"][0]
    assert (row["importance"], row["importance_source"]) == (9, "model")
    assert scripted.calls("importance")[0].options.facts["memory"] == "ヒカリに告白された"
