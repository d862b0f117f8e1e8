"""Plans that follow: the morning revision carries an event into the intentions of those who like it, the
day's plan holds it at its time and place, and a replan keeps it."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from backend.app import create_app
from backend.config import Settings
from backend.errors import LLMUnavailable
from backend.intention.service import revision_for_model
from backend.scripted import ScriptedLLM
from backend.scripted.news import likes
from tests.conftest import drain
from tests.intention.helpers import PARTY, talk, town, whisper


class _SmallScripted(ScriptedLLM):
    """The scripted engine, claiming the size of SmolLM2-135M."""

    def parameter_count(self) -> int:
        return 134_515_008


def _at(plan: dict[str, Any], poi: str, hour: float) -> bool:
    return any(it["poi_id"] == poi and it["start"] <= hour < it["end"] for it in plan["items"])


def test_the_host_and_those_who_like_it_plan_the_event(client: TestClient) -> None:
    town(client)
    whisper(client)
    for index, other in enumerate(("hikari", "ren", "emma")):
        talk(client, "aoi", other, f"s{index}", 4, hour=9.0 + index)
    drain(client)
    for agent in ("aoi", "hikari", "ren", "emma"):
        assert (
            client.get(f"/v1/agents/{agent}/plan/now", params={"day": 2, "time_of_day": 7.5}).status_code
            == 200
        )
    drain(client)
    host = client.get("/v1/agents/aoi/plan", params={"day": 2}).json()
    assert _at(host, "park", 19.0) and _at(host, "park", 20.5)
    assert client.get("/v1/agents/aoi/intentions").json()["revised_day"] == 2
    planned = 0
    for agent in ("hikari", "ren", "emma"):
        plan = client.get(f"/v1/agents/{agent}/plan", params={"day": 2}).json()
        mind = client.get(f"/v1/agents/{agent}/intentions").json()
        wants = likes(0, agent, PARTY)
        assert _at(plan, "park", 19.0) is wants, (agent, plan, mind)
        assert ("19時" in mind["text"] and "公園" in mind["text"]) is wants
        planned += wants
    assert planned >= 1  # the seed gives at least one guest (LIKE_SHARE of them on average)


def test_a_replan_keeps_the_appointment(client: TestClient, scripted: ScriptedLLM) -> None:
    town(client)
    whisper(client, text="今日の19時に公園で花火大会を開く", day=2, hour=6.0)
    client.post("/v1/agents/aoi/plan", json={"day": 2})
    assert _at(client.get("/v1/agents/aoi/plan", params={"day": 2}).json(), "park", 19.0)
    # The model's replan forgets the party: the server keeps it at its time and place.
    scripted.enqueue({"items": [{"start": 12, "end": 23, "poi_id": "cafe", "activity": "カフェで仕事"}]},
                     purpose="plan")  # fmt: skip
    reply = client.post(
        "/v1/agents/aoi/plan", json={"day": 2, "time_of_day": 12.0, "reason": "雨が降ってきた"}
    )
    plan = reply.json()
    assert _at(plan, "park", 19.0) and _at(plan, "cafe", 13.0) and _at(plan, "cafe", 21.5)
    assert any("appointment 19:00-21:00" in r for r in plan["repairs"])


def test_a_failed_revision_keeps_the_intentions(client: TestClient, scripted: ScriptedLLM) -> None:
    town(client)
    whisper(client)
    scripted.enqueue(LLMUnavailable("model down"), LLMUnavailable("model down"), purpose="intention")
    client.post("/v1/agents/aoi/plan", json={"day": 2})
    mind = client.get("/v1/agents/aoi/intentions", params={"day": 2}).json()
    assert mind["revised_day"] == 2 and mind["text"].startswith("今日の19時")
    # Yesterday's words still find the event: the plan holds it.
    assert _at(client.get("/v1/agents/aoi/plan", params={"day": 2}).json(), "park", 19.0)


def test_the_plan_prompt_carries_the_intentions(client: TestClient, scripted: ScriptedLLM) -> None:
    town(client)
    whisper(client)
    client.post("/v1/agents/aoi/plan", json={"day": 2})
    prompt = "\n".join(str(m["content"]) for m in scripted.calls("plan")[-1].messages)
    assert "On the character's mind today" in prompt and "今日の19時に公園で花火大会を開く" in prompt
    revision = "\n".join(str(m["content"]) for m in scripted.calls("intention")[-1].messages)
    assert "今日の19時に公園で花火大会を開く" in revision and "{" not in revision


def test_a_revision_that_drops_the_appointment_keeps_it(client: TestClient, scripted: ScriptedLLM) -> None:
    """A small model wrote its instructions back as intentions and lost the host's party: a revision may
    reword an appointment still ahead, never lose it."""
    town(client)
    whisper(client)  # 明日の19時に公園で花火大会を開く
    scripted.enqueue(
        {"intentions": ["今日はカフェで本を読みたい", "蓮とゆっくり話したい"]}, purpose="intention"
    )
    client.post("/v1/agents/aoi/plan", json={"day": 2})
    mind = client.get("/v1/agents/aoi/intentions", params={"day": 2}).json()
    assert mind["revised_day"] == 2
    assert [line["source"] for line in mind["lines"]] == ["whisper", "morning", "morning"]
    assert mind["text"].splitlines()[0] == "今日の19時に公園で花火大会を開く。町のみんなに来てほしい"
    assert _at(client.get("/v1/agents/aoi/plan", params={"day": 2}).json(), "park", 19.0)


def test_a_revision_that_rewords_the_appointment_holds_it_once(
    client: TestClient, scripted: ScriptedLLM
) -> None:
    town(client)
    whisper(client)
    scripted.enqueue({"intentions": ["今夜19時、公園の花火大会の準備をする"]}, purpose="intention")
    client.post("/v1/agents/aoi/plan", json={"day": 2})
    lines = client.get("/v1/agents/aoi/intentions", params={"day": 2}).json()["lines"]
    assert [line["text"] for line in lines] == ["今夜19時、公園の花火大会の準備をする"]


def test_a_small_model_keeps_the_intentions_without_a_revision_call(settings: Settings) -> None:
    """INTENTION_REVISION_MIN_MODEL_B: SmolLM2-135M is asked for no revision; its intentions keep what was
    whispered, less appointments that are over."""
    small = _SmallScripted(seed=0)
    with TestClient(create_app(settings, llm=small)) as client:
        town(client)
        whisper(client)  # day 2, 19:00
        whisper(client, text="今日の15時に中央カフェで葵と会う", day=1, hour=8.0)  # over by day 2
        client.post("/v1/agents/aoi/plan", json={"day": 2})
        drain(client)
        mind = client.get("/v1/agents/aoi/intentions", params={"day": 2}).json()
    assert small.calls("intention") == [] and small.calls("plan")
    assert mind["revised_day"] == 2 and [line["text"] for line in mind["lines"]] == [
        "明日の19時に公園で花火大会を開く。町のみんなに来てほしい"
    ]
    assert not revision_for_model(settings, 134_515_008).intention_revision
    assert revision_for_model(settings, None).intention_revision  # a served model of unknown size
    assert revision_for_model(
        settings.model_copy(update={"intention_revision_min_model_b": 0}), 1
    ).intention_revision
