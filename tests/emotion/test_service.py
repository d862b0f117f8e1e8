from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, col, select

from backend.config import Settings
from backend.emotion.models import EmotionRecord
from backend.emotion.plutchik import PLUTCHIK, label
from backend.emotion.schemas import EmotionEvaluation, EmotionState, label_vocabulary
from backend.emotion.service import PRUNE_EVERY, EmotionService, label_fits, settle
from backend.errors import LLMUnavailable
from backend.events import Event
from backend.scripted import ScriptedLLM
from backend.world.models import Agent
from tests.conftest import drain, make_client


def _agent(client: TestClient, agent_id: str = "aoi", world: str = "default") -> Agent:
    agent = Agent(world_id=world, id=agent_id, name="葵", language="ja", traits=["明るい", "好奇心旺盛"])
    with Session(client.app.state.engine, expire_on_commit=False) as session:  # type: ignore[attr-defined]
        session.add(agent)
        session.commit()
    return agent


def test_without_evaluation_the_state_is_the_persona_baseline(client: TestClient) -> None:
    _agent(client)
    body = client.get("/v1/agents/aoi/emotion").json()
    assert body["evaluated"] is False
    assert body["values"] == body["baseline"]
    assert set(body["values"]) == {
        "joy",
        "trust",
        "fear",
        "surprise",
        "sadness",
        "disgust",
        "anger",
        "anticipation",
    }
    assert body["vrm_emotion"] in {"neutral", "happy", "angry", "sad", "relaxed", "surprised"}


def test_evaluation_is_stored_published_and_decays(settings: Settings, scripted: ScriptedLLM) -> None:
    with make_client(settings, scripted, emotion_max_step=100) as client:  # one step may go anywhere
        _stored_published_and_decays(client, scripted)


def _stored_published_and_decays(client: TestClient, scripted: ScriptedLLM) -> None:
    agent = _agent(client)
    service: EmotionService = client.app.state.emotion  # type: ignore[attr-defined]
    heard: list[Event[Any]] = []
    client.app.state.events.subscribe(heard.append, types=["emotion.updated"])  # type: ignore[attr-defined]
    reply = {
        "joy": 95,
        "trust": 60,
        "fear": 0,
        "surprise": 30,
        "sadness": 0,
        "disgust": 0,
        "anger": 0,
        "anticipation": 50,
        "label": "恍惚",
    }
    scripted.enqueue(reply, purpose="emotion")
    state = client.portal.call(  # type: ignore[union-attr]
        lambda: service.evaluate(
            agent, lines=["ヒカリ: 一緒に行こう！"], cause="会話", day=1, time_of_day=10.0
        )
    )
    assert state is not None and state.label == "恍惚" and state.vrm_emotion == "happy"
    assert heard and heard[0].payload.values["joy"] == 95
    # The prompt quoted the lines and the previous state.
    assert "一緒に行こう" in scripted.calls("emotion")[-1].messages[-1]["content"]

    now = client.get("/v1/agents/aoi/emotion", params={"day": 1, "time_of_day": 10.0}).json()
    later = client.get("/v1/agents/aoi/emotion", params={"day": 1, "time_of_day": 12.0}).json()
    assert now["values"]["joy"] == 95
    assert now["values"]["joy"] > later["values"]["joy"] > now["baseline"]["joy"]
    history = client.get("/v1/agents/aoi/emotion/history", params={"limit": 5}).json()["history"]
    assert [h["label"] for h in history] == ["恍惚"]


ALL_ZERO = dict.fromkeys(PLUTCHIK, 0)
ALL_HUNDRED = dict.fromkeys(PLUTCHIK, 100)


def _evaluate(
    client: TestClient, agent: Agent, values: dict[str, int], label: str, hour: float
) -> EmotionState:
    service: EmotionService = client.app.state.emotion  # type: ignore[attr-defined]
    client.app.state.llm.unwrap().enqueue({**values, "label": label}, purpose="emotion")  # type: ignore[attr-defined]
    state = client.portal.call(  # type: ignore[union-attr]
        lambda: service.evaluate(agent, lines=["ヒカリ: ねえ"], cause="会話", day=1, time_of_day=hour)
    )
    assert state is not None
    return state


