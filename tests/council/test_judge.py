"""LLM-as-a-judge: scores validated 1-10, re-ask on a bad verdict, stored conversation verdicts."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError
from sqlmodel import Session, select

from backend.conversation.models import Conversation, Turn
from backend.council.schemas import JudgeReply, judge_reply_for
from backend.llm.models import LLMCall
from backend.scripted import ScriptedLLM
from tests.council.helpers import add_agents

GOOD = "「いらっしゃい！今日は新しいハーブティーが入ったの。よかったら味見してみて。」とひかりは笑った。"


def verdict(scores: dict[str, int], overall: float = 7.0, action: str = "accept") -> dict[str, Any]:
    return {
        "scores": [{"criterion": name, "score": value, "reason": "r"} for name, value in scores.items()],
        "overall": overall,
        "rationale": "理由",
        "recommended_action": action,
    }


def test_judge_scores_default_criteria_from_1_to_10(client: TestClient) -> None:
    response = client.post("/v1/judge", json={"content": GOOD})
    assert response.status_code == 200, response.text
    body = response.json()
    assert list(body["scores"]) == ["in_character", "coherence", "helpfulness"]
    assert all(1 <= v <= 10 for v in body["scores"].values()) and 1 <= body["overall"] <= 10
    assert body["recommended_action"] in ("accept", "revise", "reject") and body["rationale"]
    # A Japanese rationale names the criteria in Japanese, never by their ids.
    assert not any(name in body["rationale"] for name in body["scores"]), body["rationale"]
    assert any(label in body["rationale"] for label in ("キャラクターらしさ", "話の一貫性", "役立ち度"))
    assert all(not reason.startswith(tuple(body["scores"])) for reason in body["reasons"].values())


def test_judge_uses_the_criteria_asked_and_is_traced(client: TestClient, scripted: ScriptedLLM) -> None:
    response = client.post(
        "/v1/judge",
        json={"content": GOOD, "criteria": ["warmth", "brevity"], "context": "ひかりはカフェの店員"},
    )
    assert list(response.json()["scores"]) == ["warmth", "brevity"]
    call = scripted.calls("judge")[-1]
    assert call.options.labels.get("stage") == "judge"
    prompt = "\n".join(m["content"] for m in call.messages)
    assert GOOD in prompt and "ひかりはカフェの店員" in prompt and "warmth" in prompt
    # The schema asks for exactly one score per criterion asked, each naming one of them.
    assert call.schema is not None
    scores = call.schema["properties"]["scores"]
    assert (scores["minItems"], scores["maxItems"]) == (2, 2)
    assert scores["items"]["properties"]["criterion"]["enum"] == ["warmth", "brevity"]


def test_the_judge_prompt_names_built_in_criteria_in_the_content_language(
    client: TestClient, scripted: ScriptedLLM
) -> None:
    client.post("/v1/judge", json={"content": GOOD})
    prompt = "\n".join(m["content"] for m in scripted.calls("judge")[-1].messages)
    assert "in_character（キャラクターらしさ）" in prompt and "日本語の名前で" in prompt
    client.post("/v1/judge", json={"content": "Welcome in! We have a new herbal tea today, try it."})
    body = "\n".join(m["content"] for m in scripted.calls("judge")[-1].messages)
    assert "in_character (staying in character)" in body


def test_an_out_of_range_score_is_re_asked_and_never_returned(
    client: TestClient, scripted: ScriptedLLM
) -> None:
    scripted.enqueue(verdict({"in_character": 11, "coherence": 5, "helpfulness": 5}), purpose="judge")
    response = client.post("/v1/judge", json={"content": GOOD})
    assert response.status_code == 200
    assert all(1 <= v <= 10 for v in response.json()["scores"].values())
    assert len(scripted.calls("judge")) == 2  # the bad verdict, then the re-ask
    app: Any = client.app
    with Session(app.state.engine) as session:
        traces = session.exec(select(LLMCall).where(LLMCall.purpose == "judge").order_by(LLMCall.id)).all()
    assert not traces[0].ok and "less than or equal to 10" in (traces[0].error or "")


def test_a_verdict_missing_a_criterion_is_re_asked(client: TestClient, scripted: ScriptedLLM) -> None:
    scripted.enqueue(verdict({"in_character": 8, "coherence": 7}), purpose="judge")
    response = client.post("/v1/judge", json={"content": GOOD})
    assert response.status_code == 200 and set(response.json()["scores"]) == {
        "in_character",
        "coherence",
        "helpfulness",
    }
    assert "helpfulness" in scripted.calls("judge")[1].messages[-1]["content"]


def test_a_judge_that_stays_invalid_is_503_llm_error(client: TestClient, scripted: ScriptedLLM) -> None:
    scripted.enqueue(
        verdict({"in_character": 0, "coherence": 5, "helpfulness": 5}),
        verdict({"in_character": 12, "coherence": 5, "helpfulness": 5}),
        purpose="judge",
    )
    response = client.post("/v1/judge", json={"content": GOOD})
    assert response.status_code == 503
    error = response.json()["error"]
    assert error["code"] == "llm_error" and error["details"]["cause"] == "llm_bad_reply"


def test_judge_reply_schema_bounds() -> None:
    with pytest.raises(ValidationError):
        JudgeReply.model_validate(verdict({"a": 0}))
    with pytest.raises(ValidationError):
        JudgeReply.model_validate(verdict({"a": 5}, overall=10.5))
    assert JudgeReply.model_validate(verdict({"a": 1, "b": 10})).scores[1].score == 10
    schema = judge_reply_for(["a"]).model_json_schema()
    assert schema["title"] == "JudgeReply"  # the scripted writer and traces know it by this name


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"content": ""}, "content"),
        ({"content": "x" * 20_001}, "content"),
        ({"content": "x", "criteria": []}, "criteria"),
        ({"content": "x", "criteria": ["a", "a"]}, "criteria"),
    ],
)
def test_bad_judge_requests_are_422(client: TestClient, body: dict, field: str) -> None:
    response = client.post("/v1/judge", json=body)
    assert response.status_code == 422
    assert field in {d["field"] for d in response.json()["error"]["details"]}


def store_conversation(client: TestClient, lines: list[tuple[str, str]], session_id: str = "s1") -> None:
    app: Any = client.app
    with Session(app.state.engine) as session:
        session.add(
            Conversation(session_id=session_id, agent_a="hikari", agent_b="aoi", turn_count=len(lines))
        )
        for index, (speaker, text) in enumerate(lines):
            target = "aoi" if speaker == "hikari" else "hikari"
            session.add(
                Turn(
                    session_id=session_id,
                    turn_index=index,
                    speaker_id=speaker,
                    target_id=target,
                    dialogue=text,
                )
            )
        session.commit()


def test_a_stored_conversation_is_judged_and_the_verdict_kept(
    client: TestClient, scripted: ScriptedLLM
) -> None:
    add_agents(
        client,
        [
            {"id": "hikari", "name": "ひかり", "traits": ["明るい"]},
            {"id": "aoi", "name": "葵", "traits": ["読書好き"]},
        ],
    )
    store_conversation(
        client,
        [("hikari", "葵ちゃん、昨日の本どうだった？"), ("aoi", "すごくよかった。最後で泣いちゃった。")],
    )
    response = client.post("/v1/conversations/s1/judge")
    assert response.status_code == 200, response.text
    body = response.json()
    assert list(body["scores"]) == ["in_character", "coherence", "memory_use"] and body["session_id"] == "s1"
    prompt = "\n".join(m["content"] for m in scripted.calls("judge")[-1].messages)
    assert "ひかり: 葵ちゃん、昨日の本どうだった？" in prompt and "読書好き" in prompt
    app: Any = client.app
    with Session(app.state.engine) as session:
        stored = session.get(Conversation, ("default", "s1"))
    assert stored is not None and stored.judge is not None
    assert stored.judge["scores"] == body["scores"] and "judged_at" in stored.judge


def test_judging_an_unknown_or_empty_conversation(client: TestClient) -> None:
    assert client.post("/v1/conversations/nope/judge").status_code == 404
    store_conversation(client, [], session_id="empty")
    response = client.post("/v1/conversations/empty/judge")
    assert response.status_code == 422 and response.json()["error"]["details"]["field"] == "session_id"
