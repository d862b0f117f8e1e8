"""Memory hygiene: tag extraction, near-duplicate merging, and caps with eviction."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from backend.config import Settings
from backend.memory import hygiene
from backend.memory.tags import memory_tags
from backend.scripted import ScriptedLLM
from backend.text import jaccard
from tests.conftest import drain, make_client
from tests.memory.agents import add_agent
from tests.memory.helpers import add, call, service

URL = "/v1/agents/aoi/memories"


@pytest.fixture
def aoi(client: TestClient) -> TestClient:
    add_agent(client)
    return client


def total(client: TestClient, kind: str | None = None) -> int:
    params = {"type": kind} if kind else {}
    return int(client.get(URL, params=params).json()["total"])


# --- tags ---
@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("カフェでヒカリがコーヒーを飲んでいる", {"カフェ", "ヒカリ", "コーヒー", "飲ん"}),
        ("ヒカリが「カフェで本を読むのが好き」と言った", {"カフェ", "ヒカリ", "本", "読む", "好き"}),
        (
            "ヒカリが「おはよう」と言った",
            {"ヒカリ", "おはよう"},
        ),  # the reporting verb around a quote is dropped
        ("カフェでヒカリと話した", {"カフェ", "ヒカリ", "話し"}),  # ...but kept when it is the event itself
        ('Hikari told me: "the bakery opens at nine"', {"hikari", "bakery", "opens", "nine"}),
    ],
)
def test_tags_name_people_places_and_content_words(content: str, expected: set[str]) -> None:
    assert set(memory_tags(content)) == expected


def test_tags_are_stored_when_not_given(aoi: TestClient) -> None:
    row = add(aoi, "カフェでソラがケーキを焼いている")
    assert set(row.tags) == {"カフェ", "ソラ", "ケーキ", "焼い"}
    given = add(aoi, "公園を散歩した", tags=["散歩"])
    assert given.tags == ["散歩"]


# --- deduplication ---
def test_near_duplicate_within_24_game_hours_merges_into_the_existing_memory(aoi: TestClient) -> None:
    first = add(aoi, "カフェでヒカリがコーヒーを飲んでいる", importance=4, day=1, time_of_day=9.0)
    again = add(aoi, "カフェでヒカリがコーヒーを飲んでいた", importance=6, day=1, time_of_day=20.0)
    assert again.id == first.id and total(aoi) == 1
    stored = aoi.get(f"{URL}").json()["memories"][0]
    # The existing content is kept; importance is the higher; last access moves to the duplicate's time.
    assert stored["content"] == "カフェでヒカリがコーヒーを飲んでいる"
    assert stored["importance"] == 6
    assert (stored["last_accessed_day"], stored["last_accessed_time_of_day"]) == (1, 20.0)
    lower = add(aoi, "カフェでヒカリがコーヒーを飲んでいる", importance=2, day=1, time_of_day=21.0)
    assert lower.id == first.id and lower.importance == 6


@pytest.mark.parametrize(
    ("day", "hour", "merged"), [(2, 8.5, True), (2, 9.0, True), (2, 9.5, False), (5, 9, False)]
)
def test_observation_dedup_window_is_24_game_hours(
    aoi: TestClient, day: int, hour: float, merged: bool
) -> None:
    first = add(aoi, "カフェでヒカリがコーヒーを飲んでいる", importance=4, day=1, time_of_day=9.0)
    later = add(aoi, "カフェでヒカリがコーヒーを飲んでいる", importance=4, day=day, time_of_day=hour)
    assert (later.id == first.id) is merged
    assert total(aoi) == (1 if merged else 2)


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (
            "カフェでヒカリがコーヒーを飲んでいる",
            "カフェでソラがケーキを焼いている",
        ),  # same café, other people
        (
            "カフェでヒカリと話した",
            "ヒカリがカフェで笑っていた",
        ),  # one place and one person are not one event
        ("9時の出来事", "10時の出来事"),
        ("ヒカリが「カフェのケーキ美味しいね」と言った", "ヒカリが「カフェで本を読むのが好き」と言った"),
        ("Hikari is drinking coffee at the cafe", "Sora is baking bread at the cafe"),
    ],
)
def test_different_events_do_not_merge(aoi: TestClient, first: str, second: str) -> None:
    a = add(aoi, first, importance=3, time_of_day=9.0)
    b = add(aoi, second, importance=3, time_of_day=10.0)
    assert a.id != b.id and total(aoi) == 2


def test_conversation_lines_merge_only_within_their_conversation(aoi: TestClient) -> None:
    line = "ヒカリが「カフェの新しいケーキ、すごく美味しいね」と言った"
    first = add(aoi, line, importance=4, session_id="talk-1", time_of_day=9.0)
    # The same words in another conversation at the same café later that day are another event.
    other = add(aoi, line, importance=4, session_id="talk-2", time_of_day=15.0)
    assert other.id != first.id
    # A perception with the same text is not a line of either conversation.
    assert add(aoi, line, importance=4, time_of_day=15.5).id not in {first.id, other.id}
    # Repeated within its own conversation, the line merges.
    assert add(aoi, line, importance=4, session_id="talk-1", time_of_day=9.1).id == first.id
    # Two different short lines of one speaker share only the speaker: no merge.
    hello = add(aoi, "ヒカリが「おはよう」と言った", importance=2, session_id="talk-3")
    thanks = add(aoi, "ヒカリが「ありがとう」と言った", importance=2, session_id="talk-3")
    assert hello.id != thanks.id and total(aoi) == 5


def test_duplicates_in_one_batch_merge_and_the_answer_is_aligned(aoi: TestClient) -> None:
    item = {"type": "observation", "content": "ヒカリが広場のベンチに座っている", "importance": 3}
    other = {"type": "observation", "content": "ソラが図書館で本を探している", "importance": 5}
    body = {"memories": [item, other, {**item, "importance": 7}]}
    stored = aoi.post(URL, json=body).json()["memories"]
    assert stored[0]["id"] == stored[2]["id"] != stored[1]["id"]
    assert total(aoi) == 2
    assert {m["content"]: m["importance"] for m in aoi.get(URL).json()["memories"]}[item["content"]] == 7


def test_reflections_merge_at_0_6_whatever_their_age(aoi: TestClient) -> None:
    evidence = [add(aoi, "ヒカリがケーキを焼いていた", importance=4, day=d).id or 0 for d in (1, 40)]
    first = add(aoi, "ヒカリはカフェのケーキ作りが本当に上手だと思う", type="reflection", importance=6, day=1,
                evidence_ids=[evidence[0]])  # fmt: skip
    later = add(aoi, "ヒカリはカフェのケーキ作りが上手だと思う", type="reflection", importance=5, day=40,
                evidence_ids=[evidence[1]])  # fmt: skip
    assert later.id == first.id and later.importance == 6
    assert later.evidence_ids == evidence  # the kept reflection now rests on both
    assert jaccard(memory_tags("ヒカリは図書館で静かに過ごすのが好きだと思う"), first.tags) < 0.6
    unrelated = add(
        aoi, "ヒカリは図書館で静かに過ごすのが好きだと思う", type="reflection", importance=5, day=40
    )
    assert unrelated.id != first.id and total(aoi, "reflection") == 2


def test_a_reflection_is_compared_with_the_newest_reflections_only(
    aoi: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(hygiene, "DEDUP_REFLECTION_POOL", 2)
    cake = add(aoi, "ヒカリはカフェのケーキ作りが本当に上手だと思う", type="reflection", importance=6)
    for text in ("ソラは図書館で静かに本を読むのが好きだと思う", "ミナトは公園で毎朝走っているらしい"):
        add(aoi, text, type="reflection", importance=5)
    # The cake reflection is third newest now: outside the pool of 2, so its near-duplicate is stored.
    again = add(aoi, "ヒカリはカフェのケーキ作りが上手だと思う", type="reflection", importance=5)
    assert again.id != cake.id and total(aoi, "reflection") == 4
    # The newest one is inside the pool: a near-duplicate of it merges.
    assert add(aoi, "ヒカリはカフェのケーキ作りがとても上手だと思う", type="reflection").id == again.id


def test_dedup_can_be_switched_off(settings: Settings, scripted: ScriptedLLM) -> None:
    with make_client(settings, scripted, memory_dedup=False) as client:
        add_agent(client)
        a = add(client, "カフェでヒカリがコーヒーを飲んでいる", importance=4)
        b = add(client, "カフェでヒカリがコーヒーを飲んでいる", importance=4)
        assert a.id != b.id


# --- caps ---
@pytest.fixture
def capped(settings: Settings, scripted: ScriptedLLM) -> Iterator[TestClient]:
    """Cap 10 observations, evicting 2 (20%) beyond the excess."""
    with make_client(settings, scripted, memory_cap_observation=10, memory_evict_batch=0.2) as client:
        add_agent(client)
        yield client


def observe(
    client: TestClient, i: int, importance: int, hour: float = 9.0, content: str | None = None
) -> int:
    # Explicit, distinct tags: these memories are never duplicates of each other.
    text = content or f"出来事その{i}"
    row = add(client, text, importance=importance, tags=[f"e{i}", f"f{i}"], time_of_day=hour)
    return row.id or 0


def ids(client: TestClient) -> set[int]:
    return {m["id"] for m in client.get(URL, params={"limit": 500}).json()["memories"]}


@pytest.mark.parametrize("touch_first", [False, True])
def test_eviction_takes_the_least_important_then_least_recently_used_in_a_batch(
    capped: TestClient, touch_first: bool
) -> None:
    importances = [5, 3, 7, 2, 9, 3, 6, 2, 4, 8]
    made = [
        observe(capped, i, imp, hour=1.0 + i, content="図書館で本を読んだ" if i == 1 else None)
        for i, imp in enumerate(importances)
    ]
    if touch_first:
        # Retrieval touches what it returns: the importance-3 memory made at 2:00 is then the fresher one.
        hits = call(capped, service(capped).retrieve, "default", "aoi", "図書館で本を読んだ", k=1,
                    weights={"recency": 0, "importance": 0}, day=1, time_of_day=23.0)  # fmt: skip
        assert [h.memory.id for h in hits] == [made[1]]
    newest = observe(capped, 10, 1, hour=12.5)  # 11 > 10: evict the excess (1) plus the batch (2)
    assert total(capped) == 8
    # Both importance-2 memories go first, then the least recently accessed importance-3 one.
    older_three = made[5] if touch_first else made[1]
    assert set(made) - ids(capped) == {made[3], made[7], older_three}
    assert newest in ids(capped)  # the row just stored is never evicted by its own insert
    hits = call(capped, service(capped).retrieve, "default", "aoi", "出来事", k=20)
    assert {h.memory.id for h in hits} == ids(capped)  # the index dropped the evicted rows


def test_eviction_spares_importance_8_and_above_even_past_the_cap(capped: TestClient) -> None:
    important = [observe(capped, i, 8 + i % 3) for i in range(10)]
    call(capped, service(capped).retrieve, "default", "aoi", "出来事", k=3)  # index loaded
    low = observe(capped, 10, 2)
    assert total(capped) == 11  # everything else is protected: the cap is exceeded, nothing important lost
    second = observe(capped, 11, 1)
    assert set(important) | {second} == ids(capped) and low not in ids(capped)
    hits = call(capped, service(capped).retrieve, "default", "aoi", "出来事", k=20)
    assert low not in {h.memory.id for h in hits}


def test_caps_are_per_type_and_per_agent(capped: TestClient) -> None:
    add_agent(capped, "hikari", name="ヒカリ")
    for i in range(10):
        observe(capped, i, 3)
        add(capped, f"計画その{i}", type="plan", importance=2, tags=[f"p{i}", f"q{i}"])
        add(capped, f"他の出来事{i}", agent="hikari", importance=2, tags=[f"h{i}", f"k{i}"])
    observe(capped, 10, 3)
    assert total(capped, "observation") == 8 and total(capped, "plan") == 10
    assert capped.get("/v1/agents/hikari/memories").json()["total"] == 10
    drain(capped)


def test_cap_settings_are_sensible(settings: Settings) -> None:
    assert settings.memory_cap_observation == 5000 and settings.memory_cap_reflection == 2000
    assert settings.memory_cap_plan == 500 and settings.memory_evict_protect == 8
    assert 0 < settings.memory_evict_batch <= 0.5
