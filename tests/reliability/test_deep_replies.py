"""A reply that cannot even be parsed (100,000-deep nesting, a 5,000-digit number) is a model failure like any
invalid reply, for every model purpose: traced as failed and re-asked once, then the purpose's own fallback;
never an `event: error`, a 500, or a job that fails for a reason other than the model's."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, select

from backend.llm.models import LLMCall
from backend.llm.reask import REASK as REASK_TEMPLATE
from backend.scripted import ScriptedLLM
from backend.world.models import Agent
from tests.conftest import drain
from tests.conversation.helpers import add_agents, turn
from tests.council.helpers import add_agents as add_sisters
from tests.memory.helpers import call, service
from tests.planning.test_plan_api import build_world

DEEP = '{"items": ' + "[" * 100_000 + "]" * 100_000 + "}"
LONG_NUMBER = '{"importance": 1' + "0" * 5_000 + "}"
REASK = REASK_TEMPLATE.split("{", 1)[0]


def reasked(scripted: ScriptedLLM, purpose: str, bad: str = DEEP) -> bool:
    """The unparsable reply was followed by a re-ask of the same purpose that names it unparsable."""
    calls = scripted.calls(purpose)
    at = next(i for i, c in enumerate(calls) if c.reply == bad)
    return any(
        c.messages[-1]["content"].startswith(REASK) and "could not be parsed" in c.messages[-1]["content"]
        for c in calls[at + 1 :]
    )


def traced_invalid(client: TestClient, purpose: str) -> bool:
    with Session(client.app.state.engine) as session:  # type: ignore[attr-defined]
        rows = session.exec(select(LLMCall).where(LLMCall.purpose == purpose)).all()
    return any(not row.ok and "could not be parsed" in (row.error or "") for row in rows)


def sse_events(text: str) -> list[tuple[str, dict[str, Any]]]:
    events = []
    for block in text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        events.append((lines["event"], json.loads(lines["data"])))
    return events


# --- one action per purpose: it makes the call, asserts the request itself went well, returns nothing ---


def _dialogue(client: TestClient) -> None:
    add_agents(client)
    response = client.post("/v1/conversation/turn", json=turn("aoi", "hikari", "deep-1", []))
    assert response.status_code == 200, response.text


def _plan(client: TestClient) -> None:
    build_world(client)
    response = client.post("/v1/agents/aoi/plan", json={"day": 1})
    assert response.status_code == 200, response.text


def _plan_now(client: TestClient) -> None:
    build_world(client)
    response = client.get("/v1/agents/aoi/plan/now", params={"day": 1, "time_of_day": 9})
    assert response.status_code == 200, response.text


def _intention(client: TestClient) -> None:
    _plan(client)  # the day's first plan revises the intentions


def _afterthought(client: TestClient) -> None:
    add_agents(client)
    assert client.post("/v1/conversation/turn", json=turn("aoi", "hikari", "deep-2", [])).status_code == 200
    assert client.post("/v1/conversation/end", json={"session_id": "deep-2", "reason": "distance"}).is_success
    drain(client)


def _reflect(client: TestClient) -> None:
    add_agents(client)
    for text in ("図書館で本を読んだ", "ひかりとカフェで話した", "雨が降ってきた"):
        body = {"type": "observation", "content": text, "importance": 9}
        assert client.post("/v1/agents/aoi/memories", json=body).status_code == 201
    drain(client)
    response = client.post("/v1/agents/aoi/reflect", json={"day": 1, "time_of_day": 12})
    assert response.status_code == 200, response.text


def _importance(client: TestClient) -> None:
    add_agents(client)
    body = {"type": "observation", "content": "猫が屋根で寝ていた"}
    assert client.post("/v1/agents/aoi/memories", json=body).status_code == 201
    drain(client)
    memory = client.get("/v1/agents/aoi/memories").json()["memories"][0]
    assert memory["importance_source"] == "model"


def _person(client: TestClient) -> None:
    add_agents(client)
    row = call(
        client, service(client).update_person_memory, "default", "aoi", other_id="hikari",
        other_name="ひかり", transcript=["ひかり: 新しいケーキが出たよ", "葵: 行ってみたい"],
        session_id="deep-3", day=1, time_of_day=10.0, language="ja",
    )  # fmt: skip
    assert row.last_error is None


def _emotion(client: TestClient) -> None:
    add_agents(client)
    with Session(client.app.state.engine) as session:  # type: ignore[attr-defined]
        aoi = session.exec(select(Agent).where(Agent.id == "aoi")).one()
    emotion = client.app.state.emotion  # type: ignore[attr-defined]
    state = call(
        client, emotion.evaluate, aoi, lines=["ひかり: ひどいよ!"], cause="turn", day=1, time_of_day=10
    )
    assert state is not None


def _council(client: TestClient) -> None:
    add_sisters(client)
    accepted = client.post("/v1/council", json={"title": "広場で毎週マルシェを開く"})
    assert accepted.status_code == 202, accepted.text
    drain(client)
    council = client.get(f"/v1/council/{accepted.json()['id']}").json()
    assert council["status"] == "done" and not council["record"]["errors"], council


def _judge(client: TestClient) -> None:
    body = {"content": "いらっしゃい！新しいハーブティーがあるの。", "criteria": ["in_character"]}
    response = client.post("/v1/judge", json=body)
    assert response.status_code == 200, response.text


def _interview(client: TestClient) -> None:
    add_agents(client)
    response = client.post("/v1/agents/hikari/interview", json={"question": "最近どう？"})
    assert response.status_code == 200, response.text


PURPOSES: dict[str, tuple[str, Callable[[TestClient], None]]] = {
    "dialogue": ("dialogue", _dialogue),
    "plan": ("plan", _plan),
    "plan/now": ("plan", _plan_now),
    "intention": ("intention", _intention),
    "afterthought": ("reflection", _afterthought),
    "reflect questions": ("questions", _reflect),
    "reflect insight": ("insight", _reflect),
    "importance": ("importance", _importance),
    "person": ("person", _person),
    "emotion": ("emotion", _emotion),
    "council opinion": ("opinion", _council),
    "council aggregation": ("aggregate", _council),
    "council consensus": ("consensus", _council),
    "judge": ("judge", _judge),
    "interview": ("interview", _interview),
}


@pytest.mark.parametrize("case", sorted(PURPOSES))
def test_a_deeply_nested_reply_is_re_asked_for_every_purpose(
    client: TestClient, scripted: ScriptedLLM, case: str
) -> None:
    purpose, action = PURPOSES[case]
    scripted.enqueue(DEEP, purpose=purpose)
    action(client)
    assert reasked(scripted, purpose), f"{case}: the unparsable reply was not re-asked"
    assert traced_invalid(client, purpose)


def test_a_number_too_long_to_read_is_re_asked(client: TestClient, scripted: ScriptedLLM) -> None:
    scripted.enqueue(LONG_NUMBER, purpose="importance")
    _importance(client)
    assert reasked(scripted, "importance", LONG_NUMBER)


def test_a_streamed_turn_whose_re_ask_nests_deeply_ends_with_a_fallback_line(
    client: TestClient, scripted: ScriptedLLM
) -> None:
    add_agents(client)
    scripted.enqueue("<<no json here, just noise>>", DEEP, purpose="dialogue")
    response = client.post("/v1/conversation/turn/stream", json=turn("aoi", "hikari", "deep-s", []))
    assert response.status_code == 200
    events = sse_events(response.text)
    assert [name for name, _ in events if name == "error"] == []
    name, reply = events[-1]
    assert name == "reply" and reply["fallback"] is True and reply["dialogue"]
    assert traced_invalid(client, "dialogue")


@pytest.mark.parametrize(
    ("route", "purpose"),
    [("turn", "dialogue"), ("plan", "plan"), ("plan/now", "plan"), ("interview", "interview")],
)
def test_two_deep_replies_fall_back_on_the_live_routes(
    client: TestClient, scripted: ScriptedLLM, route: str, purpose: str
) -> None:
    scripted.enqueue(DEEP, DEEP, purpose=purpose)
    if route == "turn":
        add_agents(client)
        reply = client.post("/v1/conversation/turn", json=turn("aoi", "hikari", "deep-4", []))
        assert reply.status_code == 200 and reply.json()["fallback"] is True
    elif route == "interview":
        _interview(client)
    else:
        build_world(client)
        plan = (
            client.post("/v1/agents/aoi/plan", json={"day": 1})
            if route == "plan"
            else client.get("/v1/agents/aoi/plan/now", params={"day": 1, "time_of_day": 9})
        )
        assert plan.status_code == 200, plan.text
        assert client.get("/v1/agents/aoi/plan", params={"day": 1}).json()["source"] == "fallback"
    assert len(scripted.calls(purpose)) == 2


def test_two_deep_judge_replies_are_a_503_and_two_deep_reflections_make_none(
    client: TestClient, scripted: ScriptedLLM
) -> None:
    scripted.enqueue(DEEP, DEEP, purpose="judge")
    body = {"content": "いらっしゃい！", "criteria": ["in_character"]}
    judged = client.post("/v1/judge", json=body)
    assert judged.status_code == 503 and judged.json()["error"]["code"].startswith("llm_")
    scripted.enqueue(DEEP, DEEP, purpose="questions")
    _reflect(client)
    assert len(scripted.calls("questions")) == 2
