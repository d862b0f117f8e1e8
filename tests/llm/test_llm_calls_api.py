"""GET /v1/llm-calls: the app's own model (scripted, wrapped and traced) and the filters on its trace."""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import BaseModel, Field

from backend.errors import LLMReplyError
from backend.llm.base import GenerateOptions
from backend.scripted import ScriptedLLM


class ProbeRating(BaseModel):
    """A schema no scripted writer knows (so the engine fills it generically)."""

    score: int = Field(ge=1, le=10)


def ask(client: TestClient, **options: Any) -> ProbeRating:
    app: Any = client.app
    call = partial(
        app.state.llm.generate_json,
        [{"role": "user", "content": "この出来事の重要度は?"}],
        ProbeRating,
        options=GenerateOptions(**options),
    )
    return client.portal.call(call)  # type: ignore[union-attr, no-any-return]


def listed(client: TestClient, **params: Any) -> list[dict[str, Any]]:
    response = client.get("/v1/llm-calls", params=params)
    assert response.status_code == 200
    return response.json()["calls"]  # type: ignore[no-any-return]


def test_calls_are_listed_newest_first_and_filtered(client: TestClient) -> None:
    ask(client, purpose="importance", agent_id="aoi", session_id="s-1")
    ask(client, purpose="importance", agent_id="hikari", session_id="s-1")
    ask(client, purpose="council", agent_id="aoi", labels={"council_id": "c-1"})
    ask(client, purpose="plan", agent_id="mei")
    everything = listed(client)
    assert [c["purpose"] for c in everything] == ["plan", "council", "importance", "importance"]
    assert {c["agent_id"] for c in listed(client, agent_id="aoi")} == {"aoi"}
    assert len(listed(client, agent_id="aoi")) == 2
    assert [c["agent_id"] for c in listed(client, purpose="importance")] == ["hikari", "aoi"]
    assert {c["agent_id"] for c in listed(client, session_id="s-1")} == {"aoi", "hikari"}
    [council] = listed(client, council_id="c-1")
    assert council["purpose"] == "council" and council["schema_name"] == "ProbeRating"
    assert [c["purpose"] for c in listed(client, limit=2)] == ["plan", "council"]
    assert listed(client, agent_id="nobody") == []


def test_invalid_reply_is_marked_and_detail_keeps_messages(client: TestClient, scripted: ScriptedLLM) -> None:
    scripted.enqueue('{"score": 99}', purpose="importance")
    assert 1 <= ask(client, purpose="importance", agent_id="aoi").score <= 10  # the re-ask used the writer
    failed, retried = listed(client, errors_only=True), listed(client)
    assert len(retried) == 2 and len(failed) == 1
    assert failed[0]["ok"] is False and "score" in failed[0]["error"]
    detail = client.get(f"/v1/llm-calls/{failed[0]['id']}").json()
    assert detail["raw_reply"] == '{"score": 99}'
    assert detail["messages"][0]["content"] == "この出来事の重要度は?"
    assert detail["provider"] == "scripted" and detail["prompt_tokens"] >= 1


def test_an_exception_from_the_model_is_traced(client: TestClient, scripted: ScriptedLLM) -> None:
    scripted.enqueue(LLMReplyError("garbled"), purpose="importance")
    with pytest.raises(LLMReplyError, match="garbled"):
        ask(client, purpose="importance", agent_id="aoi")
    [call] = listed(client, errors_only=True)
    assert call["error"].startswith("llm_bad_reply")


def test_calls_of_another_world_are_hidden(client: TestClient) -> None:
    ask(client, purpose="plan", agent_id="aoi", world_id="rehearsal")
    assert listed(client) == []
    rehearsal = client.get("/v1/llm-calls", headers={"X-Machi-World": "rehearsal"}).json()["calls"]
    assert [c["agent_id"] for c in rehearsal] == ["aoi"]
    assert client.get(f"/v1/llm-calls/{rehearsal[0]['id']}").status_code == 404


def test_bad_filter_is_a_422_naming_the_field(client: TestClient) -> None:
    response = client.get("/v1/llm-calls", params={"limit": 0})
    assert response.status_code == 422
    assert "limit" in response.text


def test_stats_count_repaired_and_reasked_replies(client: TestClient, scripted: ScriptedLLM) -> None:
    """A fenced reply counts as repaired; a reply missing a field as invalid (then re-asked)."""

    class Verdict(BaseModel):
        score: int

    scripted.enqueue('```json\n{"score": 3}\n```', '{"nope": 1}', '{"score": 4}', purpose="probe")
    llm = client.app.state.llm  # type: ignore[attr-defined]

    async def ask() -> tuple[Verdict, Verdict]:
        options = GenerateOptions(purpose="probe")
        first = await llm.generate_json([{"role": "user", "content": "rate"}], Verdict, options=options)
        second = await llm.generate_json([{"role": "user", "content": "again"}], Verdict, options=options)
        return first, second

    first, second = client.portal.call(ask)  # type: ignore[union-attr]
    assert (first.score, second.score) == (3, 4)
    stats = client.get("/v1/llm-calls/stats").json()
    [probe] = [p for p in stats["purposes"] if p["purpose"] == "probe"]
    assert (probe["calls"], probe["repaired"], probe["invalid_replies"], probe["errors"]) == (3, 1, 1, 1)
    calls = client.get("/v1/llm-calls", params={"purpose": "probe"}).json()["calls"]
    assert [c["repaired"] for c in calls] == [False, False, True]  # newest first
