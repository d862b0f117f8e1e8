"""Person memory: folding conversations in, recompression past 20 exchanges, failures, context, endpoints."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from backend.errors import LLMUnavailable
from backend.memory.models import PersonMemory
from backend.scripted import ScriptedLLM
from tests.memory.agents import add_agent
from tests.memory.helpers import call, service

PEOPLE = "/v1/agents/aoi/people"

FIRST = [
    "ヒカリ: こんにちは!今日はいい天気だね",
    "アオイ: ほんとだね。カフェに行くところ?",
    "ヒカリ: うん、新しいケーキが出たんだって!",
    "アオイ: いいね、私も行こうかな",
]
SECOND = [
    "ヒカリ: 昨日のケーキ、美味しかったね",
    "アオイ: また行きたいね",
    "ヒカリ: 今度は図書館にも寄ろうよ?",
]


@pytest.fixture
def pair(client: TestClient) -> TestClient:
    add_agent(client)
    add_agent(client, "hikari", name="ヒカリ")
    return client


def update(client: TestClient, transcript: list[str], *, session: str, day: int, hour: float = 10.0,
           other: str = "hikari", name: str = "ヒカリ", language: str = "ja") -> PersonMemory:  # fmt: skip
    result: PersonMemory = call(
        client,
        service(client).update_person_memory,
        "default",
        "aoi",
        other_id=other,
        other_name=name,
        transcript=transcript,
        session_id=session,
        day=day,
        time_of_day=hour,
        language=language,
    )
    return result


def test_two_conversations_build_the_record(pair: TestClient, scripted: ScriptedLLM) -> None:
    first = update(pair, FIRST, session="s1", day=1, hour=10.0)
    assert first.interaction_count == 1 and first.exchanges_since_compress == 4
    assert first.summary and first.traits_noticed and first.first_met_day == 1
    second = update(pair, SECOND, session="s2", day=2, hour=15.5)
    assert second.interaction_count == 2 and second.exchanges_since_compress == 7
    assert second.summary != first.summary and second.summary.startswith(first.summary)
    assert (second.first_met_day, second.first_met_time_of_day) == (1, 10.0)
    assert (second.last_met_day, second.last_met_time_of_day) == (2, 15.5)
    calls = scripted.calls("person")
    assert len(calls) == 2 and all(c.options.labels.get("stage") == "update" for c in calls)
    # The second prompt was built from what the first conversation left.
    assert calls[1].options.facts["summary"] == first.summary
    assert calls[1].options.facts["transcript"] == SECOND
    body = pair.get(f"{PEOPLE}/hikari").json()
    assert body["interaction_count"] == 2 and body["summary"] == second.summary
    assert body["other_name"] == "ヒカリ"


def test_traits_and_notes_from_the_model_are_merged_not_replaced(
    pair: TestClient, scripted: ScriptedLLM
) -> None:
    scripted.enqueue(
        {"traits_noticed": ["明るい"], "notes": ["ケーキが好き"], "summary": "明るい人。"}, purpose="person"
    )
    update(pair, FIRST, session="s1", day=1)
    scripted.enqueue(
        {
            "traits_noticed": ["明るい", "几帳面"],
            "notes": ["図書館によく行く"],
            "summary": "明るく几帳面な人。",
        },
        purpose="person",
    )
    row = update(pair, SECOND, session="s2", day=2)
    assert row.traits_noticed == ["明るい", "几帳面"]
    assert row.notes == ["ケーキが好き", "図書館によく行く"] and row.summary == "明るく几帳面な人。"


def test_summary_is_recompressed_past_20_exchanges(pair: TestClient, scripted: ScriptedLLM) -> None:
    lines = [f"{'ヒカリ' if i % 2 else 'アオイ'}: 話題その{i}について話そう" for i in range(20)]
    row = update(pair, lines[:12], session="s1", day=1)
    assert row.exchanges_since_compress == 12 and row.compressions == 0
    topics = ("本", "猫", "雨", "朝ごはん", "花火", "公園", "音楽", "映画", "旅行", "料理")
    long_summary = "".join(f"ヒカリとは{topic}の話をした。" for topic in topics)
    scripted.enqueue(
        {"traits_noticed": ["話好き"], "notes": [], "summary": long_summary},
        {"summary": "話好きな友人。"},
        purpose="person",
    )
    row = update(pair, lines[:9], session="s2", day=2)  # 21 > 20: recompressed
    assert row.summary == "話好きな友人。" and row.exchanges_since_compress == 0 and row.compressions == 1
    compress = scripted.calls("person")[-1]
    assert (
        compress.options.labels.get("stage") == "compress"
        and compress.options.facts["summary"] == long_summary
    )
    assert compress.options.facts["max_chars"] == 400
    # Exactly 20 since the last compression is not past 20.
    row = update(pair, lines[:20], session="s3", day=3)
    assert row.exchanges_since_compress == 20 and row.compressions == 1


def test_scripted_compression_shortens_the_summary(pair: TestClient, scripted: ScriptedLLM) -> None:
    lines = [f"ヒカリ: 話題その{i}のことを教えて!" for i in range(11)]
    before = update(pair, lines, session="s1", day=1)
    after = update(pair, lines, session="s2", day=2)  # 22 > 20, the scripted writer compresses
    assert after.compressions == 1 and after.exchanges_since_compress == 0
    assert len(after.summary) <= 400 and after.summary.startswith("ヒカリは") and before.summary


def test_the_summary_never_states_a_meeting_count_that_goes_stale(pair: TestClient) -> None:
    """The card shows interaction_count; a count frozen into the summary at compression would contradict it."""
    lines = [f"ヒカリ: 話題その{i}のことを教えて!" for i in range(11)]
    for day in range(1, 6):  # compressed after the second meeting, then three more meetings
        row = update(pair, lines, session=f"s{day}", day=day)
    assert row.interaction_count == 5 and row.compressions >= 1
    assert "回話した" not in row.summary and "times" not in row.summary


def test_person_notes_name_whole_words_not_fragments(pair: TestClient) -> None:
    said = [
        "ヒカリ: そういえば、この前話した図書館のこと、覚えてる？",
        "ヒカリ: えっ、図書館？本当に？一息つこう",
    ]
    row = update(pair, said, session="s1", day=1)
    assert row.notes == ["ヒカリは図書館の話をしていた"]
    assert "図書館について話した" in row.summary
    for fragment in ("前話", "本当", "一息"):
        assert fragment not in row.summary and all(fragment not in note for note in row.notes)


def test_a_failed_update_keeps_the_old_record_and_is_traced(pair: TestClient, scripted: ScriptedLLM) -> None:
    first = update(pair, FIRST, session="s1", day=1)
    scripted.enqueue(*[LLMUnavailable("model down")] * 3, purpose="person")
    row = update(pair, SECOND, session="s2", day=2)
    assert (row.summary, row.traits_noticed, row.notes) == (first.summary, first.traits_noticed, first.notes)
    assert row.exchanges_since_compress == first.exchanges_since_compress  # the lines were not folded in
    assert row.interaction_count == 2 and row.last_met_day == 2  # the meeting itself happened
    assert row.last_error and "model down" in row.last_error
    traced = pair.get("/v1/llm-calls", params={"purpose": "person", "errors_only": True}).json()["calls"]
    assert traced and all(not c["ok"] for c in traced)


def test_folding_the_same_conversation_twice_counts_once(pair: TestClient, scripted: ScriptedLLM) -> None:
    update(pair, FIRST, session="s1", day=1)
    again = update(pair, FIRST, session="s1", day=1)
    assert again.interaction_count == 1 and len(scripted.calls("person")) == 1


def test_the_same_talk_again_keeps_the_summary_without_a_re_ask(
    pair: TestClient, scripted: ScriptedLLM
) -> None:
    """A second talk that teaches nothing new leaves the summary as it was: not the sentence twice, and not a
    refusal of the kept summary as a copy of the prompt (the CI kill -9 test saw a reflection job fail on it)."""
    first = update(pair, FIRST, session="s1", day=1)
    again = update(pair, FIRST, session="s2", day=1)
    assert again.interaction_count == 2 and again.summary == first.summary and again.last_error is None
    assert len(scripted.calls("person")) == 2  # one call each: nothing was re-asked


def test_person_context_for_the_next_turn(pair: TestClient, scripted: ScriptedLLM) -> None:
    memory = service(pair)
    assert memory.person_context("default", "aoi", "hikari") is None
    scripted.enqueue(
        {"traits_noticed": ["明るい"], "notes": ["ケーキが好き"], "summary": "明るい友人。"}, purpose="person"
    )
    update(pair, FIRST, session="s1", day=3, hour=14.5)
    text = memory.person_context("default", "aoi", "hikari")
    assert text is not None
    assert "ヒカリ" in text and "1回" in text and "3日目の14:30" in text
    assert "明るい友人。" in text and "明るい" in text and "ケーキが好き" in text


def test_english_agent_gets_english_context_about_a_player(pair: TestClient) -> None:
    add_agent(pair, "ken", name="Ken", language="en")
    lines = ["Player: Hi Ken! Do you like the bakery?", "Ken: I love it, thank you for asking."]
    call(pair, service(pair).update_person_memory, "default", "ken", other_id="player-1", other_name="Mika",
         transcript=lines, session_id="p1", day=1, time_of_day=9.0, language="en")  # fmt: skip
    text = service(pair).person_context("default", "ken", "player-1")
    assert text is not None and text.startswith("About Mika (talked once, last on day 1 at 09:00):")
    body: dict[str, Any] = pair.get("/v1/agents/ken/people/player-1").json()
    assert body["summary"].isascii() and body["traits_noticed"]


def test_people_endpoints_list_404_and_isolation(pair: TestClient) -> None:
    update(pair, FIRST, session="s1", day=1)
    update(pair, ["ソラ: やあ", "アオイ: こんにちは"], session="s2", day=2, other="sora", name="ソラ")
    listed = pair.get(PEOPLE).json()
    assert listed["agent_id"] == "aoi" and [p["other_id"] for p in listed["people"]] == ["sora", "hikari"]
    missing = pair.get(f"{PEOPLE}/nobody")
    assert missing.status_code == 404 and missing.json()["error"]["details"] == {"other_id": "nobody"}
    assert pair.get("/v1/agents/ghost/people").status_code == 404
    assert pair.get("/v1/agents/ghost/people/hikari").status_code == 404
    other_world = {"X-Machi-World": "elsewhere"}
    assert pair.get(PEOPLE, headers=other_world).status_code == 404  # no aoi there
    add_agent(pair, "aoi", world="elsewhere")
    assert pair.get(PEOPLE, headers=other_world).json()["people"] == []
    assert pair.get(f"{PEOPLE}/hikari", headers=other_world).status_code == 404


def test_deleting_the_agent_drops_its_person_memories(pair: TestClient) -> None:
    update(pair, FIRST, session="s1", day=1)
    assert pair.delete("/v1/agents/aoi").status_code in (200, 204)
    add_agent(pair)
    assert pair.get(PEOPLE).json()["people"] == []