def test_an_evaluation_moves_each_value_by_a_bounded_step(client: TestClient) -> None:
    agent = _agent(client)
    step = client.app.state.settings.emotion_max_step  # type: ignore[attr-defined]
    # All 0, then all 100, at the same moment (no decay between): each value moves one step at a time.
    low = _evaluate(client, agent, ALL_ZERO, "平静", 10.0)
    baseline = client.get("/v1/agents/aoi/emotion").json()["baseline"]
    assert low.values == {n: max(0.0, baseline[n] - step) for n in PLUTCHIK}
    high = _evaluate(client, agent, ALL_HUNDRED, "恍惚", 10.0)
    assert high.values == {n: low.values[n] + step for n in PLUTCHIK}
    assert max(high.values.values()) < 100
    # The model's "ecstasy" does not fit the held-back values (anticipation is the strongest): they name it.
    assert high.label == label(high.values, "ja") != "恍惚"
    again = _evaluate(client, agent, ALL_HUNDRED, "恍惚", 10.0)
    assert again.values == {n: min(100.0, high.values[n] + step) for n in PLUTCHIK}


def test_the_step_is_taken_from_the_decayed_state(client: TestClient) -> None:
    agent = _agent(client)
    _evaluate(client, agent, ALL_ZERO, "平静", 8.0)
    _evaluate(client, agent, ALL_ZERO, "平静", 8.0)  # now at 0 (or the step's floor)
    # Hours later the state has drifted back up to the baseline: the next step starts from there.
    later = client.get("/v1/agents/aoi/emotion", params={"day": 1, "time_of_day": 20.0}).json()
    state = _evaluate(client, agent, ALL_HUNDRED, "恍惚", 20.0)
    step = client.app.state.settings.emotion_max_step  # type: ignore[attr-defined]
    assert later["values"]["joy"] > step  # well above the floor the two evaluations left
    assert state.values["joy"] == min(100.0, later["values"]["joy"] + step)


def test_a_label_from_the_wheel_is_kept_and_any_other_word_is_replaced() -> None:
    previous = dict.fromkeys(PLUTCHIK, 20.0)
    near = EmotionEvaluation(**{**dict.fromkeys(PLUTCHIK, 20), "joy": 50, "label": "平穏"})  # type: ignore[arg-type]
    assert settle(near, previous, 35, "ja") == ({**previous, "joy": 50.0}, "平穏")  # the model's own word
    odd = near.model_copy(update={"label": "嬉しい"})  # a word the wheel does not have
    assert settle(odd, previous, 35, "ja")[1] == label({**previous, "joy": 50.0}, "ja") == "喜び"
    english = near.model_copy(update={"label": "serenity"})  # the other language's word
    assert settle(english, previous, 35, "ja")[1] == "喜び"
    assert settle(english, previous, 35, "en")[1] == "serenity"
    # A wheel word that does not fit the values: a small model's "loathing" when joy is the strongest.
    assert settle(near.model_copy(update={"label": "憎悪"}), previous, 35, "ja")[1] == "喜び"


@pytest.mark.parametrize(
    ("word", "values", "fits"),
    [
        ("恍惚", {"joy": 55}, True),  # the strongest emotion's word, one band above its value's
        ("恍惚", {"joy": 30}, False),  # two bands above: ecstasy is not a joy of 30
        ("平穏", {"joy": 80}, False),  # nor serenity a joy of 80
        ("喜び", {"joy": 50, "anger": 50}, True),  # a tie: either emotion's word
        ("激怒", {"joy": 50, "anger": 50}, True),
        ("愛", {"joy": 60, "trust": 55}, True),  # the dyad of the two strongest
        ("愛", {"joy": 60, "anger": 55}, False),
        ("平静", {"joy": 10}, True),  # calm when nothing is strong...
        ("平静", {"joy": 40}, False),
        ("喜び", {"joy": 10}, False),  # ...and only then
        ("calm", {"joy": 10}, True),  # English words for an English character
    ],
)
def test_label_fits_the_values(word: str, values: dict[str, float], fits: bool) -> None:
    language = "en" if word.isascii() else "ja"
    assert label_fits(word, {**dict.fromkeys(PLUTCHIK, 0.0), **values}, language) is fits


def test_the_evaluation_schema_lists_the_labels_of_the_characters_language(client: TestClient) -> None:
    agent = _agent(client)
    _evaluate(client, agent, ALL_ZERO, "平静", 10.0)
    schema = client.app.state.llm.unwrap().calls("emotion")[-1].schema  # type: ignore[attr-defined]
    words = schema["properties"]["label"]["enum"]
    assert schema["title"] == "EmotionEvaluation" and set(words) == set(label_vocabulary("ja"))
    assert {"恍惚", "愛", "平静", "苛立ち"} <= set(words) and "joy" not in words
    assert "ecstasy" in label_vocabulary("en") and "恍惚" not in label_vocabulary("en")


