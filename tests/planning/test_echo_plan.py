"""A plan whose activities echo the prompt ("...", the field's name) is re-asked once with the reason, then
the fallback plan; the plan prompt describes the reply in words, with no JSON example to copy."""

from __future__ import annotations

from fastapi.testclient import TestClient

from backend.scripted import ScriptedLLM
from tests.llm.test_echo import assert_no_template
from tests.planning.test_plan_api import assert_sound, build_world, it

GOOD = [it(7, 12, "library", "図書館で古い本を読む"), it(12, 22, "cafe", "カフェで友だちと話す")]


def test_the_plan_prompt_names_the_fields_without_a_template(
    client: TestClient, scripted: ScriptedLLM
) -> None:
    build_world(client)
    client.post("/v1/agents/aoi/plan", json={"day": 1})
    call = scripted.calls("plan")[-1]
    assert_no_template(call.messages)
    system = call.messages[0]["content"]
    assert "from 07:00 to 22:00." in system
    assert "- items: the day's activities in the order they happen, each with these fields:" in system
    # The places are listed in the user message, not in a field's line (where a small model took them for
    # the words to write as an activity); the grammar allows only their ids.
    assert (
        "- poi_id: where it happens: the id of one of the places listed" in system and "library" not in system
    )
    assert "- library: " in call.messages[1]["content"]
    assert "- activity: what the character does there, a short phrase in Japanese" in system
    assert "- hours: how many hours it takes, as a number" in system and "13.5" not in system


def test_placeholder_activities_are_re_asked_once(client: TestClient, scripted: ScriptedLLM) -> None:
    build_world(client)
    scripted.enqueue({"items": [it(7, 12, "library", "..."), it(12, 22, "cafe", "...")]}, purpose="plan")
    scripted.enqueue({"items": GOOD}, purpose="plan")
    plan = client.post("/v1/agents/aoi/plan", json={"day": 1}).json()
    assert plan["source"] == "model" and [i["activity"] for i in plan["items"]] == [
        g["activity"] for g in GOOD
    ]
    first, second = scripted.calls("plan")
    assert (
        "items[0].activity is a placeholder" in second.messages[-1]["content"]
        and "..." not in second.messages[-1]["content"]
    )  # the echo is not quoted back


def test_two_echoing_plans_give_the_fallback_plan(client: TestClient, scripted: ScriptedLLM) -> None:
    build_world(client)
    scripted.enqueue({"items": [it(7, 22, "park", "activity")]}, purpose="plan")
    scripted.enqueue({"items": [it(7, 22, "park", "<activity>")]}, purpose="plan")
    plan = client.post("/v1/agents/aoi/plan", json={"day": 1}).json()
    assert plan["source"] == "fallback" and len(scripted.calls("plan")) == 2
    assert_sound(plan["items"])
    assert "items[0].activity repeats the field's name" in scripted.calls("plan")[1].messages[-1]["content"]
