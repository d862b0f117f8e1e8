"""POST /v1/agents/{id}/interview on the scripted engine: answers from memory, says it does not know when no
memory holds the answer, changes nothing the agent remembers, is traced, and falls back in character."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest
from fastapi.testclient import TestClient

from backend.config import Settings
from backend.errors import LLMUnavailable
from backend.interview.prompts import FALLBACK_ANSWERS
from backend.interview.schemas import MAX_QUESTION_CHARS
from backend.llm.base import Completion, GenerateOptions, Message
from backend.scripted import ScriptedLLM
from tests.conftest import drain, make_client
from tests.conversation.helpers import talk
from tests.interview.helpers import (
    AOI,
    EMMA,
    HIKARI,
    LIAM,
    PARTY_EN,
    PARTY_JA,
    SMALL_TALK_EN,
    SMALL_TALK_JA,
    add_agents,
    ask,
    remember,
    stored_mind,
)

QUESTION = "パーティーのこと、何か知ってる？"


def test_the_answer_retells_the_memory_that_holds_the_news(client: TestClient, scripted: ScriptedLLM) -> None:
    add_agents(client, AOI, HIKARI)
    party = remember(client, "hikari", *SMALL_TALK_JA[:2], PARTY_JA, SMALL_TALK_JA[2])[2]
    reply = ask(client, "hikari", QUESTION)
    assert reply["answer"] == "うん、葵が明日の19時に公園でパーティーをするって言ってたよ。"
    assert reply["fallback"] is False and reply["agent_id"] == "hikari" and reply["question"] == QUESTION
    used = reply["memories_used"]
    assert used[0] == {"id": party, "type": "observation", "content": PARTY_JA}  # the most relevant first
    (call,) = scripted.calls("interview")
    assert PARTY_JA in call.messages[1]["content"] and QUESTION in call.messages[1]["content"]


def test_without_a_memory_of_it_the_agent_claims_no_knowledge(client: TestClient) -> None:
    add_agents(client, AOI, HIKARI)
    remember(client, "hikari", *SMALL_TALK_JA)
    reply = ask(client, "hikari", QUESTION)
    assert reply["fallback"] is False and len(reply["memories_used"]) == 3  # retrieved, but none answers
    for news in ("パーティー", "19時", "公園", "うん"):
        assert news not in reply["answer"]
    assert "聞" in reply["answer"]  # 何も聞いてない / 初めて聞いた


def test_english_answers_quote_the_memory_and_english_ignorance_names_nothing(client: TestClient) -> None:
    add_agents(client, EMMA, LIAM)
    remember(client, "emma", SMALL_TALK_EN[0], PARTY_EN, SMALL_TALK_EN[1])
    remember(client, "liam", *SMALL_TALK_EN)
    knows = ask(client, "emma", "Emma, do you know anything about a party?")
    assert knows["answer"] == 'Yes, Liam told me: "I\'m having a party at the park at 7 tomorrow."'
    not_told = ask(client, "liam", "Have you heard about any parties?")
    assert "party" not in not_told["answer"].lower() and "park" not in not_told["answer"].lower()
    assert "heard" in not_told["answer"] and not not_told["fallback"]


def test_the_question_naming_someone_brings_what_the_agent_knows_of_them(
    client: TestClient, scripted: ScriptedLLM
) -> None:
    add_agents(client, AOI, HIKARI)
    talk(client, "aoi", "hikari", "s-know", {"aoi": "葵", "hikari": "ひかり"})
    drain(client)
    person = client.get("/v1/agents/hikari/people/aoi").json()
    reply = ask(client, "hikari", "葵ってどんな人？")
    prompt = scripted.calls("interview")[-1].messages[1]["content"]
    assert "What you know about 葵:" in prompt and person["summary"] in prompt
    assert not reply["fallback"] and reply["answer"]
    ask(client, "hikari", "パーティーのこと知ってる？")
    assert "What you know about" not in scripted.calls("interview")[-1].messages[1]["content"]


def test_an_interview_changes_nothing_the_agent_remembers(client: TestClient) -> None:
    add_agents(client, AOI, HIKARI)
    remember(client, "hikari", *SMALL_TALK_JA, PARTY_JA)
    talk(client, "aoi", "hikari", "s-before", {"aoi": "葵", "hikari": "ひかり"})
    drain(client)
    app: Any = client.app
    index = app.state.memory.cache.peek(("default", "hikari"))
    assert index is not None  # loaded by the turns: its access times are checked too
    accessed = index.accessed[: index.size].copy()
    before = stored_mind(client)
    published: list[str] = []
    app.state.events.subscribe(lambda event: published.append(event.type))
    for question in (QUESTION, "今日は何してたの？", "葵のこと、覚えてる？", "図書館の本について教えて"):
        assert ask(client, "hikari", question, day=2, time_of_day=20.0)["memories_used"]
    assert ask(client, "hikari", QUESTION)["answer"].startswith("うん、葵が")
    drain(client)
    assert stored_mind(client) == before  # no memory, access time, emotion, person memory, plan, job...
    assert (index.accessed[: index.size] == accessed).all()
    assert set(published) == {"llm.call"}  # only the trace


def test_every_interview_is_traced_with_its_purpose(client: TestClient) -> None:
    add_agents(client, AOI, HIKARI)
    remember(client, "hikari", PARTY_JA)
    ask(client, "hikari", QUESTION)
    calls = client.get("/v1/llm-calls", params={"purpose": "interview", "agent_id": "hikari"}).json()["calls"]
    (call,) = calls
    assert call["purpose"] == "interview" and call["ok"] and call["agent_id"] == "hikari"
    detail = client.get(f"/v1/llm-calls/{call['id']}").json()
    assert detail["schema_name"] == "InterviewReply" and "パーティー" in detail["raw_reply"]


def test_a_failing_model_gives_the_in_character_fallback_never_a_500(
    client: TestClient, scripted: ScriptedLLM
) -> None:
    add_agents(client, AOI, HIKARI, EMMA)
    remember(client, "hikari", PARTY_JA)
    scripted.enqueue(LLMUnavailable("model gone", retryable=False), purpose="interview")
    reply = ask(client, "hikari", QUESTION)
    assert (
        reply["fallback"] is True
        and reply["answer"] == FALLBACK_ANSWERS["ja"] == "うーん、よく覚えていないな…"
    )
    assert reply["memories_used"]  # retrieval still happened; only the model failed
    scripted.enqueue(RuntimeError("provider bug"), purpose="interview")
    english = ask(client, "emma", "What's new?")
    assert english["fallback"] and english["answer"] == "Hmm, I don't really remember."
    failed = client.get("/v1/llm-calls", params={"purpose": "interview", "errors_only": True}).json()["calls"]
    assert "model gone" in failed[-1]["error"]  # the failed call is in the trace (a provider bug is logged)


class SlowInterviews(ScriptedLLM):
    """The scripted engine, but an interview call takes longer than any deadline of these tests."""

    async def complete(
        self, messages: Sequence[Message], *, options: GenerateOptions, schema: dict[str, Any] | None = None
    ) -> Completion:
        if options.purpose == "interview":
            await asyncio.sleep(30)
        return await super().complete(messages, options=options, schema=schema)


def test_a_late_model_falls_back_at_the_interview_deadline(settings: Settings) -> None:
    with make_client(settings, SlowInterviews(seed=0), interview_deadline_s=0.5, llm_timeout_s=60) as client:
        add_agents(client, AOI, HIKARI)
        remember(client, "hikari", PARTY_JA)
        reply = ask(client, "hikari", QUESTION)
    assert reply["fallback"] and reply["answer"] == FALLBACK_ANSWERS["ja"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"question": ""}, "question"),
        ({"question": "   "}, "question"),
        ({"question": "あ" * (MAX_QUESTION_CHARS + 1)}, "question"),
        ({}, "question"),
        ({"question": "ok?", "day": 0}, "day"),
        ({"question": "ok?", "time_of_day": 24}, "time_of_day"),
        ({"question": "ok?", "qestion": "typo"}, "qestion"),
    ],
)
def test_bad_input_is_a_422_naming_the_field(client: TestClient, body: dict[str, Any], field: str) -> None:
    add_agents(client, AOI, HIKARI)
    response = client.post("/v1/agents/hikari/interview", json=body)
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "validation_error" and field in {p["field"] for p in error["details"]}


def test_an_unknown_agent_is_a_404_and_asks_no_model(client: TestClient, scripted: ScriptedLLM) -> None:
    add_agents(client, AOI, HIKARI)
    response = client.post("/v1/agents/nobody/interview", json={"question": QUESTION})
    assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"
    in_other_world = client.post(
        "/v1/agents/hikari/interview", json={"question": QUESTION}, headers={"X-Machi-World": "elsewhere"}
    )
    assert in_other_world.status_code == 404
    assert scripted.calls("interview") == []


def test_a_retrieval_past_its_share_of_the_deadline_falls_back_without_a_model_call(
    settings: Settings, scripted: ScriptedLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def stuck(*_args: Any, **_kwargs: Any) -> list[Any]:
        await asyncio.sleep(30)
        return []

    with make_client(settings, scripted, interview_deadline_s=0.4) as client:
        add_agents(client, AOI, HIKARI)
        remember(client, "hikari", PARTY_JA)
        monkeypatch.setattr(client.app.state.memory, "retrieve", stuck)  # type: ignore[attr-defined]
        reply = ask(client, "hikari", QUESTION)
    # Not "I have not heard of it": an unread mind is a fallback, not an answer.
    assert reply["fallback"] and reply["answer"] == FALLBACK_ANSWERS["ja"] and reply["memories_used"] == []
    assert scripted.calls("interview") == []


def test_after_a_busy_day_the_answer_comes_from_the_right_memory(client: TestClient) -> None:
    """ "ひかりに何を渡した？" once answered from the last session's small talk: the fact, stored in the morning,
    must still be what the answer rests on after a day of talks and errands."""
    add_agents(client, AOI, HIKARI)
    [given] = remember(client, "aoi", "ひかりに本を渡した。", day=1)
    names = {"aoi": "葵", "hikari": "ひかり"}
    for i in range(4):
        talk(client, "aoi", "hikari", f"busy-{i}", names)
    errands = [f"商店街で{item}を買った。" for item in ("パン", "牛乳", "花", "ノート", "傘")]
    errands += [f"ひかりと{place}で話した。" for place in ("駅前", "公園", "図書館", "カフェ", "神社")]
    remember(client, "aoi", *errands, day=1)
    drain(client)
    reply = ask(client, "aoi", "ひかりに何を渡した？")
    assert reply["memories_used"][0]["id"] == given
    assert "本" in reply["answer"] and reply["fallback"] is False


@pytest.mark.parametrize(("day", "said"), [(1, "明日の19時"), (2, "今日の19時"), (3, "昨日の19時")])
def test_the_answer_says_the_day_from_the_game_time(client: TestClient, day: int, said: str) -> None:
    """Heard on day 1, "明日" is today on day 2 and yesterday on day 3, in the answer and in the prompt."""
    add_agents(client, AOI, HIKARI)
    remember(client, "hikari", *SMALL_TALK_JA[:1], PARTY_JA, day=1)
    reply = ask(client, "hikari", QUESTION, day=day, time_of_day=10.0)
    assert said in reply["answer"], reply["answer"]
    if day > 1:
        assert "明日" not in reply["answer"]


def test_an_english_answer_says_the_day_from_the_game_time(client: TestClient, scripted: ScriptedLLM) -> None:
    add_agents(client, EMMA, LIAM)
    remember(client, "emma", *SMALL_TALK_EN[:1], PARTY_EN, day=1)
    reply = ask(client, "emma", "What do you know about the party?", day=2, time_of_day=10.0)
    assert "today" in reply["answer"] and "tomorrow" not in reply["answer"], reply["answer"]
    (call,) = scripted.calls("interview")
    assert "tomorrow" not in call.messages[1]["content"]  # a model is shown the same day words