def test_failed_evaluation_keeps_previous_state_and_is_traced(
    client: TestClient, scripted: ScriptedLLM
) -> None:
    agent = _agent(client)
    service: EmotionService = client.app.state.emotion  # type: ignore[attr-defined]
    scripted.enqueue(LLMUnavailable("down", retryable=False), purpose="emotion")
    result = client.portal.call(  # type: ignore[union-attr]
        lambda: service.evaluate(agent, lines=[], cause="test", day=1, time_of_day=9.0)
    )
    assert result is None
    assert client.get("/v1/agents/aoi/emotion").json()["evaluated"] is False
    calls = client.get("/v1/llm-calls", params={"purpose": "emotion"}).json()["calls"]
    assert calls and calls[0]["ok"] is False


def test_emotion_of_unknown_agent_is_404_and_worlds_are_separate(client: TestClient) -> None:
    _agent(client, world="booth")
    assert client.get("/v1/agents/aoi/emotion").status_code == 404
    assert client.get("/v1/agents/aoi/emotion", headers={"X-Machi-World": "booth"}).status_code == 200
    assert (
        client.get("/v1/agents/aoi/emotion/history?limit=0", headers={"X-Machi-World": "booth"}).status_code
        == 422
    )


def _causes(client: TestClient, agent: Agent) -> list[str]:
    with Session(client.app.state.engine) as session:  # type: ignore[attr-defined]
        rows = session.exec(
            select(EmotionRecord).where(EmotionRecord.agent_id == agent.id).order_by(col(EmotionRecord.id))
        ).all()
    return [row.cause or "" for row in rows]


def _schedule(client: TestClient, agent: Agent, cause: str) -> None:
    """Ask for an evaluation on the app's event loop (schedule spawns tasks there), the cause as the line."""
    service: EmotionService = client.app.state.emotion  # type: ignore[attr-defined]
    client.portal.call(  # type: ignore[union-attr]
        lambda: _run(
            lambda: service.schedule(agent, lines=[f"ヒカリ: {cause}"], cause=cause, day=1, time_of_day=10.0)
        )
    )


def test_requests_within_the_interval_merge_into_one_evaluation_of_the_newest(
    settings: Settings, scripted: ScriptedLLM
) -> None:
    with make_client(settings, scripted, emotion_min_interval_s=3.0) as client:
        agent = _agent(client)
        _schedule(client, agent, "first")
        drain(client)
        assert _causes(client, agent) == ["first"]  # an idle character is evaluated at once
        for cause in ("second", "third", "fourth"):
            _schedule(client, agent, cause)
        # Inside the interval nothing runs yet; the three requests wait as one, the newest.
        assert _causes(client, agent) == ["first"]
        drain(client)
        assert _causes(client, agent) == ["first", "fourth"]
        assert "fourth" in scripted.calls("emotion")[-1].messages[-1]["content"]
        assert len(scripted.calls("emotion")) == 2


def test_without_an_interval_every_request_after_an_evaluation_runs(
    settings: Settings, scripted: ScriptedLLM
) -> None:
    with make_client(settings, scripted, emotion_min_interval_s=0.0) as client:
        agent = _agent(client)
        for cause in ("one", "two", "three"):
            _schedule(client, agent, cause)
            drain(client)
        assert _causes(client, agent) == ["one", "two", "three"]


def test_history_is_pruned_to_the_limit_keeping_the_newest(settings: Settings, scripted: ScriptedLLM) -> None:
    with make_client(settings, scripted, emotion_history_limit=10) as client:
        agent = _agent(client)
        service: EmotionService = client.app.state.emotion  # type: ignore[attr-defined]
        for i in range(40):
            client.portal.call(  # type: ignore[union-attr]
                lambda i=i: service.evaluate(  # type: ignore[misc]
                    agent, lines=[], cause=f"c{i}", day=1, time_of_day=10.0
                )
            )
            kept = _causes(client, agent)
            assert len(kept) <= 10 + PRUNE_EVERY - 1
            assert kept == [f"c{j}" for j in range(i + 1 - len(kept), i + 1)]  # the newest, in order
        assert len(_causes(client, agent)) < 40


async def _run(fn: Any) -> None:
    """Call `fn` on the app's event loop."""
    fn()
