"""Memory replies that echo the prompt (a placeholder, a memory copied as an insight, an old summary kept as
"new") are re-asked once with the reason, then fail as today; no memory prompt shows a JSON example."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from backend.memory import prompts, reflection
from backend.memory.models import PersonMemory
from backend.scripted import ScriptedLLM
from tests.conftest import drain
from tests.llm.test_echo import assert_no_template
from tests.memory.agents import add_agent, post_memory
from tests.memory.helpers import add, call, service

TRANSCRIPT = ["ヒカリ: 新しいケーキが出たんだって!", "アオイ: いいね、私も行こうかな"]
GOOD_PERSON = {
    "traits_noticed": ["甘いもの好き"],
    "notes": ["新作ケーキを楽しみにしている"],
    "summary": "明るい友だち。",
}


def facts(language: str) -> dict[str, Any]:
    return {
        "agent_name": "アオイ",
        "partner_name": "ヒカリ",
        "other_name": "ヒカリ",
        "language": language,
        "memory": "カフェでケーキを食べた",
        "memories": [{"id": 3, "content": "カフェでケーキを食べた"}],
        "questions": ["ヒカリはどんな人?"],
        "transcript": TRANSCRIPT,
        "day": 1,
        "clock": "10:00",
        "summary": "カフェの店員。",
        "traits_noticed": ["明るい"],
        "notes": [],
        "max_chars": 200,
    }


@pytest.mark.parametrize("language", ["ja", "en"])
def test_no_memory_prompt_shows_a_template(language: str) -> None:
    given = facts(language)
    built = [
        prompts.importance_messages(given),
        prompts.importance_batch_messages({**given, "memories": ["a", "b"]}),
        prompts.conversation_messages(given),
        prompts.questions_messages(given),
        prompts.insight_messages(given),
        prompts.person_update_messages(given),
        prompts.person_compress_messages(given),
    ]
    for messages in built:
        assert_no_template(messages)
    joined = "\n".join(m["content"] for messages in built for m in messages)
    for field in (
        "importance",
        "ratings",
        "summary",
        "questions",
        "insights",
        "evidence_ids",
        "traits_noticed",
    ):
        assert field in joined  # every field is named, in words
    if language == "en":
        assert "ratings, is a list of exactly 2 integers from 1 to 10" in joined
    else:
        assert "ratings に番号の順に2個の評価(1〜10の整数)" in joined


def test_an_importance_placeholder_is_re_asked_then_none(client: TestClient, scripted: ScriptedLLM) -> None:
    add_agent(client)
    row = add(client, "カフェでケーキを食べた", importance=5)
    llm, key = service(client).rater.llm, ("default", "aoi")
    scripted.enqueue({"importance": "<1-10>"}, {"importance": 8}, purpose="importance")
    assert call(client, reflection.rate_importance, llm, key, row, "アオイ", "ja") == 8
    assert "importance" in scripted.calls("importance")[1].messages[-1]["content"]
    scripted.enqueue({"importance": "<1-10>"}, {"ratings": "..."}, purpose="importance")
    assert call(client, reflection.rate_importance, llm, key, row, "アオイ", "ja") is None
    assert len(scripted.calls("importance")) == 4


def reflect(client: TestClient, session_id: str) -> Any:
    return call(
        client,
        service(client).reflect_on_conversation,
        "default",
        "aoi",
        session_id=session_id,
        partner_name="ヒカリ",
        transcript=TRANSCRIPT,
        evidence_ids=[],
        day=1,
        time_of_day=15.0,
        language="ja",
    )


def test_a_reflection_copying_a_line_is_re_asked_then_dropped(
    client: TestClient, scripted: ScriptedLLM
) -> None:
    add_agent(client)
    good = {"summary": "ヒカリとケーキの話をして、行ってみたくなった。", "importance": 4}
    scripted.enqueue({"summary": "新しいケーキが出たんだって!", "importance": 4}, good, purpose="reflection")
    memory = reflect(client, "s-1")
    assert memory is not None and memory.content == good["summary"]
    assert "summary repeats a line of the prompt" in scripted.calls("reflection")[1].messages[-1]["content"]
    scripted.enqueue(
        {"summary": "...", "importance": 4}, {"summary": "summary", "importance": 4}, purpose="reflection"
    )
    assert reflect(client, "s-2") is None and len(scripted.calls("reflection")) == 4


def test_an_insight_copying_a_memory_is_re_asked(client: TestClient, scripted: ScriptedLLM) -> None:
    add_agent(client)
    first = int(post_memory(client, type="observation", content="カフェでヒカリと話した", importance=5)["id"])
    drain(client)
    scripted.enqueue({"questions": ["ヒカリはどんな人?"]}, purpose="questions")
    copied = {"insights": [{"content": "カフェでヒカリと話した", "evidence_ids": [first], "importance": 5}]}
    good = {"insights": [{"content": "ヒカリとは気が合う", "evidence_ids": [first], "importance": 6}]}
    scripted.enqueue(copied, good, purpose="insight")
    made = client.post("/v1/agents/aoi/reflect", json={"day": 1, "time_of_day": 12}).json()["reflections"]
    assert [m["content"] for m in made] == ["ヒカリとは気が合う"]
    reask = scripted.calls("insight")[1].messages[-1]["content"]
    assert "insights[0].content repeats a line of the prompt" in reask


def update_person(client: TestClient, session: str) -> PersonMemory:
    result: PersonMemory = call(
        client,
        service(client).update_person_memory,
        "default",
        "aoi",
        other_id="hikari",
        other_name="ヒカリ",
        transcript=TRANSCRIPT,
        session_id=session,
        day=1,
        time_of_day=10.0,
        language="ja",
    )
    return result


def test_a_person_update_echo_is_re_asked_then_kept_as_it_was(
    client: TestClient, scripted: ScriptedLLM
) -> None:
    add_agent(client)
    add_agent(client, "hikari", name="ヒカリ")
    scripted.enqueue({**GOOD_PERSON, "summary": "ヒカリ"}, GOOD_PERSON, purpose="person")
    row = update_person(client, "s1")
    assert row.summary == "明るい友だち。" and row.last_error is None
    assert (
        "summary is only a name" in scripted.calls("person")[1].messages[-1]["content"]
        and "ヒカリ" not in scripted.calls("person")[1].messages[-1]["content"]
    )  # the echo is not quoted back
    scripted.enqueue({**GOOD_PERSON, "summary": "..."}, {**GOOD_PERSON, "summary": "…"}, purpose="person")
    kept = update_person(client, "s2")
    assert kept.summary == "明るい友だち。" and "summary" in (kept.last_error or "")
    assert "echoes the prompt" in (kept.last_error or "") and len(scripted.calls("person")) == 4
    # The summary in the prompt given back unchanged is an answer (nothing new was learned), not an echo.
    scripted.enqueue({**GOOD_PERSON, "summary": "明るい友だち。"}, purpose="person")
    unchanged = update_person(client, "s3")
    assert unchanged.summary == "明るい友だち。" and unchanged.last_error is None
    assert len(scripted.calls("person")) == 5
