"""Threshold (Generative Agents) reflection and the end-of-conversation reflection."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from backend.config import Settings
from backend.errors import LLMUnavailable
from backend.scripted import ScriptedLLM
from tests.conftest import drain, make_client
from tests.memory.agents import add_agent, post_memory

URL = "/v1/agents/aoi/memories"


@pytest.fixture
def small(settings: Settings, scripted: ScriptedLLM) -> Any:
    """An app whose reflection threshold is 20, with agent aoi."""
    with make_client(settings, scripted, reflection_threshold=20.0) as client:
        add_agent(client)
        yield client


def insights(client: TestClient) -> list[dict[str, Any]]:
    rows = client.get(URL, params={"type": "reflection", "limit": 500}).json()["memories"]
    return [r for r in rows if r["origin"] == "insight"]


def observe(client: TestClient, content: str, importance: int, hour: float = 9.0) -> int:
    stored = post_memory(client, type="observation", content=content, importance=importance, time_of_day=hour)
    drain(client)
    return int(stored["id"])


def test_threshold_reflection_fires_exactly_when_the_sum_reaches_it(
    small: TestClient, scripted: ScriptedLLM
) -> None:
    observe(small, "カフェでヒカリと話した", 9)
    observe(small, "ヒカリとカフェでケーキを食べた", 10)  # sum 19 < 20
    assert scripted.calls("questions") == [] and insights(small) == []
    observe(small, "ヒカリがカフェで笑っていた", 1)  # sum 20: fires
    assert len(scripted.calls("questions")) == 1 and len(scripted.calls("insight")) == 1
    made = insights(small)
    assert made, "the scripted model wrote no insight"
    ids = {m["id"] for m in small.get(URL, params={"limit": 500}).json()["memories"]}
    for insight in made:
        assert insight["evidence_ids"] and set(insight["evidence_ids"]) <= ids
    # The counter restarts after the insight: one more small observation does not fire again.
    observe(small, "公園を歩いた", 5)
    assert len(scripted.calls("questions")) == 1


def test_insights_citing_unknown_ids_are_dropped(small: TestClient, scripted: ScriptedLLM) -> None:
    first = observe(small, "カフェでヒカリと話した", 5)
    second = observe(small, "図書館でソラに会った", 5)
    scripted.enqueue({"questions": ["ヒカリはどんな人?"]}, purpose="questions")
    scripted.enqueue(
        {
            "insights": [
                {"content": "ヒカリとは気が合う", "evidence_ids": [first], "importance": 6},
                {"content": "存在しない記憶に基づく洞察", "evidence_ids": [first, 9999], "importance": 6},
                {"content": "ソラとはよく会う", "evidence_ids": [second, first], "importance": 4},
            ]
        },
        purpose="insight",
    )
    response = small.post("/v1/agents/aoi/reflect", json={"day": 1, "time_of_day": 12})
    assert response.status_code == 200
    made = response.json()["reflections"]
    assert [m["content"] for m in made] == ["ヒカリとは気が合う", "ソラとはよく会う"]
    assert made[1]["evidence_ids"] == [second, first] and made[0]["created_time_of_day"] == 12
    assert {m["content"] for m in insights(small)} == {"ヒカリとは気が合う", "ソラとはよく会う"}
    # The insight prompt was built from memories retrieved for the question.
    shown = scripted.calls("insight")[0].options.facts["memories"]
    assert {m["id"] for m in shown} == {first, second}


def test_the_counter_survives_a_restart(settings: Settings) -> None:
    with make_client(settings, ScriptedLLM(), reflection_threshold=20.0) as client:
        add_agent(client)
        observe(client, "カフェでヒカリと話した", 10)
    scripted = ScriptedLLM()
    with make_client(settings, scripted, reflection_threshold=20.0) as client:
        observe(client, "ヒカリとケーキを食べた", 10)  # 10 before the restart + 10 now
        assert len(scripted.calls("questions")) == 1
        assert insights(client)


def test_failed_reflection_stores_nothing_and_answers_empty(small: TestClient, scripted: ScriptedLLM) -> None:
    observe(small, "カフェでヒカリと話した", 5)
    scripted.enqueue(*[LLMUnavailable("down")] * 5, purpose="questions")
    response = small.post("/v1/agents/aoi/reflect", json={})
    assert response.status_code == 200 and response.json() == {"reflections": []}
    assert insights(small) == []


def test_conversation_reflection_is_stored_with_evidence(client: TestClient, scripted: ScriptedLLM) -> None:
    add_agent(client)
    a = observe(client, "ヒカリ: カフェのケーキ美味しいね", 4)
    b = observe(client, "アオイ: うん、また来ようね", 4)
    service = client.app.state.memory  # type: ignore[attr-defined]
    memory = client.portal.call(
        lambda: service.reflect_on_conversation(  # type: ignore[union-attr]
            "default",
            "aoi",
            session_id="s-1",
            partner_name="ヒカリ",
            transcript=["ヒカリ: カフェのケーキ美味しいね", "アオイ: うん、また来ようね"],
            evidence_ids=[a, b, 424242],
            day=1,
            time_of_day=15.0,
            language="ja",
        )
    )
    assert memory is not None and memory.type == "reflection" and memory.origin == "conversation"
    assert memory.evidence_ids == [a, b]  # the unknown id is not kept
    assert memory.session_id == "s-1" and "ヒカリ" in memory.content
    assert 1 <= memory.importance <= 10 and memory.importance_source == "model"
    call = scripted.calls("reflection")[0]
    assert call.options.session_id == "s-1" and call.options.facts["partner_name"] == "ヒカリ"
    listed = client.get(URL, params={"type": "reflection"}).json()["memories"]
    assert [m["id"] for m in listed] == [memory.id]


def test_conversation_reflection_failure_returns_none(client: TestClient, scripted: ScriptedLLM) -> None:
    add_agent(client, language="en", name="Aoi")
    scripted.enqueue(*[LLMUnavailable("down")] * 5, purpose="reflection")
    service = client.app.state.memory  # type: ignore[attr-defined]
    memory = client.portal.call(
        lambda: service.reflect_on_conversation(  # type: ignore[union-attr]
            "default",
            "aoi",
            session_id="s-2",
            partner_name="Hikari",
            transcript=["Hikari: hi", "Aoi: bye"],
            evidence_ids=[],
            day=1,
            time_of_day=15.0,
            language="en",
        )
    )
    assert memory is None
    assert client.get(URL).json()["total"] == 0
