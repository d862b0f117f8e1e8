"""An emotion reply that copies a template slot ("<0-100>") is re-asked once, then the previous state stays;
the prompt describes the fields in words and shows no sample label to copy."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session

from backend.emotion.prompts import evaluation_messages
from backend.emotion.service import EmotionService
from backend.scripted import ScriptedLLM
from backend.world.models import Agent
from tests.llm.test_echo import assert_no_template

NAMES = ("joy", "trust", "fear", "surprise", "sadness", "disgust", "anger", "anticipation")


def reply(**values: Any) -> dict[str, Any]:
    return {
        **dict.fromkeys(NAMES, 20),
        "label": "喜び" if "label" not in values else values.pop("label"),
        **values,
    }


@pytest.mark.parametrize("language", ["ja", "en"])
def test_the_emotion_prompt_describes_the_fields_in_words(language: str) -> None:
    messages = evaluation_messages(
        name="葵", persona="明るい", previous={"joy": 50.0}, previous_label="平穏", lines=["ひかり: やあ"],
        cause="会話", language=language,
    )  # fmt: skip
    assert_no_template(messages)
    system = messages[0]["content"]
    assert "- joy, trust, fear, surprise, sadness, disgust, anger, anticipation: " in system
    assert "- label: " in system and "例" not in system and "e.g." not in system


def evaluate(client: TestClient) -> Any:
    agent = Agent(world_id="default", id="aoi", name="葵", language="ja", traits=["明るい"])
    with Session(client.app.state.engine, expire_on_commit=False) as session:  # type: ignore[attr-defined]
        session.merge(agent)
        session.commit()
    service: EmotionService = client.app.state.emotion  # type: ignore[attr-defined]
    return client.portal.call(  # type: ignore[union-attr]
        lambda: service.evaluate(
            agent, lines=["ひかり: 一緒に行こう！"], cause="会話", day=1, time_of_day=10.0
        )
    )


def test_a_template_slot_is_re_asked_and_the_answer_used(client: TestClient, scripted: ScriptedLLM) -> None:
    scripted.enqueue(reply(joy="<0-100>"), reply(joy=80), purpose="emotion")
    state = evaluate(client)
    # The second reply's values, moved toward from the previous state by at most one step.
    assert state is not None and state.evaluated and state.values["joy"] > 50 and state.values["trust"] == 20
    assert "joy" in scripted.calls("emotion")[1].messages[-1]["content"]


def test_two_bad_replies_keep_the_previous_state(client: TestClient, scripted: ScriptedLLM) -> None:
    scripted.enqueue(reply(joy="<0-100>"), reply(anger="..."), purpose="emotion")
    assert evaluate(client) is None and len(scripted.calls("emotion")) == 2
    assert client.get("/v1/agents/aoi/emotion").json()["evaluated"] is False
